//! Byte-level expansion of character classes.
//!
//! Each class becomes a choice of UTF-8 byte sequences ([`Expr::ByteRanges`] in a row),
//! computed by regex-syntax's `Utf8Sequences`. Automata then read bytes, and a token that
//! ends in the middle of a multi-byte character leaves the matcher in the middle of that
//! character's sequence.
//!
//! The compiler's pipeline keeps classes as they are and lowers them where automata are
//! built ([`ClassTable`]: each distinct class once per grammar, each occurrence a
//! reference to it), so the passes copy and walk one node per class where its lowered
//! form has about 35 (a JSON string's character); [`lowered_size`] tells the passes that
//! measure automaton size what a class will cost. [`lower_char_classes`] is the same
//! expansion as a pass, for a byte-level IR.

use crate::automaton::SetHasher;
use grammask_syntax::ir::{CharClass, Expr, Grammar};
use regex_syntax::utf8::Utf8Sequences;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Invariant established: no [`Expr::Class`] remains; each became its UTF-8 byte
/// automaton.
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

/// The lowered form of every distinct class of a grammar, for automaton construction.
/// Keyed with the automata's fast hasher: a class's ranges are few, and every
/// occurrence is looked up.
#[derive(Debug, Default)]
pub(crate) struct ClassTable {
    lowered: HashMap<CharClass, Expr, BuildHasherDefault<SetHasher>>,
}

impl ClassTable {
    /// Lowers the classes of every rule body of `grammar`.
    pub(crate) fn of(grammar: &Grammar) -> ClassTable {
        let mut table = ClassTable::default();
        for rule in &grammar.rules {
            table.add(&rule.body);
        }
        table
    }

    fn add(&mut self, expr: &Expr) {
        match expr {
            Expr::Class(class) if !self.lowered.contains_key(class) => {
                self.lowered.insert(class.clone(), class_to_bytes(class));
            }
            Expr::Seq(items) | Expr::Choice(items) => items.iter().for_each(|e| self.add(e)),
            Expr::Repeat { expr, .. } => self.add(expr),
            _ => {}
        }
    }

    /// The lowered form of `class` (one of the grammar's).
    pub(crate) fn get(&self, class: &CharClass) -> Option<&Expr> {
        self.lowered.get(class)
    }
}

/// The size ([`Expr::size`]) of [`class_to_bytes`]`(class)`, without building it.
pub(crate) fn lowered_size(class: &CharClass) -> usize {
    let (mut ascii, mut alternatives, mut nodes) = (false, 0, 0);
    for (lo, hi) in class.positive_ranges() {
        for seq in Utf8Sequences::new(lo, hi) {
            match seq.as_slice().len() {
                1 => ascii = true,
                n => {
                    alternatives += 1;
                    nodes += 1 + n;
                }
            }
        }
    }
    if ascii {
        alternatives += 1;
        nodes += 1;
    }
    match alternatives {
        0 | 1 => nodes.max(1),
        _ => nodes + 1,
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
    fn lowered_size_is_the_size_of_the_lowered_class() {
        let classes = [
            CharClass::new(false, vec![('a', 'z'), ('0', '9')]),
            CharClass::new(true, vec![('"', '"'), ('\\', '\\'), ('\0', '\x1f')]),
            CharClass::new(false, vec![('\u{e9}', '\u{e9}')]),
            CharClass::new(false, vec![('\u{100}', '\u{17f}'), ('\u{1f600}', '\u{1f64f}')]),
            CharClass::new(false, vec![]),
            CharClass::any(),
        ];
        for class in classes {
            assert_eq!(lowered_size(&class), class_to_bytes(&class).size(), "{class:?}");
        }
    }

    #[test]
    fn any_char_covers_all_utf8_lengths() {
        match class_to_bytes(&CharClass::any()) {
            Expr::Choice(alts) => assert!(alts.len() >= 4),
            other => panic!("unexpected {other:?}"),
        }
    }
}
