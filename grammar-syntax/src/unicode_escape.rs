//! The `\uXXXX` escapes of a set of characters in a JSON string, as serializers write
//! them: `json.dumps` escapes every control and non-ASCII character by default, a
//! character past U+FFFF as a surrogate pair (`\ud83d\ude00`). Hex digits are matched in
//! either case.
//!
//! Only the characters serializers escape get this form here (controls and non-ASCII
//! characters; see [`has_unicode_escape`]): an ASCII letter is always written as itself.

use crate::ir::{CharClass, Expr};

/// Whether grammars written for JSON strings accept `c` as a `\uXXXX` escape: the
/// controls and every character past ASCII.
pub fn has_unicode_escape(c: char) -> bool {
    (c as u32) < 0x20 || (c as u32) >= 0x80
}

/// Whether a character of `lo..=hi` has a `\uXXXX` form ([`has_unicode_escape`]).
pub fn range_has_unicode_escape(lo: char, hi: char) -> bool {
    (lo as u32) < 0x20 || (hi as u32) >= 0x80
}

/// The `\uXXXX` escapes (surrogate pairs past U+FFFF) of the characters of `ranges`
/// (sorted, inclusive) that have one; `None` when none has.
pub fn unicode_escapes(ranges: &[(char, char)]) -> Option<Expr> {
    let mut alternatives = Vec::new();
    for &(lo, hi) in ranges {
        let (lo, hi) = (lo as u32, hi as u32);
        for (a, b) in [(0, 0x1f), (0x80, 0xd7ff), (0xe000, 0xffff)] {
            let (a, b) = (lo.max(a), hi.min(b));
            if a <= b {
                for digits in hex_sequences(a, b, 4) {
                    alternatives.push(escape_of(&digits));
                }
            }
        }
        let (a, b) = (lo.max(0x1_0000), hi);
        if a <= b {
            alternatives.extend(surrogate_pairs(a - 0x1_0000, b - 0x1_0000));
        }
    }
    if alternatives.is_empty() {
        None
    } else {
        Some(Expr::choice(alternatives))
    }
}

/// The pairs `\uD8xx\uDCxx` of the supplementary offsets `lo..=hi` (code point minus
/// 0x10000): the high surrogate carries the top 10 bits, the low one the bottom 10.
fn surrogate_pairs(lo: u32, hi: u32) -> Vec<Expr> {
    let (hl, ll, hh, lh) = (lo >> 10, lo & 0x3ff, hi >> 10, hi & 0x3ff);
    let pair = |h0: u32, h1: u32, l0: u32, l1: u32| {
        let high =
            hex_sequences(0xd800 + h0, 0xd800 + h1, 4).iter().map(|d| escape_of(d)).collect();
        let low = hex_sequences(0xdc00 + l0, 0xdc00 + l1, 4).iter().map(|d| escape_of(d)).collect();
        Expr::Seq(vec![Expr::choice(high), Expr::choice(low)])
    };
    if hl == hh {
        return vec![pair(hl, hl, ll, lh)];
    }
    let mut out = vec![pair(hl, hl, ll, 0x3ff)];
    if hl + 1 < hh {
        out.push(pair(hl + 1, hh - 1, 0, 0x3ff));
    }
    out.push(pair(hh, hh, 0, lh));
    out
}

/// `\u` followed by one hex digit of each range.
fn escape_of(digits: &[(u32, u32)]) -> Expr {
    let mut items = vec![Expr::literal("\\u")];
    items.extend(digits.iter().map(|&(a, b)| hex_digit(a, b)));
    Expr::Seq(items)
}

/// One hex digit of value `lo..=hi`, letters in either case.
fn hex_digit(lo: u32, hi: u32) -> Expr {
    let mut ranges = Vec::new();
    let digit = |v: u32| char::from_digit(v, 16).unwrap_or('0');
    if lo <= 9 {
        ranges.push((digit(lo), digit(hi.min(9))));
    }
    if hi >= 10 {
        let (a, b) = (lo.max(10), hi);
        ranges.push((digit(a), digit(b)));
        ranges.push((digit(a).to_ascii_uppercase(), digit(b).to_ascii_uppercase()));
    }
    Expr::Class(CharClass::new(false, ranges))
}

/// The values `lo..=hi` written with `digits` hex digits, as sequences of digit ranges
/// (each sequence a product of ranges, together covering exactly `lo..=hi`).
fn hex_sequences(lo: u32, hi: u32, digits: u32) -> Vec<Vec<(u32, u32)>> {
    if digits == 1 {
        return vec![vec![(lo, hi)]];
    }
    let unit = 16u32.pow(digits - 1);
    let (top_lo, top_hi) = (lo / unit, hi / unit);
    let prefixed = |top: u32, a: u32, b: u32| {
        hex_sequences(a, b, digits - 1).into_iter().map(move |mut rest| {
            rest.insert(0, (top, top));
            rest
        })
    };
    if top_lo == top_hi {
        return prefixed(top_lo, lo % unit, hi % unit).collect();
    }
    let mut out = Vec::new();
    let mut full_lo = top_lo;
    if lo % unit != 0 {
        out.extend(prefixed(top_lo, lo % unit, unit - 1));
        full_lo += 1;
    }
    let mut tail = Vec::new();
    let mut full_hi = top_hi;
    if hi % unit != unit - 1 {
        tail.extend(prefixed(top_hi, 0, hi % unit));
        full_hi -= 1;
    }
    if full_lo <= full_hi {
        let mut seq = vec![(full_lo, full_hi)];
        seq.extend(std::iter::repeat_n((0, 15), digits as usize - 1));
        out.push(seq);
    }
    out.extend(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value of `0..=0xffff` is covered by the sequences of `lo..=hi` exactly when
    /// it lies in the range.
    #[test]
    fn hex_sequences_cover_exactly_their_range() {
        for (lo, hi) in
            [(0, 0xffff), (0x80, 0xd7ff), (0x7c0, 0x7c0), (0x123, 0xfed), (0xa0, 0x2fff)]
        {
            let seqs = hex_sequences(lo, hi, 4);
            for v in (0..=0xffffu32).step_by(7).chain([lo, hi]) {
                let d = [v >> 12, (v >> 8) & 15, (v >> 4) & 15, v & 15];
                let hits = seqs
                    .iter()
                    .filter(|s| s.iter().zip(d).all(|(&(a, b), x)| a <= x && x <= b))
                    .count();
                assert_eq!(hits, usize::from(lo <= v && v <= hi), "{v:x} in {lo:x}..{hi:x}");
            }
        }
    }

    #[test]
    fn only_controls_and_non_ascii_have_escapes() {
        assert!(unicode_escapes(&[('a', 'z')]).is_none());
        assert!(unicode_escapes(&[('\t', '\t')]).is_some());
        assert!(unicode_escapes(&[('é', 'é')]).is_some());
        assert!(has_unicode_escape('\u{1f600}'));
        assert!(!has_unicode_escape('~'));
    }
}
