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
//! `grammask-bench repeated-steps RUN.jsonl OTHER.jsonl...` sorts the slow masks of a
//! corpus run into those slow in every run and those slow once (`repeated_steps`).
//!
//! `grammask-bench scaling` prints compile time and automaton states of schemas with
//! `maxItems` / `maxLength` bounds from 10 to 10000.

use clap::{Parser, Subcommand};
use grammask::{GrammarFormat, Vocabulary};
use grammask_bench::engines::{self, eos_of, walk_tokens, Source};
use grammask_bench::stats::Summary;
use grammask_bench::tokenize::TextTokenizer;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

mod adversarial_cmd;
mod details;
mod extract;

mod maskbench_cmd;
mod plot;
mod plot_ttfm;
mod repeated_steps;
mod scaling;
mod timing;

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
        #[arg(long, required_unless_present = "builtin")]
        grammar: Option<String>,
        /// A built-in grammar instead: `json` (any JSON value; for llguidance its JSON
        /// schema `{}`).
        #[arg(long, conflicts_with = "grammar")]
        builtin: Option<String>,
        /// Engines, comma-separated: grammask, llguidance (peers need `--features peers`).
        #[arg(long, default_value = "grammask")]
        engines: String,
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
        /// Write the vocabulary, the grammar and the token sequence walked (JSONL), for
        /// `bench-suite/scripts/xgrammar_steps.py`.
        #[arg(long)]
        export_steps: Option<PathBuf>,
        /// Drop the document's trailing whitespace (for grammars that end at the value,
        /// like the built-in JSON).
        #[arg(long)]
        trim_end: bool,
        /// Tokenize the document by longest match over the vocabulary's token bytes, as
        /// `../shared/peers`' scripts do, instead of by the vocabulary's tokenizer (the
        /// same token ids as theirs).
        #[arg(long)]
        greedy: bool,
    },
    /// Counts over a MaskBench directory: compiled, refused, right and wrong answers.
    Maskbench {
        /// The directory of MaskBench files.
        #[arg(long)]
        data: PathBuf,
        /// Write the counts (and every case) to this JSON file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Only the first N files (by name, after `--sample`).
        #[arg(long)]
        limit: Option<usize>,
        /// Only every K-th file (by name: files 0, K, 2K, ...).
        #[arg(long)]
        sample: Option<usize>,
        /// Time compile, first mask and every mask on this vocabulary (o200k, cl100k or a
        /// tokenizer.json), walking each valid instance tokenized by its real tokenizer.
        #[arg(long)]
        vocab: Option<String>,
        /// Engines to time, comma-separated: grammask, grammask-eager (the whole token mask
        /// cache filled at compile time), llguidance, outlines (the peers need
        /// `--features peers`).
        #[arg(long, default_value = "grammask", requires = "vocab")]
        engines: String,
        /// Timing jobs run at once (each in worker processes of its own).
        #[arg(long, default_value_t = 2)]
        jobs: usize,
        /// Address-space cap of each timing worker, MiB (0: none).
        #[arg(long, default_value_t = 8192)]
        mem_mb: u64,
        /// Bound of grammask's compiled-grammar cache in each timing worker, MiB: the
        /// warm compiles keep grammars (with the mask caches their walks filled) up to it
        /// across schemas (0: nothing is kept, and no earlier schema's memory stays in
        /// the worker's heap during the next cold compile).
        #[arg(long, default_value_t = 1024)]
        grammar_cache_mb: usize,
        /// Write the vocabulary, schemas and token sequences walked (JSONL), for
        /// `bench-suite/scripts/xgrammar_steps.py`.
        #[arg(long, requires = "vocab")]
        export_steps: Option<PathBuf>,
        /// Write every (schema, engine) answer with its schema size and step times (JSONL).
        #[arg(long, requires = "vocab")]
        details: Option<PathBuf>,
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
        /// Convert schemas with object properties in any order (the counts; the timing
        /// run keeps the default order).
        #[arg(long)]
        any_order: bool,
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
    /// Plots the per-step mask time distribution (CDF, log time axis) of each engine of
    /// a `maskbench --vocab` result (and of `--extra` results, such as XGrammar's).
    Plot {
        /// The result JSON (`maskbench --json`).
        result: PathBuf,
        /// More result files with an `engines` object (xgrammar_steps.py's output).
        #[arg(long)]
        extra: Vec<PathBuf>,
        /// Output SVG.
        #[arg(long)]
        out: PathBuf,
    },
    /// Plots cold TTFM against schema size (log-log, with each engine's median per
    /// doubling of size) over the schemas every engine compiled, from `maskbench --details`,
    /// and prints each engine's TTFM percentiles with the ratios grammask / other.
    PlotTtfm {
        /// The details JSONL (`maskbench --vocab V --details FILE`).
        details: PathBuf,
        /// Output SVG.
        #[arg(long)]
        out: PathBuf,
        /// Engines to compare, comma-separated (default: every engine of the file).
        #[arg(long)]
        engines: Option<String>,
    },
    /// Sorts the slow masks of a corpus run into the engine's own and the machine's: a
    /// step of the first run at or over the threshold is repeated when it takes at least
    /// half of it in every other run (the same schema, instance and step), over the
    /// instances every engine walked in the first run; prints the counts per engine and
    /// the slowest repeated steps.
    RepeatedSteps {
        /// Details JSONL files of whole-corpus runs (`maskbench --vocab V --details FILE`),
        /// the run judged first.
        #[arg(required = true, num_args = 2..)]
        runs: Vec<PathBuf>,
        /// Engines compared, comma-separated (default: every engine of the first run).
        #[arg(long)]
        engines: Option<String>,
        /// A slow step's least time, µs.
        #[arg(long, default_value_t = 2000.0)]
        threshold_us: f64,
        /// How many of the slowest repeated steps to list per engine.
        #[arg(long, default_value_t = 10)]
        top: usize,
    },
    /// (internal) A timing worker: answers one job per stdin line.
    #[command(hide = true)]
    Worker {
        #[arg(long)]
        engine: String,
        #[arg(long)]
        vocab: String,
        #[arg(long, default_value_t = 0)]
        mem_mb: u64,
        #[arg(long, default_value_t = 1024)]
        grammar_cache_mb: usize,
    },
}

