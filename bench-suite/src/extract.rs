//! `grammask-bench extract`: structured extraction with a real model, with and without
//! grammask.
//!
//! A fixed, seeded set of one-sentence incident reports, each naming one of six services,
//! one of four severities and a duration in minutes. The model (SmolLM2-135M-Instruct by
//! default, greedy decoding) must answer `{"service": ..., "severity": ..., "minutes": ...}`.
//! Modes, all from the same prompt: `prompt_only` (no constraint), `constrained` (a JSON
//! Schema with enums for service and severity and an integer for minutes),
//! `cut_at_8` (constrained, at most 8 tokens), `with_unknown` (constrained, the service
//! enum also allows `"unknown"`). Reported per mode: valid JSON (%), all fields right (%),
//! each field right (%).

use grammask::{CompiledGrammar, Compiler, GrammarFormat};
use grammask_model::sample::Rng;
use grammask_model::{GenerateOptions, Model};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// The services named in the reports.
pub const SERVICES: [&str; 6] =
    ["auth", "billing", "search", "storage", "notifications", "payments"];
/// The severities named in the reports.
pub const SEVERITIES: [&str; 4] = ["low", "medium", "high", "critical"];
/// The modes, in report order.
pub const MODES: [&str; 4] = ["prompt_only", "constrained", "cut_at_8", "with_unknown"];
/// The seed of the case set.
pub const SEED: u64 = 2024;
/// The longest answer in tokens (except `cut_at_8`): a right answer takes about 22.
pub const MAX_TOKENS: usize = 48;

/// Arguments of `grammask-bench extract`.
#[derive(clap::Args, Debug)]
pub struct ExtractArgs {
    /// Number of cases (the first N of the fixed set of 200).
    #[arg(long, default_value_t = 200)]
    pub cases: usize,
    /// Write the table as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// A GGUF model (default: SmolLM2-135M-Instruct, fetched once).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Print every answer.
    #[arg(long)]
    pub verbose: bool,
}

/// One incident report and its right answer.
#[derive(Clone, Debug)]
pub struct Case {
    /// The report.
    pub text: String,
    /// The service it names.
    pub service: &'static str,
    /// The severity it names.
    pub severity: &'static str,
    /// The duration in minutes.
    pub minutes: u64,
}

const TEMPLATES: [&str; 10] = [
    "The {service} service had a {severity} severity outage that lasted {minutes} minutes.",
    "A {severity} incident hit {service} and was resolved after {minutes} minutes.",
    "For {minutes} minutes, {service} returned errors to users; the incident was rated {severity}.",
    "{Service} was degraded for {minutes} minutes in a {severity}-severity incident.",
    "On-call paged for {service}: severity {severity}, duration {minutes} minutes.",
    "Customers could not reach {service} for {minutes} minutes, a {severity} severity event.",
    "Severity {severity}: {service} latency spiked and recovered {minutes} minutes later.",
    "We declared a {severity} incident when {service} failed; it lasted {minutes} minutes.",
    "After a bad deploy, {service} was down for {minutes} minutes (severity: {severity}).",
    "A {minutes}-minute {severity} outage of {service} was caused by an expired certificate.",
];

/// The fixed case set: `n` reports from [`SEED`] (the first `n` of the same sequence).
pub fn cases(n: usize) -> Vec<Case> {
    let mut rng = Rng::new(SEED);
    (0..n)
        .map(|_| {
            let template = TEMPLATES[(rng.next_u64() % TEMPLATES.len() as u64) as usize];
            let service = SERVICES[(rng.next_u64() % SERVICES.len() as u64) as usize];
            let severity = SEVERITIES[(rng.next_u64() % SEVERITIES.len() as u64) as usize];
            let minutes = 1 + rng.next_u64() % 240;
            let capital = service[..1].to_uppercase() + &service[1..];
            let text = template
                .replace("{service}", service)
                .replace("{Service}", &capital)
                .replace("{severity}", severity)
                .replace("{minutes}", &minutes.to_string());
            Case { text, service, severity, minutes }
        })
        .collect()
}

