//! Vocabulary slices: the tokens that are runs of JSON-string characters, grouped by
//! length, so that classifying a position that reads any such run needs no walk over
//! them.
//!
//! Most of a large vocabulary (122,892 of Llama-3's 128,000 tokens) consists of *safe
//! runs*: well-formed UTF-8 text without `"`, `\`, C0 controls or DEL, possibly ending in
//! an incomplete character. Inside a JSON string every such run is readable, so a
//! position inside a string accepts all of them; classifying it by walking the whole
//! vocabulary costs milliseconds and is repeated for every copy of the string automaton.
//!
//! A [`Slicing`] splits the sorted vocabulary once per vocabulary into
//! [`EXACT`]` + 1` *slices* (the safe runs of exactly 1, 2, ..., `EXACT` characters, an
//! incomplete last character counting as one, and the longer ones) and the *rest*. Each
//! part keeps its own trie walk data (shared prefixes and subtree ends within the part),
//! and the union of the first `m` slices is kept as a bitmask. To classify a position,
//! [`safe_depth`] checks on the automaton (not on the tokens) how many safe characters
//! can certainly be read from it: `r` when every sequence of at most `r` safe characters
//! is readable. Every token of a slice of at most `r` characters is then accepted at
//! once, by the slices' bitmask; only the other parts are walked. The check is exact
//! about what it claims, so answers never change; a position that does not read every
//! safe character (outside strings, or a pattern's restricted alphabet) walks the whole
//! vocabulary as before.
//!
//! Slicings are vocabulary-level data, like the sorted vocabulary: built on first use for
//! a vocabulary (5-9 ms for Llama-3's 128k tokens) and kept while the vocabulary
//! lives, in a registry of one entry per live vocabulary ([`slicing_for`]).

use crate::automaton::Dfa;
use crate::ids::StateId;
use grammask_tokenset::{bitmask_len, set_bit, SortedVocab, Vocabulary};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// Slices of exactly 1..=`EXACT` safe characters; longer safe runs share one last slice.
pub(crate) const EXACT: usize = 15;

/// Layers of [`safe_depth`] larger than this end the search (no slice is used past the
/// depth reached so far).
const MAX_LEVEL_STATES: usize = 64;

/// States [`safe_depth`] visits at most (a linear scan checks each new one).
const MAX_VISITED_STATES: usize = 256;

/// The UTF-8 encodings of the safe characters (every Unicode scalar value but `"`, `\`,
/// U+0000-U+001F and U+007F), as sequences of byte ranges (Unicode's table of
/// well-formed byte sequences).
const SAFE_CHARS: &[&[(u8, u8)]] = &[
    &[(0x20, 0x21)],
    &[(0x23, 0x5B)],
    &[(0x5D, 0x7E)],
    &[(0xC2, 0xDF), (0x80, 0xBF)],
    &[(0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)],
    &[(0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)],
    &[(0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)],
    &[(0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)],
    &[(0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)],
    &[(0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)],
    &[(0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)],
];

/// The number of safe characters of `bytes` when it is a non-empty safe run (an
/// incomplete last character counts as one), else `None`.
fn safe_chars(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    let mut count = 0;
    while i < bytes.len() {
        let lead = bytes[i];
        let seq = SAFE_CHARS.iter().find(|seq| (seq[0].0..=seq[0].1).contains(&lead))?;
        for (k, &(lo, hi)) in seq.iter().enumerate().skip(1) {
            match bytes.get(i + k) {
                None => return Some(count + 1),
                Some(b) if (lo..=hi).contains(b) => {}
                Some(_) => return None,
            }
        }
        i += seq.len();
        count += 1;
    }
    (count > 0).then_some(count)
}

