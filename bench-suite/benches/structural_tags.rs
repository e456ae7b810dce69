//! Criterion benches of structural tags on Llama-3 (`GRAMMASK_TOKENIZERS` must point at
//! the fetched tokenizer.json files, `scripts/fetch-tokenizers.sh`): the time of one warm
//! `fill_next_token_bitmask` (a first fill at the same state done before timing) at
//! positions of a Hermes tool-call tag (`triggered_tags` on `<tool_call>`, two tools with
//! JSON Schema arguments) and of a reasoning tag (`<think>` any_text `</think>`, then the
//! same triggered tags):
//! - free text: at the start, after `The weather in Oslo is`, inside a partial trigger
//!   (`Let me check <tool_`), after a complete call and more text, inside `<think>`;
//! - for contrast, one step inside the JSON arguments of a call.
//!
//! Each position is reached by accepting the tokens of its prefix as Llama-3's tokenizer
//! splits it; one iteration is one fill, so criterion's time is the time per step.
//!
//! `GRAMMASK_TOKENIZERS=~/.cache/grammask/tokenizers cargo bench -p grammask-bench --bench structural_tags`

use criterion::{criterion_group, criterion_main, Criterion};
use grammask::syntax::StructuralTagOptions;
use grammask::{bitmask_len, CompiledGrammar, Compiler, Matcher, Vocabulary};
use grammask_bench::tokenize::TextTokenizer;
use serde_json::{json, Value};
use std::sync::Arc;

/// The two tools' call tags: Hermes' `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`.
fn tool_tags() -> Value {
    let call = |name: &str, schema: Value| {
        json!({
            "type": "tag",
            "begin": format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": "),
            "content": {"type": "json_schema", "json_schema": schema},
            "end": "}\n</tool_call>",
        })
    };
    json!([
        call(
            "get_weather",
            json!({"type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14}},
                "required": ["city"]}),
        ),
        call(
            "get_time",
            json!({"type": "object",
                "properties": {"timezone": {"type": "string"}},
                "required": ["timezone"]}),
        ),
    ])
}

fn triggered() -> Value {
    json!({
        "type": "triggered_tags",
        "triggers": ["<tool_call>"],
        "tags": tool_tags(),
        "at_least_one": false,
        "stop_after_first": false,
    })
}

/// Free text in which `<tool_call>` starts a call of one of the two tools.
fn hermes_tag() -> Value {
    json!({"type": "structural_tag", "format": triggered()})
}

/// `<think>` free text `</think>`, then the Hermes calls.
fn reasoning_tag() -> Value {
    json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
        triggered(),
    ]}})
}

const CALL: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";

/// (bench id, whether the reasoning tag, the text accepted before the timed fill).
fn positions() -> Vec<(&'static str, bool, String)> {
    vec![
        ("free_start", false, String::new()),
        ("free_after_text", false, "The weather in Oslo is".into()),
        ("free_partial_trigger", false, "Let me check <tool_".into()),
        (
            "free_after_call",
            false,
            format!("Let me check.\n{CALL}\nIt is 4 degrees and raining in"),
        ),
        (
            "free_in_think",
            true,
            "<think>The user wants the weather in Oslo, so I".into(),
        ),
        (
            "json_in_string",
            false,
            "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Os"
                .into(),
        ),
    ]
}

fn structural_tags(c: &mut Criterion) {
    let Some(path) = std::env::var("GRAMMASK_TOKENIZERS")
        .ok()
        .map(|dir| format!("{dir}/llama3/tokenizer.json"))
        .filter(|p| std::path::Path::new(p).exists())
    else {
        eprintln!(
            "\n*** SKIPPED: structural_tags benches need Llama-3's tokenizer at \
             $GRAMMASK_TOKENIZERS/llama3/tokenizer.json (scripts/fetch-tokenizers.sh; \
             GRAMMASK_TOKENIZERS=~/.cache/grammask/tokenizers). Nothing was measured. ***\n"
        );
        return;
    };
    let vocab = Arc::new(Vocabulary::from_tokenizer_json(&path).expect("vocabulary"));
    let text = TextTokenizer::load(&path).expect("tokenizer");
    let compiler = Compiler::from_arc(vocab.clone());
    let options = StructuralTagOptions::default();
    let hermes: Arc<CompiledGrammar> =
        compiler.compile_structural_tag(&hermes_tag(), &options).expect("compiles");
    let reasoning: Arc<CompiledGrammar> =
        compiler.compile_structural_tag(&reasoning_tag(), &options).expect("compiles");
    let mut bitmask = vec![0u32; bitmask_len(vocab.vocab_size())];
    let mut group = c.benchmark_group("structural_tags_llama3");
    for (label, think, prefix) in positions() {
        let compiled = if think { &reasoning } else { &hermes };
        let mut m = Matcher::new(compiled.clone());
        let tokens = text.encode(&prefix).expect("tokens");
        for &id in &tokens {
            m.accept_token(id).unwrap_or_else(|e| panic!("{label}: token {id} refused: {e}"));
        }
        // Warm: the first fill at this state fills the mask cache.
        m.fill_next_token_bitmask(&mut bitmask).expect("mask");
        let allowed: u32 = bitmask.iter().map(|w| w.count_ones()).sum();
        eprintln!("{label}: after {prefix:?} ({} tokens), {allowed} tokens allowed", tokens.len());
        group.bench_function(label, |b| {
            b.iter(|| m.fill_next_token_bitmask(&mut bitmask).expect("mask"))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50);
    targets = structural_tags
}
criterion_main!(benches);
