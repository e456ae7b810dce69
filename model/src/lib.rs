//! grammask-model: constrained generation with a real model on CPU.
//!
//! Everything that touches candle lives here, so the grammask library crates never depend
//! on it: loading a quantized Llama-architecture GGUF file ([`Model::load`]), the
//! vocabulary from its metadata ([`gguf_vocab`]: the same ids as the model's logits, exact
//! bytes), a byte-level BPE encoder for prompts ([`bpe`]), chat templates ([`chat`]: the
//! file's own, ChatML without one), sampling
//! ([`sample`]), the masked decoding loop ([`Model::generate`]) and fetching the default
//! model, SmolLM2-135M-Instruct ([`fetch`]).

#![warn(missing_docs)]

pub mod bpe;
pub mod chat;
pub mod fetch;
pub mod generate;
pub mod gguf_vocab;
pub mod sample;

pub use generate::{
    apply_mask, GenerateOptions, Generation, Model, Prefilled, StopReason, DEFAULT_SYSTEM,
};

use std::fmt;

/// What can go wrong loading or running a model.
#[derive(Debug)]
pub enum Error {
    /// The GGUF file or its tokenizer.
    Gguf(String),
    /// The model's forward pass.
    Model(String),
    /// The grammar refused a step (never expected: the mask only allows accepted tokens).
    Grammar(String),
    /// Fetching the default model.
    Fetch(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Gguf(m) => write!(f, "model file: {m}"),
            Error::Model(m) => write!(f, "model: {m}"),
            Error::Grammar(m) => write!(f, "grammar: {m}"),
            Error::Fetch(m) => write!(f, "fetching the model: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// The model at `path`, or the default model (fetched into the cache on first use).
pub fn model_path(path: Option<&std::path::Path>) -> Result<std::path::PathBuf, Error> {
    match path {
        Some(p) => Ok(p.to_path_buf()),
        None => fetch::default_model(),
    }
}
