//! Mutated grammars, regexes and JSON Schemas (byte flips, truncations, inserted
//! metacharacters, from a fixed seed) go through parsing and compilation: each gives a
//! grammar or an error, never a panic. Compilation runs with a 2 s `compile_time` budget so
//! that a mutation cannot make the test hang either.

use grammask::{byte_vocabulary, Compiler, CompilerConfig, GrammarFormat, Limits};
use grammask_fuzz::rng::XorShift as Rng;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

const META: &[u8] = b"()[]{}|*+?\"\\^-.:=,0123456789$#/ \n\xff\xc3";

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut text = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(4) {
            0 if !text.is_empty() => {
                let at = rng.below(text.len());
                text[at] = META[rng.below(META.len())];
            }
            1 => {
                let at = rng.below(text.len() + 1);
                text.insert(at, META[rng.below(META.len())]);
            }
            2 if !text.is_empty() => {
                let at = rng.below(text.len());
                text.remove(at);
            }
            _ => {
                let at = rng.below(text.len() + 1);
                text.truncate(at);
            }
        }
    }
    text
}

fn seeds() -> Vec<(GrammarFormat, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/grammar-syntax/tests/data/llama.cpp-grammars");
    let mut out: Vec<(GrammarFormat, String)> = ["arithmetic", "json", "list", "chess", "c"]
        .iter()
        .map(|n| (GrammarFormat::Gbnf, std::fs::read_to_string(format!("{dir}/{n}.gbnf")).unwrap()))
        .collect();
    out.push((
        GrammarFormat::Ebnf,
        "root ::= a (= \"x\")\na ::= [a-z]+ \"x\" | \"(\" a \")\"".into(),
    ));
    for re in ["[0-9]{1,3}(\\.[0-9]{1,3}){3}", "(a|b)*c{2,5}[^x-z]", "\\w+@\\w+\\.(com|org)"] {
        out.push((GrammarFormat::Regex, re.into()));
    }
    for schema in [
        r#"{"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"type": "array", "items": {"type": "string", "maxLength": 4}}}, "required": ["a"]}"#,
        r##"{"$defs": {"n": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"v": {"$ref": "#/$defs/n"}}}]}}, "$ref": "#/$defs/n"}"##,
        r#"{"oneOf": [{"type": "string", "pattern": "^a+$"}, {"enum": [1, 2, "x"]}], "not": {"const": 2}}"#,
        // A query in the base URI's authority, then a relative reference (resolving it
        // once sliced past the end of the base).
        r##"{"$id": "http://localhost?:1234/x/s.json", "properties": {"a": {"$ref": "d.json#/a"}}}"##,
    ] {
        out.push((GrammarFormat::JsonSchema, schema.into()));
    }
    out
}

#[test]
fn mutated_inputs_never_panic() {
    let limits = Limits { max_compile_time: Duration::from_secs(2), ..Limits::default() };
    let compiler = Compiler::new(&byte_vocabulary())
        .with_config(CompilerConfig { limits, ..CompilerConfig::default() });
    let mut rng = Rng::new(0x2545_F491_4F6C_DD1D);
    let (mut compiled, mut refused) = (0, 0);
    let mut panics = Vec::new();
    for (format, seed) in seeds() {
        for round in 0..=300 {
            // Round 0 is the seed itself.
            let mutated = if round == 0 {
                seed.clone().into_bytes()
            } else {
                mutate(seed.as_bytes(), &mut rng)
            };
            let text = String::from_utf8_lossy(&mutated).into_owned();
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let grammar = grammask::parse_grammar(&text, format, "root").ok()?;
                compiler.compile_grammar(&grammar.grammar).ok()
            }));
            match outcome {
                Ok(Some(_)) => compiled += 1,
                Ok(None) => refused += 1,
                Err(_) => panics.push(format!("{format:?}: {text:?}")),
            }
        }
    }
    assert!(panics.is_empty(), "{} panics:\n{}", panics.len(), panics.join("\n"));
    // The mutations exercise both outcomes.
    assert!(compiled > 100 && refused > 100, "{compiled} compiled, {refused} refused");
}
