//! The `tokenizer.json` loaders on small hand-written files in `tests/data/`, and their
//! robustness against malformed input.

use std::path::{Path, PathBuf};

use grammask_tokenset::{TokenKind, VocabError, Vocabulary};
use proptest::prelude::*;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(rel)
}

fn bytes(v: &Vocabulary, id: u32) -> &[u8] {
    v.token_bytes(id).unwrap_or_else(|| panic!("id {id} has no bytes"))
}

#[test]
fn byte_level_bpe() {
    let v = Vocabulary::from_tokenizer_json(data("byte_level/tokenizer.json")).unwrap();
    assert_eq!(bytes(&v, 5), b" ");
    assert_eq!(bytes(&v, 6), b"\n");
    assert_eq!(bytes(&v, 9), b" the");
    assert_eq!(bytes(&v, 10), b"  ");
    assert_eq!(bytes(&v, 11), "é".as_bytes());
    assert_eq!(bytes(&v, 14), b"\t");
    assert_eq!(v.kind(12), Some(TokenKind::Special));
    assert_eq!(bytes(&v, 12), b"<|endoftext|>");
    // A non-special added token is text, matched by its content.
    assert_eq!(v.kind(15), Some(TokenKind::Normal));
    assert_eq!(bytes(&v, 15), b"<think>");
    assert_eq!(v.len(), 16);
    assert_eq!(v.vocab_size(), 16);
    assert_eq!(v.stop_tokens(), &[12, 13]);
    assert_eq!(v.token_id(b" the"), Some(9));
    assert_eq!(v.sorted().len(), 14);
    assert!(v.sorted().ids().iter().all(|&id| !v.is_special(id)));
}

#[test]
fn sentencepiece_byte_fallback() {
    let v = Vocabulary::from_tokenizer_json(data("sentencepiece/tokenizer.json")).unwrap();
    for id in [0, 1, 2, 15] {
        assert_eq!(v.kind(id), Some(TokenKind::Special), "id {id}");
    }
    assert_eq!(bytes(&v, 1), b"<s>");
    assert_eq!((v.kind(3), bytes(&v, 3)), (Some(TokenKind::Byte), &b"\n"[..]));
    assert_eq!(bytes(&v, 4), b" ");
    assert_eq!(bytes(&v, 5), &[0xe2]);
    assert_eq!(bytes(&v, 6), b" ");
    assert_eq!(bytes(&v, 11), b" the");
    assert_eq!(bytes(&v, 13), "é".as_bytes());
    assert_eq!(bytes(&v, 14), b"  ");
    // `</s>` by common name and tokenizer_config.json, `<|end|>` by generation_config.json
    // (its 999 is not in the vocabulary and is ignored).
    assert_eq!(v.stop_tokens(), &[2, 15]);
    // Without the sibling files only the common names count.
    let text = std::fs::read(data("sentencepiece/tokenizer.json")).unwrap();
    let v2 = Vocabulary::from_tokenizer_json_bytes(&text).unwrap();
    assert_eq!(v2.stop_tokens(), &[2]);
    // Two tokens have the bytes " ": the byte token and `▁`; both are text.
    let s = v.sorted();
    let r = s.prefix_range(b" ");
    let mut ids: Vec<u32> = r.map(|p| s.token_id(p)).collect();
    ids.sort_unstable();
    assert_eq!(ids, vec![4, 6, 10, 11, 14]);
}

#[test]
fn unigram_and_raw_models() {
    let unigram = br#"{"model": {"type": "Unigram", "unk_id": 0, "byte_fallback": true,
        "vocab": [["<unk>", 0.0], ["<0x41>", 0.0], ["\u2581hi", -1.5], ["x", -2.0]]},
        "added_tokens": [{"id": 0, "content": "<unk>", "special": true}]}"#;
    let v = Vocabulary::from_tokenizer_json_bytes(unigram).unwrap();
    assert_eq!(v.token_bytes(1), Some(&b"A"[..]));
    assert_eq!(v.kind(1), Some(TokenKind::Byte));
    assert_eq!(v.token_bytes(2), Some(&b" hi"[..]));
    assert!(v.is_special(0));

    let raw = br#"{"model": {"type": "WordLevel", "vocab": {"a": 0, "\u2581b": 1}}}"#;
    let v = Vocabulary::from_tokenizer_json_bytes(raw).unwrap();
    assert_eq!(v.token_bytes(1), Some("\u{2581}b".as_bytes()));
    assert!(v.stop_tokens().is_empty());
}

