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
