//! The documents grammask lets a model write, checked by an independent JSON Schema
//! validator (the `jsonschema` crate, formats asserted): seeded masked random walks over
//! a MaskBench sample (every [`STRIDE`]-th file, or `GRAMMASK_VALIDATION_STRIDE`; the corpus comes from
//! `GRAMMASK_MASKBENCH`) and over the schemas of the vendored JSON-Schema-Test-Suite, on
//! the Llama-3 vocabulary (`GRAMMASK_TOKENIZERS`; o200k without it, said loudly).
//!
//! Every walk that ends with the stop token must be JSON the validator accepts. A document
//! it rejects is a bug of grammask, unless [`VALIDATOR_DIFFERENCES`] lists the schema with
//! the reason the validator is wrong. Prints how many schemas compiled, how many walks
//! finished, and how many documents the validator checked.

#[path = "support/walk.rs"]
mod walker;

use grammask::syntax::json_schema::JsonSchemaOptions;
use grammask::{Compiler, Vocabulary};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use walker::{structural_tokens, walk, WalkConfig};

/// One MaskBench file in this many is walked (`GRAMMASK_VALIDATION_STRIDE` overrides it:
/// 1 walks the whole corpus, the long run of BENCHMARKS.md).
const STRIDE: usize = 40;
/// Walks per schema.
const WALKS: u64 = 2;
const CONFIG: WalkConfig = WalkConfig { max_steps: 160, random_steps: 20, beam: false };

/// Schemas on which the validator is wrong, with the reason: (file or test-suite group,
/// why). A document of one of them that the validator rejects is not counted as a bug.
const VALIDATOR_DIFFERENCES: &[(&str, &str)] = &[];

fn vocabulary() -> Arc<Vocabulary> {
    if let Some(dir) = std::env::var_os("GRAMMASK_TOKENIZERS") {
        let path = Path::new(&dir).join("llama3/tokenizer.json");
        if path.is_file() {
            return Arc::new(Vocabulary::from_tokenizer_json(&path).unwrap());
        }
    }
    eprintln!(
        "\n*** independent validation on o200k: GRAMMASK_TOKENIZERS/llama3/tokenizer.json \
         is missing (scripts/fetch-tokenizers.sh) ***\n"
    );
    Arc::new(Vocabulary::load("o200k").unwrap())
}

/// Why the validator's rejection of `text` says nothing about grammask, if it does not:
/// it reads numbers as f64, so `-0` is the float -0.0 (not an integer to it, though JSON
/// Schema counts -0 as the integer 0), and a number of more than 15 significant digits is
/// rounded (a fraction may vanish, a bound be crossed).
fn validator_limitation(text: &str, errors: &[String]) -> Option<&'static str> {
    if errors.iter().all(|e| e.starts_with("-0.0 is not")) {
        return Some("-0 read as the float -0.0");
    }
    if long_numbers(text) {
        return Some("a number of more than 15 significant digits");
    }
    None
}

/// Whether a JSON text holds a number literal with more than 15 significant digits
/// (outside strings).
fn long_numbers(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else if b == b'"' {
            in_string = true;
        } else if b.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && matches!(bytes[i], b'0'..=b'9' | b'.') {
                i += 1;
            }
            let digits = text[start..i].trim_start_matches(['0', '.']);
            if digits.bytes().filter(u8::is_ascii_digit).count() > 15 {
                return true;
            }
            continue;
        }
        i += 1;
    }
    false
}

#[derive(Default)]
struct Counts {
    schemas: usize,
    compiled: usize,
    validator_refused: usize,
    walks: usize,
    /// Tokens taken over all walks.
    steps: usize,
    finished: usize,
    checked: usize,
    /// Documents the validator cannot judge, by reason.
    beyond_validator: std::collections::BTreeMap<&'static str, usize>,
}

