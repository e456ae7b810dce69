//! `grammask-bench maskbench`: the MaskBench runner over a directory, on all cores.

use grammask_bench::maskbench::{list_files, run_file_with_timeout, FileReport, Totals};
use rayon::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The command's options.
pub struct Options {
    pub data: PathBuf,
    pub json: Option<PathBuf>,
    pub limit: Option<usize>,
    pub sample: Option<usize>,
    pub filter: Option<String>,
    pub timeout: Duration,
    pub check: bool,
    pub verbose: bool,
    pub progress: bool,
    /// Conversion options (the default, or `--any-order`).
    pub schema_options: grammask::syntax::json_schema::JsonSchemaOptions,
    /// The timing run on a real vocabulary (`--vocab`), when asked.
    pub timing: Option<crate::timing::TimingOptions>,
}

/// Runs every file; returns the exit code.
pub fn run(opts: &Options) -> Result<i32, String> {
    let mut files = list_files(&opts.data, opts.filter.as_deref())
        .map_err(|e| format!("{}: {e}", opts.data.display()))?;
    if let Some(k) = opts.sample.filter(|&k| k > 1) {
        files = files.into_iter().step_by(k).collect();
    }
    if let Some(n) = opts.limit {
        files.truncate(n);
    }
    if files.is_empty() {
        return Err(format!("{}: no .json files", opts.data.display()));
    }
    let vocab = Arc::new(grammask::byte_vocabulary());
    let start = Instant::now();
    // Each file runs on a worker thread of its own (see `run_file_with_timeout`); the
    // rayon pool only bounds how many run at once.
    let reports: Vec<FileReport> = files
        .par_iter()
        .map(|p| {
            let t = Instant::now();
            let report = run_file_with_timeout(p, &vocab, &opts.schema_options, opts.timeout);
            if opts.progress {
                let s = t.elapsed().as_secs_f64();
                eprintln!("{:.2} s {}{}", s, report.name, if s > 1.0 { " SLOW" } else { "" });
            }
            report
        })
        .collect();
    let elapsed = start.elapsed();
    let mut totals = Totals::default();
    for r in &reports {
        totals.add(r);
    }
    print_table(&totals, opts.verbose);
    println!(
        "time: {:.1} s wall on {} threads (compile total {:.1} s)",
        elapsed.as_secs_f64(),
        rayon::current_num_threads(),
        totals.compile_ms / 1e3
    );
    let timing = match &opts.timing {
        Some(t) => {
            let value = crate::timing::run(&files, t)?;
            print_timing(&value);
            Some(value)
        }
        None => None,
    };
    if let Some(out) = &opts.json {
        let mut value = totals.to_json();
        if let Some(obj) = value.as_object_mut() {
            obj.insert("wall_s".into(), serde_json::json!(elapsed.as_secs_f64().round()));
            obj.insert("files_run".into(), serde_json::json!(files.len()));
            obj.insert("sample_every".into(), serde_json::json!(opts.sample.unwrap_or(1)));
            if let Some(serde_json::Value::Object(t)) = timing {
                obj.extend(t);
            }
        }
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    let t = &totals.total;
    if opts.check {
        let mut failed = Vec::new();
        if t.invalid_accepted > 0 {
            failed.push(format!("{} invalid instances accepted", t.invalid_accepted));
        }
        if t.panics > 0 {
            failed.push(format!("{} panics", t.panics));
        }
        if t.compiled_ratio() < 0.9 {
            failed.push(format!("compiled {:.1}% < 90%", t.compiled_ratio() * 100.0));
        }
        if !failed.is_empty() {
            eprintln!("maskbench check failed: {}", failed.join("; "));
            return Ok(1);
        }
        println!("maskbench check passed");
    }
    Ok(0)
}

fn print_table(totals: &Totals, verbose: bool) {
    println!(
        "{:<22} {:>7} {:>8} {:>7} {:>6} {:>8} {:>6} {:>8} {:>6} {:>6} {:>5}",
        "subset",
        "schemas",
        "compiled",
        "%",
        "unsup",
        "valid✓",
        "valid✗",
        "invalid✓",
        "inv✗!",
        "panic",
        "t/o"
    );
    let row = |name: &str, c: &grammask_bench::maskbench::Counts| {
        println!(
            "{:<22} {:>7} {:>8} {:>6.1}% {:>6} {:>8} {:>6} {:>8} {:>6} {:>6} {:>5}",
            name,
            c.schemas,
            c.compiled,
            c.compiled_ratio() * 100.0,
            c.unsupported,
            c.valid_accepted,
            c.valid_rejected,
            c.invalid_rejected,
            c.invalid_accepted,
            c.panics,
            c.timeouts
        )
    };
    for (name, c) in &totals.subsets {
        row(name, c);
    }
    row("TOTAL", &totals.total);
    println!("(valid✓ valid accepted, valid✗ valid rejected, invalid✓ invalid rejected, inv✗! invalid accepted)");
    if totals.total.unreadable > 0 {
        println!("unreadable files: {}", totals.total.unreadable);
    }
    println!("\nrefusals by keyword:");
    for (k, n) in totals.refusals_by_count() {
        println!("  {n:>6}  {k}");
    }
    let list = |title: &str, cases: &[grammask_bench::maskbench::Case]| {
        if !cases.is_empty() {
            println!("\n{title} ({}):", cases.len());
            for c in cases {
                match c.test {
                    Some(i) => println!("  {} test {i}: {}", c.file, c.detail),
                    None => println!("  {}: {}", c.file, c.detail),
                }
            }
        }
    };
    list("invalid instances accepted", &totals.invalid_accepted);
    list("valid instances rejected", &totals.valid_rejected);
    list("panics, timeouts, unreadable files", &totals.failures);
    if verbose {
        println!("\nrefusals:");
        for (file, keyword, message) in &totals.refused {
            println!("  {file} [{keyword}] {message}");
        }
    }
    println!("\nslowest compiles:");
    for (ms, file) in &totals.slowest {
        println!("  {ms:>9.1} ms  {file}");
    }
}

fn print_timing(v: &serde_json::Value) {
    let us = |s: &serde_json::Value| {
        format!(
            "mean {:>9.1} p50 {:>9.1} p99 {:>9.1} p99.9 {:>9.1} max {:>10.1}",
            s["mean"].as_f64().unwrap_or(0.0),
            s["p50"].as_f64().unwrap_or(0.0),
            s["p99"].as_f64().unwrap_or(0.0),
            s["p999"].as_f64().unwrap_or(0.0),
            s["max"].as_f64().unwrap_or(0.0)
        )
    };
    println!(
        "\ntiming on {} ({} schemas, {} s):",
        v["vocab"], v["timing_schemas"], v["timing_wall_s"]
    );
    if let Some(engines) = v["engines"].as_object() {
        for (name, e) in engines {
            println!(
                "{name}: compiled {} refused {} timeouts {} crashes {}; instances {} (refused a token: {})",
                e["compiled"], e["refused"], e["timeouts"], e["crashes"], e["instances_walked"],
                e["instances_with_refused_token"]
            );
            println!("  mask µs       {}", us(&e["mask_us"]));
            println!("  ttfm µs       {}", us(&e["ttfm_us"]));
            println!("  ttfm warm µs  {}", us(&e["ttfm_warm_us"]));
        }
    }
    for (key, ours) in [("pairs", "grammask"), ("pairs_eager", "grammask-eager")] {
        let Some(pairs) = v[key].as_object() else { continue };
        for (peer, p) in pairs {
            println!(
                "{ours} vs {peer} over {} schemas both compiled, {} instances both walked:",
                p["schemas"], p["instances"]
            );
            println!("  {ours:<14} mask {}", us(&p["grammask"]["mask_us"]));
            println!("  {peer:<14} mask {}", us(&p["peer"]["mask_us"]));
            println!("  {ours:<14} ttfm {}", us(&p["grammask"]["ttfm_us"]));
            println!("  {peer:<14} ttfm {}", us(&p["peer"]["ttfm_us"]));
            println!("  ratios {ours}/{peer}: {}", p["ratio_grammask_over_peer"]);
        }
    }
}
