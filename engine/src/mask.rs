//! Token masks: which tokens may come next.
//!
//! The vocabulary is walked in byte order ([`grammask_tokenset::SortedVocab`]), keeping
//! the matcher's closure after each prefix length: a token shares `lcp` bytes with the
//! previous one, so only its remaining bytes are read. When a prefix is refused, every
//! token that starts with it is skipped at once.
//!
//! With the adaptive token mask cache on (the default), the walk only visits the
//! context-dependent tokens of each stack's position ([`crate::mask_cache`]); the rest
//! come from the cache. A position under a return position has those tokens classified
//! once more with it (a parent entry), and the walk then visits only the ones that may
//! return below it. A position inside a leaf rule that the cache walks through is
//! classified with its return position from the first visit (a through entry).
//!
//! A token is allowed when its last byte is read by some stack. Every automaton state
//! can still finish its rule and every rule can finish, so an allowed token
//! never leads into a dead end.

use crate::compiler::CompiledGrammar;
use crate::error::MatchError;
use crate::ids::SortedPos;
use crate::ids::TokenSetId;
use crate::mask_cache::counters::{self, Path, Work};
use crate::mask_cache::{MaskEntry, ParentMask, PositionMask, TokenList};
use crate::matcher::{close_into, step_byte_into, Closure};
use crate::stack::{Position, Stack};
use grammask_tokenset::{bitmask_len, clear_bit, get_bit, set_bit, Vocabulary};
use std::sync::Arc;

/// Sets the bits of the stop tokens.
pub(crate) fn set_stop_tokens(vocab: &Vocabulary, bitmask: &mut [u32]) {
    for &id in vocab.stop_tokens() {
        set_bit(bitmask, id);
    }
}

/// Whether token `id` is in the grammar's token set `set`.
pub(crate) fn token_set_contains(grammar: &CompiledGrammar, set: TokenSetId, id: u32) -> bool {
    let set = &grammar.token_sets[set.index()];
    set.ids.binary_search(&id).is_ok() != set.negated
}

