//! `grammask-bench extract`: structured extraction with a real model, and how well the
//! model's own confidence tells its right answers from its wrong ones.
//!
//! A fixed, seeded set of one-sentence incident reports, each with a severity and a
//! duration in minutes. Half name the service directly ("the billing service"), three in
//! ten by an alias the prompt does not define (a team, a product area or a feature:
//! "invoicing", "the identity team's service"), and two in ten not at all (the right
//! answer is then `"unknown"`). The model (SmolLM2-135M-Instruct by default, greedy)
//! answers `{"service", "severity", "minutes"}`. The modes ([`MODES`]) change one thing
//! each against `constrained`: no grammar, a cut at 8 tokens, `"unknown"` in the enum, a
//! short `reasoning` field first, an example value in the prompt, placeholders in the
//! prompt. For each mode: valid and right answers, valid answers with a wrong field, and
//! how well `p_chosen` of the service field (grammask's [`fields`](grammask::engine::fields))
//! separates right from wrong services (AUROC, with a bootstrap interval).

use grammask::engine::fields::Field;
use grammask::syntax::json_schema::Whitespace;
use grammask::syntax::JsonSchemaOptions;
use grammask::{CompiledGrammar, Compiler};
use grammask_model::sample::Rng;
use grammask_model::{GenerateOptions, Model, StopReason};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The services.
pub const SERVICES: [&str; 6] =
    ["auth", "billing", "search", "storage", "notifications", "payments"];
/// The severities named in the reports.
pub const SEVERITIES: [&str; 4] = ["low", "medium", "high", "critical"];
/// The modes, in report order.
pub const MODES: [&str; 7] = [
    "prompt_only",
    "constrained",
    "cut_at_8",
    "with_unknown",
    "reasoning_first",
    "example_value",
    "placeholder",
];
/// The seed of the case set.
pub const SEED: u64 = 2024;
/// The token budget of an answer (except `cut_at_8` and `reasoning_first`). Under the
/// grammar the longest answer has about 120 bytes (the longest enum values, a 5-digit
/// number, at most 4 bytes of whitespace in each of 13 places), so every constrained
/// answer can finish within it; a right answer takes about 23 tokens.
pub const MAX_TOKENS: usize = 128;
/// The token budget of `reasoning_first`: [`MAX_TOKENS`], the `reasoning` field's key and
/// at most [`MAX_REASONING_CHARS`] one-byte characters.
pub const MAX_REASONING_TOKENS: usize = MAX_TOKENS + 200;
/// The longest `reasoning` (printable ASCII without quotes or backslashes: one byte each).
pub const MAX_REASONING_CHARS: usize = 160;
/// The share of records flagged as least confident for `caught_at_10`.
pub const FLAG_SHARE: f64 = 0.10;
/// Bootstrap resamples of the AUROC interval.
pub const BOOTSTRAP: usize = 1000;

/// Arguments of `grammask-bench extract`.
#[derive(clap::Args, Debug)]
pub struct ExtractArgs {
    /// Number of cases (the first N of the fixed sequence).
    #[arg(long, default_value_t = 200)]
    pub cases: usize,
    /// Write the table as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Draw accuracy against the share of least-confident records flagged (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// A GGUF model (default: SmolLM2-135M-Instruct, fetched once).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Only these modes (comma-separated; default: all).
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    /// Print every answer.
    #[arg(long)]
    pub verbose: bool,
}

/// How a report names its service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mention {
    /// By its name ("the billing service").
    Direct,
    /// By a team, a product area or a feature the prompt does not define.
    Alias,
    /// Not at all: the answer is `"unknown"`.
    Absent,
}

impl Mention {
    /// `direct`, `alias` or `absent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mention::Direct => "direct",
            Mention::Alias => "alias",
            Mention::Absent => "absent",
        }
    }

    /// The mix: of every ten cases, five direct, three by alias, two absent.
    fn of_case(i: usize) -> Mention {
        match i % 10 {
            0 | 2 | 4 | 6 | 8 => Mention::Direct,
            1 | 5 | 9 => Mention::Alias,
            _ => Mention::Absent,
        }
    }
}

