//! Runs the JSON-Schema-Test-Suite (one draft's folder: draft4, draft6, draft7,
//! draft2019-09, draft2020-12) through the converter, told the draft as a validator is,
//! and a matcher given by the caller, and compares the per-file counts with a checked-in
//! expectations file per draft. Shared by the reference-matcher test of grammask-syntax
//! and the engine test of the root crate.

#![allow(dead_code)]

use grammask_syntax::json_schema::{
    json_schema_to_grammar, Draft, FormatMode, JsonSchemaOptions, PropertyOrder,
};
use grammask_syntax::Grammar;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Counts for one file of the suite.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileCounts {
    pub compiled: u64,
    pub refused: u64,
    pub right: u64,
    pub wrong: u64,
    /// Answers that differ from the suite's on purpose ([`DIVERGENCES`]).
    pub divergent: u64,
}

/// The suite's folders, one per draft, oldest first.
pub const DRAFTS: &[&str] = &["draft4", "draft6", "draft7", "draft2019-09", "draft2020-12"];

/// Tests grammask answers otherwise than the suite on purpose, in every draft: (file,
/// test description, why). A listed test that gets the suite's answer fails the run (the list is stale).
pub const DIVERGENCES: &[(&str, &str, &str)] = &[
    ("optional/format/date-time.json", "a valid date-time with a leap second, UTC", LEAP),
    (
        "optional/format/date-time.json",
        "a valid date-time with a leap second, with minus offset",
        LEAP,
    ),
    ("optional/format/time.json", "a valid time string with leap second, Zulu", LEAP),
    ("optional/format/time.json", "valid leap second, zero time-offset", LEAP),
    ("optional/format/time.json", "valid leap second, positive time-offset", LEAP),
    ("optional/format/time.json", "valid leap second, large positive time-offset", LEAP),
    ("optional/format/time.json", "valid leap second, negative time-offset", LEAP),
    ("optional/format/time.json", "valid leap second, large negative time-offset", LEAP),
];

const LEAP: &str =
    "second 60 is refused: a generator never needs a leap second, and validators disagree on it";

/// The suite's folder, from the manifest folder of the crate running the test.
pub fn suite_dir(manifest_dir: &str) -> PathBuf {
    let own = Path::new(manifest_dir).join("tests/data/json-schema-test-suite");
    if own.exists() {
        own
    } else {
        Path::new(manifest_dir).join("grammar-syntax/tests/data/json-schema-test-suite")
    }
}

/// Decides matches for one compiled grammar.
pub type Acceptor = Box<dyn FnMut(&str) -> bool>;

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

/// The remote documents, by the URIs the suite uses for them.
pub fn remotes(root: &Path) -> Vec<(String, Value)> {
    let dir = root.join("remotes");
    let mut files = Vec::new();
    collect(&dir, &mut files);
    files
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(&dir).ok()?.to_string_lossy().replace('\\', "/");
            let text = std::fs::read_to_string(&p).ok()?;
            Some((format!("http://localhost:1234/{rel}"), serde_json::from_str(&text).ok()?))
        })
        .collect()
}

/// Runs every file of one draft's folder (one of [`DRAFTS`]). `prepare(grammar)`
/// compiles a grammar into a matcher (an error counts the group as refused). Prints wrong
/// answers; returns counts by file.
pub fn run(
    root: &Path,
    draft: &str,
    verbose: bool,
    prepare: &mut dyn FnMut(&Grammar) -> Result<Acceptor, String>,
) -> BTreeMap<String, FileCounts> {
    let dir = root.join(draft);
    let named = Draft::from_name(draft).expect("a draft folder of the suite");
    let mut files = Vec::new();
    collect(&dir, &mut files);
    let remote_documents = remotes(root);
    let mut result = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(&path).unwrap();
        let groups: Vec<Value> = serde_json::from_str(&text).unwrap();
        let raw_data = raw_test_data(&text);
        let format = if rel.starts_with("optional/format") {
            FormatMode::Assert
        } else {
            FormatMode::Annotation
        };
        let opts = JsonSchemaOptions {
            format,
            property_order: PropertyOrder::Any,
            remote_documents: remote_documents.clone(),
            draft: Some(named),
            ..JsonSchemaOptions::default()
        };
        let mut counts = FileCounts::default();
        for (g, group) in groups.iter().enumerate() {
            let description = group["description"].as_str().unwrap_or("");
            match json_schema_to_grammar(&group["schema"], &opts) {
                Err(e) => {
                    counts.refused += 1;
                    assert!(e.errors().next().is_some(), "{rel}: refused without an error");
                    if verbose {
                        println!("REFUSED {draft}/{rel} / {description}: {e}");
                    }
                }
                Ok(converted) => {
                    let mut accepts = match prepare(&converted.grammar) {
                        Ok(a) => a,
                        Err(e) => {
                            counts.refused += 1;
                            println!("REFUSED BY THE ENGINE {draft}/{rel} / {description}: {e}");
                            continue;
                        }
                    };
                    counts.compiled += 1;
                    for (t, test) in group["tests"].as_array().into_iter().flatten().enumerate() {
                        let data = raw_data[g][t].clone();
                        let valid = test["valid"].as_bool().unwrap_or(false);
                        let name = test["description"].as_str().unwrap_or("");
                        if DIVERGENCES.iter().any(|(f, t, _)| *f == rel && *t == name) {
                            assert_ne!(
                                accepts(&data),
                                valid,
                                "{rel} / {name}: listed as a divergence, but it agrees"
                            );
                            counts.divergent += 1;
                            continue;
                        }
                        if accepts(&data) == valid {
                            counts.right += 1;
                        } else {
                            counts.wrong += 1;
                            println!(
                                "WRONG {draft}/{rel} / {description} / {}: {data} should be {}",
                                test["description"].as_str().unwrap_or(""),
                                if valid { "accepted" } else { "rejected" }
                            );
                        }
                    }
                }
            }
        }
        result.insert(rel, counts);
    }
    result
}

