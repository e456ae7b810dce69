//! MaskBench on a deterministic sample (every 20th file by name, 466 schemas): no
//! invalid instance accepted, no panic, no timeout, no fewer compiled schemas than the
//! coverage reached so far (the floor only rises), and no valid instance rejected except
//! for its key order: a rejected valid instance must be accepted once object properties
//! may come in any order. (MaskBench's files often list `properties` sorted by name, while
//! their instances keep the order they were written in, so the schema-order convention
//! cannot always be recovered.) With properties in any order, no valid instance of the
//! sample may be rejected. The corpus is not in the repository (it has no licence); its
//! directory comes from `GRAMMASK_MASKBENCH` (`.ci/run` sets it). The whole corpus runs
//! with `grammask-bench maskbench` (BENCHMARKS.md).

#[path = "../bench-suite/src/maskbench.rs"]
#[allow(dead_code)]
mod maskbench;

use grammask::syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions, PropertyOrder};
use grammask::{Compiler, Matcher, Vocabulary};
use maskbench::{list_files, run_file_with_timeout, Case, Totals};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One file in this many is run.
const STRIDE: usize = 20;
/// Share of the sampled schemas that must compile: the coverage reached, never lowered.
const COMPILED_FLOOR: f64 = 0.92;

/// Runs the sample with `opts` on both cores: `None` when the corpus is not configured.
fn run_sample(name: &str, opts: &JsonSchemaOptions) -> Option<(Totals, PathBuf)> {
    let Some(dir) = std::env::var_os("GRAMMASK_MASKBENCH") else {
        eprintln!(
            "\n*** SKIPPED: {name} needs the MaskBench corpus; \
             set GRAMMASK_MASKBENCH to its directory ***\n"
        );
        return None;
    };
    let dir = PathBuf::from(dir);
    let files: Vec<PathBuf> = list_files(dir.as_path(), None)
        .expect("GRAMMASK_MASKBENCH is a readable directory")
        .into_iter()
        .step_by(STRIDE)
        .collect();
    assert!(!files.is_empty(), "no MaskBench files in GRAMMASK_MASKBENCH");
    let vocab = Arc::new(grammask::byte_vocabulary());
    let next = Mutex::new(0usize);
    let totals = Mutex::new(Totals::default());
    // Debug builds are slower than the 10 s of the release runner.
    let timeout = Duration::from_secs(60);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    *n += 1;
                    *n - 1
                };
                let Some(path) = files.get(i) else { break };
                let report = run_file_with_timeout(path, &vocab, opts, timeout);
                totals.lock().unwrap().add(&report);
            });
        }
    });
    let totals = totals.into_inner().unwrap();
    let t = &totals.total;
    println!("{name}: {}", serde_json::to_string_pretty(&t.to_json()).unwrap());
    println!("refusals: {:?}", totals.refusals_by_count());
    for c in &totals.invalid_accepted {
        println!("invalid accepted: {} test {:?}: {}", c.file, c.test, c.detail);
    }
    for c in &totals.failures {
        println!("failure: {}: {}", c.file, c.detail);
    }
    assert_eq!(t.invalid_accepted, 0, "invalid instances accepted: {:?}", totals.invalid_accepted);
    assert_eq!(t.panics, 0, "panics: {:?}", totals.failures);
    assert_eq!(t.timeouts, 0, "timeouts: {:?}", totals.failures);
    assert!(
        t.compiled_ratio() >= COMPILED_FLOOR,
        "compiled {} of {} sampled schemas ({:.1}%)",
        t.compiled,
        t.schemas,
        t.compiled_ratio() * 100.0
    );
    Some((totals, dir))
}

/// The sample with the default options, then with properties in any order (one after
/// the other: each run uses both cores).
#[test]
fn maskbench_sample() {
    let Some((totals, dir)) = run_sample("maskbench_sample", &JsonSchemaOptions::default()) else {
        return;
    };
    let vocab = Arc::new(grammask::byte_vocabulary());
    let unexplained: Vec<&Case> =
        totals.valid_rejected.iter().filter(|c| !accepted_in_any_order(&dir, c, &vocab)).collect();
    println!(
        "valid instances rejected for their key order only: {}",
        totals.valid_rejected.len() - unexplained.len()
    );
    assert!(unexplained.is_empty(), "valid instances rejected: {unexplained:?}");

    // With properties in any order, every valid instance of the sample is accepted.
    let any = JsonSchemaOptions { property_order: PropertyOrder::Any, ..Default::default() };
    let Some((totals, _)) = run_sample("maskbench_sample (any order)", &any) else { return };
    assert!(
        totals.valid_rejected.is_empty(),
        "valid instances rejected in any order: {:?}",
        totals.valid_rejected
    );
}

/// Whether the rejected valid instance of `case` is accepted when object properties may
/// come in any order (`PropertyOrder::Any`).
fn accepted_in_any_order(dir: &Path, case: &Case, vocab: &Arc<Vocabulary>) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join(&case.file)) else { return false };
    let Ok(file) = serde_json::from_str::<Value>(&text) else { return false };
    let (Some(schema), Some(index)) = (file.get("schema"), case.test) else { return false };
    let Some(data) = file.get("tests").and_then(|t| t.get(index)).and_then(|t| t.get("data"))
    else {
        return false;
    };
    let any = JsonSchemaOptions { property_order: PropertyOrder::Any, ..Default::default() };
    accepts(schema, &any, data, vocab)
}

/// Whether the schema, converted with `opts`, accepts `data` written compactly.
fn accepts(
    schema: &Value,
    opts: &JsonSchemaOptions,
    data: &Value,
    vocab: &Arc<Vocabulary>,
) -> bool {
    let Ok(converted) = json_schema_to_grammar(schema, opts) else { return false };
    let Ok(compiled) = Compiler::from_arc(vocab.clone()).compile_grammar(&converted.grammar) else {
        return false;
    };
    let mut m = Matcher::new(compiled);
    let instance = serde_json::to_string(data).unwrap_or_default();
    m.accept_bytes(instance.as_bytes()).is_ok() && m.can_terminate()
}
