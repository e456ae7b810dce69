//! Matcher behaviour on IR grammars built in code: recursion, ambiguity, UTF-8 split
//! across tokens, stop tokens, rollback, and the mask against a token-by-token check.

use grammask_engine::mask_cache::counters::{self, Path};
use grammask_engine::{CompileError, Compiler, MatchError, Matcher};
use grammask_fuzz::rng::XorShift;
use grammask_syntax::ir::{Expr, Grammar, GrammarBuilder, RuleId};
use grammask_tokenset::{bitmask_len, get_bit, Vocabulary};
use std::sync::Arc;

/// value ::= "[" (value ("," value)*)? "]" | [0-9]+ | "\"" [^"]* "\""
fn nested_lists() -> Grammar {
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    let value = b.declare("value");
    let items = Expr::seq(vec![
        Expr::Rule(value),
        Expr::star(Expr::seq(vec![Expr::literal(","), Expr::Rule(value)])),
    ]);
    b.define(
        value,
        Expr::choice(vec![
            Expr::seq(vec![Expr::literal("["), Expr::optional(items), Expr::literal("]")]),
            Expr::plus(Expr::class(false, vec![('0', '9')])),
            Expr::seq(vec![
                Expr::literal("\""),
                Expr::star(Expr::class(true, vec![('"', '"')])),
                Expr::literal("\""),
            ]),
        ]),
    );
    b.define(root, Expr::Rule(value));
    b.finish(root).unwrap()
}

fn vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = [
        "[", "]", ",", "[[", "]]", "],", ",[", "1", "23", "4]", "\"", "\"a", "a\"", "\",\"", "é",
        "日本", "x", "[1", "1,", "]]]", "\"\"", " ",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    // Partial UTF-8: the two halves of "é" (C3 A9) and the first byte of 日 (E6 97 A5).
    tokens.push(vec![0xC3]);
    tokens.push(vec![0xA9, b'"']);
    tokens.push(vec![0xE6, 0x97]);
    tokens.push(vec![0xA5]);
    tokens.push(b"</s>".to_vec());
    let eos = (tokens.len() - 1) as u32;
    Vocabulary::from_byte_tokens(tokens, &[eos], &[eos], Some(40)).unwrap()
}

/// `grammar` compiled for `v` with the mask cache and without it.
fn cached_and_plain(
    v: &Vocabulary,
    grammar: &Grammar,
) -> [Arc<grammask_engine::CompiledGrammar>; 2] {
    let cached = Compiler::new(v).compile_grammar(grammar).unwrap();
    let config = grammask_engine::CompilerConfig { mask_cache: false, ..Default::default() };
    [cached, Compiler::new(v).with_config(config).compile_grammar(grammar).unwrap()]
}

/// `grammar` with every rule kept a call (nothing inlined), the same without the mask
/// cache, and with the default inlining and the cache.
fn called_plain_and_cached(
    v: &Vocabulary,
    grammar: &Grammar,
) -> [Arc<grammask_engine::CompiledGrammar>; 3] {
    let mut called = grammask_engine::CompilerConfig::default();
    called.passes.inline_max_rule_size = 0;
    let plain = grammask_engine::CompilerConfig {
        mask_cache: false,
        passes: called.passes.clone(),
        ..Default::default()
    };
    [
        Compiler::new(v).with_config(called).compile_grammar(grammar).unwrap(),
        Compiler::new(v).with_config(plain).compile_grammar(grammar).unwrap(),
        Compiler::new(v).compile_grammar(grammar).unwrap(),
    ]
}

/// [`cached_and_plain`], and `grammar` compiled with every rule kept a call (nothing
/// inlined).
fn cached_plain_and_called(
    v: &Vocabulary,
    grammar: &Grammar,
) -> [Arc<grammask_engine::CompiledGrammar>; 3] {
    let [cached, plain] = cached_and_plain(v, grammar);
    let mut config = grammask_engine::CompilerConfig::default();
    config.passes.inline_max_rule_size = 0;
    [cached, plain, Compiler::new(v).with_config(config).compile_grammar(grammar).unwrap()]
}

/// The grammar of a JSON Schema (default options).
fn schema_grammar(schema: &str) -> Grammar {
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
    let options = grammask_syntax::JsonSchemaOptions::default();
    grammask_syntax::json_schema_to_grammar(&schema, &options).unwrap().grammar
}

fn mask_of(m: &Matcher) -> Vec<u32> {
    let size = m.grammar().vocabulary().vocab_size();
    let mut mask = vec![0u32; bitmask_len(size)];
    m.fill_next_token_bitmask(&mut mask).unwrap();
    (0..size as u32).filter(|&i| get_bit(&mask, i)).collect()
}

/// Seeded walks (each token picked among the allowed ones at random): at every
/// step the matchers of all `grammars` give the same mask, which is the set of tokens the
/// first accepts one by one; `check` runs after each step's masks.
fn masked_walks_agree(
    grammars: &[Arc<grammask_engine::CompiledGrammar>],
    seed: u64,
    walks: usize,
    steps: usize,
    check: impl Fn(),
) {
    let mut rng = XorShift::new(seed);
    for _walk in 0..walks {
        let mut matchers: Vec<Matcher> = grammars.iter().map(|g| Matcher::new(g.clone())).collect();
        for _step in 0..steps {
            let masks: Vec<Vec<u32>> = matchers.iter().map(mask_of).collect();
            for other in &masks[1..] {
                assert_eq!(&masks[0], other);
            }
            check();
            let ma = &masks[0];
            assert_eq!(*ma, accepted_one_by_one(&matchers[0]));
            if ma.is_empty() || matchers[0].is_terminated() {
                break;
            }
            let id = *rng.pick(ma);
            for m in &mut matchers {
                m.accept_token(id).unwrap();
            }
        }
    }
}

/// Runs `f` and asserts that each of `paths` decided tokens meanwhile: the fast paths a
/// test compares with the plain walk did run.
fn fired<T>(paths: &[Path], f: impl FnOnce() -> T) -> T {
    const { assert!(counters::ENABLED, "the engine's tests count paths (feature `path-counters`)") };
    let before = counters::snapshot();
    let out = f();
    let counts = counters::snapshot().since(&before);
    for &path in paths {
        assert!(counts.get(path) > 0, "the path {path:?} never ran: {counts:?}");
    }
    out
}

fn accepted_one_by_one(m: &Matcher) -> Vec<u32> {
    let size = m.grammar().vocabulary().vocab_size() as u32;
    (0..size).filter(|&i| m.fork().accept_token(i).is_ok()).collect()
}

fn compile(g: &Grammar, v: &Vocabulary) -> Arc<grammask_engine::CompiledGrammar> {
    Compiler::new(v).compile_grammar(g).unwrap()
}

#[test]
fn recursive_grammar_matches_and_masks_agree() {
    let v = vocab();
    let g = compile(&nested_lists(), &v);
    let mut m = Matcher::new(g);
    let text: &[&[u8]] = &[b"[[", b"1", b"]", b",[", b"\"", b"\xC3", b"\xA9\"", b"]]"];
    for piece in text {
        assert_eq!(mask_of(&m), accepted_one_by_one(&m));
        let id = v.token_id(piece).unwrap();
        m.accept_token(id).unwrap();
    }
    assert!(m.can_terminate());
    assert_eq!(mask_of(&m), vec![v.stop_tokens()[0]]);
    m.accept_token(v.stop_tokens()[0]).unwrap();
    assert!(m.is_terminated());
}

#[test]
fn refused_token_changes_nothing_and_rollback_restores() {
    let v = vocab();
    let mut m = Matcher::new(compile(&nested_lists(), &v));
    m.accept_token(v.token_id(b"[").unwrap()).unwrap();
    let before = mask_of(&m);
    assert_eq!(
        m.accept_token(v.token_id(b"]]").unwrap()),
        Err(MatchError::TokenRejected { id: v.token_id(b"]]").unwrap() })
    );
    assert_eq!(m.accept_token(1000), Err(MatchError::TokenOutOfRange { id: 1000, vocab_size: 40 }));
    // Padding ids are in range but never allowed.
    assert!(m.accept_token(35).is_err());
    assert_eq!(mask_of(&m), before);
    m.accept_token(v.token_id(b"1").unwrap()).unwrap();
    m.accept_token(v.token_id(b",[").unwrap()).unwrap();
    m.rollback(2).unwrap();
    assert_eq!(mask_of(&m), before);
    assert!(m.rollback(5).is_err());
}

#[test]
fn utf8_character_split_across_tokens() {
    let v = vocab();
    let mut m = Matcher::new(compile(&nested_lists(), &v));
    m.accept_bytes(b"[\"").unwrap();
    m.accept_token(v.token_id(&[0xE6, 0x97]).unwrap()).unwrap();
    // Inside a character only tokens that start with a continuation byte may follow:
    // A5 (completing 日) and A9 + quote (completing U+65E9, then closing the string).
    assert_eq!(mask_of(&m), vec![v.token_id(&[0xA9, b'"']).unwrap(), v.token_id(&[0xA5]).unwrap()]);
    m.accept_token(v.token_id(&[0xA5]).unwrap()).unwrap();
    m.accept_bytes("\"]".as_bytes()).unwrap();
    assert!(m.can_terminate());
}

#[test]
fn jump_forward_and_validate_tokens() {
    let v = vocab();
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    b.define(root, Expr::seq(vec![Expr::literal("[\"a"), Expr::star(Expr::literal("x"))]));
    let mut m = Matcher::new(compile(&b.finish(root).unwrap(), &v));
    assert_eq!(m.find_jump_forward_bytes(), b"[\"a");
    let ids: Vec<u32> =
        ["[", "\"a", "x", "x", "]"].iter().map(|s| v.token_id(s.as_bytes()).unwrap()).collect();
    assert_eq!(m.validate_tokens(&ids), 4);
    assert_eq!(m.history_len(), 0);
    m.accept_token(ids[0]).unwrap();
    assert_eq!(m.find_jump_forward_bytes(), b"\"a");
}

#[test]
fn left_recursion_is_rewritten_and_matches() {
    let v = Vocabulary::from_byte_tokens(
        ["1", "2", "+", "*", "(", ")", "1+", "2*(", "</s>"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect(),
        &[8],
        &[8],
        None,
    )
    .unwrap();
    let compiler = Compiler::new(&v);
    // Direct and indirect left recursion, the way people write expression grammars.
    let direct = "root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= term \"*\" factor | factor\nfactor ::= [0-9] | \"(\" expr \")\"";
    // expr ::= term "+" factor | factor, term ::= expr | term "*" factor: a sum always ends
    // with "+ factor".
    let indirect = "root ::= expr\nexpr ::= term \"+\" factor | factor\nterm ::= expr | term \"*\" factor\nfactor ::= [0-9] | \"(\" expr \")\"";
    type Case<'a> = (&'a str, &'a [(&'a str, bool)], &'a [&'a str]);
    let cases: [Case; 2] = [
        (
            direct,
            &[("1+2*(1+2)*2", true), ("((1))", true), ("1+", false), ("1++2", false)],
            &["1+", "2*(", "1", ")"],
        ),
        (
            indirect,
            &[
                ("1*2+3", true),
                ("((1))", true),
                ("(1+2)*3+4", true),
                ("1+2*3", false),
                ("1++2", false),
            ],
            &["2*(", "1", ")", "+", "1"],
        ),
    ];
    for (text, inputs, walk) in cases {
        let g = compiler.compile_gbnf(text).unwrap();
        for &(input, ok) in inputs {
            let mut m = Matcher::new(g.clone());
            let accepted = m.accept_bytes(input.as_bytes()).is_ok() && m.can_terminate();
            assert_eq!(accepted, ok, "{input} in {text}");
        }
        let mut m = Matcher::new(g.clone());
        for piece in walk {
            assert_eq!(mask_of(&m), accepted_one_by_one(&m));
            m.accept_token(v.token_id(piece.as_bytes()).unwrap()).unwrap();
        }
        assert!(m.can_terminate());
    }
}

