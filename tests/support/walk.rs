//! Seeded masked random walks for the tests: at every step a token the mask allows, with
//! a bias towards finishing, so that walks end in a whole document (a stop token taken).
//! Used by `tests/walks.rs` (llama.cpp's grammars) and `tests/independent_validation.rs`
//! (JSON Schemas, each document checked by an independent validator).

use grammask::{bitmask_len, get_bit, CompiledGrammar, Matcher, Vocabulary};
use grammask_fuzz::rng::XorShift as Rng;
use std::sync::Arc;

/// How a walk goes.
#[derive(Clone, Copy, Debug)]
pub struct WalkConfig {
    /// Steps before the walk gives up (then `reached_eos` is false).
    pub max_steps: usize,
    /// Steps that take a uniformly random allowed token before the walk heads for the end.
    pub random_steps: usize,
    /// Whether heading for the end searches a beam of structural tokens (thorough, and
    /// slow on large vocabularies) or takes the best-closing allowed one.
    pub beam: bool,
}

const BEAM_DEPTH: usize = 6;
const BEAM_WIDTH: usize = 8;

pub fn allowed_ids(m: &Matcher, words: &mut [u32], size: usize) -> Vec<u32> {
    m.fill_next_token_bitmask(words).unwrap();
    let mut out = Vec::new();
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let id = w * 32 + bits.trailing_zeros() as usize;
            if id < size {
                out.push(id as u32);
            }
            bits &= bits - 1;
        }
    }
    out
}

/// Short tokens of ASCII punctuation and whitespace, with at most one letter or digit:
/// the tokens that close structures.
pub fn structural_tokens(vocab: &Vocabulary) -> Vec<u32> {
    (0..vocab.vocab_size() as u32)
        .filter(|&t| {
            let Some(b) = vocab.token_bytes(t) else { return false };
            !vocab.is_special(t)
                && (1..=3).contains(&b.len())
                && b.iter().all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace())
                && b.iter().filter(|c| c.is_ascii_alphanumeric()).count() <= 1
        })
        .collect()
}

fn ends_after(m: &Matcher, tokens: &[u32]) -> bool {
    let mut probe = m.fork();
    tokens.iter().all(|&t| probe.accept_token(t).is_ok()) && probe.can_terminate()
}

/// A token that brings the end near: one after which the text can end, else one after
/// which a structural token ends it, else a short one that closes brackets.
fn finishing_token(
    m: &Matcher,
    words: &[u32],
    texts: &[u32],
    structural: &[u32],
    beam: bool,
    rng: &mut Rng,
) -> u32 {
    let vocab = m.grammar().vocabulary();
    // Bytes the grammar forces (a required key, say): the longest allowed token that
    // writes a part of them.
    let forced = m.find_jump_forward_bytes();
    if !forced.is_empty() {
        let best = texts
            .iter()
            .copied()
            .filter(|&t| {
                vocab.token_bytes(t).is_some_and(|b| !b.is_empty() && forced.starts_with(b))
            })
            .max_by_key(|&t| vocab.token_bytes(t).map_or(0, <[u8]>::len));
        if let Some(t) = best {
            return t;
        }
    }
    let mut cands: Vec<u32> = structural.iter().copied().filter(|&t| get_bit(words, t)).collect();
    cands.extend((0..16).map(|_| texts[rng.below(texts.len())]));
    let ending: Vec<u32> = cands.iter().copied().filter(|&t| ends_after(m, &[t])).collect();
    if !ending.is_empty() {
        return ending[rng.below(ending.len())];
    }
    if !beam {
        let score = |t: u32| json_closing_score(vocab.token_bytes(t).unwrap_or_default());
        cands.sort_by_key(|&t| std::cmp::Reverse(score(t)));
        return cands[rng.below(cands.len().min(2))];
    }
    // Beam search over structural tokens for a short way to the end.
    let score = |t: u32| closing_score(vocab.token_bytes(t).unwrap_or_default());
    let mut beam: Vec<(Matcher, Option<u32>, i64)> = vec![(m.fork(), None, 0)];
    for _ in 0..BEAM_DEPTH {
        let mut next: Vec<(Matcher, Option<u32>, i64)> = Vec::new();
        for (node, first, total) in &beam {
            let Ok(bytes) = node.next_bytes() else { continue };
            for &t in structural {
                let b = vocab.token_bytes(t).unwrap_or_default();
                if !bytes[b[0] as usize] {
                    continue;
                }
                let mut child = node.fork();
                if child.accept_token(t).is_err() {
                    continue;
                }
                let first = first.unwrap_or(t);
                if child.can_terminate() {
                    return first;
                }
                next.push((child, Some(first), total + score(t)));
            }
        }
        // Keep the best node of each kind of state (told apart by the bytes that may
        // follow), so that the beam does not fill with one kind of token.
        next.sort_by_key(|n| std::cmp::Reverse(n.2));
        let mut kinds = std::collections::HashSet::new();
        next.retain(|n| n.0.next_bytes().is_ok_and(|b| kinds.insert(b)));
        next.truncate(BEAM_WIDTH);
        beam = next;
    }
    cands.sort_by_key(|&t| std::cmp::Reverse(score(t)));
    cands[rng.below(cands.len().min(3))]
}

