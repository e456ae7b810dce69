//! Time to first mask (compile plus the first mask, cold) of every Nth MaskBench schema,
//! in one process and without child processes, repeated: quick A/B comparisons of compile
//! speed, and a target for `perf record`.
//!
//! `cargo run --release -p grammask-bench --example ttfm -- DIR EVERY RUNS TOKENIZER_JSON`
//!
//! With `KEEP=1` in the environment every compiled grammar is kept to the end, as a
//! server's grammar cache keeps them: each compile then runs beside what the earlier
//! ones hold (fresh pages for what it keeps), as the `maskbench` workers' cold compiles
//! run beside their grammar cache.
//!
//! With `THREADS=1` each compile runs on a thread of its own (what a thread remembers
//! starts empty). With `POLLUTE_MB=N` the process writes N MiB between two compiles, so
//! that each starts with caches holding none of its code and data, as in the `maskbench`
//! workers, which take turns with the peers' and the runner's work.
//!
//! TTFM counts from the schema's JSON value (conversion, compile, first mask), as the
//! `maskbench` workers time it. Prints the median conversion time of the schemas
//! (measured once on its own), the median TTFM and compile time (conversion included),
//! the total over all schemas and runs, and the schemas around the median and the three
//! slowest (with their automaton state counts).
use grammask::syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
use grammask::{bitmask_len, Compiler, Matcher, Vocabulary};
use grammask_bench::maskbench::sampled_schemas;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// One compile's TTFM and compile time (ms), its automaton states, and the grammar.
type Timed = (f64, f64, usize, Arc<grammask::CompiledGrammar>);

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, every, runs, tokenizer] = args.as_slice() else {
        return Err("usage: ttfm DIR EVERY RUNS TOKENIZER_JSON".into());
    };
    let every: usize = every.parse().map_err(|e| format!("EVERY: {e}"))?;
    let runs: usize = runs.parse().map_err(|e| format!("RUNS: {e}"))?;
    let vocab = Arc::new(
        Vocabulary::from_tokenizer_json(tokenizer).map_err(|e| format!("{tokenizer}: {e}"))?,
    );
    let mut schemas = Vec::new();
    let mut convert_ms = Vec::new();
    let options = JsonSchemaOptions::default();
    for (f, schema) in sampled_schemas(Path::new(dir), every)? {
        let t = Instant::now();
        if json_schema_to_grammar(&schema, &options).is_ok() {
            convert_ms.push(t.elapsed().as_secs_f64() * 1e3);
            schemas.push((f, schema));
        }
    }
    convert_ms.sort_by(f64::total_cmp);
    if let Some(p50) = convert_ms.get(convert_ms.len() / 2) {
        let total: f64 = convert_ms.iter().sum();
        println!("{} conversions: p50 {p50:.2} ms, total {total:.0} ms", convert_ms.len());
    }
    let mut times = Vec::new();
    let keep_all = std::env::var_os("KEEP").is_some_and(|v| v == "1");
    let fresh_threads = std::env::var_os("THREADS").is_some_and(|v| v == "1");
    let mut polluter = grammask_bench::cold_caches::CachePolluter::from_env();
    let mut kept = Vec::new();
    for _ in 0..runs {
        for (f, schema) in &schemas {
            let run = || -> Result<Option<Timed>, String> {
                let t = Instant::now();
                let compiler = Compiler::from_arc(vocab.clone());
                let Ok(compiled) = compiler.compile_json_schema_value(schema, &options) else {
                    return Ok(None);
                };
                let compile = t.elapsed();
                let matcher = Matcher::new(compiled);
                let mut mask = vec![0u32; bitmask_len(vocab.vocab_size())];
                matcher.fill_next_token_bitmask(&mut mask).map_err(|e| e.to_string())?;
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let states = matcher.grammar().num_states();
                Ok(Some((ms, compile.as_secs_f64() * 1e3, states, matcher.grammar().clone())))
            };
            // Another process's work between two compiles, as the `maskbench` workers
            // take turns with the peers': the caches hold none of this one's data.
            polluter.pollute();
            let outcome = if fresh_threads {
                std::thread::scope(|s| s.spawn(run).join()).map_err(|_| "a compile panicked")?
            } else {
                run()
            };
            let Some((ms, compile_ms, states, grammar)) = outcome? else { continue };
            if keep_all {
                kept.push(grammar);
            }
            times.push((ms, compile_ms, states, f.clone()));
        }
    }
    if times.is_empty() {
        return Err("no schema compiled".into());
    }
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = times.len();
    let (ttfm, compile, _, _) = &times[n / 2];
    println!("{n} compiles: p50 TTFM {ttfm:.2} ms (compile {compile:.2} ms)");
    let total: f64 = times.iter().map(|t| t.0).sum();
    let total_compile: f64 = times.iter().map(|t| t.1).sum();
    println!("total TTFM {total:.0} ms, compile {total_compile:.0} ms");
    for (ttfm, compile, states, f) in &times[n.saturating_sub(6) / 2..(n / 2 + 3).min(n)] {
        println!("{ttfm:.2} {compile:.2} {states} states {}", f.display());
    }
    println!("slowest:");
    for (ttfm, compile, states, f) in times.iter().rev().take(3) {
        println!("{ttfm:.2} {compile:.2} {states} states {}", f.display());
    }
    Ok(())
}