#[test]
fn hidden_left_recursion_is_refused_with_the_cycle() {
    let v = vocab();
    let text = "# hidden behind ws\nroot ::= ws root \"x\" | \"y\"\nws ::= \" \"*";
    let err = Compiler::new(&v).compile_gbnf(text).unwrap_err();
    match err {
        // Parsed from text: the refusal points at the rule (line 2).
        CompileError::Grammar(d) => {
            let rendered = d.render("g.gbnf", text);
            assert!(
                rendered.contains("g.gbnf:2:1: unsupported: left recursion: root -> root"),
                "{rendered}"
            )
        }
        other => panic!("{other:?}"),
    }
    // Built as IR, without spans: the plain refusal.
    let mut b = GrammarBuilder::new();
    let ws = b.declare("ws");
    b.define(ws, Expr::star(Expr::literal(" ")));
    let hidden = b.declare("hidden");
    b.define(
        hidden,
        Expr::choice(vec![
            Expr::seq(vec![Expr::Rule(ws), Expr::Rule(hidden), Expr::literal("x")]),
            Expr::literal("y"),
        ]),
    );
    match Compiler::new(&v).compile_grammar(&b.finish(hidden).unwrap()) {
        Err(CompileError::Unsupported(msg)) => {
            assert!(msg.contains("left recursion: hidden -> hidden"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn ambiguous_grammar_stays_small() {
    // root ::= [0-9] (a? a? a? a? a? [0-9])*, a ::= "a" (llama.cpp's stack blow-up case)
    let v = Vocabulary::from_byte_tokens(
        vec![b"1".to_vec(), b"a".to_vec(), b"aa".to_vec(), b"1a".to_vec()],
        &[],
        &[],
        None,
    )
    .unwrap();
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    let a = b.declare("a");
    b.define(a, Expr::literal("a"));
    let digit = Expr::class(false, vec![('0', '9')]);
    let mut inner: Vec<Expr> = (0..5).map(|_| Expr::optional(Expr::Rule(a))).collect();
    inner.push(digit.clone());
    b.define(root, Expr::seq(vec![digit, Expr::star(Expr::seq(inner))]));
    let mut m = Matcher::new(compile(&b.finish(root).unwrap(), &v));
    for _ in 0..50 {
        m.accept_token(3).unwrap();
        assert!(m.num_stacks() <= 2, "{} stacks", m.num_stacks());
    }
}

#[test]
fn mask_cache_changes_speed_never_answers() {
    let v = vocab();
    let grammar = nested_lists();
    let cached = Compiler::new(&v).compile_grammar(&grammar).unwrap();
    let config = grammask_engine::CompilerConfig { mask_cache: false, ..Default::default() };
    let plain = Compiler::new(&v).with_config(config).compile_grammar(&grammar).unwrap();
    // A cache bounded to a quarter of what the walks fill: past the bound entries are
    // computed, not kept.
    let seed = 0x9E37_79B9_7F4A_7C15;
    masked_walks_agree(std::slice::from_ref(&cached), seed, 40, 30, || {});
    let bound = cached.mask_cache_memory() / 4;
    let limits = grammask_engine::Limits { max_mask_cache_bytes: bound, ..Default::default() };
    let config = grammask_engine::CompilerConfig { limits, ..Default::default() };
    let bounded = Compiler::new(&v).with_config(config).compile_grammar(&grammar).unwrap();
    let grammars = [cached.clone(), plain, bounded.clone()];
    fired(&[Path::PositionEntry, Path::StackWalk], || {
        masked_walks_agree(&grammars, seed, 40, 30, || {
            assert!(bounded.mask_cache_memory() <= bound);
        })
    });
    assert!(
        cached.mask_cache_memory() > bound,
        "the walks must fill more than the bound for the bounded cache to be tested"
    );
    assert!(bounded.mask_cache_memory() > 0, "entries that fit are stored");
}

/// Minimization (opt-in) merges equivalent states the NFA builder cannot see as equal
/// (the same language spelled two ways), and changes no mask.
#[test]
fn minimized_automata_give_the_same_masks() {
    let v = vocab();
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    // `1 ([0-9] | "\"" ...)` twice, once with the digits as a class, once spelled out.
    let digits = Expr::class(false, vec![('0', '9')]);
    let spelled = Expr::choice(('0'..='9').map(|c| Expr::literal(&c.to_string())).collect());
    let tail = |d: Expr| Expr::seq(vec![Expr::literal("["), Expr::star(d), Expr::literal("]")]);
    b.define(
        root,
        Expr::choice(vec![
            Expr::seq(vec![Expr::literal("1"), tail(digits)]),
            Expr::seq(vec![Expr::literal("23"), tail(spelled)]),
        ]),
    );
    let grammar = b.finish(root).unwrap();
    let plain = compile(&grammar, &v);
    let minimized = Compiler::new(&v).with_config(config_minimized());
    let minimized = minimized.compile_grammar(&grammar).unwrap();
    assert!(
        minimized.num_states() < plain.num_states(),
        "{} states minimized, {} not",
        minimized.num_states(),
        plain.num_states()
    );
    masked_walks_agree(&[plain, minimized], 0x2545_F491_4F6C_DD1D, 30, 12, || {});
    let grammar = nested_lists();
    let minimized = Compiler::new(&v).with_config(config_minimized()).compile_grammar(&grammar);
    masked_walks_agree(&[compile(&grammar, &v), minimized.unwrap()], 0x9E37_79B9, 30, 20, || {});
}

fn config_minimized() -> grammask_engine::CompilerConfig {
    grammask_engine::CompilerConfig { minimize: true, ..Default::default() }
}

/// The built-in JSON grammar (recursive: values, objects, arrays and strings are rules
/// of their own) with tokens that close a string, a value or several at once: the
/// classifications one frame deeper ([`grammask_engine`]'s parent entries, reused across
/// walks of the same compiled grammar) give the masks of the cache-free walk.
#[test]
fn closing_tokens_classified_with_the_caller_give_the_same_masks() {
    use grammask_syntax::json_schema::{builtin_json_grammar, JsonSchemaOptions};
    let tokens: Vec<Vec<u8>> = [
        "{", "}", "[", "]", ",", ":", "\"", "{\"", "\":", "\",", "\"}", "\"},", "\"}]", "\"]",
        "}}", "},", "}]", "]}", "],", "1", "1}", "1]", "1},", "a", "ab", "\"a\"", "true", "null",
        " ", "\n", ",\"", ": ", "é", "\\n", "\"}}", "]]", "ab\",", "ab\"}", "ab\"]", "ab\"}]",
        "ab\"}}", "é\"},", "x\"]]", "x\":",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .chain(std::iter::once(b"</s>".to_vec()))
    .collect();
    let eos = (tokens.len() - 1) as u32;
    let v = Vocabulary::from_byte_tokens(tokens, &[eos], &[eos], None).unwrap();
    let grammar = builtin_json_grammar(&JsonSchemaOptions::default());
    let cached = Compiler::new(&v).compile_grammar(&grammar).unwrap();
    let config = grammask_engine::CompilerConfig { mask_cache: false, ..Default::default() };
    let plain = Compiler::new(&v).with_config(config).compile_grammar(&grammar).unwrap();
    fired(&[Path::ParentEntry], || {
        masked_walks_agree(&[cached.clone(), plain], 0x2545_F491_4F6C_DD1D, 60, 40, || {})
    });
    assert!(cached.mask_cache_memory() > 0);
}

/// JSON whitespace runs stay one call (`ws-tail`, the blanks after the first) instead of
/// 32 inlined states at every place between tokens; the cache classifies tokens through
/// that call, and positions inside it with their return position. Tokens that end a run
/// and go on into the next key or value, or open a run and close it, give the masks of
/// the cache-free walk and of a grammar with every rule called.
#[test]
fn tokens_through_whitespace_runs_give_the_same_masks() {
    use grammask_syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
    let v = text_vocab(&[
        "{", "}", "{\"", "\":", "\",", "\"}", ",", ":", "\"", "a", "b", "1", "12", " ", "  ",
        "   ", "    ", "        ", "\t", " \t", "\n", "\n ", "\n  ", "\n    ", "\r\n", " \"",
        "  \"", "    \"", " 1", "  1", " }", "  }", "\n}", ": ", ":  ", ", ", ",\n", ",\n  ",
        "{\n", "{\n  ", " \"a\":", "1,", "1}", "1 ", "true", " true", "[", "]", " [", "1]",
    ]);
    let schema = serde_json::json!({"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "boolean"}}},
        "required": ["a"]});
    let grammar = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap().grammar;
    let grammars = cached_plain_and_called(&v, &grammar);
    let cached = grammars[0].clone();
    fired(&[Path::ThroughEntry, Path::CalleeEntry], || {
        masked_walks_agree(&grammars, 0x5851_F42D_4C95_7F2D, 80, 40, || {})
    });
    // The run is still bounded: 32 blanks after the line break, not 33.
    for (blanks, ok) in [(31, true), (32, true), (33, false)] {
        let mut m = Matcher::new(cached.clone());
        let text = format!("{{\n{}\"a\":1}}", " ".repeat(blanks));
        assert_eq!(m.accept_string(&text).is_ok(), ok, "{blanks} blanks");
    }
}

/// A long `maxLength` string whose pattern's characters are a negated class: their
/// escapes (`\uXXXX` for every character the class holds) would make the character's body
/// too large to copy 260 times, and a call per character would make every token of two
/// characters or more depend on the stack (walked at every step, each step a new
/// position). With the escapes a call of their own, the characters read directly stay in
/// place, and the masks are those of the cache-free walk and of a grammar with every
/// rule called.
#[test]
fn long_pattern_strings_keep_their_characters_in_place() {
    use grammask_syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
    let v = text_vocab(&[
        "{", "}", "{\"", "\":", "\"", "\"}", "name", "a", "ab", "Azure", "Sql", "_x", "1", "a.",
        ".", "<", "ab\"", "ab\"}", "\\", "\\n", "\\u", "\\u0041", "\\u003c", "é", "é\"", "a b",
        " ", "/", "?",
    ]);
    let schema = serde_json::json!({"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string", "maxLength": 260,
            "pattern": "^[A-Za-z0-9_][^<>*#.%&:\\\\+?/]*$"}},
        "additionalProperties": false});
    let grammar = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap().grammar;
    let grammars = cached_plain_and_called(&v, &grammar);
    masked_walks_agree(&grammars, 0x2545_F491_4F6C_DD1D, 40, 30, || {});
    // The characters are copied in place, their escapes one rule called from each copy.
    let config = grammask_engine::passes::PassConfig::default();
    let deadline = grammask_engine::deadline::Deadline::new(std::time::Duration::from_secs(60));
    let lowered = grammask_engine::passes::run(grammar.clone(), &config, &deadline).unwrap();
    let names: Vec<&str> = lowered.rules.iter().map(|r| r.name.as_str()).collect();
    assert!(!names.iter().any(|n| n.contains("-repeated-")), "{names:?}");
    let escape =
        lowered.rules.iter().find(|r| r.name.contains("-escape-")).expect("an escape rule");
    assert!(grammask_engine::passes::is_escape(escape));
    // Still bounded: 260 characters, not 261.
    for (n, ok) in [(260, true), (261, false)] {
        let mut m = Matcher::new(grammars[0].clone());
        let text = format!("{{\"name\":\"{}\"}}", "a".repeat(n));
        assert_eq!(m.accept_string(&text).is_ok(), ok, "{n} characters");
    }
}

/// Long strings are chunks of 32 characters, each a call returning to a different state
/// of the caller: the tokens that leave a chunk are classified under its return
/// position, the parent entries shared by the return positions no token tells apart.
/// Tokens that cross from one chunk into the next, or end the string, give the masks
/// of the cache-free walk and of a grammar with every rule called.
#[test]
fn tokens_across_the_chunks_of_long_strings_give_the_same_masks() {
    use grammask_syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
    let tokens: Vec<Vec<u8>> = [
        "{",
        "}",
        "{\"",
        "\":",
        "\"",
        "\",",
        "\"}",
        "\"s\":",
        "\"t\":",
        "a",
        "ab",
        "abcd",
        "abcdefgh",
        "abcdefghijklmnop",
        "abcdefghijklmnopqrstuvwxyz012345",
        "a\"",
        "ab\"}",
        "abcdefgh\",",
        "\\n",
        "a\\n",
        "é",
        "éé\"",
        " ",
        "1",
        "12",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    // Tokens longer than two chunks: return positions are compared that deep.
    .chain([70, 100].map(|n| "x".repeat(n).into_bytes()))
    .collect();
    let v = with_stop_token(tokens);
    let schema = serde_json::json!({"type": "object", "required": ["s", "t"],
        "properties": {"s": {"type": "string", "maxLength": 300},
            "t": {"type": "string", "minLength": 40, "maxLength": 200}},
        "additionalProperties": false});
    let grammar = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap().grammar;
    let grammars = cached_plain_and_called(&v, &grammar);
    masked_walks_agree(&grammars, 0x9FB2_1C65_1E98_DF25, 30, 160, || {});
    // Strings written with tokens of one length after another, across chunks to the end
    // of the string (random walks end most strings early).
    let long = "x".repeat(70);
    let cycles: [&[&str]; 5] = [
        &["abcd", "abcdefgh", "a"],
        &["abcdefghijklmnop", "ab"],
        &["abcdefghijklmnopqrstuvwxyz012345", "abcd", "é"],
        &["a\\n", "abcdefgh", "ab", "abcdefghijklmnop"],
        &["abcd", &long],
    ];
    fired(&[Path::ParentEntry], || {
        for cycle in cycles {
            let mut matchers: Vec<Matcher> =
                grammars.iter().map(|g| Matcher::new(g.clone())).collect();
            for m in &mut matchers {
                m.accept_string("{\"s\":\"").unwrap();
            }
            for step in 0..200 {
                let masks: Vec<Vec<u32>> = matchers.iter().map(mask_of).collect();
                assert!(masks.iter().all(|m| *m == masks[0]), "step {step}");
                assert_eq!(masks[0], accepted_one_by_one(&matchers[0]), "step {step}");
                let token = cycle[step % cycle.len()];
                let id = v.token_id(token.as_bytes()).unwrap();
                if !masks[0].contains(&id) {
                    break;
                }
                for m in &mut matchers {
                    m.accept_token(id).unwrap();
                }
            }
        }
    });
    // Still bounded: 300 characters, not 301.
    for (n, ok) in [(300, true), (301, false)] {
        let mut m = Matcher::new(grammars[0].clone());
        let text = format!("{{\"s\":\"{}\",\"t\":\"{}\"}}", "a".repeat(n), "b".repeat(40));
        assert_eq!(m.accept_string(&text).is_ok(), ok, "{n} characters");
    }
}

/// The characters of a counted string are positions of their own, each met once. The
/// tokens that leave the string and go on past what the return position's automaton
/// reads (`",1,`, into one of two calls) are classified from the outcomes of their rests
/// remembered at an earlier character, not read again. The string returns into two
/// rules whose calls read the same rest differently (`x`'s read `,1,`, `y`'s refuse it),
/// so a rest remembered under one return position and used under the other would change
/// the masks; and the masks are those of the cache-free walk and of a grammar with every
/// rule called.
#[test]
fn rests_of_tokens_leaving_a_string_are_shared_by_its_characters() {
    let v = text_vocab(&[
        "[", "]", "\"", ",", "1", "!", "a", "b", "aa", "aaaa", "\",", "\",1", "\",1,", "a\",1,",
        "\",1!", "1,", "1!", "b]", ",\"",
    ]);
    // root ::= "[" x "," y "]"    x ::= s "," (p | q)    y ::= s "," (r | t)
    // p ::= c "a"    q ::= c "b"    c ::= "1,"    r ::= e "a"    t ::= e "b"    e ::= "1!"
    // s ::= "\"" "a"{0,200} "\""
    // (`p` and `q` start with `1` only through a call of their own, so that a walk entering
    // them cannot read on: the rests stay context-dependent.)
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    let [x, y, s] = ["x", "y", "s"].map(|name| b.declare(name));
    let a = Expr::class(false, vec![('a', 'a')]);
    b.define(
        s,
        Expr::seq(vec![Expr::literal("\""), Expr::repeat(a, 0, Some(200)), Expr::literal("\"")]),
    );
    for (caller, start, [one, two]) in [(x, "1,", ["1,a", "1,b"]), (y, "1!", ["1!a", "1!b"])] {
        let start_rule = b.declare(start);
        b.define(start_rule, Expr::literal(start));
        let calls = [one, two].map(|text| {
            let rule = b.declare(text);
            b.define(rule, Expr::seq(vec![Expr::Rule(start_rule), Expr::literal(&text[2..])]));
            Expr::Rule(rule)
        });
        let body = vec![Expr::Rule(s), Expr::literal(","), Expr::choice(calls.into())];
        b.define(caller, Expr::seq(body));
    }
    let root_body =
        [Expr::literal("["), Expr::Rule(x), Expr::literal(","), Expr::Rule(y), Expr::literal("]")];
    b.define(root, Expr::seq(root_body.into()));
    let grammars = cached_plain_and_called(&v, &b.finish(root).unwrap());
    let text = format!("[\"{}\",1,a,\"{}\",1!b]", "a".repeat(90), "a".repeat(90));
    fired(&[Path::ParentEntry, Path::RememberedRest], || {
        let mut matchers: Vec<Matcher> = grammars.iter().map(|g| Matcher::new(g.clone())).collect();
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let masks: Vec<Vec<u32>> = matchers.iter().map(mask_of).collect();
            assert!(masks.iter().all(|m| *m == masks[0]), "before {rest}");
            assert_eq!(masks[0], accepted_one_by_one(&matchers[0]), "before {rest}");
            // The longest token the text goes on with, as a tokenizer would pick.
            let (id, len) = (0..v.vocab_size() as u32)
                .filter_map(|id| v.token_bytes(id).map(|b| (id, b.len())))
                .filter(|&(id, len)| {
                    len > 0 && rest.as_bytes().starts_with(v.token_bytes(id).unwrap())
                })
                .max_by_key(|&(_, len)| len)
                .unwrap();
            assert!(masks[0].contains(&id), "before {rest}");
            for m in &mut matchers {
                m.accept_token(id).unwrap();
            }
            rest = &rest[len..];
        }
        assert!(matchers.iter().all(Matcher::can_terminate));
    });
    masked_walks_agree(&grammars, 0x61C8_8646_80B5_83EB, 30, 120, || {});
}

/// Values of any type (`json-value`, a recursive rule called from the root) after
/// whitespace: the root's tokens that enter the call after some bytes (` true`, ` {"`,
/// ` [1`) are classified once with the root as the whole stack, and tail calls (a value
/// at the end of an array or object, the chain of optional members) push no frame.
/// Masks are those of the cache-free walk and of a grammar with every rule called.
#[test]
fn values_of_any_type_at_the_root_give_the_same_masks() {
    use grammask_syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
    let v = text_vocab(&[
        "{", "}", "{\"", "\":", "\",", "\"}", ",", ":", "\"", "a", "b", "c", "1", "12", " ", "\n",
        " \"", " 1", " -", " t", " true", " tr", " n", " null", " f", " false", " {", " {\"", " [",
        " [1", " [\"", " []", " {}", "[", "]", "],", "]}", "}}", "},", "true", "null", "1,", "1}",
        "1]", " }", "\n}", ", ", ",\n", "\"a\":", "\"b\":", "\"c\":", " \"a", "x", "\"x\"",
    ]);
    let schema = serde_json::json!({"type": "object", "properties": {
        "a": {}, "b": {"type": "array", "items": {}}, "c": {"type": "string"}}});
    let grammar = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap().grammar;
    let grammars = cached_plain_and_called(&v, &grammar);
    let cached = grammars[0].clone();
    fired(&[Path::ParentEntry], || {
        masked_walks_agree(&grammars, 0x9E6C_63D0_676A_9A99, 120, 40, || {})
    });
    let mut m = Matcher::new(cached);
    m.accept_string("{\"a\": [1, {\"x\": [true, null]}], \"b\": [[], {}], \"c\": \"x\"}").unwrap();
    assert!(m.can_terminate());
}

/// Strings whose alphabet leaves out a few characters (`[^#/]`, ECMAScript's `.` without
/// U+2028 and U+2029, `\S`, printable ASCII): the cache accepts the vocabulary's string
/// slices without the tokens that hold a left-out character, which are rejected, and
/// walks the rest. Tokens that hold one at any place, or end inside a character
/// (`\xE2\x80` starts U+2028 and U+2000 alike), give the masks of the cache-free walk.
#[test]
fn strings_without_some_characters_give_the_same_masks() {
    use grammask_syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
    let mut tokens: Vec<Vec<u8>> = [
        "{",
        "}",
        "{\"",
        "\":",
        "\":\"",
        "\",",
        "\"}",
        ",",
        ":",
        "\"",
        "a",
        "b",
        "ab",
        "abc",
        "a b",
        " ",
        "#",
        "a#",
        "#b",
        "a#b",
        "/",
        "a/",
        "ab/c",
        "é",
        "aé",
        "éa",
        "\u{2028}",
        "a\u{2028}",
        "\u{2029}b",
        "\u{2000}",
        "a\u{2000}b",
        "\u{a0}",
        "\u{3000}x",
        "x\u{3000}",
        "\u{1F600}",
        "a\u{1F600}",
        "\\",
        "\\n",
        "a\"",
        "ab\",",
        "abcdefghijklmnopqrst",
        "abc#defghijklmnopqrst",
        "ab cdefghijklmnopqrst",
        "p",
        "q",
        "r",
        "s",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect();
    // Ends inside a character: of U+2028 and U+2000 alike, of é, of U+1F600.
    tokens.extend([vec![0xE2, 0x80], b"a\xE2".to_vec(), vec![0xC3], vec![b'a', 0xF0, 0x9F]]);
    let v = with_stop_token(tokens);
    let schema = serde_json::json!({"type": "object", "properties": {
        "p": {"type": "string", "pattern": "^[^#/]*$"},
        "q": {"type": "string", "pattern": "^.{0,24}$"},
        "r": {"type": "string", "pattern": "^\\S+$"},
        "s": {"type": "string", "pattern": "^[ -~]*$"}},
        "required": ["p", "q", "r", "s"], "additionalProperties": false});
    let grammar = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap().grammar;
    let [cached, plain] = cached_and_plain(&v, &grammar);
    fired(&[Path::Slices], || {
        masked_walks_agree(&[cached.clone(), plain], 0x3C6E_F372_FE94_F82B, 120, 40, || {})
    });
    let mut m = Matcher::new(cached);
    m.accept_string("{\"p\":\"ab").unwrap();
    let text =
        |id: u32| String::from_utf8_lossy(v.token_bytes(id).unwrap_or_default()).into_owned();
    let allowed: Vec<String> = mask_of(&m).into_iter().map(text).collect();
    assert!(allowed.contains(&"a b".to_string()) && allowed.contains(&"é".to_string()));
    assert!(!allowed.iter().any(|t| t.contains('#') || t.contains('/')), "{allowed:?}");
}

/// A format's product with a pattern (`format: uri` and `^(https|file)://`), written as
/// one rule per state, each reached from several: the compiled grammar writes each state
/// once (not copied where the states before it end, which would hold every way through
/// the rest), and its masks agree with the plain walk and the tokens accepted one by one.
#[test]
fn states_of_a_format_and_a_pattern_give_the_same_masks() {
    let v = text_vocab(&[
        "\"", "h", "t", "p", "s", "f", "i", "l", "e", ":", "/", "//", "://", "https", "https://",
        "file://", "http", "a", "b", "ab", ".", "com", ".com", "1", "0", "12", "192", ".168", ".1",
        "%", "%2", "%20", "?", "#", "=", "&", "-", "_", "~", "@", "[", "]", "::", "\\/", "\\", "x",
        "www.", "/a", "a/", "ab/c", "\"}", " ",
    ]);
    let grammar =
        schema_grammar(r#"{"type": "string", "format": "uri", "pattern": "^(https|file)://"}"#);
    let [cached, plain] = cached_and_plain(&v, &grammar);
    let nodes: usize = cached.grammar().rules.iter().map(|r| r.body.size()).sum();
    assert!(nodes < 20_000, "the compiled grammar holds {nodes} nodes");
    masked_walks_agree(&[cached.clone(), plain], 0x6A09_E667_F3BC_C908, 150, 40, || {});
    let mut m = Matcher::new(cached);
    m.accept_string("\"https://a.com/ab").unwrap();
    assert!(m.fork().accept_string("?x=1#a\"").is_ok());
    assert!(Matcher::new(m.grammar().clone()).accept_string("\"ftp://").is_err());
}

/// An array of up to 100 objects whose key is a run of up to 255 characters: the items
/// of each chunk are calls of one item rule, so no automaton holds 32 copies of the run
/// (over 8,000 states, built at the step that first enters the array), and the masks
/// agree with the plain walk and the tokens accepted one by one.
#[test]
fn chunks_of_large_items_give_the_same_masks() {
    let v = text_vocab(&[
        "[",
        "]",
        "[{",
        "{\"",
        "{\"key\":\"",
        "key",
        "\":\"",
        "\",\"",
        "value",
        "\"}",
        "},{",
        "\"},{\"",
        "\"}]",
        ",",
        "{",
        "}",
        "\"",
        ":",
        "a",
        "ab",
        "abc",
        "a-b",
        "_",
        "Z9",
        "x y",
        " ",
        "é",
        "\\n",
    ]);
    let grammar = schema_grammar(
        r#"{"type": "array", "maxItems": 100, "items": {"type": "object",
            "required": ["key", "value"], "additionalProperties": false, "properties": {
            "key": {"type": "string", "pattern": "^[0-9a-zA-Z_-]{1,255}$"},
            "value": {"type": "string", "minLength": 1, "maxLength": 255}}}}"#,
    );
    let [cached, plain] = cached_and_plain(&v, &grammar);
    let largest = (0..cached.grammar().rules.len())
        .map(|r| cached.automaton(RuleId::new(r)).unwrap().len())
        .max()
        .unwrap_or(0);
    assert!(largest < 4_000, "an automaton of {largest} states");
    masked_walks_agree(&[cached.clone(), plain.clone()], 0xBB67_AE85_84CA_A73B, 60, 120, || {});
    let item = r#"{"key":"a-b","value":"x y"}"#;
    // At the chunks' edges, inside an item and between two.
    for n in [1, 31, 32, 33, 63, 64, 65, 97, 99] {
        for rest in ["", ",", ",{\"key\":\"ab"] {
            let text = format!("[{}{rest}", vec![item; n].join(","));
            let [mut a, mut b] = [Matcher::new(cached.clone()), Matcher::new(plain.clone())];
            a.accept_string(&text).unwrap();
            b.accept_string(&text).unwrap();
            assert_eq!(mask_of(&a), mask_of(&b), "{n} items, then {rest:?}");
            assert_eq!(mask_of(&a), accepted_one_by_one(&a), "{n} items, then {rest:?}");
        }
    }
    for (n, ok) in [(100, true), (101, false)] {
        let text = format!("[{}]", vec![item; n].join(","));
        assert_eq!(Matcher::new(cached.clone()).accept_string(&text).is_ok(), ok, "{n} items");
    }
}

/// A counted run whose caller reads the run's own character next (`"x" run " y"`): the
/// walk through the call follows the run as far as it goes, and a token that needs the
/// run to end earlier (`"x  y"`: one blank in the run, one after it) is left to the
/// stacks, not rejected.
#[test]
fn counted_run_followed_by_its_own_character() {
    let tokens: Vec<Vec<u8>> =
        ["x", " ", "  ", "   ", "y", " y", "  y", "x ", "x  ", "x  y", "x   y", "</s>"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
    let eos = (tokens.len() - 1) as u32;
    let v = Vocabulary::from_byte_tokens(tokens, &[eos], &[eos], None).unwrap();
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    let run = b.declare("run");
    b.define(run, Expr::repeat(Expr::literal(" "), 1, Some(20)));
    b.define(root, Expr::seq(vec![Expr::literal("x"), Expr::Rule(run), Expr::literal(" y")]));
    let grammar = b.finish(root).unwrap();
    let cached = Compiler::new(&v).compile_grammar(&grammar).unwrap();
    let config = grammask_engine::CompilerConfig { mask_cache: false, ..Default::default() };
    let plain = Compiler::new(&v).with_config(config).compile_grammar(&grammar).unwrap();
    fired(&[Path::ThroughEntry], || {
        masked_walks_agree(&[cached.clone(), plain], 0x2F69_3B5A_D1C4_0E87, 40, 10, || {})
    });
    let m = Matcher::new(cached);
    assert_eq!(mask_of(&m), vec![0, 7, 8, 9, 10], "x, x , x  , x  y, x   y");
}

#[test]
fn special_tokens_only_where_named_and_padding_never() {
    use grammask_syntax::ir::TokenSet;
    // ids: 0 "a", 1 "b", 2 <think> (special), 3 </s> (special, stop); 4..8 padding.
    let v = Vocabulary::from_byte_tokens(
        vec![b"a".to_vec(), b"b".to_vec(), b"<think>".to_vec(), b"</s>".to_vec()],
        &[2, 3],
        &[3],
        Some(8),
    )
    .unwrap();
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    b.define(
        root,
        Expr::seq(vec![
            Expr::Tokens(TokenSet { negated: false, ids: vec![2, 6].into() }),
            Expr::literal("a"),
            Expr::Tokens(TokenSet { negated: true, ids: vec![0].into() }),
        ]),
    );
    let mut m = Matcher::new(compile(&b.finish(root).unwrap(), &v));
    // The named special token, never the named padding id 6, never text "<think>" bytes.
    assert_eq!(mask_of(&m), vec![2]);
    assert_eq!(accepted_one_by_one(&m), vec![2]);
    m.accept_token(2).unwrap();
    assert_eq!(mask_of(&m), vec![0]);
    m.accept_token(0).unwrap();
    // Any token but id 0: "b", <think>, </s>; no padding.
    assert_eq!(mask_of(&m), vec![1, 2, 3]);
    assert_eq!(accepted_one_by_one(&m), vec![1, 2, 3]);
    m.accept_token(3).unwrap();
    assert!(!m.is_terminated());
    assert_eq!(mask_of(&m), vec![3]);
    m.accept_token(3).unwrap();
    assert!(m.is_terminated());
}

/// A stop token ends the output wherever a runtime takes it, so it is allowed exactly
/// where the root can end, even when the tokenizer gives it the kind `Normal` and its
/// bytes would continue the text (found by the `vocab_load` fuzz target on a GGUF file
/// whose end-of-text token is typed as normal).
#[test]
fn stop_token_of_kind_normal_only_where_the_root_can_end() {
    // "x" (id 0) is a normal token and the stop token.
    let v = Vocabulary::from_byte_tokens(
        vec![b"x".to_vec(), b"y".to_vec(), b"xy".to_vec()],
        &[],
        &[0],
        None,
    )
    .unwrap();
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    b.define(root, Expr::plus(Expr::literal("xy")));
    let g = b.finish(root).unwrap();
    for cache in [true, false] {
        let config = grammask_engine::CompilerConfig { mask_cache: cache, ..Default::default() };
        let compiled = Compiler::new(&v).with_config(config).compile_grammar(&g).unwrap();
        let mut m = Matcher::new(compiled);
        assert_eq!(mask_of(&m), [2], "only \"xy\": the stop token is not text");
        assert_eq!(m.accept_token(0), Err(MatchError::TokenRejected { id: 0 }));
        assert_eq!(m.validate_tokens(&[0]), 0);
        assert_eq!(m.history_len(), 0);
        m.accept_token(2).unwrap();
        assert!(m.can_terminate());
        assert_eq!(mask_of(&m), [0, 2], "\"xy\" again, or stop");
        m.accept_token(0).unwrap();
        assert!(m.is_terminated(), "at an end, the stop token terminates");
    }
}

/// A vocabulary of `tokens` and a last one, `</s>`, its stop token.
fn with_stop_token(mut tokens: Vec<Vec<u8>>) -> Vocabulary {
    tokens.push(b"</s>".to_vec());
    let eos = (tokens.len() - 1) as u32;
    Vocabulary::from_byte_tokens(tokens, &[eos], &[eos], None).unwrap()
}

/// [`with_stop_token`] of tokens given as text.
fn text_vocab(tokens: &[&str]) -> Vocabulary {
    with_stop_token(tokens.iter().map(|t| t.as_bytes().to_vec()).collect())
}

/// A vocabulary of safe runs of 1 to 20 characters (ASCII and multi-byte), incomplete
/// characters, and tokens with quotes, escapes and controls, for the vocabulary slices.
fn string_vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    for n in 1..=20 {
        tokens.push("a".repeat(n).into_bytes());
        tokens.push("é".repeat(n).into_bytes());
        tokens.push(format!("{}\"", "b".repeat(n)).into_bytes());
        tokens.push(format!("{}\",\"", "x".repeat(n)).into_bytes());
    }
    // Runs longer than the slices read exactly (31 characters).
    for n in [33, 45, 60] {
        tokens.push("a".repeat(n).into_bytes());
    }
    for t in [
        "\"",
        "{",
        "}",
        ",",
        ":",
        "\":",
        "\",",
        "\"}",
        "{\"",
        " ",
        "\\",
        "\\n",
        "\\\"",
        "\\u00",
        "e9",
        "\n",
        "a\nb",
        "日本",
        "ab1",
        "1",
        "12",
        "-",
        "x",
        "name",
        "\"name",
        "ok\"",
        "b",
        "c",
        "\u{7f}",
        "\u{80}",
        "😀",
        "a😀",
        "\"a\",\"b",
        "\"b\":",
        "zz\":\"",
        "zz\": 1",
        "q\":{",
        "é\":[",
        "zz\",",
        "nam\":",
        "zz\":tx",
        "q\":{]",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    // Incomplete characters: the halves of é (C3 A9), of 日 (E6 97 A5) and of 😀.
    for t in [&[0xC3][..], &[0xA9], &[b'a', 0xC3], &[0xE6, 0x97], &[0xA5, b'"'], &[0xF0, 0x9F]] {
        tokens.push(t.to_vec());
    }
    with_stop_token(tokens)
}

#[test]
fn vocabulary_slices_change_speed_never_answers() {
    let v = string_vocab();
    let schema = r#"{"type": "object", "properties": {
        "name": {"type": "string"},
        "b": {"type": "string", "maxLength": 4},
        "c": {"type": "string", "minLength": 2, "maxLength": 17},
        "x": {"type": "string", "pattern": "^[a-z]*$"},
        "d": {"type": "string", "maxLength": 45},
        "a": {"type": "array", "items": {"type": "string"}}
    }, "required": ["name", "b", "c", "x", "d", "a"], "additionalProperties": false}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    fired(&[Path::Slices, Path::Tails], || {
        masked_walks_agree(&grammars, 0x2545_F491_4F6C_DD1D, 60, 80, || {})
    });
}

/// Strings of more than 64 characters are read in chunks of 32, each a call of a rule
/// that calls nothing: a token that runs past a chunk's end is classified once more with
/// the caller's return position by the automata alone, then with the stack's frames.
#[test]
fn tokens_across_chunk_ends_give_the_same_masks() {
    let v = string_vocab();
    let schema = r#"{"type": "object", "properties": {
        "a": {"type": "string", "minLength": 200, "maxLength": 300},
        "b": {"type": "string", "minLength": 70, "maxLength": 400},
        "c": {"type": "array", "items": {"type": "string", "maxLength": 255}}
    }, "required": ["a", "b", "c"], "additionalProperties": false}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let rules = &grammars[0].grammar().rules;
    assert!(rules.iter().any(|r| r.name.contains("-repeated-")), "chunks are calls");
    fired(&[Path::Slices, Path::ParentEntry], || {
        masked_walks_agree(&grammars, 0x6A09_E667_F3BC_C908, 60, 80, || {})
    });
}

/// A pattern's product with a length bound (`[A-z]+` within 3 to 64 characters): the
/// states past the pattern's match are calls, while the others are read in place, so that
/// runs of string characters reach a state that only calls at each length. The slices
/// count what those calls read: every token of string characters is taken whole, and the
/// masks are the plain walk's.
#[test]
fn runs_into_the_called_states_of_a_patterns_product_take_the_slices() {
    let texts = [
        "{",
        "}",
        "{\"",
        "\":\"",
        "\"",
        "\",\"",
        "\"}",
        ",",
        ":",
        "1",
        "A",
        "As",
        "Asi",
        "Asia",
        "Asia\"",
        "a\",",
        "region",
        "North America",
        "abcdefghijkl",
        "1234",
        "12",
        "  ",
        "-",
        "é",
        "日本",
        "\\",
        "\\n",
        "\\u00e9",
    ];
    let v = with_stop_token(texts.iter().map(|t| t.as_bytes().to_vec()).collect());
    // The tokens of string characters only, most longer than the two characters read
    // before the first states that only call.
    let runs = texts.iter().filter(|t| !t.contains(['"', '\\'])).count() as u64;
    let schema = r#"{"type": "object", "properties": {"region": {"type": "string",
        "minLength": 3, "maxLength": 64, "pattern": "[A-z]+"}}, "required": ["region"],
        "additionalProperties": false}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let text =
        |id: u32| String::from_utf8_lossy(v.token_bytes(id).unwrap_or_default()).into_owned();
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"region\":\"").unwrap();
    let before = counters::snapshot();
    let allowed: Vec<String> = mask_of(&m).into_iter().map(text).collect();
    let sliced = counters::snapshot().since(&before).get(Path::Slices);
    for t in
        ["North America", "abcdefghijkl", "1234", "region", "{", "é", "\\", "\\u00e9", "Asia\""]
    {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["\"", "a\",", "\"}"] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    assert_eq!(sliced, runs, "the tokens of string characters are taken by the slices");
    masked_walks_agree(&grammars, 0x510E_527F_ADE6_82D1, 60, 40, || {});
}