/// A sorted vocabulary, or a subsequence of one, walked as a trie (see
/// [`grammask_tokenset::SortedVocab`] for the meaning of `lcp` and the skip).
pub(crate) trait Trie {
    /// Number of tokens.
    fn count(&self) -> usize;
    /// Position in the sorted vocabulary of the `k`-th token.
    fn position(&self, k: usize) -> usize;
    /// The bytes of the `k`-th token.
    fn bytes(&self, k: usize) -> &[u8];
    /// The id of the `k`-th token.
    fn token_id(&self, k: usize) -> u32;
    /// Common prefix length of the `k - 1`-th and `k`-th tokens (0 for `k == 0`).
    fn shared(&self, k: usize) -> usize;
    /// The first `j > k` whose token does not start with the first `depth` bytes of the
    /// `k`-th token, or `count()`.
    fn skip(&self, k: usize, depth: usize) -> usize;
}

impl Trie for SortedVocab {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn position(&self, k: usize) -> usize {
        k
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        SortedVocab::bytes(self, k)
    }
    #[inline]
    fn token_id(&self, k: usize) -> u32 {
        SortedVocab::token_id(self, k)
    }
    #[inline]
    fn shared(&self, k: usize) -> usize {
        self.lcp(k)
    }
    #[inline]
    fn skip(&self, k: usize, depth: usize) -> usize {
        self.next_without_prefix(k, depth)
    }
}

/// A subsequence of the sorted vocabulary with its own trie walk data, and its own copy
/// of the token ids and bytes (a walk reads them in order, from contiguous memory).
#[derive(Debug, Default)]
pub(crate) struct Part {
    /// Sorted-vocabulary positions, ascending.
    positions: Vec<u32>,
    /// Token ids.
    ids: Vec<u32>,
    /// `bytes(k) = data[starts[k]..starts[k + 1]]`.
    starts: Vec<u32>,
    /// The tokens' bytes, concatenated.
    data: Vec<u8>,
    /// `lcp[k]`: common prefix length of the tokens `k - 1` and `k` of the part.
    lcp: Vec<u32>,
    /// `subtree_end[k]`: the first `j > k` whose token does not start with the whole of
    /// token `k`, or `len`.
    subtree_end: Vec<u32>,
}

impl Part {
    /// The walk data of the tokens at `positions` (ascending) of `sorted`.
    fn build(sorted: &SortedVocab, positions: Vec<u32>) -> Part {
        let n = positions.len();
        let mut lcp = Vec::with_capacity(n);
        let mut subtree_end = vec![n as u32; n];
        // Tokens whose bytes are a prefix of the previous token, shortest first.
        let mut open: Vec<usize> = Vec::new();
        let mut prev: &[u8] = &[];
        let mut ids = Vec::with_capacity(n);
        let mut starts = Vec::with_capacity(n + 1);
        let mut data = Vec::new();
        for (k, &p) in positions.iter().enumerate() {
            let bytes = sorted.bytes(p as usize);
            ids.push(sorted.token_id(p as usize));
            starts.push(data.len() as u32);
            data.extend_from_slice(bytes);
            let common = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            while let Some(&top) = open.last() {
                if sorted.bytes(positions[top] as usize).len() > common {
                    subtree_end[top] = k as u32;
                    open.pop();
                } else {
                    break;
                }
            }
            open.push(k);
            lcp.push(common as u32);
            prev = bytes;
        }
        starts.push(data.len() as u32);
        Part { positions, ids, starts, data, lcp, subtree_end }
    }

    /// Heap bytes used.
    #[cfg(test)]
    fn memory(&self) -> usize {
        (self.positions.len() + self.ids.len() + self.starts.len()) * 4
            + (self.lcp.len() + self.subtree_end.len()) * 4
            + self.data.len()
    }
}

impl Trie for Part {
    #[inline]
    fn count(&self) -> usize {
        self.positions.len()
    }
    #[inline]
    fn position(&self, k: usize) -> usize {
        self.positions[k] as usize
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        &self.data[self.starts[k] as usize..self.starts[k + 1] as usize]
    }
    #[inline]
    fn token_id(&self, k: usize) -> u32 {
        self.ids[k]
    }
    #[inline]
    fn shared(&self, k: usize) -> usize {
        self.lcp[k] as usize
    }
    #[inline]
    fn skip(&self, k: usize, depth: usize) -> usize {
        let depth = depth as u32;
        let mut j = k + 1;
        // As `SortedVocab::next_without_prefix`: every token in k..j starts with the
        // prefix; a token sharing `depth` bytes with its predecessor, and its subtree,
        // do too.
        while j < self.positions.len() && self.lcp[j] >= depth {
            j = self.subtree_end[j] as usize;
        }
        j
    }
}