#[test]
fn load_dispatches_on_path() {
    let dir = data("byte_level");
    let by_dir = Vocabulary::load(dir.to_str().unwrap()).unwrap();
    let by_file = Vocabulary::load(dir.join("tokenizer.json").to_str().unwrap()).unwrap();
    assert_eq!(by_dir.len(), by_file.len());
    let tmp =
        std::env::temp_dir().join(format!("grammask-tokenset-{}.tiktoken", std::process::id()));
    std::fs::write(&tmp, "YQ== 0\nIHRoZQ== 1\n").unwrap();
    let v = Vocabulary::load(tmp.to_str().unwrap()).unwrap();
    std::fs::remove_file(&tmp).unwrap();
    assert_eq!(v.token_bytes(1), Some(&b" the"[..]));
    assert!(matches!(Vocabulary::load("/nonexistent/tokenizer.json"), Err(VocabError::Io { .. })));
}

#[test]
fn malformed_files_are_errors() {
    let cases: &[&[u8]] = &[
        b"",
        b"{",
        b"[]",
        br#"{"model": null}"#,
        br#"{"model": {"type": "BPE", "vocab": []}}"#,
        br#"{"model": {"type": "BPE", "vocab": {"a": -1}}}"#,
        br#"{"model": {"type": "BPE", "vocab": {"a": "0"}}}"#,
        br#"{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}}"#,
        br#"{"model": {"type": "BPE", "vocab": {"a": 99999999999}}}"#,
        br#"{"model": {"type": "WordPiece", "vocab": {"a": 0}}}"#,
        br#"{"model": {"type": "Unigram", "vocab": [[1, 0.0]]}}"#,
        br#"{"model": {"type": "BPE", "vocab": {" ": 0}}, "decoder": {"type": "ByteLevel"}}"#,
        br#"{"model": {"type": "BPE", "vocab": {}}, "added_tokens": [{"id": 1, "content": "x"},
            {"id": 1, "content": "y"}]}"#,
        br#"{"model": {"type": "BPE", "vocab": {}}, "added_tokens": {"id": 1}}"#,
        br#"{"model": {"type": "BPE", "vocab": {}}, "added_tokens": [{"id": 1, "content": 5}]}"#,
    ];
    for case in cases {
        let result = Vocabulary::from_tokenizer_json_bytes(case);
        assert!(result.is_err(), "accepted {}", String::from_utf8_lossy(case));
        // Every error names what is wrong.
        assert!(!result.unwrap_err().to_string().is_empty());
    }
    let err = Vocabulary::from_tokenizer_json_bytes(cases[5]).unwrap_err();
    assert!(err.to_string().contains("/model/vocab/a"), "{err}");
}

fn fixture_bytes() -> Vec<Vec<u8>> {
    ["byte_level/tokenizer.json", "sentencepiece/tokenizer.json"]
        .iter()
        .map(|rel| std::fs::read(data(rel)).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Truncated, spliced or byte-flipped fixtures load or fail, but never panic.
    #[test]
    fn mutated_fixtures_never_panic(
        which in 0usize..2,
        cut in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        truncate in any::<bool>(),
    ) {
        let mut text = fixture_bytes().swap_remove(which);
        for (at, byte) in edits {
            let i = at.index(text.len());
            text[i] = byte;
        }
        if truncate {
            text.truncate(cut.index(text.len() + 1));
        }
        let _ = Vocabulary::from_tokenizer_json_bytes(&text);
    }

    /// Mutations that replace a JSON value by another value of any type.
    #[test]
    fn retyped_values_never_panic(
        which in 0usize..2,
        at in any::<prop::sample::Index>(),
        replacement in prop::sample::select(vec![
            "null", "-1", "1e300", "4294967296", "\"x\"", "[]", "{}", "true", "[[\"a\", 1]]",
        ]),
    ) {
        let text = String::from_utf8(fixture_bytes().swap_remove(which)).unwrap();
        // Replace the value after the chosen colon up to the next comma or closing bracket.
        let colons: Vec<usize> = text.match_indices(':').map(|(i, _)| i).collect();
        let start = colons[at.index(colons.len())] + 1;
        let end = text[start..].find([',', '}', ']']).map_or(text.len(), |e| start + e);
        let mutated = format!("{}{}{}", &text[..start], replacement, &text[end..]);
        let _ = Vocabulary::from_tokenizer_json_bytes(mutated.as_bytes());
    }

    /// Random tiktoken lines load or fail, but never panic.
    #[test]
    fn random_tiktoken_never_panics(lines in prop::collection::vec("[A-Za-z0-9+/=]{0,8} {0,2}[0-9]{0,12}", 0..20)) {
        let text = lines.join("\n");
        let _ = Vocabulary::from_tiktoken_bytes(text.as_bytes(), &[("<|endoftext|>", 7)], None);
    }
}