/// At the start of the string of `{"p": ...}`, a string under `pattern`, over a
/// vocabulary of `texts`: checks that the mask holds every token of `allowed` and none
/// of `refused`, and gives how many tokens the slices took (the masks of random walks
/// checked against the plain walk's on the way).
fn sliced_at_a_patterns_start(
    texts: &[&str],
    pattern: &str,
    seed: u64,
    allowed: &[&str],
    refused: &[&str],
) -> u64 {
    let schema = format!(
        r#"{{"type": "object", "properties": {{"p": {{"type": "string", "pattern": {}}}}},
        "required": ["p"], "additionalProperties": false}}"#,
        serde_json::Value::String(pattern.into())
    );
    sliced_after(texts, &schema, "{\"p\":\"", seed, allowed, refused)
}

/// After `prefix` in a document of `schema`, over a vocabulary of `texts`: checks that
/// the mask holds every token of `allowed` and none of `refused`, and gives how many
/// tokens the slices took (the masks of random walks checked against the plain walk's
/// on the way).
fn sliced_after(
    texts: &[&str],
    schema: &str,
    prefix: &str,
    seed: u64,
    allowed: &[&str],
    refused: &[&str],
) -> u64 {
    let v = with_stop_token(texts.iter().map(|t| t.as_bytes().to_vec()).collect());
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let text =
        |id: u32| String::from_utf8_lossy(v.token_bytes(id).unwrap_or_default()).into_owned();
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string(prefix).unwrap();
    let before = counters::snapshot();
    let mask: Vec<String> = mask_of(&m).into_iter().map(text).collect();
    let sliced = counters::snapshot().since(&before).get(Path::Slices);
    for t in allowed {
        assert!(mask.contains(&t.to_string()), "{t} in {mask:?}");
    }
    for t in refused {
        assert!(!mask.contains(&t.to_string()), "{t} in {mask:?}");
    }
    masked_walks_agree(&grammars, seed, 60, 40, || {});
    sliced
}

