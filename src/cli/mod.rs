//! The `grammask` commands, one module each.

pub mod grammar_match;
pub mod input;
pub mod mask;
