//! `parse(print(ir)) == ir`: on llama.cpp's grammars, on hand-written cases, and on random
//! IR grammars (proptest).

use grammask_syntax::ir::{CharClass, Expr, Grammar, Rule, RuleId, Span, TokenSet};
use grammask_syntax::print::to_gbnf;
use grammask_syntax::{parse_ebnf, parse_gbnf, parse_grammar, validate, Dialect, ParseOptions};
use proptest::prelude::*;
use std::path::PathBuf;

fn without_spans(mut g: Grammar) -> Grammar {
    for rule in &mut g.rules {
        rule.span = Span::default();
    }
    g
}

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/llama.cpp-grammars")
}

#[test]
fn llama_cpp_grammars_parse_print_and_reparse() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gbnf"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 8, "{files:?}");
    for path in files {
        let src = std::fs::read_to_string(&path).unwrap();
        let parsed = parse_gbnf(&src)
            .unwrap_or_else(|d| panic!("{}: {}", path.display(), d.render("", &src)));
        assert!(parsed.warnings.is_empty(), "{}: {:?}", path.display(), parsed.warnings);
        let printed = to_gbnf(&parsed.grammar);
        let reparsed = parse_gbnf(&printed).unwrap_or_else(|d| {
            panic!("{}: {}\n{printed}", path.display(), d.render("", &printed))
        });
        assert_eq!(
            without_spans(reparsed.grammar),
            without_spans(parsed.grammar),
            "{}\n{printed}",
            path.display()
        );
        // Printing is idempotent.
        assert_eq!(to_gbnf(&parse_gbnf(&printed).unwrap().grammar), printed);
    }
}

#[test]
fn llama_cpp_grammar_details() {
    let src = std::fs::read_to_string(data_dir().join("list.gbnf")).unwrap();
    let g = parse_gbnf(&src).unwrap().grammar;
    let item = g.rule(g.rule_id("item").unwrap());
    let Expr::Seq(items) = &item.body else { panic!("{:?}", item.body) };
    let Expr::Repeat { expr, min: 1, max: None } = &items[1] else { panic!("{:?}", items[1]) };
    let Expr::Class(class) = &**expr else { panic!() };
    assert!(class.negated);
    for c in ['\r', '\n', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}'] {
        assert!(!class.contains(c), "{c:?}");
    }
    let src = std::fs::read_to_string(data_dir().join("japanese.gbnf")).unwrap();
    let g = parse_gbnf(&src).unwrap().grammar;
    let hiragana = g.rule(g.rule_id("hiragana").unwrap());
    assert_eq!(hiragana.body, Expr::class(false, [('ぁ', 'ゟ')]));
    let src = std::fs::read_to_string(data_dir().join("json.gbnf")).unwrap();
    let g = parse_gbnf(&src).unwrap().grammar;
    let ws = g.rule(g.rule_id("ws").unwrap());
    let Expr::Choice(alternatives) = &ws.body else { panic!() };
    assert_eq!(alternatives[0], Expr::Empty);
    let names: Vec<&str> = g.rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["root", "object", "value", "array", "string", "number", "ws"]);
}

#[test]
fn syntax_forms_lower_as_written() {
    let g = parse_gbnf(concat!(
        "root ::= \"a\"\"b\" (\"c\" \"d\") (\"e\") | (\"x\" | \"y\") | | [^a-c] . [] [^]\n",
        "  | \"\\x85\\u00e9\\U0001F600\\t\\n\\r\\\\\\\"\\[\\]\\-\" [\\-\\]a-] <[5]> !<[3,1]>\n",
        "  | x{2} x{2,} x{,3} x{1,4} x? x* x+ x{ 1 , 2 } (x)*?\n",
        "x ::= ( \"a\"\n  # comment\n  | \"b\" ) # trailing comment\n",
    ))
    .unwrap()
    .grammar;
    let x = Expr::Rule(RuleId::new(1));
    let lit = Expr::literal;
    let expected = Expr::Choice(vec![
        Expr::Seq(vec![lit("a"), lit("b"), Expr::Seq(vec![lit("c"), lit("d")]), lit("e")]),
        Expr::Choice(vec![lit("x"), lit("y")]),
        Expr::Empty,
        Expr::Seq(vec![
            Expr::class(true, [('a', 'c')]),
            Expr::Class(CharClass::any()),
            Expr::class(false, []),
            Expr::Class(CharClass::any()),
        ]),
        Expr::Seq(vec![
            lit("\u{85}é😀\t\n\r\\\"[]-"),
            Expr::class(false, [('-', '-'), (']', ']'), ('a', 'a')]),
            Expr::Tokens(TokenSet { negated: false, ids: vec![5].into() }),
            Expr::Tokens(TokenSet { negated: true, ids: vec![1, 3].into() }),
        ]),
        Expr::Seq(vec![
            Expr::repeat(x.clone(), 2, Some(2)),
            Expr::repeat(x.clone(), 2, None),
            Expr::repeat(x.clone(), 0, Some(3)),
            Expr::repeat(x.clone(), 1, Some(4)),
            Expr::optional(x.clone()),
            Expr::star(x.clone()),
            Expr::plus(x.clone()),
            Expr::repeat(x.clone(), 1, Some(2)),
            Expr::optional(Expr::star(x.clone())),
        ]),
    ]);
    assert_eq!(g.rules[0].body, expected);
    assert_eq!(g.rules[1].body, Expr::Choice(vec![lit("a"), lit("b")]));
    assert_eq!(lit("\u{85}").clone(), Expr::Bytes(vec![0xC2, 0x85]));
}

