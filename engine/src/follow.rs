//! Context expansion: which bytes may come next when the matcher leaves a rule's
//! automaton at an open state (one that calls another rule or may end its rule).
//!
//! For each rule ([`Summaries`], read from the IR): `nullable` (matches the empty
//! string), `first` (bytes that can start it), `follow` (bytes that can come right after
//! it anywhere in the grammar). For each
//! state `q` of rule `r`, the *exit bytes* are what can be read next other than through
//! `q`'s own byte transitions: `first` of each callee (and what follows the call when the
//! callee is nullable), and `follow(r)` when `q` may end `r`. All sets over-approximate,
//! so a token whose next byte is outside them is rejected whatever the stack: the token
//! mask cache uses this to turn context-dependent tokens into rejected ones.

use crate::automaton::Dfa;
use crate::ids::StateId;
use grammask_syntax::ir::{CharClass, Expr, Grammar};

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

    /// Adds the bytes `lo..=hi`, a word at a time.
    fn add_range(&mut self, lo: u8, hi: u8) {
        for (w, word) in self.0.iter_mut().enumerate() {
            let (start, end) = (w as u32 * 64, w as u32 * 64 + 63);
            let (a, b) = (u32::from(lo).max(start), u32::from(hi).min(end));
            if a <= b {
                let bits = b - a + 1;
                let mask = if bits == 64 { u64::MAX } else { ((1u64 << bits) - 1) << (a - start) };
                *word |= mask;
            }
        }
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

/// What the exit bytes of every rule read of the grammar: per rule, whether it matches
/// the empty string, the bytes that can start it and those that can follow it. Read
/// from the IR after the passes, whose rules the automata accept, so that no automaton
/// is needed: each set holds at least the automaton's bytes (more where the automaton
/// leaves out what cannot finish, or a lookahead narrows), which keeps every exit set an
/// over-approximation.
#[derive(Debug)]
pub(crate) struct Summaries {
    pub(crate) nullable: Vec<bool>,
    pub(crate) first: Vec<ByteSet>,
    pub(crate) follow: Vec<ByteSet>,
}

/// Every byte.
const ALL_BYTES: ByteSet = ByteSet([u64::MAX; 4]);

impl Summaries {
    /// The summaries of `grammar`'s rules.
    pub(crate) fn of(grammar: &Grammar) -> Summaries {
        Summaries::with_calls(grammar, &crate::passes::CallGraph::of(grammar))
    }

    /// [`Summaries::of`] with the grammar's call graph given.
    pub(crate) fn with_calls(grammar: &Grammar, calls: &crate::passes::CallGraph) -> Summaries {
        let n = grammar.rules.len();
        let mut s = Summaries {
            nullable: vec![false; n],
            first: vec![ByteSet::default(); n],
            follow: vec![ByteSet::default(); n],
        };
        // A worklist, callees first: a rule is read again when a rule it refers to changed.
        let mut referrers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (r, list) in calls.callees.iter().enumerate() {
            for &callee in list {
                referrers[callee].push(r);
            }
        }
        let mut queued = vec![true; n];
        let mut work: Vec<usize> = calls.components.nodes().iter().rev().copied().collect();
        while let Some(r) = work.pop() {
            queued[r] = false;
            let (first, nullable) = s.start_of(&grammar.rules[r].body);
            let mut changed = s.first[r].union(&first);
            if nullable && !s.nullable[r] {
                s.nullable[r] = true;
                changed = true;
            }
            if changed {
                for &referrer in &referrers[r] {
                    if !std::mem::replace(&mut queued[referrer], true) {
                        work.push(referrer);
                    }
                }
            }
        }
        // Every reference once: (referrer, rule, what can be read after it, whether the
        // referrer may end there).
        let references = calls.refs.iter().sum();
        let mut sites: Vec<(usize, usize, ByteSet, bool)> = Vec::with_capacity(references);
        for (r, rule) in grammar.rules.iter().enumerate() {
            // (A rule that calls nothing has no reference to read.)
            if !calls.callees[r].is_empty() {
                s.sites(&rule.body, (ByteSet::default(), true), r, &mut sites);
            }
        }
        // What follows a reference, then what follows its referrer where the reference
        // may end it: a worklist over those edges.
        let mut ends: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(r, callee, set, can_end) in &sites {
            s.follow[callee].union(&set);
            if can_end && r != callee {
                ends[r].push(callee);
            }
        }
        let mut queued = vec![true; n];
        let mut work: Vec<usize> = (0..n).rev().collect();
        while let Some(r) = work.pop() {
            queued[r] = false;
            let outer = s.follow[r];
            for &callee in &ends[r] {
                if s.follow[callee].union(&outer) && !std::mem::replace(&mut queued[callee], true) {
                    work.push(callee);
                }
            }
        }
        s
    }

    /// The bytes that can start `expr`, and whether it matches the empty string (with
    /// the rules' summaries as far as known).
    fn start_of(&self, expr: &Expr) -> (ByteSet, bool) {
        match expr {
            Expr::Empty => (ByteSet::default(), true),
            Expr::Bytes(bytes) => match bytes.first() {
                Some(&b) => {
                    let mut set = ByteSet::default();
                    set.add_range(b, b);
                    (set, false)
                }
                None => (ByteSet::default(), true),
            },
            Expr::Class(class) => (lead_bytes(class), false),
            Expr::ByteRanges(ranges) => {
                let mut set = ByteSet::default();
                ranges.iter().for_each(|&(lo, hi)| set.add_range(lo, hi));
                (set, false)
            }
            Expr::Seq(items) => {
                let mut set = ByteSet::default();
                for item in items {
                    let (first, nullable) = self.start_of(item);
                    set.union(&first);
                    if !nullable {
                        return (set, false);
                    }
                }
                (set, true)
            }
            Expr::Choice(alternatives) => {
                let mut set = ByteSet::default();
                let mut any = false;
                for alternative in alternatives {
                    let (first, nullable) = self.start_of(alternative);
                    set.union(&first);
                    any |= nullable;
                }
                (set, any)
            }
            Expr::Rule(r) => (self.first[r.index()], self.nullable[r.index()]),
            Expr::Repeat { expr, min, .. } => {
                let (first, nullable) = self.start_of(expr);
                (first, nullable || *min == 0)
            }
            // A token set reads no byte.
            Expr::Tokens(_) => (ByteSet::default(), false),
            Expr::Text(_) => (ALL_BYTES, true),
        }
    }

    /// The references of `expr` (in rule `r`), each with what can be read after it:
    /// `next.0`, and the end of `r` when `next.1`. Returns what [`Summaries::start_of`]
    /// gives for `expr`.
    fn sites(
        &self,
        expr: &Expr,
        next: (ByteSet, bool),
        r: usize,
        out: &mut Vec<(usize, usize, ByteSet, bool)>,
    ) -> (ByteSet, bool) {
        match expr {
            Expr::Rule(callee) => {
                out.push((r, callee.index(), next.0, next.1));
                (self.first[callee.index()], self.nullable[callee.index()])
            }
            Expr::Seq(items) => {
                let (mut after, mut can_end) = next;
                let mut nullable = true;
                for item in items.iter().rev() {
                    let (first, item_nullable) = self.sites(item, (after, can_end), r, out);
                    if item_nullable {
                        after.union(&first);
                    } else {
                        (after, can_end, nullable) = (first, false, false);
                    }
                }
                (after, nullable)
            }
            Expr::Choice(alternatives) => {
                let mut set = ByteSet::default();
                let mut any = false;
                for alternative in alternatives {
                    let (first, nullable) = self.sites(alternative, next, r, out);
                    set.union(&first);
                    any |= nullable;
                }
                (set, any)
            }
            Expr::Repeat { expr: inner, min, max } => {
                let (mut after, can_end) = next;
                if max.is_none_or(|m| m > 1) {
                    after.union(&self.start_of(inner).0);
                }
                let (first, nullable) = self.sites(inner, (after, can_end), r, out);
                (first, nullable || *min == 0)
            }
            _ => self.start_of(expr),
        }
    }
}

/// The first bytes of the UTF-8 encodings of the characters of `class` (what its
/// lowering, [`crate::passes::ClassTable`], starts with; a negated class's complement
/// counts the surrogates' lead byte, a superset).
fn lead_bytes(class: &CharClass) -> ByteSet {
    let mut set = ByteSet::default();
    let mut add = |lo: u32, hi: u32| {
        // Per encoding length, the lead byte grows with the code point, a block at a time.
        let lengths: [(u32, u32, u32, u32); 4] = [
            (0, 0x7F, 0, 0),
            (0x80, 0x7FF, 0xC0, 6),
            (0x800, 0xFFFF, 0xE0, 12),
            (0x1_0000, 0x10_FFFF, 0xF0, 18),
        ];
        for (start, end, tag, shift) in lengths {
            let (a, b) = (lo.max(start), hi.min(end));
            if a <= b {
                set.add_range((tag | a >> shift) as u8, (tag | b >> shift) as u8);
            }
        }
    };
    if class.negated {
        let mut next = 0u32;
        for &(lo, hi) in &class.ranges {
            if lo as u32 > next {
                add(next, lo as u32 - 1);
            }
            next = next.max(hi as u32 + 1);
        }
        if next <= 0x10_FFFF {
            add(next, 0x10_FFFF);
        }
    } else {
        for &(lo, hi) in &class.ranges {
            add(lo as u32, hi as u32);
        }
    }
    set
}

impl RuleExits {
    /// The exit bytes of the states of `dfa`, rule `r`'s automaton.
    pub(crate) fn of(dfa: &Dfa, r: usize, summaries: &Summaries) -> RuleExits {
        let Summaries { nullable, first, follow } = summaries;
        let mut exits =
            RuleExits { slot: vec![CLOSED; dfa.len()], sets: Vec::new(), follow: follow[r] };
        for s in 0..dfa.len() {
            let q = StateId::new(s);
            if dfa.calls(q).is_empty() && !dfa.is_accepting(q) {
                continue;
            }
            let mut set = ByteSet::default();
            for &(callee, ret) in dfa.calls(q) {
                set.union(&first[callee.index()]);
                if nullable[callee.index()] {
                    let (after, can_end) = next_bytes(dfa, ret, nullable, first);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::passes::class_to_bytes;

    /// The first bytes of a lowered class, read off its byte automaton's expression.
    fn lowered_first(class: &CharClass) -> ByteSet {
        let empty = Summaries { nullable: Vec::new(), first: Vec::new(), follow: Vec::new() };
        empty.start_of(&class_to_bytes(class)).0
    }

    #[test]
    fn lead_bytes_are_the_lowered_classes_first_bytes() {
        let mut classes = vec![
            CharClass::any(),
            CharClass::new(false, [('a', 'z'), ('0', '9')]),
            CharClass::new(true, [('"', '"'), ('\\', '\\'), ('\0', '\x1f')]),
            CharClass::new(false, [('\u{80}', '\u{7ff}')]),
            CharClass::new(false, [('é', 'é'), ('\u{4e00}', '\u{9fff}'), ('😀', '😀')]),
            CharClass::new(true, [('\0', '\u{7f}')]),
            CharClass::new(false, []),
        ];
        // Pseudo-random classes, negated or not, over every encoding length.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..500 {
            let mut ranges = Vec::new();
            for _ in 0..(x % 4 + 1) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let lo = (x % 0x11_0000) as u32 >> (x % 13);
                let hi = lo + (x >> 40) as u32 % 3000;
                if let (Some(lo), Some(hi)) =
                    (char::from_u32(lo), char::from_u32(hi.min(0x10_FFFF)))
                {
                    ranges.push((lo, hi));
                }
            }
            classes.push(CharClass::new(x % 2 == 0, ranges));
        }
        for class in &classes {
            let (lead, lowered) = (lead_bytes(class), lowered_first(class));
            // The same bytes, but for the surrogates' lead byte a negated class may add.
            let mut without_ed = lead;
            without_ed.0[0xED >> 6] &= !(1 << (0xED & 63));
            let mut lowered_without_ed = lowered;
            lowered_without_ed.0[0xED >> 6] &= !(1 << (0xED & 63));
            assert_eq!(without_ed, lowered_without_ed, "{class:?}");
            assert!(!lowered.contains(0xED) || lead.contains(0xED), "{class:?}");
        }
    }
}
