//! What the mask cache stores: a position's accepted tokens and context-dependent ones,
//! and the same narrowed under its return positions.

use crate::ids::SortedPos;
use grammask_tokenset::{bitmask_len, set_bit};
use std::sync::Arc;

/// The tokens an accepted set holds, in its smaller form.
#[derive(Debug)]
pub(crate) enum TokenList {
    /// Token ids.
    Ids(Vec<u32>),
    /// A bitmask over the vocabulary.
    Bits(Vec<u32>),
}

impl TokenList {
    /// The accepted token ids (in walk order: only ever ORed into a bitmask) as a list
    /// or a bitmask over a vocabulary of `vocab_size`, whichever is smaller.
    pub(crate) fn from_ids(accepted: Vec<u32>, vocab_size: usize) -> TokenList {
        let words = bitmask_len(vocab_size);
        if accepted.len() > words {
            let mut bits = vec![0u32; words];
            accepted.iter().for_each(|&id| set_bit(&mut bits, id));
            TokenList::Bits(bits)
        } else {
            TokenList::Ids(accepted)
        }
    }

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

    /// Adds the tokens of `other`.
    pub(crate) fn extend(&mut self, other: &TokenList) {
        match (self, other) {
            (TokenList::Ids(ids), TokenList::Ids(more)) => ids.extend_from_slice(more),
            (TokenList::Bits(words), other) => other.apply(words),
            (this @ TokenList::Ids(_), TokenList::Bits(more)) => {
                let mut words = more.clone();
                this.apply(&mut words);
                *this = TokenList::Bits(words);
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
    /// The union of the vocabulary slices accepted whole (`super::slicing`): shared
    /// vocabulary-level data, not counted in [`PositionMask::memory`].
    pub(crate) sliced: Option<Arc<Vec<u32>>>,
    /// Positions in the sorted vocabulary of the context-dependent tokens, ascending.
    pub(crate) dependent: Vec<SortedPos>,
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
    /// The tokens accepted.
    pub(crate) accepted: TokenList,
    /// Sorted-vocabulary positions of the tokens that still depend on the stack,
    /// ascending.
    pub(crate) dependent: Vec<SortedPos>,
}

impl ParentMask {
    /// Heap bytes used.
    pub(crate) fn memory(&self) -> usize {
        self.accepted.memory() + self.dependent.len() * 4 + std::mem::size_of::<Self>()
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
