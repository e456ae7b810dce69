//! `grammask-bench scaling`: compile time and automaton states of schemas whose only
//! size parameter is a bound (`maxItems`, `maxLength`), at 10 to 10000.

use grammask::syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
use grammask::{Compiler, Matcher};
use serde_json::json;
use std::time::Instant;

/// Prints the table; returns the exit code.
pub fn run() -> i32 {
    let compiler = Compiler::new(&grammask::byte_vocabulary());
    println!(
        "{:<34} {:>6} {:>10} {:>10} {:>8} {:>12}",
        "schema", "bound", "convert µs", "compile µs", "states", "match µs"
    );
    let mut code = 0;
    for kind in ["maxItems", "maxLength", "minItems", "minLength"] {
        for n in [10usize, 100, 1000, 10000] {
            let (schema, document) = match kind {
                "maxItems" | "minItems" => (
                    json!({"type": "array", "items": {"type": "integer"}, kind: n}),
                    format!("[{}]", vec!["1"; n].join(",")),
                ),
                _ => (json!({"type": "string", kind: n}), format!("\"{}\"", "a".repeat(n))),
            };
            let t = Instant::now();
            let converted = match json_schema_to_grammar(&schema, &JsonSchemaOptions::default()) {
                Ok(c) => c,
                Err(e) => {
                    println!("{schema}: {e}");
                    code = 1;
                    continue;
                }
            };
            let convert_us = t.elapsed().as_secs_f64() * 1e6;
            let t = Instant::now();
            let compiled = match compiler.compile_grammar(&converted.grammar) {
                Ok(c) => c,
                Err(e) => {
                    println!("{schema}: {e}");
                    code = 1;
                    continue;
                }
            };
            let compile_us = t.elapsed().as_secs_f64() * 1e6;
            let t = Instant::now();
            let mut m = Matcher::new(compiled.clone());
            let ok = m.accept_bytes(document.as_bytes()).is_ok() && m.can_terminate();
            let match_us = t.elapsed().as_secs_f64() * 1e6;
            if !ok {
                code = 1;
            }
            let label = format!("{{{kind}: N}}");
            println!(
                "{:<34} {:>6} {:>10.0} {:>10.0} {:>8} {:>12}",
                label,
                n,
                convert_us,
                compile_us,
                compiled.num_states(),
                format!("{match_us:.0}{}", if ok { "" } else { " REJECTED" })
            );
        }
    }
    code
}
