//! GGUF vocabularies: hand-built GGUF metadata (byte-level and sentencepiece tokenizers,
//! malformed files) and, when present, the real SmolLM2 model file.

use grammask_tokenset::{TokenKind, Vocabulary};

enum V<'a> {
    Str(&'a str),
    U32(u32),
    Strs(&'a [&'a str]),
    I32s(&'a [i32]),
}

fn gguf(kvs: &[(&str, V)]) -> Vec<u8> {
    let mut out = b"GGUF".to_vec();
    out.extend(3u32.to_le_bytes());
    out.extend(0u64.to_le_bytes());
    out.extend((kvs.len() as u64).to_le_bytes());
    let string = |out: &mut Vec<u8>, s: &str| {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    };
    for (key, value) in kvs {
        string(&mut out, key);
        match value {
            V::Str(s) => {
                out.extend(8u32.to_le_bytes());
                string(&mut out, s);
            }
            V::U32(v) => {
                out.extend(4u32.to_le_bytes());
                out.extend(v.to_le_bytes());
            }
            V::Strs(items) => {
                out.extend(9u32.to_le_bytes());
                out.extend(8u32.to_le_bytes());
                out.extend((items.len() as u64).to_le_bytes());
                items.iter().for_each(|s| string(&mut out, s));
            }
            V::I32s(items) => {
                out.extend(9u32.to_le_bytes());
                out.extend(5u32.to_le_bytes());
                out.extend((items.len() as u64).to_le_bytes());
                items.iter().for_each(|v| out.extend(v.to_le_bytes()));
            }
        }
    }
    out
}

#[test]
fn byte_level_gguf() {
    let data = gguf(&[
        ("general.architecture", V::Str("llama")),
        ("tokenizer.ggml.model", V::Str("gpt2")),
        (
            "tokenizer.ggml.tokens",
            V::Strs(&["<|endoftext|>", "Ġthe", "Ċ", "hello", "<|im_end|>", "<think>"]),
        ),
        ("tokenizer.ggml.token_type", V::I32s(&[3, 1, 1, 1, 3, 4])),
        ("tokenizer.ggml.eos_token_id", V::U32(4)),
    ]);
    let v = Vocabulary::from_gguf_bytes(&data).unwrap();
    assert_eq!(v.len(), 6);
    assert_eq!(v.token_bytes(1), Some(&b" the"[..]));
    assert_eq!(v.token_bytes(2), Some(&b"\n"[..]));
    assert_eq!(v.kind(0), Some(TokenKind::Special));
    assert_eq!(v.kind(5), Some(TokenKind::Normal));
    assert_eq!(v.token_bytes(5), Some(&b"<think>"[..]));
    assert_eq!(v.stop_tokens(), &[0, 4]);
}

#[test]
fn sentencepiece_gguf() {
    let data = gguf(&[
        ("tokenizer.ggml.model", V::Str("llama")),
        (
            "tokenizer.ggml.tokens",
            V::Strs(&["<unk>", "<s>", "</s>", "<0x0A>", "▁the", "x", "unused"]),
        ),
        ("tokenizer.ggml.token_type", V::I32s(&[2, 3, 3, 6, 1, 1, 5])),
        ("tokenizer.ggml.eos_token_id", V::U32(2)),
    ]);
    let v = Vocabulary::from_gguf_bytes(&data).unwrap();
    assert_eq!(v.token_bytes(3), Some(&b"\n"[..]));
    assert_eq!(v.kind(3), Some(TokenKind::Byte));
    assert_eq!(v.token_bytes(4), Some(&b" the"[..]));
    assert_eq!(v.token_bytes(6), None, "unused ids have no token");
    assert_eq!(v.stop_tokens(), &[2]);
}

#[test]
fn malformed_gguf_is_an_error() {
    let good = gguf(&[
        ("tokenizer.ggml.model", V::Str("gpt2")),
        ("tokenizer.ggml.tokens", V::Strs(&["a", "b"])),
    ]);
    assert!(Vocabulary::from_gguf_bytes(&good).is_ok());
    for cut in 0..good.len() {
        assert!(Vocabulary::from_gguf_bytes(&good[..cut]).is_err(), "cut {cut}");
    }
    for at in 0..good.len() {
        for flip in [0x01u8, 0x80, 0xFF] {
            let mut bad = good.clone();
            bad[at] ^= flip;
            let _ = Vocabulary::from_gguf_bytes(&bad);
        }
    }
    let bert = gguf(&[
        ("tokenizer.ggml.model", V::Str("bert")),
        ("tokenizer.ggml.tokens", V::Strs(&["a"])),
    ]);
    assert!(Vocabulary::from_gguf_bytes(&bert).unwrap_err().to_string().contains("bert"));
    assert!(Vocabulary::from_gguf_bytes(b"GGML....").is_err());
}

#[test]
fn real_smollm2_gguf_when_present() {
    let dir = std::env::var("GRAMMASK_CACHE")
        .map(|d| format!("{d}/models"))
        .or_else(|_| std::env::var("HOME").map(|h| format!("{h}/.cache/grammask/models")));
    let path = dir.map(|d| format!("{d}/SmolLM2-135M-Instruct.Q4_1.gguf")).unwrap_or_default();
    if !std::path::Path::new(&path).exists() {
        eprintln!(
            "SKIPPED: real GGUF vocabulary test: {path} is absent (`grammask generate` fetches it)"
        );
        return;
    }
    let v = Vocabulary::load(&path).unwrap();
    assert_eq!(v.len(), 49_152);
    let im_end = v.token_id(b"<|im_end|>").unwrap();
    assert!(v.is_special(im_end));
    assert!(v.stop_tokens().contains(&im_end));
    assert_eq!(v.token_bytes(v.token_id(b" the").unwrap()), Some(&b" the"[..]));
}