/// Whether `t` holds a character whose first byte U+2028's (0xE2) is.
fn holds_e2(t: &str) -> bool {
    t.bytes().any(|b| b == 0xE2)
}

/// Texts of string characters around U+2028 and U+2029 (and characters sharing their first
/// byte), of escapes, and of JSON around strings.
const AROUND_LINE_TERMINATORS: [&str; 26] = [
    "{",
    "}",
    "{\"",
    "\":\"",
    "\"",
    "\"}",
    ",",
    ":",
    "1",
    "A",
    "Apple",
    "Apple Watch",
    "abcdefghijkl",
    "é",
    "日本",
    "\u{2028}",
    "a\u{2028}",
    "\u{2028}a",
    "\u{2029}b",
    "\u{201c}quoted\u{201d}",
    "x\u{2026}",
    "\\",
    "\\n",
    "a\\n",
    "\\u2028",
    "\\u00e9",
];

/// `^.+`: the first character is ECMAScript's `.`, which refuses U+2028 and U+2029 (and
/// the escapes of line terminators), while any character may follow it. The characters
/// sharing a first byte with those two divert: the tokens holding one are walked, and
/// every other token of string characters is taken by the slices, not only those of one
/// character. The masks are the plain walk's.
#[test]
fn a_first_character_refusing_what_follows_may_read_takes_the_slices() {
    let texts = AROUND_LINE_TERMINATORS;
    // The tokens of string characters without one whose first byte U+2028 starts with.
    let runs = texts.iter().filter(|t| !t.contains(['"', '\\']) && !holds_e2(t)).count() as u64;
    let allowed =
        ["Apple Watch", "日本", "a\u{2028}", "\u{201c}quoted\u{201d}", "x\u{2026}", "a\\n"];
    let refused = ["\"", "\"}", "\u{2028}", "\u{2028}a", "\u{2029}b", "\\n", "\\u2028"];
    let sliced =
        sliced_at_a_patterns_start(&texts, "^.+", 0x2028_2029_0A0D_5EED, &allowed, &refused);
    assert_eq!(sliced, runs, "the tokens of string characters are taken by the slices");
}

