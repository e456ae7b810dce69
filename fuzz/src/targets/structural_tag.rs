//! `structural_tag`: the structural-tag converter, fed either with arbitrary bytes as the
//! tag's JSON text or with a tag built from the fuzzer's bytes out of the formats and
//! their fields (so that most inputs are tags, not syntax errors): free text with
//! triggers, excludes and token budgets, tags, sequences, alternatives, repetitions, JSON
//! Schemas, regexes, token formats.
//!
//! The converter never panics; an error has an error diagnostic that renders; a tag that
//! converts validates and either compiles or is refused with an error (within the fuzzing
//! limits), and a short masked walk over a small vocabulary keeps the mask equal to
//! `accept_token`, free of dead ends (spent budgets included), and rollback exact.

use super::{fuzz_limits, short_walk, text_vocab};
use crate::gen::names_tokens;
use crate::rng::{ByteSource, Choices};
use grammask::syntax::print::to_gbnf;
use grammask::syntax::{
    parse_structural_tag, structural_tag_to_grammar, validate, Diagnostics, Grammar,
    StructuralTagOptions,
};
use grammask::{Compiler, CompilerConfig, Matcher};
use serde_json::{json, Value};

/// Strings the tags are made of: triggers, ends and text that overlap one another.
const STRINGS: &[&str] = &[
    "<a>",
    "</a>",
    "<",
    "a",
    "ab",
    "aab",
    "<tool_call>",
    "</think>",
    "{\"",
    "\":",
    "x y",
    "é",
    "",
];

fn string(src: &mut ByteSource<'_>) -> Value {
    Value::String(src.pick(STRINGS).to_string())
}

fn strings(src: &mut ByteSource<'_>) -> Value {
    let n = src.range(0, 3);
    Value::Array((0..n).map(|_| string(src)).collect())
}

/// A `tag` format whose begin starts with one of `triggers` when given.
fn tag(src: &mut ByteSource<'_>, depth: u32, triggers: &[String]) -> Value {
    let begin = match triggers {
        [] => string(src),
        t => {
            let trigger = src.pick(t).clone();
            Value::String(format!("{trigger}{}", src.pick(&["", "x", ">", "a>"])))
        }
    };
    let end = match src.below(4) {
        0 => strings(src),
        1 => json!({"type": "token", "token": src.below(24)}),
        _ => string(src),
    };
    json!({"type": "tag", "begin": begin, "content": format(src, depth - 1), "end": end})
}

/// A format of nesting at most `depth`.
fn format(src: &mut ByteSource<'_>, depth: u32) -> Value {
    let leaf = depth == 0 || src.chance(0.3);
    let kind = if leaf { src.below(6) } else { 6 + src.below(10) };
    match kind {
        0 => json!({"type": "const_string", "value": string(src)}),
        1 => {
            let mut f = json!({"type": "any_text", "excludes": strings(src)});
            if src.chance(0.4) {
                f["max_tokens"] = json!(src.below(4));
            }
            f
        }
        2 => json!({"type": "regex", "pattern": src.pick(&["[a-c]+", "a|<b", "x?", "(ab)*", "["])}),
        3 => {
            let schemas = [
                json!({"type": "integer"}),
                json!({"enum": ["a", 1, null]}),
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
                json!(true),
                json!({"type": "strin"}),
            ];
            let schema = src.pick(&schemas).clone();
            json!({"type": "json_schema", "json_schema": schema})
        }
        4 => json!({"type": "token", "token": src.below(30)}),
        5 => {
            json!({"type": "grammar", "grammar": src.pick(&["root ::= \"a\"+", "root ::= x", "root ::= [0-9]{1,3}"])})
        }
        6 | 7 => {
            let n = src.range(0, 3);
            let kind = if kind == 6 { "sequence" } else { "or" };
            json!({"type": kind, "elements": (0..n).map(|_| format(src, depth - 1)).collect::<Vec<_>>()})
        }
        8 => {
            let kind = *src.pick(&["optional", "star", "plus"]);
            json!({"type": kind, "content": format(src, depth - 1)})
        }
        9 => {
            json!({"type": "repeat", "min": src.below(3), "max": src.pick(&[-1i64, 0, 1, 3]), "content": format(src, depth - 1)})
        }
        10 | 11 => tag(src, depth, &[]),
        12 | 13 => {
            let n = src.range(1, 2);
            let triggers: Vec<String> =
                (0..n).map(|_| src.pick(&["<a", "<tool_call>", "a", "<"]).to_string()).collect();
            let tags: Vec<Value> =
                (0..src.range(1, 3)).map(|_| tag(src, depth, &triggers)).collect();
            json!({"type": "triggered_tags", "triggers": triggers, "tags": tags,
                   "at_least_one": src.chance(0.3), "stop_after_first": src.chance(0.3),
                   "excludes": strings(src)})
        }
        14 => {
            let tags: Vec<Value> = (0..src.range(1, 2)).map(|_| tag(src, depth, &[])).collect();
            json!({"type": "tags_with_separator", "tags": tags, "separator": string(src),
                   "at_least_one": src.chance(0.5), "stop_after_first": src.chance(0.3)})
        }
        _ => {
            let rules: Vec<Value> = (0..src.range(1, 2))
                .map(|_| json!([string(src), format(src, depth - 1)]))
                .collect();
            json!({"type": "dispatch", "rules": rules, "loop": src.chance(0.5), "excludes": strings(src)})
        }
    }
}

fn check(result: Result<Grammar, Diagnostics>, text: &str, seed: &mut ByteSource<'_>) {
    let g = match result {
        Ok(g) => g,
        Err(d) => {
            assert!(d.errors().next().is_some(), "an Err without an error diagnostic: {d:?}");
            let _ = d.render("tag.json", text);
            return;
        }
    };
    let _ = validate(&g);
    let config = CompilerConfig { limits: fuzz_limits(), ..CompilerConfig::default() };
    let Ok(compiled) = Compiler::from_arc(text_vocab()).with_config(config).compile_grammar(&g)
    else {
        return;
    };
    let mut m = Matcher::new(compiled);
    if let Err(e) = short_walk(&mut m, 8, names_tokens(&g), |n| seed.below(n)) {
        panic!("{e}\ntag: {text}\ngrammar:\n{}", to_gbnf(&g));
    }
}

/// The target: byte 0 picks raw text (even) or a built tag (odd); byte 1 a default
/// free-text budget (0: none).
pub fn run(data: &[u8]) {
    let mut src = ByteSource::new(data);
    let mode = src.byte();
    let budget = src.byte() % 5;
    let opts = StructuralTagOptions {
        max_free_text_tokens: (budget > 0).then(|| u32::from(budget) - 1),
        ..StructuralTagOptions::default()
    };
    let vocab = text_vocab();
    let token_id = |t: &str| vocab.token_id(t.as_bytes());
    if mode % 2 == 0 {
        let text = String::from_utf8_lossy(src.rest()).into_owned();
        let result = parse_structural_tag(&text, &opts, &token_id);
        let mut walk = ByteSource::new(&[]);
        check(result, &text, &mut walk);
    } else {
        let tag = json!({"type": "structural_tag", "format": format(&mut src, 4)});
        let text = tag.to_string();
        let result = structural_tag_to_grammar(&tag, &opts, &token_id);
        check(result, &text, &mut src);
    }
}
