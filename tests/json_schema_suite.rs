//! The JSON-Schema-Test-Suite (drafts 4, 6, 7, 2019-09 and 2020-12, vendored in
//! grammar-syntax) through the converter and the engine: every group compiles or is
//! refused with an explained error; on compiled groups every valid instance (serialized
//! compactly, keys in file order) is accepted and every invalid one rejected. Per-file
//! counts are checked against `tests/data/json-schema-suite-expected-DRAFT.json`;
//! `GRAMMASK_UPDATE_EXPECTED=1` rewrites them.

#[path = "../grammar-syntax/tests/json_schema_support/mod.rs"]
mod json_schema_support;

use std::path::Path;

fn check(draft: &str) {
    let vocab = grammask_tokenset::Vocabulary::from_byte_tokens(
        (0..=255u8).map(|b| vec![b]).collect(),
        &[],
        &[],
        None,
    )
    .expect("a vocabulary of the 256 bytes");
    let compiler = grammask_engine::Compiler::new(&vocab);
    let root = json_schema_support::suite_dir(env!("CARGO_MANIFEST_DIR"));
    let verbose = std::env::var("GRAMMASK_SUITE_VERBOSE").is_ok();
    let counts = json_schema_support::run(&root, draft, verbose, &mut |g| {
        let compiled = compiler.compile_grammar(g).map_err(|e| e.to_string())?;
        Ok(Box::new(move |text: &str| {
            let mut m = grammask_engine::Matcher::new(compiled.clone());
            m.accept_bytes(text.as_bytes()).is_ok() && m.can_terminate()
        }))
    });
    let actual = json_schema_support::to_json(&counts);
    println!("{draft}: {}", serde_json::to_string_pretty(&actual["TOTAL"]).unwrap_or_default());
    let expected = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/data/json-schema-suite-expected-{draft}.json"));
    json_schema_support::check_expectations(&actual, &expected);
}

#[test]
fn draft4_with_engine() {
    check("draft4");
}

#[test]
fn draft6_with_engine() {
    check("draft6");
}

#[test]
fn draft7_with_engine() {
    check("draft7");
}

#[test]
fn draft2019_09_with_engine() {
    check("draft2019-09");
}

#[test]
fn draft2020_12_with_engine() {
    check("draft2020-12");
}
