//! Vocabulary slices: the tokens that are runs of JSON-string characters, grouped by
//! length, built once per vocabulary so that a position inside a string accepts most of
//! them by one shared bitmask.
//!
//! Most of a large vocabulary consists of *safe runs*: well-formed UTF-8 text without `"`, `\`, C0 controls or DEL, possibly ending in
//! an incomplete character. Inside a JSON string every such run is readable, so a
//! position inside a string accepts all of them; classifying it by walking the whole
//! vocabulary is slow and is repeated for every copy of the string automaton.
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
//! about what it claims, so answers never change.
//!
//! A string whose alphabet leaves out a few safe characters (a pattern's `[^#/]`,
//! ECMAScript's `.` without U+2028 and U+2029, `\S`, an ASCII-only format) takes the
//! slices too: [`Excluded::at`] lists the characters its position refuses (at most 32,
//! or every character of more than one byte and at most 32 others), [`safe_depth`]
//! checks that every state on the way refuses exactly these and could not leave the
//! automaton, and the slices' tokens that hold one are rejected: the bitmask accepted is
//! the union without them ([`Slicing::union_without`], from one bitmask per safe ASCII
//! character and one for all others, kept with the slicing). Any other position (outside
//! strings, narrower alphabets) walks the whole vocabulary.
//!
//! The tokens of the rest that start with safe characters are kept again by *tail*, what
//! follows their longest run of whole safe characters ([`Tails`]). From a position
//! where every safe run leads to one state that reads them all back to itself
//! ([`run_layers`]) only the tails are walked, from that state; where such a state
//! is only reachable ([`safe_loop_state`]), a walk over the rest takes a token's tail
//! from there once its run reaches it. In a string of bounded length, where every run of
//! `r` characters leads to one state ([`run_layers`]), the tails are kept by run length
//! too and each group is walked from the state after its run.
//!
//! Slicings are vocabulary-level data, like the sorted vocabulary: built on first use for
//! a vocabulary and kept while the vocabulary
//! lives, in a registry of one entry per live vocabulary ([`slicing_for`]).

use super::runs::Excluded;
use crate::ids::SortedPos;
use grammask_tokenset::{bitmask_len, get_bit, set_bit, SortedVocab, Vocabulary};
use rustc_hash::FxHashMap as HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// Slices of exactly 1..=`EXACT` safe characters; longer safe runs share one last slice.
pub(crate) const EXACT: usize = 31;

