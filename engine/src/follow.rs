//! Context expansion: which bytes may come next when the matcher leaves a rule's
//! automaton at an open state (one that calls another rule or may end its rule).
//!
//! For each rule: `nullable` (matches the empty string), `first` (bytes that can start
//! it), `follow` (bytes that can come right after it anywhere in the grammar). For each
//! state `q` of rule `r`, the *exit bytes* are what can be read next other than through
//! `q`'s own byte transitions: `first` of each callee (and what follows the call when the
//! callee is nullable), and `follow(r)` when `q` may end `r`. All sets over-approximate,
//! so a token whose next byte is outside them is rejected whatever the stack: the token
//! mask cache uses this to turn context-dependent tokens into rejected ones.

use crate::automaton::Dfa;
use crate::ids::StateId;

/// A set of bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ByteSet([u64; 4]);

impl ByteSet {
    #[inline]
    pub(crate) fn contains(&self, b: u8) -> bool {
        self.0[(b >> 6) as usize] & (1 << (b & 63)) != 0
    }

    /// Whether `self` and `other` share a byte.
    #[inline]
    pub(crate) fn intersects(&self, other: &ByteSet) -> bool {
        self.0.iter().zip(other.0).any(|(a, b)| a & b != 0)
    }

    /// The bytes of the inclusive ranges.
    pub(crate) const fn of_ranges(ranges: &[(u8, u8)]) -> ByteSet {
        let mut words = [0u64; 4];
        let mut i = 0;
        while i < ranges.len() {
            let mut b = ranges[i].0 as usize;
            while b <= ranges[i].1 as usize {
                words[b >> 6] |= 1 << (b & 63);
                b += 1;
            }
            i += 1;
        }
        ByteSet(words)
    }

    /// Adds `other`; whether anything was new.
    fn union(&mut self, other: &ByteSet) -> bool {
        let mut changed = false;
        for (a, b) in self.0.iter_mut().zip(other.0) {
            let next = *a | b;
            changed |= next != *a;
            *a = next;
        }
        changed
    }
}

/// Rules that match the empty string (fixpoint over the automata).
pub(crate) fn nullable_rules(automata: &[Dfa]) -> Vec<bool> {
    let mut nullable = vec![false; automata.len()];
    loop {
        let mut changed = false;
        for (r, dfa) in automata.iter().enumerate() {
            if !nullable[r]
                && epsilon_reach(dfa, dfa.start(), &nullable)
                    .iter()
                    .any(|&(s, _)| dfa.is_accepting(s))
            {
                nullable[r] = true;
                changed = true;
            }
        }
        if !changed {
            return nullable;
        }
    }
}

/// States reachable from `from` through calls of nullable rules only (with `from`).
fn epsilon_reach(dfa: &Dfa, from: StateId, nullable: &[bool]) -> Vec<(StateId, ())> {
    if dfa.calls(from).iter().all(|&(callee, _)| !nullable[callee.index()]) {
        return vec![(from, ())];
    }
    let mut seen = vec![from];
    let mut i = 0;
    while i < seen.len() {
        for &(callee, t) in dfa.calls(seen[i]) {
            if nullable[callee.index()] && !seen.contains(&t) {
                seen.push(t);
            }
        }
        i += 1;
    }
    seen.into_iter().map(|s| (s, ())).collect()
}

/// Bytes that can be read from state `s` of `dfa` onwards before the rule ends, and
/// whether the rule can end without reading.
fn next_bytes(dfa: &Dfa, s: StateId, nullable: &[bool], first: &[ByteSet]) -> (ByteSet, bool) {
    let mut set = ByteSet::default();
    let mut can_end = false;
    for (q, ()) in epsilon_reach(dfa, s, nullable) {
        set.union(&ByteSet(dfa.byte_set(q)));
        for &(callee, _) in dfa.calls(q) {
            set.union(&first[callee.index()]);
        }
        can_end |= dfa.is_accepting(q);
    }
    (set, can_end)
}

