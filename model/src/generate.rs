//! A quantized Llama-architecture GGUF model on CPU, and the masked decoding loop.

use crate::bpe::BpeEncoder;
use crate::chat;
use crate::gguf_vocab::GgufTokenizer;
use crate::sample::Sampler;
use crate::Error;
use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use grammask_engine::fields::{Field, FieldRecorder, StepDistribution};
use grammask_engine::{CompiledGrammar, Matcher};
use grammask_tokenset::{bitmask_len, Vocabulary};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The system message used when a prompt gives none (SmolLM2's own default).
pub const DEFAULT_SYSTEM: &str =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

/// A loaded model with its tokenizer and the matching grammask vocabulary.
pub struct Model {
    weights: ModelWeights,
    device: Device,
    /// The tokenizer from the GGUF metadata.
    pub tokenizer: GgufTokenizer,
    /// The grammask vocabulary: the same ids as the model's logits.
    pub vocab: Vocabulary,
    encoder: BpeEncoder,
}

/// How to generate.
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    /// The most tokens to sample (stop token included).
    pub max_tokens: usize,
    /// 0 is greedy.
    pub temperature: f32,
    /// Nucleus sampling mass (1 keeps every token).
    pub top_p: f32,
    /// The sampler's seed.
    pub seed: u64,
    /// Under a grammar, record how sure the model was of each JSON value it wrote
    /// ([`Generation::fields`]).
    pub record_fields: bool,
    /// With `record_fields` and no grammar constraining the run: a grammar followed (never
    /// applied) to read the values, for as long as the text stays in it. Probabilities are
    /// then the unmasked model's.
    pub follow: Option<Arc<CompiledGrammar>>,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: 256,
            temperature: 0.0,
            top_p: 1.0,
            seed: 0,
            record_fields: false,
            follow: None,
        }
    }
}

/// Why generation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// A stop token was sampled (under a grammar: the grammar ended with it).
    Complete,
    /// `max_tokens` was reached before a stop token: the output is incomplete.
    MaxTokens,
}

impl StopReason {
    /// `complete` or `max_tokens`.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Complete => "complete",
            StopReason::MaxTokens => "max_tokens",
        }
    }
}

/// What a generation produced, and what it cost.
#[derive(Clone, Debug)]
pub struct Generation {
    /// The sampled ids, the stop token included.
    pub tokens: Vec<u32>,
    /// The text: the bytes of the sampled tokens, the stop token excluded.
    pub text: Vec<u8>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Prompt length in tokens.
    pub prompt_tokens: usize,
    /// Time of the prompt's forward pass, in ms.
    pub prefill_ms: f64,
    /// Time of the later forward passes (one per sampled token after the first), in ms.
    pub decode_ms: f64,
    /// Time of the grammar's work (mask, applying it to the logits, accepting the token),
    /// in ms, all steps.
    pub mask_ms: f64,
    /// Whether a grammar constrained the run and it accepted every token and the end.
    pub grammar_complete: bool,
    /// With [`GenerateOptions::record_fields`]: each JSON value written and the model's
    /// confidence in it, in order.
    pub fields: Vec<Field>,
}

impl Generation {
    /// Model time per sampled token after the prompt, in ms.
    pub fn model_ms_per_token(&self) -> f64 {
        let steps = self.tokens.len().saturating_sub(1);
        if steps == 0 {
            self.prefill_ms
        } else {
            self.decode_ms / steps as f64
        }
    }

    /// Grammar time per sampled token, in ms.
    pub fn mask_ms_per_token(&self) -> f64 {
        self.mask_ms / self.tokens.len().max(1) as f64
    }
}

impl Model {
    /// Loads a GGUF file: weights on CPU, tokenizer and vocabulary from its metadata.
    ///
    /// The quantized weights are dequantized to f32 once at load (candle's
    /// `CANDLE_DEQUANTIZE_ALL`), so matrix products run as f32 GEMMs: on CPU this is about
    /// 3 times faster per token and 15 times faster on a prompt than candle's quantized
    /// dot products, for 4 bytes per parameter of memory (about 0.6 GB for a 135M model).
    /// `CANDLE_DEQUANTIZE_ALL=0` in the environment keeps the quantized products.
    pub fn load(path: &Path) -> Result<Model, Error> {
        if std::env::var_os("CANDLE_DEQUANTIZE_ALL").is_none() {
            // Read by candle once per thread, when the first weight matrix is built.
            std::env::set_var("CANDLE_DEQUANTIZE_ALL", "1");
        }
        let mut file = std::fs::File::open(path)
            .map_err(|e| Error::Gguf(format!("{}: {e}", path.display())))?;
        let content = gguf_file::Content::read(&mut file)
            .map_err(|e| Error::Gguf(format!("{}: {e}", path.display())))?;
        let tokenizer = GgufTokenizer::from_content(&content)?;
        // The mask's vocabulary from tokenset's GGUF reader (the same ids, bytes, special
        // and stop tokens as the tokenizer above), as wide as the model's logits.
        let mut vocab = Vocabulary::from_gguf(path).map_err(|e| Error::Gguf(e.to_string()))?;
        if tokenizer.vocab_size > vocab.vocab_size() {
            vocab.set_vocab_size(tokenizer.vocab_size).map_err(|e| Error::Gguf(e.to_string()))?;
        }
        let encoder = BpeEncoder::new(&tokenizer)?;
        let device = Device::Cpu;
        let weights = ModelWeights::from_gguf(content, &mut file, &device)
            .map_err(|e| Error::Gguf(format!("{}: {e}", path.display())))?;
        Ok(Model { weights, device, tokenizer, vocab, encoder })
    }

