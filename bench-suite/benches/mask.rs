//! Criterion benches: compile, serialize and load back, and warm per-step masks of
//! llama.cpp's json.gbnf over a real document tokenized by o200k (and Llama-3 when
//! `GRAMMASK_TOKENIZERS` points at the fetched tokenizer.json files).
//!
//! `cargo bench -p grammask-bench --bench mask`

use criterion::{criterion_group, criterion_main, Criterion};
use grammask::{bitmask_len, Compiler, Matcher, Vocabulary};
use grammask_bench::tokenize::TextTokenizer;

const GRAMMAR: &str = include_str!("../../grammar-syntax/tests/data/llama.cpp-grammars/json.gbnf");
const DOCUMENT: &str = include_str!("../data/order.json");

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

fn mask(c: &mut Criterion) {
    for (name, spec) in vocabularies() {
        let vocab = Vocabulary::load(&spec).expect("vocabulary");
        let tokens = TextTokenizer::load(&spec).and_then(|t| t.encode(DOCUMENT)).expect("tokens");
        let compiler = Compiler::new(&vocab);
        c.bench_function(&format!("compile json.gbnf ({name})"), |b| {
            b.iter(|| compiler.compile_gbnf(GRAMMAR).expect("compiles"))
        });
        let compiled = compiler.compile_gbnf(GRAMMAR).expect("compiles");
        c.bench_function(&format!("serialize json.gbnf ({name})"), |b| {
            b.iter(|| compiled.serialize())
        });
        let bytes = compiled.serialize();
        c.bench_function(&format!("deserialize json.gbnf ({name})"), |b| {
            b.iter(|| compiler.deserialize(&bytes).expect("loads"))
        });
        compiled.precompute_mask_cache().expect("the mask cache fits");
        let mut bitmask = vec![0u32; bitmask_len(vocab.vocab_size())];
        // One iteration walks the whole document: the time per step is this / tokens.
        c.bench_function(
            &format!("mask walk of {} tokens, json.gbnf ({name})", tokens.len()),
            |b| {
                b.iter(|| {
                    let mut m = Matcher::new(compiled.clone());
                    for &id in &tokens {
                        m.fill_next_token_bitmask(&mut bitmask).expect("mask");
                        m.accept_token(id).expect("accepted");
                    }
                })
            },
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = mask
}
criterion_main!(benches);