#[test]
fn ebnf_lookahead_dotted_names_and_escape() {
    let src = "root ::= a.b+ \"\\e\" (= [0-9] | \"x\")\na.b ::= [^] (= \"q\")\n";
    let g = parse_ebnf(src).unwrap().grammar;
    assert_eq!(g.rules[1].name, "a.b");
    assert_eq!(
        g.rules[0].lookahead,
        Some(Expr::Choice(vec![Expr::class(false, [('0', '9')]), Expr::literal("x")]))
    );
    assert_eq!(g.rules[1].body, Expr::Class(CharClass::any()));
    let printed = to_gbnf(&g);
    assert_eq!(printed, "root ::= a.b+ \"\\x1B\" (= [0-9] | \"x\")\na.b ::= . (= \"q\")\n");
    assert_eq!(without_spans(parse_ebnf(&printed).unwrap().grammar), without_spans(g));
    // In GBNF, `a.b` is `a`, any character, `b`.
    let g = parse_gbnf("root ::= a.b*\na ::= \"x\"\nb ::= \"y\"\n").unwrap().grammar;
    assert_eq!(
        g.rules[0].body,
        Expr::Seq(vec![
            Expr::Rule(RuleId::new(1)),
            Expr::Class(CharClass::any()),
            Expr::star(Expr::Rule(RuleId::new(2)))
        ])
    );
}

#[test]
fn continuation_lines_and_empty_alternatives() {
    let g = parse_gbnf("root ::= \"a\"\n  | \"b\"\n\n  # c\n  | \"c\" |\nws ::= | \" \"\nr2 ::=\n")
        .unwrap();
    let names: Vec<&str> = g.grammar.rules.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["root", "ws", "r2"]);
    assert_eq!(
        g.grammar.rules[0].body,
        Expr::Choice(vec![Expr::literal("a"), Expr::literal("b"), Expr::literal("c"), Expr::Empty])
    );
    assert_eq!(g.grammar.rules[2].body, Expr::Empty);
    assert_eq!(g.warnings.len(), 2);
}

#[test]
fn printer_escapes_and_compacts() {
    let g =
        parse_gbnf("root ::= [\\x00-\\x1F\"\\\\\\]\\[a-bd-z^-] \"\\x7F\\u2028\\\" \" [\\x5E]\n")
            .unwrap()
            .grammar;
    assert_eq!(
        to_gbnf(&g),
        "root ::= [\\x00-\\x1F\"\\-\\[-^abd-z] \"\\x7F\\u2028\\\" \" [\\x5E]\n"
    );
}

/// Renumbers the rules of `parsed` to match `original` by name.
fn renumber_like(parsed: Grammar, original: &Grammar) -> Grammar {
    let index_in_original: Vec<usize> = parsed
        .rules
        .iter()
        .map(|r| original.rule_id(&r.name).expect("same names").index())
        .collect();
    fn remap(e: &Expr, map: &[usize]) -> Expr {
        match e {
            Expr::Rule(id) => Expr::Rule(RuleId::new(map[id.index()])),
            Expr::Seq(items) => Expr::Seq(items.iter().map(|e| remap(e, map)).collect()),
            Expr::Choice(items) => Expr::Choice(items.iter().map(|e| remap(e, map)).collect()),
            Expr::Repeat { expr, min, max } => Expr::repeat(remap(expr, map), *min, *max),
            other => other.clone(),
        }
    }
    let mut rules: Vec<Option<Rule>> = vec![None; parsed.rules.len()];
    for (i, rule) in parsed.rules.iter().enumerate() {
        rules[index_in_original[i]] = Some(Rule {
            name: rule.name.clone(),
            body: remap(&rule.body, &index_in_original),
            lookahead: rule.lookahead.as_ref().map(|e| remap(e, &index_in_original)),
            span: Span::default(),
        });
    }
    Grammar {
        rules: rules.into_iter().map(|r| r.expect("a permutation")).collect(),
        root: RuleId::new(index_in_original[parsed.root.index()]),
    }
}

