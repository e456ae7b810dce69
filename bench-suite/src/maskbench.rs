//! MaskBench runner: one schema file at a time, and the counts over a corpus.
//!
//! A MaskBench file is `{description, meta, schema, tests: [{description, valid, data}]}`.
//! [`run_file`] converts the schema (with the [`JsonSchemaOptions`] given), compiles it for the
//! byte vocabulary, and matches every test instance serialized compactly by serde_json
//! (keys in file order: the workspace enables `preserve_order`). [`run_file_with_timeout`]
//! does that work on a worker thread, catching panics, and stops waiting after a timeout;
//! a worker that overruns is abandoned (Rust cannot stop a thread): it keeps its core
//! until it finishes, and its result is dropped. [`Totals`] adds outcomes up, per subset
//! and by refusal keyword.
//!
//! This module depends only on grammask, serde_json and std, so that the root crate's
//! test (`tests/maskbench.rs`) can include it; the parallel driver lives in
//! `grammask-bench maskbench`.

use grammask::syntax::diagnostic::Category;
use grammask::syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
use grammask::{CompileError, Compiler, Diagnostic, Matcher, Vocabulary};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The result of one test instance of a compiled schema.
#[derive(Clone, Debug)]
pub struct TestResult {
    /// Index of the test in the file.
    pub index: usize,
    /// The test's `valid` field.
    pub valid: bool,
    /// Whether the grammar accepted the compact serialization.
    pub accepted: bool,
    /// The test's description.
    pub description: String,
}

/// What happened to one schema file.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// The schema compiled; every test was matched.
    Compiled {
        /// One result per test.
        tests: Vec<TestResult>,
        /// Milliseconds of conversion and engine compilation.
        compile_ms: f64,
    },
    /// The converter or the engine refused the schema with an explained error.
    Refused {
        /// The keyword (or limit) the refusal names.
        keyword: String,
        /// The first error, rendered.
        message: String,
    },
    /// Conversion, compilation or matching panicked.
    Panicked(String),
    /// The work took longer than the timeout (the worker was abandoned).
    TimedOut,
    /// The file could not be read or is not in MaskBench's format.
    Unreadable(String),
}

/// One file's report.
#[derive(Clone, Debug)]
pub struct FileReport {
    /// The file name.
    pub name: String,
    /// The subset the file belongs to (see [`subset_of`]).
    pub subset: String,
    /// What happened.
    pub outcome: Outcome,
}

/// The subset of a MaskBench file name: the part before `---` (`Github_easy---o1.json`),
/// or, for names without it, the stem without a trailing `_<number>` (`BFCL_simple_3`).
pub fn subset_of(name: &str) -> String {
    if let Some((subset, _)) = name.split_once("---") {
        return subset.to_string();
    }
    let stem = name.strip_suffix(".json").unwrap_or(name);
    match stem.rsplit_once('_') {
        Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => {
            head.to_string()
        }
        _ => stem.to_string(),
    }
}

/// The `.json` files of `dir`, sorted by name, keeping those whose name contains `filter`.
pub fn list_files(dir: &Path, filter: Option<&str>) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            filter.is_none_or(|f| name.contains(f))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Every `every`-th file of [`list_files`] with its schema (the file's `schema` member),
/// leaving out files that cannot be read or parsed: the sample the in-process examples
/// walk.
pub fn sampled_schemas(dir: &Path, every: usize) -> Result<Vec<(PathBuf, Value)>, String> {
    let files = list_files(dir, None).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(files
        .into_iter()
        .step_by(every.max(1))
        .filter_map(|f| {
            let bytes = std::fs::read(&f).ok()?;
            let mut v: Value = serde_json::from_slice(&bytes).ok()?;
            let schema = v.get_mut("schema")?.take();
            Some((f, schema))
        })
        .collect())
}

/// JSON Schema keywords a refusal can be about (used to read the keyword off a pointer).
const KEYWORDS: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "$schema",
    "$id",
    "id",
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "nullable",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
];

/// Keywords whose children are named by the schema author (a segment after them is a
/// property or definition name, not a keyword).
const NAMING: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
];

