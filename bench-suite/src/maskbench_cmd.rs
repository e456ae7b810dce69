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
    pub filter: Option<String>,
    pub timeout: Duration,
    pub check: bool,
    pub verbose: bool,
    pub progress: bool,
}

/// Runs every file; returns the exit code.
pub fn run(opts: &Options) -> Result<i32, String> {
    let mut files = list_files(&opts.data, opts.filter.as_deref())
        .map_err(|e| format!("{}: {e}", opts.data.display()))?;
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
            let report = run_file_with_timeout(p, &vocab, opts.timeout);
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
    if let Some(out) = &opts.json {
        let mut value = totals.to_json();
        if let Some(obj) = value.as_object_mut() {
            obj.insert("wall_s".into(), serde_json::json!(elapsed.as_secs_f64().round()));
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