    /// The ids of plain text (no special tokens).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, Error> {
        self.encoder.encode(text)
    }

    /// The prompt ids of a chat turn, ending with the opened assistant turn: the chat
    /// template the file stores ([`crate::chat::render`]), or ChatML when it has none (then
    /// `system` defaults to [`DEFAULT_SYSTEM`]). Special tokens the text names
    /// (`<|im_start|>`, ...) are their ids.
    pub fn chat_prompt(&self, system: Option<&str>, user: &str) -> Result<Vec<u32>, Error> {
        let text = self.chat_text(system, user)?;
        let mut ids = Vec::new();
        if self.tokenizer.add_bos {
            if let Some(bos) = self.tokenizer.bos {
                let bos_text = self.token_text(bos);
                if bos_text.is_empty() || !text.starts_with(bos_text) {
                    ids.push(bos);
                }
            }
        }
        ids.extend(self.encode_with_special(&text)?);
        Ok(ids)
    }

    /// The text of a chat turn's prompt: the file's template, or ChatML.
    pub fn chat_text(&self, system: Option<&str>, user: &str) -> Result<String, Error> {
        let mut messages = Vec::new();
        match &self.tokenizer.chat_template {
            Some(template) => {
                if let Some(system) = system {
                    messages.push(chat::Message { role: "system", content: system });
                }
                messages.push(chat::Message { role: "user", content: user });
                let bos = self.tokenizer.bos.map(|id| self.token_text(id)).unwrap_or_default();
                let eos = self.tokenizer.eos.map(|id| self.token_text(id)).unwrap_or_default();
                chat::render(template, &messages, bos, eos)
            }
            None => {
                if self.tokenizer.special_id("<|im_start|>").is_none() {
                    return Err(Error::Gguf(
                        "the model has no chat template and no ChatML markers (<|im_start|>)"
                            .into(),
                    ));
                }
                messages.push(chat::Message {
                    role: "system",
                    content: system.unwrap_or(DEFAULT_SYSTEM),
                });
                messages.push(chat::Message { role: "user", content: user });
                Ok(chat::chatml(&messages))
            }
        }
    }

    fn token_text(&self, id: u32) -> &str {
        self.tokenizer.texts.get(id as usize).map_or("", String::as_str)
    }

    /// The ids of text in which special tokens appear by their text (the longest first).
    pub fn encode_with_special(&self, text: &str) -> Result<Vec<u32>, Error> {
        let mut specials: Vec<(&str, u32)> = self
            .tokenizer
            .special
            .iter()
            .map(|&id| (self.token_text(id), id))
            .filter(|(t, _)| !t.is_empty())
            .collect();
        specials.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let mut ids = Vec::new();
        let mut plain = 0;
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            match specials.iter().find(|(t, _)| rest.starts_with(t)) {
                Some(&(t, id)) => {
                    if plain < i {
                        ids.extend(self.encode(&text[plain..i])?);
                    }
                    ids.push(id);
                    i += t.len();
                    plain = i;
                }
                None => i += rest.chars().next().map_or(1, char::len_utf8),
            }
        }
        if plain < text.len() {
            ids.extend(self.encode(&text[plain..])?);
        }
        Ok(ids)
    }

    fn forward(&mut self, ids: &[u32], pos: usize) -> Result<Vec<f32>, Error> {
        let mut run = || -> candle_core::Result<Vec<f32>> {
            let x = Tensor::new(ids, &self.device)?.unsqueeze(0)?;
            self.weights.forward(&x, pos)?.squeeze(0)?.to_vec1::<f32>()
        };
        run().map_err(|e| Error::Model(e.to_string()))
    }

    /// Runs the prompt through the model: the state to generate from, reusable for any
    /// number of generations ([`Model::generate_from`]).
    pub fn prefill(&mut self, prompt: &[u32]) -> Result<Prefilled, Error> {
        if prompt.is_empty() {
            return Err(Error::Model("empty prompt".into()));
        }
        let t = Instant::now();
        let logits = self.forward(prompt, 0)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        Ok(Prefilled { weights: self.weights.clone(), logits, pos: prompt.len(), ms })
    }

    /// Generates from `prompt` ids. With a grammar, the logits of every token the grammar
    /// does not allow are set to minus infinity before sampling, and the sampled token is
    /// accepted by the matcher. Every stop token of the model ends the run. `on_text`
    /// receives each sampled token's bytes as it comes.
    pub fn generate(
        &mut self,
        prompt: &[u32],
        grammar: Option<&Arc<CompiledGrammar>>,
        options: &GenerateOptions,
        on_text: &mut dyn FnMut(&[u8]),
    ) -> Result<Generation, Error> {
        let prefilled = self.prefill(prompt)?;
        self.generate_from(&prefilled, grammar, options, on_text)
    }

    /// [`Model::generate`] from a prompt already run ([`Model::prefill`]).
    pub fn generate_from(
        &mut self,
        prefilled: &Prefilled,
        grammar: Option<&Arc<CompiledGrammar>>,
        options: &GenerateOptions,
        on_text: &mut dyn FnMut(&[u8]),
    ) -> Result<Generation, Error> {
        self.weights = prefilled.weights.clone();
        let mut sampler = Sampler::new(options.temperature, options.top_p, options.seed);
        let mut matcher = grammar.map(|g| Matcher::new(g.clone()));
        let mut mask = vec![0u32; bitmask_len(self.vocab.vocab_size())];
        let mut out = Generation {
            tokens: Vec::new(),
            text: Vec::new(),
            stop: StopReason::MaxTokens,
            prompt_tokens: prefilled.pos,
            prefill_ms: prefilled.ms,
            decode_ms: 0.0,
            mask_ms: 0.0,
            grammar_complete: false,
            fields: Vec::new(),
        };
        let mut recorder = options.record_fields.then(FieldRecorder::new);
        // Without a grammar, the values are read with the followed one, unmasked.
        let mut follower = match (&matcher, &options.follow) {
            (None, Some(g)) if recorder.is_some() => Some(Matcher::new(g.clone())),
            (None, _) => {
                recorder = None;
                None
            }
            _ => None,
        };
        let mut fields = Vec::new();
        let mut raw = Vec::new();
        let mut logits = prefilled.logits.clone();
        let mut pos = prefilled.pos;
        while out.tokens.len() < options.max_tokens {
            if let Some(m) = matcher.as_ref() {
                let t = Instant::now();
                m.fill_next_token_bitmask(&mut mask).map_err(|e| Error::Grammar(e.to_string()))?;
                if recorder.is_some() {
                    raw.clone_from(&logits);
                }
                apply_mask(&mut logits, &mask);
                out.mask_ms += t.elapsed().as_secs_f64() * 1e3;
            }
            let id = sampler
                .sample(&logits)
                .ok_or_else(|| Error::Model("no token is allowed (every logit is -inf)".into()))?;
            if let (Some(r), Some(m)) = (recorder.as_mut(), matcher.as_ref()) {
                r.observe(m, &StepDistribution::from_logits(&raw, &mask, id));
            }
            if let (Some(r), Some(f)) = (recorder.as_mut(), follower.as_mut()) {
                r.observe(f, &StepDistribution::unmasked(&logits, id));
                if f.accept_token(id).is_err() {
                    // The text left the followed grammar: the values so far stand.
                    fields = recorder.take().map(FieldRecorder::finish).unwrap_or_default();
                    follower = None;
                }
            }
            if let Some(m) = matcher.as_mut() {
                let t = Instant::now();
                m.accept_token(id).map_err(|e| Error::Grammar(e.to_string()))?;
                out.mask_ms += t.elapsed().as_secs_f64() * 1e3;
            }
            out.tokens.push(id);
            if self.vocab.is_stop(id) {
                out.stop = StopReason::Complete;
                break;
            }
            let bytes = self.vocab.token_bytes(id).unwrap_or_default();
            out.text.extend_from_slice(bytes);
            on_text(bytes);
            if out.tokens.len() >= options.max_tokens {
                break;
            }
            let t = Instant::now();
            logits = self.forward(&[id], pos)?;
            out.decode_ms += t.elapsed().as_secs_f64() * 1e3;
            pos += 1;
        }
        out.grammar_complete = matcher.is_some_and(|m| m.is_terminated());
        out.fields = recorder.map(FieldRecorder::finish).unwrap_or(fields);
        Ok(out)
    }
}

/// A prompt run through the model: its key/value cache and the next token's logits.
#[derive(Clone)]
pub struct Prefilled {
    weights: ModelWeights,
    logits: Vec<f32>,
    pos: usize,
    /// Time of the prompt's forward pass, in ms.
    pub ms: f64,
}

/// Sets the logits of the tokens not in `mask` to minus infinity (ids past the mask too).
pub fn apply_mask(logits: &mut [f32], mask: &[u32]) {
    for (word_index, chunk) in logits.chunks_mut(32).enumerate() {
        let word = mask.get(word_index).copied().unwrap_or(0);
        if word == u32::MAX {
            continue;
        }
        for (bit, l) in chunk.iter_mut().enumerate() {
            if word & (1 << bit) == 0 {
                *l = f32::NEG_INFINITY;
            }
        }
    }
}