/// The keyword a refusal names: the first backquoted keyword of the message, else the
/// last keyword segment of its JSON pointer, else the message's category. Limits are
/// `limit:NAME`; the engine's own refusals `engine:...`.
pub fn keyword_of(d: &Diagnostic) -> String {
    if let Category::Limit(name) = d.category {
        return format!("limit:{name}");
    }
    let mut rest = d.message.as_str();
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        let word = &after[..end];
        if KEYWORDS.contains(&word) {
            return word.to_string();
        }
        rest = &after[end + 1..];
    }
    if let Some(pointer) = &d.pointer {
        // The keyword is the pointer's last segment, unless that segment is a name (a
        // property called `not` under `properties`).
        let segments: Vec<&str> = pointer.split('/').collect();
        if let [.., parent, last] = segments.as_slice() {
            if !NAMING.contains(parent) && KEYWORDS.contains(last) {
                return last.to_string();
            }
        }
    }
    match d.category {
        Category::Invalid => "invalid".to_string(),
        _ => "other".to_string(),
    }
}

/// The keyword and rendered message of a refusal.
fn refusal_of(err: &CompileError) -> (String, String) {
    match err {
        CompileError::Grammar(ds) => {
            let first = ds.0.iter().find(|d| d.is_error()).or(ds.0.first());
            match first {
                Some(d) => (keyword_of(d), d.render("schema", "")),
                None => ("other".to_string(), err.to_string()),
            }
        }
        CompileError::Limit { name, .. } => (format!("limit:{name}"), err.to_string()),
        CompileError::Unsupported(_) => ("engine:unsupported".to_string(), err.to_string()),
        other => ("engine:other".to_string(), other.to_string()),
    }
}

/// Converts, compiles and matches one file, on the calling thread.
pub fn run_file(path: &Path, vocab: &Arc<Vocabulary>, options: &JsonSchemaOptions) -> Outcome {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Outcome::Unreadable(e.to_string()),
    };
    let file: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return Outcome::Unreadable(format!("not JSON: {e}")),
    };
    let (Some(schema), Some(Value::Array(tests))) = (file.get("schema"), file.get("tests")) else {
        return Outcome::Unreadable("no `schema` and `tests`".to_string());
    };
    let start = Instant::now();
    let compiled = json_schema_to_grammar(schema, options)
        .map_err(CompileError::Grammar)
        .and_then(|c| Compiler::from_arc(vocab.clone()).compile_grammar(&c.grammar));
    let compiled = match compiled {
        Ok(c) => c,
        Err(e) => {
            let (keyword, message) = refusal_of(&e);
            return Outcome::Refused { keyword, message };
        }
    };
    let compile_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut results = Vec::with_capacity(tests.len());
    for (index, test) in tests.iter().enumerate() {
        let (Some(valid), Some(data)) =
            (test.get("valid").and_then(Value::as_bool), test.get("data"))
        else {
            return Outcome::Unreadable(format!("test {index} has no `valid` and `data`"));
        };
        let instance = serde_json::to_string(data).unwrap_or_default();
        let mut m = Matcher::new(compiled.clone());
        let accepted = m.accept_bytes(instance.as_bytes()).is_ok() && m.can_terminate();
        let description =
            test.get("description").and_then(Value::as_str).unwrap_or_default().to_string();
        results.push(TestResult { index, valid, accepted, description });
    }
    Outcome::Compiled { tests: results, compile_ms }
}

/// [`run_file`] on a worker thread, with panics caught; gives up waiting after `timeout`
/// and abandons the worker (it runs on until it finishes, its result is dropped).
pub fn run_file_with_timeout(
    path: &Path,
    vocab: &Arc<Vocabulary>,
    options: &JsonSchemaOptions,
    timeout: Duration,
) -> FileReport {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
    let subset = subset_of(&name);
    let (tx, rx) = std::sync::mpsc::channel();
    let (worker_path, worker_vocab, options) = (path.to_path_buf(), vocab.clone(), options.clone());
    let spawned = std::thread::Builder::new()
        .name(format!("maskbench {name}"))
        .stack_size(64 << 20)
        .spawn(move || {
            let outcome =
                std::panic::catch_unwind(|| run_file(&worker_path, &worker_vocab, &options))
                    .unwrap_or_else(|payload| {
                        let message = payload
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| payload.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "panic".to_string());
                        Outcome::Panicked(message)
                    });
            let _ = tx.send(outcome);
        });
    let outcome = match spawned {
        Err(e) => Outcome::Panicked(format!("cannot start a worker thread: {e}")),
        Ok(_handle) => match rx.recv_timeout(timeout) {
            Ok(outcome) => outcome,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Outcome::TimedOut,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Outcome::Panicked("the worker ended without a result".to_string())
            }
        },
    };
    FileReport { name, subset, outcome }
}

