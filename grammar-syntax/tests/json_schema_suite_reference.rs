//! The JSON-Schema-Test-Suite (draft 2020-12) through the converter, matched by the
//! derivative-based reference matcher (no engine needed). Counts are recorded in
//! `tests/data/json-schema-suite-reference-expected.json`.

mod json_schema_support;

use grammask_syntax::json_schema::matcher::ReferenceMatcher;
use std::path::Path;

#[test]
fn json_schema_test_suite_with_reference_matcher() {
    let root = json_schema_support::suite_dir(env!("CARGO_MANIFEST_DIR"));
    let verbose = std::env::var("GRAMMASK_SUITE_VERBOSE").is_ok();
    let counts = json_schema_support::run(&root, verbose, &mut |g| {
        let g = g.clone();
        Ok(Box::new(move |text: &str| ReferenceMatcher::new(&g).matches(text)))
    });
    let actual = json_schema_support::to_json(&counts);
    println!("{}", serde_json::to_string_pretty(&actual["TOTAL"]).unwrap());
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/json-schema-suite-reference-expected.json");
    json_schema_support::check_expectations(&actual, &expected);
}
