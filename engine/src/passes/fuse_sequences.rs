//! Sequence and choice flattening, byte-string fusion.
//!
//! Invariant established: no sequence directly holds a sequence, no choice directly holds a
//! choice, adjacent byte strings in a sequence are one [`Expr::Bytes`], and empty items
//! are dropped from sequences. Fewer, longer literals mean fewer NFA states.

use grammask_syntax::ir::{Expr, Grammar};

/// Flattens sequences and choices and fuses adjacent byte strings.
pub fn fuse_sequences(mut grammar: Grammar) -> Grammar {
    for rule in &mut grammar.rules {
        let body = std::mem::replace(&mut rule.body, Expr::Empty);
        rule.body = fuse(body);
    }
    grammar
}

fn fuse(expr: Expr) -> Expr {
    match expr {
        Expr::Seq(items) => {
            // In place (the vector's allocation is reused) when nothing is to flatten,
            // drop or fuse, as in most sequences once their items are done.
            let items: Vec<Expr> = items.into_iter().map(fuse).collect();
            let unchanged = !items.iter().any(|i| matches!(i, Expr::Seq(_) | Expr::Empty))
                && !items.windows(2).any(|w| matches!(w, [Expr::Bytes(_), Expr::Bytes(_)]));
            if unchanged {
                return Expr::seq(items);
            }
            let mut out: Vec<Expr> = Vec::with_capacity(items.len());
            let push = |out: &mut Vec<Expr>, part: Expr| match (out.last_mut(), part) {
                (Some(Expr::Bytes(prev)), Expr::Bytes(next)) => prev.extend(next),
                (_, part) => out.push(part),
            };
            for item in items {
                match item {
                    Expr::Seq(inner) => inner.into_iter().for_each(|part| push(&mut out, part)),
                    Expr::Empty => {}
                    other => push(&mut out, other),
                }
            }
            Expr::seq(out)
        }
        Expr::Choice(items) => {
            let items: Vec<Expr> = items.into_iter().map(fuse).collect();
            if !items.iter().any(|i| matches!(i, Expr::Choice(_))) {
                return Expr::choice(items);
            }
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Expr::Choice(inner) => out.extend(inner),
                    other => out.push(other),
                }
            }
            Expr::choice(out)
        }
        Expr::Repeat { expr, min, max } => Expr::Repeat { expr: Box::new(fuse(*expr)), min, max },
        other => other,
    }
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
