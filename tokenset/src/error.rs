//! The one error type of this crate.
//!
//! Every variant names where the vocabulary came from (`origin`: a file path, or a
//! description such as `builtin cl100k_base` or `tokenizer.json bytes`) and what is wrong,
//! so a user can fix the input without reading the code.

use std::path::PathBuf;

/// Why a vocabulary could not be loaded or changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VocabError {
    /// A file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON file is not valid JSON (truncated, bad syntax, ...).
    #[error("{origin}: invalid JSON: {source}")]
    Json {
        /// Where the JSON came from.
        origin: String,
        /// The parser's error, with line and column.
        #[source]
        source: serde_json::Error,
    },
    /// The input is well-formed but does not have the expected structure.
    #[error("{origin}: at {pointer}: {message}")]
    Format {
        /// Where the input came from.
        origin: String,
        /// A JSON pointer (for JSON input) or `line N` (for line-based input).
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// Two different tokens were given the same id.
    #[error("{origin}: token id {id} is assigned twice")]
    DuplicateId {
        /// Where the input came from.
        origin: String,
        /// The id.
        id: u32,
    },
    /// A token id is not below the vocabulary size (or above [`crate::MAX_VOCAB_SIZE`]).
    #[error("{origin}: token id {id} is out of range (vocab size {vocab_size})")]
    IdOutOfRange {
        /// Where the id came from.
        origin: String,
        /// The offending id.
        id: u64,
        /// The bound it must stay below.
        vocab_size: usize,
    },
    /// A requested vocabulary size cannot hold every token id, or is above
    /// [`crate::MAX_VOCAB_SIZE`].
    #[error("{origin}: vocab size {requested} is invalid: {reason}")]
    BadVocabSize {
        /// Where the size came from.
        origin: String,
        /// The requested size.
        requested: usize,
        /// Why it is refused.
        reason: String,
    },
    /// The tokenizer uses a model or encoding this crate does not decode.
    #[error("{origin}: unsupported tokenizer: {message}")]
    Unsupported {
        /// Where the input came from.
        origin: String,
        /// What is not supported.
        message: String,
    },
    /// [`crate::Vocabulary::builtin`] was given a name it does not know.
    #[error("unknown builtin vocabulary {name:?} (known: {known})")]
    UnknownBuiltin {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
}