/// One incident report and its right answer.
#[derive(Clone, Debug)]
pub struct Case {
    /// The report.
    pub text: String,
    /// How it names the service.
    pub mention: Mention,
    /// The right `service`: a service, or `unknown`.
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

/// Aliases of each service ([`SERVICES`] order): teams, product areas, features. None
/// contains the service's name.
const ALIASES: [[&str; 4]; 6] = [
    ["the login page", "single sign-on", "the identity team's service", "password resets"],
    ["invoicing", "the finance team's platform", "subscription renewals", "the invoices page"],
    ["autocomplete", "the query API", "the discovery team's index", "results ranking"],
    ["file uploads", "the blob store", "the infrastructure team's disks", "nightly backups"],
    ["push alerts", "the email sender", "SMS delivery", "the messaging team's queue"],
    ["checkout", "card processing", "the refunds flow", "the merchant team's API"],
];

/// Reports that name no service: the first word of each fills `{service}`'s place.
const ABSENT: [&str; 5] = [
    "an internal system",
    "one of our services",
    "a backend component",
    "the platform",
    "a production system",
];

/// The fixed case set: `n` reports from [`SEED`] (the first `n` of the same sequence).
pub fn cases(n: usize) -> Vec<Case> {
    let mut rng = Rng::new(SEED);
    let mut pick = |k: usize| (rng.next_u64() % k as u64) as usize;
    (0..n)
        .map(|i| {
            let template = TEMPLATES[pick(TEMPLATES.len())];
            let s = pick(SERVICES.len());
            let severity = SEVERITIES[pick(SEVERITIES.len())];
            let minutes = 1 + pick(240) as u64;
            let alias = ALIASES[s][pick(4)];
            let absent = ABSENT[pick(ABSENT.len())];
            let mention = Mention::of_case(i);
            let (named, service) = match mention {
                Mention::Direct => (SERVICES[s], SERVICES[s]),
                Mention::Alias => (alias, SERVICES[s]),
                Mention::Absent => (absent, "unknown"),
            };
            // "The {service} service" only reads well with a service's name.
            let template = if mention != Mention::Direct && template.contains("{service} service") {
                TEMPLATES[1]
            } else {
                template
            };
            let capital = named[..1].to_uppercase() + &named[1..];
            let text = template
                .replace("{service}", named)
                .replace("{Service}", &capital)
                .replace("{severity}", severity)
                .replace("{minutes}", &minutes.to_string());
            Case { text, mention, service, severity, minutes }
        })
        .collect()
}

/// How the prompt shows the answer's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptStyle {
    /// `{"service": ..., "severity": ..., "minutes": ...}`.
    Plain,
    /// A filled-in example: `{"service": "auth", "severity": "low", "minutes": 0}`.
    ExampleValue,
    /// Placeholders: `{"service": <service>, "severity": <severity>, "minutes": <integer>}`.
    Placeholder,
    /// A short `reasoning` first, then the answer.
    Reasoning,
}

/// The user message for a report.
pub fn prompt(case: &Case, style: PromptStyle) -> String {
    let shape = match style {
        PromptStyle::Plain => r#"{"service": ..., "severity": ..., "minutes": ...}"#,
        PromptStyle::ExampleValue => r#"{"service": "auth", "severity": "low", "minutes": 0}"#,
        PromptStyle::Placeholder => {
            r#"{"service": <service>, "severity": <severity>, "minutes": <integer>}"#
        }
        PromptStyle::Reasoning => {
            r#"{"reasoning": "<one short sentence>", "service": ..., "severity": ..., "minutes": ...}"#
        }
    };
    let first = if style == PromptStyle::Reasoning {
        " First explain in one short sentence which service the report is about."
    } else {
        ""
    };
    format!(
        "Extract the service, the severity and the duration in minutes from this incident \
         report.{first} Answer only with JSON: {shape}\n\nReport: {}",
        case.text
    )
}

