//! grammask-bench: benchmarks and corpus runners for grammask.
//!
//! - [`tokenize`]: encodes text with a real tokenizer (tiktoken-rs for the builtin
//!   OpenAI encodings, the `tokenizers` crate for tokenizer.json), so benchmarks walk the
//!   token sequences a model would produce.
//! - [`stats`]: summary statistics (mean and percentiles) of timings.

#![warn(missing_docs)]

pub mod stats;
pub mod tokenize;
