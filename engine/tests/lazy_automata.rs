//! Automata built on first use: the same masks as automata built at compile time, a
//! construction that grows with what a generation visits, and a rule that cannot be
//! built as an error of the matcher call that enters it, which changes nothing.

use grammask_engine::{CompileError, Compiler, CompilerConfig, MatchError, Matcher};
use grammask_tokenset::{bitmask_len, Vocabulary};

/// The `i`-th word of `big`: six letters, spread so that few words share a prefix or a
/// suffix.
fn word(i: u64) -> String {
    let mut x = i.wrapping_mul(2_654_435_761) % 26u64.pow(6);
    (0..6)
        .map(|_| {
            let c = (b'a' + (x % 26) as u8) as char;
            x /= 26;
            c
        })
        .collect()
}

/// `big`, a choice of 1,100 words, is too large to inline: it stays a rule of its own,
/// with an automaton of thousands of states that only the `a` branch enters.
fn grammar() -> String {
    let words: Vec<String> = (0..1100).map(|i| format!("\"{}\"", word(i))).collect();
    format!("root ::= \"a\" big | \"b\" small\nsmall ::= \"x\"+\nbig ::= {}\n", words.join(" | "))
}

/// One token per letter and digit, and `</s>`.
fn vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = (b'a'..=b'z').chain(b'0'..=b'9').map(|b| vec![b]).collect();
    tokens.push(b"</s>".to_vec());
    let eos = (tokens.len() - 1) as u32;
    Vocabulary::from_byte_tokens(tokens, &[eos], &[eos], None).unwrap()
}

fn id(v: &Vocabulary, text: &str) -> u32 {
    v.token_id(text.as_bytes()).unwrap()
}

fn config(lazy: bool) -> CompilerConfig {
    CompilerConfig { lazy_automata: lazy, ..CompilerConfig::default() }
}

fn masks_along(m: &mut Matcher, ids: &[u32]) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for &id in ids {
        let mut mask = vec![0u32; bitmask_len(m.grammar().vocabulary().vocab_size())];
        m.fill_next_token_bitmask(&mut mask).unwrap();
        out.push(mask);
        m.accept_token(id).unwrap();
    }
    out
}

#[test]
fn automata_built_on_first_use_give_the_same_masks() {
    let v = vocab();
    let lazy = Compiler::new(&v).with_config(config(true)).compile_gbnf(&grammar()).unwrap();
    let eager = Compiler::new(&v).with_config(config(false)).compile_gbnf(&grammar()).unwrap();
    let all = eager.num_states();
    assert!(all > 1000, "the eager compile builds `big`: {all} states");
    assert!(lazy.num_states() < 20, "only the root is built: {} states", lazy.num_states());

    // The `b` branch never enters `big`.
    let short = ["b", "x", "x", "</s>"].map(|t| id(&v, t));
    let a = masks_along(&mut Matcher::new(lazy.clone()), &short);
    assert_eq!(a, masks_along(&mut Matcher::new(eager.clone()), &short));
    assert!(lazy.num_states() < 20, "`big` is still not built: {} states", lazy.num_states());

    // The `a` branch builds it, with the same masks on the way.
    let w = word(7);
    let mut long: Vec<u32> = vec![id(&v, "a")];
    long.extend(w.bytes().map(|b| id(&v, &(b as char).to_string())));
    long.push(id(&v, "</s>"));
    let a = masks_along(&mut Matcher::new(lazy.clone()), &long);
    assert_eq!(a, masks_along(&mut Matcher::new(eager.clone()), &long));
    assert_eq!(lazy.num_states(), all);

    // Serialized, a lazily compiled grammar holds every automaton.
    let loaded = Compiler::new(&v).deserialize(&lazy.serialize().unwrap()).unwrap();
    assert_eq!(loaded.num_states(), all);
    assert_eq!(masks_along(&mut Matcher::new(loaded), &long), a);
}