/// Counts of one subset or of the whole corpus.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Schema files.
    pub schemas: usize,
    /// Schemas compiled.
    pub compiled: usize,
    /// Schemas refused with an explained error.
    pub unsupported: usize,
    /// Valid instances accepted.
    pub valid_accepted: usize,
    /// Valid instances rejected.
    pub valid_rejected: usize,
    /// Invalid instances rejected.
    pub invalid_rejected: usize,
    /// Invalid instances accepted (wrong answers).
    pub invalid_accepted: usize,
    /// Schemas whose work panicked.
    pub panics: usize,
    /// Schemas over the timeout.
    pub timeouts: usize,
    /// Files that could not be read as MaskBench files.
    pub unreadable: usize,
}

impl Counts {
    fn add(&mut self, outcome: &Outcome) {
        self.schemas += 1;
        match outcome {
            Outcome::Compiled { tests, .. } => {
                self.compiled += 1;
                for t in tests {
                    match (t.valid, t.accepted) {
                        (true, true) => self.valid_accepted += 1,
                        (true, false) => self.valid_rejected += 1,
                        (false, false) => self.invalid_rejected += 1,
                        (false, true) => self.invalid_accepted += 1,
                    }
                }
            }
            Outcome::Refused { .. } => self.unsupported += 1,
            Outcome::Panicked(_) => self.panics += 1,
            Outcome::TimedOut => self.timeouts += 1,
            Outcome::Unreadable(_) => self.unreadable += 1,
        }
    }

    /// `compiled / schemas` (1 for no schemas).
    pub fn compiled_ratio(&self) -> f64 {
        if self.schemas == 0 {
            1.0
        } else {
            self.compiled as f64 / self.schemas as f64
        }
    }

    /// The counts as a JSON object.
    pub fn to_json(&self) -> Value {
        json!({
            "schemas": self.schemas, "compiled": self.compiled,
            "compiled_ratio": (self.compiled_ratio() * 1e4).round() / 1e4,
            "unsupported": self.unsupported, "valid_accepted": self.valid_accepted,
            "valid_rejected": self.valid_rejected, "invalid_rejected": self.invalid_rejected,
            "invalid_accepted": self.invalid_accepted, "panics": self.panics,
            "timeouts": self.timeouts, "unreadable": self.unreadable,
        })
    }
}

/// A wrong answer or a failure worth listing: the file, the test, and what happened.
#[derive(Clone, Debug)]
pub struct Case {
    /// The file name.
    pub file: String,
    /// The test's index, when the case is about one test.
    pub test: Option<usize>,
    /// The test's description or the failure's message.
    pub detail: String,
}

impl Case {
    fn to_json(&self) -> Value {
        json!({"file": self.file, "test": self.test, "detail": self.detail})
    }
}

/// Everything counted over a corpus.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// All files.
    pub total: Counts,
    /// Per subset.
    pub subsets: BTreeMap<String, Counts>,
    /// Refused schemas by keyword.
    pub refusals: BTreeMap<String, usize>,
    /// Every refused schema: file, keyword, message.
    pub refused: Vec<(String, String, String)>,
    /// Valid instances rejected.
    pub valid_rejected: Vec<Case>,
    /// Invalid instances accepted.
    pub invalid_accepted: Vec<Case>,
    /// Panics, timeouts and unreadable files.
    pub failures: Vec<Case>,
    /// Sum of the compile times of compiled schemas, in milliseconds.
    pub compile_ms: f64,
    /// The slowest compiles: (milliseconds, file), at most 10, slowest first.
    pub slowest: Vec<(f64, String)>,
}

