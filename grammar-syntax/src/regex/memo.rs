//! Parsed patterns remembered while a JSON Schema is converted, so that a pattern the
//! schema uses many times (a format's regex in every branch of a `oneOf`, a property
//! name pattern checked again for every key) is parsed once.
//!
//! Parsing is a pure function of the pattern, so the memo changes speed, never answers.
//! It lives on the converting thread while a [`Remembering`] guard does (one conversion),
//! so a conversion's cost never depends on the ones before it; it is bounded: past
//! [`MAX_PATTERNS`] patterns or [`MAX_PATTERN_BYTES`] bytes of pattern text it starts
//! afresh. Patterns that fail to parse are not remembered.

use crate::diagnostic::Diagnostic;
use regex_syntax::hir::Hir;
use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::rc::Rc;

/// The most patterns remembered at once.
const MAX_PATTERNS: usize = 512;
/// The most bytes of pattern text remembered at once.
const MAX_PATTERN_BYTES: usize = 1 << 20;

/// The remembered parses: per way of parsing (search or whole match), by pattern.
#[derive(Default)]
struct Memo {
    /// The live [`Remembering`] guards; nothing is remembered without one.
    guards: usize,
    parsed: [HashMap<Box<str>, Rc<Hir>>; 2],
    bytes: usize,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::default();
}

/// While alive, patterns parsed on this thread are remembered; the last guard dropped
/// forgets them.
#[must_use]
pub struct Remembering(());

/// Patterns parsed on this thread are remembered until the guard is dropped.
pub fn remember() -> Remembering {
    MEMO.with_borrow_mut(|m| m.guards += 1);
    Remembering(())
}

impl Drop for Remembering {
    fn drop(&mut self) {
        MEMO.with_borrow_mut(|m| {
            m.guards -= 1;
            if m.guards == 0 {
                *m = Memo::default();
            }
        });
    }
}

/// The HIR of `pattern` parsed by `parse` for `whole_match`, parsed once while a
/// [`Remembering`] guard lives.
pub(super) fn parsed(
    pattern: &str,
    whole_match: bool,
    parse: impl FnOnce() -> Result<Hir, Diagnostic>,
) -> Result<Rc<Hir>, Diagnostic> {
    let way = usize::from(whole_match);
    let (remembering, found) =
        MEMO.with_borrow(|m| (m.guards > 0, m.parsed[way].get(pattern).cloned()));
    if let Some(hir) = found {
        return Ok(hir);
    }
    let hir = Rc::new(parse()?);
    if remembering {
        MEMO.with_borrow_mut(|m| {
            if m.parsed.iter().map(HashMap::len).sum::<usize>() >= MAX_PATTERNS
                || m.bytes + pattern.len() > MAX_PATTERN_BYTES
            {
                m.parsed = Default::default();
                m.bytes = 0;
            }
            m.bytes += pattern.len();
            m.parsed[way].insert(pattern.into(), Rc::clone(&hir));
        });
    }
    Ok(hir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `pattern` through the memo, counting the parses actually run.
    fn parse(pattern: &str, whole_match: bool, parses: &mut usize) -> Result<Rc<Hir>, Diagnostic> {
        parsed(pattern, whole_match, || {
            *parses += 1;
            regex_syntax::parse(pattern).map_err(|e| Diagnostic::global(e.to_string()))
        })
    }

    #[test]
    fn a_pattern_is_parsed_once_while_remembering_and_a_failure_is_not_kept() {
        let mut parses = 0;
        let guard = remember();
        let first = parse("[a-z]+", false, &mut parses).unwrap();
        let again = parse("[a-z]+", false, &mut parses).unwrap();
        assert!(Rc::ptr_eq(&first, &again));
        assert_eq!(parses, 1);
        // The other way of parsing is kept apart.
        let whole = parse("[a-z]+", true, &mut parses).unwrap();
        assert!(!Rc::ptr_eq(&first, &whole));
        assert!(parse("(", false, &mut parses).is_err());
        assert!(parse("(", false, &mut parses).is_err());
        assert_eq!(parses, 4);
        drop(guard);
        // Without a guard nothing is kept.
        let after = parse("[a-z]+", false, &mut parses).unwrap();
        assert!(!Rc::ptr_eq(&first, &after));
        parse("[a-z]+", false, &mut parses).unwrap();
        assert_eq!(parses, 6);
    }
}
