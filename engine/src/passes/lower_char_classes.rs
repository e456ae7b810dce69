//! Byte-level expansion of character classes.
//!
//! Invariant established: no [`Expr::Class`] remains; each became a choice of UTF-8 byte
//! sequences ([`Expr::ByteRanges`] in a row), computed by regex-syntax's `Utf8Sequences`.
//! Automata then read bytes, and a token that ends in the middle of a multi-byte
//! character leaves the matcher in the middle of that character's sequence.

use grammask_syntax::ir::{CharClass, Expr, Grammar};
use regex_syntax::utf8::Utf8Sequences;
use std::collections::HashMap;

/// Replaces every character class by its UTF-8 byte automaton.
pub fn lower_char_classes(mut grammar: Grammar) -> Grammar {
    // Inlined copies repeat the same classes (a JSON string's characters in every string):
    // each distinct class is lowered once.
    let mut lowered = HashMap::new();
    for rule in &mut grammar.rules {
        lower(&mut rule.body, &mut lowered);
        if let Some(la) = &mut rule.lookahead {
            lower(la, &mut lowered);
        }
    }
    grammar
}

fn lower(expr: &mut Expr, lowered: &mut HashMap<CharClass, Expr>) {
    match expr {
        Expr::Class(class) => {
            *expr = match lowered.get(class) {
                Some(bytes) => bytes.clone(),
                None => {
                    let bytes = class_to_bytes(class);
                    lowered.insert(class.clone(), bytes.clone());
                    bytes
                }
            }
        }
        Expr::Seq(items) | Expr::Choice(items) => items.iter_mut().for_each(|e| lower(e, lowered)),
        Expr::Repeat { expr, .. } => lower(expr, lowered),
        _ => {}
    }
}

/// The UTF-8 byte automaton of a class, as an expression.
pub(crate) fn class_to_bytes(class: &CharClass) -> Expr {
    let mut alternatives: Vec<Expr> = Vec::new();
    // Single-byte sequences are gathered into one range list, the common case for ASCII.
    let mut ascii: Vec<(u8, u8)> = Vec::new();
    for (lo, hi) in class.positive_ranges() {
        for seq in Utf8Sequences::new(lo, hi) {
            let ranges = seq.as_slice();
            if ranges.len() == 1 {
                ascii.push((ranges[0].start, ranges[0].end));
            } else {
                alternatives.push(Expr::Seq(
                    ranges.iter().map(|r| Expr::ByteRanges(vec![(r.start, r.end)])).collect(),
                ));
            }
        }
    }
    if !ascii.is_empty() {
        alternatives.insert(0, Expr::ByteRanges(ascii));
    }
    match alternatives.len() {
        // An empty class matches nothing: a byte range list with no range.
        0 => Expr::ByteRanges(Vec::new()),
        1 => alternatives.pop().unwrap_or(Expr::ByteRanges(Vec::new())),
        _ => Expr::Choice(alternatives),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_class_is_one_range_list() {
        let class = CharClass::new(false, vec![('a', 'z'), ('0', '9')]);
        assert_eq!(class_to_bytes(&class), Expr::ByteRanges(vec![(b'0', b'9'), (b'a', b'z')]));
    }

    #[test]
    fn any_char_covers_all_utf8_lengths() {
        match class_to_bytes(&CharClass::any()) {
            Expr::Choice(alts) => assert!(alts.len() >= 4),
            other => panic!("unexpected {other:?}"),
        }
    }
}
