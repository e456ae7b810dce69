//! grammask-bench: benchmarks and corpus runners for grammask.
//!
//! - [`tokenize`]: encodes text with a real tokenizer (tiktoken-rs for the builtin
//!   OpenAI encodings, the `tokenizers` crate for tokenizer.json), so benchmarks walk the
//!   token sequences a model would produce.
//! - [`adversarial`]: the adversarial table of grammars and JSON Schemas, with the
//!   outcome of each row (shared with the root crate's `tests/adversarial_schemas.rs`).
//! - [`maskbench`]: the MaskBench runner (one file, and counts over a corpus).
//! - [`stats`]: summary statistics (mean and percentiles) of timings.
//! - [`cold_caches`]: memory written between timed runs, so that each starts cold.

#![warn(missing_docs)]

pub mod adversarial;
pub mod cold_caches;
pub mod engines;
pub mod maskbench;
pub mod stats;
pub mod tokenize;
