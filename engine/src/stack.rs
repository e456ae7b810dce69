//! Persistent pushdown stacks that share their tails.
//!
//! A [`Stack`] is its top position (a rule and a state of that rule's automaton) plus a
//! pointer to the frames below, an immutable linked list of return positions behind
//! `Arc`s. Replacing the top (reading a byte inside a rule) copies two words; pushing (a
//! call) allocates one frame that points at the old tail; popping (a return) clones one
//! `Arc`. Parallel stacks of an ambiguous grammar and the snapshots kept for rollback
//! share every frame they have in common, so forking and snapshotting cost O(1).
//!
//! Each frame caches a hash and its depth, so structural equality (used to deduplicate
//! stacks) usually ends at a pointer comparison or a hash mismatch.

use crate::ids::StateId;
use grammask_syntax::ir::RuleId;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A PDA position: a rule and a state of its automaton.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// The rule.
    pub rule: RuleId,
    /// The state in the rule's automaton.
    pub state: StateId,
}

/// One return position below the top of a stack.
#[derive(Debug)]
pub(crate) struct Frame {
    pub(crate) position: Position,
    pub(crate) below: Option<Arc<Frame>>,
    hash: u64,
    depth: u32,
}

impl Drop for Frame {
    // Deep stacks would otherwise drop recursively and could overflow the thread's stack.
    fn drop(&mut self) {
        let mut below = self.below.take();
        while let Some(frame) = below {
            match Arc::try_unwrap(frame) {
                Ok(mut frame) => below = frame.below.take(),
                Err(_) => break,
            }
        }
    }
}

/// A pushdown stack: the current position and the return positions below it.
#[derive(Clone, Debug)]
pub struct Stack {
    pub(crate) top: Position,
    pub(crate) below: Option<Arc<Frame>>,
}

/// A stack's hash from its top and the hash below it (a multiply-xorshift finalizer: the
/// matcher's own positions, no untrusted keys; equality never trusts the hash alone).
fn mix(position: Position, below: u64) -> u64 {
    let p = (position.rule.index() as u64) << 32 | u64::from(position.state.0);
    let mut h = (below.rotate_left(23) ^ p).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= h >> 32;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^ (h >> 29)
}

/// Hashes a [`Stack`] by its hash value, already mixed: sets of stacks hash nothing else.
#[derive(Default)]
pub(crate) struct StackHasher(u64);

impl Hasher for StackHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

/// A set of stacks.
pub(crate) type StackSet =
    std::collections::HashSet<Stack, std::hash::BuildHasherDefault<StackHasher>>;

impl Stack {
    /// A stack holding only `top`.
    pub fn root(top: Position) -> Stack {
        Stack { top, below: None }
    }

    /// The current position.
    #[inline]
    pub fn top(&self) -> Position {
        self.top
    }

    /// Number of frames below the top.
    pub fn depth(&self) -> u32 {
        self.below.as_ref().map_or(0, |f| f.depth)
    }

    fn below_hash(&self) -> u64 {
        self.below.as_ref().map_or(0, |f| f.hash)
    }

    /// The same stack with its top replaced.
    #[inline]
    pub fn with_top(&self, top: Position) -> Stack {
        Stack { top, below: self.below.clone() }
    }

    /// Calls into `callee`: the current top becomes the return position `return_to`.
    pub fn push(&self, return_to: Position, callee: Position) -> Stack {
        let below_hash = self.below_hash();
        let frame = Frame {
            position: return_to,
            below: self.below.clone(),
            hash: mix(return_to, below_hash),
            depth: self.depth() + 1,
        };
        Stack { top: callee, below: Some(Arc::new(frame)) }
    }

    /// Returns to the position below, or `None` at the bottom.
    pub fn pop(&self) -> Option<Stack> {
        self.below.as_ref().map(|f| Stack { top: f.position, below: f.below.clone() })
    }

    /// A hash of the whole stack (top and frames).
    pub fn hash_value(&self) -> u64 {
        mix(self.top, self.below_hash())
    }
}

impl PartialEq for Stack {
    fn eq(&self, other: &Self) -> bool {
        if self.top != other.top {
            return false;
        }
        let (mut a, mut b) = (&self.below, &other.below);
        loop {
            match (a, b) {
                (None, None) => return true,
                (Some(x), Some(y)) => {
                    if Arc::ptr_eq(x, y) {
                        return true;
                    }
                    if x.hash != y.hash || x.depth != y.depth || x.position != y.position {
                        return false;
                    }
                    a = &x.below;
                    b = &y.below;
                }
                _ => return false,
            }
        }
    }
}

impl Eq for Stack {}

impl Hash for Stack {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.hash_value().hash(state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(rule: usize, state: usize) -> Position {
        Position { rule: RuleId::new(rule), state: StateId::new(state) }
    }

    #[test]
    fn equal_stacks_built_separately_compare_equal() {
        let a = Stack::root(pos(0, 0)).push(pos(0, 1), pos(1, 0)).push(pos(1, 2), pos(2, 0));
        let b = Stack::root(pos(0, 0)).push(pos(0, 1), pos(1, 0)).push(pos(1, 2), pos(2, 0));
        assert_eq!(a, b);
        assert_eq!(a.hash_value(), b.hash_value());
        let c = Stack::root(pos(0, 0)).push(pos(0, 3), pos(1, 0)).push(pos(1, 2), pos(2, 0));
        assert_ne!(a, c);
        assert_eq!(a.pop().unwrap().top, pos(1, 2));
        assert_eq!(a.depth(), 2);
    }

    #[test]
    fn deep_stack_drops_without_overflow() {
        let mut s = Stack::root(pos(0, 0));
        for i in 0..200_000 {
            s = s.push(pos(0, i % 7), pos(0, 0));
        }
        drop(s);
    }
}
