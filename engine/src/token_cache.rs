//! The adaptive token mask cache: for each PDA position, which tokens are decided by the
//! position alone.
//!
//! Reading a token from position `(rule, state)` follows the rule's automaton byte by
//! byte. If the automaton reads every byte, the token is *accepted* whatever the stack
//! holds. If it refuses a byte and no state on the way (after the first byte) could call
//! another rule or end the rule, no other path exists: the token is *rejected*, whatever
//! the stack holds. Otherwise the answer depends on the stack (the token may finish the
//! rule and continue in the caller, or enter a callee): the token is *context-dependent*
//! and is checked at run time against the real stacks.
//!
//! The classification walks the sorted vocabulary with one automaton state per prefix
//! length and skips every token that shares a refused prefix, so it costs about one table
//! lookup per trie node visited. Context expansion ([`crate::follow`]) narrows the
//! context-dependent tokens: leaving the automaton only matters when the next byte can
//! follow there (start a callee, or follow the rule somewhere in the grammar).
//! Inside strings, the vocabulary's slices ([`crate::slices`]) accept most tokens at
//! once: a position that reads every run of up to `r` JSON-string characters takes the
//! slices of such runs by a shared bitmask and walks only the other tokens.
//! Entries are filled on first visit (`OnceLock`: never twice, safe from many threads)
//! and shared by every matcher of the grammar, while their total size stays within
//! `Limits::max_mask_cache_bytes`; past it an entry is computed for one mask and dropped. Accepted
//! sets are stored as an id list or a bitset, whichever is smaller (plus the shared
//! bitmask of the slices, which belongs to the vocabulary and is not counted).

use crate::automaton::Dfa;
use crate::follow::{RuleExits, CLOSED};
use crate::ids::StateId;
use crate::slices::{safe_depth, Slicing, Trie, EXACT};
use grammask_tokenset::{bitmask_len, set_bit, Vocabulary};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// The exit bytes of a rule's states ([`crate::follow`]): a dense index per state (read
/// at every byte of the classification walk), the 32-byte sets only for open states.
pub(crate) type Exits<'a> = &'a RuleExits;

/// The tokens an accepted set holds, in its smaller form.
#[derive(Debug)]
pub(crate) enum TokenList {
    /// Token ids.
    Ids(Vec<u32>),
    /// A bitmask over the vocabulary.
    Bits(Vec<u32>),
}

impl TokenList {
    /// ORs the set into `bitmask`.
    pub(crate) fn apply(&self, bitmask: &mut [u32]) {
        match self {
            TokenList::Ids(ids) => ids.iter().for_each(|&id| set_bit(bitmask, id)),
            TokenList::Bits(words) => {
                for (w, &x) in bitmask.iter_mut().zip(words) {
                    *w |= x;
                }
            }
        }
    }

    /// Heap bytes used.
    pub(crate) fn memory(&self) -> usize {
        match self {
            TokenList::Ids(v) | TokenList::Bits(v) => v.len() * 4,
        }
    }
}

/// The cached classification of one position.
#[derive(Debug)]
pub(crate) struct PositionMask {
    /// Tokens accepted whatever the stack (with `sliced`).
    pub(crate) accepted: TokenList,
    /// The union of the vocabulary slices accepted whole ([`crate::slices`]): shared
    /// vocabulary-level data, not counted in [`PositionMask::memory`].
    pub(crate) sliced: Option<Arc<Vec<u32>>>,
    /// Positions in the sorted vocabulary of the context-dependent tokens, ascending.
    pub(crate) dependent: Vec<u32>,
}

impl PositionMask {
    /// ORs the accepted tokens into `bitmask`.
    pub(crate) fn apply(&self, bitmask: &mut [u32]) {
        if let Some(words) = &self.sliced {
            for (w, &x) in bitmask.iter_mut().zip(words.iter()) {
                *w |= x;
            }
        }
        self.accepted.apply(bitmask);
    }

    /// Heap bytes used.
    pub(crate) fn memory(&self) -> usize {
        self.accepted.memory() + self.dependent.len() * 4
    }
}

/// The context-dependent tokens of a position `P` classified once more with the return
/// position `R` below it, as if the stack ended there: the tokens some path reads to
/// their end without returning below `R` are accepted under any stack whose top two
/// frames are `R` and `P`; those no path reads and none could leave `R`'s rule before
/// their end are rejected; only the rest, which may return below `R` with bytes left,
/// still depend on the stack. A recursive grammar's strings, numbers and keys mostly end
/// inside their caller's rule (`",` `"}` `":`), so these entries spare most walks against
/// the real stacks.
#[derive(Debug)]
pub(crate) struct ParentMask {
    /// Ids of the tokens accepted.
    pub(crate) accepted: Vec<u32>,
    /// Sorted-vocabulary positions of the tokens that still depend on the stack,
    /// ascending.
    pub(crate) dependent: Vec<u32>,
}