/// The keys of `patternProperties` `^.+` beside free keys: a key's first character is
/// ECMAScript's `.` (no U+2028 or U+2029), while a key starting with one of those, or
/// the empty key, matches no pattern and is a free key, read by the caller's complement.
/// Where the key's rule may end before such a character, the characters sharing its
/// first byte divert: their tokens are walked, and every other token of string
/// characters is taken by the slices. The masks are the plain walk's.
#[test]
fn a_key_pattern_beside_free_keys_takes_the_slices() {
    let texts = AROUND_LINE_TERMINATORS;
    let runs = texts.iter().filter(|t| !t.contains(['"', '\\']) && !holds_e2(t)).count() as u64;
    // A line terminator first, in any form: a free key, any value. The empty key too.
    let allowed = [
        "Apple Watch",
        "日本",
        "a\u{2028}",
        "\u{2028}",
        "\u{2028}a",
        "\u{2029}b",
        "x\u{2026}",
        "a\\n",
        "\\n",
        "\\u2028",
        "\"",
        "\":\"",
    ];
    let refused = ["\"}"];
    let schema = r#"{"type": "object", "patternProperties": {"^.+": {"type": "number"}}}"#;
    let sliced = sliced_after(&texts, schema, "{\"", 0x4B45_5953_2028_0001, &allowed, &refused);
    assert_eq!(sliced, runs, "the tokens of string characters are taken by the slices");
}

/// `^[^,;]*,.+$`: the first character may be any but `,` and `;`, U+2028 among them,
/// while the character after the comma is ECMAScript's `.`, which refuses U+2028: a
/// state the slices would read through refuses what the position reads (and reads the
/// `;` it refuses, whose tokens divert too). The characters sharing a first byte with
/// U+2028 divert (their tokens are walked), and every other token of string characters
/// is taken by the slices. The masks are the plain walk's.
#[test]
fn a_later_state_refusing_what_the_first_reads_takes_the_slices() {
    let texts = [
        "{",
        "}",
        "{\"",
        "\":\"",
        "\"",
        "\"}",
        ",",
        ":",
        "a",
        "abc",
        "a,b",
        ",x",
        "abc,",
        "日本",
        "\u{2028}",
        "\u{2028},x",
        "a,\u{2028}",
        ",\u{2028}",
        "\u{201c}x,y\u{201d}",
        "\\",
        "\\n",
        ",\\n",
        ";",
        "a;b",
        ",;",
    ];
    // The tokens of string characters without `;` (refused first, read after the comma:
    // walked) and without one whose first byte U+2028 starts with.
    let runs =
        texts.iter().filter(|t| !t.contains(['"', '\\', ';']) && !holds_e2(t)).count() as u64;
    let allowed =
        ["abc", "a,b", ",x", "\u{2028}", "\u{2028},x", "\u{201c}x,y\u{201d}", "\\n", ",;"];
    let refused = ["\"", "\"}", "a,\u{2028}", ",\u{2028}", ",\\n", ";", "a;b"];
    let sliced = sliced_at_a_patterns_start(
        &texts,
        "^[^,;]*,.+$",
        0x2C2C_2028_0BAD_5EED,
        &allowed,
        &refused,
    );
    assert_eq!(sliced, runs, "the tokens of string characters are taken by the slices");
}

/// `^[ -~].*$`: the first character is printable ASCII, any character may follow. The
/// position refuses every character of more than one byte that the states after it
/// read: the tokens holding one are walked, and every token of ASCII string characters
/// is taken by the slices, not only those of one character. The masks are the plain
/// walk's.
#[test]
fn an_ascii_first_character_before_any_takes_the_slices() {
    let texts = [
        "{",
        "}",
        "{\"",
        "\":\"",
        "\"",
        "\"}",
        ",",
        "a",
        "ab",
        "Hello world",
        "a,b:c",
        "é",
        "aé",
        "a日本",
        "日本",
        "a\u{2028}",
        "\\",
        "a\\n",
        "\\u00e9",
    ];
    // The tokens of ASCII string characters.
    let runs = texts.iter().filter(|t| !t.contains(['"', '\\']) && t.is_ascii()).count() as u64;
    let allowed = ["Hello world", "aé", "a日本", "a,b:c", "{\"", "\\"];
    let refused = ["\"", "é", "日本", "a\u{2028}", "\\u00e9", "a\\n"];
    let sliced =
        sliced_at_a_patterns_start(&texts, "^[ -~].*$", 0x7E20_A5C1_1F1E_5EED, &allowed, &refused);
    assert_eq!(sliced, runs, "the tokens of ASCII string characters are taken by the slices");
}

/// Patterns whose characters mostly loop among a few states (`[A-Za-z0-9]` runs, `.` and
/// `@` leading elsewhere, an e-mail address's local part): the slices without the other
/// characters are accepted whole, and the tokens holding a diverting character walked.
#[test]
fn diverting_characters_give_the_same_masks() {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    for t in [
        "{",
        "}",
        "{\"",
        "\":\"",
        "\",\"",
        "\"}",
        "\"",
        ",",
        "a",
        "b",
        "x",
        "e",
        "ab",
        "Ab9",
        "abcdefghijklmnopqrstuvwxyz0123456789",
        "a.b",
        ".",
        "..",
        "@",
        "a@",
        "@b",
        "a@b.c",
        "x.y@z",
        ".com",
        "com\"",
        "b\"}",
        "a b",
        " ",
        "-",
        "a-b",
        "_",
        "a_b",
        "%",
        "%20",
        "é",
        "aé",
        "é@",
        "a\u{a0}b",
        "\u{3000}",
        "+",
        "a+b",
        "!",
        "'",
        "a'b",
        "~",
        "{|}",
        "=",
        "?",
        "#",
        "/",
        "a/b",
        "\\",
        "\\n",
        "12",
        "9\"",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    let v = with_stop_token(tokens);
    let schema = r#"{"type": "object", "properties": {
        "a": {"type": "string", "pattern": "^[A-Za-z0-9]+(\\.[A-Za-z0-9]+)*@[A-Za-z0-9]+$"},
        "b": {"type": "string", "format": "email"},
        "x": {"type": "string", "pattern": "^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$"}
    }, "required": ["a", "b", "x"], "additionalProperties": false}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    fired(&[Path::Diverted], || {
        masked_walks_agree(&grammars, 0xBB67_AE85_84CA_A73B, 80, 40, || {})
    });
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"a\":\"").unwrap();
    let text =
        |id: u32| String::from_utf8_lossy(v.token_bytes(id).unwrap_or_default()).into_owned();
    let allowed: Vec<String> = mask_of(&m).into_iter().map(text).collect();
    for t in ["a", "Ab9", "abcdefghijklmnopqrstuvwxyz0123456789", "a.b", "a@", "x.y@z"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in [".", "@", "a b", "é", "a-b", "a@b.c", "\""] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }

    // A negated class without `\s`: its alphabet leaves out Unicode's spaces of more than
    // one byte, listed, which every state of the loop refuses alike.
    let schema = r#"{"type": "object", "properties": {
        "e": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s.]+(\\.[^@\\s.]+)+$"}
    }, "required": ["e"], "additionalProperties": false}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"e\":\"").unwrap();
    let allowed: Vec<String> =
        fired(&[Path::Diverted], || mask_of(&m)).into_iter().map(text).collect();
    for t in ["a", "é", "aé", "é@", "a.b", "%20", "a+b", "a@", "a@b.c", "x.y@z"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["@", "@b", "a b", " ", "a\u{a0}b", "\u{3000}", "\""] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    masked_walks_agree(&grammars, 0x5BE0_CD19_137E_2179, 80, 40, || {});
}

