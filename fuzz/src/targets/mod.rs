//! The bodies of the cargo-fuzz targets (`fuzz/targets/fuzz_targets/*.rs` only call
//! them), kept in this library so that `cargo test` runs them over the checked-in corpus
//! (`fuzz/corpus/<target>/`) and clippy checks them with the rest of the workspace.
//!
//! Each `run` takes the fuzzer's bytes and panics when an invariant of grammask breaks; an
//! error returned by the library is never a finding, a panic inside it always is.

pub mod grammar_parse;
pub mod json_schema;
pub mod matcher;
pub mod structural_tag;
pub mod vocab_load;

use crate::check::{completion, Completion};
use grammask::{bitmask_len, get_bit, Limits, MatchError, Matcher, Vocabulary};
use std::sync::{Arc, OnceLock};

/// The body of a target.
pub type Target = fn(&[u8]);

/// Every target by name, for the corpus test and the scripts.
pub const TARGETS: &[(&str, Target)] = &[
    ("grammar_parse", grammar_parse::run),
    ("json_schema", json_schema::run),
    ("matcher", matcher::run),
    ("structural_tag", structural_tag::run),
    ("vocab_load", vocab_load::run),
];

/// Limits small enough that one fuzz input compiles and matches in milliseconds; a limit
/// that is hit is an error, which the targets accept.
pub fn fuzz_limits() -> Limits {
    Limits {
        max_grammar_size: 20_000,
        max_automaton_states: 20_000,
        max_live_stacks: 2_000,
        max_stack_depth: 2_000,
        max_rollback: 10_000,
        ..Limits::default()
    }
}

/// A small vocabulary for text grammars: the 256 single bytes, some multi-byte tokens
/// (JSON punctuation, words, a character cut in the middle), a special token spelled like
/// text, two stop tokens, and padding ids.
pub fn text_vocab() -> Arc<Vocabulary> {
    static VOCAB: OnceLock<Arc<Vocabulary>> = OnceLock::new();
    VOCAB
        .get_or_init(|| {
            let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
            for t in [
                "{\"", "\":", "\",", "\"}", ", ", ": ", "  ", "\n ", "true", "false", "null", "12",
                "0.", "e-", "ab", "abc", "x y", "[\"", "]}", "é", "日本", "😀",
            ] {
                tokens.push(t.as_bytes().to_vec());
            }
            tokens.push(vec![0xE6, 0x97]); // the first two bytes of 日
            tokens.push(vec![0xA5, b'a']); // a continuation byte, then ASCII
            let special = tokens.len() as u32;
            tokens.push(b"ab".to_vec());
            let stop1 = tokens.len() as u32;
            tokens.push(b"</s>".to_vec());
            let stop2 = tokens.len() as u32;
            tokens.push(b"<|eot|>".to_vec());
            let size = tokens.len() + 5;
            Arc::new(
                Vocabulary::from_byte_tokens(
                    tokens,
                    &[special, stop1, stop2],
                    &[stop1, stop2],
                    Some(size),
                )
                .expect("a valid vocabulary"),
            )
        })
        .clone()
}

/// The mask of `m`, or the limit error that refused it.
pub fn mask_of(m: &Matcher) -> Result<Vec<u32>, MatchError> {
    let size = m.grammar().vocabulary().vocab_size();
    let mut mask = vec![u32::MAX; bitmask_len(size) + 1];
    m.fill_next_token_bitmask(&mut mask)?;
    if mask.iter().skip(bitmask_len(size)).any(|&w| w != 0) {
        panic!("the mask sets words past bitmask_len");
    }
    mask.truncate(bitmask_len(size));
    Ok(mask)
}

/// The ids set in a mask.
pub fn allowed_ids(mask: &[u32], size: usize) -> Vec<u32> {
    (0..size as u32).filter(|&i| get_bit(mask, i)).collect()
}

