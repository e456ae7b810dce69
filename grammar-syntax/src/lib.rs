//! grammask-syntax: the grammar IR and the frontends that produce it.
//!
//! - [`ir`]: the grammar IR (rules, expressions, ids, spans) and a builder.
//! - [`regex`]: ECMA-262 regular expressions → IR (`pattern`, `.regex` files).
//! - [`json_schema`]: JSON Schema → IR.
//! - [`diagnostic`]: errors and warnings with line:col (text) or JSON pointer (schemas).

#![warn(missing_docs)]

pub mod diagnostic;
pub mod ir;
pub mod json_schema;
pub mod regex;

pub use diagnostic::{Category, Diagnostic, Diagnostics, LineCol, Severity};
pub use ir::{CharClass, Expr, Grammar, GrammarBuilder, Rule, RuleId, Span, TokenSet};
pub use regex::{parse_regex, regex_to_ir, RegexOptions};