/// The `data` of each test of each group, as the file writes it without its whitespace:
/// numbers keep their text (`1.0`, 53-digit integers), objects their key order.
fn raw_test_data(text: &str) -> Vec<Vec<String>> {
    use serde_json::value::RawValue;
    type Fields<'t> = BTreeMap<String, &'t RawValue>;
    let groups: Vec<Fields> = serde_json::from_str(text).unwrap();
    groups
        .iter()
        .map(|g| {
            let tests: Vec<Fields> = serde_json::from_str(g["tests"].get()).unwrap();
            tests.iter().map(|t| compact(t["data"].get())).collect()
        })
        .collect()
}

/// JSON text without the whitespace between its tokens.
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !c.is_ascii_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// The counts as JSON: `{file: {compiled, refused, right, wrong}}` plus a total.
pub fn to_json(counts: &BTreeMap<String, FileCounts>) -> Value {
    let mut map = Map::new();
    let mut total = FileCounts::default();
    for (file, c) in counts {
        map.insert(
            file.clone(),
            json!({"compiled": c.compiled, "refused": c.refused, "right": c.right, "wrong": c.wrong, "divergent": c.divergent}),
        );
        total.compiled += c.compiled;
        total.refused += c.refused;
        total.right += c.right;
        total.wrong += c.wrong;
        total.divergent += c.divergent;
    }
    map.insert(
        "TOTAL".into(),
        json!({"compiled": total.compiled, "refused": total.refused, "right": total.right, "wrong": total.wrong, "divergent": total.divergent}),
    );
    Value::Object(map)
}

/// Compares with the expectations file: fails on any regression (fewer compiled or right
/// answers, any wrong answer), reports improvements, and rewrites the file when
/// `GRAMMASK_UPDATE_EXPECTED=1`.
pub fn check_expectations(actual: &Value, expected_path: &Path) {
    let update = std::env::var("GRAMMASK_UPDATE_EXPECTED").is_ok_and(|v| v == "1");
    let pretty = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if update {
        std::fs::write(expected_path, &pretty).unwrap();
        println!("updated {}", expected_path.display());
        return;
    }
    let expected: Value = std::fs::read_to_string(expected_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let mut regressions = Vec::new();
    let mut improvements = Vec::new();
    for (file, a) in actual.as_object().unwrap() {
        let e = &expected[file];
        for key in ["compiled", "right"] {
            let (av, ev) = (a[key].as_u64().unwrap_or(0), e[key].as_u64().unwrap_or(0));
            if av < ev {
                regressions.push(format!("{file}: {key} {ev} -> {av}"));
            } else if av > ev {
                improvements.push(format!("{file}: {key} {ev} -> {av}"));
            }
        }
        let wrong = a["wrong"].as_u64().unwrap_or(0);
        if wrong > e["wrong"].as_u64().unwrap_or(0) {
            regressions.push(format!("{file}: wrong answers {} -> {wrong}", e["wrong"]));
        }
    }
    for line in &improvements {
        println!("improved: {line}");
    }
    if !improvements.is_empty() {
        println!(
            "update {} with GRAMMASK_UPDATE_EXPECTED=1 to record the improvements",
            expected_path.display()
        );
    }
    assert!(
        regressions.is_empty(),
        "regressions against {} (run with GRAMMASK_UPDATE_EXPECTED=1 if intended):\n{}",
        expected_path.display(),
        regressions.join("\n")
    );
    assert_eq!(actual["TOTAL"]["wrong"], 0, "wrong answers on compiled groups");
}
