//! `grammask-bench`: measurements of grammask on real tokenizers.
//!
//! `grammask-bench steps --grammar G --vocab V --text FILE [--runs N] [--json]` tokenizes
//! FILE with V's real tokenizer and walks the tokens through a matcher of G, timing every
//! mask. The first run starts from a freshly compiled grammar (cold token mask cache);
//! later runs reuse the compiled grammar (warm cache), as a server serving the same
//! grammar would.
//!
//! `grammask-bench maskbench --data DIR [--json OUT] [--limit N] [--filter SUBSTR]
//! [--check]` runs every MaskBench file of DIR (see `grammask_bench::maskbench`) on all
//! cores and prints the counts per subset, the refusals by keyword and every wrong
//! answer; `--check` exits 1 when an invalid instance was accepted, a schema panicked,
//! or fewer than 90% of the schemas compiled.
//!
//! `grammask-bench adversarial [--vocab V] [--json]` compiles every row of the adversarial
//! table (`grammask_bench::adversarial`, shared with `tests/adversarial_schemas.rs`) and
//! prints its outcome, compile time and per-step mask times on a valid document; exit 1
//! when an outcome is not the expected one.
//!
//! `grammask-bench scaling` prints compile time and automaton states of schemas with
//! `maxItems` / `maxLength` bounds from 10 to 10000.

use clap::{Parser, Subcommand};
use grammask::{bitmask_len, get_bit, Compiler, GrammarFormat, Matcher, Vocabulary};
use grammask_bench::stats::Summary;
use grammask_bench::tokenize::TextTokenizer;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod adversarial_cmd;
mod extract;

mod maskbench_cmd;
mod scaling;

#[derive(Parser)]
#[command(name = "grammask-bench", about = "Measurements of grammask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Structured extraction with a real model: prompt only, constrained, cut at 8 tokens.
    Extract(extract::ExtractArgs),
    /// Per-step mask times while walking a document's tokens.
    Steps {
        /// Grammar file (.gbnf, .ebnf, .regex).
        #[arg(long)]
        grammar: String,
        /// Vocabulary: o200k, cl100k, or a tokenizer.json path.
        #[arg(long)]
        vocab: String,
        /// The document to walk.
        #[arg(long)]
        text: String,
        /// Number of walks (the first is cold).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Counts over a MaskBench directory: compiled, refused, right and wrong answers.
    Maskbench {
        /// The directory of MaskBench files.
        #[arg(long)]
        data: PathBuf,
        /// Write the counts (and every case) to this JSON file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Only the first N files (by name).
        #[arg(long)]
        limit: Option<usize>,
        /// Only files whose name contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Seconds of compile and match after which a schema counts as a timeout.
        #[arg(long, default_value_t = 10.0)]
        timeout: f64,
        /// Exit 1 on an accepted invalid instance, a panic, or a compiled ratio below 90%.
        #[arg(long)]
        check: bool,
        /// Print every refusal.
        #[arg(long)]
        verbose: bool,
        /// Print each file's time on stderr as it finishes.
        #[arg(long)]
        progress: bool,
    },
    /// Compile time and automaton states against maxItems / maxLength bounds.
    Scaling,
    /// The adversarial table: outcome, compile time and per-step mask times of each row.
    Adversarial {
        /// Vocabulary: o200k, cl100k, or a tokenizer.json path.
        #[arg(long, default_value = "o200k")]
        vocab: String,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    let code = match Cli::parse().command {
        Command::Extract(args) => match extract::run(&args) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("grammask-bench: {e}");
                1
            }
        },
        Command::Steps { grammar, vocab, text, runs, json } => {
            match steps(&grammar, &vocab, &text, runs.max(1), json) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("grammask-bench: {e}");
                    1
                }
            }
        }
        Command::Maskbench { data, json, limit, filter, timeout, check, verbose, progress } => {
            let opts = maskbench_cmd::Options {
                data,
                json,
                limit,
                filter,
                timeout: std::time::Duration::from_secs_f64(timeout),
                check,
                verbose,
                progress,
            };
            match maskbench_cmd::run(&opts) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("grammask-bench: {e}");
                    1
                }
            }
        }
        Command::Scaling => scaling::run(),
        Command::Adversarial { vocab, json } => match adversarial_cmd::run(&vocab, json) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("grammask-bench: {e}");
                1
            }
        },
    };
    std::process::exit(code);
}

fn steps(
    grammar: &str,
    vocab_spec: &str,
    text: &str,
    runs: usize,
    json: bool,
) -> Result<(), String> {
    let source = std::fs::read_to_string(grammar).map_err(|e| format!("{grammar}: {e}"))?;
    let format = GrammarFormat::from_path(Path::new(grammar))
        .ok_or_else(|| format!("{grammar}: unknown extension"))?;
    let parsed =
        grammask::parse_grammar(&source, format, "root").map_err(|d| d.render(grammar, &source))?;
    let document = std::fs::read_to_string(text).map_err(|e| format!("{text}: {e}"))?;
    let vocab = Vocabulary::load(vocab_spec).map_err(|e| e.to_string())?;
    let tokens = TextTokenizer::load(vocab_spec)?.encode(&document)?;
    let compile_start = Instant::now();
    let compiled =
        Compiler::new(&vocab).compile_grammar(&parsed.grammar).map_err(|e| e.to_string())?;
    let compile_us = compile_start.elapsed().as_secs_f64() * 1e6;
    let mut mask = vec![0u32; bitmask_len(vocab.vocab_size())];
    let mut cold: Vec<f64> = Vec::new();
    let mut warm: Vec<f64> = Vec::new();
    let stop = vocab.stop_tokens().first().copied();
    for run in 0..runs {
        let mut matcher = Matcher::new(compiled.clone());
        let walk = tokens.iter().copied().chain(stop);
        for (step, id) in walk.enumerate() {
            let t = Instant::now();
            matcher.fill_next_token_bitmask(&mut mask).map_err(|e| e.to_string())?;
            let us = t.elapsed().as_secs_f64() * 1e6;
            if run == 0 {
                cold.push(us)
            } else {
                warm.push(us)
            }
            if !get_bit(&mask, id) {
                return Err(format!("step {step}: token {id} is not in the mask"));
            }
            matcher.accept_token(id).map_err(|e| format!("step {step}: {e}"))?;
        }
    }
    let (cold_s, warm_s) = (Summary::of(&cold), Summary::of(&warm));
    if json {
        let out = serde_json::json!({
            "grammar": grammar, "vocab": vocab_spec, "tokens": tokens.len(),
            "compile_us": compile_us.round(), "ttfm_us": (compile_us + cold[0]).round(),
            "cold_mask_us": cold_s.to_json(), "warm_mask_us": warm_s.to_json(),
            "mask_cache_bytes": compiled.mask_cache_memory(),
        });
        println!("{out}");
    } else {
        println!(
            "{grammar} on {vocab_spec}: {} tokens, {} automaton states",
            tokens.len(),
            compiled.num_states()
        );
        println!("compile {:.0} µs, first mask {:.0} µs", compile_us, cold[0]);
        let show = |name: &str, s: &Summary| {
            println!(
                "{name}: mean {:.1} µs, p50 {:.1}, p99 {:.1}, max {:.1} ({} steps)",
                s.mean, s.p50, s.p99, s.max, s.count
            )
        };
        show("cold run", &cold_s);
        show("warm runs", &warm_s);
        println!("mask cache: {} KiB", compiled.mask_cache_memory() / 1024);
    }
    Ok(())
}
