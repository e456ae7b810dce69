//! The `grammask` commands, one module each.

pub mod check;
#[cfg(feature = "generate")]
pub mod generate;
pub mod grammar_match;
pub mod input;
pub mod mask;
pub mod print;
