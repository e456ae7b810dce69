//! The vocabulary sorted by token bytes, with the data to walk it as a trie.
//!
//! A grammar engine classifies every token at a grammar position by feeding the token's
//! bytes to an automaton. Sorting the tokens by their bytes puts all tokens that start
//! with the same prefix next to each other, so two things become cheap:
//!
//! * **Reuse.** Token `i` shares its first `lcp(i)` bytes with token `i - 1`, so the
//!   walker keeps the automaton states it reached after those bytes and only feeds
//!   `bytes(i)[lcp(i)..]`.
//! * **Skip.** When the automaton rejects after the first `d` bytes of token `i`, every
//!   following token that starts with those `d` bytes is rejected too;
//!   [`SortedVocab::next_without_prefix`]`(i, d)` is the first position after them.
//!
//! Exact meaning of the walk data, for positions `0..len()`:
//!
//! * `lcp(0) = 0`; for `i > 0`, `lcp(i)` is the length of the longest common prefix of
//!   `bytes(i - 1)` and `bytes(i)`.
//! * `subtree_end(i)` is the smallest `j > i` such that `bytes(j)` does not start with the
//!   whole of `bytes(i)`, or `len()` if there is none. Positions `i + 1 .. subtree_end(i)`
//!   are exactly the tokens that extend token `i` (including tokens equal to it). It is
//!   `next_without_prefix(i, bytes(i).len())`.
//!
//! `next_without_prefix(i, d)` is one lookup: the end of every prefix of every token is
//! stored beside its last byte (4 bytes per byte of the vocabulary, built in linear time
//! with the sort), so skipping costs the same whatever the prefix's number of children.
//!
//! Only non-special tokens with bytes are included (kinds `Normal` and `Byte`); tokens with
//! equal bytes are ordered by id. Building costs one sort of the token list (tens of
//! milliseconds for 200,000 tokens in a release build).
//!
//! ```
//! use grammask_tokenset::Vocabulary;
//!
//! let v = Vocabulary::from_byte_tokens(
//!     vec![b"a".to_vec(), b"ab".to_vec(), b"abc".to_vec(), b"b".to_vec()],
//!     &[], &[], None,
//! ).unwrap();
//! let s = v.sorted();
//! assert_eq!(s.bytes(2), b"abc");
//! assert_eq!(s.lcp(2), 2);
//! assert_eq!(s.subtree_end(0), 3); // "ab" and "abc" extend "a"
//! assert_eq!(s.next_without_prefix(1, 1), 3); // after "ab", first token not starting with "a"
//! ```

use std::ops::Range;

/// The non-special tokens of a [`crate::Vocabulary`] sorted by their bytes; see the
/// [module documentation](self) for the exact meaning of each field.
#[derive(Clone, Debug, Default)]
pub struct SortedVocab {
    /// Token id at each position.
    ids: Vec<u32>,
    /// `bytes(i) = data[starts[i]..starts[i + 1]]`; `starts.len() == ids.len() + 1`.
    starts: Vec<u32>,
    /// Token bytes concatenated in sorted order, for locality during walks.
    data: Vec<u8>,
    lcp: Vec<u32>,
    /// Per byte of `data` (token `i`, depth `d` at `starts[i] + d - 1`): the first
    /// position after `i` whose token does not start with `bytes(i)[..d]`, so a walk
    /// skips a refused prefix in one lookup.
    prefix_end: Vec<u32>,
    /// The length of the longest token, in bytes.
    longest: usize,
}