/// A vocabulary split into slices of safe runs and the rest; see the module
/// documentation.
#[derive(Debug)]
pub(crate) struct Slicing {
    /// `slices[c - 1]`: the safe runs of exactly `c` characters, for `c` in
    /// `1..=EXACT`; `slices[EXACT]`: the longer ones.
    slices: Vec<Part>,
    /// The tokens of no slice.
    rest: Part,
    /// `union[m - 1]`: the bitmask (over token ids) of the tokens of `slices[..m]`.
    union: Vec<Arc<Vec<u32>>>,
    /// The safe depth that covers every slice: at least `EXACT + 1`, and the character
    /// count of the longest token of the last slice.
    covers_all: usize,
}

impl Slicing {
    /// Splits the ordinary tokens of `vocab`.
    fn build(vocab: &Vocabulary) -> Slicing {
        let sorted = vocab.sorted();
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); EXACT + 1];
        let mut rest = Vec::new();
        let mut covers_all = EXACT + 1;
        for i in 0..sorted.len() {
            match safe_chars(sorted.bytes(i)) {
                Some(c) => {
                    members[c.min(EXACT + 1) - 1].push(i as u32);
                    covers_all = covers_all.max(c);
                }
                None => rest.push(i as u32),
            }
        }
        let words = bitmask_len(vocab.vocab_size());
        let mut bits = vec![0u32; words];
        let mut union = Vec::with_capacity(EXACT + 1);
        for slice in &members {
            for &p in slice {
                set_bit(&mut bits, sorted.token_id(p as usize));
            }
            union.push(Arc::new(bits.clone()));
        }
        let slices = members.into_iter().map(|m| Part::build(sorted, m)).collect();
        Slicing { slices, rest: Part::build(sorted, rest), union, covers_all }
    }

    /// The safe depth past which [`safe_depth`] need not look.
    pub(crate) fn depth_cap(&self) -> usize {
        self.covers_all
    }

    /// For a position of safe depth `depth` (at most [`Slicing::depth_cap`]): how many
    /// slices it accepts whole (`0` when none).
    pub(crate) fn covered(&self, depth: usize) -> usize {
        if depth >= self.covers_all {
            EXACT + 1
        } else {
            depth.min(EXACT)
        }
    }

    /// The bitmask of the tokens of the first `m` slices (`m >= 1`).
    pub(crate) fn union(&self, m: usize) -> &Arc<Vec<u32>> {
        &self.union[m - 1]
    }

    /// The parts still to walk when the first `m` slices are accepted whole: the other
    /// slices ([`Slicing::slices_after`] of them), then the rest.
    pub(crate) fn remaining(&self, m: usize) -> impl Iterator<Item = &Part> + '_ {
        self.slices[m..].iter().chain(std::iter::once(&self.rest))
    }

    /// The number of slices after the first `m`.
    pub(crate) fn slices_after(&self, m: usize) -> usize {
        self.slices.len() - m
    }

    /// Heap bytes used: 20 per ordinary token and its bytes, plus `EXACT + 1` bitmasks.
    #[cfg(test)]
    fn memory(&self) -> usize {
        self.slices.iter().map(Part::memory).sum::<usize>()
            + self.rest.memory()
            + self.union.iter().map(|u| u.len() * 4).sum::<usize>()
    }
}

/// One slicing per live vocabulary (the vocabulary's allocation identifies it). An entry
/// is dropped at the next look-up after its vocabulary is dropped, so the registry holds
/// at most one slicing per vocabulary alive (plus those dropped since the last look-up).
static REGISTRY: Mutex<Vec<(Weak<Vocabulary>, Arc<Slicing>)>> = Mutex::new(Vec::new());

