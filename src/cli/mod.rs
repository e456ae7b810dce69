//! The `grammask` commands, one module each.

pub mod check;
pub mod convert;
#[cfg(feature = "generate")]
pub mod generate;
pub mod grammar_match;
pub mod input;
pub mod mask;
pub mod print;
