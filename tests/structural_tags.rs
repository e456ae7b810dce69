//! Structural tags against XGrammar 0.2.9: every string of `tests/data/structural_tags/
//! xgrammar.json` (XGrammar's documented examples and crafted cases, produced by
//! `bench-suite/scripts/xgrammar_structural_tags.py`) is accepted, rejected, and accepted
//! as a prefix exactly as XGrammar answered, except the strings listed in [`DIFFERENCES`]
//! (each an XGrammar bug, with the reason). Run through the library, and a sample of
//! cases through `grammask match --structural-tag`.

mod support;

use grammask::{byte_vocabulary, Compiler, Matcher};
use serde_json::Value;

/// Strings where grammask answers otherwise than XGrammar 0.2.9, and why XGrammar is wrong.
const DIFFERENCES: &[(&str, &str, &str)] = &[
    ("json-integer-any", "-0", "`-0` is a JSON integer (RFC 8259 grammar; JSON Schema's `integer` is any number with a zero fractional part)"),
    ("json-integer-any", "1.5", "`1.5` may go on to `1.5e1`, the integer 15: it is a valid prefix"),
    ("json-integer-range", "5.0", "`5.0` is an integer for JSON Schema (a zero fractional part) and within the range"),
    ("json-enum", "3.0", "`3.0` equals the enum value `3`: JSON Schema compares numbers by value"),
];

/// Tags XGrammar compiles and grammask refuses, and why refusing is right.
const REFUSED: &[(&str, &str)] = &[
    ("any-text-empty-exclude", "an empty string in `excludes` excludes nothing meaningful; XGrammar then rejects every non-empty text"),
    ("docs-any-text-excluded-str", "`excluded_str` is not a field of `any_text`; XGrammar ignores it silently and allows the text it was meant to exclude"),
];

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/structural_tags/xgrammar.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture JSON")
}

/// (accepted as a whole, accepted as a prefix) by grammask.
fn answer(compiler: &Compiler, tag: &Value, text: &str) -> (bool, bool) {
    let compiled = compiler
        .compile_structural_tag(tag, &grammask::syntax::StructuralTagOptions::default())
        .unwrap_or_else(|e| panic!("compile {tag}: {e}"));
    let mut matcher = Matcher::new(compiled);
    let prefix = matcher.accept_bytes(text.as_bytes()).is_ok();
    (prefix && matcher.can_terminate(), prefix)
}