/// Object keys beside patterns: those matching `/.*/` or not (the complement refuses a
/// second `/` after a first) and those matching `^abc.+$` or not. The key's first
/// position reads every character: the slices without `/` are accepted whole and the
/// tokens holding a `/` walked, with the masks of the plain walk.
#[test]
fn keys_beside_patterns_give_the_same_masks() {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    for t in ["{", "}", "{\"", "\":", "\":\"", "\",\"", "\"}", "\"", ",", ":", "1", "12"] {
        tokens.push(t.as_bytes().to_vec());
    }
    let words = [
        "a", "b", "c", "x", "/", "//", "ab", "abc", "abcd", "abc/", "a/b", "/x/", "x/", "/x",
        "hello", "world", "path", "to", "file", "name", "key", "value", "alpha", "beta", "gamma",
        "delta", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "red", "green", "blue", "white", "black", "north", "south", "east", "west", "é", "aé",
        "日本", "x y", " ", "  ",
    ];
    for t in words {
        tokens.push(t.as_bytes().to_vec());
    }
    let v = with_stop_token(tokens);
    for schema in [
        r#"{"type": "object", "patternProperties": {"/.*/": {"type": "integer"}}}"#,
        r#"{"type": "object", "patternProperties": {"^abc.+$": {"type": "integer"}}}"#,
    ] {
        let grammars = cached_and_plain(&v, &schema_grammar(schema));
        masked_walks_agree(&grammars, 0x1F83_D9AB_FB41_BD6B, 60, 40, || {});
    }
    let schema = r#"{"type": "object", "patternProperties": {"/.*/": {"type": "integer"}}}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"").unwrap();
    let text =
        |id: u32| String::from_utf8_lossy(v.token_bytes(id).unwrap_or_default()).into_owned();
    let allowed: Vec<String> =
        fired(&[Path::Diverted], || mask_of(&m)).into_iter().map(text).collect();
    // Any key may start here: one that matches the pattern or one that does not.
    for t in ["abc/", "a/b", "/x", "x/", "hello", "日本", "x y", "/", "//", "/x/"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
}

/// The keys of an object of many names (200 words of `abcde`: more states than the search
/// of safe runs follows), free keys, and keys starting with `_` matched by a
/// pattern. The position of a free key's first character refuses `_` and reads every
/// other character, and the states after it read every one: the slices without `_` are
/// accepted whole and the tokens holding one walked, with the masks of the plain walk;
/// without the pattern nothing is walked but the tokens outside the slices.
#[test]
fn keys_of_objects_of_many_names_take_the_slices() {
    let letters = ["a", "b", "c", "d", "e", "_"];
    let mut words: Vec<String> = letters.iter().map(|l| l.to_string()).collect();
    for _ in 0..3 {
        let longer: Vec<String> = words
            .iter()
            .filter(|w| w.len() == words.last().unwrap().len())
            .flat_map(|w| letters.iter().map(move |l| format!("{w}{l}")))
            .collect();
        words.extend(longer);
    }
    let mut tokens: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
    for t in ["{", "}", "{\"", "\":", "\":\"", "\",\"", "\"}", "\"", ",", ":", "1", "é", "日本"]
    {
        tokens.push(t.as_bytes().to_vec());
    }
    let v = with_stop_token(tokens);
    // 200 names of 4 to 8 letters of `abcde`, drawn at random.
    let mut rng = XorShift::new(0x9E37_79B9_7F4A_7C15);
    let names: std::collections::BTreeSet<String> =
        (0..200).map(|_| (0..rng.range(4, 8)).map(|_| letters[rng.below(5)]).collect()).collect();
    let properties: serde_json::Map<String, serde_json::Value> =
        names.iter().map(|n| (n.clone(), serde_json::json!({"type": "integer"}))).collect();
    let with_pattern = serde_json::json!({
        "type": "object",
        "properties": properties,
        "patternProperties": {"^_": {"type": "integer"}},
    });
    let without = serde_json::json!({"type": "object", "properties": properties});
    let text =
        |id: u32| String::from_utf8_lossy(v.token_bytes(id).unwrap_or_default()).into_owned();
    for schema in [&with_pattern, &without] {
        let grammar = schema_grammar(&schema.to_string());
        masked_walks_agree(&cached_and_plain(&v, &grammar), 0x005E_ED4A_110B_1EC7, 12, 12, || {});
    }
    let mut m = Matcher::new(compile(&schema_grammar(&with_pattern.to_string()), &v));
    m.accept_string("{\"").unwrap();
    let allowed: Vec<String> =
        fired(&[Path::Diverted], || mask_of(&m)).into_iter().map(text).collect();
    for t in ["abcd", "ab", "e_", "a_b", "_a", "é", "\":"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
}

/// A URI's scheme reads letters only (too many refused characters for the slices by
/// length), and its host a loop that a `%` (hex digits next) and a `[` (an IPv6 address)
/// leave: both take the slices of their kept characters and walk the tokens holding a
/// diverting one, with the masks of the plain walk.
#[test]
fn formats_of_ascii_alphabets_take_the_slices_of_their_kept_characters() {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    for t in [
        "{",
        "}",
        "{\"",
        "\":\"",
        "\"}",
        "\"",
        "https",
        "http",
        "s",
        ":",
        "://",
        "//",
        "/",
        "example",
        ".",
        ".com",
        "com",
        "/image",
        ".png",
        "a",
        "ab",
        "9",
        "a9",
        "a:b",
        "%",
        "%20",
        "20",
        "[",
        "]",
        "[::1]",
        "::",
        "@",
        "user@",
        "a b",
        " ",
        "\\u0041",
        "é",
        "-",
        "_",
        "~",
        "!",
        "?",
        "?q=1",
        "#",
        "#x",
        "h1",
        "x-y",
        "a.b",
        "1.2.3.4",
        "ñ",
        "“a”",
        "日本",
        "Привет",
        "aПривет",
        "£",
        "£5",
        "a£b",
        "abcdefgh£",
        "a\u{a0}b",
        "\u{3000}",
        "ab\u{3000}",
        "abcdef",
        "abcdefgh",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    // Words, so that taking the slices is worth its walk of the tokens holding a
    // diverting character.
    for x in b'a'..=b'z' {
        for y in b'a'..=b'z' {
            tokens.push(vec![x, y]);
            tokens.push(vec![x, y, b'e', b's']);
        }
    }
    let v = with_stop_token(tokens);
    let schema = r#"{"type": "object", "properties": {"u": {"type": "string", "format": "uri"}},
        "required": ["u"], "additionalProperties": false}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let text =
        |id: u32| String::from_utf8_lossy(v.token_bytes(id).unwrap_or_default()).into_owned();
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"u\":\"").unwrap();
    let allowed: Vec<String> =
        fired(&[Path::Diverted], || mask_of(&m)).into_iter().map(text).collect();
    for t in ["https", "http", "s", "a", "ab", "a9", "h1", "x-y", "a.b", "example", "com"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["9", ":", "://", "/", ".", "%20", "[", "a b", "é", "-", "\""] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    m.accept_string("https://").unwrap();
    let allowed: Vec<String> =
        fired(&[Path::Diverted], || mask_of(&m)).into_iter().map(text).collect();
    for t in ["example", ".com", "a:b", "%20", "[::1]", "user@", "1.2.3.4", "\"", "/image"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["%", "["] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["a b", "é", "]"] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    masked_walks_agree(&grammars, 0x3C6E_F372_FE94_F82B, 80, 30, || {});

    // A pattern's alphabet with a few characters of more than one byte: the tokens
    // holding one are walked, those of its ASCII characters taken whole.
    let schema = r#"{"type": "object", "properties": {"u": {"type": "string",
        "pattern": "^[\\w ñé“”,.]+$"}}, "required": ["u"], "additionalProperties": false}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"u\":\"").unwrap();
    let before = counters::snapshot();
    let allowed: Vec<String> = mask_of(&m).into_iter().map(text).collect();
    let walked = counters::snapshot().since(&before).get(Path::Diverted);
    for t in ["example", "a b", "é", "ñ", "“a”", "a.b", "h1", "_", ".com"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["-", "x-y", "%20", "[", "/", "?", "日本", "Привет", "aПривет"] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    // Walked: the tokens holding a character whose first byte the loop reads (é and ñ
    // start with 0xC3, “ and ” with 0xE2). Those holding other characters of more than
    // one byte are rejected where they meet one, unwalked.
    let leads_read = |id: u32| {
        let bytes = v.token_bytes(id).unwrap_or_default();
        std::str::from_utf8(bytes).is_ok_and(|t| !t.contains(['"', '\\']))
            && bytes.iter().any(|&b| b == 0xC3 || b == 0xE2)
    };
    let expected = (0..v.vocab_size() as u32).filter(|&id| leads_read(id)).count();
    assert_eq!(walked as usize, expected, "tokens walked for their diverting characters");
    masked_walks_agree(&grammars, 0x1F83_D9AB_FB41_BD6B, 80, 30, || {});

    // Bounded classes with a few characters of more than one byte (`£`, the spaces of
    // `\s`): the slices take the tokens of their ASCII characters up to the bound, the
    // tokens holding a character of more than one byte they may read are walked.
    let schema = r#"{"type": "object", "properties": {
        "p": {"type": "string", "pattern": "^[A-Za-z0-9 &'()*,\\-./@£]{1,8}$"},
        "s": {"type": "string", "pattern": "^[\\w\\s]{2,6}$"}
    }, "required": ["p", "s"], "additionalProperties": false}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"p\":\"").unwrap();
    let allowed: Vec<String> =
        fired(&[Path::Diverted, Path::Slices], || mask_of(&m)).into_iter().map(text).collect();
    for t in ["£", "£5", "a£b", "a b", "example", "a.b", "@", "ab"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["abcdefgh£", "é", "日本", "a\u{a0}b", "%20", "\""] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    m.accept_string("abcdef").unwrap();
    let allowed: Vec<String> = mask_of(&m).into_iter().map(text).collect();
    for t in ["£", "£5", "ab", "\""] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["a£b", "abc", "abcdef"] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"p\":\"a\",\"s\":\"").unwrap();
    let allowed: Vec<String> =
        fired(&[Path::Diverted], || mask_of(&m)).into_iter().map(text).collect();
    for t in ["a\u{a0}b", "\u{3000}", "ab\u{3000}", "a b", "ab", "abcdef"] {
        assert!(allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    for t in ["£", "é", "x-y", "abcdefgh", "\""] {
        assert!(!allowed.contains(&t.to_string()), "{t} in {allowed:?}");
    }
    masked_walks_agree(&grammars, 0x6C44_198C_4A47_5817, 80, 30, || {});
}

/// A string whose `maxLength` is in the thousands is read in chunks of characters, one
/// call after another. Near a chunk's end, the runs of string characters longer than
/// what is left leave it whole, and the caller reads them on (through the next chunk's
/// call): both the position and its parent entry take the slices' bitmask instead of
/// walking each token, with the masks of the plain walk.
#[test]
fn chunk_ends_read_the_slices_through_the_return() {
    let v = string_vocab();
    let schema = r#"{"type": "object", "required": ["s"], "additionalProperties": false,
        "properties": {"s": {"type": "string", "maxLength": 3000}}}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    masked_walks_agree(&grammars, 0x3C6E_F372_FE94_F82B, 20, 80, || {});
    // Deep in the string, 40 characters at a time (chunks end 8 characters further on
    // at each step): every run is read on, as the tokens accepted one by one say.
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"s\":\"").unwrap();
    let run = v.token_id(&b"a".repeat(60)).unwrap();
    fired(&[Path::LeftWhole, Path::ThroughReturn], || {
        for _ in 0..20 {
            let allowed = mask_of(&m);
            assert_eq!(allowed, accepted_one_by_one(&m));
            assert!(allowed.contains(&run));
            m.accept_string(&"é".repeat(40)).unwrap();
        }
    });
}

/// A slicing keeps a bounded number of unions without excluded characters, one per
/// alphabet and length, for the life of its vocabulary; past it, a position makes its
/// own union and keeps it in its entry, still taking the slices instead of walking every
/// token (a long-lived process meets the bound: a bounded string asks for one union per
/// length). Each grammar's masks are the tokens accepted one by one.
#[test]
fn positions_past_the_kept_unions_still_take_the_slices() {
    let v = Arc::new(string_vocab());
    let alphabet = ('0'..='9').chain('A'..='Z').chain('a'..='z').chain("!#%&',:;<=>@_~".chars());
    let refused: Vec<char> = alphabet.collect();
    assert!(refused.len() > 64, "more alphabets than a slicing keeps unions");
    for (i, c) in refused.into_iter().enumerate() {
        let schema = format!(r#"{{"type": "string", "pattern": "^[^{c}]*$"}}"#);
        let compiled = Compiler::from_arc(v.clone()).compile_grammar(&schema_grammar(&schema));
        let mut m = Matcher::new(compiled.unwrap());
        m.accept_string("\"").unwrap();
        let check = || assert_eq!(mask_of(&m), accepted_one_by_one(&m), "^[^{c}]*$");
        if i >= 64 {
            fired(&[Path::Slices], check);
        } else {
            check();
        }
    }
}

/// Object keys that are known names or any other string: inside a key, a token's safe
/// run may follow a known name for a while or leave for the other keys at once; tokens
/// whose run reaches the other keys' string are classified by their tails.
#[test]
fn known_and_other_keys_give_the_same_masks() {
    let v = string_vocab();
    let schema = r#"{"type": "object", "properties": {
        "name": {"type": "string"},
        "b": {"type": "string", "minLength": 1},
        "bbb": {"type": "integer"},
        "xx": {"type": "array", "items": {"type": "string", "minLength": 2}}
    }, "required": ["name"]}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    fired(&[Path::LoopState], || {
        masked_walks_agree(&grammars, 0x51AF_D7ED_558C_CD3B, 80, 60, || {})
    });
}

/// Fifteen alternatives that read the same prefix and then each an unanchored pattern
/// (`"{\"v\":\"" [a-z0-9]* LETTER [0-9]{6} [a-z0-9A-Z]* "\"...`): inlined into one rule,
/// subset construction tracks which patterns have matched (2^15 subsets). The compiler
/// builds that rule again with its calls kept, so the alternatives run as parallel stacks.
#[test]
fn alternatives_that_blow_up_when_inlined_keep_their_calls() {
    let mut gbnf = String::from("root ::= ");
    let letters: Vec<char> = ('A'..='O').collect();
    gbnf.push_str(&(0..letters.len()).map(|i| format!("b{i}")).collect::<Vec<_>>().join(" | "));
    gbnf.push('\n');
    for (i, c) in letters.iter().enumerate() {
        gbnf.push_str(&format!(
            "b{i} ::= \"{{\\\"v\\\":\\\"\" [a-zA-Z0-9]* \"{c}\" [0-9]{{6}} [a-zA-Z0-9]* \"\\\",\\\"t\\\":{i}}}\"\n"
        ));
    }
    let tokens: Vec<Vec<u8>> = (0u8..128).map(|b| vec![b]).chain([b"</s>".to_vec()]).collect();
    let vocab = Vocabulary::from_byte_tokens(tokens, &[128], &[128], None).unwrap();
    let limits = grammask_engine::Limits { max_automaton_states: 100_000, ..Default::default() };

    // Inlined everywhere (the fallback switched off), the automaton passes the limit.
    let mut config = grammask_engine::CompilerConfig { limits, ..Default::default() };
    config.passes.inlined_work_factor = usize::MAX;
    let err = Compiler::new(&vocab).with_config(config.clone()).compile_gbnf(&gbnf).unwrap_err();
    assert!(matches!(err, CompileError::Limit { name: "automaton_states", .. }), "{err}");

    // By default the blown-up rule keeps its calls, and the language is the same.
    config.passes = Default::default();
    let compiled = Compiler::new(&vocab).with_config(config).compile_gbnf(&gbnf).unwrap();
    assert!(compiled.num_states() < 10_000, "{} states", compiled.num_states());
    let accepts = |text: &str| {
        let mut m = Matcher::new(compiled.clone());
        m.accept_string(text).is_ok() && m.can_terminate()
    };
    assert!(accepts("{\"v\":\"xxC123456yy\",\"t\":2}"));
    assert!(accepts("{\"v\":\"O000000\",\"t\":14}"));
    assert!(accepts("{\"v\":\"A123456B654321\",\"t\":1}"));
    assert!(!accepts("{\"v\":\"xxC123456yy\",\"t\":3}"));
    assert!(!accepts("{\"v\":\"xxC12345yy\",\"t\":2}"));
    assert!(!accepts("{\"v\":\"P123456\",\"t\":2}"));
}