/// Fills `bitmask` (already zeroed) from the closure of the current stacks.
pub(crate) fn fill(
    grammar: &CompiledGrammar,
    closure: &Closure,
    bitmask: &mut [u32],
) -> Result<(), MatchError> {
    let vocab = &grammar.vocab;
    fill_text(grammar, closure, bitmask)?;
    // A stop token ends the output wherever it is taken, so it is never allowed by its
    // bytes (a tokenizer may give a stop token the kind `Normal`): only where the root
    // can end, or where the grammar names it.
    for &id in vocab.stop_tokens() {
        clear_bit(bitmask, id);
    }
    if closure.can_end {
        set_stop_tokens(vocab, bitmask);
    }
    // Tokens the grammar names.
    for config in &closure.configs {
        let dfa = grammar.dfa(config.top);
        for &(set, _) in dfa.token_edges(config.top.state) {
            let token_set = &grammar.token_sets[set.index()];
            if token_set.negated {
                for id in 0..vocab.id_bound() as u32 {
                    if vocab.kind(id).is_some() && token_set_contains(grammar, set, id) {
                        set_bit(bitmask, id);
                    }
                }
            } else {
                for &id in &token_set.ids {
                    // Padding ids (no token) are never allowed, even when named.
                    if vocab.kind(id).is_some() {
                        set_bit(bitmask, id);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Sets the bits of the text tokens some stack reads to their end.
fn fill_text(
    grammar: &CompiledGrammar,
    closure: &Closure,
    bitmask: &mut [u32],
) -> Result<(), MatchError> {
    if closure.configs.is_empty() {
        return Ok(());
    }
    let Some(cache) = &grammar.mask_cache else {
        return counters::timed(Work::StackWalk, || walk(grammar, closure, None, bitmask, None));
    };
    // Context-independent tokens from the cache, then the context-dependent ones of each
    // position checked against that stack alone (the other stacks are other configs).
    // (stack, its entry, how many return positions its dependent tokens are classified
    // with once more: one below a position's own entry, two below a through entry, whose
    // tokens may leave the caller's rule)
    let mut dependent: Vec<(&Stack, Entry<'_>, usize)> = Vec::new();
    for config in &closure.configs {
        // Inside a rule walked through: classified with its return position.
        let through = cache.walks_through(grammar, config.top.rule).then(|| config.pop()).flatten();
        let (entry, below) = match through {
            Some(parent) => {
                let entry = cache.through_entry(grammar, config.top, parent.top);
                counters::add(Path::ThroughEntry, || ordinary(grammar) - entry.dependent.len());
                (Entry::Through(entry), 2)
            }
            None => {
                let entry = cache.position_entry(grammar, config.top);
                counters::add(Path::PositionEntry, || ordinary(grammar) - entry.dependent.len());
                (Entry::Cache(entry), 1)
            }
        };
        entry.apply(bitmask);
        if !entry.dependent.is_empty() {
            dependent.push((config, entry, below));
        }
    }
    for (config, entry, below) in dependent {
        // Deeper first: most of these tokens end inside the rule below.
        let mut frames = [config.top; 3];
        let mut stack = config.clone();
        let mut n = 1;
        while n <= below {
            let Some(next) = stack.pop() else { break };
            frames[n] = next.top;
            stack = next;
            n += 1;
        }
        // A shorter stack is classified whole: the root's own dependent tokens (those
        // that enter a callee such as `json-value` after some bytes) are then decided
        // once, not walked at every visit.
        frames[..n].reverse();
        let deeper = cache.parent_entry(grammar, &frames[..n], &entry.dependent)?;
        if let Some(deeper) = &deeper {
            deeper.accepted.apply(bitmask);
            counters::add(Path::ParentEntry, || entry.dependent.len() - deeper.dependent.len());
        }
        let remaining = deeper.as_ref().map_or(&entry.dependent[..], |d| &d.dependent[..]);
        if !remaining.is_empty() {
            let seed = Closure { configs: vec![config.clone()], can_end: false };
            counters::timed(Work::StackWalk, || {
                walk(grammar, &seed, Some(remaining), bitmask, None)
            })?;
        }
    }
    Ok(())
}

/// The number of ordinary tokens (those of the sorted vocabulary), read only by the
/// path counters.
fn ordinary(grammar: &CompiledGrammar) -> usize {
    grammar.vocab.sorted().len()
}

/// A stack top's classification: its position's cache entry, or its entry with the
/// return position inside a rule walked through.
enum Entry<'a> {
    Cache(MaskEntry<'a>),
    Through(Arc<PositionMask>),
}

impl std::ops::Deref for Entry<'_> {
    type Target = PositionMask;

    fn deref(&self) -> &PositionMask {
        match self {
            Entry::Cache(entry) => entry,
            Entry::Through(entry) => entry,
        }
    }
}

/// Classifies the context-dependent tokens `dependent` of the top of `frames` (positions,
/// bottom first: the return positions below the top, then the top) as if the stack held
/// those frames and nothing below them ([`ParentMask`]).
pub(crate) fn classify_below(
    grammar: &CompiledGrammar,
    frames: &[Position],
    dependent: &[SortedPos],
) -> Result<ParentMask, MatchError> {
    // Returning below the bottom frame ends the stack (`can_end`).
    let mut stack = Stack::root(frames[0]);
    for pair in frames.windows(2) {
        stack = stack.push(pair[0], pair[1]);
    }
    let seed = Closure { configs: vec![stack], can_end: false };
    let mut bits = vec![0u32; bitmask_len(grammar.vocab.vocab_size())];
    let mut still = Vec::new();
    walk(grammar, &seed, Some(dependent), &mut bits, Some(&mut still))?;
    let sorted = grammar.vocab.sorted();
    let accepted = dependent
        .iter()
        .map(|&p| sorted.token_id(p.index()))
        .filter(|&id| get_bit(&bits, id))
        .collect();
    Ok(ParentMask { accepted: TokenList::Ids(accepted), dependent: still })
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The sorted-vocabulary walk from `seed`: over every token (`positions` is `None`) or
/// over the listed sorted-vocabulary positions (ascending). Sets the bit of each token
/// some stack reads to its end; tokens already set are not walked again.
///
/// With `ended`, the seed's bottom is a boundary rather than the end of the document:
/// the listed tokens that no stack reads to the end, but whose prefix left a closure
/// that could return below the bottom (`can_end`) with bytes still to read, are pushed
/// to `ended` (ascending), as they depend on what lies below.
///
/// Kept out of line, so that the byte steps inline into its loop.
#[inline(never)]
fn walk(
    grammar: &CompiledGrammar,
    seed: &Closure,
    positions: Option<&[SortedPos]>,
    bitmask: &mut [u32],
    mut ended: Option<&mut Vec<SortedPos>>,
) -> Result<(), MatchError> {
    let sorted = grammar.vocab.sorted();
    let count = positions.map_or(sorted.len(), <[SortedPos]>::len);
    counters::add(Path::StackWalk, || count);
    let position = |k: usize| positions.map_or(k, |p| p[k].index());
    // levels[d]: the closure after the first d bytes of the current token.
    let mut levels: Vec<Closure> = vec![seed.clone()];
    // ended_by[d]: whether a closure after 1..=d bytes could return below the bottom.
    let mut ended_by: Vec<bool> = vec![false];
    let mut depth = 0usize; // levels[0..=depth] hold for the previous token's prefix
    let mut previous: &[u8] = &[];
    let mut raw: Vec<Stack> = Vec::new();
    let mut k = 0usize;
    while k < count {
        let i = position(k);
        let id = sorted.token_id(i);
        if positions.is_some() && get_bit(bitmask, id) {
            k += 1;
            continue;
        }
        let bytes = sorted.bytes(i);
        let shared = match positions {
            None => sorted.lcp(i),
            Some(_) => common_prefix_len(previous, bytes),
        }
        .min(depth);
        depth = shared;
        previous = bytes;
        let mut refused_at = None;
        for (d, &b) in bytes.iter().enumerate().skip(shared) {
            step_byte_into(grammar, &levels[d].configs, b, &mut raw);
            if raw.is_empty() {
                refused_at = Some(d);
                break;
            }
            if levels.len() <= d + 1 {
                levels.push(Closure::default());
            }
            close_into(grammar, &raw, &mut levels[d + 1])?;
            if ended.is_some() {
                let ended_here = ended_by[d] || levels[d + 1].can_end;
                if ended_by.len() <= d + 1 {
                    ended_by.push(ended_here);
                } else {
                    ended_by[d + 1] = ended_here;
                }
            }
            depth = d + 1;
        }
        match refused_at {
            Some(d) => match positions {
                None => k = sorted.next_without_prefix(i, d + 1),
                Some(p) => {
                    let refused = &bytes[..=d];
                    let first = k;
                    k += 1;
                    while k < count && sorted.bytes(p[k].index()).starts_with(refused) {
                        k += 1;
                    }
                    if let Some(ended) = ended.as_deref_mut().filter(|_| ended_by[d]) {
                        ended.extend_from_slice(&p[first..k]);
                    }
                }
            },
            None => {
                if !bytes.is_empty() {
                    set_bit(bitmask, id);
                }
                k += 1;
            }
        }
    }
    Ok(())
}
