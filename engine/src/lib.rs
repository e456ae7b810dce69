//! grammask-engine: compiles a grammar IR for a vocabulary and matches token sequences
//! against it, filling token bitmasks.
//!
//! - [`passes`]: IR → IR transformations, the pipeline in one place.
//! - [`automaton`]: per-rule byte automata (NFA → minimized, trimmed DFA).
//! - [`compiler`]: [`Compiler`], [`CompiledGrammar`] and the [`Limits`].
//! - [`matcher`]: [`Matcher`], the pushdown matcher with persistent stacks.
//! - `mask`: the token walk behind [`Matcher::fill_next_token_bitmask`].
//!
//! Lookahead assertions of EBNF rules are accepted and not enforced: the matcher treats a
//! rule with a lookahead like the same rule without it (the language is a superset).

#![warn(missing_docs)]

pub mod automaton;
pub mod compiler;
pub mod error;
mod follow;
pub mod ids;
mod mask;
pub mod matcher;
pub mod passes;
pub mod stack;
mod token_cache;

pub use compiler::{CompiledGrammar, Compiler, CompilerConfig, Limits};
pub use error::{CompileError, MatchError};
pub use ids::{StateId, TokenSetId};
pub use matcher::{fill_next_token_bitmasks, Matcher};
pub use stack::{Position, Stack};