impl ParentMask {
    /// Heap bytes used.
    pub(crate) fn memory(&self) -> usize {
        (self.accepted.len() + self.dependent.len()) * 4 + std::mem::size_of::<Self>()
    }
}

/// A position's classification: stored in the cache, or computed for one use because
/// the cache reached its bound (`Limits::max_mask_cache_bytes`).
#[derive(Debug)]
pub(crate) enum MaskEntry<'a> {
    /// The cache's entry.
    Stored(&'a PositionMask),
    /// Computed now, not kept.
    Unstored(PositionMask),
}

impl std::ops::Deref for MaskEntry<'_> {
    type Target = PositionMask;

    fn deref(&self) -> &PositionMask {
        match self {
            MaskEntry::Stored(mask) => mask,
            MaskEntry::Unstored(mask) => mask,
        }
    }
}

/// Classifies every ordinary token at `(dfa, state)`; `exits` are the exit bytes of the
/// rule's states ([`crate::follow`]). `slicing` gives the vocabulary's slices
/// ([`crate::slices`]), asked for only when the position reads safe characters: the
/// slices it reads whole are accepted by their bitmask, the other parts walked;
/// `safe_memo` is the rule's memo of safe depths ([`safe_depth`]).
pub(crate) fn classify(
    dfa: &Dfa,
    state: StateId,
    exits: Exits<'_>,
    vocab: &Vocabulary,
    slicing: impl FnOnce() -> Arc<Slicing>,
    safe_memo: &[AtomicU32],
) -> PositionMask {
    let sorted = vocab.sorted();
    let mut accepted: Vec<u32> = Vec::new();
    let mut dependent: Vec<u32> = Vec::new();
    let mut sliced = None;
    if safe_depth(dfa, state, 1, &[]).depth == 0 {
        walk(dfa, state, exits, sorted, &mut accepted, &mut dependent);
    } else {
        let slicing = slicing();
        let depth = safe_depth(dfa, state, slicing.depth_cap(), safe_memo);
        let covered = slicing.covered(depth.depth);
        // Longer safe runs are rejected whole when the automaton refuses any safe
        // character after `depth` of them, never having been open on the way (the
        // slices after `depth` then hold only longer runs when `depth <= EXACT`).
        let parts = slicing.remaining(covered);
        let skip = if depth.rejects_longer && depth.depth <= EXACT {
            slicing.slices_after(covered)
        } else {
            0
        };
        for part in parts.skip(skip) {
            walk(dfa, state, exits, part, &mut accepted, &mut dependent);
        }
        dependent.sort_unstable();
        sliced = Some(slicing.union(covered).clone());
    }
    let words = bitmask_len(vocab.vocab_size());
    let accepted = if accepted.len() > words {
        let mut bits = vec![0u32; words];
        accepted.iter().for_each(|&id| set_bit(&mut bits, id));
        TokenList::Bits(bits)
    } else {
        // In walk order (by bytes): only ever ORed into a bitmask.
        TokenList::Ids(accepted)
    };
    PositionMask { accepted, sliced, dependent }
}

/// The classification walk over the tokens of `trie` (the sorted vocabulary or a part
/// of it): pushes the ids of the accepted tokens and the sorted-vocabulary positions of
/// the context-dependent ones.
fn walk<T: Trie>(
    dfa: &Dfa,
    state: StateId,
    exits: Exits<'_>,
    trie: &T,
    accepted: &mut Vec<u32>,
    dependent: &mut Vec<u32>,
) {
    let n = trie.count();
    // levels[d] = (state after d bytes, whether the token could have left the automaton
    // at an open state after 1..d bytes, the next byte being one of that state's exits)
    let mut levels: Vec<(StateId, bool)> = vec![(state, false)];
    let mut depth = 0usize;
    let mut k = 0usize;
    while k < n {
        let bytes = trie.bytes(k);
        let shared = trie.shared(k).min(depth);
        depth = shared;
        let mut refused_at = None;
        for (d, &b) in bytes.iter().enumerate().skip(shared) {
            let (current, left_before) = levels[d];
            // Leaving here: after at least one byte, at an open state (one that calls a
            // rule or may end the rule: only those have exit bytes), with `b` an exit
            // byte (the start state's exits are other stacks of the closure).
            let open = left_before
                || (d > 0 && {
                    let slot = exits.slot[current.index()];
                    slot != CLOSED && exits.sets[slot as usize].contains(b)
                });
            match dfa.next(current, b) {
                Some(next) => {
                    let entry = (next, open);
                    if levels.len() <= d + 1 {
                        levels.push(entry);
                    } else {
                        levels[d + 1] = entry;
                    }
                    depth = d + 1;
                }
                None => {
                    refused_at = Some((d, open));
                    break;
                }
            }
        }
        match refused_at {
            Some((d, open)) => {
                let end = trie.skip(k, d + 1);
                if open {
                    dependent.extend((k..end).map(|j| trie.position(j) as u32));
                }
                k = end;
            }
            None => {
                if !bytes.is_empty() {
                    accepted.push(trie.token_id(k));
                }
                k += 1;
            }
        }
    }
}