impl Totals {
    /// Adds one file's report.
    pub fn add(&mut self, report: &FileReport) {
        self.total.add(&report.outcome);
        self.subsets.entry(report.subset.clone()).or_default().add(&report.outcome);
        let file = &report.name;
        match &report.outcome {
            Outcome::Compiled { tests, compile_ms } => {
                self.compile_ms += compile_ms;
                self.slowest.push((*compile_ms, file.clone()));
                self.slowest.sort_by(|a, b| b.0.total_cmp(&a.0));
                self.slowest.truncate(10);
                for t in tests {
                    let case = Case {
                        file: file.clone(),
                        test: Some(t.index),
                        detail: t.description.clone(),
                    };
                    match (t.valid, t.accepted) {
                        (true, false) => self.valid_rejected.push(case),
                        (false, true) => self.invalid_accepted.push(case),
                        _ => {}
                    }
                }
            }
            Outcome::Refused { keyword, message } => {
                *self.refusals.entry(keyword.clone()).or_default() += 1;
                self.refused.push((file.clone(), keyword.clone(), message.clone()));
            }
            Outcome::Panicked(message) => self.failures.push(Case {
                file: file.clone(),
                test: None,
                detail: format!("panic: {message}"),
            }),
            Outcome::TimedOut => self.failures.push(Case {
                file: file.clone(),
                test: None,
                detail: "timeout".to_string(),
            }),
            Outcome::Unreadable(message) => self.failures.push(Case {
                file: file.clone(),
                test: None,
                detail: format!("unreadable: {message}"),
            }),
        }
    }

    /// Refusal keywords, most frequent first.
    pub fn refusals_by_count(&self) -> Vec<(String, usize)> {
        let mut v: Vec<(String, usize)> =
            self.refusals.iter().map(|(k, &n)| (k.clone(), n)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// Everything as one JSON object: the total counts at the top level, then `subsets`,
    /// `refusals` (by keyword), the listed cases and every refusal.
    pub fn to_json(&self) -> Value {
        let mut out = self.total.to_json();
        let obj = out.as_object_mut().expect("counts are an object");
        let subsets: serde_json::Map<String, Value> =
            self.subsets.iter().map(|(k, c)| (k.clone(), c.to_json())).collect();
        obj.insert("subsets".into(), Value::Object(subsets));
        let refusals: serde_json::Map<String, Value> =
            self.refusals_by_count().into_iter().map(|(k, n)| (k, json!(n))).collect();
        obj.insert("refusals".into(), Value::Object(refusals));
        let cases = |v: &[Case]| Value::Array(v.iter().map(Case::to_json).collect());
        obj.insert("valid_rejected_cases".into(), cases(&self.valid_rejected));
        obj.insert("invalid_accepted_cases".into(), cases(&self.invalid_accepted));
        obj.insert("failures".into(), cases(&self.failures));
        obj.insert("compile_ms_total".into(), json!(self.compile_ms.round()));
        let slowest: Vec<Value> =
            self.slowest.iter().map(|(ms, f)| json!({"file": f, "ms": ms.round()})).collect();
        obj.insert("slowest_compiles".into(), Value::Array(slowest));
        let refused: Vec<Value> = self
            .refused
            .iter()
            .map(|(f, k, m)| json!({"file": f, "keyword": k, "message": m}))
            .collect();
        obj.insert("refused".into(), Value::Array(refused));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subsets() {
        assert_eq!(subset_of("Github_easy---o10008.json"), "Github_easy");
        assert_eq!(subset_of("BFCL_simple_12.json"), "BFCL_simple");
        assert_eq!(subset_of("JME_0.json"), "JME");
    }

    #[test]
    fn keywords() {
        let d = Diagnostic::at_pointer("/properties/a/uniqueItems", "x is not expressible");
        assert_eq!(keyword_of(&d), "uniqueItems");
        let d = Diagnostic::at_pointer("/properties/not", "`oneOf` branches overlap");
        assert_eq!(keyword_of(&d), "oneOf");
        let d = Diagnostic::at_pointer("/properties/not", "something");
        assert_eq!(keyword_of(&d), "invalid");
    }
}