/// Marks a state of [`RuleExits::slot`] without exit bytes.
pub(crate) const CLOSED: u32 = u32::MAX;

/// The exit bytes of one rule's states: only open states (those that call a rule or may
/// end the rule) have any, stored once each.
#[derive(Debug, Default)]
pub(crate) struct RuleExits {
    /// Per state: the index of its exit bytes in `sets`, or [`CLOSED`].
    pub(crate) slot: Vec<u32>,
    /// The exit bytes of the open states.
    pub(crate) sets: Vec<ByteSet>,
    /// The bytes that can follow the rule anywhere in the grammar.
    pub(crate) follow: ByteSet,
    /// The bytes that can start the rule.
    pub(crate) first: ByteSet,
    /// Whether the rule matches the empty string.
    pub(crate) nullable: bool,
}

impl RuleExits {
    /// Whether some byte of `bytes` is an exit byte of `state`.
    #[inline]
    pub(crate) fn any_of(&self, state: StateId, bytes: &ByteSet) -> bool {
        let slot = self.slot[state.index()];
        slot != CLOSED && self.sets[slot as usize].intersects(bytes)
    }

    /// Whether `byte` is an exit byte of `state`.
    #[inline]
    pub(crate) fn contains(&self, state: StateId, byte: u8) -> bool {
        let slot = self.slot[state.index()];
        slot != CLOSED && self.sets[slot as usize].contains(byte)
    }
}

/// The exit bytes of every state of every rule (indexed like the automata).
pub(crate) fn exit_bytes(automata: &[Dfa]) -> Vec<RuleExits> {
    let n = automata.len();
    let nullable = nullable_rules(automata);
    let mut first = vec![ByteSet::default(); n];
    loop {
        let mut changed = false;
        for (r, dfa) in automata.iter().enumerate() {
            let (set, _) = next_bytes(dfa, dfa.start(), &nullable, &first);
            changed |= first[r].union(&set);
        }
        if !changed {
            break;
        }
    }
    // Every call site once: (caller, callee, what can be read after the call, whether
    // the caller may end there).
    let mut sites: Vec<(usize, usize, ByteSet, bool)> = Vec::new();
    for (r, dfa) in automata.iter().enumerate() {
        for s in 0..dfa.len() {
            for &(callee, ret) in dfa.calls(StateId::new(s)) {
                let (set, can_end) = next_bytes(dfa, ret, &nullable, &first);
                sites.push((r, callee.index(), set, can_end));
            }
        }
    }
    let mut follow = vec![ByteSet::default(); n];
    loop {
        let mut changed = false;
        for &(r, callee, mut set, can_end) in &sites {
            if can_end {
                let outer = follow[r];
                set.union(&outer);
            }
            changed |= follow[callee].union(&set);
        }
        if !changed {
            break;
        }
    }
    automata
        .iter()
        .enumerate()
        .map(|(r, dfa)| {
            let mut exits = RuleExits {
                slot: vec![CLOSED; dfa.len()],
                sets: Vec::new(),
                follow: follow[r],
                first: first[r],
                nullable: nullable[r],
            };
            for s in 0..dfa.len() {
                let q = StateId::new(s);
                if dfa.calls(q).is_empty() && !dfa.is_accepting(q) {
                    continue;
                }
                let mut set = ByteSet::default();
                for &(callee, ret) in dfa.calls(q) {
                    set.union(&first[callee.index()]);
                    if nullable[callee.index()] {
                        let (after, can_end) = next_bytes(dfa, ret, &nullable, &first);
                        set.union(&after);
                        if can_end {
                            set.union(&follow[r]);
                        }
                    }
                }
                if dfa.is_accepting(q) {
                    set.union(&follow[r]);
                }
                if set != ByteSet::default() {
                    exits.slot[s] = exits.sets.len() as u32;
                    exits.sets.push(set);
                }
            }
            exits
        })
        .collect()
}