/// The UTF-8 encodings of the safe characters (every Unicode scalar value but `"`, `\`,
/// U+0000-U+001F and U+007F), as sequences of byte ranges (Unicode's table of
/// well-formed byte sequences).
pub(super) const SAFE_CHARS: &[&[(u8, u8)]] = &[
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

/// The safe characters of one byte.
pub(super) fn safe_ascii() -> impl Iterator<Item = u8> {
    (0x20..=0x7E).filter(|&b| b != b'"' && b != b'\\')
}

/// The first bytes of the safe characters of more than one byte.
pub(super) const NON_ASCII_LEADS: std::ops::RangeInclusive<u8> = 0xC2..=0xF4;

/// The sequences of [`SAFE_CHARS`] of one byte (the first ones).
pub(super) const ASCII_SEQS: usize = 3;

/// A set of first bytes of characters of more than one byte ([`NON_ASCII_LEADS`]): the
/// characters of more than one byte a [`Diverted`](super::runs::Diverted) split walks the
/// tokens of, by their first byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Leads(u64);

impl Leads {
    /// The first bytes of characters of more than one byte that `read` takes.
    pub(crate) fn read_by(read: impl Fn(u8) -> bool) -> Leads {
        NON_ASCII_LEADS.filter(|&b| read(b)).fold(Leads::default(), |l, b| l.with(b))
    }

    /// The first bytes of characters of more than one byte in `bytes`.
    fn held_in(bytes: &[u8]) -> Leads {
        bytes
            .iter()
            .filter(|b| NON_ASCII_LEADS.contains(b))
            .fold(Leads::default(), |l, &b| l.with(b))
    }

    fn with(self, b: u8) -> Leads {
        Leads(self.0 | 1 << (b - 0xC0))
    }

    /// Both sets together.
    pub(crate) fn union(self, other: Leads) -> Leads {
        Leads(self.0 | other.0)
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn meets(self, other: Leads) -> bool {
        self.0 & other.0 != 0
    }

    /// Whether `b` is in the set.
    pub(crate) fn contains(self, b: u8) -> bool {
        NON_ASCII_LEADS.contains(&b) && self.0 >> (b - 0xC0) & 1 != 0
    }
}

/// The number of safe characters of `bytes` when it is a non-empty safe run (an
/// incomplete last character counts as one), else `None`.
fn safe_chars(bytes: &[u8]) -> Option<usize> {
    let (run, chars) = safe_run(bytes);
    let rest = &bytes[run..];
    if rest.is_empty() {
        return (chars > 0).then_some(chars);
    }
    // What follows the run can only be an incomplete last character.
    let incomplete = SAFE_CHARS.iter().any(|seq| {
        rest.len() < seq.len() && seq.iter().zip(rest).all(|(&(lo, hi), b)| (lo..=hi).contains(b))
    });
    incomplete.then_some(chars + 1)
}

/// A sorted vocabulary, or a subsequence of one, or tails of tokens, walked as a trie
/// (see [`grammask_tokenset::SortedVocab`] for the meaning of `lcp` and the skip). Its
/// *keys* are byte strings in ascending order, each standing for one or more tokens.
pub(crate) trait Trie {
    /// What a walk records of an accepted key: token ids, or key indices.
    type Accepted: Copy;
    /// What a walk records of a context-dependent key: sorted-vocabulary positions, or
    /// key indices.
    type Dependent: Copy;
    /// The byte of a token where the keys start: 0, or 1 for [`Tails`] (keys that
    /// follow at least one character of their tokens).
    const OFFSET: usize;
    /// Number of keys.
    fn count(&self) -> usize;
    /// The bytes of the `k`-th key.
    fn bytes(&self, k: usize) -> &[u8];
    /// Common prefix length of the `k - 1`-th and `k`-th keys (0 for `k == 0`).
    fn shared(&self, k: usize) -> usize;
    /// The first `j > k` whose key does not start with the first `depth` bytes of the
    /// `k`-th key, or `count()`.
    fn skip(&self, k: usize, depth: usize) -> usize;
    /// Pushes the ids of the tokens of the `k`-th key.
    fn accepted(&self, k: usize, ids: &mut Vec<Self::Accepted>);
    /// Pushes the sorted-vocabulary positions of the tokens of the keys `k..end`.
    fn dependent(&self, k: usize, end: usize, positions: &mut Vec<Self::Dependent>);
    /// The trie whose keys these are: itself, or the one a [`KeyRange`] numbers anew.
    type Base: Trie;
    /// Keys `k..end`, as a range of [`Trie::Base`].
    fn range(&self, k: usize, end: usize) -> KeyRange<'_, Self::Base>;
}

/// Keys `start..end` of another trie, numbered from 0 and recorded by their numbers:
/// what a classification walk's fork (`classify::Walker::fork`) walks once per callee
/// before it combines the outcomes, and the tails whose outcomes a walk remembers.
pub(crate) struct KeyRange<'t, T> {
    pub(crate) trie: &'t T,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl<T: Trie> Trie for KeyRange<'_, T> {
    type Accepted = u32;
    type Dependent = u32;
    type Base = T;
    const OFFSET: usize = T::OFFSET;
    fn range(&self, k: usize, end: usize) -> KeyRange<'_, T> {
        KeyRange { trie: self.trie, start: self.start + k, end: self.start + end }
    }
    #[inline]
    fn count(&self) -> usize {
        self.end - self.start
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        self.trie.bytes(self.start + k)
    }
    #[inline]
    fn shared(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            self.trie.shared(self.start + k)
        }
    }
    #[inline]
    fn skip(&self, k: usize, depth: usize) -> usize {
        self.trie.skip(self.start + k, depth).min(self.end) - self.start
    }
    #[inline]
    fn accepted(&self, k: usize, keys: &mut Vec<u32>) {
        keys.push(k as u32);
    }
    #[inline]
    fn dependent(&self, k: usize, end: usize, keys: &mut Vec<u32>) {
        keys.extend(k as u32..end as u32);
    }
}

impl Trie for SortedVocab {
    type Base = Self;
    fn range(&self, k: usize, end: usize) -> KeyRange<'_, Self> {
        KeyRange { trie: self, start: k, end }
    }
    type Accepted = u32;
    type Dependent = SortedPos;
    const OFFSET: usize = 0;
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        SortedVocab::bytes(self, k)
    }
    #[inline]
    fn shared(&self, k: usize) -> usize {
        self.lcp(k)
    }
    #[inline]
    fn skip(&self, k: usize, depth: usize) -> usize {
        self.next_without_prefix(k, depth)
    }
    #[inline]
    fn accepted(&self, k: usize, ids: &mut Vec<u32>) {
        ids.push(self.token_id(k));
    }
    #[inline]
    fn dependent(&self, k: usize, end: usize, positions: &mut Vec<SortedPos>) {
        positions.extend(SortedPos::range(k, end));
    }
}