/// Walks `schema` (named `name`) and validates what the walks write against
/// `validated_against` (the same schema, but for the check that a wrong document is seen);
/// pushes each problem to `failures`.
fn check_schema(
    compiler: &Compiler,
    structural: &[u32],
    name: &str,
    schema: &Value,
    validated_against: &Value,
    counts: &mut Counts,
    failures: &mut Vec<String>,
) {
    counts.schemas += 1;
    let Ok(grammar) = compiler.compile_json_schema_value(schema, &JsonSchemaOptions::default())
    else {
        return;
    };
    counts.compiled += 1;
    let Ok(validator) =
        jsonschema::options().should_validate_formats(true).build(validated_against)
    else {
        counts.validator_refused += 1;
        return;
    };
    let excused = VALIDATOR_DIFFERENCES.iter().any(|(n, _)| *n == name);
    let start = std::time::Instant::now();
    for seed in 0..WALKS {
        counts.walks += 1;
        // Seeds differ by schema, so that schemas which start alike are not walked alike.
        let seed = name
            .bytes()
            .fold(seed * 104_729 + 17, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        let w = walk(&grammar, CONFIG, structural, seed, name, &mut |_| {});
        counts.steps += w.steps;
        if !w.reached_eos {
            if std::env::var_os("GRAMMASK_VALIDATION_VERBOSE").is_some() {
                eprintln!("{name} seed {seed}: unfinished: {:?}", String::from_utf8_lossy(&w.text));
            }
            continue;
        }
        counts.finished += 1;
        let text = String::from_utf8_lossy(&w.text);
        let document: Value = match serde_json::from_slice(&w.text) {
            Ok(v) => v,
            Err(e) if e.to_string().contains("number out of range") => {
                // JSON without a limit on numbers (RFC 8259 section 6); serde_json reads f64.
                *counts.beyond_validator.entry("a number beyond f64's range").or_default() += 1;
                continue;
            }
            Err(e) => {
                failures.push(format!("{name} seed {seed}: not JSON ({e}): {text}"));
                continue;
            }
        };
        counts.checked += 1;
        let errors: Vec<String> = validator
            .iter_errors(&document)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        if errors.is_empty() || excused {
            continue;
        }
        if let Some(reason) = validator_limitation(&text, &errors) {
            *counts.beyond_validator.entry(reason).or_default() += 1;
            continue;
        }
        failures.push(format!("{name} seed {seed}: {text}\n    {}", errors.join("\n    ")));
    }
    if std::env::var_os("GRAMMASK_VALIDATION_VERBOSE").is_some() {
        eprintln!("{name}: {:.2} s", start.elapsed().as_secs_f64());
    }
}

/// The `.json` files of a directory, by name.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn report(label: &str, counts: &Counts, failures: &[String]) {
    eprintln!(
        "{label}: {} schemas, {} compiled, {} the validator could not build; {} walks ({} \
         tokens), {} finished, {} documents validated, {} rejected",
        counts.schemas,
        counts.compiled,
        counts.validator_refused,
        counts.walks,
        counts.steps,
        counts.finished,
        counts.checked,
        failures.len()
    );
    for (reason, n) in &counts.beyond_validator {
        eprintln!("{label}: {n} documents not judged by the validator: {reason}");
    }
    assert!(
        failures.is_empty(),
        "{label}: {} documents grammask allowed are invalid:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn maskbench_walks_are_valid_documents() {
    let Some(dir) = std::env::var_os("GRAMMASK_MASKBENCH") else {
        eprintln!(
            "\n*** SKIPPED: independent validation of MaskBench walks needs the corpus; set \
             GRAMMASK_MASKBENCH to its directory ***\n"
        );
        return;
    };
    let files = json_files(Path::new(&dir));
    let vocab = vocabulary();
    let compiler = Compiler::from_arc(vocab.clone());
    let structural = structural_tokens(&vocab);
    let (mut counts, mut failures) = (Counts::default(), Vec::new());
    let stride = std::env::var("GRAMMASK_VALIDATION_STRIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(STRIDE);
    for path in files.iter().step_by(stride) {
        let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        let schema = &file["schema"];
        check_schema(&compiler, &structural, &name, schema, schema, &mut counts, &mut failures);
    }
    report("MaskBench", &counts, &failures);
    assert!(counts.checked >= counts.compiled / 2, "too few walks finished to say much");
}

#[test]
fn json_schema_test_suite_walks_are_valid_documents() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("grammar-syntax/tests/data/json-schema-test-suite/draft2020-12");
    let files = json_files(&dir);
    let vocab = vocabulary();
    let compiler = Compiler::from_arc(vocab.clone());
    let structural = structural_tokens(&vocab);
    let (mut counts, mut failures) = (Counts::default(), Vec::new());
    for path in &files {
        let groups: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for group in groups.as_array().unwrap() {
            let name = format!(
                "{} / {}",
                path.file_name().unwrap().to_string_lossy(),
                group["description"].as_str().unwrap_or("?")
            );
            let schema = &group["schema"];
            check_schema(&compiler, &structural, &name, schema, schema, &mut counts, &mut failures);
        }
    }
    report("JSON-Schema-Test-Suite", &counts, &failures);
}

/// The check sees a wrong document: walks of one schema validated against a stricter one.
#[test]
fn a_document_the_validator_rejects_is_reported() {
    let vocab = Arc::new(Vocabulary::load("o200k").unwrap());
    let compiler = Compiler::from_arc(vocab.clone());
    let structural = structural_tokens(&vocab);
    let loose = serde_json::json!({"type": "array", "items": {"type": "boolean"}, "minItems": 2});
    let strict = serde_json::json!({"type": "array", "items": {"type": "boolean"}, "maxItems": 1});
    let (mut counts, mut failures) = (Counts::default(), Vec::new());
    check_schema(&compiler, &structural, "loose", &loose, &strict, &mut counts, &mut failures);
    assert_eq!(counts.compiled, 1);
    assert!(counts.checked > 0 && failures.len() == counts.checked, "{failures:?}");
}