/// A random expression whose rule references point to rules `refs` (forward only, so
/// the grammar has no cycles and every rule can finish).
fn expr_strategy(refs: std::ops::Range<usize>) -> impl Strategy<Value = Expr> {
    let char_range =
        (any::<char>(), any::<char>()).prop_map(|(a, b)| if a <= b { (a, b) } else { (b, a) });
    let mut leaves: Vec<BoxedStrategy<Expr>> = vec![
        Just(Expr::Empty).boxed(),
        "\\PC{1,4}|[\\x00-\\x20\"\\\\\\u{80}-\\u{a0}]{1,3}".prop_map(|s| Expr::literal(&s)).boxed(),
        any::<String>()
            .prop_filter("non-empty", |s| !s.is_empty())
            .prop_map(|s| Expr::literal(&s))
            .boxed(),
        (proptest::collection::vec(char_range.clone(), 1..4), any::<bool>())
            .prop_map(|(r, negated)| Expr::class(negated, r))
            .prop_filter(
                "matches something",
                |e| matches!(e, Expr::Class(c) if !c.positive_ranges().is_empty()),
            )
            .boxed(),
        Just(Expr::Class(CharClass::any())).boxed(),
        (proptest::collection::btree_set(0u32..100_000, 1..3), any::<bool>())
            .prop_map(|(ids, negated)| {
                Expr::Tokens(TokenSet { negated, ids: ids.into_iter().collect() })
            })
            .boxed(),
    ];
    if !refs.is_empty() {
        leaves.push(refs.prop_map(|i| Expr::Rule(RuleId::new(i))).boxed());
    }
    let leaf = proptest::strategy::Union::new(leaves);
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Expr::Seq),
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Expr::Choice),
            (inner, 0u32..4, proptest::option::of(0u32..3))
                .prop_map(|(e, min, extra)| Expr::repeat(e, min, extra.map(|x| min + x))),
        ]
    })
}

fn grammar_strategy() -> impl Strategy<Value = (Grammar, bool)> {
    (1usize..6, any::<bool>()).prop_flat_map(|(n, with_lookahead)| {
        let rules: Vec<_> = (0..n)
            .map(|i| {
                let body = expr_strategy(i + 1..n);
                let lookahead = if with_lookahead {
                    proptest::option::of(expr_strategy(i + 1..n)).boxed()
                } else {
                    Just(None).boxed()
                };
                let prefix = prop_oneof![Just("r"), Just("rule-"), Just("a_b"), Just("X")];
                (body, lookahead, prefix).prop_map(move |(body, lookahead, prefix)| Rule {
                    name: format!("{prefix}{i}"),
                    body,
                    lookahead,
                    span: Span::default(),
                })
            })
            .collect();
        (rules, Just(with_lookahead))
            .prop_map(|(rules, la)| (Grammar { rules, root: RuleId::new(0) }, la))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_grammars_round_trip((grammar, lookahead) in grammar_strategy()) {
        prop_assert!(validate(&grammar).iter().all(|d| !d.is_error()), "{:?}", validate(&grammar));
        let printed = to_gbnf(&grammar);
        let opts = ParseOptions {
            dialect: if lookahead { Dialect::Ebnf } else { Dialect::Gbnf },
            root: grammar.rules[0].name.clone(),
        };
        let parsed = match parse_grammar(&printed, &opts) {
            Ok(p) => p.grammar,
            Err(d) => return Err(TestCaseError::fail(format!("{}\n{printed}", d.render("printed", &printed)))),
        };
        prop_assert_eq!(renumber_like(parsed, &grammar), grammar, "{}", printed);
    }
}

#[test]
fn crlf_line_endings_and_byte_order_mark() {
    let unix = "root ::= a\n  | \"b\" # c\na ::= (\n  \"x\"\n)\n";
    let windows = format!("\u{FEFF}{}", unix.replace('\n', "\r\n"));
    let a = parse_gbnf(unix).unwrap().grammar;
    let b = parse_gbnf(&windows).unwrap().grammar;
    assert_eq!(without_spans(a), without_spans(b));
    let d = parse_gbnf("root ::= \"x\r\ny ::= \"z\"\r\n").unwrap_err();
    assert_eq!(d.errors().next().unwrap().message, "unterminated string");
}