/// Ascending byte strings with their trie walk data, in contiguous memory (a walk
/// reads them in order).
#[derive(Debug, Default)]
struct Keys {
    /// `bytes(k) = data[starts[k]..starts[k + 1]]`.
    starts: Vec<u32>,
    /// The keys' bytes, concatenated.
    data: Vec<u8>,
    /// `lcp[k]`: common prefix length of the keys `k - 1` and `k`.
    lcp: Vec<u32>,
    /// `subtree_end[k]`: the first `j > k` whose key does not start with the whole of
    /// key `k`, or `len`.
    subtree_end: Vec<u32>,
}

impl Keys {
    /// The walk data of `keys` (ascending).
    fn build<'a>(keys: impl IntoIterator<Item = &'a [u8]>) -> Keys {
        let mut k = Keys { starts: vec![0], ..Keys::default() };
        // Keys that are a prefix of the previous key, shortest first.
        let mut open: Vec<usize> = Vec::new();
        for (i, bytes) in keys.into_iter().enumerate() {
            let prev = k.starts.len().checked_sub(2).map_or(&[][..], |p| k.bytes(p));
            let common = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            while let Some(&top) = open.last() {
                if k.bytes(top).len() > common {
                    k.subtree_end[top] = i as u32;
                    open.pop();
                } else {
                    break;
                }
            }
            open.push(i);
            k.lcp.push(common as u32);
            k.subtree_end.push(u32::MAX);
            k.data.extend_from_slice(bytes);
            k.starts.push(k.data.len() as u32);
        }
        let n = k.lcp.len() as u32;
        for &top in &open {
            k.subtree_end[top] = n;
        }
        k
    }

    #[inline]
    fn len(&self) -> usize {
        self.lcp.len()
    }

    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        &self.data[self.starts[k] as usize..self.starts[k + 1] as usize]
    }

    #[inline]
    fn skip(&self, k: usize, depth: usize) -> usize {
        let depth = depth as u32;
        let mut j = k + 1;
        // As `SortedVocab::next_without_prefix`: every key in k..j starts with the
        // prefix; a key sharing `depth` bytes with its predecessor, and its subtree, do
        // too.
        while j < self.len() && self.lcp[j] >= depth {
            j = self.subtree_end[j] as usize;
        }
        j
    }

    /// Heap bytes used.
    #[cfg(test)]
    fn memory(&self) -> usize {
        (self.starts.len() + self.lcp.len() + self.subtree_end.len()) * 4 + self.data.len()
    }
}

/// A subsequence of the sorted vocabulary with its own trie walk data, and its own copy
/// of the token ids and bytes.
#[derive(Debug, Default)]
pub(crate) struct Part {
    /// Sorted-vocabulary positions, ascending.
    positions: Vec<SortedPos>,
    /// Token ids.
    ids: Vec<u32>,
    /// The tokens' bytes.
    keys: Keys,
}

impl Part {
    /// The walk data of the tokens at `positions` (ascending) of `sorted`.
    fn build(sorted: &SortedVocab, positions: Vec<SortedPos>) -> Part {
        let ids = positions.iter().map(|&p| sorted.token_id(p.index())).collect();
        let keys = Keys::build(positions.iter().map(|&p| sorted.bytes(p.index())));
        Part { positions, ids, keys }
    }

    /// Heap bytes used.
    #[cfg(test)]
    fn memory(&self) -> usize {
        (self.positions.len() + self.ids.len()) * 4 + self.keys.memory()
    }
}

impl Trie for Part {
    type Base = Self;
    fn range(&self, k: usize, end: usize) -> KeyRange<'_, Self> {
        KeyRange { trie: self, start: k, end }
    }
    type Accepted = u32;
    type Dependent = SortedPos;
    const OFFSET: usize = 0;
    #[inline]
    fn count(&self) -> usize {
        self.positions.len()
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        self.keys.bytes(k)
    }
    #[inline]
    fn shared(&self, k: usize) -> usize {
        self.keys.lcp[k] as usize
    }
    #[inline]
    fn skip(&self, k: usize, depth: usize) -> usize {
        self.keys.skip(k, depth)
    }
    #[inline]
    fn accepted(&self, k: usize, ids: &mut Vec<u32>) {
        ids.push(self.ids[k]);
    }
    #[inline]
    fn dependent(&self, k: usize, end: usize, positions: &mut Vec<SortedPos>) {
        positions.extend_from_slice(&self.positions[k..end]);
    }
}