/// Engine names from a comma-separated list, grammask first when present.
fn engine_list(list: &str) -> Vec<String> {
    let mut v: Vec<String> =
        list.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    v.sort_by_key(|e| e != "grammask");
    v.dedup();
    v
}

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let code = match Cli::parse().command {
        Command::Extract(args) => match extract::run(&args) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("grammask-bench: {e}");
                1
            }
        },
        Command::Steps {
            grammar,
            builtin,
            engines,
            vocab,
            text,
            runs,
            json,
            export_steps,
            trim_end,
            greedy,
        } => {
            let source = match (grammar, builtin) {
                (_, Some(b)) if b == "json" => {
                    Ok(("builtin:json".to_string(), Source::BuiltinJson))
                }
                (_, Some(b)) => Err(format!("unknown built-in grammar `{b}` (built-ins: json)")),
                (Some(g), None) => grammar_source(&g).map(|s| (g, s)),
                (None, None) => Err("--grammar or --builtin".to_string()),
            };
            let result = source.and_then(|(name, source)| {
                let list = engine_list(&engines);
                let export = export_steps;
                let options = StepsOptions { runs: runs.max(1), json, export, trim_end, greedy };
                steps(&name, &source, &list, &vocab, &text, options)
            });
            match result {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("grammask-bench: {e}");
                    1
                }
            }
        }
        Command::Maskbench {
            data,
            json,
            limit,
            sample,
            vocab,
            engines,
            jobs,
            mem_mb,
            grammar_cache_mb,
            export_steps,
            details,
            filter,
            timeout,
            check,
            verbose,
            progress,
            any_order,
        } => {
            let timing = vocab.map(|vocab| timing::TimingOptions {
                vocab,
                engines: engine_list(&engines),
                jobs,
                deadline: std::time::Duration::from_secs_f64(timeout),
                mem_mb,
                grammar_cache_mb,
                export_steps,
                details,
                progress,
            });
            let opts = maskbench_cmd::Options {
                data,
                json,
                limit,
                sample,
                timing,
                filter,
                timeout: std::time::Duration::from_secs_f64(timeout),
                check,
                verbose,
                progress,
                schema_options: grammask::syntax::json_schema::JsonSchemaOptions {
                    property_order: if any_order {
                        grammask::syntax::json_schema::PropertyOrder::Any
                    } else {
                        grammask::syntax::json_schema::PropertyOrder::Schema
                    },
                    ..Default::default()
                },
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
        Command::Plot { result, extra, out } => match plot::run(&result, &extra, &out) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("grammask-bench: {e}");
                1
            }
        },
        Command::PlotTtfm { details, out, engines } => {
            let list = engines.as_deref().map(engine_list).unwrap_or_default();
            match plot_ttfm::run(&details, &list, &out) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("grammask-bench: {e}");
                    1
                }
            }
        }
        Command::RepeatedSteps { runs, engines, threshold_us, top } => {
            let list = engines.as_deref().map(engine_list).unwrap_or_default();
            match repeated_steps::run(&runs, &list, threshold_us, top) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("grammask-bench: {e}");
                    1
                }
            }
        }
        Command::Worker { engine, vocab, mem_mb, grammar_cache_mb } => {
            timing::worker_main(&engine, &vocab, mem_mb, grammar_cache_mb)
        }
    };
    std::process::exit(code);
}

