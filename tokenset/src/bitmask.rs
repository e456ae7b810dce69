//! Token bitmasks: one bit per token id, in `u32` words.
//!
//! The layout is the one XGrammar and llguidance use, so a runtime can apply a mask on
//! CPU or GPU without conversion: a mask for a vocabulary of `vocab_size` ids is
//! `bitmask_len(vocab_size) = ceil(vocab_size / 32)` words, and token `i` is allowed when
//! bit `i % 32` of word `i / 32` is set. Bits at or above `vocab_size` in the last word are
//! kept clear by every [`Bitmask`] method.
//!
//! [`Bitmask`] owns its words; the free functions [`bitmask_len`], [`set_bit`],
//! [`clear_bit`] and [`get_bit`] work on a caller's `&mut [u32]` (for example a buffer the
//! runtime allocated).
//!
//! ```
//! use grammask_tokenset::Bitmask;
//!
//! let mut mask = Bitmask::new(70);
//! assert_eq!(mask.words().len(), 3);
//! mask.set(3);
//! mask.set(69);
//! assert!(mask.get(69) && !mask.get(4));
//! assert_eq!(mask.iter_ones().collect::<Vec<_>>(), vec![3, 69]);
//! mask.set_all();
//! assert_eq!(mask.count_ones(), 70);
//! ```

/// The number of `u32` words of a mask over `vocab_size` token ids: `ceil(vocab_size / 32)`.
#[inline]
pub const fn bitmask_len(vocab_size: usize) -> usize {
    vocab_size.div_ceil(32)
}

/// Sets the bit of token `id` in `words`.
///
/// # Panics
/// If `id / 32` is not below `words.len()`.
#[inline]
pub fn set_bit(words: &mut [u32], id: u32) {
    words[(id / 32) as usize] |= 1 << (id % 32);
}

/// Clears the bit of token `id` in `words`.
///
/// # Panics
/// If `id / 32` is not below `words.len()`.
#[inline]
pub fn clear_bit(words: &mut [u32], id: u32) {
    words[(id / 32) as usize] &= !(1 << (id % 32));
}

/// Whether the bit of token `id` is set in `words`; `false` when `id` is beyond the words.
#[inline]
pub fn get_bit(words: &[u32], id: u32) -> bool {
    words.get((id / 32) as usize).is_some_and(|w| w & (1 << (id % 32)) != 0)
}

/// A set of token ids below a fixed `vocab_size`, stored in the shared bitmask layout.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Bitmask {
    words: Vec<u32>,
    vocab_size: usize,
}

impl std::fmt::Debug for Bitmask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bitmask")
            .field("vocab_size", &self.vocab_size)
            .field("count_ones", &self.count_ones())
            .finish()
    }
}

impl Bitmask {
    /// An empty mask (no token allowed) over `vocab_size` ids.
    pub fn new(vocab_size: usize) -> Self {
        Bitmask { words: vec![0; bitmask_len(vocab_size)], vocab_size }
    }

    /// A mask over `vocab_size` ids with every id allowed.
    pub fn full(vocab_size: usize) -> Self {
        let mut mask = Self::new(vocab_size);
        mask.set_all();
        mask
    }

    /// The number of ids the mask covers (the logits width).
    #[inline]
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The words, `bitmask_len(vocab_size)` of them.
    #[inline]
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The words, writable. A caller that sets bits at or above `vocab_size` must clear
    /// them again (for example with [`Bitmask::clear_padding`]).
    #[inline]
    pub fn words_mut(&mut self) -> &mut [u32] {
        &mut self.words
    }

    /// Consumes the mask and returns its words.
    pub fn into_words(self) -> Vec<u32> {
        self.words
    }

    /// Allows token `id`.
    ///
    /// # Panics
    /// If `id >= vocab_size`.
    #[inline]
    pub fn set(&mut self, id: u32) {
        assert!((id as usize) < self.vocab_size, "token id {id} >= vocab size {}", self.vocab_size);
        set_bit(&mut self.words, id);
    }

