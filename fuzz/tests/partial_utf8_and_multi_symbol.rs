//! Proves, on the o200k vocabulary and llama.cpp's json.gbnf and japanese.gbnf, that
//! - tokens that end inside a multi-byte character (o200k has many: a prefix of a UTF-8
//!   sequence) and tokens that start with continuation bytes are allowed exactly where
//!   the bytes can continue the text: the mask agrees with an independent reference
//!   matcher on every such token, in states at character boundaries and inside a
//!   character; after a token that stops inside a character, only tokens that continue
//!   it are allowed, and never a stop token;
//! - tokens that span several grammar symbols (`",`, `"}`, `":`, `":"`, `}}`, `],`, ...)
//!   are allowed exactly where every symbol they span is valid, in a table of JSON states.

use grammask::syntax::ir::Grammar;
use grammask::{get_bit, Compiler, GrammarFormat, Matcher, Vocabulary};
use grammask_fuzz::check::{mask_words, o200k};
use grammask_fuzz::reference::Reference;
use grammask_fuzz::rng::XorShift;
use std::path::Path;
use std::sync::Arc;

fn grammar(name: &str) -> Grammar {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../grammar-syntax/tests/data/llama.cpp-grammars")
        .join(format!("{name}.gbnf"));
    let text = std::fs::read_to_string(&path).unwrap();
    grammask::parse_grammar(&text, GrammarFormat::Gbnf, "root").unwrap().grammar
}

/// Whether a token's bytes stop inside a character (valid UTF-8 up to an incomplete tail).
fn ends_inside_char(b: &[u8]) -> bool {
    matches!(std::str::from_utf8(b), Err(e) if e.error_len().is_none())
}

/// Whether a token's bytes start with a continuation byte.
fn starts_inside_char(b: &[u8]) -> bool {
    b.first().is_some_and(|&c| (0x80..0xC0).contains(&c))
}

fn partial_tokens(vocab: &Vocabulary) -> Vec<u32> {
    vocab
        .iter()
        .filter(|(_, kind, b)| kind.is_text() && (ends_inside_char(b) || starts_inside_char(b)))
        .map(|(id, _, _)| id)
        .collect()
}

/// The engine's mask after `prefix` equals the reference's answer on `ids`.
fn check_against_reference(
    g: &Grammar,
    vocab: &Arc<Vocabulary>,
    prefix: &[u8],
    ids: &[u32],
) -> Vec<u32> {
    let compiled = Compiler::from_arc(vocab.clone()).compile_grammar(g).unwrap();
    let mut m = Matcher::new(compiled);
    m.accept_bytes(prefix).unwrap();
    let mask = mask_words(&m);
    let reference = Reference::new(g, vocab);
    let start = reference.start().unwrap();
    let state =
        reference.step_bytes(&start, prefix).unwrap().expect("the reference accepts the prefix");
    let mut allowed = Vec::new();
    for &id in ids {
        let expected = reference.step_token(&state, id).unwrap().is_some();
        assert_eq!(
            get_bit(&mask, id),
            expected,
            "after {:?}: token {id} {:?}",
            String::from_utf8_lossy(prefix),
            vocab.token_bytes(id).unwrap_or_default()
        );
        if expected {
            allowed.push(id);
        }
    }
    allowed
}

fn sample(vocab: &Vocabulary, rng: &mut XorShift, n: usize) -> Vec<u32> {
    (0..n).map(|_| rng.below(vocab.vocab_size()) as u32).collect()
}

#[test]
fn partial_utf8_tokens_in_japanese() {
    let vocab = o200k();
    let g = grammar("japanese");
    let partial = partial_tokens(&vocab);
    assert!(partial.len() > 1000, "o200k has many partial-character tokens: {}", partial.len());
    let mut rng = XorShift::new(7);
    let mut ids = partial.clone();
    ids.extend(sample(&vocab, &mut rng, 1000));
    // At the start, after whole characters, after a separator, and inside 日 (E6 97 A5)
    // after one and after two of its bytes.
    let mut at_start = Vec::new();
    for prefix in [&b""[..], "日本".as_bytes(), "日本 ".as_bytes(), b"\xE6", b"\xE6\x97"] {
        let allowed = check_against_reference(&g, &vocab, prefix, &ids);
        if prefix.is_empty() {
            at_start = allowed;
        }
    }
    // Some partial tokens are allowed at the start (a Japanese character cut short) and
    // some are refused (a Latin character cut short).
    let cut_japanese = at_start.iter().any(|&t| ends_inside_char(vocab.token_bytes(t).unwrap()));
    assert!(cut_japanese, "no token ending inside a Japanese character is allowed at the start");
    let latin = partial.iter().find(|&&t| {
        let b = vocab.token_bytes(t).unwrap();
        ends_inside_char(b) && b.last().is_some_and(|&c| (0xC2..0xE0).contains(&c))
    });
    let latin = *latin.expect("o200k has a token ending in a 2-byte lead byte");
    assert!(!at_start.contains(&latin), "{:?}", vocab.token_bytes(latin));

    // Accept a token that stops inside a character: only continuations are allowed next.
    let compiled = Compiler::from_arc(vocab.clone()).compile_grammar(&g).unwrap();
    let mut tried = 0;
    for &t in at_start.iter().filter(|&&t| ends_inside_char(vocab.token_bytes(t).unwrap())).take(20)
    {
        let mut m = Matcher::new(compiled.clone());
        m.accept_token(t).unwrap();
        assert!(!m.can_terminate());
        let mask = mask_words(&m);
        let mut any = false;
        for id in 0..vocab.vocab_size() as u32 {
            if get_bit(&mask, id) {
                any = true;
                let b = vocab.token_bytes(id).unwrap();
                assert!(starts_inside_char(b), "after {t}, token {id} {b:?} is allowed");
                assert!(!vocab.is_stop(id));
            }
        }
        assert!(any, "after token {t} nothing is allowed");
        tried += 1;
    }
    assert!(tried >= 5, "only {tried} tokens end inside a Japanese character");
}

