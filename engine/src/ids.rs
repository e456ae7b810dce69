//! Identifier newtypes of the engine, so that a state can never be passed where a rule
//! is expected.

use std::fmt;

/// A state of one rule's automaton: an index into that automaton's state table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateId(pub(crate) u32);

impl StateId {
    /// The state at `index`.
    pub fn new(index: usize) -> Self {
        debug_assert!(index < u32::MAX as usize);
        StateId(index as u32)
    }

    /// The index of this state in its automaton.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for StateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// Index of a token set (GBNF `<[id]>`) in a compiled grammar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenSetId(pub(crate) u32);

impl TokenSetId {
    /// The index of this set in the compiled grammar's token-set table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A token's position in the vocabulary sorted by bytes
/// ([`grammask_tokenset::SortedVocab`]), as opposed to its id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct SortedPos(u32);

impl SortedPos {
    /// The position `index`.
    #[inline]
    pub(crate) fn new(index: usize) -> Self {
        debug_assert!(index < u32::MAX as usize);
        SortedPos(index as u32)
    }

    /// The index into the sorted vocabulary.
    #[inline]
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    /// The positions `start..end`.
    #[inline]
    pub(crate) fn range(start: usize, end: usize) -> impl Iterator<Item = SortedPos> {
        (start as u32..end as u32).map(SortedPos)
    }
}
