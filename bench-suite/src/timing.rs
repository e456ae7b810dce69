//! Timing of MaskBench schemas on a real vocabulary, for grammask and the peers, each
//! (engine, schema) in a child process.
//!
//! The parent tokenizes every valid instance (compact serialization, keys in file order)
//! with the vocabulary's real tokenizer, then hands `(engine, schema, token sequences)`
//! jobs to worker processes: re-executions of this binary as `grammask-bench worker`
//! (hidden), one per engine and pool thread (`--jobs` threads). A worker loads the
//! vocabulary once, caps its address space (`setrlimit(RLIMIT_AS)`), then answers one
//! job per line on stdin with one JSON line on stdout. The parent waits at most the
//! deadline for each answer: a worker that overruns is killed (a timeout, counted
//! against the engine) and one that dies (panic, abort, out of memory, signal) is a
//! crash; either way a fresh worker takes the next job and the run goes on.
//!
//! Per job the worker measures
//! - `ttfm_us`: compile plus first mask from empty caches (a fresh compiler; the
//!   vocabulary-level state, grammask's sorted vocabulary and vocabulary slices or
//!   llguidance's slicer, is built once per worker as a server builds it once per
//!   tokenizer);
//! - `ttfm_warm_us`: compile plus first mask with the caches the engine keeps across
//!   grammars, kept for the worker's lifetime (schemas come in file order; grammask: its
//!   compiled-grammar cache; the peers keep nothing across grammars, so their warm time
//!   is their cold one);
//! - the mask time of every step while walking each token sequence (then EOS) through
//!   the grammar of the warm compile, each token checked against the mask: a refused
//!   token of a valid instance is recorded and ends that walk.

use grammask::Vocabulary;
use grammask_bench::engines::{self, eos_of, walk_tokens, Source};
use grammask_bench::stats::Summary;
use grammask_bench::tokenize::{valid_instances, TextTokenizer};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Caps the address space of this process at `mb` MiB (0: no cap).
pub fn limit_memory(mb: u64) {
    if mb == 0 {
        return;
    }
    let bytes = mb.saturating_mul(1 << 20) as libc::rlim_t;
    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
    // SAFETY: setrlimit reads the struct we pass; it has no other effect on memory.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    if rc != 0 {
        eprintln!("grammask-bench worker: setrlimit failed");
    }
}

/// The worker: `grammask-bench worker --engine E --vocab V --mem-mb M
/// --grammar-cache-mb C`.
pub fn worker_main(engine: &str, vocab_spec: &str, mem_mb: u64, grammar_cache_mb: usize) -> i32 {
    limit_memory(mem_mb);
    let setup = || -> Result<_, String> {
        let vocab = Arc::new(Vocabulary::load(vocab_spec).map_err(|e| e.to_string())?);
        let eos = eos_of(&vocab)?;
        let engine = engines::build_with(engine, &vocab, grammar_cache_mb << 20)?;
        Ok((engine, eos))
    };
    let (mut engine, eos) = match setup() {
        Ok(x) => x,
        Err(e) => {
            println!("{}", json!({"setup_error": e}));
            return 1;
        }
    };
    let stdout = std::io::stdout();
    let _ = writeln!(stdout.lock(), "ready");
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(request) => run_job(engine.as_mut(), &request, eos),
            Err(e) => json!({"ok": false, "error": format!("bad request: {e}")}),
        };
        let mut out = stdout.lock();
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    0
}

fn first_mask(compiled: &dyn engines::Compiled) -> Result<(), String> {
    let mut walk = compiled.start()?;
    walk.fill_mask()
}