/// The user message for a report (the same in every mode).
pub fn prompt(case: &Case) -> String {
    format!(
        "Extract the service, the severity and the duration in minutes from this incident \
         report. Answer only with JSON: {{\"service\": ..., \"severity\": ..., \"minutes\": ...}}.\n\n\
         Report: {}",
        case.text
    )
}

/// The JSON Schema of the answer; `unknown` adds `"unknown"` to the service enum.
pub fn schema(unknown: bool) -> String {
    let mut services: Vec<&str> = SERVICES.to_vec();
    if unknown {
        services.push("unknown");
    }
    serde_json::json!({
        "type": "object",
        "properties": {
            "service": {"type": "string", "enum": services},
            "severity": {"type": "string", "enum": SEVERITIES},
            "minutes": {"type": "integer"}
        },
        "required": ["service", "severity", "minutes"],
        "additionalProperties": false
    })
    .to_string()
}

/// How one answer scored.
#[derive(Clone, Copy, Debug, Default)]
pub struct Score {
    /// The whole answer (trimmed) is a JSON object.
    pub valid: bool,
    /// `service` is right.
    pub service: bool,
    /// `severity` is right.
    pub severity: bool,
    /// `minutes` is right (an integer equal to the report's).
    pub minutes: bool,
}

impl Score {
    /// Scores an answer against its case.
    pub fn of(answer: &str, case: &Case) -> Score {
        let Ok(serde_json::Value::Object(obj)) = serde_json::from_str(answer.trim()) else {
            return Score::default();
        };
        Score {
            valid: true,
            service: obj.get("service").and_then(|v| v.as_str()) == Some(case.service),
            severity: obj.get("severity").and_then(|v| v.as_str()) == Some(case.severity),
            minutes: obj.get("minutes").and_then(|v| v.as_u64()) == Some(case.minutes),
        }
    }

    /// Every field right.
    pub fn all_right(&self) -> bool {
        self.valid && self.service && self.severity && self.minutes
    }
}

#[derive(Default)]
struct Tally {
    n: usize,
    valid: usize,
    all: usize,
    service: usize,
    severity: usize,
    minutes: usize,
    tokens: usize,
    model_ms: f64,
    mask_ms: f64,
}

impl Tally {
    fn add(&mut self, s: Score) {
        self.n += 1;
        self.valid += s.valid as usize;
        self.all += s.all_right() as usize;
        self.service += s.service as usize;
        self.severity += s.severity as usize;
        self.minutes += s.minutes as usize;
    }

    fn pct(&self, k: usize) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            (1000.0 * k as f64 / self.n as f64).round() / 10.0
        }
    }
}

fn compile(model: &Model, unknown: bool) -> Result<Arc<CompiledGrammar>, String> {
    let text = schema(unknown);
    let parsed = grammask::parse_grammar(&text, GrammarFormat::JsonSchema, "root")
        .map_err(|d| d.render("schema", &text))?;
    Compiler::new(&model.vocab).compile_grammar(&parsed.grammar).map_err(|e| e.to_string())
}