    /// Disallows token `id`.
    ///
    /// # Panics
    /// If `id >= vocab_size`.
    #[inline]
    pub fn clear(&mut self, id: u32) {
        assert!((id as usize) < self.vocab_size, "token id {id} >= vocab size {}", self.vocab_size);
        clear_bit(&mut self.words, id);
    }

    /// Whether token `id` is allowed; `false` for ids at or above `vocab_size`.
    #[inline]
    pub fn get(&self, id: u32) -> bool {
        (id as usize) < self.vocab_size && get_bit(&self.words, id)
    }

    /// Allows every id below `vocab_size`.
    pub fn set_all(&mut self) {
        self.words.fill(u32::MAX);
        self.clear_padding();
    }

    /// Disallows every id.
    pub fn clear_all(&mut self) {
        self.words.fill(0);
    }

    /// Clears the bits at or above `vocab_size` in the last word.
    pub fn clear_padding(&mut self) {
        let rem = self.vocab_size % 32;
        if rem != 0 {
            if let Some(last) = self.words.last_mut() {
                *last &= (1u32 << rem) - 1;
            }
        }
    }

    /// The number of allowed ids.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether no id is allowed.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The allowed ids in increasing order.
    pub fn iter_ones(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &word)| {
            let base = (i as u32) * 32;
            let mut w = word;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros();
                w &= w - 1;
                Some(base + bit)
            })
        })
    }

    /// Allows every id `other` allows.
    ///
    /// # Panics
    /// If the two masks have different `vocab_size`s.
    pub fn union_with(&mut self, other: &Bitmask) {
        assert_eq!(self.vocab_size, other.vocab_size, "bitmask sizes differ");
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= *b;
        }
    }

    /// Keeps only the ids `other` also allows.
    ///
    /// # Panics
    /// If the two masks have different `vocab_size`s.
    pub fn intersect_with(&mut self, other: &Bitmask) {
        assert_eq!(self.vocab_size, other.vocab_size, "bitmask sizes differ");
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= *b;
        }
    }

    /// Disallows every id `other` allows.
    ///
    /// # Panics
    /// If the two masks have different `vocab_size`s.
    pub fn subtract(&mut self, other: &Bitmask) {
        assert_eq!(self.vocab_size, other.vocab_size, "bitmask sizes differ");
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !*b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_design() {
        let mut m = Bitmask::new(33);
        assert_eq!(m.words().len(), 2);
        m.set(0);
        m.set(31);
        m.set(32);
        assert_eq!(m.words(), &[0x8000_0001, 1]);
        m.clear(31);
        assert_eq!(m.words(), &[1, 1]);
        assert!(!m.get(33) && !m.get(u32::MAX));
    }

    #[test]
    fn set_all_keeps_padding_clear() {
        for n in [0, 1, 31, 32, 33, 64, 100] {
            let m = Bitmask::full(n);
            assert_eq!(m.count_ones(), n);
            assert_eq!(m.iter_ones().collect::<Vec<_>>(), (0..n as u32).collect::<Vec<_>>());
        }
    }

    #[test]
    fn set_operations() {
        let mut a = Bitmask::new(100);
        let mut b = Bitmask::new(100);
        a.set(1);
        a.set(50);
        b.set(50);
        b.set(99);
        let mut u = a.clone();
        u.union_with(&b);
        assert_eq!(u.iter_ones().collect::<Vec<_>>(), vec![1, 50, 99]);
        let mut i = a.clone();
        i.intersect_with(&b);
        assert_eq!(i.iter_ones().collect::<Vec<_>>(), vec![50]);
        a.subtract(&b);
        assert_eq!(a.iter_ones().collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn free_functions() {
        let mut w = vec![0u32; bitmask_len(40)];
        set_bit(&mut w, 39);
        assert!(get_bit(&w, 39));
        assert!(!get_bit(&w, 400));
        clear_bit(&mut w, 39);
        assert_eq!(w, vec![0, 0]);
    }

    #[test]
    #[should_panic]
    fn set_out_of_range_panics() {
        Bitmask::new(10).set(10);
    }
}
