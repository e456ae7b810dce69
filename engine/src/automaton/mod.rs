//! Per-rule byte automata.
//!
//! - [`nfa`]: Thompson construction from a lowered rule body.
//! - [`right_linear`]: groups of rules that refer to one another only where they end,
//!   each read as one automaton.
//! - [`dfa`]: subset construction over byte classes, rule calls and token sets;
//!   Hopcroft minimization; NFA states that cannot finish are left out of every state set.
//! - [`store`]: every rule's automaton, built on first use.
//!
//! A PDA position is a rule with a state of that rule's [`Dfa`]; the matcher keeps the
//! return positions on persistent stacks.

pub(crate) mod dfa;
pub(crate) mod nfa;
pub(crate) mod right_linear;
pub(crate) mod store;

pub use dfa::Dfa;

/// Where an automaton state stands in free text that has a token budget
/// ([`grammask_syntax::FreeText::max_tokens`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextBudget {
    /// The budget.
    pub tokens: u32,
    /// How many characters of the string that ends the text (or of a trigger) have been
    /// read; 0 in free text.
    pub read: u32,
    /// Which free text of its rule (one per `Text` node built; texts active at once
    /// share the smallest).
    pub region: u32,
}

impl TextBudget {
    /// Both at once: the more of an end string read, the smaller budget and region.
    pub(crate) fn and(self, other: TextBudget) -> TextBudget {
        TextBudget {
            tokens: self.tokens.min(other.tokens),
            read: self.read.max(other.read),
            region: self.region.min(other.region),
        }
    }
}

use std::hash::Hasher;

/// A fast hasher for the automata's own integers (subset construction's state sets, the
/// NFA builder's structural hashes; no untrusted keys flood it).
#[derive(Default)]
pub(crate) struct SetHasher(pub(crate) u64);

impl Hasher for SetHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.write_u64(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = mix(self.0, n);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Mixes `x` into the hash `h` (one step of [`SetHasher`]).
#[inline]
pub(crate) fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95)
}

/// Values grouped by key, each key's in their order in `items` (a counting sort): the
/// values of key `k` are `values[offsets[k]..offsets[k + 1]]`. Returns `(offsets, values)`.
/// Keys are state numbers: an NFA's edges by source state, a DFA's edges by target.
pub(crate) fn group_by_key<T: Copy>(n_keys: usize, items: &[(u32, T)]) -> (Vec<u32>, Vec<T>) {
    let mut offsets = vec![0u32; n_keys + 1];
    for &(k, _) in items {
        offsets[k as usize + 1] += 1;
    }
    for i in 0..n_keys {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut values: Vec<T> = items.iter().map(|&(_, v)| v).collect();
    for &(k, v) in items {
        values[fill[k as usize] as usize] = v;
        fill[k as usize] += 1;
    }
    (offsets, values)
}
