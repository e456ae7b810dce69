//! grammask-syntax: the grammar IR and the frontends that produce it.
//!
//! - [`ir`]: the grammar IR (rules, expressions, ids, spans) and a builder.
//! - [`regex`]: ECMA-262 regular expressions → IR (`pattern`, `.regex` files).
//! - [`json_schema`]: JSON Schema → IR.
//! - [`diagnostic`]: errors and warnings with line:col (text) or JSON pointer (schemas).
//! - [`parse`]: the GBNF (llama.cpp) and EBNF (XGrammar) frontends.
//! - [`analysis`]: nullable, productive and reachable rules; left recursion.
//! - [`validate`](mod@validate): IR-level checks shared by every frontend.
//! - [`print`]: IR → GBNF text.
//! - [`structural_tag`]: structural tags (XGrammar's JSON format) → IR.
//! - [`tools`]: OpenAI-style tools → a structural tag, a system prompt, calls read back.
//! - [`lazy`]: llama.cpp's lazy grammars (free text until a trigger).
//! - [`text`]: free text up to a stop string, and its automaton.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analysis;
pub mod complement;
pub mod derivative;
pub mod diagnostic;
pub mod ir;
pub mod json_schema;
pub mod lazy;
pub mod parse;
pub mod print;
pub mod regex;
pub mod structural_tag;
pub mod text;
pub mod tools;
pub mod unicode_escape;
pub mod validate;

pub use diagnostic::{Category, Diagnostic, Diagnostics, LineCol, Severity};
pub use ir::{CharClass, Expr, FreeText, Grammar, GrammarBuilder, Rule, RuleId, Span, TokenSet};
pub use json_schema::{
    builtin_json_grammar, json_schema_to_grammar, parse_json_schema, Converted, JsonSchemaOptions,
};
pub use parse::{
    parse_ebnf, parse_gbnf, parse_grammar, parse_grammar_with_tokens, Dialect, ParseOptions,
    Parsed, TokenByText,
};
pub use regex::{parse_regex, regex_to_ir, RegexOptions};
pub use structural_tag::{parse_structural_tag, structural_tag_to_grammar, StructuralTagOptions};
pub use tools::{ToolCallFormat, ToolChoice, ToolsOptions};
pub use validate::validate;
