//! `vocab_load`: the vocabulary loaders of grammask-tokenset on malformed files.
//!
//! Byte 0 picks the loader: `tokenizer.json` (Hugging Face), a tiktoken rank file (with
//! special tokens and a logits width taken from the next bytes), or a GGUF file; the
//! rest of the input is the file. Loaders return errors, never panic. A vocabulary that
//! loads is consistent (ids, kinds, bytes, stop tokens, the sorted view and its trie
//! data agree), and the engine compiles a small grammar over it whose masks equal
//! `accept_token`.

use super::{allowed_ids, check_mask, check_no_dead_end, mask_of};
use crate::rng::{ByteSource, Choices};
use grammask::tokenset::MAX_VOCAB_SIZE;
use grammask::{Compiler, Matcher, TokenKind, Vocabulary};

/// Special-token names the tiktoken loader is given.
const SPECIAL_NAMES: &[&str] = &["<|endoftext|>", "<|im_end|>", "<|fim|>", "", "a", "\u{0}"];

/// Checks the loaded vocabulary's invariants.
pub fn check_vocab(v: &Vocabulary) {
    let size = v.vocab_size();
    assert!(v.len() <= v.id_bound() && v.id_bound() <= size, "len/id_bound/vocab_size");
    assert!(size <= MAX_VOCAB_SIZE, "vocab_size {size} above the maximum");
    assert_eq!(v.is_empty(), v.iter().next().is_none());
    let mut count = 0;
    let mut text = 0;
    for (id, kind, bytes) in v.iter() {
        count += 1;
        assert!((id as usize) < v.id_bound(), "id {id} at or past id_bound");
        assert_eq!(v.kind(id), Some(kind));
        assert_eq!(v.token_bytes(id), Some(bytes));
        assert_eq!(v.is_special(id), kind == TokenKind::Special);
        if kind.is_text() {
            if !bytes.is_empty() {
                text += 1;
            }
            let found = v.token_id(bytes).expect("a text token's bytes find a token");
            assert_eq!(v.token_bytes(found), Some(bytes), "token_id({bytes:?})");
        } else {
            let found = v.special_token_id(bytes).expect("a special token's name finds it");
            assert_eq!(v.token_bytes(found), Some(bytes));
            assert!(v.is_special(found));
        }
    }
    assert_eq!(count, v.len(), "iter() and len() disagree");
    for &s in v.stop_tokens() {
        assert!((s as usize) < size, "stop token {s} past vocab_size {size}");
        assert!(v.is_stop(s));
        assert!(v.kind(s).is_some(), "stop token {s} has no token");
    }
    for (id, name) in v.special_tokens() {
        assert!(v.is_special(id) && v.token_bytes(id) == Some(name), "special token {id}");
    }
    let sorted = v.sorted();
    assert_eq!(sorted.len(), text, "the sorted view holds the text tokens with bytes");
    for pos in 0..sorted.len() {
        let (id, bytes) = (sorted.token_id(pos), sorted.bytes(pos));
        assert_eq!(v.token_bytes(id), Some(bytes));
        if pos > 0 {
            let prev = sorted.bytes(pos - 1);
            assert!(prev <= bytes, "not sorted at {pos}");
            let lcp = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            assert_eq!(sorted.lcp(pos), lcp, "lcp at {pos}");
        }
        let end = sorted.subtree_end(pos);
        assert!(end > pos && end <= sorted.len());
        assert!((pos + 1..end).all(|j| sorted.bytes(j).starts_with(bytes)), "subtree at {pos}");
        assert!(end == sorted.len() || !sorted.bytes(end).starts_with(bytes));
        let range = sorted.prefix_range(bytes);
        assert!(range.contains(&pos), "prefix_range of the token at {pos}");
        assert_eq!(sorted.find(bytes).map(|p| sorted.bytes(p)), Some(bytes));
    }
}

/// Compiles a small grammar over the vocabulary and checks a few masked steps (on at
/// most the first 2,000 ids: the fuzzer may declare a logits width of millions).
fn check_engine(v: Vocabulary, choose: &mut ByteSource<'_>) {
    let compiler = Compiler::new(&v);
    let g = compiler
        .compile_gbnf("root ::= ([a-z0-9 ]+ | \"<\" [^>]* \">\" | [^\\x00-\\x7f])+ \"\\n\"?")
        .expect("a simple grammar compiles over any vocabulary");
    let mut m = Matcher::new(g);
    let n = v.vocab_size().min(2_000) as u32;
    for _ in 0..4 {
        let mask = mask_of(&m).expect("no limit is near");
        let ids = (0..n).chain(v.stop_tokens().iter().copied());
        if let Err(e) = check_mask(&m, &mask, ids, false) {
            panic!("{e}");
        }
        let allowed = allowed_ids(&mask, v.vocab_size());
        if allowed.is_empty() || m.is_terminated() {
            break;
        }
        let id = *choose.pick(&allowed);
        m.accept_token(id).expect("an allowed token is accepted");
        check_no_dead_end(&m).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The target.
pub fn run(data: &[u8]) {
    let mut src = ByteSource::new(data);
    let loaded = match src.byte() % 3 {
        0 => Vocabulary::from_tokenizer_json_bytes(src.rest()),
        1 => {
            let n = src.below(3);
            let specials: Vec<(&str, u32)> = (0..n)
                .map(|_| {
                    let name = *src.pick(SPECIAL_NAMES);
                    let id = match src.below(4) {
                        0 => u32::MAX,
                        1 => src.below(65_536) as u32,
                        _ => src.below(300) as u32,
                    };
                    (name, id)
                })
                .collect();
            let vocab_size = match src.below(4) {
                0 => Some(src.below(70_000)),
                1 => Some(usize::MAX),
                _ => None,
            };
            Vocabulary::from_tiktoken_bytes(src.rest(), &specials, vocab_size)
        }
        _ => Vocabulary::from_gguf_bytes(src.rest()),
    };
    let Ok(v) = loaded else { return };
    check_vocab(&v);
    let mut choose = ByteSource::new(data);
    check_engine(v, &mut choose);
}