/// A schema compiled from its JSON value is the schema compiled from its text, including
/// when a rule blew up after inlining and the compile is retried with its calls kept (the
/// value is converted again for the retry), and a schema no value satisfies is refused.
#[test]
fn schemas_compile_from_values_as_from_text() {
    let tokens: Vec<Vec<u8>> = (0u8..128).map(|b| vec![b]).chain([b"</s>".to_vec()]).collect();
    let vocab = Vocabulary::from_byte_tokens(tokens, &[128], &[128], None).unwrap();
    let options = grammask_syntax::JsonSchemaOptions::default();
    // Fifteen objects that read the same key, then each an unanchored pattern.
    let branches: Vec<serde_json::Value> = ('A'..='O')
        .enumerate()
        .map(|(i, c)| {
            serde_json::json!({"type": "object", "additionalProperties": false,
                "required": ["v", "t"], "properties": {
                    "v": {"type": "string", "pattern": format!("{c}[0-9]{{6}}")},
                    "t": {"const": i}}})
        })
        .collect();
    let schema = serde_json::json!({"anyOf": branches});
    let limits = grammask_engine::Limits { max_automaton_states: 100_000, ..Default::default() };
    let mut config = grammask_engine::CompilerConfig { limits, ..Default::default() };
    config.passes.inlined_work_factor = usize::MAX;
    let compiler = Compiler::new(&vocab).with_config(config.clone());
    let err = compiler.compile_json_schema_value(&schema, &options).unwrap_err();
    assert!(matches!(err, CompileError::Limit { name: "automaton_states", .. }), "{err}");

    config.passes = Default::default();
    let compiler = Compiler::new(&vocab).with_config(config);
    let from_value = compiler.compile_json_schema_value(&schema, &options).unwrap();
    let from_text = compiler.compile_json_schema(&schema.to_string(), &options).unwrap();
    assert_eq!(from_value.num_states(), from_text.num_states());
    assert!(from_value.num_states() < 10_000, "{} states", from_value.num_states());
    for (text, ok) in [
        (r#"{"v":"xxC123456yy","t":2}"#, true),
        (r#"{"v":"O000000","t":14}"#, true),
        (r#"{"v":"xxC123456yy","t":3}"#, false),
        (r#"{"v":"P123456","t":2}"#, false),
    ] {
        for compiled in [&from_value, &from_text] {
            let mut m = Matcher::new(compiled.clone());
            assert_eq!(m.accept_string(text).is_ok() && m.can_terminate(), ok, "{text}");
        }
    }

    let never = serde_json::json!({"type": "object", "required": ["a"],
        "properties": {"a": {"allOf": [{"type": "string"}, {"type": "integer"}]}}});
    let err = compiler.compile_json_schema_value(&never, &options).unwrap_err();
    assert!(err.to_string().contains("can never finish"), "{err}");
}

/// A JSON string's escapes are one rule (`json-escape`) that every string calls instead
/// of a copy each: the mask cache walks tokens through its calls (escapes inside and at
/// the ends of tokens, surrogate pairs split across tokens, in values and in the keys of
/// additional properties), and the masks are those of the walk without the cache.
#[test]
fn escapes_stay_one_rule_walked_through() {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    for t in [
        "\"",
        "{",
        "}",
        ",",
        ":",
        "[",
        "]",
        "\":",
        "\",",
        "\"}",
        "{\"",
        "\\",
        "\\n",
        "\\\"",
        "\\\\",
        "\\/",
        "\\u00",
        "e9",
        "\\u00e9\"",
        "\\ud83d",
        "\\ude00",
        "\\uD83D\\uDE00",
        "x\\",
        "x\\\"",
        "\\t\\n",
        "ab\\nc",
        "\\\",\"",
        "\\\"}",
        "name",
        "\"name",
        "a",
        "b",
        "é",
        "1",
        "12",
        "true",
        "null",
        "D",
        "d8",
        "3d",
        "\\ud",
        "83d",
        "\\u",
        "de00",
        "zz\\\":",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    let v = with_stop_token(tokens);
    let schema = r#"{"type": "object", "properties": {
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}}
    }, "required": ["name"]}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    let g = grammars[0].grammar();
    let escape = g.rules.iter().position(|r| r.name == "json-escape").expect("json-escape");
    let mut calls = 0;
    g.rules[g.root.index()]
        .body
        .for_each_rule_ref(&mut |r| calls += usize::from(r.index() == escape));
    assert!(calls >= 2, "the root calls json-escape {calls} times");
    fired(&[Path::ThroughEntry], || {
        masked_walks_agree(&grammars, 0x9E37_79B9_7F4A_7C15, 80, 60, || {})
    });
    for (text, ok) in [
        (r#"{"name":"a\"b\\c\/d\u00e9\ud83d\ude00\n"}"#, true),
        (r#"{"name":"\t","x\"y":1}"#, true),
        // A listed key spelled with an escape is not another key.
        (r#"{"name":"\t","nam\u0065":2}"#, false),
        (r#"{"name":"\ud83d"}"#, false),
        (r#"{"name":"\x"}"#, false),
    ] {
        for compiled in &grammars {
            let mut m = Matcher::new(compiled.clone());
            assert_eq!(m.accept_string(text).is_ok() && m.can_terminate(), ok, "{text}");
        }
    }
}

/// Tokens that enter a callee after some bytes are read on in the callee by the
/// classification: to their end there (accepted), to a byte it refuses with no other
/// path (rejected), back into the caller when the callee ends first, or to a byte a call
/// of the callee, the end of the caller's rule or a skipped nullable callee could also
/// take (context-dependent). Every token of up to three bytes over the grammar's
/// alphabet, with each rule kept a call and with the default inlining: masks are those
/// of the cache-free walk.
#[test]
fn tokens_entering_callees_give_the_same_masks() {
    let tokens = every_string(b"abcx(), ", 3);
    let v = with_stop_token(tokens);
    let text = r#"
        root ::= item (" " item)*
        item ::= "a" sub | "b" opt "c" | "(" list ")" | both | "x" tail "c" | "c" cx "ab" | "," cd
            | "(" ec "x" ")"
        cx ::= "ax" | ""
        cd ::= "a" "x" | dd
        dd ::= "ab"
        ec ::= "b" eb | "b"
        eb ::= "xa"
        sub ::= "x" | "x" sub | inner
        inner ::= "b" item | "c"
        opt ::= "x"*
        list ::= item ("," item)* | ""
        both ::= one | two
        one ::= "ab" "c"?
        two ::= "a" "c"
        tail ::= "x"? ("b" | "")
    "#;
    let grammar = grammask_syntax::parse_gbnf(text).unwrap().grammar;
    let grammars = called_plain_and_cached(&v, &grammar);
    fired(&[Path::CalleeEntry], || {
        masked_walks_agree(&grammars, 0xD1B5_4A32_D192_ED03, 150, 25, || {})
    });
}

/// A state that calls several rules whose starts read the same byte (the key regions of
/// `patternProperties`, the branches of a `oneOf` of objects): the classification reads a
/// token on in each of them, accepted when one reads it to its end, rejected when none
/// does and no other path could take a byte, else context-dependent. Every token of up
/// to three bytes over the grammar's alphabet and a few longer ones, with each rule kept
/// a call and with the default inlining: masks are those of the cache-free walk.
#[test]
fn tokens_entering_several_callees_give_the_same_masks() {
    let mut tokens = every_string(b"abcx{}\":,", 3);
    // Longer tokens that cross into a call of a callee (context-dependent) and back.
    for t in [":{c{", ":{c{a", ":{ac{a}", ":{bc{b", ":{c,", r#""cxa""#, r#""xb":b"#, r#""ab":c,"#] {
        tokens.push(t.as_bytes().to_vec());
    }
    let v = with_stop_token(tokens);
    let text = r#"
        root ::= "{" (member ("," member)*)? "}" | ":" (o1 | o2 | o3) ","
        member ::= "\"" (plain "\"" ":" "x" | witha "\"" ":" "a" | withb "\"" ":" "b" | both "\"" ":" "c")
        plain ::= [cx]*
        witha ::= [cx]* "a" [acx]*
        withb ::= [cx]* "b" [bcx]*
        both ::= [cx]* ("a" [acx]* "b" | "b" [bcx]* "a") [abcx]*
        o1 ::= "{a" "x"* "}"
        o2 ::= "{b" "x"* "}"
        o3 ::= "{" [ab]? "c" o1?
    "#;
    let grammar = grammask_syntax::parse_gbnf(text).unwrap().grammar;
    let grammars = called_plain_and_cached(&v, &grammar);
    fired(&[Path::Fork], || masked_walks_agree(&grammars, 0x2545_F491_4F6C_DD1D, 150, 25, || {}));
}

/// A spliced rule (a small sequence referred to from many places, like JSON whitespace)
/// stays one body in the IR, and automaton construction reads it in place of each
/// reference: the automata are those of the grammar with the body written out at every
/// reference, and so are the masks.
#[test]
fn spliced_rules_give_the_automata_of_their_copies() {
    let ws = r#"([ \t]* ("\n" [ ]*)?)"#;
    let with_rule = r#"
root  ::= "{" ws "\"a\"" ws ":" ws value ws "}"
value ::= [0-9]+ | "[" ws (value ws ("," ws value ws)*)? "]"
ws    ::= [ \t]* ("\n" [ ]*)?
"#;
    let written_out: String = with_rule
        .lines()
        .filter(|line| !line.starts_with("ws "))
        .map(|line| {
            let words: Vec<String> = line
                .split(' ')
                .map(|w| match w.strip_prefix("ws") {
                    // `ws` and the closing brackets and operators after it.
                    Some(rest) if rest.chars().all(|c| ")*?".contains(c)) => format!("{ws}{rest}"),
                    _ => w.to_string(),
                })
                .collect();
            words.join(" ") + "\n"
        })
        .collect();
    assert!(!written_out.contains("ws"), "{written_out}");
    let mut tokens: Vec<Vec<u8>> = [
        "{", "}", "\"a\"", ":", " ", "  ", "\t", "\n", "\n ", " \n", "[", "]", ",", "1", "23",
        "[1", "1,", ", ", "\":", "{\"", "}\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    tokens.push(b"</s>".to_vec());
    let v = with_stop_token(tokens);
    let spliced = Compiler::new(&v).compile_gbnf(with_rule).unwrap();
    let copies = Compiler::new(&v).compile_gbnf(&written_out).unwrap();
    let (g, c) = (spliced.grammar(), copies.grammar());
    let ws_rule = g.rules.iter().position(|r| r.name == "ws").expect("the ws rule is kept");
    assert!(grammask_engine::passes::is_spliced(&g.rules, ws_rule, g.root));
    assert!(g.size() < c.size(), "one body instead of copies: {} vs {}", g.size(), c.size());
    for name in ["root", "value"] {
        let rule = |g: &Grammar| g.rules.iter().position(|r| r.name == name).unwrap();
        let a = spliced.automaton(grammask_syntax::ir::RuleId::new(rule(g))).unwrap();
        let b = copies.automaton(grammask_syntax::ir::RuleId::new(rule(c))).unwrap();
        assert_eq!(a.len(), b.len(), "states of `{name}`");
        // No call of the spliced rule.
        for s in 0..a.len() {
            let state = grammask_engine::StateId::new(s);
            assert!(a.calls(state).iter().all(|&(callee, _)| callee.index() != ws_rule));
        }
    }
    masked_walks_agree(&[spliced, copies], 0xB7E1_5162_8AED_2A6B, 60, 40, || {});
}

/// Keys of an open object whose names any pattern matches (`patternProperties` `^.*$`
/// beside `properties`): after `{"` or `,"` two key rules start with the same characters,
/// so most of a large vocabulary depends on the stack there. Such a position's tokens are
/// classified under its return positions from its second visit on (a parent entry with
/// more than 8,192 tokens), and the masks are those of the cache-free walk.
#[test]
fn many_dependent_tokens_at_keys_met_again_give_the_same_masks() {
    let tokens = every_string(b"ab\"{}:, ", 5);
    assert!(tokens.len() > 30_000);
    let v = with_stop_token(tokens);
    let schema = r#"{"type": "object", "properties": {"a": {"type": "string"}},
        "patternProperties": {"^.*$": {"type": "string"}}}"#;
    let grammars = cached_and_plain(&v, &schema_grammar(schema));
    fired(&[Path::ParentEntry], || {
        masked_walks_agree(&grammars, 0x94D0_49BB_1331_11EB, 6, 40, || {})
    });
    // A document with many keys, in the cached grammar alone: each key position's mask
    // is the set of tokens it accepts one by one.
    let mut m = Matcher::new(grammars[0].clone());
    m.accept_string("{\"a\":\"b\",\"ab\":\"a\",\"b\":\"\",").unwrap();
    for _ in 0..3 {
        assert_eq!(mask_of(&m), accepted_one_by_one(&m));
        m.accept_string("\"ba\":\"a\",").unwrap();
    }
}

/// Every string of 1 to `max_len` bytes over `alphabet`.
fn every_string(alphabet: &[u8], max_len: u32) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for len in 1..=max_len {
        for n in 0..alphabet.len().pow(len) {
            let mut t = Vec::new();
            let mut k = n;
            for _ in 0..len {
                t.push(alphabet[k % alphabet.len()]);
                k /= alphabet.len();
            }
            out.push(t);
        }
    }
    out
}

/// Rules that refer to one another only where they end (a key pattern's complement, one
/// rule per state of its automaton) are read as one automaton: the rule the object's
/// members call holds the whole group and calls none of it but the `\u` tails of its
/// escapes, one rule for all its states. The masks are those of the reference matcher,
/// which reads the rules as written.
#[test]
fn right_linear_rules_are_read_as_one_automaton() {
    use grammask_engine::passes::is_escape_tail;
    let v = vocab();
    let grammar = schema_grammar(
        r#"{"type": "object", "properties": {"ab": {"type": "integer"}},
            "patternProperties": {"a.*x": {"type": "integer"}},
            "additionalProperties": {"type": "string"}}"#,
    );
    let grammars = cached_plain_and_called(&v, &grammar);
    for compiled in &grammars {
        let g = compiled.grammar();
        let tail = |r: RuleId| is_escape_tail(&g.rules[r.index()]);
        let member = |r: RuleId| g.rules[r.index()].name.starts_with("pattern-not") && !tail(r);
        let calls = |r: usize| {
            let dfa = compiled.automaton(RuleId::new(r)).unwrap();
            (0..dfa.len())
                .flat_map(|s| dfa.calls(grammask_engine::StateId::new(s)).to_vec())
                .map(|(callee, _)| callee)
                .collect::<Vec<_>>()
        };
        let entries: Vec<RuleId> = (0..g.rules.len())
            .filter(|&r| !member(RuleId::new(r)))
            .flat_map(calls)
            .filter(|&callee| member(callee))
            .collect();
        assert!(!entries.is_empty(), "the object's members call the key rules");
        for &entry in &entries {
            let called = calls(entry.index());
            let tails = called.iter().filter(|&&c| tail(c)).count();
            assert_eq!(tails, called.len(), "{} calls its group", g.rules[entry.index()].name);
        }
        assert!(
            entries.iter().any(|e| calls(e.index()).into_iter().any(tail)),
            "the group's `\\u` tails are a call"
        );
        // The group's other rules, which nothing calls, get no automaton of their own.
        let called: Vec<RuleId> = (0..g.rules.len()).flat_map(calls).collect();
        for r in (0..g.rules.len()).map(RuleId::new) {
            if r != g.root && !called.contains(&r) {
                assert_eq!(compiled.automaton(r).unwrap().len(), 1, "{}", g.rules[r.index()].name);
            }
        }
        // The group is more than its entries: a member's body refers to other members,
        // which its automaton reads in place.
        let refers_to_member = |r: usize| {
            let mut found = false;
            g.rules[r].body.for_each_rule_ref(&mut |c| found |= c.index() != r && member(c));
            found
        };
        assert!((0..g.rules.len()).any(|r| member(RuleId::new(r)) && refers_to_member(r)));
    }
    // Walks, every mask checked against the reference.
    reference_walks_agree(&grammar, &v, &grammars, 0x5EED_0F6A, 30, 40);
}

/// Two strings of one long `maxLength` call one chunk rule: the converter makes equal
/// chunks one rule, and the compiled grammar keeps one rule of every body. The masks are
/// those of the reference matcher, which reads the rules as written.
#[test]
fn long_strings_share_one_chunk_rule() {
    let v = vocab();
    let grammar = schema_grammar(
        r#"{"type": "object", "required": ["a", "b"], "additionalProperties": false,
            "properties": {"a": {"type": "string", "maxLength": 100},
                           "b": {"type": "string", "maxLength": 100}}}"#,
    );
    let copies = |g: &Grammar| {
        let mut bodies = std::collections::HashSet::new();
        g.rules.iter().filter(|r| !bodies.insert((&r.body, &r.lookahead))).count()
    };
    let chunks = grammar.rules.iter().filter(|r| r.name.starts_with("chunk")).count();
    assert_eq!(chunks, 1, "the converter writes the strings' chunks once");
    let grammars = cached_plain_and_called(&v, &grammar);
    for compiled in &grammars {
        assert_eq!(copies(compiled.grammar()), 0);
    }
    reference_walks_agree(&grammar, &v, &grammars, 0xC4A2_1E55, 20, 120);
}

/// Seeded walks (each token picked among the allowed ones at random): at every step the
/// mask of each of `grammars`' matchers is the set of tokens the reference matcher, which
/// reads `grammar` as written, allows.
fn reference_walks_agree(
    grammar: &Grammar,
    v: &Vocabulary,
    grammars: &[Arc<grammask_engine::CompiledGrammar>],
    seed: u64,
    walks: usize,
    steps: usize,
) {
    let reference = grammask_fuzz::reference::Reference::new(grammar, v);
    let mut rng = XorShift::new(seed);
    for _walk in 0..walks {
        let mut matchers: Vec<Matcher> = grammars.iter().map(|g| Matcher::new(g.clone())).collect();
        let mut state = reference.start().unwrap();
        let mut text = Vec::new();
        for _step in 0..steps {
            if state.is_terminated() {
                break;
            }
            let expected: Vec<u32> = (0..v.vocab_size() as u32)
                .filter(|&id| {
                    let next = reference.step_token(&state, id).unwrap();
                    next.is_some_and(|s| s.is_terminated() || !s.is_dead())
                })
                .collect();
            for m in &matchers {
                assert_eq!(mask_of(m), expected, "after {:?}", String::from_utf8_lossy(&text));
            }
            if expected.is_empty() || matchers[0].is_terminated() {
                break;
            }
            let id = *rng.pick(&expected);
            text.extend(v.token_bytes(id).unwrap_or_default());
            state = reference.step_token(&state, id).unwrap().unwrap();
            for m in &mut matchers {
                m.accept_token(id).unwrap();
            }
        }
    }
}

/// The states of a key pattern's complement, one linear rule each and one escape in each,
/// read `\u` and what follows through one call from the automaton of their entry: the
/// automaton is a fraction of the size, and keys written with `\u` escapes (and surrogate
/// pairs) are allowed exactly as the reference allows them.
#[test]
fn complement_states_share_one_unicode_escape_tail() {
    use grammask_engine::passes::is_escape_tail;
    let v = text_vocab(&[
        "{",
        "}",
        "{\"",
        "\"",
        "\":",
        "\":1",
        ",",
        ",\"",
        "1",
        "a",
        "b",
        "x",
        "ab",
        "ax",
        "é",
        "\\",
        "\\n",
        "\\u",
        "\\u00",
        "\\u0061",
        "\\u00e9",
        "\\u00e9\":",
        "0061",
        "e9",
        "\\uD83D",
        "\\uDE00",
        "\\uD83D\\uDE00",
        "D83D",
        "u",
        "41",
        "\\u0041x",
    ]);
    let schema = r#"{"type": "object", "properties": {"ab": {"type": "integer"}},
        "patternProperties": {"a.*x": {"type": "integer"}},
        "additionalProperties": {"type": "string"}}"#;
    let grammar = schema_grammar(schema);
    let grammars = cached_plain_and_called(&v, &grammar);
    for compiled in &grammars {
        compiled.build_automata().unwrap();
    }
    // With every rule kept a call, the complements' states are rules of their own, read
    // in place by their entries (with the tails in place: 347 states).
    let g = grammars[2].grammar();
    assert!(g.rules.iter().any(is_escape_tail), "the complement's `\\u` tails are a call");
    assert!(grammars[2].num_states() < 300, "{} states", grammars[2].num_states());
    reference_walks_agree(&grammar, &v, &grammars, 0x7A11_5EED, 60, 30);
}

/// A string of tens of thousands of characters: the converter counts its chunks of 32
/// characters in chunks of 32 chunks, a rule of calls that stays a call, so the automaton
/// holds a few hundred states where a call per chunk made one state per 32 characters. Lengths
/// across chunk and chunk-of-chunks boundaries are accepted exactly within the bounds, and
/// every mask on the way is that of the cache-free walk and of a grammar with every rule
/// called.
#[test]
fn chunks_of_chunks_stay_calls_and_count_exactly() {
    use grammask_engine::passes::{is_chunk_of_calls, run, PassConfig};
    let tokens: Vec<Vec<u8>> = ["{\"s\":\"", "\"", "\"}", "}", "x", "xx", "x\"}"]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .chain([31, 100, 1_000].map(|n| "x".repeat(n).into_bytes()))
        .collect();
    let v = with_stop_token(tokens);
    let (min, max) = (100usize, 20_000usize);
    let schema = format!(
        r#"{{"type": "object", "required": ["s"], "additionalProperties": false,
            "properties": {{"s": {{"type": "string", "minLength": {min}, "maxLength": {max}}}}}}}"#
    );
    let grammar = schema_grammar(&schema);
    let deadline = grammask_engine::deadline::Deadline::new(std::time::Duration::from_secs(60));
    let lowered = run(grammar.clone(), &PassConfig::default(), &deadline).unwrap();
    let names: Vec<(&str, usize)> =
        lowered.rules.iter().map(|r| (r.name.as_str(), r.body.size())).collect();
    assert!(lowered.rules.iter().any(is_chunk_of_calls), "{names:?}");
    let grammars = cached_plain_and_called(&v, &grammar);
    // A bound of a million: 30,000 chunk calls, or a few hundred calls of chunks of chunks.
    let huge = schema.replace("20000", "1000000");
    let huge = Compiler::new(&v).compile_grammar(&schema_grammar(&huge)).unwrap();
    huge.build_automata().unwrap();
    assert!(huge.num_states() < 10_000, "{} states", huge.num_states());
    let id = |t: &str| v.token_id(t.as_bytes()).unwrap();
    // The first chunk in place, then chunks of chunks of 1,024 characters.
    for n in [0, 99, 100, 1_055, 1_056, 1_057, 2_079, 2_080, 2_081, 19_999, 20_000, 20_001] {
        let mut matchers: Vec<Matcher> = grammars.iter().map(|g| Matcher::new(g.clone())).collect();
        let mut steps = vec![id("{\"s\":\"")];
        let mut left = n;
        for len in [1_000, 100, 31, 1] {
            while left >= len {
                steps.push(id(&"x".repeat(len)));
                left -= len;
            }
        }
        let mut refused = false;
        for &token in &steps {
            let masks: Vec<Vec<u32>> = matchers.iter().map(mask_of).collect();
            assert!(masks.iter().all(|m| *m == masks[0]), "{n} characters");
            if !masks[0].contains(&token) {
                refused = true;
                break;
            }
            matchers.iter_mut().for_each(|m| m.accept_token(token).unwrap());
        }
        let closes = !refused && mask_of(&matchers[0]).contains(&id("\"}"));
        assert_eq!(closes, (min..=max).contains(&n), "{n} characters");
        assert_eq!(refused, n > max, "{n} characters");
    }
}

