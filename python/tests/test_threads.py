"""Eight Python threads fill the masks of eight matchers of one compiled grammar at once
(the GIL released in each fill); the masks equal those of one thread."""

from __future__ import annotations

import random
import threading

import numpy as np

import grammask

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string", "maxLength": 40},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
        "score": {"type": "number"},
    },
    "required": ["id", "name", "tags"],
}


def walk(compiled: grammask.CompiledGrammar, seed: int, steps: int) -> tuple[list[int], np.ndarray]:
    """A seeded masked random walk: the tokens and every step's mask."""
    rng = random.Random(seed)
    vocab_size = compiled.vocab_size
    m = grammask.Matcher(compiled)
    masks = grammask.allocate_token_bitmask(steps, vocab_size)
    tokens: list[int] = []
    for step in range(steps):
        m.fill_next_token_bitmask(masks, step)
        bits = np.unpackbits(masks[step].view(np.uint8), bitorder="little")[:vocab_size]
        allowed = np.flatnonzero(bits)
        token = int(allowed[rng.randrange(len(allowed))])
        assert m.accept_token(token)
        tokens.append(token)
        if m.is_terminated():
            break
    return tokens, masks[: len(tokens)]


def replay(compiled: grammask.CompiledGrammar, tokens: list[int]) -> np.ndarray:
    m = grammask.Matcher(compiled)
    masks = grammask.allocate_token_bitmask(len(tokens), compiled.vocab_size)
    for step, token in enumerate(tokens):
        m.fill_next_token_bitmask(masks, step)
        assert m.accept_token(token)
    return masks


def test_eight_threads_equal_one() -> None:
    vocab = grammask.Vocabulary.builtin("o200k")
    compiled = grammask.Compiler(vocab).compile_json_schema(SCHEMA)
    walks = [walk(compiled, seed, 60) for seed in range(8)]
    # A fresh grammar: the threads also race to fill its token mask cache.
    fresh = grammask.Compiler(vocab, cache_bytes=0).compile_json_schema(SCHEMA)
    results: list = [None] * 8
    barrier = threading.Barrier(8)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = replay(fresh, walks[i][0])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (tokens, masks), got in zip(walks, results):
        assert got is not None and np.array_equal(got, masks)


def test_batch_fill_equals_single_fills() -> None:
    vocab = grammask.Vocabulary.builtin("o200k")
    compiled = grammask.Compiler(vocab).compile_json_schema(SCHEMA)
    walks = [walk(compiled, 100 + seed, 40)[0] for seed in range(8)]
    matchers = [grammask.Matcher(compiled) for _ in walks]
    depth = min(len(w) for w in walks)
    batch = grammask.allocate_token_bitmask(8, vocab.vocab_size)
    single = grammask.allocate_token_bitmask(8, vocab.vocab_size)
    for step in range(depth):
        grammask.fill_next_token_bitmasks(matchers, batch)
        for i, m in enumerate(matchers):
            m.fill_next_token_bitmask(single, i)
        assert np.array_equal(batch, single)
        for m, w in zip(matchers, walks):
            assert m.accept_token(w[step])
