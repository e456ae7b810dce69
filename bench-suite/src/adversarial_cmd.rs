//! `grammask-bench adversarial [--vocab V] [--json]`: every row of the adversarial table
//! ([`grammask_bench::adversarial`]) compiled for a real vocabulary with the default
//! limits: its outcome and compile time, and for compiled rows the per-step mask times
//! (cold cache, mean and worst) while walking the valid document's tokens.

use grammask::{bitmask_len, get_bit, Compiler, Matcher, Vocabulary};
use grammask_bench::adversarial::{cases, check_documents, compile, refusal_matches, Expect};
use grammask_bench::stats::Summary;
use grammask_bench::tokenize::TextTokenizer;
use std::time::Instant;

/// Runs the table; returns the exit code (1 when a row's outcome is not the expected one
/// or a token of a valid document is missing from its mask).
pub fn run(vocab_spec: &str, json: bool) -> Result<i32, String> {
    let vocab = Vocabulary::load(vocab_spec).map_err(|e| e.to_string())?;
    let tokenizer = TextTokenizer::load(vocab_spec)?;
    let compiler = Compiler::new(&vocab);
    let mut code = 0;
    let mut rows = Vec::new();
    if !json {
        println!(
            "{:<44} {:>11} {:>8} {:>7} {:>10} {:>10}  outcome",
            "row", "compile ms", "states", "steps", "mean µs", "worst µs"
        );
    }
    for case in cases() {
        let start = Instant::now();
        let result = compile(&compiler, &case);
        let compile_ms = start.elapsed().as_secs_f64() * 1e3;
        let (outcome, states, steps) = match (&result, &case.expect) {
            (Ok(grammar), Expect::Compiled) => {
                let mut outcome = "compiled".to_string();
                if let Err(e) = check_documents(grammar, &case) {
                    outcome = format!("WRONG: {e}");
                    code = 1;
                }
                let tokens = tokenizer.encode(&case.valid)?;
                let mut matcher = Matcher::new(grammar.clone());
                let mut mask = vec![0u32; bitmask_len(vocab.vocab_size())];
                let mut times = Vec::with_capacity(tokens.len());
                for (step, &id) in tokens.iter().enumerate() {
                    let t = Instant::now();
                    matcher.fill_next_token_bitmask(&mut mask).map_err(|e| e.to_string())?;
                    times.push(t.elapsed().as_secs_f64() * 1e6);
                    if !get_bit(&mask, id) || matcher.accept_token(id).is_err() {
                        outcome = format!("WRONG: token {id} at step {step} is not allowed");
                        code = 1;
                        break;
                    }
                }
                (outcome, grammar.num_states(), Summary::of(&times))
            }
            (Ok(grammar), expect) => {
                code = 1;
                (
                    format!("WRONG: compiled, expected {expect:?}"),
                    grammar.num_states(),
                    Summary::of(&[]),
                )
            }
            (Err(e), expect) => {
                let first = e.to_string().lines().next().unwrap_or_default().to_string();
                let outcome = if refusal_matches(e, expect) {
                    format!("refused as expected: {first}")
                } else {
                    code = 1;
                    format!("WRONG: refused: {first}")
                };
                (outcome, 0, Summary::of(&[]))
            }
        };
        if json {
            rows.push(serde_json::json!({
                "row": case.name, "outcome": outcome, "compile_ms": (compile_ms * 100.0).round() / 100.0,
                "states": states, "steps": steps.count, "mean_mask_us": (steps.mean * 10.0).round() / 10.0,
                "worst_mask_us": (steps.max * 10.0).round() / 10.0,
            }));
        } else {
            let short: String = outcome.chars().take(90).collect();
            println!(
                "{:<44} {:>11.1} {:>8} {:>7} {:>10.1} {:>10.1}  {short}",
                case.name, compile_ms, states, steps.count, steps.mean, steps.max
            );
        }
    }
    if json {
        println!("{}", serde_json::json!({"vocab": vocab_spec, "rows": rows}));
    }
    Ok(code)
}