/// One job: cold TTFM, warm TTFM, then the walks.
fn run_job(engine: &mut dyn engines::Engine, request: &Value, eos: u32) -> Value {
    let source = Source::JsonSchema(request["schema"].clone());
    let instances: Vec<Vec<u32>> =
        serde_json::from_value(request["instances"].clone()).unwrap_or_default();
    let timed = |engine: &mut dyn engines::Engine, warm: bool| {
        let t = Instant::now();
        let compiled = engine.compile(&source, warm)?;
        let compile_us = t.elapsed().as_secs_f64() * 1e6;
        first_mask(compiled.as_ref()).map_err(|e| format!("first mask: {e}"))?;
        Ok::<_, String>((compiled, compile_us, t.elapsed().as_secs_f64() * 1e6))
    };
    let (cold, compile_us, ttfm_us) = match timed(engine, false) {
        Ok(x) => x,
        Err(e) => return json!({"ok": false, "error": e}),
    };
    let (compiled, ttfm_warm_us) = if engine.has_cross_grammar_cache() {
        drop(cold);
        match timed(engine, true) {
            Ok((c, _, us)) => (c, us),
            Err(e) => return json!({"ok": false, "error": format!("warm: {e}")}),
        }
    } else {
        (cold, ttfm_us)
    };
    let r = |x: f64| (x * 100.0).round() / 100.0;
    let walks: Vec<Value> = instances
        .iter()
        .map(|tokens| {
            let w = walk_tokens(compiled.as_ref(), tokens, eos);
            let steps: Vec<f64> = w.steps_us.iter().map(|&x| r(x)).collect();
            let refused =
                w.refused.map(|f| json!({"step": f.step, "token": f.token, "reason": f.reason}));
            json!({"steps_us": steps, "refused": refused})
        })
        .collect();
    json!({
        "ok": true, "compile_us": r(compile_us), "ttfm_us": r(ttfm_us),
        "ttfm_warm_us": r(ttfm_warm_us), "mask_cache_bytes": compiled.mask_cache_bytes(),
        "walks": walks,
    })
}

/// What a job came to.
#[derive(Clone, Debug)]
pub enum JobOutcome {
    /// The worker answered (compiled or refused: see the reply's `ok`).
    Answered(Value),
    /// Killed at the deadline.
    TimedOut,
    /// The worker died: its exit status.
    Crashed(String),
}

/// A running worker process.
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

/// How to start workers.
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    /// The vocabulary spec.
    pub vocab: String,
    /// Address-space cap per worker, MiB.
    pub mem_mb: u64,
    /// Bound of grammask's compiled-grammar cache per worker, MiB.
    pub grammar_cache_mb: usize,
}