/// The answer's JSON Schema: `unknown` adds `"unknown"` to the service enum, `reasoning`
/// a bounded `reasoning` string before the answer fields.
pub fn schema(unknown: bool, reasoning: bool) -> serde_json::Value {
    let mut services: Vec<&str> = SERVICES.to_vec();
    if unknown {
        services.push("unknown");
    }
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    if reasoning {
        properties.insert(
            "reasoning".into(),
            serde_json::json!({
                "type": "string",
                "maxLength": MAX_REASONING_CHARS,
                "pattern": "^[ !#-\\[\\]-~]*$"
            }),
        );
        required.push("reasoning");
    }
    properties.insert("service".into(), serde_json::json!({"type": "string", "enum": services}));
    properties.insert("severity".into(), serde_json::json!({"type": "string", "enum": SEVERITIES}));
    properties.insert(
        "minutes".into(),
        serde_json::json!({"type": "integer", "minimum": 0, "maximum": 99999}),
    );
    required.extend(["service", "severity", "minutes"]);
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// One mode of the experiment.
#[derive(Clone, Copy, Debug)]
pub struct ModeSpec {
    /// Its name in [`MODES`].
    pub name: &'static str,
    /// The prompt.
    pub prompt: PromptStyle,
    /// The grammar: `None` for no constraint, else (`unknown`, `reasoning`) of [`schema`].
    pub schema: Option<(bool, bool)>,
    /// The token budget.
    pub max_tokens: usize,
}

/// The modes, by name.
pub fn mode(name: &str) -> Option<ModeSpec> {
    let (prompt, schema, max_tokens) = match name {
        "prompt_only" => (PromptStyle::Plain, None, MAX_TOKENS),
        "constrained" => (PromptStyle::Plain, Some((false, false)), MAX_TOKENS),
        "cut_at_8" => (PromptStyle::Plain, Some((false, false)), 8),
        "with_unknown" => (PromptStyle::Plain, Some((true, false)), MAX_TOKENS),
        "reasoning_first" => (PromptStyle::Reasoning, Some((false, true)), MAX_REASONING_TOKENS),
        "example_value" => (PromptStyle::ExampleValue, Some((false, false)), MAX_TOKENS),
        "placeholder" => (PromptStyle::Placeholder, Some((false, false)), MAX_TOKENS),
        _ => return None,
    };
    let name = MODES.iter().find(|m| **m == name)?;
    Some(ModeSpec { name, prompt, schema, max_tokens })
}

/// The whitespace the answers' grammar allows: a line break and two spaces at most in
/// each place, so that the longest answer is short (see [`MAX_TOKENS`]).
pub fn schema_options() -> JsonSchemaOptions {
    JsonSchemaOptions { whitespace: Whitespace::Flexible { max_run: 2 }, ..Default::default() }
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

/// One answer of one mode.
#[derive(Clone, Debug)]
pub struct Record {
    /// How it scored.
    pub score: Score,
    /// `p_chosen` of its service value, when it wrote one.
    pub service_p: Option<f64>,
    /// The generation ended with a stop token.
    pub finished: bool,
    /// How the report named the service.
    pub mention: Mention,
}

/// The area under the ROC curve of `score` separating `right` (positives) from wrong
/// answers: the chance a right answer scores above a wrong one, ties counting half.
/// `None` when either class is empty.
pub fn auroc(items: &[(f64, bool)]) -> Option<f64> {
    let mut sorted: Vec<(f64, bool)> = items.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let positives = sorted.iter().filter(|x| x.1).count();
    let negatives = sorted.len() - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    // Mann-Whitney: the ranks of the positives, ties at their mean rank.
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j < sorted.len() && sorted[j].0 == sorted[i].0 {
            j += 1;
        }
        let mean_rank = (i + 1 + j) as f64 / 2.0;
        rank_sum += mean_rank * sorted[i..j].iter().filter(|x| x.1).count() as f64;
        i = j;
    }
    let p = positives as f64;
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * negatives as f64))
}

/// A 95% percentile bootstrap interval of [`auroc`] ([`BOOTSTRAP`] resamples, seeded).
pub fn auroc_interval(items: &[(f64, bool)]) -> Option<[f64; 2]> {
    auroc(items)?;
    let mut rng = Rng::new(SEED ^ items.len() as u64);
    let mut values: Vec<f64> = (0..BOOTSTRAP)
        .filter_map(|_| {
            let sample: Vec<(f64, bool)> = (0..items.len())
                .map(|_| items[(rng.next_u64() % items.len() as u64) as usize])
                .collect();
            auroc(&sample)
        })
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    Some([at(0.025), at(0.975)])
}

/// The valid records with a service confidence, least confident first (ties in case
/// order): (confidence, service right).
fn ranked(records: &[Record]) -> Vec<(f64, bool)> {
    let mut items: Vec<(f64, bool)> = records
        .iter()
        .filter(|r| r.score.valid)
        .filter_map(|r| r.service_p.map(|p| (p, r.score.service)))
        .collect();
    items.sort_by(|a, b| a.0.total_cmp(&b.0));
    items
}