impl SortedVocab {
    /// Sorts `tokens` (pairs of id and bytes) and computes the walk data. Pairs with equal
    /// bytes are ordered by id. The total length of all bytes must fit in `u32`.
    pub(crate) fn build(mut tokens: Vec<(u32, &[u8])>) -> Self {
        tokens.sort_unstable_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)));
        let n = tokens.len();
        let total: usize = tokens.iter().map(|t| t.1.len()).sum();
        let mut ids = Vec::with_capacity(n);
        let mut starts = Vec::with_capacity(n + 1);
        let mut data = Vec::with_capacity(total);
        let mut lcp = Vec::with_capacity(n);
        let mut prev: &[u8] = &[];
        for (pos, &(id, bytes)) in tokens.iter().enumerate() {
            let common = if pos == 0 { 0 } else { common_prefix_len(prev, bytes) };
            ids.push(id);
            starts.push(data.len() as u32);
            data.extend_from_slice(bytes);
            lcp.push(common as u32);
            prev = bytes;
        }
        starts.push(data.len() as u32);
        let prefix_end = prefix_ends(&starts, &lcp);
        let longest = tokens.iter().map(|t| t.1.len()).max().unwrap_or(0);
        SortedVocab { ids, starts, data, lcp, prefix_end, longest }
    }

    /// The number of tokens.
    #[inline]
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there are no tokens.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The token ids in sorted order.
    #[inline]
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The token id at position `pos`. Panics if `pos >= len()`.
    #[inline]
    pub fn token_id(&self, pos: usize) -> u32 {
        self.ids[pos]
    }

    /// The bytes of the token at position `pos`. Panics if `pos >= len()`.
    #[inline]
    pub fn bytes(&self, pos: usize) -> &[u8] {
        &self.data[self.starts[pos] as usize..self.starts[pos + 1] as usize]
    }

    /// The length in bytes of the longest token (0 when there are none).
    #[inline]
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// The length of the common prefix of the tokens at `pos - 1` and `pos` (0 for
    /// `pos == 0`). Panics if `pos >= len()`.
    #[inline]
    pub fn lcp(&self, pos: usize) -> usize {
        self.lcp[pos] as usize
    }

    /// All `lcp` values, indexed by position.
    #[inline]
    pub fn lcps(&self) -> &[u32] {
        &self.lcp
    }

    /// The first position after `pos` whose token does not start with the whole of
    /// `bytes(pos)`, or `len()`. Panics if `pos >= len()`.
    #[inline]
    pub fn subtree_end(&self, pos: usize) -> usize {
        self.next_without_prefix(pos, self.bytes(pos).len())
    }

    /// The first position after `pos` whose token does not start with
    /// `bytes(pos)[..depth]`, or `len()`.
    ///
    /// With `depth == 0` that is `len()` (every token starts with the empty prefix); with
    /// `depth == bytes(pos).len()` it is `subtree_end(pos)`.
    ///
    /// # Panics
    /// If `pos >= len()` or `depth > bytes(pos).len()`.
    #[inline]
    pub fn next_without_prefix(&self, pos: usize, depth: usize) -> usize {
        assert!(depth <= self.bytes(pos).len(), "depth beyond the token's length");
        if depth == 0 {
            return self.ids.len();
        }
        self.prefix_end[self.starts[pos] as usize + depth - 1] as usize
    }

    /// The first position whose token has exactly these bytes (the smallest id among
    /// equal tokens), if any.
    pub fn find(&self, bytes: &[u8]) -> Option<usize> {
        let pos = self.lower_bound(bytes);
        (pos < self.len() && self.bytes(pos) == bytes).then_some(pos)
    }

    /// The positions of the tokens that start with `prefix` (possibly empty).
    pub fn prefix_range(&self, prefix: &[u8]) -> Range<usize> {
        let start = self.lower_bound(prefix);
        let mut end = start;
        if start < self.len() && self.bytes(start).starts_with(prefix) {
            end = self.next_without_prefix(start, prefix.len());
        }
        start..end
    }

    /// Iterates `(id, bytes)` in sorted order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u32, &[u8])> + '_ {
        (0..self.len()).map(move |i| (self.ids[i], self.bytes(i)))
    }

    /// The first position whose bytes are not less than `bytes`.
    fn lower_bound(&self, bytes: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.bytes(mid) < bytes {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// The end of every token prefix, for tokens in byte order given by their starts in the
/// concatenated bytes (`starts.len() == lcp.len() + 1`) and their common prefix lengths
/// with the token before: entry `starts[i] + d - 1` is the first `j > i` whose token does
/// not start with the first `d` bytes of token `i` (or the token count). Linear in the
/// bytes: a block of tokens sharing a prefix of depth `d` ends at the first token whose
/// `lcp` is below `d`. The first token of a block records its end (a stack of open
/// depths, closed by each smaller `lcp`); the others copy it from the token before them.
fn prefix_ends(starts: &[u32], lcp: &[u32]) -> Vec<u32> {
    let n = lcp.len();
    let mut end = vec![n as u32; starts[n] as usize];
    let mut open: Vec<(u32, u32)> = Vec::new();
    for j in 0..n {
        while open.last().is_some_and(|&(d, _)| d > lcp[j]) {
            let (_, at) = open.pop().unwrap_or_default();
            end[at as usize] = j as u32;
        }
        for d in lcp[j] + 1..=starts[j + 1] - starts[j] {
            open.push((d, starts[j] + d - 1));
        }
    }
    for j in 1..n {
        for d in 0..lcp[j] {
            end[(starts[j] + d) as usize] = end[(starts[j - 1] + d) as usize];
        }
    }
    end
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(tokens: &[&[u8]]) -> SortedVocab {
        SortedVocab::build(tokens.iter().enumerate().map(|(i, t)| (i as u32, *t)).collect())
    }

    #[test]
    fn small_example() {
        let s = build(&[b"b", b"ab", b"a", b"abc", b"ac", b"ab"]);
        let sorted: Vec<&[u8]> = (0..s.len()).map(|i| s.bytes(i)).collect();
        assert_eq!(sorted, vec![&b"a"[..], b"ab", b"ab", b"abc", b"ac", b"b"]);
        assert_eq!(s.ids(), &[2, 1, 5, 3, 4, 0]);
        assert_eq!(s.lcps(), &[0, 1, 2, 2, 1, 0]);
        assert_eq!(s.longest(), 3);
        assert_eq!(build(&[]).longest(), 0);
        let ends: Vec<usize> = (0..s.len()).map(|i| s.subtree_end(i)).collect();
        assert_eq!(ends, vec![5, 4, 4, 4, 5, 6]);
        assert_eq!(s.next_without_prefix(1, 1), 5);
        assert_eq!(s.next_without_prefix(3, 2), 4);
        assert_eq!(s.next_without_prefix(3, 0), 6);
        assert_eq!(s.find(b"ab"), Some(1));
        assert_eq!(s.find(b"abd"), None);
        assert_eq!(s.prefix_range(b"ab"), 1..4);
        assert_eq!(s.prefix_range(b"c"), 6..6);
        assert_eq!(s.prefix_range(b""), 0..6);
    }
}
