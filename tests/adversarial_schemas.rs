//! The adversarial table (`bench-suite/src/adversarial.rs`, shared with
//! `grammask-bench adversarial`): every row compiles with the default limits and then
//! matches its valid document and rejects its invalid ones, or is refused with the
//! limit or the unsupported keyword (and its JSON pointer) the row names. Never a panic
//! or a hang; times are measured by the bench, not asserted here.

#[path = "../bench-suite/src/adversarial.rs"]
#[allow(dead_code)]
mod adversarial;

use adversarial::{cases, check_documents, compile, refusal_matches, Expect};
use grammask::{byte_vocabulary, Compiler};

#[test]
fn every_row_gives_its_expected_outcome() {
    let compiler = Compiler::new(&byte_vocabulary());
    let mut failures = Vec::new();
    let rows = cases();
    assert!(rows.len() >= 30, "{} rows", rows.len());
    for case in &rows {
        let result = compile(&compiler, case);
        match (&case.expect, result) {
            (Expect::Compiled, Ok(grammar)) => {
                if let Err(e) = check_documents(&grammar, case) {
                    failures.push(e);
                }
            }
            (Expect::Compiled, Err(e)) => failures.push(format!("{}: refused: {e}", case.name)),
            (expect, Ok(_)) => {
                failures.push(format!("{}: compiled, expected {expect:?}", case.name))
            }
            (expect, Err(e)) => {
                if !refusal_matches(&e, expect) {
                    failures.push(format!("{}: refused with {e}, expected {expect:?}", case.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn refusals_are_checked_precisely() {
    // The checker itself tells a wrong refusal from the right one.
    let compiler = Compiler::new(&byte_vocabulary());
    let row = cases().into_iter().find(|c| c.name == "draft-03 divisibleBy").unwrap();
    let error = compile(&compiler, &row).unwrap_err();
    assert!(refusal_matches(&error, &row.expect));
    let elsewhere =
        Expect::Unsupported { keyword: "divisibleBy", pointer: "/properties/b/divisibleBy" };
    assert!(!refusal_matches(&error, &elsewhere));
    assert!(!refusal_matches(&error, &Expect::Limit("schema_depth")));
}
