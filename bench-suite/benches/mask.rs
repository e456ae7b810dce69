//! Criterion benches on o200k (and Llama-3 when `GRAMMASK_TOKENIZERS` points at the
//! fetched tokenizer.json files):
//! - llama.cpp's json.gbnf and the built-in JSON grammar: compile, then warm per-step
//!   masks over a real document tokenized by the vocabulary's tokenizer (json.gbnf also
//!   serialized and loaded back);
//! - a few MaskBench schemas (a small, a middling and a large one), when
//!   `GRAMMASK_MASKBENCH` names the corpus: compile plus first mask (TTFM, empty caches),
//!   then warm masks over the schema's first valid instance.
//!
//! `cargo bench -p grammask-bench --bench mask`

use criterion::{criterion_group, criterion_main, Criterion};
use grammask::syntax::json_schema::{builtin_json_grammar, JsonSchemaOptions};
use grammask::{bitmask_len, CompiledGrammar, Compiler, Matcher, Vocabulary};
use grammask_bench::tokenize::{valid_instances, TextTokenizer};
use std::path::Path;
use std::sync::Arc;

const GRAMMAR: &str = include_str!("../../grammar-syntax/tests/data/llama.cpp-grammars/json.gbnf");
const DOCUMENT: &str = include_str!("../data/order.json");
/// MaskBench files benched when the corpus is there: about the median schema, a larger
/// one, and one of the largest (Kubernetes, 150 KB).
const SCHEMAS: &[&str] = &[
    "Glaiveai2K---search_news_44313580.json",
    "Github_medium---o64824.json",
    "Kubernetes---kb_255_Normalized.json",
];

fn vocabularies() -> Vec<(String, String)> {
    let mut out = vec![("o200k".to_string(), "o200k".to_string())];
    if let Ok(dir) = std::env::var("GRAMMASK_TOKENIZERS") {
        let path = format!("{dir}/llama3/tokenizer.json");
        if std::path::Path::new(&path).exists() {
            out.push(("llama3".to_string(), path));
        }
    }
    out
}

/// One iteration walks the whole token sequence (the time per step is this / tokens).
fn bench_walk(c: &mut Criterion, label: &str, compiled: &Arc<CompiledGrammar>, tokens: &[u32]) {
    let size = compiled.vocabulary().vocab_size();
    let mut bitmask = vec![0u32; bitmask_len(size)];
    c.bench_function(&format!("mask walk of {} tokens, {label}", tokens.len()), |b| {
        b.iter(|| {
            let mut m = Matcher::new(compiled.clone());
            for &id in tokens {
                m.fill_next_token_bitmask(&mut bitmask).expect("mask");
                m.accept_token(id).expect("accepted");
            }
        })
    });
}

fn mask(c: &mut Criterion) {
    let options = JsonSchemaOptions::default();
    let corpus = std::env::var_os("GRAMMASK_MASKBENCH");
    if corpus.is_none() {
        eprintln!("*** MaskBench schemas skipped: set GRAMMASK_MASKBENCH to the corpus ***");
    }
    for (name, spec) in vocabularies() {
        let vocab = Arc::new(Vocabulary::load(&spec).expect("vocabulary"));
        let text = TextTokenizer::load(&spec).expect("tokenizer");
        let tokens = text.encode(DOCUMENT).expect("tokens");
        let compiler = Compiler::from_arc(vocab.clone());
        c.bench_function(&format!("compile json.gbnf ({name})"), |b| {
            b.iter(|| compiler.compile_gbnf(GRAMMAR).expect("compiles"))
        });
        let compiled = compiler.compile_gbnf(GRAMMAR).expect("compiles");
        c.bench_function(&format!("serialize json.gbnf ({name})"), |b| {
            b.iter(|| compiled.serialize())
        });
        let bytes = compiled.serialize().expect("serializes");
        c.bench_function(&format!("deserialize json.gbnf ({name})"), |b| {
            b.iter(|| compiler.deserialize(&bytes).expect("loads"))
        });
        compiled.precompute_mask_cache().expect("the mask cache fits");
        bench_walk(c, &format!("json.gbnf ({name})"), &compiled, &tokens);

        // The built-in grammar ends at the value: the document without its last newline.
        let builtin = builtin_json_grammar(&options);
        let value_tokens = text.encode(DOCUMENT.trim_end()).expect("tokens");
        c.bench_function(&format!("compile built-in JSON ({name})"), |b| {
            b.iter(|| compiler.compile_grammar(&builtin).expect("compiles"))
        });
        let compiled = compiler.compile_grammar(&builtin).expect("compiles");
        compiled.precompute_mask_cache().expect("the mask cache fits");
        bench_walk(c, &format!("built-in JSON ({name})"), &compiled, &value_tokens);

        let Some(dir) = &corpus else { continue };
        for file in SCHEMAS {
            let path = Path::new(dir).join(file);
            let Ok((schema, instances)) = valid_instances(&path, &text, vocab.vocab_size()) else {
                eprintln!("*** {}: not readable, skipped ***", path.display());
                continue;
            };
            let short = file.trim_end_matches(".json");
            let mut bitmask = vec![0u32; bitmask_len(vocab.vocab_size())];
            c.bench_function(&format!("TTFM {short} ({name})"), |b| {
                b.iter(|| {
                    let fresh = Compiler::from_arc(vocab.clone());
                    let compiled =
                        fresh.compile_json_schema_value(&schema, &options).expect("compiles");
                    Matcher::new(compiled).fill_next_token_bitmask(&mut bitmask).expect("mask");
                })
            });
            let Some(tokens) = instances.first() else { continue };
            let compiled = compiler.compile_json_schema_value(&schema, &options).expect("compiles");
            bench_walk(c, &format!("{short} ({name})"), &compiled, tokens);
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = mask
}
criterion_main!(benches);
