//! Malformed vocabulary files, one table per format, loaded from disk through
//! `Vocabulary::load` (which picks the loader from the extension or the content): each is
//! an error with a message, never a panic, an abort or a huge allocation.

use grammask_tokenset::Vocabulary;
use std::path::PathBuf;

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grammask-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Loads every case as `name.ext`; each must fail with a message naming the file.
#[track_caller]
fn all_fail(ext: &str, cases: &[(&str, Vec<u8>)]) {
    for (name, bytes) in cases {
        let path = write(&format!("{name}.{ext}"), bytes);
        let spec = path.to_str().unwrap();
        match Vocabulary::load(spec) {
            Ok(v) => panic!("{name}.{ext}: loaded {} tokens", v.len()),
            Err(e) => {
                let message = e.to_string();
                assert!(
                    message.contains(name),
                    "{name}.{ext}: the message names the file: {message}"
                );
            }
        }
    }
}

#[test]
fn malformed_tokenizer_json_files() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", b"".to_vec()),
        ("not-json", b"model: bpe".to_vec()),
        ("truncated", br#"{"model": {"type": "BPE", "vocab": {"a": 0"#.to_vec()),
        ("not-utf8", b"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\xff\": 0}}}".to_vec()),
        ("deep-nesting", deep.into_bytes()),
        ("no-model", br#"{"added_tokens": []}"#.to_vec()),
        ("model-string", br#"{"model": "BPE"}"#.to_vec()),
        ("negative-id", br#"{"model": {"type": "BPE", "vocab": {"a": -3}}}"#.to_vec()),
        ("float-id", br#"{"model": {"type": "BPE", "vocab": {"a": 1.5}}}"#.to_vec()),
        (
            "huge-id",
            br#"{"model": {"type": "BPE", "vocab": {"a": 18446744073709551615}}}"#.to_vec(),
        ),
        ("id-too-large", br#"{"model": {"type": "BPE", "vocab": {"a": 4294967295}}}"#.to_vec()),
        ("duplicate-ids", br#"{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}}}"#.to_vec()),
        (
            "added-token-without-id",
            br#"{"model": {"type": "BPE", "vocab": {}}, "added_tokens": [{"content": "x"}]}"#
                .to_vec(),
        ),
        (
            "unigram-entry-not-a-pair",
            br#"{"model": {"type": "Unigram", "vocab": [{"a": 0.0}]}}"#.to_vec(),
        ),
        ("unknown-model", br#"{"model": {"type": "Mystery", "vocab": {"a": 0}}}"#.to_vec()),
    ];
    all_fail("json", &cases);
}

#[test]
fn malformed_tiktoken_files() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("one-field", b"YQ==\n".to_vec()),
        ("three-fields", b"YQ== 0 7\n".to_vec()),
        ("bad-base64", b"Y!Q= 0\n".to_vec()),
        ("empty-token", b"= 0\n".to_vec()),
        ("rank-not-a-number", b"YQ== zero\n".to_vec()),
        ("negative-rank", b"YQ== -1\n".to_vec()),
        ("rank-overflow", b"YQ== 99999999999999999999999\n".to_vec()),
        ("rank-too-large", b"YQ== 4294967295\n".to_vec()),
        ("duplicate-rank", b"YQ== 0\nYg== 0\n".to_vec()),
        ("rank-not-utf8", b"YQ== \xff\n".to_vec()),
        ("nul-bytes", b"YQ==\x000\n".to_vec()),
        ("good-then-bad", b"YQ== 0\nYg== 1\nYw==\n".to_vec()),
    ];
    all_fail("tiktoken", &cases);
}

/// A GGUF header (version 3, no tensors) with `entries` metadata entries, then `body`.
fn gguf(version: u32, entries: u64, body: &[u8]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(version.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.extend(entries.to_le_bytes());
    out.extend(body);
    out
}

fn key(name: &str, ty: u32) -> Vec<u8> {
    let mut out = (name.len() as u64).to_le_bytes().to_vec();
    out.extend(name.as_bytes());
    out.extend(ty.to_le_bytes());
    out
}

fn string(s: &str) -> Vec<u8> {
    let mut out = (s.len() as u64).to_le_bytes().to_vec();
    out.extend(s.as_bytes());
    out
}

fn model(name: &str) -> Vec<u8> {
    [key("tokenizer.ggml.model", 8), string(name)].concat()
}

fn tokens(items: &[&str]) -> Vec<u8> {
    let mut out = key("tokenizer.ggml.tokens", 9);
    out.extend(8u32.to_le_bytes());
    out.extend((items.len() as u64).to_le_bytes());
    items.iter().for_each(|s| out.extend(string(s)));
    out
}

#[test]
fn malformed_gguf_files() {
    let good = gguf(3, 2, &[model("gpt2"), tokens(&["a", "b"])].concat());
    let path = write("good.gguf", &good);
    assert_eq!(
        Vocabulary::load(path.to_str().unwrap()).unwrap().len(),
        2,
        "the table's base loads"
    );
    let huge_string = [key("tokenizer.ggml.model", 8), u64::MAX.to_le_bytes().to_vec()].concat();
    let huge_array = [
        key("tokenizer.ggml.tokens", 9),
        8u32.to_le_bytes().to_vec(),
        u64::MAX.to_le_bytes().to_vec(),
    ]
    .concat();
    let nested =
        [key("tokenizer.ggml.tokens", 9), 9u32.to_le_bytes().to_vec(), 1u64.to_le_bytes().to_vec()]
            .concat();
    let mut types = key("tokenizer.ggml.token_type", 9);
    types.extend(5u32.to_le_bytes());
    types.extend(1u64.to_le_bytes());
    types.extend(1i32.to_le_bytes());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("bad-magic", b"GGML\x03\0\0\0".to_vec()),
        ("version-1", gguf(1, 0, &[])),
        ("version-99", gguf(99, 0, &[])),
        ("truncated-header", good[..10].to_vec()),
        ("too-many-entries", gguf(3, u64::MAX, &[])),
        ("entries-missing", gguf(3, 5, &model("gpt2"))),
        ("huge-string", gguf(3, 1, &huge_string)),
        ("huge-array", gguf(3, 1, &huge_array)),
        ("nested-array", gguf(3, 1, &nested)),
        ("unknown-type", gguf(3, 1, &[key("tokenizer.ggml.model", 42), vec![0; 8]].concat())),
        ("no-model", gguf(3, 1, &tokens(&["a"]))),
        ("no-tokens", gguf(3, 1, &model("gpt2"))),
        ("unsupported-model", gguf(3, 2, &[model("bert"), tokens(&["a"])].concat())),
        ("model-not-a-string", gguf(3, 1, &[key("tokenizer.ggml.model", 4), vec![0; 4]].concat())),
        (
            "types-count-mismatch",
            gguf(3, 3, &[model("llama"), tokens(&["a", "b"]), types].concat()),
        ),
        ("truncated-tokens", good[..good.len() - 1].to_vec()),
    ];
    all_fail("gguf", &cases);
}
