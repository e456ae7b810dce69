//! No input makes the GBNF/EBNF parser panic: random bytes, random strings over the
//! grammar's own alphabet, and mutations of llama.cpp's grammars. Whatever parses must
//! also print and read back to the same IR.

use grammask_syntax::ir::Span;
use grammask_syntax::print::to_gbnf;
use grammask_syntax::{parse_grammar, Dialect, Grammar, ParseOptions};
use proptest::prelude::*;
use std::sync::OnceLock;

fn without_spans(mut g: Grammar) -> Grammar {
    for rule in &mut g.rules {
        rule.span = Span::default();
    }
    g
}

/// Parses in both dialects; what parses must round-trip through the printer.
fn check(src: &str) -> Result<(), TestCaseError> {
    for dialect in [Dialect::Gbnf, Dialect::Ebnf] {
        let opts = ParseOptions { dialect, ..ParseOptions::default() };
        match parse_grammar(src, &opts) {
            Ok(parsed) => {
                let printed = to_gbnf(&parsed.grammar);
                let reparsed = parse_grammar(&printed, &opts).map_err(|d| {
                    TestCaseError::fail(format!("{src:?}\nprinted:\n{printed}\n{d:?}"))
                })?;
                prop_assert_eq!(
                    without_spans(reparsed.grammar),
                    without_spans(parsed.grammar),
                    "{:?}",
                    src
                );
            }
            Err(d) => {
                prop_assert!(d.errors().next().is_some(), "{:?}", src);
                // Every error renders, and points inside (or at the end of) the text.
                for e in d.errors() {
                    if let Some(span) = e.span {
                        prop_assert!(span.start <= src.len());
                    }
                    let _ = e.render("fuzz", src);
                }
            }
        }
    }
    Ok(())
}

fn corpus() -> &'static [String] {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/llama.cpp-grammars");
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "gbnf"))
            .collect();
        files.sort();
        files.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize),
    Insert(usize, char),
    Swap(usize, usize),
}

fn apply(src: &str, mutations: &[Mutation]) -> String {
    let mut chars: Vec<char> = src.chars().collect();
    for m in mutations {
        let n = chars.len().max(1);
        match *m {
            Mutation::Delete(i) if !chars.is_empty() => {
                chars.remove(i % n);
            }
            Mutation::Insert(i, c) => chars.insert(i % (chars.len() + 1), c),
            Mutation::Swap(i, j) if !chars.is_empty() => chars.swap(i % n, j % n),
            _ => {}
        }
    }
    chars.into_iter().collect()
}

const ALPHABET: &str = "ab-_.09 \t\n\r:=|()[]^\\\"xuUe*+?{},<>!#é";

fn alphabet_char() -> impl Strategy<Value = char> {
    let chars: Vec<char> = ALPHABET.chars().collect();
    proptest::sample::select(chars)
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), alphabet_char()).prop_map(|(i, c)| Mutation::Insert(i, c)),
        (any::<usize>(), any::<usize>()).prop_map(|(i, j)| Mutation::Swap(i, j)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        check(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn random_grammar_text_never_panics(
        chars in proptest::collection::vec(alphabet_char(), 0..120),
        prefix in prop_oneof![Just(""), Just("root ::= "), Just("root ::= a\na ::= ")],
    ) {
        let body: String = chars.into_iter().collect();
        check(&format!("{prefix}{body}"))?;
    }

    #[test]
    fn mutated_llama_cpp_grammars_never_panic(
        file in 0usize..8,
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let corpus = corpus();
        let src = apply(&corpus[file % corpus.len()], &mutations);
        check(&src)?;
    }
}

#[test]
fn pathological_inputs() {
    let long_name = "a".repeat(100_000);
    let cases = [
        String::new(),
        "\0".to_string(),
        "root ::= \"\\".to_string(),
        "root ::= [\\".to_string(),
        "root ::= <[]>".to_string(),
        "root ::= !".to_string(),
        "root ::= \"x\"{".repeat(1000),
        format!("root ::= {long_name}\n{long_name} ::= \"x\""),
        format!("root ::= {}", "\"a\" | ".repeat(20_000)),
        format!("root ::= {}", ")".repeat(10_000)),
        format!("root ::= {}", "[".repeat(10_000)),
        "root ::= r0\n".to_string()
            + &(0..5000).map(|i| format!("r{i} ::= \"x\" r{}\n", i + 1)).collect::<String>()
            + "r5000 ::= \"end\"\n",
    ];
    for src in &cases {
        check(src).unwrap();
    }
}

#[test]
fn deepest_accepted_grammar_prints_and_drops() {
    let n = grammask_syntax::parse::MAX_NESTING;
    let src = format!("root ::= {}\"z\"{}\n", "(\"a\" | \"b\" ".repeat(n), ")".repeat(n));
    let parsed = grammask_syntax::parse_gbnf(&src).unwrap();
    let printed = to_gbnf(&parsed.grammar);
    let reparsed = grammask_syntax::parse_gbnf(&printed).unwrap();
    assert!(grammask_syntax::validate(&parsed.grammar).is_empty());
    assert_eq!(without_spans(reparsed.grammar), without_spans(parsed.grammar));
}

#[test]
fn many_rules_and_many_errors() {
    let n = 5_000;
    let mut src = String::from("root ::= r0\n");
    for i in 0..n {
        src.push_str(&format!("r{i} ::= \"x\" (r{} | [a-z]{{2,3}})\n", i + 1));
    }
    src.push_str(&format!("r{n} ::= \"end\"\n"));
    let parsed = grammask_syntax::parse_gbnf(&src).unwrap();
    assert_eq!(parsed.grammar.rules.len(), n + 2);
    // Many syntax errors are all reported.
    let broken = src.replace("(r1", "(r1 )").replace("(r2", "(r2 @").replace("(r3 ", "((r3 ");
    let errors = grammask_syntax::parse_gbnf(&broken).unwrap_err();
    assert!(errors.errors().count() >= 3, "{errors:?}");
}
