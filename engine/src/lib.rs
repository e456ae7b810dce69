//! grammask-engine: compiles a grammar IR for a vocabulary and matches token sequences
//! against it, filling token bitmasks.
//!
//! - [`passes`]: IR → IR transformations, the pipeline in one place.
//! - [`automaton`]: per-rule byte automata (NFA sharing equal parts → DFA whose states can
//!   all finish; minimized on request).
//! - [`compiler`]: [`Compiler`], [`CompiledGrammar`] (serializable) and the [`Limits`].
//! - [`deadline`]: the compile time budget, checked cooperatively.
//! - `cache`: [`GrammarCache`], compiled grammars by source and settings, memory-bounded.
//! - [`matcher`]: [`Matcher`], the pushdown matcher with persistent stacks.
//! - [`fields`]: how sure the model was of each value of a generated JSON document.
//! - `mask`: the token walk behind [`Matcher::fill_next_token_bitmask`].
//!
//! Lookahead assertions of EBNF rules are accepted and not enforced: the matcher treats a
//! rule with a lookahead like the same rule without it (the language is a superset).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod automaton;
mod cache;
mod checks;
pub mod compiler;
pub mod deadline;
pub mod error;
pub mod fields;
mod follow;
pub mod ids;
mod mask;
pub mod mask_cache;
pub mod matcher;
pub mod passes;
mod serialize;
pub mod stack;

pub use cache::GrammarCache;
pub use compiler::{CompiledGrammar, Compiler, CompilerConfig, LimitName, Limits};
pub use deadline::Deadline;
pub use error::{CompileError, MatchError};
pub use ids::{StateId, TokenSetId};
pub use matcher::{fill_next_token_bitmasks, Matcher};
pub use stack::{Position, Stack};

/// Builds now the vocabulary-level data that masks use, instead of on the first mask that
/// needs it: the slices of JSON-string runs (for a large vocabulary a few milliseconds, otherwise
/// paid by the first mask inside a string of any grammar). A server calls it once per
/// tokenizer at startup; the data lives as long as the vocabulary and is shared by every
/// grammar compiled for it.
pub fn prepare_vocabulary(vocab: &std::sync::Arc<grammask_tokenset::Vocabulary>) {
    let _ = mask_cache::slicing_for(vocab);
}

/// Compiled grammars, caches and matchers cross threads: a compile-time check.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<CompiledGrammar>();
    shared::<GrammarCache>();
    shared::<Matcher>();
};
