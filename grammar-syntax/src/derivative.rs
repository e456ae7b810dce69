//! Brzozowski derivatives of regular expressions over characters: what is left of an
//! expression after it reads one character, itself an expression. A product of patterns
//! with a format ([`crate::complement::product_with_format`]) follows the format this way
//! and writes what is left of it as it stands once the patterns accept whatever follows,
//! instead of determinizing the format whole.
//!
//! Expressions are kept in a normal form in which [`never`] appears only alone: a
//! sequence holding it, a repetition that must read it and a choice of it alone are it, so
//! an expression other than [`never`] matches some text, and two derivatives reached by
//! different ways compare equal when they are the same alternatives in the same order.

use crate::ir::Expr;
use crate::regex::{encode_class, encode_literal, is_never, never, CharEncoding};

/// What `e` matches after the character `c`, given that every class and literal of `e`
/// holds all or none of the characters `c` stands for (an atom of the alphabet cut at
/// their boundaries); `None` when `e` is not a regular expression over characters.
pub fn derivative(e: &Expr, c: char) -> Option<Expr> {
    Some(match e {
        Expr::Empty => never(),
        Expr::Bytes(bytes) => {
            let text = std::str::from_utf8(bytes).ok()?;
            let mut chars = text.chars();
            match chars.next() {
                Some(first) if first == c => Expr::literal(chars.as_str()),
                _ => never(),
            }
        }
        Expr::Class(class) if class.contains(c) => Expr::Empty,
        Expr::Class(_) => never(),
        Expr::Seq(items) => {
            let Some((first, rest)) = items.split_first() else { return Some(never()) };
            let rest = sequence(rest.to_vec());
            let through = sequence(vec![derivative(first, c)?, rest.clone()]);
            if nullable(first) {
                alternatives(vec![through, derivative(&rest, c)?])
            } else {
                through
            }
        }
        Expr::Choice(alts) => {
            alternatives(alts.iter().map(|a| derivative(a, c)).collect::<Option<_>>()?)
        }
        Expr::Repeat { expr, min, max } => {
            if *max == Some(0) {
                return Some(never());
            }
            let again = repetition(expr, min.saturating_sub(1), max.map(|m| m - 1));
            sequence(vec![derivative(expr, c)?, again])
        }
        Expr::Rule(_) | Expr::Tokens(_) | Expr::Text(_) | Expr::ByteRanges(_) => return None,
    })
}

/// Whether `e` matches the empty text.
pub fn nullable(e: &Expr) -> bool {
    match e {
        Expr::Empty => true,
        Expr::Bytes(bytes) => bytes.is_empty(),
        Expr::Seq(items) => items.iter().all(nullable),
        Expr::Choice(alts) => alts.iter().any(nullable),
        Expr::Repeat { expr, min, .. } => *min == 0 || nullable(expr),
        _ => false,
    }
}

/// Calls `cut` with every character at which a class or literal of `e` starts or stops
/// holding characters (the first character past a range, past a literal's character).
pub fn boundaries(e: &Expr, cut: &mut impl FnMut(u32)) {
    match e {
        Expr::Bytes(bytes) => {
            for c in String::from_utf8_lossy(bytes).chars() {
                cut(c as u32);
                cut(c as u32 + 1);
            }
        }
        Expr::Class(class) => {
            for &(lo, hi) in class.ranges.iter() {
                cut(lo as u32);
                cut(hi as u32 + 1);
            }
        }
        Expr::Seq(items) | Expr::Choice(items) => items.iter().for_each(|i| boundaries(i, cut)),
        Expr::Repeat { expr, .. } => boundaries(expr, cut),
        _ => {}
    }
}

/// `e`, an expression over raw characters, with its characters written in `encoding`
/// (escapes included in a JSON string).
pub fn encoded(e: &Expr, encoding: CharEncoding) -> Option<Expr> {
    Some(match e {
        Expr::Empty => Expr::Empty,
        Expr::Bytes(bytes) => encode_literal(std::str::from_utf8(bytes).ok()?, encoding),
        Expr::Class(class) => encode_class(class, encoding),
        Expr::Seq(items) => {
            Expr::Seq(items.iter().map(|i| encoded(i, encoding)).collect::<Option<_>>()?)
        }
        Expr::Choice(alts) => {
            Expr::Choice(alts.iter().map(|a| encoded(a, encoding)).collect::<Option<_>>()?)
        }
        Expr::Repeat { expr, min, max } => Expr::repeat(encoded(expr, encoding)?, *min, *max),
        Expr::Rule(_) | Expr::Tokens(_) | Expr::Text(_) | Expr::ByteRanges(_) => return None,
    })
}

/// `items` in sequence, in the normal form: nested sequences flattened, empty items
/// dropped, [`never`] if any item is.
fn sequence(items: Vec<Expr>) -> Expr {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Expr::Empty => {}
            Expr::Bytes(ref b) if b.is_empty() => {}
            Expr::Seq(inner) => out.extend(inner),
            e if is_never(&e) => return never(),
            e => out.push(e),
        }
    }
    Expr::seq(out)
}

/// A choice of `alts` in the normal form: nested choices flattened, [`never`] and repeated
/// alternatives dropped (the first kept), [`never`] when none is left.
fn alternatives(alts: Vec<Expr>) -> Expr {
    let mut out: Vec<Expr> = Vec::with_capacity(alts.len());
    for alt in alts {
        let flat = match alt {
            Expr::Choice(inner) => inner,
            e => vec![e],
        };
        for e in flat {
            if !is_never(&e) && !out.contains(&e) {
                out.push(e);
            }
        }
    }
    if out.is_empty() {
        never()
    } else {
        Expr::choice(out)
    }
}

/// `expr{min,max}` in the normal form.
fn repetition(expr: &Expr, min: u32, max: Option<u32>) -> Expr {
    match (min, max) {
        (_, Some(0)) => Expr::Empty,
        (1, Some(1)) => expr.clone(),
        _ => Expr::repeat(expr.clone(), min, max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::GrammarBuilder;
    use crate::regex::{regex_to_ir, RegexOptions};

    fn raw(pattern: &str) -> Expr {
        let opts = RegexOptions { whole_match: true, encoding: CharEncoding::Raw };
        regex_to_ir(pattern, &mut GrammarBuilder::new(), opts).unwrap()
    }

    /// Whether `e` matches `text`, by derivatives.
    fn matches(e: &Expr, text: &str) -> bool {
        let mut e = e.clone();
        for c in text.chars() {
            e = derivative(&e, c).unwrap();
        }
        nullable(&e)
    }

    #[test]
    fn derivatives_match_as_the_regex_does() {
        let texts = ["", "a", "ab", "abc", "aab", "ba", "a1", "xyz", "é", "aaaa", "12", "a-b"];
        for pattern in ["a*b", "(ab|a)*c?", "[a-c]{1,3}", "x?y*z", "é|a[0-9]", "a(-b)?", ""] {
            let e = raw(pattern);
            let re = ::regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
            for t in texts {
                assert_eq!(matches(&e, t), re.is_match(t), "{pattern} on {t:?}");
            }
        }
    }

    /// A star's derivative by a character it reads is the star again, so a product that
    /// follows a format through a loop meets a finite number of derivatives.
    #[test]
    fn derivatives_through_a_loop_recur() {
        let e = raw("[a-z]*:[0-9]+");
        let once = derivative(&e, 'a').unwrap();
        assert_eq!(derivative(&once, 'b').unwrap(), once);
        assert!(is_never(&derivative(&e, '0').unwrap()));
    }
}