/// How much a token's bytes help to finish a JSON document: closing quotes and brackets
/// count, opening brackets count against, long tokens a little against.
fn json_closing_score(bytes: &[u8]) -> i64 {
    let mut s = 0i64;
    for &b in bytes {
        match b {
            b']' | b'}' | b'"' => s += 3,
            b'[' | b'{' => s -= 4,
            _ => {}
        }
    }
    s - bytes.len() as i64
}

/// How much a token's bytes help to finish: closing brackets and line ends count,
/// opening brackets count against, long tokens a little against.
fn closing_score(bytes: &[u8]) -> i64 {
    let mut s = 0i64;
    for &b in bytes {
        match b {
            b']' | b'}' | b')' | b'\n' | b'"' | b';' => s += 3,
            b'[' | b'{' => s -= 4,
            b'(' => s -= 1,
            _ => {}
        }
    }
    s - bytes.len() as i64
}

/// A finished walk: the bytes written, whether it ended with a stop token, its steps.
pub struct Walk {
    pub text: Vec<u8>,
    pub reached_eos: bool,
    pub steps: usize,
}

/// One seeded walk. The first `config.random_steps` steps take a uniformly random allowed
/// token (rarely the stop token); later steps take the stop token when allowed (with a
/// probability growing with the step count), else mostly a token that brings the end
/// near ([`finishing_token`]).
/// `on_step` sees the text after each token.
pub fn walk(
    grammar: &Arc<CompiledGrammar>,
    config: WalkConfig,
    structural: &[u32],
    seed: u64,
    name: &str,
    on_step: &mut dyn FnMut(&[u8]),
) -> Walk {
    let vocab = grammar.vocabulary().clone();
    let size = vocab.vocab_size();
    let mut words = vec![0u32; bitmask_len(size)];
    let mut rng = Rng::new(seed);
    let mut m = Matcher::new(grammar.clone());
    let mut text = Vec::new();
    for step in 0..config.max_steps {
        let allowed = allowed_ids(&m, &mut words, size);
        assert!(
            !allowed.is_empty(),
            "{name} seed {seed}: empty mask after {:?}",
            String::from_utf8_lossy(&text)
        );
        let stops: Vec<u32> = allowed.iter().copied().filter(|&t| vocab.is_stop(t)).collect();
        let texts: Vec<u32> = allowed.iter().copied().filter(|&t| !vocab.is_stop(t)).collect();
        assert_eq!(!stops.is_empty(), m.can_terminate(), "{name}: stop tokens vs can_terminate");
        let progress = step as f64 / config.max_steps as f64;
        let take_stop = !stops.is_empty()
            && (texts.is_empty()
                || (step >= config.random_steps && rng.chance(0.5 + progress))
                || rng.chance(0.03));
        if take_stop {
            m.accept_token(stops[0]).unwrap();
            assert!(m.is_terminated());
            return Walk { text, reached_eos: true, steps: step + 1 };
        }
        let pick = if step < config.random_steps || rng.chance(0.2) {
            texts[rng.below(texts.len())]
        } else {
            finishing_token(&m, &words, &texts, structural, config.beam, &mut rng)
        };
        assert!(get_bit(&words, pick));
        m.accept_token(pick).unwrap_or_else(|e| panic!("{name}: allowed token {pick}: {e}"));
        text.extend_from_slice(vocab.token_bytes(pick).unwrap());
        on_step(&text);
    }
    Walk { text, reached_eos: false, steps: config.max_steps }
}