/// The slicing of `vocab`, built on first use.
pub(crate) fn slicing_for(vocab: &Arc<Vocabulary>) -> Arc<Slicing> {
    // A panic while the lock was held left the list itself consistent (pushes and
    // retains only), so a poisoned lock is used as is.
    let mut registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
    registry.retain(|(v, _)| v.strong_count() > 0);
    if let Some((_, s)) =
        registry.iter().find(|(v, _)| std::ptr::eq(v.as_ptr(), Arc::as_ptr(vocab)))
    {
        return s.clone();
    }
    let slicing = Arc::new(Slicing::build(vocab));
    registry.push((Arc::downgrade(vocab), slicing.clone()));
    slicing
}

/// Small sorted sets of states.
type StateSet = smallvec::SmallVec<[StateId; 4]>;

/// Whether the matcher could leave the automaton's path at `state` (as in
/// [`crate::token_cache`]).
fn is_open(dfa: &Dfa, state: StateId) -> bool {
    dfa.is_accepting(state) || !dfa.calls(state).is_empty()
}

/// One character read from a set of states.
struct CharStep {
    /// The states after one safe character, when every state of the set reads every safe
    /// character (and no set grew past [`MAX_LEVEL_STATES`]).
    next: Option<StateSet>,
    /// Whether a state reached after at least one byte of a character was open.
    open: bool,
}

/// For each byte range of each sequence of [`SAFE_CHARS`]: one byte of each byte class
/// of the automaton met in the range (bytes of one class have the same transitions).
pub(crate) type ClassReps = Vec<Vec<smallvec::SmallVec<[u8; 8]>>>;

/// The [`ClassReps`] of `dfa`.
fn class_reps(dfa: &Dfa) -> &ClassReps {
    dfa.safe_reps.get_or_init(|| compute_class_reps(dfa))
}

