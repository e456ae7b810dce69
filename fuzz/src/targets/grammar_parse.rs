//! `grammar_parse`: arbitrary bytes as GBNF, EBNF and a regular expression.
//!
//! - The parsers and the validator never panic; an error has at least one error
//!   diagnostic, its span starts inside (or at the end of) the text, and it renders.
//! - Whatever parses prints to GBNF that reads back to the same IR (spans aside), and the
//!   printed text prints again identically.
//! - Whatever parses compiles or is refused with an error (never a panic, within the
//!   fuzzing limits), and a short masked walk over a small vocabulary keeps the mask
//!   equal to `accept_token`, free of dead ends, and rollback exact.

use super::{fuzz_limits, short_walk, text_vocab};
use crate::gen::names_tokens;
use crate::rng::XorShift;
use grammask::syntax::ir::{Grammar, Span};
use grammask::syntax::print::to_gbnf;
use grammask::syntax::{parse_grammar, parse_regex, validate, Diagnostics, Dialect, ParseOptions};
use grammask::{Compiler, CompilerConfig, Matcher};
use std::hash::{DefaultHasher, Hash, Hasher};

fn without_spans(mut g: Grammar) -> Grammar {
    for rule in &mut g.rules {
        rule.span = Span::default();
    }
    g
}

fn check_errors(d: &Diagnostics, src: &str) {
    assert!(d.errors().next().is_some(), "an Err without an error diagnostic: {d:?}");
    for e in d.errors() {
        if let Some(span) = e.span {
            // Inside the text, or one byte at its end (errors at the end of input).
            assert!(span.start <= span.end && span.start <= src.len(), "span {span:?} outside");
        }
    }
    let _ = d.render("fuzz.gbnf", src);
}

/// Prints `g`, reads it back with `opts` and compares.
fn round_trip(g: &Grammar, opts: &ParseOptions, src: &str) {
    let printed = to_gbnf(g);
    let reparsed = match parse_grammar(&printed, opts) {
        Ok(p) => p.grammar,
        Err(d) => panic!(
            "the printed grammar does not read back\nsource: {src:?}\nprinted:\n{printed}\n{}",
            d.render("printed", &printed)
        ),
    };
    let again = to_gbnf(&reparsed);
    assert_eq!(
        without_spans(reparsed),
        without_spans(g.clone()),
        "parse(print(ir)) != ir\nsource: {src:?}\nprinted:\n{printed}"
    );
    assert_eq!(again, printed, "printing is not idempotent\nsource: {src:?}");
}

fn compile_and_walk(g: &Grammar, seed: u64) {
    let config = CompilerConfig { limits: fuzz_limits(), ..CompilerConfig::default() };
    let Ok(compiled) = Compiler::from_arc(text_vocab()).with_config(config).compile_grammar(g)
    else {
        return;
    };
    let mut rng = XorShift::new(seed);
    let mut m = Matcher::new(compiled);
    if let Err(e) = short_walk(&mut m, 6, names_tokens(g), |n| rng.below(n)) {
        panic!("{e}\ngrammar:\n{}", to_gbnf(g));
    }
}

/// The target.
pub fn run(data: &[u8]) {
    let src = String::from_utf8_lossy(data);
    let mut h = DefaultHasher::new();
    data.hash(&mut h);
    let seed = h.finish();
    for dialect in [Dialect::Gbnf, Dialect::Ebnf] {
        let opts = ParseOptions { dialect, ..ParseOptions::default() };
        match parse_grammar(&src, &opts) {
            Ok(parsed) => {
                let _ = validate(&parsed.grammar);
                round_trip(&parsed.grammar, &opts, &src);
                compile_and_walk(&parsed.grammar, seed);
            }
            Err(d) => check_errors(&d, &src),
        }
    }
    let pattern = src.lines().next().unwrap_or("");
    match parse_regex(pattern) {
        Ok(g) => {
            let _ = validate(&g);
            compile_and_walk(&g, seed);
        }
        Err(d) => check_errors(&d, pattern),
    }
}
