//! Sequence and choice flattening, byte-string fusion.
//!
//! Invariant established: no sequence directly holds a sequence, no choice directly holds a
//! choice, adjacent byte strings in a sequence are one [`Expr::Bytes`], and empty items
//! are dropped from sequences. Fewer, longer literals mean fewer NFA states.

use grammask_syntax::ir::{Expr, Grammar};

/// Flattens sequences and choices and fuses adjacent byte strings.
pub fn fuse_sequences(mut grammar: Grammar) -> Grammar {
    for rule in &mut grammar.rules {
        fuse_in_place(&mut rule.body);
    }
    grammar
}

/// [`fuse_in_place`] on an owned expression.
#[cfg(test)]
fn fuse(mut expr: Expr) -> Expr {
    fuse_in_place(&mut expr);
    expr
}

/// Fuses `expr` in place: a node is rebuilt only when it has something to flatten, drop
/// or fuse (most sequences and choices once their items are done), so a walk over an
/// already fused tree allocates nothing.
fn fuse_in_place(expr: &mut Expr) {
    match expr {
        Expr::Seq(items) | Expr::Choice(items) => items.iter_mut().for_each(fuse_in_place),
        Expr::Repeat { expr, .. } => fuse_in_place(expr),
        _ => {}
    }
    fuse_top(expr);
}

/// Flattens and fuses the items of `expr` itself, whose items are fused already (rule
/// inlining calls it where it put a body into a sequence or a choice).
pub(crate) fn fuse_top(expr: &mut Expr) {
    match expr {
        Expr::Seq(items) => {
            let unchanged = !items.iter().any(|i| matches!(i, Expr::Seq(_) | Expr::Empty))
                && !items.windows(2).any(|w| matches!(w, [Expr::Bytes(_), Expr::Bytes(_)]));
            if unchanged && items.len() > 1 {
                return;
            }
            let nested = |i: &Expr| if let Expr::Seq(inner) = i { Some(inner.len()) } else { None };
            let mut out: Vec<Expr> = Vec::with_capacity(opened_len(items, nested));
            let push = |out: &mut Vec<Expr>, part: Expr| match (out.last_mut(), part) {
                (Some(Expr::Bytes(prev)), Expr::Bytes(next)) => prev.extend(next),
                (_, part) => out.push(part),
            };
            for item in std::mem::take(items) {
                match item {
                    Expr::Seq(inner) => inner.into_iter().for_each(|part| push(&mut out, part)),
                    Expr::Empty => {}
                    other => push(&mut out, other),
                }
            }
            *expr = Expr::seq(out);
        }
        Expr::Choice(items) => {
            if !items.iter().any(|i| matches!(i, Expr::Choice(_))) && items.len() > 1 {
                return;
            }
            let nested =
                |i: &Expr| if let Expr::Choice(inner) = i { Some(inner.len()) } else { None };
            let mut out = Vec::with_capacity(opened_len(items, nested));
            for item in std::mem::take(items) {
                match item {
                    Expr::Choice(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            // (An empty choice, which matches nothing, stays as it is.)
            *expr = if out.is_empty() { Expr::Choice(out) } else { Expr::choice(out) };
        }
        _ => {}
    }
}

/// How many items `items` come to once the nested nodes of their parent's kind are
/// opened, `nested` giving the length of such a node (at most that many once fused).
fn opened_len(items: &[Expr], nested: impl Fn(&Expr) -> Option<usize>) -> usize {
    items.iter().map(|i| nested(i).unwrap_or(1)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuses_literals_across_nested_sequences() {
        let e = Expr::Seq(vec![
            Expr::literal("a"),
            Expr::Seq(vec![Expr::literal("b"), Expr::Empty, Expr::literal("c")]),
        ]);
        assert_eq!(fuse(e), Expr::literal("abc"));
    }
}
