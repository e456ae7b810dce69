//! Mask time of every step while walking the valid instances of every Nth MaskBench
//! schema, in one process and without child processes, repeated: quick A/B comparisons
//! of mask speed, and a target for `perf record` (compiles are not timed).
//!
//! `cargo run --release -p grammask-bench --example masks -- DIR EVERY RUNS TOKENIZER_JSON`
//!
//! Each run compiles every schema afresh (empty mask caches, as `grammask-bench
//! maskbench` measures) and walks its instances tokenized by the real tokenizer, then
//! EOS. Prints the mask time's mean, p50, p99, p99.9 and max over all steps of the run,
//! and the number of steps and refused tokens (`PER_FILE=1`: each schema's total and
//! slowest mask too, in microseconds).
use grammask::Vocabulary;
use grammask_bench::engines::{eos_of, walk_tokens, Engine, Grammask, Source};
use grammask_bench::maskbench::list_files;
use grammask_bench::stats::Summary;
use grammask_bench::tokenize::{valid_instances, TextTokenizer};
use std::path::Path;
use std::sync::Arc;

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, every, runs, tokenizer] = args.as_slice() else {
        return Err("usage: masks DIR EVERY RUNS TOKENIZER_JSON".into());
    };
    let every: usize = every.parse().map_err(|e| format!("EVERY: {e}"))?;
    let runs: usize = runs.parse().map_err(|e| format!("RUNS: {e}"))?;
    let vocab = Arc::new(Vocabulary::load(tokenizer).map_err(|e| e.to_string())?);
    let eos = eos_of(&vocab)?;
    let text_tokenizer = TextTokenizer::load(tokenizer)?;
    let files = list_files(Path::new(dir), None).map_err(|e| format!("{dir}: {e}"))?;
    let jobs: Vec<_> = files
        .iter()
        .step_by(every.max(1))
        .filter_map(|f| Some((f, valid_instances(f, &text_tokenizer, vocab.vocab_size()).ok()?)))
        .collect();
    let per_file = std::env::var_os("PER_FILE").is_some_and(|v| v == "1");
    let mut engine = Grammask::new(vocab.clone());
    for run in 0..runs {
        let (mut steps, mut refused) = (Vec::new(), 0usize);
        for (file, (schema, instances)) in &jobs {
            let Ok(compiled) = engine.compile(&Source::JsonSchema(schema.clone()), false) else {
                continue;
            };
            let first = steps.len();
            for tokens in instances {
                let walk = walk_tokens(compiled.as_ref(), tokens, eos);
                refused += usize::from(walk.refused.is_some());
                steps.extend(walk.steps_us);
            }
            if per_file {
                let own = &steps[first..];
                let max = own.iter().copied().fold(0.0, f64::max);
                let total: f64 = own.iter().sum();
                println!("{} {total:.1} {max:.1}", file.display());
            }
        }
        let s = Summary::of(&steps);
        println!(
            "run {run}: {} steps, {refused} refused; mask us mean {:.1} p50 {:.1} p99 {:.1} \
             p99.9 {:.1} max {:.1}",
            steps.len(),
            s.mean,
            s.p50,
            s.p99,
            s.p999,
            s.max
        );
    }
    Ok(())
}