#[test]
fn partial_utf8_tokens_in_json() {
    let vocab = o200k();
    let g = grammar("json");
    let mut ids = partial_tokens(&vocab);
    let mut rng = XorShift::new(11);
    ids.extend(sample(&vocab, &mut rng, 1000));
    for prefix in
        [&b"{\"a\": \""[..], b"{\"a\": \"\xE6", b"{\"a\": \"\xE6\x97", b"{\"\xF0\x9F", b"{\"a\": 1"]
    {
        let allowed = check_against_reference(&g, &vocab, prefix, &ids);
        let inside = prefix.last().is_some_and(|&c| c >= 0x80);
        if inside {
            assert!(allowed.iter().all(|&t| starts_inside_char(vocab.token_bytes(t).unwrap())));
        }
        assert!(!allowed.is_empty());
    }
}

#[test]
fn multi_symbol_tokens_in_json() {
    let vocab = o200k();
    let g = grammar("json");
    let compiled = Compiler::from_arc(vocab.clone()).compile_grammar(&g).unwrap();
    // (text so far, token, allowed)
    let table: &[(&str, &str, bool)] = &[
        ("", "{\"", true),
        ("", "{}", true),
        ("", "{\n", true),
        ("", "[{", false),
        ("", "\"", false),
        ("{\"a\": \"x", "\",", true),
        ("{\"a\": \"x", "\"}", true),
        ("{\"a\": \"x", "\" }", true),
        ("{\"a\": \"x", "\"},", false),
        ("{\"a\": \"x", "\":", false),
        ("{\"a\": \"x", "\"]", false),
        ("{\"a\": \"x", "\"}}", false),
        ("{\"a\": \"x", "\",\"", true),
        ("{\"a\": \"x", "\", \"", true),
        ("{\"a", "\":", true),
        ("{\"a", "\":\"", true),
        ("{\"a", "\": \"", true),
        ("{\"a", "\",", false),
        ("{\"a", "\"}", false),
        ("{\"a\": {\"b\": 1", "}}", true),
        ("{\"a\": {\"b\": 1", "}}}", false),
        ("{\"a\": {\"b\": 1", "},", true),
        ("{\"a\": {\"b\": 1", "}]", false),
        ("{\"a\": 1", "}}", false),
        ("{\"a\": 1", "},", false),
        ("{\"a\": [1", "]}", true),
        ("{\"a\": [1", "],", true),
        ("{\"a\": [1", "}]", false),
        ("{\"a\": [1", ",\"", true),
        ("{\"a\": [", "[]", true),
        ("{\"a\": [", "{}", true),
        ("{\"a\": [", "[{\"", true),
        ("{\"a\": [", "]]", false),
        ("{\"a\": ", "true", true),
        ("{\"a\": ", "trueb", false),
        ("{\"a\": 1", ".5", true),
        ("{\"a\": 0", "00", false),
    ];
    let mut checked = 0;
    for &(text, token, expected) in table {
        let Some(id) = vocab.token_id(token.as_bytes()) else { continue };
        let mut m = Matcher::new(compiled.clone());
        m.accept_bytes(text.as_bytes()).unwrap();
        let mask = mask_words(&m);
        assert_eq!(get_bit(&mask, id), expected, "after {text:?}: token {token:?}");
        assert_eq!(m.fork().accept_token(id).is_ok(), expected, "after {text:?}: {token:?}");
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} of the table's tokens are in o200k");
}

#[test]
fn multi_symbol_tokens_agree_with_reference() {
    // Every token holding a JSON delimiter next to something else, in a few states.
    let vocab = o200k();
    let g = grammar("json");
    let ids: Vec<u32> = vocab
        .iter()
        .filter(|(_, kind, b)| {
            kind.is_text() && b.len() > 1 && b.iter().any(|c| b"\"{}[],:".contains(c))
        })
        .map(|(id, _, _)| id)
        .collect();
    assert!(ids.len() > 500, "{}", ids.len());
    for prefix in
        ["", "{\"a\": \"x", "{\"a", "{\"a\": {\"b\": [1", "{\"a\": [{\"b\": \"c\"}", "{\"a\": 1"]
    {
        check_against_reference(&g, &vocab, prefix.as_bytes(), &ids);
    }
}
