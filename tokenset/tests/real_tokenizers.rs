//! Real Hugging Face `tokenizer.json` files: Llama-3 (byte-level BPE), Llama-2
//! (sentencepiece with byte fallback) and Qwen3 (byte-level BPE).
//!
//! The files come from `scripts/fetch-tokenizers.sh`; the tests read them from
//! `$GRAMMASK_TOKENIZERS/<name>/tokenizer.json` and are skipped (with a loud message) when
//! the variable is unset or a file is missing.

use std::io::Write as _;
use std::path::PathBuf;

use grammask_tokenset::{TokenKind, Vocabulary};

/// Says a test is skipped on stderr itself, so the test harness does not capture it.
fn skipped(message: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: {message}");
}

fn tokenizer(name: &str) -> Option<Vocabulary> {
    let Some(dir) = std::env::var_os("GRAMMASK_TOKENIZERS") else {
        skipped(&format!(
            "{name} tokenizer test: set GRAMMASK_TOKENIZERS (scripts/fetch-tokenizers.sh)"
        ));
        return None;
    };
    let path = PathBuf::from(dir).join(name).join("tokenizer.json");
    if !path.is_file() {
        skipped(&format!(
            "{name} tokenizer test: {} is missing; set GRAMMASK_TOKENIZERS \
             (scripts/fetch-tokenizers.sh)",
            path.display()
        ));
        return None;
    }
    Some(Vocabulary::from_tokenizer_json(&path).unwrap())
}

/// Invariants every loaded vocabulary keeps.
fn check_common(v: &Vocabulary) {
    let s = v.sorted();
    assert_eq!(s.len() + v.special_tokens().count(), v.len());
    for pos in 1..s.len() {
        assert!(s.bytes(pos - 1) <= s.bytes(pos));
    }
    for &id in v.stop_tokens() {
        assert!(v.is_special(id), "stop token {id} is not special");
    }
}

#[test]
fn llama3() {
    let Some(v) = tokenizer("llama3") else { return };
    check_common(&v);
    assert_eq!(v.len(), 128_256);
    assert_eq!(v.vocab_size(), 128_256);
    assert_eq!(v.token_id(b" the"), Some(279));
    assert_eq!(v.token_bytes(279), Some(&b" the"[..]));
    assert_eq!(v.token_id(b"\n"), Some(198));
    assert_eq!(v.special_token_id(b"<|begin_of_text|>"), Some(128_000));
    assert_eq!(v.kind(128_000), Some(TokenKind::Special));
    assert_eq!(v.special_token_id(b"<|eot_id|>"), Some(128_009));
    assert_eq!(v.stop_tokens(), &[128_001, 128_009]);
    assert_eq!(v.sorted().len(), 128_000);
    // A byte-level vocabulary has every single byte as a token.
    for b in 0..=255u8 {
        assert!(v.token_id(&[b]).is_some(), "byte {b:#x}");
    }
}

#[test]
fn llama3_extends_cl100k() {
    let Some(v) = tokenizer("llama3") else { return };
    // Llama-3's first 100,256 tokens are cl100k's, with the same ids.
    let bpe = tiktoken_rs::cl100k_base_singleton();
    for id in (0..100_256).step_by(7) {
        assert_eq!(v.token_bytes(id).map(<[u8]>::to_vec), bpe.decode_bytes(&[id]).ok(), "id {id}");
    }
}

#[test]
fn llama2() {
    let Some(v) = tokenizer("llama2") else { return };
    check_common(&v);
    assert_eq!(v.len(), 32_000);
    assert_eq!(v.vocab_size(), 32_000);
    // `▁the` is id 272 in this tokenizer (the numbering of Mistral-7B's, which the
    // package ships as its Llama-2 tokenizer).
    assert_eq!(v.token_bytes(272), Some(&b" the"[..]));
    assert_eq!(v.token_id(b" the"), Some(272));
    assert_eq!(v.token_bytes(13), Some(&b"\n"[..])); // <0x0A>
    assert_eq!(v.kind(13), Some(TokenKind::Byte));
    for b in 0..=255u32 {
        assert_eq!(v.token_bytes(3 + b), Some(&[b as u8][..]), "<0x{b:02X}>");
    }
    for (id, name) in [(0, "<unk>"), (1, "<s>"), (2, "</s>")] {
        assert_eq!(v.kind(id), Some(TokenKind::Special));
        assert_eq!(v.token_bytes(id), Some(name.as_bytes()));
    }
    assert_eq!(v.stop_tokens(), &[2]);
    assert_eq!(v.sorted().len(), 32_000 - 3);
}

#[test]
fn qwen3() {
    let Some(mut v) = tokenizer("qwen3") else { return };
    check_common(&v);
    assert_eq!(v.len(), 151_669);
    assert_eq!(v.special_token_id(b"<|im_end|>"), Some(151_645));
    assert_eq!(v.stop_tokens(), &[151_643, 151_645]);
    // Non-special added tokens are text.
    assert_eq!(v.token_id(b"<think>"), Some(151_667));
    assert_eq!(v.kind(151_667), Some(TokenKind::Normal));
    // Qwen's logits are wider than its tokenizer.
    v.set_vocab_size(151_936).unwrap();
    assert_eq!(v.vocab_size(), 151_936);
    assert_eq!(v.token_bytes(151_900), None);
}