/// Runs the experiment; prints the table, writes `--json`.
pub fn run(args: &ExtractArgs) -> Result<(), String> {
    let path = grammask_model::model_path(args.model.as_deref()).map_err(|e| e.to_string())?;
    let mut model = grammask_model::Model::load(&path).map_err(|e| e.to_string())?;
    let constrained = compile(&model, false)?;
    let with_unknown = compile(&model, true)?;
    let cases = cases(args.cases);
    let mut tallies: Vec<Tally> = MODES.iter().map(|_| Tally::default()).collect();
    let mut prefill_ms = 0.0;
    let mut prompt_tokens = 0;
    let start = Instant::now();
    for (i, case) in cases.iter().enumerate() {
        let ids = model.chat_prompt(None, &prompt(case)).map_err(|e| e.to_string())?;
        let prefilled = model.prefill(&ids).map_err(|e| e.to_string())?;
        prefill_ms += prefilled.ms;
        prompt_tokens += ids.len();
        for (m, mode) in MODES.iter().enumerate() {
            let (grammar, max_tokens) = match *mode {
                "prompt_only" => (None, MAX_TOKENS),
                "constrained" => (Some(&constrained), MAX_TOKENS),
                "cut_at_8" => (Some(&constrained), 8),
                _ => (Some(&with_unknown), MAX_TOKENS),
            };
            let options = GenerateOptions { max_tokens, ..GenerateOptions::default() };
            let g = model
                .generate_from(&prefilled, grammar, &options, &mut |_| {})
                .map_err(|e| e.to_string())?;
            let answer = String::from_utf8_lossy(&g.text);
            let score = Score::of(&answer, case);
            if args.verbose {
                eprintln!("[{i} {mode}] {:?} -> {answer:?} {score:?}", case.text);
            }
            let t = &mut tallies[m];
            t.add(score);
            t.tokens += g.tokens.len();
            t.model_ms += g.decode_ms;
            t.mask_ms += g.mask_ms;
        }
        if (i + 1) % 10 == 0 || i + 1 == cases.len() {
            eprintln!(
                "grammask-bench extract: {}/{} cases, {:.0} s",
                i + 1,
                cases.len(),
                start.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "{} cases, greedy, {} (prompt {:.0} tokens and {:.0} ms on average)",
        cases.len(),
        path.file_name().and_then(|n| n.to_str()).unwrap_or("model"),
        prompt_tokens as f64 / cases.len().max(1) as f64,
        prefill_ms / cases.len().max(1) as f64
    );
    println!(
        "{:<13} {:>7} {:>9} {:>8} {:>9} {:>8} {:>7} {:>9} {:>8}",
        "mode",
        "valid%",
        "all_right%",
        "service%",
        "severity%",
        "minutes%",
        "tokens",
        "model ms",
        "mask ms"
    );
    let mut modes = serde_json::Map::new();
    for (mode, t) in MODES.iter().zip(&tallies) {
        // Model time per token: the forward passes after the prompt's, per sampled token
        // after the first; mask time per sampled token.
        let steps = t.tokens.saturating_sub(t.n).max(1);
        let model_ms = t.model_ms / steps as f64;
        let mask_ms = t.mask_ms / t.tokens.max(1) as f64;
        println!(
            "{:<13} {:>7.1} {:>9.1} {:>8.1} {:>9.1} {:>8.1} {:>7.1} {:>9.1} {:>8.3}",
            mode,
            t.pct(t.valid),
            t.pct(t.all),
            t.pct(t.service),
            t.pct(t.severity),
            t.pct(t.minutes),
            t.tokens as f64 / t.n.max(1) as f64,
            model_ms,
            mask_ms
        );
        modes.insert(
            mode.to_string(),
            serde_json::json!({
                "valid": t.pct(t.valid), "all_right": t.pct(t.all), "service": t.pct(t.service),
                "severity": t.pct(t.severity), "minutes": t.pct(t.minutes),
                "tokens_per_answer": t.tokens as f64 / t.n.max(1) as f64,
                "model_ms_per_token": model_ms, "mask_ms_per_token": mask_ms,
            }),
        );
    }
    if let Some(out) = &args.json {
        let doc = serde_json::json!({"cases": cases.len(), "modes": modes});
        std::fs::write(out, serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n")
            .map_err(|e| format!("{}: {e}", out.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_case_set_is_fixed_and_covers_every_value() {
        let a = cases(200);
        assert_eq!(a.len(), 200);
        assert_eq!(
            a[..10].iter().map(|c| &c.text).collect::<Vec<_>>(),
            cases(10).iter().map(|c| &c.text).collect::<Vec<_>>()
        );
        for s in SERVICES {
            assert!(a.iter().any(|c| c.service == s && c.text.to_lowercase().contains(s)));
        }
        for s in SEVERITIES {
            assert!(a.iter().any(|c| c.severity == s));
        }
        assert!(a.iter().all(|c| c.text.contains(&c.minutes.to_string())));
    }

    #[test]
    fn scoring() {
        let case = Case { text: String::new(), service: "auth", severity: "low", minutes: 5 };
        let s = Score::of(r#" {"service": "auth", "severity": "low", "minutes": 5}"#, &case);
        assert!(s.all_right());
        let s = Score::of(r#"{"service": "auth", "severity": "high", "minutes": "5"}"#, &case);
        assert!(s.valid && s.service && !s.severity && !s.minutes);
        assert!(!Score::of(r#"{"service": "auth""#, &case).valid);
    }
}