#[test]
fn a_rule_past_the_state_limit_is_an_error_of_the_call_entering_it() {
    let v = vocab();
    let mut limited = config(true);
    limited.limits.max_automaton_states = 100;
    let compiled = Compiler::new(&v).with_config(limited.clone()).compile_gbnf(&grammar()).unwrap();
    let mut m = Matcher::new(compiled.clone());
    let mut mask = vec![0u32; bitmask_len(v.vocab_size())];
    m.fill_next_token_bitmask(&mut mask).unwrap();
    // `a` is read; the next closure enters `big`, whose automaton is past the limit.
    m.accept_token(id(&v, "a")).unwrap();
    match m.fill_next_token_bitmask(&mut mask) {
        Err(MatchError::Limit { name, message }) => {
            assert_eq!(name, "automaton_states");
            assert!(message.contains("`big`"), "{message}");
        }
        other => panic!("expected the limit automaton_states, got {other:?}"),
    }
    assert!(m.accept_token(id(&v, "b")).is_err());
    // Rolled back, the other branch still works.
    m.rollback(1).unwrap();
    for t in ["b", "x", "</s>"] {
        m.accept_token(id(&v, t)).unwrap();
    }
    assert!(m.is_terminated());
    // Serializing needs every automaton: the same limit, as a compile error, and again
    // when asked again (the outcome of building them all is remembered, not lost).
    for _ in 0..2 {
        match compiled.serialize() {
            Err(CompileError::Limit { name, message }) => {
                assert_eq!(name, "automaton_states");
                assert!(message.contains("`big`"), "{message}");
            }
            other => {
                panic!("expected the limit automaton_states, got {:?}", other.map(|b| b.len()))
            }
        }
    }
    assert!(matches!(compiled.build_automata(), Err(CompileError::Limit { .. })));
    // Built at compile time, the limit fails the compile.
    limited.lazy_automata = false;
    match Compiler::new(&v).with_config(limited).compile_gbnf(&grammar()) {
        Err(CompileError::Limit { name, .. }) => assert_eq!(name, "automaton_states"),
        other => panic!("expected the limit automaton_states, got {:?}", other.map(|_| ())),
    }
}

/// What a free key beside listed properties reads once it diverges from every name stays
/// a call (the conversion lists each divergence as rarely reached): its automaton is
/// built when a mask first looks past the divergence, with the masks of automata built
/// at compile time on the way.
#[test]
fn free_keys_are_built_when_a_generation_reaches_them() {
    // One token per printable ASCII character, and `</s>`.
    let mut tokens: Vec<Vec<u8>> = (b' '..=b'~').map(|b| vec![b]).collect();
    tokens.push(b"</s>".to_vec());
    let eos = (tokens.len() - 1) as u32;
    let v = Vocabulary::from_byte_tokens(tokens, &[eos], &[eos], None).unwrap();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"ab": {"type": "integer"}, "cd": {"type": "integer"}},
        "required": ["ab"]
    });
    let options = grammask_syntax::JsonSchemaOptions::default();
    let converted = grammask_syntax::json_schema_to_grammar(&schema, &options).unwrap();
    // Where `a` or `c` continue a name, where `b` does, where `d` does, where none does.
    let rare = &converted.rarely_reached;
    assert_eq!(rare.len(), 4, "{rare:?}");
    let compile = |lazy| {
        Compiler::new(&v).with_config(config(lazy)).compile_json_schema_value(&schema, &options)
    };
    let (lazy, eager) = (compile(true).unwrap(), compile(false).unwrap());
    for free in rare {
        assert!(lazy.grammar().rules.iter().any(|r| r.name == *free), "`{free}` stays a rule");
    }
    // A schema its caller converted (the C ABI reads the warnings first) compiles alike.
    let given = Compiler::new(&v).compile_converted_since(&converted, std::time::Instant::now());
    assert_eq!(given.unwrap().grammar(), lazy.grammar());
    let ids = |text: &str| -> Vec<u32> {
        text.bytes().map(|b| id(&v, &(b as char).to_string())).chain([eos]).collect()
    };
    // Listed keys only: the divergence after `c` is never looked past.
    let listed = ids(r#"{"ab":1}"#);
    let a = masks_along(&mut Matcher::new(lazy.clone()), &listed);
    assert_eq!(a, masks_along(&mut Matcher::new(eager.clone()), &listed));
    let without_free = lazy.num_states();
    assert!(without_free < eager.num_states(), "{without_free} states: not all are built");
    // A free key diverging after `c` builds it.
    let with_free = ids(r#"{"ab":1,"cz":[2]}"#);
    let a = masks_along(&mut Matcher::new(lazy.clone()), &with_free);
    assert_eq!(a, masks_along(&mut Matcher::new(eager.clone()), &with_free));
    assert!(lazy.num_states() > without_free);
}
