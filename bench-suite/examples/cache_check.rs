//! The token mask cache against plain walks: every step's mask, with the cache and
//! without it, while walking the valid instances of every Nth MaskBench schema. Any
//! difference is a bug in the cache; the run exits non-zero after listing them.
//!
//! `cargo run --release -p grammask-bench --example cache_check -- DIR EVERY TOKENIZER_JSON [eager]`
//!
//! With `eager`, the default compile is compared with one that builds every automaton in
//! full at compile time (`lazy_automata` off, both with the cache) instead: automata
//! built when a generation first enters their rule against all built up front.
//!
//! Both grammars are compiled afresh for each schema (the cached one from an empty cache,
//! as a generation meets it), and both matchers are fed each instance's real tokens, then
//! EOS. Prints the schemas and steps compared and the first differences.
use grammask::syntax::json_schema::JsonSchemaOptions;
use grammask::{bitmask_len, Compiler, CompilerConfig, Matcher, Vocabulary};
use grammask_bench::engines::eos_of;
use grammask_bench::maskbench::list_files;
use grammask_bench::tokenize::{valid_instances, TextTokenizer};
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, every, tokenizer, against) = match args.as_slice() {
        [dir, every, tokenizer] => (dir, every, tokenizer, None),
        [dir, every, tokenizer, against] => (dir, every, tokenizer, Some(against.as_str())),
        _ => return Err("usage: cache_check DIR EVERY TOKENIZER_JSON [eager]".into()),
    };
    let every: usize = every.parse().map_err(|e| format!("EVERY: {e}"))?;
    let vocab = Arc::new(Vocabulary::load(tokenizer).map_err(|e| e.to_string())?);
    let eos = eos_of(&vocab)?;
    let text_tokenizer = TextTokenizer::load(tokenizer)?;
    let files = list_files(Path::new(dir), None).map_err(|e| format!("{dir}: {e}"))?;
    let options = JsonSchemaOptions::default();
    let uncached = match against {
        None => CompilerConfig { mask_cache: false, ..Default::default() },
        Some("eager") => CompilerConfig { lazy_automata: false, ..Default::default() },
        Some(other) => return Err(format!("unknown comparison {other:?} (known: eager)")),
    };
    let mask = |m: &Matcher| {
        let mut bits = vec![0u32; bitmask_len(vocab.vocab_size())];
        m.fill_next_token_bitmask(&mut bits).map(|()| bits)
    };
    // Per schema: compiled or not, steps compared, the differences found.
    let results: Vec<(bool, usize, Vec<String>)> = files
        .par_iter()
        .step_by(every.max(1))
        .map(|file| {
            let Ok((schema, instances)) =
                valid_instances(file, &text_tokenizer, vocab.vocab_size())
            else {
                return (false, 0, Vec::new());
            };
            let compile = |config: CompilerConfig| {
                Compiler::from_arc(vocab.clone())
                    .with_config(config)
                    .compile_json_schema_value(&schema, &options)
            };
            let (Ok(cached), Ok(plain)) =
                (compile(CompilerConfig::default()), compile(uncached.clone()))
            else {
                return (false, 0, Vec::new());
            };
            let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            let (mut steps, mut differences) = (0usize, Vec::new());
            for (n, tokens) in instances.iter().enumerate() {
                let (mut a, mut b) = (Matcher::new(cached.clone()), Matcher::new(plain.clone()));
                for (step, &token) in tokens.iter().chain([&eos]).enumerate() {
                    steps += 1;
                    let (ma, mb) = (mask(&a), mask(&b));
                    if !matches!((&ma, &mb), (Ok(x), Ok(y)) if x == y) {
                        differences
                            .push(format!("{name} instance {n} step {step}: {}", diff(&ma, &mb)));
                        break;
                    }
                    if a.accept_token(token).is_err() || b.accept_token(token).is_err() {
                        break;
                    }
                }
            }
            (true, steps, differences)
        })
        .collect();
    let schemas = results.iter().filter(|r| r.0).count();
    let steps: usize = results.iter().map(|r| r.1).sum();
    let listed: Vec<&String> = results.iter().flat_map(|r| &r.2).collect();
    let differences = listed.len();
    for line in listed.iter().take(20) {
        println!("{line}");
    }
    println!("{schemas} schemas, {steps} steps compared, {differences} differences");
    if differences > 0 {
        return Err(format!("{differences} masks differ"));
    }
    Ok(())
}

/// What differs between the masks of one step, cached and plain.
fn diff<E: std::fmt::Debug>(a: &Result<Vec<u32>, E>, b: &Result<Vec<u32>, E>) -> String {
    match (a, b) {
        (Ok(x), Ok(y)) => {
            let bit = |m: &[u32], i: usize| (m[i / 32] >> (i % 32)) & 1;
            let ids: Vec<usize> =
                (0..x.len() * 32).filter(|&i| bit(x, i) != bit(y, i)).take(8).collect();
            format!("tokens {ids:?} differ")
        }
        _ => format!("{:?} / {:?}", a.as_ref().err(), b.as_ref().err()),
    }
}
