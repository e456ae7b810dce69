//! The builtin OpenAI vocabularies (cl100k_base, o200k_base) against `tiktoken-rs` itself.

use std::sync::OnceLock;

use grammask_tokenset::{TokenKind, Vocabulary};

fn cl100k() -> &'static Vocabulary {
    static V: OnceLock<Vocabulary> = OnceLock::new();
    V.get_or_init(|| Vocabulary::builtin("cl100k").unwrap())
}

fn o200k() -> &'static Vocabulary {
    static V: OnceLock<Vocabulary> = OnceLock::new();
    V.get_or_init(|| Vocabulary::builtin("o200k_base").unwrap())
}

#[test]
fn cl100k_sizes_and_specials() {
    let v = cl100k();
    assert_eq!(v.len(), 100_256 + 5);
    assert_eq!(v.vocab_size(), 100_277);
    assert_eq!(v.sorted().len(), 100_256);
    for (name, id) in [
        ("<|endoftext|>", 100_257),
        ("<|fim_prefix|>", 100_258),
        ("<|fim_middle|>", 100_259),
        ("<|fim_suffix|>", 100_260),
        ("<|endofprompt|>", 100_276),
    ] {
        assert_eq!(v.special_token_id(name.as_bytes()), Some(id), "{name}");
        assert_eq!(v.kind(id), Some(TokenKind::Special));
        assert_eq!(v.token_bytes(id), Some(name.as_bytes()));
    }
    assert_eq!(v.stop_tokens(), &[100_257]);
    assert_eq!(v.kind(100_256), None);
    assert_eq!(v.kind(100_270), None);
    assert_eq!(v.token_id(b"hello"), Some(15_339));
    assert_eq!(v.token_id(b" world"), Some(1_917));
    assert_eq!(v.token_bytes(0), Some(&b"!"[..]));
}

#[test]
fn o200k_sizes_and_specials() {
    let v = o200k();
    assert_eq!(v.len(), 199_998 + 2);
    assert_eq!(v.vocab_size(), 200_019);
    assert_eq!(v.special_token_id(b"<|endoftext|>"), Some(199_999));
    assert_eq!(v.special_token_id(b"<|endofprompt|>"), Some(200_018));
    assert_eq!(v.stop_tokens(), &[199_999]);
    assert_eq!(v.kind(199_998), None);
    assert_eq!(v.token_id(b"hello"), Some(24_912));
    assert_eq!(v.token_id(b" world"), Some(2_375));
}

/// Every sampled id's bytes equal what tiktoken-rs decodes it to, and ids without a token
/// are exactly those tiktoken-rs cannot decode.
#[test]
fn bytes_round_trip_with_tiktoken() {
    let checks: [(&Vocabulary, &tiktoken_rs::CoreBPE); 2] = [
        (cl100k(), tiktoken_rs::cl100k_base_singleton()),
        (o200k(), tiktoken_rs::o200k_base_singleton()),
    ];
    for (v, bpe) in checks {
        let size = v.vocab_size() as u32;
        for id in (0..size).step_by(97).chain(size - 30..size + 5) {
            let expected = bpe.decode_bytes(&[id]).ok();
            assert_eq!(v.token_bytes(id).map(<[u8]>::to_vec), expected, "id {id}");
        }
        // Encoding a text with tiktoken and concatenating our bytes gives the text back.
        let text = "Grammar-constrained decoding: {\"key\": [1, 2.5e-3, null]}\n\tünïcödé ✓ 日本語";
        let ids = bpe.encode_ordinary(text);
        let bytes: Vec<u8> =
            ids.iter().flat_map(|&id| v.token_bytes(id).unwrap().to_vec()).collect();
        assert_eq!(bytes, text.as_bytes());
    }
}

#[test]
fn sorted_vocab_is_sorted_and_complete() {
    let v = cl100k();
    let s = v.sorted();
    for pos in 1..s.len() {
        assert!(s.bytes(pos - 1) <= s.bytes(pos));
    }
    let mut ids = s.ids().to_vec();
    ids.sort_unstable();
    assert_eq!(ids, (0..100_256).collect::<Vec<u32>>());
}

#[test]
fn aliases_and_unknown_names() {
    assert!(Vocabulary::builtin("gpt-17").is_err());
    assert!(Vocabulary::load("no-such-builtin-or-file").is_err());
    let r50k = Vocabulary::load("gpt2").unwrap();
    assert_eq!(r50k.vocab_size(), 50_257);
    assert_eq!(r50k.stop_tokens(), &[50_256]);
}
