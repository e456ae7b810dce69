//! The slowest masks of a MaskBench walk, each with what its time went to: first-visit
//! classifications of positions (own, through and parent entries), walks against the
//! real stacks, building rules' automata on first use, or the rest (closures, applying
//! entries), so that slow steps can be grouped by cause.
//!
//! `cargo run --release -p grammask-bench --features path-counters --example slow_steps --
//! DIR EVERY TOKENIZER_JSON [THRESHOLD_US] [--json OUT]`
//!
//! Walks the valid instances of every `EVERY`-th schema (as `grammask-bench maskbench`
//! does, each compiled afresh), and prints every step whose mask took at least
//! `THRESHOLD_US` (default 1,000), then a table of the slow steps by cause: the kind of
//! work that took the largest share of the step. Without the feature `path-counters`
//! nothing is timed and it stops with an error.
use grammask::engine::mask_cache::counters::{self, Path as Way, Work};
use grammask::{Compiler, Matcher, Vocabulary};
use grammask_bench::engines::eos_of;
use grammask_bench::maskbench::list_files;
use grammask_bench::stats::Summary;
use grammask_bench::tokenize::{valid_instances, TextTokenizer};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// What a slow step's time went to, by the largest share.
fn cause(c: &counters::Counts, total_ns: u64) -> &'static str {
    let mut best = (
        "other (closure, entries applied)",
        total_ns.saturating_sub(Work::ALL.iter().map(|&w| c.nanos(w)).sum::<u64>()),
    );
    for (work, name) in [
        (Work::PositionFill, "first visit of a position"),
        (Work::ThroughFill, "first visit inside a rule walked through"),
        (Work::ParentFill, "first visit under return positions"),
        (Work::StackWalk, "walk against the stacks"),
        (Work::Construction, "building a rule's automaton"),
    ] {
        if c.nanos(work) > best.1 {
            best = (name, c.nanos(work));
        }
    }
    best.0
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (json_out, args): (Option<String>, Vec<String>) =
        match args.iter().position(|a| a == "--json") {
            Some(i) => {
                let out = args.get(i + 1).cloned().ok_or("--json needs a file")?;
                let rest = args.iter().enumerate().filter(|&(j, _)| j != i && j != i + 1);
                (Some(out), rest.map(|(_, a)| a.clone()).collect())
            }
            None => (None, args),
        };
    let (dir, every, tokenizer, threshold) = match args.as_slice() {
        [d, e, t] => (d, e, t, 1000.0),
        [d, e, t, th] => (d, e, t, th.parse::<f64>().map_err(|e| format!("THRESHOLD_US: {e}"))?),
        _ => {
            return Err(
                "usage: slow_steps DIR EVERY TOKENIZER_JSON [THRESHOLD_US] [--json OUT]".into()
            )
        }
    };
    if !counters::ENABLED {
        return Err("build with `--features path-counters`: nothing is timed without it".into());
    }
    let every: usize = every.parse().map_err(|e| format!("EVERY: {e}"))?;
    let vocab = Arc::new(Vocabulary::load(tokenizer).map_err(|e| e.to_string())?);
    grammask::engine::prepare_vocabulary(&vocab);
    let eos = eos_of(&vocab)?;
    let text_tokenizer = TextTokenizer::load(tokenizer)?;
    let files = list_files(Path::new(dir), None).map_err(|e| format!("{dir}: {e}"))?;
    let options = grammask::syntax::JsonSchemaOptions::default();
    let mut all_steps = Vec::new();
    let mut slow = Vec::new();
    let mut words = vec![0u32; grammask::bitmask_len(vocab.vocab_size())];
    for file in files.iter().step_by(every.max(1)) {
        let Ok((schema, instances)) = valid_instances(file, &text_tokenizer, vocab.vocab_size())
        else {
            continue;
        };
        let compiler = Compiler::from_arc(vocab.clone());
        let Ok(compiled) = compiler.compile_json_schema_value(&schema, &options) else { continue };
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for (instance, tokens) in instances.iter().enumerate() {
            let mut m = Matcher::new(compiled.clone());
            for step in 0..=tokens.len() {
                let id = tokens.get(step).copied().unwrap_or(eos);
                words.fill(0);
                let before = counters::snapshot();
                let t = Instant::now();
                let filled = m.fill_next_token_bitmask(&mut words);
                let ns = t.elapsed().as_nanos() as u64;
                let c = counters::snapshot().since(&before);
                all_steps.push(ns as f64 / 1e3);
                if ns as f64 / 1e3 >= threshold {
                    slow.push(serde_json::json!({
                        "file": name, "instance": instance, "step": step, "us": ns as f64 / 1e3,
                        "cause": cause(&c, ns), "stacks": m.num_stacks(),
                        "us_by_work": {
                            "position_fill": c.nanos(Work::PositionFill) as f64 / 1e3,
                            "through_fill": c.nanos(Work::ThroughFill) as f64 / 1e3,
                            "parent_fill": c.nanos(Work::ParentFill) as f64 / 1e3,
                            "stack_walk": c.nanos(Work::StackWalk) as f64 / 1e3,
                            "construction": c.nanos(Work::Construction) as f64 / 1e3,
                        },
                        "tokens_by_path": Way::ALL.iter().map(|&w| (format!("{w:?}"), c.get(w))).collect::<BTreeMap<_, _>>(),
                        "text_before": String::from_utf8_lossy(&tokens[..step].iter().flat_map(|&t| vocab.token_bytes(t).unwrap_or_default().to_vec()).collect::<Vec<u8>>()).chars().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<String>(),
                    }));
                }
                if filled.is_err() || step == tokens.len() || m.accept_token(id).is_err() {
                    break;
                }
            }
        }
    }
    let s = Summary::of(&all_steps);
    println!(
        "{} steps: mean {:.1} us, p99 {:.1}, p99.9 {:.1}, max {:.1}; {} at or over {threshold} us",
        all_steps.len(),
        s.mean,
        s.p99,
        s.p999,
        s.max,
        slow.len()
    );
    let mut by_cause: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for step in &slow {
        let e = by_cause.entry(step["cause"].as_str().unwrap_or("").to_string()).or_default();
        e.0 += 1;
        e.1 += step["us"].as_f64().unwrap_or(0.0);
    }
    println!("| cause | slow steps | their total ms |");
    println!("|---|---|---|");
    for (cause, (n, us)) in &by_cause {
        println!("| {cause} | {n} | {:.1} |", us / 1e3);
    }
    if let Some(out) = json_out {
        let doc =
            serde_json::json!({"threshold_us": threshold, "steps": all_steps.len(), "slow": slow});
        std::fs::write(&out, serde_json::to_string_pretty(&doc).unwrap_or_default())
            .map_err(|e| format!("{out}: {e}"))?;
    }
    Ok(())
}