/// The tokens of the rest that start with safe characters, by their *tail*: what
/// follows the longest run of whole safe characters they start with. From a state
/// where every safe run leads to one state ([`run_layers`]), such a token goes
/// wherever its tail goes from there, after one byte at least; tokens of one tail are
/// classified together.
/// Such tokens (`abc",`, `x\n`, ...) have far fewer distinct tails than tokens.
#[derive(Debug, Default)]
pub(crate) struct Tails {
    /// The distinct tails.
    keys: Keys,
    /// The tokens of tail `k`: `members[k]..members[k + 1]` of `ids` and `positions`.
    members: Vec<u32>,
    /// Token ids, tail by tail.
    ids: Vec<u32>,
    /// Their sorted-vocabulary positions.
    positions: Vec<SortedPos>,
}

impl Tails {
    /// The tails of the tokens at `positions` of `sorted`, each with the length of the
    /// safe run it follows (`> 0`).
    fn build(sorted: &SortedVocab, tokens: &[(SortedPos, usize)]) -> Tails {
        let mut by_tail: std::collections::BTreeMap<&[u8], Vec<SortedPos>> = Default::default();
        for &(p, run) in tokens {
            by_tail.entry(&sorted.bytes(p.index())[run..]).or_default().push(p);
        }
        let keys = Keys::build(by_tail.keys().copied());
        let mut t = Tails { keys, members: vec![0], ..Tails::default() };
        for members in by_tail.values() {
            t.positions.extend_from_slice(members);
            t.ids.extend(members.iter().map(|&p| sorted.token_id(p.index())));
            t.members.push(t.positions.len() as u32);
        }
        t
    }

    /// Heap bytes used.
    #[cfg(test)]
    fn memory(&self) -> usize {
        (self.members.len() + self.ids.len() + self.positions.len()) * 4 + self.keys.memory()
    }
}

impl Trie for Tails {
    type Base = Self;
    fn range(&self, k: usize, end: usize) -> KeyRange<'_, Self> {
        KeyRange { trie: self, start: k, end }
    }
    type Accepted = u32;
    type Dependent = SortedPos;
    const OFFSET: usize = 1;
    #[inline]
    fn count(&self) -> usize {
        self.keys.len()
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        self.keys.bytes(k)
    }
    #[inline]
    fn shared(&self, k: usize) -> usize {
        self.keys.lcp[k] as usize
    }
    #[inline]
    fn skip(&self, k: usize, depth: usize) -> usize {
        self.keys.skip(k, depth)
    }
    #[inline]
    fn accepted(&self, k: usize, ids: &mut Vec<u32>) {
        ids.extend_from_slice(&self.ids[self.members[k] as usize..self.members[k + 1] as usize]);
    }
    #[inline]
    fn dependent(&self, k: usize, end: usize, positions: &mut Vec<SortedPos>) {
        let range = self.members[k] as usize..self.members[end] as usize;
        positions.extend_from_slice(&self.positions[range]);
    }
}

/// Marks a token of the rest without a tail (it starts with no safe character).
const NO_TAIL: u32 = u32::MAX;

/// The longest run of whole safe characters `bytes` starts with: its length in bytes
/// and in characters.
fn safe_run(bytes: &[u8]) -> (usize, usize) {
    let (mut i, mut chars) = (0, 0);
    'chars: while i < bytes.len() {
        for seq in SAFE_CHARS {
            let fits = seq.len() <= bytes.len() - i
                && seq.iter().zip(&bytes[i..]).all(|(&(lo, hi), b)| (lo..=hi).contains(b));
            if fits {
                i += seq.len();
                chars += 1;
                continue 'chars;
            }
        }
        break;
    }
    (i, chars)
}

/// Runs of up to this many characters have their tails kept by run length
/// ([`Slicing::rest_by_run`]); Llama-3 has 107 tokens of the rest with longer ones.
pub(crate) const RUN_LAYERS: usize = 8;