fn compute_class_reps(dfa: &Dfa) -> ClassReps {
    SAFE_CHARS
        .iter()
        .map(|seq| {
            seq.iter()
                .map(|&(lo, hi)| {
                    let mut seen = [false; 256];
                    (lo..=hi)
                        .filter(|&b| {
                            !std::mem::replace(&mut seen[dfa.byte_class(b) as usize], true)
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// Reads one safe character from every state of `from`.
fn step_char(dfa: &Dfa, reps: &ClassReps, from: &StateSet) -> CharStep {
    let mut out = StateSet::new();
    let mut frontier = StateSet::new();
    let mut next = StateSet::new();
    let mut open = false;
    for seq in reps {
        frontier.clear();
        frontier.extend_from_slice(from);
        for range in seq {
            next.clear();
            for &s in &frontier {
                for &b in range {
                    let Some(t) = dfa.next(s, b) else {
                        return CharStep { next: None, open };
                    };
                    next.push(t);
                }
            }
            next.sort_unstable();
            next.dedup();
            if next.len() > MAX_LEVEL_STATES {
                return CharStep { next: None, open: true };
            }
            open |= next.iter().any(|&t| is_open(dfa, t));
            std::mem::swap(&mut frontier, &mut next);
        }
        out.extend_from_slice(&frontier);
    }
    out.sort_unstable();
    out.dedup();
    CharStep { next: (out.len() <= MAX_LEVEL_STATES).then_some(out), open }
}

/// Whether every state of `set` refuses the first byte of every safe character.
fn refuses_every_char(dfa: &Dfa, set: &StateSet) -> bool {
    set.iter().all(|&s| {
        SAFE_CHARS.iter().all(|seq| (seq[0].0..=seq[0].1).all(|b| dfa.next(s, b).is_none()))
    })
}

/// What [`safe_depth`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SafeDepth {
    /// The largest `r` (at most the cap) such that every sequence of at most `r` safe
    /// characters (and so every prefix of one) is read from the state.
    pub(crate) depth: usize,
    /// Whether every run of more than `depth` safe characters is refused at its
    /// character `depth + 1` without the matcher having been able to leave the
    /// automaton on the way: no state reached after the first byte is open, and every
    /// state after `depth` characters refuses the first byte of every safe character.
    /// Such runs are rejected whatever the stack.
    pub(crate) rejects_longer: bool,
}

/// A memo entry of [`safe_depth`] not filled yet.
pub(crate) const UNKNOWN_DEPTH: u32 = u32::MAX;

/// A memo entry of [`safe_depth`] for a state from which no state that refuses a safe
/// character is reachable.
const UNBOUNDED_DEPTH: u32 = u32::MAX - 1;

/// The safe depth of `state`, capped at `cap` (see [`SafeDepth`]): the distance, in
/// characters, from `state` to the nearest state that refuses some safe character. A
/// breadth-first search by characters, each state visited once (at most
/// [`MAX_VISITED_STATES`]; past that, or when a layer grows past [`MAX_LEVEL_STATES`],
/// the depth reached is returned, a lower bound); when no new state is left, no state
/// that refuses a character is reachable and the depth is unbounded (`cap`).
///
/// `rejects_longer` needs the exact set of states after `depth` characters: it is only
/// claimed while no layer met an already visited state (then each layer is exactly the
/// set of states after that many characters).
///
/// `memo` (one entry per state of the automaton) spares later positions the same search:
/// when a search ends unbounded, every state it visited is marked unbounded, and a
/// search stops (unbounded) at a layer of marked states. Past [`EXACT`] characters only
/// the depth matters, and only to accept the last slice whole; long runs of single
/// states there (the characters of a `maxLength` string) would cost one layer per
/// character from every one of their positions, so each state that is a whole layer
/// there keeps a lower bound of its capped depth (every later layer is reached through
/// it), and later positions on the same run stop at the first state with an entry. A
/// lower bound only makes fewer slices accepted whole: answers never depend on the memo.
pub(crate) fn safe_depth(dfa: &Dfa, state: StateId, cap: usize, memo: &[AtomicU32]) -> SafeDepth {
    let mut visited: Vec<StateId> = vec![state];
    let mut layer: StateSet = smallvec::smallvec![state];
    let mut open = false;
    let mut exact_layers = true;
    // States that are a whole layer past `EXACT` characters, with their depth.
    let mut run: Vec<(usize, StateId)> = Vec::new();
    let mut depth = 0;
    let mut unbounded = false;
    let reps = class_reps(dfa);
    let found = loop {
        if depth >= cap {
            break cap;
        }
        let known =
            |s: StateId| memo.get(s.index()).map_or(UNKNOWN_DEPTH, |m| m.load(Ordering::Relaxed));
        if depth > 0 && layer.iter().all(|&s| known(s) == UNBOUNDED_DEPTH) {
            unbounded = true;
            break cap;
        }
        if depth > EXACT && layer.len() == 1 {
            let s = layer[0];
            match known(s) {
                UNKNOWN_DEPTH => run.push((depth, s)),
                m => break cap.min(depth + m as usize),
            }
        }
        let step = step_char(dfa, reps, &layer);
        let Some(next) = step.next else {
            if run.is_empty() {
                let rejects_longer =
                    depth > 0 && exact_layers && !open && refuses_every_char(dfa, &layer);
                return SafeDepth { depth, rejects_longer };
            }
            break depth;
        };
        open |= step.open;
        let before = next.len();
        layer = next.into_iter().filter(|s| !visited.contains(s)).collect();
        exact_layers &= layer.len() == before;
        if layer.is_empty() {
            unbounded = true;
            break cap;
        }
        if visited.len() + layer.len() > MAX_VISITED_STATES {
            break depth + 1;
        }
        visited.extend_from_slice(&layer);
        depth += 1;
    };
    if unbounded {
        // Every state reachable from a visited one was visited or known unbounded, and
        // none refuses a character.
        for s in visited {
            if let Some(m) = memo.get(s.index()) {
                m.store(UNBOUNDED_DEPTH, Ordering::Relaxed);
            }
        }
    }
    for (at, s) in run {
        if let Some(m) = memo.get(s.index()) {
            if m.load(Ordering::Relaxed) == UNKNOWN_DEPTH {
                m.store((found - at) as u32, Ordering::Relaxed);
            }
        }
    }
    SafeDepth { depth: found, rejects_longer: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_runs() {
        assert_eq!(safe_chars(b"abc"), Some(3));
        assert_eq!(safe_chars(b""), None);
        assert_eq!(safe_chars(b"a\"b"), None);
        assert_eq!(safe_chars(b"a\\"), None);
        assert_eq!(safe_chars(b"a\n"), None);
        assert_eq!(safe_chars(b"\x7f"), None);
        assert_eq!(safe_chars("é".as_bytes()), Some(1));
        assert_eq!(safe_chars(&"aé".as_bytes()[..2]), Some(2));
        assert_eq!(safe_chars(&[0x80]), None);
        assert_eq!(safe_chars(&[0xED, 0xA0]), None);
        assert_eq!(safe_chars(&[0xF0, 0x90, 0x80]), Some(1));
        assert_eq!(safe_chars(&[0xC0, 0x80]), None);
    }

    #[test]
    fn parts_skip_like_the_sorted_vocabulary() {
        let tokens: Vec<Vec<u8>> = ["a", "ab", "abc", "abd", "b", "ba", "c"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        let v = Vocabulary::from_byte_tokens(tokens, &[], &[], None).unwrap();
        let sorted = v.sorted();
        let all = Part::build(sorted, (0..sorted.len() as u32).collect());
        for k in 0..sorted.len() {
            assert_eq!(all.shared(k), sorted.lcp(k));
            for d in 0..=sorted.bytes(k).len() {
                assert_eq!(all.skip(k, d), sorted.next_without_prefix(k, d));
            }
        }
        // "a", "abc", "b": "abc" shares one byte with "a", "b" none.
        let some = Part::build(sorted, vec![0, 2, 4]);
        assert_eq!((some.shared(1), some.shared(2)), (1, 0));
        assert_eq!(some.skip(0, 1), 2);
        assert_eq!(some.skip(1, 2), 2);
    }

    #[test]
    fn slicing_sizes_and_registry() {
        let tokens: Vec<Vec<u8>> = ["a", "ab", "\"", "a\"", "é", "abcdefghijklmnopqrstu"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        let v = Arc::new(Vocabulary::from_byte_tokens(tokens, &[], &[], None).unwrap());
        let s = slicing_for(&v);
        assert!(Arc::ptr_eq(&s, &slicing_for(&v)), "one slicing per vocabulary");
        assert_eq!(s.rest.count(), 2);
        assert_eq!((s.slices[0].count(), s.slices[1].count(), s.slices[EXACT].count()), (2, 1, 1));
        assert_eq!(s.depth_cap(), 21);
        assert_eq!((s.covered(3), s.covered(20), s.covered(21)), (3, EXACT, EXACT + 1));
        let words = bitmask_len(v.vocab_size());
        // 20 bytes per token and its bytes, 4 per part (its `starts` end).
        let parts = (EXACT + 2) * 4;
        assert_eq!(s.memory(), 20 * 6 + 29 + parts + (EXACT + 1) * words * 4);
        let prepared =
            Arc::new(Vocabulary::from_byte_tokens(vec![b"y".to_vec()], &[], &[], None).unwrap());
        crate::prepare_vocabulary(&prepared);
        assert!(REGISTRY
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|(v, _)| std::ptr::eq(v.as_ptr(), Arc::as_ptr(&prepared))));
        let weak = Arc::downgrade(&v);
        drop((v, s));
        // The next look-up drops the entry of the vocabulary that is gone.
        let other =
            Arc::new(Vocabulary::from_byte_tokens(vec![b"x".to_vec()], &[], &[], None).unwrap());
        let _ = slicing_for(&other);
        let registry = REGISTRY.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(registry.iter().all(|(v, _)| !v.ptr_eq(&weak)));
    }
}