impl Worker {
    /// Starts a worker for `engine` and waits until it has loaded the vocabulary.
    pub fn spawn(engine: &str, spec: &WorkerSpec) -> Result<Worker, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .args(["worker", "--engine", engine, "--vocab", &spec.vocab])
            .args(["--mem-mb", &spec.mem_mb.to_string()])
            .args(["--grammar-cache-mb", &spec.grammar_cache_mb.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start a worker: {e}"))?;
        let stdin = child.stdin.take().ok_or("no worker stdin")?;
        let stdout = child.stdout.take().ok_or("no worker stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut worker = Worker { child, stdin, lines: rx };
        match worker.lines.recv_timeout(Duration::from_secs(600)) {
            Ok(line) if line == "ready" => Ok(worker),
            Ok(line) => {
                worker.kill();
                Err(format!("{engine} worker: {line}"))
            }
            Err(_) => {
                worker.kill();
                Err(format!("{engine} worker did not start"))
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends one request and waits for its answer at most `deadline`. After a timeout or
    /// a crash the worker is dead: drop it.
    pub fn run(&mut self, request: &str, deadline: Duration) -> JobOutcome {
        if writeln!(self.stdin, "{request}").and_then(|_| self.stdin.flush()).is_err() {
            return JobOutcome::Crashed(self.exit_status());
        }
        match self.lines.recv_timeout(deadline) {
            Ok(line) => match serde_json::from_str(&line) {
                Ok(v) => JobOutcome::Answered(v),
                Err(e) => JobOutcome::Crashed(format!("unreadable answer: {e}")),
            },
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                JobOutcome::TimedOut
            }
            Err(RecvTimeoutError::Disconnected) => JobOutcome::Crashed(self.exit_status()),
        }
    }

    fn exit_status(&mut self) -> String {
        match self.child.wait() {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                match status.signal() {
                    Some(sig) => format!("killed by signal {sig}"),
                    None => format!("exited with {status}"),
                }
            }
            Err(e) => e.to_string(),
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The timing run's options.
#[derive(Clone, Debug)]
pub struct TimingOptions {
    /// Vocabulary spec (o200k, cl100k, or a tokenizer.json path).
    pub vocab: String,
    /// Engines, grammask first.
    pub engines: Vec<String>,
    /// Pool threads (each with its own workers).
    pub jobs: usize,
    /// Deadline per (engine, schema).
    pub deadline: Duration,
    /// Address-space cap per worker, MiB.
    pub mem_mb: u64,
    /// Bound of grammask's compiled-grammar cache per worker, MiB.
    pub grammar_cache_mb: usize,
    /// Write the vocabulary, schemas and token sequences here (JSONL).
    pub export_steps: Option<std::path::PathBuf>,
    /// Write every (file, engine) answer with its schema's size and step times here
    /// (JSONL).
    pub details: Option<std::path::PathBuf>,
    /// Print each job as it finishes.
    pub progress: bool,
}

struct FileJob {
    name: String,
    schema_bytes: usize,
    request: String,
    instances: usize,
}

/// One engine's answer for one schema.
struct Answer {
    ttfm_us: f64,
    ttfm_warm_us: f64,
    mask_cache_bytes: Option<u64>,
    /// Per instance: step times, and whether a token was refused.
    walks: Vec<(Vec<f64>, bool)>,
}

enum Result1 {
    Ok(Answer),
    Refused,
    TimedOut,
    Crashed(String),
}

fn parse_answer(v: &Value) -> Result1 {
    if v["ok"].as_bool() != Some(true) {
        return Result1::Refused;
    }
    let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
    let walks = v["walks"]
        .as_array()
        .map(|ws| {
            ws.iter()
                .map(|w| {
                    let steps = w["steps_us"]
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_f64).collect())
                        .unwrap_or_default();
                    (steps, !w["refused"].is_null())
                })
                .collect()
        })
        .unwrap_or_default();
    Result1::Ok(Answer {
        ttfm_us: f("ttfm_us"),
        ttfm_warm_us: f("ttfm_warm_us"),
        mask_cache_bytes: v["mask_cache_bytes"].as_u64(),
        walks,
    })
}

/// Quantiles of sorted values at fixed probabilities, for CDF plots: `[[p, value], ...]`.
pub fn cdf_points(values: &[f64]) -> Value {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    if sorted.is_empty() {
        return json!([]);
    }
    let mut ps: Vec<f64> = (0..=200).map(|i| i as f64 / 200.0).collect();
    ps.extend([0.9925, 0.995, 0.9975, 0.999, 0.9995, 0.9999]);
    ps.sort_by(|a, b| a.total_cmp(b));
    let points: Vec<Value> = ps
        .iter()
        .map(|&p| {
            let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            json!([p, (sorted[i] * 100.0).round() / 100.0])
        })
        .collect();
    Value::Array(points)
}

/// Runs the timing jobs over `files`; returns the JSON fields to add to the report.
pub fn run(files: &[std::path::PathBuf], o: &TimingOptions) -> Result<Value, String> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    for e in &o.engines {
        if !engines::available(e) {
            return Err(format!(
                "engine `{e}` is not in this build (peers need `--features peers`)"
            ));
        }
    }
    let vocab = Vocabulary::load(&o.vocab).map_err(|e| e.to_string())?;
    let eos = eos_of(&vocab)?;
    let tokenizer = TextTokenizer::load(&o.vocab)?;
    let start = Instant::now();
    type Read = (String, Result<(Value, Vec<Vec<u32>>), String>);
    let read: Vec<Read> = files
        .par_iter()
        .map(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
            (name, valid_instances(p, &tokenizer, vocab.vocab_size()))
        })
        .collect();
    let mut jobs = Vec::new();
    let mut export = Vec::new();
    let mut unreadable = 0usize;
    for (name, r) in read {
        match r {
            Ok((schema, instances)) => {
                let request = json!({"schema": schema, "instances": instances});
                if o.export_steps.is_some() {
                    export.push(json!({"file": name, "schema": schema, "instances": instances}));
                }
                jobs.push(FileJob {
                    schema_bytes: serde_json::to_string(&schema).map(|s| s.len()).unwrap_or(0),
                    name,
                    instances: instances.len(),
                    request: request.to_string(),
                });
            }
            Err(e) => {
                eprintln!("{name}: {e}");
                unreadable += 1;
            }
        }
    }
    if let Some(path) = &o.export_steps {
        write_export(path, &vocab, eos, &o.vocab, &export)?;
    }
    eprintln!(
        "timing: {} schemas, {} instances tokenized in {:.1} s; engines {}",
        jobs.len(),
        jobs.iter().map(|j| j.instances).sum::<usize>(),
        start.elapsed().as_secs_f64(),
        o.engines.join(",")
    );
    let spec = WorkerSpec {
        vocab: o.vocab.clone(),
        mem_mb: o.mem_mb,
        grammar_cache_mb: o.grammar_cache_mb,
    };
    let n_engines = o.engines.len();
    let total = jobs.len() * n_engines;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<Option<JobOutcome>>> = Mutex::new(vec![None; total]);
    let fatal: Mutex<Option<String>> = Mutex::new(None);
    let run_start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..o.jobs.max(1) {
            s.spawn(|| {
                let mut workers: Vec<Option<Worker>> = (0..n_engines).map(|_| None).collect();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= total || fatal.lock().map(|f| f.is_some()).unwrap_or(true) {
                        break;
                    }
                    let (file, engine) = (i / n_engines, i % n_engines);
                    if workers[engine].is_none() {
                        match Worker::spawn(&o.engines[engine], &spec) {
                            Ok(w) => workers[engine] = Some(w),
                            Err(e) => {
                                *fatal.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                                break;
                            }
                        }
                    }
                    let worker = workers[engine].as_mut().expect("spawned above");
                    let t = Instant::now();
                    let outcome = worker.run(&jobs[file].request, o.deadline);
                    if !matches!(outcome, JobOutcome::Answered(_)) {
                        workers[engine] = None;
                    }
                    let n = done.fetch_add(1, Ordering::SeqCst) + 1;
                    if o.progress {
                        let what = match &outcome {
                            JobOutcome::Answered(v) if v["ok"].as_bool() == Some(true) => "ok",
                            JobOutcome::Answered(_) => "refused",
                            JobOutcome::TimedOut => "TIMEOUT",
                            JobOutcome::Crashed(_) => "CRASH",
                        };
                        eprintln!(
                            "[{n}/{total} {:.0} s] {} {} {:.2} s {what}",
                            run_start.elapsed().as_secs_f64(),
                            o.engines[engine],
                            jobs[file].name,
                            t.elapsed().as_secs_f64()
                        );
                    }
                    outcomes.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(outcome);
                }
            });
        }
    });
    if let Some(e) = fatal.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let outcomes = outcomes.into_inner().unwrap_or_else(|p| p.into_inner());
    let wall_s = run_start.elapsed().as_secs_f64();
    // results[file][engine]
    let mut results: Vec<Vec<Result1>> = Vec::with_capacity(jobs.len());
    let mut details = Vec::new();
    for (f, job) in jobs.iter().enumerate() {
        let mut row = Vec::with_capacity(n_engines);
        for (e, engine) in o.engines.iter().enumerate() {
            let outcome = outcomes[f * n_engines + e].clone();
            let r = match &outcome {
                Some(JobOutcome::Answered(v)) => {
                    if o.details.is_some() {
                        let mut d = v.clone();
                        d["file"] = json!(job.name);
                        d["engine"] = json!(engine);
                        d["schema_bytes"] = json!(job.schema_bytes);
                        details.push(d);
                    }
                    parse_answer(v)
                }
                Some(JobOutcome::TimedOut) => Result1::TimedOut,
                Some(JobOutcome::Crashed(why)) => Result1::Crashed(why.clone()),
                None => Result1::Crashed("not run".to_string()),
            };
            if o.details.is_some() && !matches!(outcome, Some(JobOutcome::Answered(_))) {
                let what = if matches!(r, Result1::TimedOut) { "timeout" } else { "crash" };
                details.push(json!({
                    "file": job.name, "engine": engine, "schema_bytes": job.schema_bytes,
                    "ok": false, "error": what,
                }));
            }
            row.push(r);
        }
        results.push(row);
    }
    if let Some(path) = &o.details {
        write_lines(path, &details)?;
    }
    Ok(report(&jobs, &results, o, unreadable, wall_s))
}

