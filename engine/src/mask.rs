//! Token masks: which tokens may come next.
//!
//! The vocabulary is walked in byte order ([`grammask_tokenset::SortedVocab`]), keeping
//! the matcher's closure after each prefix length: a token shares `lcp` bytes with the
//! previous one, so only its remaining bytes are read. When a prefix is refused, every
//! token that starts with it is skipped at once.
//!
//! A token is allowed when its last byte is read by some stack. Automata are trimmed
//! (every state can still finish its rule) and every rule can finish, so an allowed token
//! never leads into a dead end.

use crate::compiler::CompiledGrammar;
use crate::error::MatchError;
use crate::ids::TokenSetId;
use crate::matcher::{close_into, step_byte_into, Closure};
use crate::stack::Stack;
use grammask_tokenset::{set_bit, Vocabulary};

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
    if closure.can_end {
        set_stop_tokens(vocab, bitmask);
    }
    // Tokens the grammar names.
    for config in &closure.configs {
        let dfa = grammar.dfa(config.top);
        for &(set, _) in dfa.token_edges(config.top.state) {
            let token_set = &grammar.token_sets[set.index()];
            if token_set.negated {
                for id in 0..vocab.len() as u32 {
                    if vocab.token_bytes(id).is_some() && token_set_contains(grammar, set, id) {
                        set_bit(bitmask, id);
                    }
                }
            } else {
                for &id in &token_set.ids {
                    if (id as usize) < vocab.vocab_size() {
                        set_bit(bitmask, id);
                    }
                }
            }
        }
    }
    if closure.configs.is_empty() {
        return Ok(());
    }
    walk_vocabulary(grammar, closure, bitmask)
}

/// The sorted-vocabulary walk.
fn walk_vocabulary(
    grammar: &CompiledGrammar,
    closure: &Closure,
    bitmask: &mut [u32],
) -> Result<(), MatchError> {
    let sorted = grammar.vocab.sorted();
    let n = sorted.len();
    // levels[d]: the closure after the first d bytes of the current token.
    let mut levels: Vec<Closure> = vec![closure.clone()];
    let mut depth = 0usize; // levels[0..=depth] are valid for the current prefix
    let mut raw: Vec<Stack> = Vec::new();
    let mut i = 0usize;
    while i < n {
        let bytes = sorted.bytes(i);
        let shared = sorted.lcp(i).min(depth);
        depth = shared;
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
            depth = d + 1;
        }
        match refused_at {
            Some(d) => i = sorted.next_without_prefix(i, d + 1),
            None => {
                if !bytes.is_empty() {
                    set_bit(bitmask, sorted.token_id(i));
                }
                i += 1;
            }
        }
    }
    Ok(())
}