/// The characters of a `maxLength` string read what follows `\u` through a call of one
/// rule from the state after the backslash: a few automaton states per character instead
/// of two dozen, while the characters themselves call nothing. Tokens that hold escapes
/// of every kind, walked at every character, get the masks of the cache-free walk and of
/// a grammar with every rule called.
#[test]
fn unicode_escape_tails_are_one_call_and_masks_agree() {
    use grammask_engine::passes::{is_escape_tail, run, PassConfig};
    let v = text_vocab(&[
        "{\"s\":\"",
        "\"",
        "\"}",
        "}",
        "a",
        "ab",
        "abc\"}",
        "é",
        "\\",
        "\\n",
        "\\\"",
        "\\u",
        "\\u00",
        "\\u00e9",
        "\\u00e9a",
        "e9",
        "00",
        "\\uD83D",
        "\\uDE00",
        "\\uD83D\\uDE00",
        "D83D",
        "\\uDE",
        "a\\u0041",
        "\\u0041\"}",
        "u",
        "41",
    ]);
    let schema = r#"{"type": "object", "required": ["s"], "additionalProperties": false,
        "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 40}}}"#;
    let grammar = schema_grammar(schema);
    let deadline = grammask_engine::deadline::Deadline::new(std::time::Duration::from_secs(60));
    let lowered = run(grammar.clone(), &PassConfig::default(), &deadline).unwrap();
    assert_eq!(lowered.rules.iter().filter(|r| is_escape_tail(r)).count(), 1);
    let grammars = cached_plain_and_called(&v, &grammar);
    grammars[0].build_automata().unwrap();
    assert!(grammars[0].num_states() < 40 * 12, "{} states", grammars[0].num_states());
    masked_walks_agree(&grammars, 0x2F8D_3A5C_61B7_0E49, 60, 40, || {});
    // Escapes count one character each: 40 of them fit, 41 do not.
    let id = |t: &str| v.token_id(t.as_bytes()).unwrap();
    for (n, ok) in [(40, true), (41, false)] {
        let mut m = Matcher::new(grammars[0].clone());
        m.accept_token(id("{\"s\":\"")).unwrap();
        for _ in 0..n - 1 {
            m.accept_token(id("\\u00e9")).unwrap();
        }
        assert_eq!(m.accept_token(id("\\u0041\"}")).is_ok(), ok, "{n} characters");
    }
}

/// The JSON Schema converter writes what follows `\u` in the escapes of a complement's
/// states as a call of one rule (a key pattern's complement: every state reads "any
/// character but these"). The compiler reads the call as it reads the tail in place:
/// the same rules inlined (the weights deciding it count the tail's states), the same
/// masks.
#[test]
fn unicode_tails_written_as_calls_compile_as_tails_in_place() {
    use grammask_engine::passes::is_escape_tail;
    // A key pattern's complement, and a pattern's product with a length bound whose
    // states past `.*` read any character.
    const SCHEMA: &str = r#"{"type": "object", "properties": {"id": {"type": "string",
        "maxLength": 32, "pattern": "^(\\d+\\.\\d+\\.\\d+.*)$"}},
        "patternProperties": {"^x-[a-z]{2,3}$": {"type": "integer"}}}"#;
    let v = text_vocab(&[
        "{", "}", "{\"", "\":", "\"", ",", ":", "x", "-", "x-", "ab", "abc", "a", "b", "A", "1",
        "12", "\\", "\\u", "u", "00", "0041", "\\u0041", "\\u00", "61", "\\n", "é", "a\"", "id",
        "\":\"", "\",\"", "\"}", " ", "\\ud83d", "\\ude00", "d83d", "\\/", ".", "1.", "2.3",
        "1.2.3", "-beta",
    ]);
    let called = schema_grammar(SCHEMA);
    let tails: Vec<bool> = called.rules.iter().map(is_escape_tail).collect();
    assert!(tails.iter().filter(|&&t| t).count() >= 2, "{called:?}");
    // The same grammar with every tail copied back in place.
    fn in_place(e: &mut Expr, rules: &[grammask_syntax::ir::Rule], tails: &[bool]) {
        match e {
            Expr::Rule(r) if tails[r.index()] => *e = rules[r.index()].body.clone(),
            Expr::Seq(items) | Expr::Choice(items) => {
                items.iter_mut().for_each(|item| in_place(item, rules, tails))
            }
            Expr::Repeat { expr, .. } => in_place(expr, rules, tails),
            _ => {}
        }
    }
    let mut copied = called.clone();
    for rule in &mut copied.rules {
        in_place(&mut rule.body, &called.rules, &tails);
    }
    let called = Compiler::new(&v).compile_grammar(&called).unwrap();
    let [copied, copied_plain] = cached_and_plain(&v, &copied);
    // The same rules stay (a state whose tail is a call weighs what it did with the tail
    // in place, so it is copied where it was), and no more automaton states.
    let names = |g: &grammask_engine::CompiledGrammar| -> Vec<String> {
        let mut names: Vec<String> = g
            .grammar()
            .rules
            .iter()
            .filter(|r| !is_escape_tail(r))
            .map(|r| r.name.clone())
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&called), names(&copied));
    assert!(names(&called).iter().filter(|n| n.starts_with("string-not")).count() > 10);
    assert!(called.num_states() <= copied.num_states());
    let grammars = [called, copied, copied_plain];
    masked_walks_agree(&grammars, 0x9E37_79B9_7F4A_7C15, 150, 30, || {});
}