#[test]
fn strings_are_answered_as_xgrammar_answers() {
    let compiler = Compiler::new(&byte_vocabulary());
    let fixture = fixture();
    let cases = fixture["cases"].as_array().expect("cases");
    let mut mismatches = Vec::new();
    let mut strings = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap_or_default();
        if REFUSED.iter().any(|(c, _)| *c == name) {
            let opts = grammask::syntax::StructuralTagOptions::default();
            assert!(
                compiler.compile_structural_tag(&case["tag"], &opts).is_err(),
                "{name} compiles"
            );
            continue;
        }
        for s in case["strings"].as_array().expect("strings") {
            strings += 1;
            let text = s["text"].as_str().expect("text");
            let expected = (s["accepted"].as_bool().unwrap(), s["prefix_ok"].as_bool().unwrap());
            let got = answer(&compiler, &case["tag"], text);
            let known = DIFFERENCES.iter().any(|(c, t, _)| *c == name && *t == text);
            if (got != expected) != known {
                mismatches.push(format!(
                    "{name}: {text:?}: grammask (accepted, prefix) = {got:?}, XGrammar {expected:?}{}",
                    if known { " (listed as a difference, but they agree)" } else { "" }
                ));
            }
        }
    }
    assert!(strings >= 200, "the fixture holds {strings} strings");
    assert!(
        mismatches.is_empty(),
        "{} of {strings} strings differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[test]
fn the_cli_matches_structural_tags() {
    let fixture = fixture();
    let cases = fixture["cases"].as_array().expect("cases");
    for case in cases.iter().step_by(7) {
        let name = case["name"].as_str().unwrap_or_default();
        if REFUSED.iter().any(|(c, _)| *c == name) {
            continue;
        }
        let tag = support::temp_file(
            "structural-tags",
            &format!("{name}.json"),
            &case["tag"].to_string(),
        );
        for s in case["strings"].as_array().expect("strings").iter().take(3) {
            let text = s["text"].as_str().expect("text");
            if DIFFERENCES.iter().any(|(c, t, _)| *c == name && *t == text) {
                continue;
            }
            let input = support::temp_file("structural-tags", &format!("{name}.txt"), text);
            let out = support::grammask(
                &["match", "--structural-tag", tag.to_str().unwrap(), input.to_str().unwrap()],
                None,
            );
            let accepted = s["accepted"].as_bool().unwrap();
            assert_eq!(
                out.status.code(),
                Some(if accepted { 0 } else { 1 }),
                "{name}: {text:?}\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn malformed_tags_are_refused_with_their_pointer() {
    let compiler = Compiler::new(&byte_vocabulary());
    let opts = grammask::syntax::StructuralTagOptions::default();
    for (tag, pointer) in [
        (r#"{"type": "structural_tag", "format": {"type": "bogus"}}"#, "/format/type"),
        (r#"{"type": "structural_tag", "format": {"type": "const_string"}}"#, "/format"),
        (
            r#"{"type": "sequence", "elements": [{"type": "const_string", "value": 1}]}"#,
            "/elements/0/value",
        ),
        (r#"{"type": "any_text", "max_chars": 5}"#, "/max_chars"),
        (r#"{"type": "any_text", "max_tokens": -1}"#, "/max_tokens"),
        (
            r#"{"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>", "extra": 1}"#,
            "/extra",
        ),
        (
            r#"{"type": "triggered_tags", "triggers": ["<f"], "tags": [{"begin": "<g>", "content": {"type": "any_text"}, "end": "</g>"}]}"#,
            "/tags/0/begin",
        ),
        (
            r#"{"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "strin"}}}}"#,
            "/json_schema/properties/a/type",
        ),
    ] {
        let value: Value = serde_json::from_str(tag).unwrap();
        let err = compiler.compile_structural_tag(&value, &opts).expect_err(tag);
        let grammask::CompileError::Grammar(d) = &err else { panic!("{tag}: {err}") };
        assert_eq!(d.0[0].pointer.as_deref(), Some(pointer), "{tag}: {err}");
    }
}

/// The bytes the byte-level matcher allows next (a byte vocabulary: token `b` is byte `b`).
fn allowed_bytes(matcher: &Matcher) -> Vec<u8> {
    let mut mask = vec![0u32; grammask::bitmask_len(256)];
    matcher.fill_next_token_bitmask(&mut mask).unwrap();
    (0..=255u8).filter(|&b| grammask::get_bit(&mask, u32::from(b))).collect()
}

#[test]
fn free_text_stays_within_its_token_budget() {
    let compiler = Compiler::new(&byte_vocabulary());
    let tag: Value = serde_json::from_str(
        r#"{"type": "structural_tag", "format": {"type": "sequence", "elements": [
            {"type": "tag", "begin": "<think>", "content": {"type": "any_text", "max_tokens": 3}, "end": "</think>"},
            {"type": "any_text", "max_tokens": 2}]}}"#,
    )
    .unwrap();
    let compiled = compiler
        .compile_structural_tag(&tag, &grammask::syntax::StructuralTagOptions::default())
        .unwrap();
    let mut m = Matcher::new(compiled.clone());
    for b in b"<think>ab" {
        m.accept_token(u32::from(*b)).unwrap();
    }
    let a = allowed_bytes(&m);
    assert!(
        a.len() > 100,
        "two tokens of the budget spent: free text goes on: {}",
        String::from_utf8_lossy(&a)
    );
    m.accept_token(u32::from(b'c')).unwrap();
    // Three tokens spent: only the way to `</think>`.
    assert_eq!(allowed_bytes(&m), b"<");
    assert!(m.accept_token(u32::from(b'd')).is_err(), "a refused token changes nothing");
    m.accept_token(u32::from(b'<')).unwrap();
    assert_eq!(allowed_bytes(&m), b"/", "a string begun is read to its end");
    for b in b"/think>" {
        m.accept_token(u32::from(*b)).unwrap();
    }
    // The next free text has a budget of its own.
    m.accept_token(u32::from(b'x')).unwrap();
    m.accept_token(u32::from(b'y')).unwrap();
    assert!(m.can_terminate());
    assert!(allowed_bytes(&m).is_empty(), "spent at the end of the output: only the end");
    m.rollback(1).unwrap();
    assert!(allowed_bytes(&m).len() > 100, "rollback restores the count");
    // Text given as bytes spends no budget (as XGrammar's accept_string).
    let mut m = Matcher::new(compiled);
    m.accept_string("<think>a long thought</think>").unwrap();
    assert!(m.can_terminate());
}

/// On Llama-3: a `<think>` block with a budget of 8 tokens, then a tool call. The model
/// "thinks" in tokens of plain text; once the budget is spent, at every step the mask
/// equals the per-token check (a fork accepting each id), allows no plain text, and the
/// walk ends the thinking on the tokens the mask allows.
#[test]
fn budgets_on_llama3_masks_equal_the_per_token_check() {
    let Some(dir) = std::env::var_os("GRAMMASK_TOKENIZERS") else {
        eprintln!("SKIPPED: budgets on llama3: GRAMMASK_TOKENIZERS is not set (scripts/fetch-tokenizers.sh)");
        return;
    };
    let path = std::path::Path::new(&dir).join("llama3/tokenizer.json");
    if !path.is_file() {
        eprintln!("SKIPPED: budgets on llama3: {} is missing", path.display());
        return;
    }
    let vocab = grammask::Vocabulary::from_tokenizer_json(&path).unwrap();
    let tools = serde_json::json!([{"type": "function", "function": {"name": "get_time",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    let options = grammask::syntax::ToolsOptions {
        choice: grammask::syntax::ToolChoice::Required,
        reasoning: true,
        max_reasoning_tokens: Some(8),
        ..Default::default()
    };
    let compiled = Compiler::new(&vocab).compile_tools(&tools, &options).unwrap();
    let id =
        |text: &str| vocab.token_id(text.as_bytes()).unwrap_or_else(|| panic!("token {text:?}"));
    let mut m = Matcher::new(compiled);
    m.accept_token(id("<")).unwrap();
    m.accept_token(id("think")).unwrap();
    m.accept_token(id(">")).unwrap();
    let words = [" The", " user", " wants", " the", " time", " in", " Oslo", "."];
    let mut mask = vec![0u32; grammask::bitmask_len(vocab.vocab_size())];
    let check = |m: &Matcher, mask: &[u32]| {
        let mut allowed = 0;
        for t in 0..vocab.vocab_size() as u32 {
            let by_fork =
                if vocab.is_stop(t) { m.can_terminate() } else { m.fork().accept_token(t).is_ok() };
            assert_eq!(grammask::get_bit(mask, t), by_fork, "token {t} {:?}", vocab.token_bytes(t));
            allowed += usize::from(by_fork);
        }
        allowed
    };
    for w in words {
        m.fill_next_token_bitmask(&mut mask).unwrap();
        assert!(grammask::get_bit(&mask, id(w)), "{w:?} within the budget");
        m.accept_token(id(w)).unwrap();
    }
    // Spent: nothing but the way out of the thinking.
    m.fill_next_token_bitmask(&mut mask).unwrap();
    let allowed = check(&m, &mask);
    assert!(allowed > 0 && allowed < 2_000, "{allowed} tokens allowed once the budget is spent");
    assert!(!grammask::get_bit(&mask, id(" And")));
    // Any allowed token reads on towards `</think>`: the thinking ends within as many
    // tokens as `</think>\n\n` has characters.
    let mut text = Vec::new();
    for step in 0.. {
        assert!(
            step < 10,
            "the thinking goes on after its budget: {}",
            String::from_utf8_lossy(&text)
        );
        m.fill_next_token_bitmask(&mut mask).unwrap();
        check(&m, &mask);
        let next = (0..vocab.vocab_size() as u32)
            .find(|&t| grammask::get_bit(&mask, t) && !vocab.is_stop(t))
            .expect("the mask is never empty before the end");
        m.accept_token(next).unwrap();
        text.extend_from_slice(vocab.token_bytes(next).unwrap());
        if text.windows(8).any(|w| w == b"</think>") {
            break;
        }
    }
    m.fill_next_token_bitmask(&mut mask).unwrap();
    assert!(check(&m, &mask) > 0);
}
