//! Adversarial grammars: each one either compiles and answers (accepts, rejects) or is
//! refused with a named limit, never a hang, a crash or unbounded memory. Per-step
//! times for these cases belong to bench-suite, not to tests.

use grammask_engine::{CompileError, Compiler, CompilerConfig, Limits, MatchError, Matcher};
use grammask_tokenset::{bitmask_len, Vocabulary};

fn vocab() -> Vocabulary {
    let tokens: Vec<Vec<u8>> = ["a", "b", "0", "1", "aa", "a0", "(", ")", "+", "x", "</s>"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    Vocabulary::from_byte_tokens(tokens, &[10], &[10], None).unwrap()
}

fn accepts(compiler: &Compiler, grammar: &str, input: &str) -> bool {
    let g = compiler.compile_gbnf(grammar).unwrap();
    let mut m = Matcher::new(g);
    m.accept_bytes(input.as_bytes()).is_ok() && m.can_terminate()
}

#[test]
fn llama_cpp_stack_blowup_case_stays_one_stack() {
    let compiler = Compiler::new(&vocab());
    let g = compiler.compile_gbnf("root ::= [0-9] (a? a? a? a? a? [0-9])*\na ::= \"a\"").unwrap();
    let mut m = Matcher::new(g);
    let mut mask = vec![0u32; bitmask_len(11)];
    m.accept_bytes(b"0").unwrap();
    for _ in 0..200 {
        m.accept_token(5).unwrap(); // "a0"
        m.fill_next_token_bitmask(&mut mask).unwrap();
        assert!(m.num_stacks() <= 1);
    }
}

#[test]
fn highly_ambiguous_grammars_answer() {
    let compiler = Compiler::new(&vocab());
    // Exponentially many parses of a^n.
    let g = "root ::= e\ne ::= e e | \"a\" | e \"+\" e";
    assert!(accepts(&compiler, g, &"a".repeat(40)));
    assert!(accepts(&compiler, g, "a+aa+a"));
    assert!(!accepts(&compiler, g, "a++a"));
    // Many overlapping alternatives of the same text.
    let g = "root ::= (\"a\" | \"a\" \"a\" | \"a\"+ | x)*\nx ::= \"a\"? \"a\"?";
    assert!(accepts(&compiler, g, &"a".repeat(300)));
}

#[test]
fn deep_recursion_hits_the_stack_depth_limit() {
    let limits = Limits { max_stack_depth: 500, ..Limits::default() };
    let compiler =
        Compiler::new(&vocab()).with_config(CompilerConfig { limits, ..CompilerConfig::default() });
    let g = compiler.compile_gbnf("root ::= \"(\" root \")\" | \"x\"").unwrap();
    let mut m = Matcher::new(g.clone());
    m.accept_bytes("(".repeat(400).as_bytes()).unwrap();
    let mut m = Matcher::new(g);
    match m.accept_bytes("(".repeat(600).as_bytes()) {
        Err(MatchError::Limit { name: "stack_depth", .. }) => {}
        other => panic!("{other:?}"),
    }
    // Right recursion is a tail call: it pushes no frame, and runs past the limit.
    assert!(accepts(&compiler, "root ::= \"a\" root | \"b\"", &format!("{}b", "a".repeat(5000))));
    assert!(!accepts(&compiler, "root ::= \"a\" root | \"b\"", &"a".repeat(5000)));
    let lists = "root ::= item\nitem ::= \"(\" (\"x\" | item) \")\" more\nmore ::= (\"+\" item)?";
    assert!(accepts(&compiler, lists, &format!("{}(x)", "(x)+".repeat(2000))));
    assert!(accepts(&compiler, lists, &format!("{}x{}+(x)", "(".repeat(400), ")".repeat(400))));
    // A call that returns where the rule may end or go on is no tail call.
    let optional_tail = "root ::= list \"b\"?\nlist ::= \"a\" list | \"a\"";
    assert!(accepts(&compiler, optional_tail, &format!("{}b", "a".repeat(300))));
    assert!(accepts(&compiler, optional_tail, &"a".repeat(3000)));
    let mut m = Matcher::new(compiler.compile_gbnf(lists).unwrap());
    match m.accept_bytes(format!("{}x", "(".repeat(600)).as_bytes()) {
        Err(MatchError::Limit { name: "stack_depth", .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn huge_alternations_long_literals_and_large_bounds_compile() {
    let compiler = Compiler::new(&vocab());
    let words: Vec<String> = (0..10_000).map(|i| format!("\"w{i}x\"")).collect();
    let g = format!("root ::= {}", words.join(" | "));
    assert!(accepts(&compiler, &g, "w9999x"));
    assert!(!accepts(&compiler, &g, "w10000x"));
    let long = "ab".repeat(50_000);
    assert!(accepts(&compiler, &format!("root ::= \"{long}\""), &long));
    assert!(accepts(&compiler, "root ::= \"a\"{0,100000}", &"a".repeat(100_000)));
    assert!(!accepts(&compiler, "root ::= \"a\"{0,100000}", &"a".repeat(100_001)));
    assert!(accepts(&compiler, "root ::= ((\"a\" \"b\"?){0,10}){0,10}", &"ab".repeat(60)));
    // A large body repeated many times stays linear (outlined into a rule).
    let item = "(\"{\" [a-z]+ \":\" [0-9]{1,3} \"}\" | \"[\" [0-9]+ \"]\" | \"x\" [a-f0-9]{8})";
    assert!(accepts(&compiler, &format!("root ::= {item}{{0,5000}}"), "{ab:12}[7]xdeadbeef"));
}

#[test]
fn state_limit_is_named() {
    let limits = Limits { max_automaton_states: 1000, ..Limits::default() };
    let compiler =
        Compiler::new(&vocab()).with_config(CompilerConfig { limits, ..CompilerConfig::default() });
    match compiler.compile_gbnf("root ::= [a-z]{0,5000}") {
        Err(CompileError::Limit { name: "automaton_states", .. }) => {}
        other => panic!("{other:?}"),
    }
}

fn with_limits(limits: Limits, precompute: bool) -> Compiler {
    Compiler::new(&vocab()).with_config(CompilerConfig {
        limits,
        precompute_mask_cache: precompute,
        ..CompilerConfig::default()
    })
}

#[test]
fn compile_time_budget_is_named_when_spent() {
    // Indirect left recursion over many rules (Paull's method is quadratic in them) and
    // counted repetitions; with no budget at all the first check stops it.
    let rules: Vec<String> = (0..40)
        .map(|i| format!("r{i} ::= r{} \"+\" [a-z]{{0,40}} | \"x\"", (i + 1) % 40))
        .collect();
    let grammar = format!("root ::= r0\n{}", rules.join("\n"));
    let none = Limits { max_compile_time: std::time::Duration::ZERO, ..Limits::default() };
    match with_limits(none, false).compile_gbnf(&grammar) {
        Err(CompileError::Limit { name: "compile_time", message }) => {
            assert!(message.contains("0 ms"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // The default budget compiles it, and the grammar answers.
    let compiler = Compiler::new(&vocab());
    assert!(accepts(&compiler, &grammar, "x+aa+b+"));
    assert!(!accepts(&compiler, &grammar, "x+0"));
    // A budget spent during the mask cache's eager precompute is named too.
    let tiny = Limits { max_compile_time: std::time::Duration::from_nanos(1), ..Limits::default() };
    let compiled = with_limits(Limits::default(), false).compile_gbnf("root ::= [ab]+").unwrap();
    assert!(compiled.precompute_mask_cache().is_ok());
    match with_limits(tiny, true).compile_gbnf("root ::= [ab]+") {
        Err(CompileError::Limit { name: "compile_time", .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn compile_time_budget_interrupts_long_stages() {
    // Each of these takes seconds (release build) before another limit or the end; a
    // budget of a few hundred milliseconds stops them inside the stage, named.
    let budget =
        Limits { max_compile_time: std::time::Duration::from_millis(300), ..Limits::default() };
    let compiler = with_limits(budget, false);
    // Subset construction of a DFA of 2^25 states (else `automaton_states` after ~5 s).
    match compiler.compile_regex("[ab]*a[ab]{24}") {
        Err(CompileError::Limit { name: "compile_time", message }) => {
            assert!(message.contains("automaton construction"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // Paull's method over a left-recursive cycle of 600 rules (seconds).
    let rules: Vec<String> = (0..600)
        .map(|i| format!("r{i} ::= r{} \"+\" [a-z]{{0,40}} | \"x\"", (i + 1) % 600))
        .collect();
    match compiler.compile_gbnf(&format!("root ::= r0\n{}", rules.join("\n"))) {
        Err(CompileError::Limit { name: "compile_time", message }) => {
            assert!(message.contains("left-recursion elimination"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn mask_cache_bound_refuses_an_eager_precompute_that_does_not_fit() {
    let grammar = "root ::= (\"(\" [ab01]* \")\" | \"x\" \"+\"?)+";
    let tiny = Limits { max_mask_cache_bytes: 8, ..Limits::default() };
    match with_limits(tiny.clone(), true).compile_gbnf(grammar) {
        Err(CompileError::Limit { name: "mask_cache_bytes", message }) => {
            assert!(message.contains("8 bytes"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // Precomputed within the default bound, the whole cache is stored.
    let full = with_limits(Limits::default(), true).compile_gbnf(grammar).unwrap();
    let stored = full.mask_cache_memory();
    assert!(stored > 8, "{stored} bytes");
    // Lazily filled, the bounded cache stores at most its bound and answers the same.
    let lazy = with_limits(tiny, false).compile_gbnf(grammar).unwrap();
    let mut bounded = Matcher::new(lazy.clone());
    let mut reference = Matcher::new(full);
    let mut a = vec![0u32; bitmask_len(11)];
    let mut b = vec![0u32; bitmask_len(11)];
    for token in [6u32, 0, 3, 1, 7, 9, 8, 9, 6, 7] {
        bounded.fill_next_token_bitmask(&mut a).unwrap();
        reference.fill_next_token_bitmask(&mut b).unwrap();
        assert_eq!(a, b);
        assert!(lazy.mask_cache_memory() <= 8);
        bounded.accept_token(token).unwrap();
        reference.accept_token(token).unwrap();
    }
    assert!(bounded.can_terminate());
}
