"""grammask as a logits processor of Hugging Face transformers.

:class:`LogitsProcessor` constrains ``model.generate`` to a compiled grammar: at each step
it masks the logits of every token the grammar does not allow next, so the text generated
is a document of the grammar (a JSON Schema, GBNF, a regex ...). It ends where the grammar
can end, by the model choosing a stop token (EOS), which the mask allows exactly there.

Example::

    import json
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import grammask
    import grammask.hf

    tokenizer = AutoTokenizer.from_pretrained("HuggingFaceTB/SmolLM2-135M-Instruct")
    model = AutoModelForCausalLM.from_pretrained("HuggingFaceTB/SmolLM2-135M-Instruct")
    # vocab_size: the model's logits width, which may exceed the tokenizer's length.
    vocab = grammask.Vocabulary.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)
    schema = {"type": "object", "properties": {"name": {"type": "string"},
              "age": {"type": "integer"}}, "required": ["name", "age"]}
    compiled = grammask.Compiler(vocab).compile_json_schema(schema)

    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "A person as JSON."}],
        add_generation_prompt=True, return_tensors="pt", return_dict=True)
    out = model.generate(**prompt, max_new_tokens=100, do_sample=False,
                         logits_processor=[grammask.hf.LogitsProcessor(compiled)],
                         eos_token_id=vocab.stop_token_ids)
    text = tokenizer.decode(out[0, prompt["input_ids"].shape[1]:], skip_special_tokens=True)
    print(json.loads(text))

``eos_token_id=vocab.stop_token_ids`` makes generation stop at any of the vocabulary's
stop tokens, which are the ones the mask allows where the document ends (by default the
tokenizer's EOS and the stop tokens grammask recognizes; a model whose
``generation_config`` names fewer would otherwise go on after one of the others).

One processor serves one ``generate`` call (``batch_size`` rows: the batch of prompts
times ``num_return_sequences``; beam search is not supported). To use it again, call
:meth:`LogitsProcessor.reset` or make a new one. A row whose matcher has terminated (its
stop token accepted) or that was given a token the grammar refuses (which happens only
when something else changed the scores after the mask, or with a token forced in by
another processor) is no longer constrained by the grammar: from then on only stop tokens
are allowed on it, so it ends at once.

This module imports torch (and transformers, whose ``LogitsProcessor`` class it
subclasses when transformers is installed); ``import grammask`` alone imports neither.
"""

from __future__ import annotations

from typing import Any, List, Optional

import numpy as np
import torch

import grammask

try:  # Subclass transformers' own class when it is there (isinstance checks, docs).
    from transformers import LogitsProcessor as _Base
except ImportError:  # pragma: no cover - transformers is what this module is for
    _Base = object  # type: ignore[assignment,misc]

__all__ = ["LogitsProcessor"]


class LogitsProcessor(_Base):  # type: ignore[misc,valid-type]
    """Masks the scores of tokens a compiled grammar does not allow next.

    ``compiled``: a :class:`grammask.CompiledGrammar`, compiled for a vocabulary built
    with the model's logits width (``Vocabulary.from_huggingface(tokenizer,
    vocab_size=model.config.vocab_size)``). ``batch_size``: rows of the generation (one
    :class:`grammask.Matcher` each). Pass it in ``model.generate(...,
    logits_processor=[processor])``.

    Called as transformers calls a logits processor, ``processor(input_ids, scores)``
    with ``input_ids`` ``[batch, sequence]`` and ``scores`` ``[batch, logits_width]``:
    the first call records the prompt length; each later call first accepts the tokens
    generated since the previous call into each row's matcher, then fills the bitmask of
    every row and sets the scores of the tokens it forbids to ``-inf`` (in place; the
    scores are also returned). Logits past the vocabulary's ``vocab_size`` (padding ids of
    a model wider than its vocabulary) are never allowed.
    """

    def __init__(self, compiled: Any, batch_size: int = 1) -> None:
        if batch_size < 1:
            raise ValueError(f"LogitsProcessor: batch_size must be at least 1, got {batch_size}")
        self.compiled = compiled
        self.batch_size = int(batch_size)
        self.vocab_size = int(compiled.vocab_size)
        self.stop_token_ids = [int(i) for i in compiled.vocabulary.stop_token_ids]
        self.matchers: List[Any] = [grammask.Matcher(compiled) for _ in range(self.batch_size)]
        # One bitmask for every call: numpy for filling, a torch view of the same memory
        # for applying.
        self._bitmask_np = grammask.allocate_token_bitmask(self.batch_size, self.vocab_size)
        self._bitmask = torch.from_numpy(self._bitmask_np)
        self._stop_row = np.zeros(self._bitmask_np.shape[1], dtype=np.int32)
        stop_bits = self._stop_row.view(np.uint32)
        for token in self.stop_token_ids:
            stop_bits[token // 32] |= np.uint32(1 << (token % 32))
        self.reset()

    def reset(self) -> None:
        """Starts over: every matcher back at the grammar's start, the prompt length
        forgotten (the next call is taken as the first of a new generation)."""
        for matcher in self.matchers:
            matcher.reset()
        #: Prompt length of each row, set by the first call.
        self.prompt_lengths: Optional[List[int]] = None
        #: Per row: True once the row is no longer constrained (terminated or refused).
        self.finished: List[bool] = [False] * self.batch_size
        #: Per row: True when the row was given a token its grammar refused.
        self.refused: List[bool] = [False] * self.batch_size
        self._seen = 0

    def _accept(self, input_ids: Any) -> None:
        length = int(input_ids.shape[1])
        if length <= self._seen:
            return
        new = input_ids[:, self._seen : length].tolist()
        self._seen = length
        for row, tokens in enumerate(new):
            if self.finished[row]:
                continue
            matcher = self.matchers[row]
            for token in tokens:
                if not matcher.accept_token(int(token)):
                    self.refused[row] = True
                    self.finished[row] = True
                    break
                if matcher.is_terminated():
                    self.finished[row] = True
                    break

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        rows = int(scores.shape[0])
        if rows != self.batch_size:
            raise ValueError(
                f"grammask.hf.LogitsProcessor: scores have {rows} rows but the processor "
                f"was made with batch_size={self.batch_size} (use batch_size = number of "
                "prompts * num_return_sequences; beam search is not supported)"
            )
        if self.prompt_lengths is None:
            length = int(input_ids.shape[1])
            self.prompt_lengths = [length] * rows
            self._seen = length
        else:
            self._accept(input_ids)

        active = [row for row in range(rows) if not self.finished[row]]
        if len(active) == rows:
            grammask.fill_next_token_bitmasks(self.matchers, self._bitmask_np)
        else:
            for row in active:
                self.matchers[row].fill_next_token_bitmask(self._bitmask_np, index=row)
        for row in range(rows):
            if self.finished[row]:
                self._bitmask_np[row] = self._stop_row

        if int(scores.shape[-1]) > self.vocab_size:
            # Ids past the vocabulary (a model wider than its vocabulary): never allowed.
            scores[:, self.vocab_size :] = float("-inf")
        grammask.apply_token_bitmask_inplace(scores, self._bitmask)
        return scores

    def __repr__(self) -> str:
        return (
            f"grammask.hf.LogitsProcessor(batch_size={self.batch_size}, "
            f"vocab_size={self.vocab_size}, finished={self.finished})"
        )
