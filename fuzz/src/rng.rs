//! Sources of choices for the generators: a tiny seeded random number generator
//! (xorshift64*), so that every random test is reproducible from one `u64` seed without
//! extra dependencies, and [`ByteSource`], which reads the choices from a fuzzer's input
//! so that the fuzzer's mutations become changes of the generated grammar.

/// What the generators ask of a source of choices.
pub trait Choices {
    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize;

    /// `true` with probability `p`.
    fn chance(&mut self, p: f64) -> bool;

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// One element of a non-empty slice.
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// xorshift64* seeded through splitmix64.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from any seed (0 included).
    pub fn new(seed: u64) -> XorShift {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        XorShift(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    /// One element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

impl Choices for XorShift {
    fn below(&mut self, n: usize) -> usize {
        XorShift::below(self, n)
    }

    fn chance(&mut self, p: f64) -> bool {
        XorShift::chance(self, p)
    }
}

/// Choices read from bytes (a fuzzer's input), one byte per choice (two when there are
/// more than 256 options). Once the bytes run out every choice is 0 and every `chance`
/// is `false`, so generators that loop until a choice ends them always end.
#[derive(Clone, Debug)]
pub struct ByteSource<'a> {
    data: &'a [u8],
}

impl<'a> ByteSource<'a> {
    /// Choices from `data`.
    pub fn new(data: &'a [u8]) -> ByteSource<'a> {
        ByteSource { data }
    }

    /// The next byte (0 once the input is used up).
    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// Whether the input is used up.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.data
    }

    /// Takes the next `n` bytes (fewer at the end of the input).
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }
}

impl Choices for ByteSource<'_> {
    fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "below(0)");
        if n <= 256 {
            self.byte() as usize % n
        } else {
            (u16::from_le_bytes([self.byte(), self.byte()]) as usize) % n
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        if self.is_empty() {
            return false;
        }
        (self.byte() as f64 + 0.5) / 256.0 <= p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_source_reads_choices_then_zeros() {
        let mut s = ByteSource::new(&[7, 255, 0x01, 0x0A]);
        assert_eq!(s.below(5), 2);
        assert!(!s.chance(0.5));
        assert_eq!(s.below(1000), 2561 % 1000);
        assert!(s.is_empty());
        assert_eq!(s.below(3), 0);
        assert!(!s.chance(1.0));
    }
}