fn write_lines(path: &std::path::Path, lines: &[Value]) -> Result<(), String> {
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?,
    );
    for l in lines {
        writeln!(out, "{l}").map_err(|e| e.to_string())?;
    }
    out.flush().map_err(|e| e.to_string())
}

/// The exported steps: a first line with the vocabulary (every id's bytes in base64, the
/// special ids, EOS), then one line per schema with its token sequences.
pub fn write_export(
    path: &std::path::Path,
    vocab: &Vocabulary,
    eos: u32,
    spec: &str,
    files: &[Value],
) -> Result<(), String> {
    use base64::Engine as _;
    let table = engines::token_table(vocab);
    let tokens: Vec<String> =
        table.iter().map(|(b, _)| base64::engine::general_purpose::STANDARD.encode(b)).collect();
    let special: Vec<usize> =
        table.iter().enumerate().filter(|(_, (_, s))| *s).map(|(i, _)| i).collect();
    let mut lines = vec![json!({"vocab": {
        "spec": spec, "vocab_size": vocab.vocab_size(), "eos": eos,
        "tokens_base64": tokens, "special_ids": special,
    }})];
    lines.extend(files.iter().cloned());
    write_lines(path, &lines)
}

#[derive(Default)]
struct Agg {
    compiled: usize,
    refused: usize,
    timeouts: usize,
    crashes: usize,
    instances: usize,
    instances_refused: usize,
    steps: Vec<f64>,
    ttfm: Vec<f64>,
    ttfm_warm: Vec<f64>,
    examples: Vec<Value>,
}