/// A vocabulary split into slices of safe runs and the rest; see the module
/// documentation.
#[derive(Debug)]
pub(crate) struct Slicing {
    /// `slices[c - 1]`: the safe runs of exactly `c` characters, for `c` in
    /// `1..=EXACT`; `slices[EXACT]`: the longer ones.
    slices: Vec<Part>,
    /// The tokens of no slice.
    rest: Part,
    /// The tokens of `rest` that do not start with a safe character.
    head: Part,
    /// The others, by tail.
    tails: Tails,
    /// Per token of `rest`: the length of the safe run it starts with, in bytes.
    rest_runs: Vec<u32>,
    /// Per token of `rest`: its tail in `tails` ([`NO_TAIL`] for those of `head`).
    rest_tails: Vec<u32>,
    /// `by_run[r - 1]`: the tails of the tokens of `tails` whose run is `r` characters
    /// long, for `r` up to [`RUN_LAYERS`].
    by_run: Vec<Tails>,
    /// The tokens of `tails` with longer runs.
    long_runs: Part,
    /// `union[m - 1]`: the bitmask (over token ids) of the tokens of `slices[..m]`.
    union: Vec<Arc<Vec<u32>>>,
    /// The safe depth that covers every slice: at least `EXACT + 1`, and the character
    /// count of the longest token of the last slice.
    covers_all: usize,
    /// `contains[b]` for each safe ASCII character `b`: the bitmask of the tokens of the
    /// slices that contain `b` (empty for the other bytes).
    contains: Vec<Vec<u32>>,
    /// The bitmask of the tokens of the slices that contain a character of more than
    /// one byte (or the start of one).
    contains_non_ascii: Vec<u32>,
    /// Those tokens, by id, each with the first bytes of its characters of more than
    /// one byte.
    non_ascii_leads: Vec<(u32, Leads)>,
    /// The unions of the first `m` slices without the tokens holding an excluded
    /// character, by `(m, excluded)`: at most [`MAX_EXCLUDED_UNIONS`].
    excluded_unions: Mutex<ExcludedUnions>,
    /// The sorted-vocabulary positions of the tokens of the slices that hold one of some
    /// ASCII characters, by their bit set, or a character of more than one byte
    /// ([`Diverted`]): at most [`MAX_EXCLUDED_UNIONS`].
    holding: Mutex<HoldingLists>,
}

/// The lists of [`Slicing::holding`], by the ASCII characters (bit set), the first
/// bytes of the characters of more than one byte that count, and the slices looked in.
type HoldingLists = HashMap<(u128, Leads, usize), Arc<Vec<SortedPos>>>;

/// Bitmasks of the first `m` slices without excluded characters, by `(m, excluded)`.
type ExcludedUnions = HashMap<(usize, Excluded), Arc<Vec<u32>>>;

/// Unions without excluded characters a slicing keeps (each a bitmask over the
/// vocabulary), and lists of tokens holding diverting characters; past this, a position
/// that needs another has it made for itself (a bounded string's positions each ask for
/// their own length, so a long-lived process meets this bound).
const MAX_EXCLUDED_UNIONS: usize = 64;

impl Slicing {
    /// Splits the ordinary tokens of `vocab`.
    fn build(vocab: &Vocabulary) -> Slicing {
        let sorted = vocab.sorted();
        let mut members: Vec<Vec<SortedPos>> = vec![Vec::new(); EXACT + 1];
        let mut rest = Vec::new();
        let mut covers_all = EXACT + 1;
        for i in 0..sorted.len() {
            match safe_chars(sorted.bytes(i)) {
                Some(c) => {
                    members[c.min(EXACT + 1) - 1].push(SortedPos::new(i));
                    covers_all = covers_all.max(c);
                }
                None => rest.push(SortedPos::new(i)),
            }
        }
        let words = bitmask_len(vocab.vocab_size());
        let mut bits = vec![0u32; words];
        let mut union = Vec::with_capacity(EXACT + 1);
        for slice in &members {
            for &p in slice {
                set_bit(&mut bits, sorted.token_id(p.index()));
            }
            union.push(Arc::new(bits.clone()));
        }
        let mut contains = vec![Vec::new(); 128];
        for b in safe_ascii() {
            contains[b as usize] = vec![0u32; words];
        }
        let mut contains_non_ascii = vec![0u32; words];
        let mut non_ascii_leads = Vec::new();
        for &p in members.iter().flatten() {
            let id = sorted.token_id(p.index());
            let bytes = sorted.bytes(p.index());
            for &b in bytes {
                match contains.get_mut(b as usize) {
                    Some(bits) => set_bit(bits, id),
                    None => set_bit(&mut contains_non_ascii, id),
                }
            }
            if !bytes.is_ascii() {
                non_ascii_leads.push((id, Leads::held_in(bytes)));
            }
        }
        let slices = members.into_iter().map(|m| Part::build(sorted, m)).collect();
        let (mut head, mut tailed, mut rest_runs) = (Vec::new(), Vec::new(), Vec::new());
        let mut by_run = vec![Vec::new(); RUN_LAYERS];
        let mut long_runs = Vec::new();
        for &p in &rest {
            let (run, chars) = safe_run(sorted.bytes(p.index()));
            rest_runs.push(run as u32);
            match chars {
                0 => head.push(p),
                1..=RUN_LAYERS => by_run[chars - 1].push((p, run)),
                _ => long_runs.push(p),
            }
            if chars > 0 {
                tailed.push((p, run));
            }
        }
        let tails = Tails::build(sorted, &tailed);
        let mut tail_of = HashMap::default();
        for k in 0..tails.count() {
            let members = tails.members[k] as usize..tails.members[k + 1] as usize;
            tail_of.extend(tails.positions[members].iter().map(|&p| (p, k as u32)));
        }
        let rest_tails = rest.iter().map(|p| tail_of.get(p).copied().unwrap_or(NO_TAIL)).collect();
        Slicing {
            slices,
            rest: Part::build(sorted, rest),
            head: Part::build(sorted, head),
            tails,
            rest_runs,
            rest_tails,
            by_run: by_run.iter().map(|tokens| Tails::build(sorted, tokens)).collect(),
            long_runs: Part::build(sorted, long_runs),
            union,
            covers_all,
            contains,
            contains_non_ascii,
            non_ascii_leads,
            excluded_unions: Mutex::new(HashMap::default()),
            holding: Mutex::new(HashMap::default()),
        }
    }

