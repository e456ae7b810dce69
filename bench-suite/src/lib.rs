//! grammask-bench: benchmarks and corpus runners for grammask.
//!
//! - [`tokenize`]: encodes text with a real tokenizer (tiktoken-rs for the builtin
//!   OpenAI encodings, the `tokenizers` crate for tokenizer.json), so benchmarks walk the
//!   token sequences a model would produce.
//! - [`maskbench`]: the MaskBench runner (one file, and counts over a corpus).
//! - [`stats`]: summary statistics (mean and percentiles) of timings.

#![warn(missing_docs)]

pub mod maskbench;
pub mod stats;
pub mod tokenize;
