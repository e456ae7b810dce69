//! Cold TTFM (compile plus the first mask) of several engines over the same MaskBench
//! schemas in one process, the engines in turn on each schema: a quick ratio beside the
//! peers, and a way to split a cold start into its parts.
//!
//! `cargo run --release -p grammask-bench --features peers --example ttfm_peers -- DIR
//! EVERY RUNS TOKENIZER_JSON grammask,llguidance`
//!
//! Every compile is cold as `grammask-bench maskbench` times it (no cache across
//! grammars), and each engine's compile runs after the other's, so neither finds its own
//! data in the caches. With `POLLUTE_MB=N` the process writes N MiB before each compile,
//! so that the compile finds neither its code nor its data in the caches, as in the
//! `maskbench` workers. With `PREWARM=1` (after the writes), each engine first compiles a
//! small schema of its own and takes its first mask: its code is then in the caches, the
//! timed schema's data is not, so the difference from a run without it is what fetching
//! the code costs. Only schemas every engine compiled count. Prints per engine the
//! compiles counted and TTFM p50, mean and p99 ([`Summary`]), then the first engine's
//! p50 and mean as ratios of each other engine's.
use grammask::Vocabulary;
use grammask_bench::cold_caches::CachePolluter;
use grammask_bench::engines::{self, Engine, Source};
use grammask_bench::maskbench::sampled_schemas;
use grammask_bench::stats::Summary;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Compiles `source` cold and takes its first mask.
fn ttfm(engine: &mut dyn Engine, source: &Source) -> Result<(), String> {
    let compiled = engine.compile(source, false)?;
    let mut walk = compiled.start()?;
    walk.fill_mask()
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, every, runs, tokenizer, names] = args.as_slice() else {
        return Err("usage: ttfm_peers DIR EVERY RUNS TOKENIZER_JSON ENGINES".into());
    };
    let every: usize = every.parse().map_err(|e| format!("EVERY: {e}"))?;
    let runs: usize = runs.parse().map_err(|e| format!("RUNS: {e}"))?;
    let vocab = Arc::new(
        Vocabulary::from_tokenizer_json(tokenizer).map_err(|e| format!("{tokenizer}: {e}"))?,
    );
    let names: Vec<&str> = names.split(',').collect();
    let mut engines = names
        .iter()
        .map(|name| engines::build_with(name, &vocab, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let schemas = sampled_schemas(Path::new(dir), every)?;
    let mut polluter = CachePolluter::from_env();
    let prewarm = std::env::var_os("PREWARM").is_some();
    let warmup = Source::JsonSchema(json!({
        "type": "object",
        "properties": {"zz": {"type": "string", "maxLength": 3}, "yy": {"type": "array", "items": {"type": "integer"}}}
    }));
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); engines.len()];
    for _ in 0..runs {
        for (_, schema) in &schemas {
            let source = Source::JsonSchema(schema.clone());
            let mut one = Vec::with_capacity(engines.len());
            for engine in engines.iter_mut() {
                polluter.pollute();
                if prewarm {
                    ttfm(engine.as_mut(), &warmup)?;
                }
                let t = Instant::now();
                let ok = ttfm(engine.as_mut(), &source).is_ok();
                one.push(ok.then(|| t.elapsed().as_secs_f64() * 1e6));
            }
            if let Some(all) = one.into_iter().collect::<Option<Vec<f64>>>() {
                for (e, us) in all.into_iter().enumerate() {
                    times[e].push(us);
                }
            }
        }
    }
    let mut figures = Vec::new();
    for (name, t) in names.iter().zip(&times) {
        let s = Summary::of(t);
        if s.count == 0 {
            return Err("no schema every engine compiled".into());
        }
        println!(
            "{name}: {} compiles, TTFM p50 {:.0} µs, mean {:.0} µs, p99 {:.0} µs",
            s.count, s.p50, s.mean, s.p99
        );
        figures.push(s);
    }
    for (name, s) in names.iter().zip(&figures).skip(1) {
        let first = &figures[0];
        println!(
            "{}/{name}: TTFM p50 {:.2}x, mean {:.2}x",
            names[0],
            first.p50 / s.p50,
            first.mean / s.mean
        );
    }
    Ok(())
}
