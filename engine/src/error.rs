//! Errors of compilation and matching.

use grammask_syntax::Diagnostics;

/// Why a grammar could not be compiled.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CompileError {
    /// The grammar text or schema is invalid or unsupported (every diagnostic, with spans
    /// or JSON pointers).
    #[error("{0}")]
    Grammar(Diagnostics),
    /// A documented resource limit was reached.
    #[error("limit: {name}: {message}")]
    Limit {
        /// The limit's name, as in [`crate::Limits`].
        name: &'static str,
        /// What exceeded it.
        message: String,
    },
    /// The grammar is outside what the engine matches (for example left recursion). The
    /// engine's refusal of a rule parsed from text comes as [`CompileError::Grammar`]
    /// instead: a diagnostic of category `Unsupported` at the rule's span (line:col).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Serialized grammar bytes could not be loaded.
    #[error("error: cannot load the serialized grammar: {0}")]
    Load(String),
    /// The grammar names a token id the vocabulary does not have.
    #[error(
        "error: token id {id} named by the grammar is not below the vocabulary size {vocab_size}"
    )]
    TokenOutOfRange {
        /// The id.
        id: u32,
        /// The vocabulary's size.
        vocab_size: usize,
    },
}

/// Why a matcher refused a call. A refused call changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    /// The token id is not below the vocabulary size.
    #[error("token id {id} is out of range (vocabulary size {vocab_size})")]
    TokenOutOfRange {
        /// The id.
        id: u32,
        /// The vocabulary's size.
        vocab_size: usize,
    },
    /// The token is not allowed here.
    #[error("token {id} is not allowed here")]
    TokenRejected {
        /// The id.
        id: u32,
    },
    /// A byte of the input is not allowed; `offset` counts from the start of this call.
    #[error("byte {offset} is not allowed here")]
    BytesRejected {
        /// Offset of the first refused byte in the input of the call.
        offset: usize,
    },
    /// The matcher already accepted a stop token.
    #[error("the matcher is terminated")]
    Terminated,
    /// Rollback further back than the kept history.
    #[error("cannot roll back {requested} steps: {available} are kept")]
    RollbackTooFar {
        /// Steps asked for.
        requested: usize,
        /// Steps kept.
        available: usize,
    },
    /// The bitmask buffer is shorter than `ceil(vocab_size / 32)` words.
    #[error("bitmask has {got} words, {need} needed")]
    BitmaskTooShort {
        /// Words given.
        got: usize,
        /// Words needed.
        need: usize,
    },
    /// A documented resource limit was reached while matching.
    #[error("limit: {name}: {message}")]
    Limit {
        /// The limit's name, as in [`crate::Limits`].
        name: &'static str,
        /// What exceeded it.
        message: String,
    },
}