/// Of the wrong services among `ranked` records, the share in the `share` least
/// confident; `None` when none is wrong.
pub fn caught(ranked: &[(f64, bool)], share: f64) -> Option<f64> {
    let wrong = ranked.iter().filter(|x| !x.1).count();
    if wrong == 0 {
        return None;
    }
    let k = (share * ranked.len() as f64).ceil() as usize;
    let hit = ranked[..k.min(ranked.len())].iter().filter(|x| !x.1).count();
    Some(hit as f64 / wrong as f64)
}

/// The service accuracy of the records left when the `share` least confident are set
/// aside.
fn accuracy_kept(ranked: &[(f64, bool)], share: f64) -> Option<f64> {
    let k = (share * ranked.len() as f64).ceil() as usize;
    let kept = &ranked[k.min(ranked.len())..];
    (!kept.is_empty()).then(|| kept.iter().filter(|x| x.1).count() as f64 / kept.len() as f64)
}

/// The shares of the flagging curve.
const CURVE: [f64; 11] = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5];

#[derive(Default)]
struct Tally {
    records: Vec<Record>,
    tokens: usize,
    model_ms: f64,
    mask_ms: f64,
}

fn pct(k: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        (1000.0 * k as f64 / n as f64).round() / 10.0
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Tally {
    fn count(&self, f: impl Fn(&Record) -> bool) -> usize {
        self.records.iter().filter(|r| f(r)).count()
    }

    fn summary(&self) -> serde_json::Value {
        let n = self.records.len();
        let s = |f: &dyn Fn(&Score) -> bool| pct(self.count(|r| f(&r.score)), n);
        let ranked = ranked(&self.records);
        let steps = self.tokens.saturating_sub(n).max(1);
        let by_mention: serde_json::Map<String, serde_json::Value> =
            [Mention::Direct, Mention::Alias, Mention::Absent]
                .iter()
                .map(|m| {
                    let of = self.count(|r| r.mention == *m);
                    let right = self.count(|r| r.mention == *m && r.score.service);
                    (m.as_str().to_string(), serde_json::json!(pct(right, of)))
                })
                .collect();
        serde_json::json!({
            "cases": n,
            "valid": s(&|x| x.valid),
            "all_right": s(&|x| x.all_right()),
            "service": s(&|x| x.service),
            "severity": s(&|x| x.severity),
            "minutes": s(&|x| x.minutes),
            "valid_but_wrong": s(&|x| x.valid && !x.all_right()),
            "finished": pct(self.count(|r| r.finished), n),
            "service_by_mention": by_mention,
            "auroc": auroc(&ranked).map(round3),
            "auroc_ci": auroc_interval(&ranked).map(|[a, b]| [round3(a), round3(b)]),
            "caught_at_10": caught(&ranked, FLAG_SHARE).map(round3),
            "flag_curve": CURVE.iter().map(|&q| serde_json::json!([q, accuracy_kept(&ranked, q).map(round3)])).collect::<Vec<_>>(),
            "tokens_per_answer": self.tokens as f64 / n.max(1) as f64,
            "model_ms_per_token": self.model_ms / steps as f64,
            "mask_ms_per_token": self.mask_ms / self.tokens.max(1) as f64,
        })
    }
}

fn compile(model: &Model, unknown: bool, reasoning: bool) -> Result<Arc<CompiledGrammar>, String> {
    Compiler::new(&model.vocab)
        .compile_json_schema_value(&schema(unknown, reasoning), &schema_options())
        .map_err(|e| e.to_string())
}

/// The `p_chosen` of the service value among the fields.
fn service_p(fields: &[Field]) -> Option<f64> {
    fields.iter().find(|f| f.pointer == "/service").map(|f| f.p_chosen)
}

/// Runs the experiment; prints the table, writes `--json` and `--plot`.
pub fn run(args: &ExtractArgs) -> Result<(), String> {
    let modes: Vec<ModeSpec> = if args.modes.is_empty() {
        MODES.iter().filter_map(|m| mode(m)).collect()
    } else {
        args.modes
            .iter()
            .map(|m| {
                mode(m)
                    .ok_or_else(|| format!("--modes: no mode {m:?} (modes: {})", MODES.join(", ")))
            })
            .collect::<Result<_, _>>()?
    };
    let path = grammask_model::model_path(args.model.as_deref()).map_err(|e| e.to_string())?;
    let mut model = grammask_model::Model::load(&path).map_err(|e| e.to_string())?;
    let mut grammars = std::collections::HashMap::new();
    for m in &modes {
        if let Some((unknown, reasoning)) = m.schema {
            if let std::collections::hash_map::Entry::Vacant(e) =
                grammars.entry((unknown, reasoning))
            {
                e.insert(compile(&model, unknown, reasoning)?);
            }
        }
    }
    // The unconstrained answers are read with the plain schema's grammar, unmasked.
    let follow = compile(&model, false, false)?;
    let cases = cases(args.cases);
    let mut tallies: Vec<Tally> = modes.iter().map(|_| Tally::default()).collect();
    let mut prefill_ms = 0.0;
    let mut prompt_tokens = 0;
    let mut prompts = 0usize;
    let start = Instant::now();
    for (i, case) in cases.iter().enumerate() {
        let mut prefilled: Vec<(PromptStyle, grammask_model::Prefilled)> = Vec::new();
        for (m, spec) in modes.iter().enumerate() {
            if !prefilled.iter().any(|p| p.0 == spec.prompt) {
                let ids = model
                    .chat_prompt(None, &prompt(case, spec.prompt))
                    .map_err(|e| e.to_string())?;
                let p = model.prefill(&ids).map_err(|e| e.to_string())?;
                prefill_ms += p.ms;
                prompt_tokens += ids.len();
                prompts += 1;
                prefilled.push((spec.prompt, p));
            }
            let from = &prefilled.iter().find(|p| p.0 == spec.prompt).expect("prefilled").1;
            let grammar = spec.schema.map(|k| &grammars[&k]);
            let options = GenerateOptions {
                max_tokens: spec.max_tokens,
                record_fields: true,
                follow: grammar.is_none().then(|| follow.clone()),
                ..GenerateOptions::default()
            };
            let g = model
                .generate_from(from, grammar, &options, &mut |_| {})
                .map_err(|e| e.to_string())?;
            let answer = String::from_utf8_lossy(&g.text);
            let score = Score::of(&answer, case);
            let record = Record {
                score,
                service_p: service_p(&g.fields),
                finished: g.stop == StopReason::Complete,
                mention: case.mention,
            };
            if args.verbose {
                eprintln!(
                    "[{i} {}] {:?} -> {answer:?} {score:?} p={:?}",
                    spec.name, case.text, record.service_p
                );
            }
            let t = &mut tallies[m];
            t.records.push(record);
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
    let prompts = prompts.max(1);
    println!(
        "{} cases (50% direct, 30% alias, 20% absent), greedy, {} (prompt {:.0} tokens, {:.0} ms on average)",
        cases.len(),
        path.file_name().and_then(|n| n.to_str()).unwrap_or("model"),
        prompt_tokens as f64 / prompts as f64,
        prefill_ms / prompts as f64
    );
    println!(
        "{:<16} {:>6} {:>6} {:>8} {:>8} {:>8} {:>10} {:>9} {:>6} {:>15} {:>8}",
        "mode",
        "valid",
        "right",
        "service",
        "severity",
        "minutes",
        "valid_wrong",
        "finished",
        "auroc",
        "auroc_ci",
        "caught10"
    );
    let mut out = serde_json::Map::new();
    for (spec, t) in modes.iter().zip(&tallies) {
        let s = t.summary();
        let f = |k: &str| s[k].as_f64().map_or("-".to_string(), |x| format!("{x}"));
        let ci =
            s["auroc_ci"].as_array().map_or("-".to_string(), |c| format!("[{}, {}]", c[0], c[1]));
        println!(
            "{:<16} {:>6} {:>6} {:>8} {:>8} {:>8} {:>10} {:>9} {:>6} {:>15} {:>8}",
            spec.name,
            f("valid"),
            f("all_right"),
            f("service"),
            f("severity"),
            f("minutes"),
            f("valid_but_wrong"),
            f("finished"),
            f("auroc"),
            ci,
            f("caught_at_10")
        );
        out.insert(spec.name.to_string(), s);
    }
    if let Some(plot) = &args.plot {
        draw(plot, &out)?;
    }
    if let Some(json) = &args.json {
        let doc = serde_json::json!({
            "cases": cases.len(),
            "mix": {"direct": 0.5, "alias": 0.3, "absent": 0.2},
            "model": path_name(&path),
            "modes": out,
        });
        std::fs::write(json, serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n")
            .map_err(|e| format!("{}: {e}", json.display()))?;
    }
    Ok(())
}

fn path_name(p: &Path) -> String {
    p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string()
}

/// Draws each mode's `flag_curve`: service accuracy of the records kept against the share
/// of least-confident records flagged.
fn draw(out: &Path, modes: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::new(out, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Service accuracy after flagging the least confident records", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..50.0, 0.0..100.0)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("records flagged, least confident first (%)")
        .y_desc("service right among the rest (%)")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (name, m)) in modes.iter().enumerate() {
        let points: Vec<(f64, f64)> = m["flag_curve"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| Some((p[0].as_f64()? * 100.0, p[1].as_f64()? * 100.0)))
            .collect();
        if points.is_empty() || name == "cut_at_8" {
            continue;
        }
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_case_set_is_fixed_and_mixed_as_stated() {
        let a = cases(200);
        assert_eq!(a.len(), 200);
        assert_eq!(
            a[..10].iter().map(|c| &c.text).collect::<Vec<_>>(),
            cases(10).iter().map(|c| &c.text).collect::<Vec<_>>()
        );
        let count = |m: Mention| a.iter().filter(|c| c.mention == m).count();
        assert_eq!(
            (count(Mention::Direct), count(Mention::Alias), count(Mention::Absent)),
            (100, 60, 40)
        );
        for c in &a {
            let text = c.text.to_lowercase();
            let named = SERVICES.iter().filter(|s| text.contains(*s)).count();
            match c.mention {
                Mention::Direct => assert!(text.contains(c.service), "{c:?}"),
                Mention::Alias => assert!(named == 0 && SERVICES.contains(&c.service), "{c:?}"),
                Mention::Absent => assert!(named == 0 && c.service == "unknown", "{c:?}"),
            }
            assert!(c.text.contains(&c.minutes.to_string()));
        }
        for s in SERVICES {
            assert!(a.iter().any(|c| c.service == s && c.mention == Mention::Alias));
        }
    }

    #[test]
    fn scoring() {
        let case = Case {
            text: String::new(),
            mention: Mention::Direct,
            service: "auth",
            severity: "low",
            minutes: 5,
        };
        let s = Score::of(r#" {"service": "auth", "severity": "low", "minutes": 5}"#, &case);
        assert!(s.all_right());
        let s = Score::of(r#"{"service": "auth", "severity": "high", "minutes": "5"}"#, &case);
        assert!(s.valid && s.service && !s.severity && !s.minutes);
        assert!(!Score::of(r#"{"service": "auth""#, &case).valid);
    }

    #[test]
    fn auroc_and_its_interval() {
        assert_eq!(auroc(&[(0.9, true), (0.8, true), (0.2, false)]), Some(1.0));
        assert_eq!(auroc(&[(0.1, true), (0.8, false)]), Some(0.0));
        assert_eq!(auroc(&[(0.5, true), (0.5, false)]), Some(0.5));
        assert_eq!(auroc(&[(0.5, true), (0.6, true)]), None);
        // 2 of the 4 (positive, negative) pairs ordered right, 1 tied.
        let items = [(0.9, true), (0.3, true), (0.5, false), (0.3, false)];
        assert_eq!(auroc(&items), Some(0.625));
        let [lo, hi] = auroc_interval(&items).unwrap();
        assert!(lo <= 0.625 && 0.625 <= hi && (0.0..=1.0).contains(&lo) && hi <= 1.0);
        let ranked = [(0.1, false), (0.2, true), (0.3, false), (0.9, true)];
        assert_eq!(caught(&ranked, 0.25), Some(0.5));
        assert_eq!(accuracy_kept(&ranked, 0.5), Some(0.5));
    }

    #[test]
    fn every_mode_has_a_spec_and_the_schemas_compile() {
        let vocab = grammask::byte_vocabulary();
        for m in MODES {
            let spec = mode(m).unwrap();
            if let Some((unknown, reasoning)) = spec.schema {
                Compiler::new(&vocab)
                    .compile_json_schema_value(&schema(unknown, reasoning), &schema_options())
                    .unwrap();
            }
        }
        assert!(mode("nope").is_none());
    }
}
