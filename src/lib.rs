//! grammask: grammar-constrained decoding.
//!
//! A runtime that samples tokens asks grammask, at every step, for the tokens that keep
//! the output inside a grammar (a bitmask), and tells it which token was chosen.
//!
//! ```
//! use grammask::{Compiler, GrammarFormat, Matcher, Vocabulary};
//!
//! let vocab = Vocabulary::from_byte_tokens(
//!     vec![b"{".to_vec(), b"}".to_vec(), b"</s>".to_vec()], &[2], &[2], None,
//! ).unwrap();
//! let parsed = grammask::parse_grammar("root ::= \"{\" \"}\"", GrammarFormat::Gbnf, "root").unwrap();
//! let compiled = Compiler::new(&vocab).compile_grammar(&parsed.grammar).unwrap();
//! let mut matcher = Matcher::new(compiled);
//! let mut mask = vec![0u32; grammask::bitmask_len(vocab.vocab_size())];
//! matcher.fill_next_token_bitmask(&mut mask).unwrap();
//! assert_eq!(mask[0], 0b001); // only "{"
//! matcher.accept_token(0).unwrap();
//! matcher.accept_token(1).unwrap();
//! assert!(matcher.can_terminate());
//! ```
//!
//! The crates behind it: [`syntax`] (frontends and the grammar IR), [`tokenset`]
//! (vocabularies and bitmasks), [`engine`] (passes, automata, the matcher).

#![warn(missing_docs)]

pub use grammask_engine as engine;
pub use grammask_syntax as syntax;
pub use grammask_tokenset as tokenset;

pub use grammask_engine::{
    fill_next_token_bitmasks, prepare_vocabulary, CompileError, CompiledGrammar, Compiler,
    CompilerConfig, Limits, MatchError, Matcher,
};
pub use grammask_syntax::{Diagnostic, Diagnostics, Grammar};
pub use grammask_tokenset::{bitmask_len, get_bit, set_bit, Bitmask, TokenKind, Vocabulary};

use grammask_syntax::{Dialect, ParseOptions, Parsed};
use std::path::Path;

/// The text formats a grammar can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GrammarFormat {
    /// llama.cpp's GBNF (`.gbnf`).
    Gbnf,
    /// XGrammar's EBNF (`.ebnf`).
    Ebnf,
    /// A JSON Schema (`.json`).
    JsonSchema,
    /// A regular expression matching the whole text (`.regex`).
    Regex,
    /// A structural tag: XGrammar's JSON format of free text, tags and tool calls (no
    /// extension names it; `--structural-tag FILE` on the command line).
    StructuralTag,
}

impl GrammarFormat {
    /// The format a file's extension names, if any.
    pub fn from_path(path: &Path) -> Option<GrammarFormat> {
        match path.extension()?.to_str()? {
            "gbnf" => Some(GrammarFormat::Gbnf),
            "ebnf" => Some(GrammarFormat::Ebnf),
            "json" => Some(GrammarFormat::JsonSchema),
            "regex" => Some(GrammarFormat::Regex),
            _ => None,
        }
    }

    /// The format called `name` (`gbnf`, `ebnf`, `json`/`json-schema`, `regex`).
    pub fn from_name(name: &str) -> Option<GrammarFormat> {
        match name {
            "gbnf" => Some(GrammarFormat::Gbnf),
            "ebnf" => Some(GrammarFormat::Ebnf),
            "json" | "json-schema" | "jsonschema" => Some(GrammarFormat::JsonSchema),
            "regex" => Some(GrammarFormat::Regex),
            "structural-tag" | "structural_tag" => Some(GrammarFormat::StructuralTag),
            _ => None,
        }
    }
}

/// Reads grammar text of any format into the IR. `root` names the root rule of GBNF and
/// EBNF grammars. Tokens named by their text (a GBNF `<think>`, a structural tag's token)
/// need a vocabulary: use [`parse_grammar_for`].
pub fn parse_grammar(text: &str, format: GrammarFormat, root: &str) -> Result<Parsed, Diagnostics> {
    parse_grammar_tokens(text, format, root, None)
}

/// Reads grammar text as [`parse_grammar`] does, for `vocab`: tokens named by their text
/// (`<think>` in GBNF and EBNF, as llama.cpp writes them; a structural tag's tokens) are
/// the tokens of `vocab` with those bytes.
pub fn parse_grammar_for(
    text: &str,
    format: GrammarFormat,
    root: &str,
    vocab: &Vocabulary,
) -> Result<Parsed, Diagnostics> {
    parse_grammar_tokens(text, format, root, Some(&|t| vocab.token_id(t.as_bytes())))
}

fn parse_grammar_tokens(
    text: &str,
    format: GrammarFormat,
    root: &str,
    token_id: Option<grammask_syntax::TokenByText<'_>>,
) -> Result<Parsed, Diagnostics> {
    match format {
        GrammarFormat::Gbnf | GrammarFormat::Ebnf => {
            let dialect = if format == GrammarFormat::Gbnf { Dialect::Gbnf } else { Dialect::Ebnf };
            let opts = ParseOptions { dialect, root: root.to_string() };
            match token_id {
                Some(token_id) => grammask_syntax::parse_grammar_with_tokens(text, &opts, token_id),
                None => grammask_syntax::parse_grammar(text, &opts),
            }
        }
        GrammarFormat::Regex => {
            let pattern = text.strip_suffix('\n').unwrap_or(text);
            let pattern = pattern.strip_suffix('\r').unwrap_or(pattern);
            let grammar = grammask_syntax::parse_regex(pattern)?;
            Ok(Parsed { grammar, warnings: Vec::new() })
        }
        GrammarFormat::StructuralTag => {
            let options = grammask_syntax::StructuralTagOptions::default();
            let grammar = grammask_syntax::parse_structural_tag(
                text,
                &options,
                token_id.unwrap_or(&|_| None),
            )?;
            Ok(Parsed { grammar, warnings: Vec::new() })
        }
        GrammarFormat::JsonSchema => {
            let options = grammask_syntax::JsonSchemaOptions::default();
            let converted = grammask_syntax::parse_json_schema(text, &options)?;
            Ok(Parsed { grammar: converted.grammar, warnings: converted.warnings })
        }
    }
}

/// A vocabulary of the 256 single bytes, for matching text without a tokenizer.
pub fn byte_vocabulary() -> Vocabulary {
    // Invariant: 256 distinct non-empty tokens, no special or stop ids: always valid.
    Vocabulary::from_byte_tokens((0..=255u8).map(|b| vec![b]).collect(), &[], &[], None)
        .expect("256 one-byte tokens form a valid vocabulary")
}