/// A grammar file as a [`Source`] (each engine parses the text; the peers take GBNF).
fn grammar_source(path: &str) -> Result<Source, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let format = GrammarFormat::from_path(Path::new(path))
        .ok_or_else(|| format!("{path}: unknown extension"))?;
    Ok(Source::Grammar { text, format })
}

/// How `steps` walks the document.
struct StepsOptions {
    runs: usize,
    json: bool,
    export: Option<PathBuf>,
    trim_end: bool,
    greedy: bool,
}

fn steps(
    grammar: &str,
    source: &Source,
    engine_names: &[String],
    vocab_spec: &str,
    text: &str,
    options: StepsOptions,
) -> Result<(), String> {
    let StepsOptions { runs, json, export: export_steps, trim_end, greedy } = options;
    let mut document = std::fs::read_to_string(text).map_err(|e| format!("{text}: {e}"))?;
    if trim_end {
        document.truncate(document.trim_end().len());
    }
    let vocab = Arc::new(Vocabulary::load(vocab_spec).map_err(|e| e.to_string())?);
    let eos = eos_of(&vocab)?;
    let tokens = if greedy {
        grammask_bench::tokenize::greedy_encode(&vocab, &document)?
    } else {
        TextTokenizer::load(vocab_spec)?.encode(&document)?
    };
    if let Some(path) = export_steps {
        let mut line = serde_json::json!({"file": grammar, "instances": [tokens]});
        match source {
            Source::BuiltinJson => line["builtin"] = "json".into(),
            Source::Grammar { text, .. } => line["grammar"] = text.clone().into(),
            Source::JsonSchema(schema) => line["schema"] = schema.clone(),
        }
        timing::write_export(&path, &vocab, eos, vocab_spec, &[line])?;
    }
    let mut out = serde_json::Map::new();
    for name in engine_names {
        let mut engine = engines::build(name, &vocab)?;
        let compile_start = Instant::now();
        let compiled = engine.compile(source, false).map_err(|e| format!("{name}: {e}"))?;
        let compile_us = compile_start.elapsed().as_secs_f64() * 1e6;
        let mut cold: Vec<f64> = Vec::new();
        let mut warm: Vec<f64> = Vec::new();
        for run in 0..runs {
            let walk = walk_tokens(compiled.as_ref(), &tokens, eos);
            if let Some(r) = walk.refused {
                return Err(format!(
                    "{name}: step {}: token {} refused: {}",
                    r.step, r.token, r.reason
                ));
            }
            if run == 0 {
                cold = walk.steps_us
            } else {
                warm.extend(walk.steps_us)
            }
        }
        let (cold_s, warm_s) = (Summary::of(&cold), Summary::of(&warm));
        let cache = compiled.mask_cache_bytes();
        if json {
            out.insert(
                name.clone(),
                serde_json::json!({
                    "compile_us": compile_us.round(), "ttfm_us": (compile_us + cold[0]).round(),
                    "cold_mask_us": cold_s.to_json(), "warm_mask_us": warm_s.to_json(),
                    "mask_cache_bytes": cache,
                }),
            );
        } else {
            println!("{name}: {grammar} on {vocab_spec}, {} tokens (+EOS)", tokens.len());
            println!("  compile {:.0} µs, first mask {:.0} µs", compile_us, cold[0]);
            let show = |label: &str, s: &Summary| {
                println!(
                    "  {label}: mean {:.1} µs, p50 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1} ({} steps)",
                    s.mean, s.p50, s.p99, s.p999, s.max, s.count
                )
            };
            show("cold run", &cold_s);
            show("warm runs", &warm_s);
            if let Some(bytes) = cache {
                println!("  mask cache: {} KiB", bytes / 1024);
            }
        }
    }
    if json {
        let mut value = serde_json::json!({
            "grammar": grammar, "vocab": vocab_spec, "tokens": tokens.len(),
        });
        if let Some(g) = out.get("grammask").and_then(|g| g.as_object()) {
            value.as_object_mut().expect("object").extend(g.clone());
        }
        value["engines"] = serde_json::Value::Object(out);
        println!("{value}");
    }
    Ok(())
}
