//! Malformed grammars: each must be refused with an error at an exact line:column whose
//! message contains a given text; files with several errors report all of them.

use grammask_syntax::{parse_grammar, Diagnostics, Dialect, LineCol, ParseOptions};

fn errors(src: &str, dialect: Dialect) -> Diagnostics {
    let opts = ParseOptions { dialect, ..ParseOptions::default() };
    match parse_grammar(src, &opts) {
        Ok(parsed) => panic!("accepted: {src:?}\n{:?}", parsed.grammar),
        Err(d) => d,
    }
}

/// `(line, column, message)` of every error.
fn located(src: &str, d: &Diagnostics) -> Vec<(usize, usize, String)> {
    d.errors()
        .map(|e| {
            let at = LineCol::of(src, e.span.map_or(0, |s| s.start));
            (at.line, at.column, e.message.clone())
        })
        .collect()
}

const G: Dialect = Dialect::Gbnf;
const E: Dialect = Dialect::Ebnf;

#[rustfmt::skip]
const CASES: &[(Dialect, &str, usize, usize, &str)] = &[
    // Syntax errors.
    (G, "root ::= \"a\" )", 1, 14, "expected newline or end of input"),
    (G, "root ::= \"x\" @", 1, 14, "expected newline or end of input, found `@`"),
    (G, "root ::= \t\"a\" ]", 1, 15, "expected newline or end of input"),
    (G, "root ::= b ::= \"c\"", 1, 10, "expected newline or end of input"),
    (G, "root ::= x\nitem \"x\"\nx ::= \"y\"", 2, 6, "expected `::=` after rule name"),
    (G, "root ::= \"x\"\nfoo", 2, 4, "expected `::=` after rule name"),
    (G, "a.b ::= \"x\"\nroot ::= a", 1, 2, "expected `::=` after rule name"),
    (G, "::= \"a\"", 1, 1, "expected a rule definition"),
    (G, "root ::= \"a\"\n\"b\"", 2, 1, "expected a rule definition"),
    (G, "root ::= \"a\"\n  \"b\"", 2, 3, "expected a rule definition"),
    (G, "root ::= ( \"a\"\nx ::= \"b\"", 1, 10, "unclosed `(`"),
    (G, "root ::= (\"a\" | \"b\"", 1, 10, "unclosed `(`"),
    (G, "root ::= (", 1, 10, "unclosed `(`"),
    (G, "root ::= (\"a\" {2", 1, 17, "expected `}`"),
    (G, "root ::= \"x\" {", 1, 15, "expected a repetition count"),
    (G, "root ::= \"x\" {2", 1, 16, "expected `}`"),
    (G, "root ::= \"a\"{2,x}", 1, 16, "expected"),
    (G, "root ::= <[", 1, 12, "expected a token id"),
    (G, "root ::= <[12", 1, 14, "expected `]>`"),
    // Unterminated strings and classes, where they open.
    (G, "root ::= \"abc\nx ::= \"b\"", 1, 10, "unterminated string"),
    (G, "root ::= \"abc", 1, 10, "unterminated string"),
    (G, "root ::= \"a\\\"", 1, 10, "unterminated string"),
    (G, "root ::= [abc\n", 1, 10, "unterminated character class"),
    (G, "root ::= [a-", 1, 10, "unterminated character class"),
    (G, "root ::= \"ok\"\nbad ::= [a\nworse ::= \"x", 2, 9, "unterminated character class"),
    // Escapes.
    (G, "root ::= \"\\q\"", 1, 11, "unknown escape `\\q`"),
    (G, "root ::= \"\\e\"", 1, 11, "unknown escape `\\e`"),
    (G, "root ::= [\\x]", 1, 11, "invalid escape `\\x`"),
    (G, "root ::= \"\\x4\"", 1, 11, "expected 2 hexadecimal digits"),
    (G, "root ::= \"\\u12\"", 1, 11, "expected 4 hexadecimal digits"),
    (G, "root ::= \"\\UFFFFFFFF\"", 1, 11, "not a Unicode scalar value"),
    (G, "root ::= \"\\uD800\"", 1, 11, "not a Unicode scalar value"),
    (G, "root ::= [\\U00110000]", 1, 11, "not a Unicode scalar value"),
    // Ranges and bounds.
    (G, "root ::= [z-a]", 1, 11, "character range out of order: `z-a`"),
    (G, "root ::= \"a\"{3,1}", 1, 13, "repetition bounds out of order: `{3,1}`"),
    (G, "root ::= .{2,1}", 1, 11, "repetition bounds out of order"),
    (G, "root ::= \"a\"{99999999999}", 1, 14, "repetition count too large"),
    (G, "root ::= <[99999999999]>", 1, 12, "token id too large"),
    // Names.
    (G, "root ::= \"a\" valeu", 1, 14, "undefined rule `valeu`"),
    (G, "root ::= a\na ::= \"x\" b c", 2, 13, "undefined rule `c`"),
    (G, "root ::= \"a\"\nroot ::= \"b\"", 2, 1, "duplicate rule `root` (first defined at 1:1)"),
    (G, "start ::= \"a\"", 1, 1, "missing root rule `root`"),
    (G, "", 1, 1, "missing root rule `root`"),
    (G, "# only a comment\n", 1, 1, "missing root rule"),
    // Rules that never finish.
    (G, "root ::= a\na ::= \"x\" a", 2, 1, "rule `a` can never finish"),
    (G, "root ::= a\na ::= []", 2, 1, "rule `a` can never finish"),
    (G, "root ::= \"x\" root", 1, 1, "rule `root` can never finish"),
    // Left recursion.
    // Dialect differences.
    (G, "root ::= \"x\" (= \"y\")", 1, 14, "only supported in EBNF"),
    (E, "root ::= \"x\" (= \"y\"", 1, 14, "unclosed `(`"),
    (E, "root ::= a.b\na.b ::= \"x\" | \"\\q\"", 2, 16, "unknown escape"),
    (G, "root ::= <think>", 1, 10, "a token by its text (`<think>`) needs a vocabulary"),
];