    /// The sorted-vocabulary positions (ascending) of the tokens of the first `m` slices
    /// that hold one of the safe ASCII characters of `chars` (bit `b`: character `b`) or
    /// a character of more than one byte whose first byte is in `leads`, kept while the
    /// slicing keeps fewer than [`MAX_EXCLUDED_UNIONS`] such lists.
    pub(crate) fn holding(
        &self,
        sorted: &SortedVocab,
        chars: u128,
        leads: Leads,
        m: usize,
    ) -> Arc<Vec<SortedPos>> {
        // The map only ever gains complete entries: a poisoned lock is used as is.
        let mut lists = self.holding.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(list) = lists.get(&(chars, leads, m)) {
            return list.clone();
        }
        let bits = self.holding_bits(chars, leads, m);
        let list: Vec<SortedPos> = SortedPos::range(0, sorted.len())
            .filter(|&p| get_bit(&bits, sorted.token_id(p.index())))
            .collect();
        let list = Arc::new(list);
        if lists.len() < MAX_EXCLUDED_UNIONS {
            lists.insert((chars, leads, m), list.clone());
        }
        list
    }

    /// How many tokens [`Slicing::holding`] lists for `chars`, `leads` and `m`, counted
    /// without listing them.
    pub(crate) fn holding_count(&self, chars: u128, leads: Leads, m: usize) -> usize {
        let bits = self.holding_bits(chars, leads, m);
        bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The bitmask of the tokens of the first `m` slices that hold one of `chars`, or a
    /// character of more than one byte whose first byte is in `leads`.
    fn holding_bits(&self, chars: u128, leads: Leads, m: usize) -> Vec<u32> {
        let mut bits = vec![0u32; self.contains_non_ascii.len()];
        if !leads.is_empty() {
            for &(id, held) in &self.non_ascii_leads {
                if held.meets(leads) {
                    set_bit(&mut bits, id);
                }
            }
        }
        for b in safe_ascii().filter(|&b| chars >> b & 1 != 0) {
            for (w, &c) in bits.iter_mut().zip(&self.contains[b as usize]) {
                *w |= c;
            }
        }
        if m <= EXACT {
            for (w, &u) in bits.iter_mut().zip(self.union(m).iter()) {
                *w &= u;
            }
        }
        bits
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

    /// The bitmask of the tokens of the first `m` slices (`m >= 1`) that hold no
    /// character of `excluded`, and whether the slicing keeps it (shared by every
    /// position that asks): it keeps fewer than [`MAX_EXCLUDED_UNIONS`] such unions, and
    /// makes the others for the position alone.
    pub(crate) fn union_without(&self, m: usize, excluded: &Excluded) -> (Arc<Vec<u32>>, bool) {
        if excluded.is_empty() {
            return (self.union(m).clone(), true);
        }
        // The map only ever gains complete entries: a poisoned lock is used as is.
        let mut unions = self.excluded_unions.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (m, excluded.clone());
        if let Some(u) = unions.get(&key) {
            return (u.clone(), true);
        }
        let mut bits = self.union(m).as_ref().clone();
        let excluded_masks = safe_ascii()
            .filter(|&b| excluded.ascii >> b & 1 != 0)
            .map(|b| &self.contains[b as usize])
            .chain(excluded.non_ascii.then_some(&self.contains_non_ascii));
        for mask in excluded_masks {
            for (w, &c) in bits.iter_mut().zip(mask) {
                *w &= !c;
            }
        }
        if !excluded.leads.is_empty() {
            for &(id, held) in &self.non_ascii_leads {
                if held.meets(excluded.leads) {
                    bits[id as usize / 32] &= !(1 << (id % 32));
                }
            }
        }
        if !excluded.others.is_empty() {
            let key = |c: &[u8]| c.iter().fold(0u32, |k, &b| k << 8 | u32::from(b));
            let mut keys: Vec<u32> = excluded.others.iter().map(|c| key(c)).collect();
            keys.sort_unstable();
            // Tokens of the slices are safe runs: whole characters, but maybe the last.
            let holds = |bytes: &[u8]| {
                let mut i = 0;
                while i < bytes.len() {
                    let len = match bytes[i] {
                        0..=0x7F => 1,
                        0xC0..=0xDF => 2,
                        0xE0..=0xEF => 3,
                        _ => 4,
                    };
                    let Some(c) = bytes.get(i..i + len) else { return false };
                    if len > 1 && keys.binary_search(&key(c)).is_ok() {
                        return true;
                    }
                    i += len;
                }
                false
            };
            for part in &self.slices[..m] {
                for k in 0..part.count() {
                    let bytes = part.bytes(k);
                    if !bytes.is_ascii() && holds(bytes) {
                        let id = part.ids[k];
                        bits[id as usize / 32] &= !(1 << (id % 32));
                    }
                }
            }
        }
        let bits = Arc::new(bits);
        let kept = unions.len() < MAX_EXCLUDED_UNIONS;
        if kept {
            unions.insert(key, bits.clone());
        }
        (bits, kept)
    }

    /// The parts still to walk when the first `m` slices are accepted whole: the other
    /// slices ([`Slicing::slices_after`] of them), then the rest.
    pub(crate) fn remaining(&self, m: usize) -> impl Iterator<Item = &Part> + '_ {
        self.slices[m..].iter().chain(std::iter::once(&self.rest))
    }

    /// The rest as its tokens that do not start with a safe character and the tails of
    /// the others: to walk instead of the rest from a state whose [`run_layers`] are all
    /// one state.
    pub(crate) fn rest_by_tails(&self) -> (&Part, &Tails) {
        (&self.head, &self.tails)
    }

    /// The rest, with the length of the safe run each of its tokens starts with (bytes)
    /// and its tail in [`Slicing::rest_by_tails`] ([`NO_TAIL`] when it starts with none).
    pub(crate) fn rest_with_tails(&self) -> (&Part, &[u32], &[u32]) {
        (&self.rest, &self.rest_runs, &self.rest_tails)
    }

    /// The rest as its tokens that do not start with a safe character, those whose safe
    /// run is longer than [`RUN_LAYERS`] characters, and the tails of the others by run
    /// length: to walk instead of the rest from a state with [`run_layers`].
    pub(crate) fn rest_by_run(&self) -> (&Part, &Part, &[Tails]) {
        (&self.head, &self.long_runs, &self.by_run)
    }

    /// The number of slices after the first `m`.
    pub(crate) fn slices_after(&self, m: usize) -> usize {
        self.slices.len() - m
    }

    /// Heap bytes used: 20 per ordinary token and its bytes, plus `EXACT + 1` bitmasks
    /// of the unions and one per safe ASCII character and one for the others, and 16 per
    /// token of the slices with a character of more than one byte (the unions without
    /// excluded characters come on top, at most [`MAX_EXCLUDED_UNIONS`]).
    #[cfg(test)]
    fn memory(&self) -> usize {
        self.slices.iter().map(Part::memory).sum::<usize>()
            + self.rest.memory()
            + self.head.memory()
            + self.tails.memory()
            + (self.rest_runs.len() + self.rest_tails.len()) * 4
            + self.by_run.iter().map(Tails::memory).sum::<usize>()
            + self.long_runs.memory()
            + self.union.iter().map(|u| u.len() * 4).sum::<usize>()
            + self.contains.iter().map(|c| c.len() * 4).sum::<usize>()
            + self.contains_non_ascii.len() * 4
            + self.non_ascii_leads.len() * std::mem::size_of::<(u32, Leads)>()
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
        let all = Part::build(sorted, SortedPos::range(0, sorted.len()).collect());
        for k in 0..sorted.len() {
            assert_eq!(all.shared(k), sorted.lcp(k));
            for d in 0..=sorted.bytes(k).len() {
                assert_eq!(all.skip(k, d), sorted.next_without_prefix(k, d));
            }
        }
        // "a", "abc", "b": "abc" shares one byte with "a", "b" none.
        let some = Part::build(sorted, [0, 2, 4].map(SortedPos::new).to_vec());
        assert_eq!((some.shared(1), some.shared(2)), (1, 0));
        assert_eq!(some.skip(0, 1), 2);
        assert_eq!(some.skip(1, 2), 2);
    }

    #[test]
    fn tails_group_the_tokens_after_safe_runs() {
        assert_eq!(safe_run(b"abc\","), (3, 3));
        assert_eq!(safe_run("é\n".as_bytes()), (2, 1));
        assert_eq!(safe_run(b"\"a"), (0, 0));
        // An incomplete character is not part of the run.
        assert_eq!(safe_run(&[b'a', 0xE2, 0x80]), (1, 1));
        let tokens: Vec<Vec<u8>> = ["x\",", "yz\",", "x\"}", "a\\n", "\"", "q"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        let v = Vocabulary::from_byte_tokens(tokens, &[], &[], None).unwrap();
        let sorted = v.sorted();
        let tailed: Vec<(SortedPos, usize)> = SortedPos::range(0, sorted.len())
            .filter_map(|p| match safe_run(sorted.bytes(p.index())).0 {
                0 => None,
                run if run == sorted.bytes(p.index()).len() => None,
                run => Some((p, run)),
            })
            .collect();
        let tails = Tails::build(sorted, &tailed);
        let keys: Vec<&[u8]> = (0..tails.count()).map(|k| tails.bytes(k)).collect();
        assert_eq!(keys, [&b"\","[..], b"\"}", b"\\n"]);
        let mut ids = Vec::new();
        tails.accepted(0, &mut ids);
        ids.sort_unstable();
        assert_eq!(ids, [0, 1], "x\", and yz\", share the tail \",");
        let mut positions = Vec::new();
        tails.dependent(0, 2, &mut positions);
        assert_eq!(positions.len(), 3);
        // `"` and `"}` share one byte; skipping past `"` skips both.
        assert_eq!((tails.shared(1), tails.skip(0, 1)), (1, 2));
    }

    #[test]
    fn slicing_sizes_and_registry() {
        let long = "abcdefghijklmnopqrstuvwxyzabcdefghijk";
        let tokens: Vec<Vec<u8>> =
            ["a", "ab", "\"", "a\"", "é", long].iter().map(|t| t.as_bytes().to_vec()).collect();
        let v = Arc::new(Vocabulary::from_byte_tokens(tokens, &[], &[], None).unwrap());
        let s = slicing_for(&v);
        assert!(Arc::ptr_eq(&s, &slicing_for(&v)), "one slicing per vocabulary");
        assert_eq!(s.rest.count(), 2);
        assert_eq!((s.slices[0].count(), s.slices[1].count(), s.slices[EXACT].count()), (2, 1, 1));
        assert_eq!(s.depth_cap(), 37);
        assert_eq!((s.covered(3), s.covered(36), s.covered(37)), (3, EXACT, EXACT + 1));
        let words = bitmask_len(v.vocab_size());
        // 20 bytes per token and its bytes, 4 per part (its `starts` end).
        let parts = (EXACT + 2) * 4;
        // The rest again: `"` heads it, `a"` has the tail `"` (one key, one token).
        let (head, tails) = s.rest_by_tails();
        assert_eq!((head.count(), head.bytes(0)), (1, &b"\""[..]));
        assert_eq!((tails.count(), tails.bytes(0)), (1, &b"\""[..]));
        // Each as a part of one token of one byte; the tails add their `members`, and
        // each token of the rest its run length and tail.
        let by_tails = 2 * (20 + 1 + 4) + 2 * 4 + 2 * 8;
        // By run length: `a"` again (a run of one), seven empty tails (4 bytes for each
        // of their two ends) and an empty part of long runs.
        let by_run = (20 + 1 + 4 + 8) + (RUN_LAYERS - 1) * 8 + 4;
        // Then the unions, one bitmask per safe ASCII character (93) and one for the
        // others, and `é` with its first byte.
        assert_eq!(
            s.memory(),
            20 * 6 + 45 + parts + by_tails + by_run + (EXACT + 1) * words * 4 + 94 * words * 4 + 16
        );
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
