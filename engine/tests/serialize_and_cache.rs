//! Compiled grammars serialize and load back to the same behaviour; malformed bytes and
//! another vocabulary are refused without panics; the grammar cache compiles a grammar
//! once and respects its memory bound.

use grammask_engine::{CompileError, Compiler, GrammarCache, Matcher};
use grammask_tokenset::{bitmask_len, Vocabulary};
use std::sync::Arc;

const JSONISH: &str = r#"
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ( string ":" value ("," string ":" value)* )? "}"
array  ::= "[" ( value ("," value)* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ["\\/bfnrt] )* "\""
number ::= "-"? [0-9]+ ("." [0-9]+)? <[9]>?
"#;

fn vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> =
        ["{", "}", "[", "]", "\"", ":", ",", "1", "23", "ab", "\"a\"", "é", "true"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
    tokens.push(vec![0xC3]);
    tokens.push(b"</s>".to_vec());
    let eos = (tokens.len() - 1) as u32;
    Vocabulary::from_byte_tokens(tokens, &[eos], &[eos], Some(20)).unwrap()
}

fn masks_along(m: &mut Matcher, ids: &[u32]) -> Vec<Vec<u32>> {
    let n = m.grammar().vocabulary().vocab_size();
    let mut out = Vec::new();
    for &id in ids {
        let mut mask = vec![0u32; bitmask_len(n)];
        m.fill_next_token_bitmask(&mut mask).unwrap();
        out.push(mask);
        m.accept_token(id).unwrap();
    }
    out
}

#[test]
fn serialized_grammar_loads_back_with_the_same_masks() {
    let v = vocab();
    let compiler = Compiler::new(&v);
    let compiled = compiler.compile_gbnf(JSONISH).unwrap();
    let bytes = compiled.serialize().unwrap();
    let loaded = compiler.deserialize(&bytes).unwrap();
    assert_eq!(loaded.num_states(), compiled.num_states());
    assert_eq!(loaded.grammar(), compiled.grammar());
    // {"a":[1,23]} then EOS
    let ids = [0, 10, 5, 2, 7, 6, 8, 3, 1, 14];
    let a = masks_along(&mut Matcher::new(compiled), &ids);
    let b = masks_along(&mut Matcher::new(loaded.clone()), &ids);
    assert_eq!(a, b);
    assert_eq!(loaded.serialize().unwrap(), bytes);
}

#[test]
fn malformed_bytes_and_other_vocabularies_are_refused() {
    let v = vocab();
    let compiler = Compiler::new(&v);
    let bytes = compiler.compile_gbnf(JSONISH).unwrap().serialize().unwrap();
    for cut in 0..bytes.len() {
        assert!(
            matches!(compiler.deserialize(&bytes[..cut]), Err(CompileError::Load(_))),
            "cut {cut}"
        );
    }
    // Flipped bytes: an error or a grammar, never a panic.
    let mut rng = grammask_fuzz::rng::XorShift::new(0x2545_F491_4F6C_DD1D);
    for _ in 0..3000 {
        let seed = rng.next_u64();
        let mut corrupt = bytes.clone();
        let at = (seed % corrupt.len() as u64) as usize;
        corrupt[at] ^= (seed >> 32) as u8 | 1;
        if let Ok(g) = compiler.deserialize(&corrupt) {
            let mut m = Matcher::new(g);
            let mut mask = vec![0u32; bitmask_len(20)];
            let _ = m.fill_next_token_bitmask(&mut mask);
            let _ = m.accept_token(0);
        }
    }
    let other = Vocabulary::from_byte_tokens(vec![b"{".to_vec()], &[], &[], None).unwrap();
    match Compiler::new(&other).deserialize(&bytes) {
        Err(CompileError::Load(msg)) => assert!(msg.contains("another vocabulary"), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn grammar_cache_compiles_once_and_stays_bounded() {
    let v = vocab();
    let cache = Arc::new(GrammarCache::new(1 << 20));
    let compiler = Compiler::new(&v).with_grammar_cache(cache.clone());
    let a = compiler.compile_gbnf(JSONISH).unwrap();
    let b = compiler.compile_gbnf(JSONISH).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!((cache.hits(), cache.misses(), cache.len()), (1, 1, 1));
    // Many distinct grammars: the bound holds, the oldest go first.
    for i in 0..300 {
        compiler
            .compile_gbnf(&format!("root ::= \"{}\" [a-z]{{0,{i}}}", "x".repeat(i % 7)))
            .unwrap();
        assert!(cache.memory() <= 1 << 20);
    }
    assert!(cache.len() < 301);
    let small = Arc::new(GrammarCache::new(16));
    let compiler = Compiler::new(&v).with_grammar_cache(small.clone());
    compiler.compile_gbnf(JSONISH).unwrap();
    assert_eq!(small.len(), 0, "a grammar larger than the bound is not kept");
}

/// A kept grammar's token mask cache fills as matchers use it: the cache's bound counts
/// it at the next insertion, evicting the grammar whose masks outgrew the room.
#[test]
fn grammar_cache_counts_what_grammars_build_after_insertion() {
    let v = vocab();
    let compiler = Compiler::new(&v);
    let compiled = compiler.compile_gbnf(JSONISH).unwrap();
    let base = {
        let cache = Arc::new(GrammarCache::new(1 << 20));
        Compiler::new(&v).with_grammar_cache(cache.clone()).compile_gbnf(JSONISH).unwrap();
        cache.memory()
    };
    assert!(base > 0 && compiled.mask_cache_memory() == 0);
    // Room for the grammar and a little more, not for its masks once filled.
    let cache = Arc::new(GrammarCache::new(base + 16));
    let compiler = Compiler::new(&v).with_grammar_cache(cache.clone());
    let kept = compiler.compile_gbnf(JSONISH).unwrap();
    assert_eq!((cache.len(), cache.memory()), (1, base));
    let inserted = kept.memory();
    let mut m = Matcher::new(kept.clone());
    let mut mask = vec![0u32; bitmask_len(v.vocab_size())];
    for text in ["{", "\"ab\"", ":", "[", "1", ","] {
        m.fill_next_token_bitmask(&mut mask).unwrap();
        m.accept_string(text).unwrap();
    }
    let filled = kept.mask_cache_memory();
    assert!(filled > 16, "the walk filled the mask cache ({filled} bytes)");
    // The automata the walk built count as well as the masks it stored.
    let grown = kept.memory() - inserted;
    assert!(grown >= filled, "{grown} bytes grown, {filled} of them masks");
    assert_eq!(cache.memory(), base + grown);
    // The next insertion needs room: the grammar whose masks grew goes.
    compiler.compile_gbnf("root ::= \"a\"").unwrap();
    assert_eq!(cache.len(), 1);
    assert!(cache.memory() <= base + 16);
    let again = compiler.compile_gbnf(JSONISH).unwrap();
    assert!(!Arc::ptr_eq(&again, &kept), "evicted, compiled again");
}

/// Grammars are kept by their source: the same schema value, schema text, regex or IR
/// hits; another kind of source, other conversion options or other compiler settings
/// compile again.
#[test]
fn grammar_cache_keys_are_sources_options_and_settings() {
    let v = vocab();
    let cache = Arc::new(GrammarCache::new(64 << 20));
    let compiler = Compiler::new(&v).with_grammar_cache(cache.clone());
    let schema = serde_json::json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    let options = grammask_syntax::JsonSchemaOptions::default();
    let first = compiler.compile_json_schema_value(&schema, &options).unwrap();
    let again = compiler.compile_json_schema_value(&schema.clone(), &options).unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    assert_eq!((cache.hits(), cache.misses()), (1, 1));
    let strict = grammask_syntax::JsonSchemaOptions { strict: true, ..Default::default() };
    let other = compiler.compile_json_schema_value(&schema, &strict).unwrap();
    assert!(!Arc::ptr_eq(&first, &other), "other conversion options compile again");
    let text = schema.to_string();
    let from_text = compiler.compile_json_schema(&text, &options).unwrap();
    assert!(Arc::ptr_eq(&from_text, &compiler.compile_json_schema(&text, &options).unwrap()));
    assert_eq!((cache.hits(), cache.misses()), (2, 3));
    // The same text as GBNF and as EBNF: two sources.
    let rule = "root ::= \"a\" [0-9]*";
    let gbnf = compiler.compile_gbnf(rule).unwrap();
    let ebnf = compiler.compile_ebnf(rule).unwrap();
    assert!(!Arc::ptr_eq(&gbnf, &ebnf));
    assert!(Arc::ptr_eq(&gbnf, &compiler.compile_gbnf(rule).unwrap()));
    let regex = compiler.compile_regex("a[0-9]*").unwrap();
    assert!(Arc::ptr_eq(&regex, &compiler.compile_regex("a[0-9]*").unwrap()));
    assert_eq!((cache.hits(), cache.misses()), (4, 6));
    // IR: equal grammars hit, a grammar differing in one rule name does not.
    let ir = grammask_syntax::parse_gbnf(rule).unwrap().grammar;
    let a = compiler.compile_grammar(&ir).unwrap();
    assert!(Arc::ptr_eq(&a, &compiler.compile_grammar(&ir.clone()).unwrap()));
    let mut renamed = ir.clone();
    renamed.rules[0].name = "start".into();
    assert!(!Arc::ptr_eq(&a, &compiler.compile_grammar(&renamed).unwrap()));
    assert_eq!((cache.hits(), cache.misses()), (5, 8));
    // Other settings: another compilation of the same source.
    let config = grammask_engine::CompilerConfig { minimize: true, ..Default::default() };
    let minimizing = Compiler::new(&v).with_config(config).with_grammar_cache(cache.clone());
    assert!(!Arc::ptr_eq(&gbnf, &minimizing.compile_gbnf(rule).unwrap()));
    assert_eq!((cache.hits(), cache.misses(), cache.len()), (5, 9, 9));
}