#[test]
fn malformed_grammars_report_exact_positions() {
    assert!(CASES.len() >= 40);
    let mut failures = Vec::new();
    for &(dialect, src, line, column, message) in CASES {
        let d = errors(src, dialect);
        let found = located(src, &d);
        if !found.iter().any(|(l, c, m)| *l == line && *c == column && m.contains(message)) {
            failures.push(format!("{src:?}: want {line}:{column} {message:?}, got {found:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_error_of_a_file_is_reported() {
    let src = "root ::= a )\na ::= \"x\" (\nb ::= [z-a]\nc ::= \"\\q\"\nd ::= e\n";
    let d = errors(src, G);
    let found: Vec<(usize, usize)> = located(src, &d).iter().map(|(l, c, _)| (*l, *c)).collect();
    assert_eq!(found, vec![(1, 12), (2, 11), (3, 8), (4, 8), (5, 7)], "{d:?}");
    let rendered = d.render("g.gbnf", src);
    assert!(
        rendered.starts_with("g.gbnf:1:12: error: expected newline or end of input"),
        "{rendered}"
    );
}

#[test]
fn syntax_errors_in_several_rules_resume_at_the_next_rule() {
    let src =
        "root ::= x y z\nx ::= \"a\" (\"b\"\n  | \"c\"\ny ::= [q\nz ::= \"ok\" }\nw ::= \"fine\"\n";
    let d = errors(src, G);
    let found: Vec<(usize, usize)> = located(src, &d).iter().map(|(l, c, _)| (*l, *c)).collect();
    assert_eq!(found, vec![(2, 11), (4, 7), (5, 12)], "{d:?}");
    // `x`, `y` and `z` failed to parse, yet are not reported as undefined.
    assert!(d.errors().all(|e| !e.message.contains("undefined")));
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let src = format!("root ::= {}\"x\"{}", "(".repeat(100_000), ")".repeat(100_000));
    let d = errors(&src, G);
    let e = d.errors().next().unwrap();
    assert!(e.message.contains("nested too deeply"), "{e:?}");
    assert_eq!(LineCol::of(&src, e.span.unwrap().start).column, 10 + 1000);

    let src = format!("root ::= \"x\"{}", "*".repeat(100_000));
    let d = errors(&src, G);
    assert!(d.errors().next().unwrap().message.contains("nested too deeply"));

    let src = format!("root ::= {}\"x\"{}", "(\"a\" ".repeat(400), ")+".repeat(400));
    assert!(grammask_syntax::parse_gbnf(&src).is_ok());
}

#[test]
fn unreachable_rules_are_warnings() {
    let src = "root ::= \"a\"\nunused ::= \"b\"\n";
    let parsed = grammask_syntax::parse_gbnf(src).unwrap();
    assert_eq!(parsed.warnings.len(), 1);
    let w = &parsed.warnings[0];
    assert!(!w.is_error());
    assert_eq!(LineCol::of(src, w.span.unwrap().start), LineCol { line: 2, column: 1 });
    assert!(w.message.contains("`unused`"), "{w:?}");
}

#[test]
fn custom_root_name() {
    let opts = ParseOptions { root: "start".into(), ..ParseOptions::default() };
    let parsed = parse_grammar("start ::= \"a\"\n", &opts).unwrap();
    assert_eq!(parsed.grammar.rule(parsed.grammar.root).name, "start");
    let d = parse_grammar("root ::= \"a\"\n", &opts).unwrap_err();
    assert!(d.errors().any(|e| e.message == "missing root rule `start`"));
}

#[test]
fn tokens_by_text_are_looked_up_when_a_vocabulary_is_given() {
    let token_id = |text: &str| match text {
        "<think>" => Some(7),
        "</think>" => Some(8),
        _ => None,
    };
    let src = "root ::= <think> [a-z]* </think> !<think>\n";
    let parsed =
        grammask_syntax::parse_grammar_with_tokens(src, &ParseOptions::default(), &token_id)
            .unwrap();
    let printed = grammask_syntax::print::to_gbnf(&parsed.grammar);
    assert!(printed.contains("<[7]> [a-z]* <[8]> !<[7]>"), "{printed}");
    assert!(grammask_syntax::parse_gbnf(src).is_err(), "no vocabulary, no token by text");

    let src = "root ::= \"a\" <nope>\n";
    let d = grammask_syntax::parse_grammar_with_tokens(src, &ParseOptions::default(), &token_id)
        .unwrap_err();
    let e = d.errors().next().unwrap();
    assert_eq!(e.message, "the vocabulary has no token `<nope>`");
    assert_eq!(LineCol::of(src, e.span.unwrap().start), LineCol { line: 1, column: 14 });
}
