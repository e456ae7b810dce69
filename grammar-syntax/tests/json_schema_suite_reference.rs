//! The JSON-Schema-Test-Suite (drafts 4, 6, 7, 2019-09 and 2020-12) through the
//! converter, matched by the derivative-based reference matcher (no engine needed). Counts
//! are recorded per draft in `tests/data/json-schema-suite-reference-expected-DRAFT.json`.

mod json_schema_support;

use grammask_syntax::json_schema::matcher::ReferenceMatcher;
use std::path::Path;

fn check(draft: &str) {
    let root = json_schema_support::suite_dir(env!("CARGO_MANIFEST_DIR"));
    let verbose = std::env::var("GRAMMASK_SUITE_VERBOSE").is_ok();
    let counts = json_schema_support::run(&root, draft, verbose, &mut |g| {
        let g = g.clone();
        Ok(Box::new(move |text: &str| ReferenceMatcher::new(&g).matches(text)))
    });
    let actual = json_schema_support::to_json(&counts);
    println!("{draft}: {}", serde_json::to_string_pretty(&actual["TOTAL"]).unwrap());
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/data/json-schema-suite-reference-expected-{draft}.json"));
    json_schema_support::check_expectations(&actual, &expected);
}

#[test]
fn draft4_with_reference_matcher() {
    check("draft4");
}

#[test]
fn draft6_with_reference_matcher() {
    check("draft6");
}

#[test]
fn draft7_with_reference_matcher() {
    check("draft7");
}

#[test]
fn draft2019_09_with_reference_matcher() {
    check("draft2019-09");
}

#[test]
fn draft2020_12_with_reference_matcher() {
    check("draft2020-12");
}