fn report(
    jobs: &[FileJob],
    results: &[Vec<Result1>],
    o: &TimingOptions,
    unreadable: usize,
    wall_s: f64,
) -> Value {
    let n_engines = o.engines.len();
    let mut aggs: Vec<Agg> = (0..n_engines).map(|_| Agg::default()).collect();
    for (f, row) in results.iter().enumerate() {
        for (e, r) in row.iter().enumerate() {
            let a = &mut aggs[e];
            let note = |a: &mut Agg, what: String| {
                if a.examples.len() < 30 {
                    a.examples.push(json!({"file": jobs[f].name, "what": what}));
                }
            };
            match r {
                Result1::Ok(ans) => {
                    a.compiled += 1;
                    a.ttfm.push(ans.ttfm_us);
                    a.ttfm_warm.push(ans.ttfm_warm_us);
                    for (i, (steps, refused)) in ans.walks.iter().enumerate() {
                        a.instances += 1;
                        a.steps.extend_from_slice(steps);
                        if *refused {
                            a.instances_refused += 1;
                            note(a, format!("valid instance {i}: a token was refused"));
                        }
                    }
                }
                Result1::Refused => a.refused += 1,
                Result1::TimedOut => {
                    a.timeouts += 1;
                    note(a, "timeout".to_string());
                }
                Result1::Crashed(why) => {
                    a.crashes += 1;
                    note(a, format!("crash: {why}"));
                }
            }
        }
    }
    let mut engines_json = serde_json::Map::new();
    for (e, a) in aggs.iter().enumerate() {
        engines_json.insert(
            o.engines[e].clone(),
            json!({
                "schemas": jobs.len(), "compiled": a.compiled, "refused": a.refused,
                "timeouts": a.timeouts, "crashes": a.crashes,
                "instances_walked": a.instances, "instances_with_refused_token": a.instances_refused,
                "mask_us": Summary::of(&a.steps).to_json(),
                "ttfm_us": Summary::of(&a.ttfm).to_json(),
                "ttfm_warm_us": Summary::of(&a.ttfm_warm).to_json(),
                "mask_cdf": cdf_points(&a.steps),
                "examples": a.examples,
            }),
        );
    }
    // Pairs: grammask against each peer over the schemas both compiled; mask times over
    // the instances both walked to the end (the same tokens, the same steps). Likewise
    // `grammask-eager` against each peer but grammask (`pairs_eager`).
    let pairs_of = |ours: &str| {
        let mut pairs = serde_json::Map::new();
        let Some(g) = o.engines.iter().position(|e| e == ours) else { return pairs };
        let peers = o.engines.iter().enumerate().filter(|&(p, e)| p != g && e != "grammask");
        for (p, peer) in peers {
            let (mut schemas, mut instances) = (0usize, 0usize);
            let (mut gs, mut ps) = (Agg::default(), Agg::default());
            for row in results {
                let (Result1::Ok(ga), Result1::Ok(pa)) = (&row[g], &row[p]) else { continue };
                schemas += 1;
                gs.ttfm.push(ga.ttfm_us);
                ps.ttfm.push(pa.ttfm_us);
                gs.ttfm_warm.push(ga.ttfm_warm_us);
                ps.ttfm_warm.push(pa.ttfm_warm_us);
                for ((gw, gr), (pw, pr)) in ga.walks.iter().zip(&pa.walks) {
                    if !gr && !pr {
                        instances += 1;
                        gs.steps.extend_from_slice(gw);
                        ps.steps.extend_from_slice(pw);
                    }
                }
            }
            let side = |a: &Agg| {
                json!({
                    "mask_us": Summary::of(&a.steps).to_json(),
                    "ttfm_us": Summary::of(&a.ttfm).to_json(),
                    "ttfm_warm_us": Summary::of(&a.ttfm_warm).to_json(),
                })
            };
            let (gm, pm) = (Summary::of(&gs.steps), Summary::of(&ps.steps));
            let (gt, pt) = (Summary::of(&gs.ttfm), Summary::of(&ps.ttfm));
            let ratio =
                |a: f64, b: f64| if b > 0.0 { (a / b * 1000.0).round() / 1000.0 } else { 0.0 };
            pairs.insert(
                peer.clone(),
                json!({
                    "schemas": schemas, "instances": instances,
                    "grammask": side(&gs), "peer": side(&ps),
                    "ratio_grammask_over_peer": {
                        "mask_mean": ratio(gm.mean, pm.mean), "mask_p50": ratio(gm.p50, pm.p50),
                        "mask_p99": ratio(gm.p99, pm.p99), "mask_p999": ratio(gm.p999, pm.p999),
                        "ttfm_p50": ratio(gt.p50, pt.p50), "ttfm_mean": ratio(gt.mean, pt.mean),
                    },
                }),
            );
        }
        pairs
    };
    let pairs = pairs_of("grammask");
    let pairs_eager = pairs_of("grammask-eager");
    // grammask's mask cache on the largest schemas it compiled.
    let mut largest: Vec<Value> = Vec::new();
    if let Some(g) = o.engines.iter().position(|e| e == "grammask") {
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&f| std::cmp::Reverse(jobs[f].schema_bytes));
        for f in order {
            if let Result1::Ok(a) = &results[f][g] {
                largest.push(json!({
                    "file": jobs[f].name, "schema_bytes": jobs[f].schema_bytes,
                    "mask_cache_bytes": a.mask_cache_bytes, "ttfm_us": a.ttfm_us,
                    "steps": a.walks.iter().map(|w| w.0.len()).sum::<usize>(),
                }));
                if largest.len() == 5 {
                    break;
                }
            }
        }
    }
    let first = aggs.first();
    json!({
        "vocab": o.vocab, "engines_run": o.engines, "jobs": o.jobs,
        "deadline_s": o.deadline.as_secs_f64(), "mem_mb": o.mem_mb,
        "grammar_cache_mb": o.grammar_cache_mb,
        "timing_schemas": jobs.len(), "timing_unreadable": unreadable,
        "timing_wall_s": wall_s.round(),
        "ttfm_us": first.map(|a| Summary::of(&a.ttfm).to_json()),
        "ttfm_warm_us": first.map(|a| Summary::of(&a.ttfm_warm).to_json()),
        "mask_us": first.map(|a| Summary::of(&a.steps).to_json()),
        "engines": engines_json, "pairs": pairs, "pairs_eager": pairs_eager,
        "largest_schemas": largest,
    })
}
