//! A reference matcher: decides whether a grammar matches a whole text by Brzozowski
//! derivatives over the IR.
//!
//! It is slow (each character rebuilds an expression) and exists to check frontends
//! without the engine: property names against `patternProperties`, `enum` values against
//! `pattern`, and the converter's own tests. It expects grammars without left recursion,
//! as the engine does; a derivative that nests deeper than a fixed limit counts as a
//! mismatch rather than overflowing the stack.

use crate::ir::{Expr, Grammar};
use crate::regex::{is_never, never};
use std::collections::HashSet;

/// How deep a derivative may recurse through nested expressions and rule bodies.
const MAX_DEPTH: usize = 2_000;

/// Matches texts against one grammar.
#[derive(Debug)]
pub struct ReferenceMatcher<'g> {
    grammar: &'g Grammar,
    nullable: Vec<bool>,
}

impl<'g> ReferenceMatcher<'g> {
    /// A matcher for `grammar` (computes which rules match the empty string).
    pub fn new(grammar: &'g Grammar) -> Self {
        let mut nullable = vec![false; grammar.rules.len()];
        loop {
            let mut changed = false;
            for (i, rule) in grammar.rules.iter().enumerate() {
                if !nullable[i] && nullable_with(&rule.body, &nullable) {
                    nullable[i] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        ReferenceMatcher { grammar, nullable }
    }

    /// Whether the root rule matches the whole of `text`.
    pub fn matches(&self, text: &str) -> bool {
        self.matches_expr(&Expr::Rule(self.grammar.root), text)
    }

    /// Whether `expr` (whose rule references are to this grammar) matches all of `text`.
    pub fn matches_expr(&self, expr: &Expr, text: &str) -> bool {
        let mut current = expr.clone();
        for c in text.chars() {
            current = self.derive(&current, c, 0);
            if is_never(&current) {
                return false;
            }
        }
        nullable_with(&current, &self.nullable)
    }

    /// What `expr` matches after `text`: its derivative by `text` (references to the
    /// grammar's rules stay references, past the first characters).
    pub fn derivative(&self, expr: &Expr, text: &str) -> Expr {
        let mut current = expr.clone();
        for c in text.chars() {
            current = self.derive(&current, c, 0);
            if is_never(&current) {
                break;
            }
        }
        current
    }

    fn derive(&self, e: &Expr, c: char, depth: usize) -> Expr {
        if depth > MAX_DEPTH {
            return never();
        }
        match e {
            // Free text is not among what frontends check here.
            Expr::Empty | Expr::Tokens(_) | Expr::Text(_) => never(),
            Expr::Bytes(bytes) => {
                let mut buf = [0u8; 4];
                let enc = c.encode_utf8(&mut buf).as_bytes();
                if bytes.starts_with(enc) {
                    let rest = &bytes[enc.len()..];
                    if rest.is_empty() {
                        Expr::Empty
                    } else {
                        Expr::Bytes(rest.to_vec())
                    }
                } else {
                    never()
                }
            }
            Expr::Class(class) => {
                if class.contains(c) {
                    Expr::Empty
                } else {
                    never()
                }
            }
            Expr::ByteRanges(ranges) => {
                let b = c as u32;
                if b < 0x80 && ranges.iter().any(|&(lo, hi)| (lo as u32) <= b && b <= hi as u32) {
                    Expr::Empty
                } else {
                    never()
                }
            }
            Expr::Seq(items) => {
                let Some((first, rest)) = items.split_first() else {
                    return never();
                };
                let rest_expr = Expr::seq(rest.to_vec());
                let mut alts = vec![seq2(self.derive(first, c, depth + 1), rest_expr.clone())];
                if nullable_with(first, &self.nullable) {
                    alts.push(self.derive(&rest_expr, c, depth + 1));
                }
                choice(alts)
            }
            Expr::Choice(alts) => {
                choice(alts.iter().map(|a| self.derive(a, c, depth + 1)).collect())
            }
            Expr::Rule(id) => match self.grammar.rules.get(id.index()) {
                Some(rule) => self.derive(&rule.body, c, depth + 1),
                None => never(),
            },
            Expr::Repeat { expr, min, max } => {
                if *max == Some(0) {
                    return never();
                }
                let rest = Expr::Repeat {
                    expr: expr.clone(),
                    min: min.saturating_sub(1),
                    max: max.map(|m| m - 1),
                };
                let rest = if *max == Some(1)
                    || rest == (Expr::Repeat { expr: expr.clone(), min: 0, max: Some(0) })
                {
                    Expr::Empty
                } else {
                    rest
                };
                seq2(self.derive(expr, c, depth + 1), rest)
            }
        }
    }
}

/// Whether `e` matches the empty string, given which rules do.
fn nullable_with(e: &Expr, rules: &[bool]) -> bool {
    match e {
        Expr::Empty => true,
        Expr::Bytes(b) => b.is_empty(),
        Expr::Class(_) | Expr::ByteRanges(_) | Expr::Tokens(_) => false,
        Expr::Text(text) => text.until.is_none(),
        Expr::Seq(items) => items.iter().all(|i| nullable_with(i, rules)),
        Expr::Choice(alts) => alts.iter().any(|a| nullable_with(a, rules)),
        Expr::Rule(id) => rules.get(id.index()).copied().unwrap_or(false),
        Expr::Repeat { expr, min, .. } => *min == 0 || nullable_with(expr, rules),
    }
}

fn seq2(a: Expr, b: Expr) -> Expr {
    if is_never(&a) || is_never(&b) {
        return never();
    }
    match (a, b) {
        (Expr::Empty, b) => b,
        (a, Expr::Empty) => a,
        (Expr::Seq(mut items), b) => {
            items.push(b);
            Expr::Seq(items)
        }
        (a, b) => Expr::Seq(vec![a, b]),
    }
}

fn choice(alts: Vec<Expr>) -> Expr {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut stack: Vec<Expr> = alts.into_iter().rev().collect();
    while let Some(a) = stack.pop() {
        match a {
            Expr::Choice(inner) => stack.extend(inner.into_iter().rev()),
            a if is_never(&a) => {}
            a => {
                if seen.insert(a.clone()) {
                    out.push(a);
                }
            }
        }
    }
    if out.is_empty() {
        never()
    } else {
        Expr::choice(out)
    }
}
