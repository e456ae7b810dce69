//! Every Nth MaskBench schema converted to a grammar, timed and fingerprinted: quick A/B
//! comparisons of the JSON Schema converter's speed, with a hash of every converted
//! grammar (as normalized GBNF) and every refusal to show the answers did not change.
//!
//! `cargo run --release -p grammask-bench --example conversions -- DIR EVERY RUNS [TOP]`
//!
//! Prints the total and median conversion time (the median of `RUNS` runs per schema),
//! the `TOP` slowest schemas (5 by default) with their share of the total, and the
//! fingerprint.
use grammask::syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
use grammask_bench::maskbench::sampled_schemas;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;
use std::time::Instant;

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (dir, every, runs, top) = match args.as_slice() {
        [dir, every, runs] => (dir, every, runs, 5),
        [dir, every, runs, top] => {
            (dir, every, runs, top.parse().map_err(|e| format!("TOP: {e}"))?)
        }
        _ => return Err("usage: conversions DIR EVERY RUNS [TOP]".into()),
    };
    let every: usize = every.parse().map_err(|e| format!("EVERY: {e}"))?;
    let runs: usize = runs.parse::<usize>().map_err(|e| format!("RUNS: {e}"))?.max(1);
    let options = JsonSchemaOptions::default();
    let mut fingerprint = DefaultHasher::new();
    let mut times = Vec::new();
    let mut converted = 0;
    let schemas = sampled_schemas(Path::new(dir), every)?;
    for (f, schema) in &schemas {
        let mut ms = Vec::with_capacity(runs);
        let mut result = None;
        for _ in 0..runs {
            let t = Instant::now();
            let r = json_schema_to_grammar(schema, &options);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            result = Some(r);
        }
        match result.expect("at least one run") {
            Ok(c) => {
                converted += 1;
                grammask::syntax::print::to_gbnf(&c.grammar).hash(&mut fingerprint);
            }
            Err(e) => e.to_string().hash(&mut fingerprint),
        }
        ms.sort_by(f64::total_cmp);
        times.push((ms[ms.len() / 2], f.clone()));
    }
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = times.iter().map(|t| t.0).sum();
    let p50 = times.get(times.len() / 2).map_or(0.0, |t| t.0);
    println!(
        "{} schemas, {converted} converted: total {total:.0} ms, p50 {p50:.3} ms, fingerprint {:016x}",
        times.len(),
        fingerprint.finish()
    );
    let mut so_far = 0.0;
    for (ms, f) in times.iter().rev().take(top) {
        so_far += ms;
        println!("{ms:8.2} ms {:5.1}% {}", 100.0 * so_far / total, f.display());
    }
    Ok(())
}
