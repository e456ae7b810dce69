//! The CLI's JSON Schema paths: `grammask convert` with its options, `--builtin json` in
//! `check`, `print`, `match` and `mask`, and the schema options of `match`.

mod support;

use std::path::PathBuf;
use std::process::Output;
use support::grammask;

fn file(name: &str, text: &str) -> PathBuf {
    support::temp_file("cli-json", name, text)
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const SCHEMA: &str = r#"{"type": "object", "properties": {"a": {"type": "integer"},
    "b": {"type": "string", "format": "date"}}, "required": ["a"]}"#;

#[test]
fn convert_prints_gbnf_that_check_accepts() {
    let schema = file("convert.json", SCHEMA);
    let o = grammask(&["convert", schema.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let gbnf = out(&o);
    assert!(gbnf.starts_with("root ::= "), "{gbnf}");
    let g = file("converted.gbnf", &gbnf);
    let o = grammask(&["match", g.to_str().unwrap()], Some(r#"{"a": 1, "b": "2024-02-29"}"#));
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
}

#[test]
fn convert_reads_stdin_and_refuses_with_the_keyword() {
    let o = grammask(&["convert", "-"], Some(r#"{"type": "array", "uniqueItems": true}"#));
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("uniqueItems"), "{}", err(&o));
    let o =
        grammask(&["convert", "-", "--lenient"], Some(r#"{"type": "array", "uniqueItems": true}"#));
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("warning"), "{}", err(&o));
}

#[test]
fn convert_options_change_the_grammar() {
    let schema = file("options.json", SCHEMA);
    let path = schema.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["convert", path];
        args.extend_from_slice(extra);
        let o = grammask(&args, None);
        assert_eq!(o.status.code(), Some(0), "{extra:?}: {}", err(&o));
        out(&o)
    };
    let default = run(&[]);
    assert_ne!(run(&["--whitespace", "compact"]), default);
    assert_ne!(run(&["--whitespace", "any"]), default);
    assert_ne!(run(&["--strict"]), default);
    assert_ne!(run(&["--format-mode", "annotation"]), default);
    assert_ne!(run(&["--any-order"]), default);
    let o = grammask(&["convert", path, "--whitespace", "wide"], None);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn match_takes_schema_options() {
    let schema = file("match.json", SCHEMA);
    let path = schema.to_str().unwrap();
    let doc = r#"{"a": 1}"#;
    assert_eq!(grammask(&["match", path], Some(doc)).status.code(), Some(0));
    let o = grammask(&["match", path, "--whitespace", "compact"], Some(doc));
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let o = grammask(&["match", path, "--strict"], Some(r#"{"a": 1, "c": 2}"#));
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let o = grammask(&["match", path], Some(r#"{"a": 1, "c": 2}"#));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let bad_date = r#"{"a": 1, "b": "2023-02-29"}"#;
    assert_eq!(grammask(&["match", path], Some(bad_date)).status.code(), Some(1));
    let o = grammask(&["match", path, "--format-mode", "annotation"], Some(bad_date));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let swapped = r#"{"b": "2024-01-01", "a": 1}"#;
    assert_eq!(grammask(&["match", path], Some(swapped)).status.code(), Some(1));
    let o = grammask(&["match", path, "--any-order"], Some(swapped));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
}

#[test]
fn builtin_json_in_check_print_match_and_mask() {
    let o = grammask(&["check", "--builtin", "json"], None);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("builtin:json: ok"), "{}", out(&o));
    let o = grammask(&["print", "--builtin", "json"], None);
    assert_eq!(o.status.code(), Some(0));
    assert!(out(&o).contains("json-value"), "{}", out(&o));
    let o = grammask(&["match", "--builtin", "json"], Some(r#"{"x": [1, 2.5, null, "s"]}"#));
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = grammask(&["match", "--builtin", "json"], Some(r#"{"x": }"#));
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let doc = file("doc.json", "[true, false]\n");
    let o = grammask(&["match", "--builtin", "json", doc.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    let o = grammask(&["match", "--builtin", "json", "--whitespace", "compact"], Some("[1, 2]"));
    assert_eq!(o.status.code(), Some(1), "{}", out(&o));
    let vocab = file("small.tiktoken", &rank_file());
    let o = grammask(
        &[
            "mask",
            "--builtin",
            "json",
            "--vocab",
            vocab.to_str().unwrap(),
            "--prefix",
            "[1,",
            "--json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON output");
    assert!(v["count"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["eos_allowed"], false);
    let both = file("both.gbnf", "root ::= \"a\"\n");
    let o = grammask(&["check", both.to_str().unwrap(), "--builtin", "json"], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
}

/// A small tiktoken rank file (base64 token, space, rank per line).
fn rank_file() -> String {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let encode = |bytes: &[u8]| {
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |acc, (i, &b)| acc | (b as u32) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    };
    ["[", "]", "1", "2", ",", " ", "true", "null", "\"", "a", ", "]
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{} {i}\n", encode(t.as_bytes())))
        .collect()
}