/// Checks a mask against the matcher itself: for each id of `ids` (and ids past the
/// vocabulary), the bit is set iff `accept_token` succeeds on a fork (and
/// `validate_tokens` agrees); a refused `accept_token` leaves the matcher as it was; stop
/// tokens are set iff `can_terminate` (or, when the grammar names tokens, where it names
/// them; after a stop token, only stop tokens); special
/// tokens only when the grammar names tokens; padding ids and bits past `vocab_size`
/// never.
pub fn check_mask(
    m: &Matcher,
    mask: &[u32],
    ids: impl Iterator<Item = u32>,
    names_tokens: bool,
) -> Result<(), String> {
    let vocab = m.grammar().vocabulary().clone();
    let size = vocab.vocab_size();
    for i in size..mask.len() * 32 {
        if get_bit(mask, i as u32) {
            return Err(format!("bit {i} set past vocab_size {size}"));
        }
    }
    for id in [size as u32, size as u32 + 1, u32::MAX] {
        let mut f = m.fork();
        match f.accept_token(id) {
            Err(MatchError::TokenOutOfRange { .. }) => {}
            other => return Err(format!("id {id} >= vocab_size {size}: {other:?}")),
        }
        if f.history_len() != m.history_len() {
            return Err(format!("refused id {id} changed the history"));
        }
    }
    let allowed = allowed_ids(mask, size);
    if m.is_terminated() {
        let mut stops = vocab.stop_tokens().to_vec();
        stops.sort_unstable();
        stops.dedup();
        if allowed != stops {
            return Err(format!("after a stop token the mask is {allowed:?}"));
        }
    }
    let can_end = m.can_terminate();
    for &s in vocab.stop_tokens() {
        // A grammar that names tokens may also allow a stop token as a named token.
        let bit = get_bit(mask, s);
        if !m.is_terminated() && (bit != can_end) && (can_end || !names_tokens) {
            return Err(format!("stop token {s}: bit {bit} but can_terminate {can_end}"));
        }
    }
    for id in ids {
        let bit = get_bit(mask, id);
        let mut f = m.fork();
        let result = f.accept_token(id);
        // Automata are built when a step first enters their rule: a token the mask allows
        // (the mask reads no further than the token) may step into a rule whose
        // automaton passes a limit, an error of that step naming the limit, which changes
        // nothing.
        if let Err(MatchError::Limit { .. }) = result {
            if f.history_len() != m.history_len() || f.can_terminate() != can_end {
                return Err(format!("token {id} failing on a limit changed the matcher"));
            }
            continue;
        }
        let accepted = result.is_ok();
        if bit != accepted {
            return Err(format!(
                "token {id} {:?}: mask bit {bit}, accept_token {accepted}",
                String::from_utf8_lossy(vocab.token_bytes(id).unwrap_or_default())
            ));
        }
        if !accepted && (f.history_len() != m.history_len() || f.can_terminate() != can_end) {
            return Err(format!("refused token {id} changed the matcher"));
        }
        if accepted
            && f.history_len() != (m.history_len() + 1).min(m.grammar().limits().max_rollback)
        {
            return Err(format!("accepted token {id}: history_len {}", f.history_len()));
        }
        if m.validate_tokens(&[id]) != accepted as usize {
            return Err(format!("token {id}: validate_tokens disagrees with accept_token"));
        }
        let kind = vocab.kind(id);
        if bit && kind.is_none() {
            return Err(format!("padding id {id} allowed"));
        }
        if bit && !names_tokens && vocab.is_special(id) && !vocab.is_stop(id) {
            return Err(format!("special token {id} allowed in a grammar that names no token"));
        }
    }
    Ok(())
}

/// After an accepted (non-stop) token the grammar can still be completed: a bounded
/// search over bytes must not prove a dead end.
pub fn check_no_dead_end(m: &Matcher) -> Result<(), String> {
    if m.is_terminated() {
        return Ok(());
    }
    match completion(m, 16, 400) {
        Completion::Exhausted => {
            Err("the grammar cannot be completed after an allowed step".into())
        }
        Completion::Found | Completion::Unknown => Ok(()),
    }
}

/// A short walk: at each step the mask is checked against `accept_token` for every id,
/// then an allowed token picked by `choose` is accepted and the result must not be a
/// dead end; finally rollback to the start gives the first mask again.
pub fn short_walk(
    m: &mut Matcher,
    steps: usize,
    names_tokens: bool,
    mut choose: impl FnMut(usize) -> usize,
) -> Result<(), String> {
    let size = m.grammar().vocabulary().vocab_size();
    let Ok(first) = mask_of(m) else { return Ok(()) };
    let mut mask = first.clone();
    let mut taken = 0;
    let mut path = Vec::new();
    for _ in 0..steps {
        check_mask(m, &mask, 0..size as u32, names_tokens)
            .map_err(|e| format!("{e} (after tokens {path:?})"))?;
        let allowed = allowed_ids(&mask, size);
        if allowed.is_empty() || m.is_terminated() {
            break;
        }
        let id = allowed[choose(allowed.len())];
        match m.accept_token(id) {
            Ok(()) => {}
            // A rule entered past the token whose automaton passes a limit (see
            // `check_mask`) ends the walk.
            Err(MatchError::Limit { .. }) => break,
            Err(e) => return Err(format!("allowed token {id} refused: {e}")),
        }
        path.push(id);
        taken += 1;
        if !names_tokens {
            check_no_dead_end(m)?;
        }
        mask = match mask_of(m) {
            Ok(mask) => mask,
            Err(_) => break,
        };
    }
    m.rollback(taken).map_err(|e| format!("rollback({taken}): {e}"))?;
    if mask_of(m).ok().as_ref() != Some(&first) {
        return Err(format!("rollback({taken}) to the start: the mask differs"));
    }
    Ok(())
}
