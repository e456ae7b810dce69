//! Left-recursion elimination.
//!
//! Invariant established: no rule calls itself before reading input through leading
//! positions that the pass can see (a rule's alternatives, with leading choices
//! distributed over the rest of their sequence). A top-down matcher would otherwise push
//! frames forever. Grammars people write (`expr ::= expr "+" term | term`) are rewritten
//! to the same language:
//!
//! - direct: `A ::= A a1 | ... | b1 | ...` becomes `A ::= (b1 | ...) (a1 | ...)*`;
//! - indirect: the rules on left-recursive cycles are ordered; each earlier rule's
//!   alternatives are substituted at a later rule's leading positions, which makes the
//!   recursion direct (Paull's method, on those rules only).
//!
//! Left recursion hidden behind a prefix that may be empty (`A ::= ws A "x"` with `ws`
//! nullable) is left as is; the compiler refuses it with the cycle named.

use crate::deadline::Deadline;
use crate::error::CompileError;
use grammask_syntax::analysis::left_recursion_cycles;
use grammask_syntax::ir::{Expr, Grammar, RuleId};

/// Alternatives produced by distributing leading choices are capped, so a pathological
/// grammar cannot blow up; past the cap the rule is left as is (and refused).
const MAX_ALTERNATIVES: usize = 4_096;

/// Rewrites left-recursive rules into equivalent rules without left recursion. Paull's
/// method is quadratic in the rules on cycles; `deadline` is checked for each rule.
pub fn eliminate_left_recursion(
    grammar: Grammar,
    deadline: &Deadline,
) -> Result<Grammar, CompileError> {
    Ok(eliminate_noting(grammar, deadline)?.0)
}

/// [`eliminate_left_recursion`], and whether the grammar held any left recursion (when it
/// held none, it is returned as it was).
pub(crate) fn eliminate_noting(
    mut grammar: Grammar,
    deadline: &Deadline,
) -> Result<(Grammar, bool), CompileError> {
    let mut met = false;
    // Paull's method over the rules on left-recursive cycles, in id order: substitute
    // each earlier rule at the leading positions of a later one, then remove the later
    // one's direct recursion. A few passes cover groups found only after rewriting; what
    // remains (hidden recursion) is refused by the compiler.
    for _ in 0..3 {
        let cycles = left_recursion_cycles(&grammar);
        if cycles.is_empty() {
            break;
        }
        met = true;
        let mut order: Vec<RuleId> = cycles.iter().flatten().copied().collect();
        order.sort_unstable();
        order.dedup();
        for i in 0..order.len() {
            deadline.check("left-recursion elimination")?;
            for j in 0..i {
                substitute_leading(&mut grammar, order[i], order[j]);
            }
            eliminate_direct(&mut grammar, order[i]);
        }
    }
    Ok((grammar, met))
}

/// The alternatives of `expr` with leading choices distributed over the rest of their
/// sequence; `None` past [`MAX_ALTERNATIVES`].
fn alternatives(expr: &Expr) -> Option<Vec<Expr>> {
    let out = match expr {
        Expr::Choice(alts) => {
            let mut out = Vec::new();
            for alt in alts {
                out.extend(alternatives(alt)?);
                if out.len() > MAX_ALTERNATIVES {
                    return None;
                }
            }
            out
        }
        Expr::Seq(items) if !items.is_empty() => {
            let heads = alternatives(&items[0])?;
            if heads.len() == 1 {
                return Some(vec![expr.clone()]);
            }
            heads
                .into_iter()
                .map(|head| {
                    let mut seq = vec![head];
                    seq.extend(items[1..].iter().cloned());
                    Expr::Seq(seq)
                })
                .collect()
        }
        other => vec![other.clone()],
    };
    (out.len() <= MAX_ALTERNATIVES).then_some(out)
}

/// Splits an alternative into its leading rule reference and the rest, when it has one.
fn leading_rule(alt: &Expr) -> Option<(RuleId, Expr)> {
    match alt {
        Expr::Rule(r) => Some((*r, Expr::Empty)),
        Expr::Seq(items) => match items.first() {
            Some(Expr::Rule(r)) => Some((*r, Expr::seq(items[1..].to_vec()))),
            Some(first @ Expr::Seq(_)) => {
                let (r, head_rest) = leading_rule(first)?;
                let mut rest = vec![head_rest];
                rest.extend(items[1..].iter().cloned());
                Some((r, Expr::seq(rest)))
            }
            _ => None,
        },
        _ => None,
    }
}

/// `A ::= A a | b` to `A ::= b a*`; false when `A` has no visible direct recursion or no
/// base alternative.
fn eliminate_direct(grammar: &mut Grammar, rule: RuleId) -> bool {
    let Some(alts) = alternatives(&grammar.rule(rule).body) else { return false };
    let mut tails = Vec::new();
    let mut bases = Vec::new();
    let mut recursive = false;
    for alt in alts {
        match leading_rule(&alt) {
            Some((r, tail)) if r == rule => {
                recursive = true;
                // `A ::= A` adds nothing to the language.
                if tail != Expr::Empty {
                    tails.push(tail);
                }
            }
            _ => bases.push(alt),
        }
    }
    if !recursive || bases.is_empty() {
        return false;
    }
    let body = if tails.is_empty() {
        Expr::choice(bases)
    } else {
        Expr::Seq(vec![Expr::choice(bases), Expr::star(Expr::choice(tails))])
    };
    grammar.rules[rule.index()].body = body;
    true
}

/// Replaces the leading references to `callee` in `rule`'s alternatives by `callee`'s
/// alternatives.
fn substitute_leading(grammar: &mut Grammar, rule: RuleId, callee: RuleId) -> bool {
    let Some(alts) = alternatives(&grammar.rule(rule).body) else { return false };
    // Most pairs of rules on a cycle do not lead into each other: the callee's
    // alternatives are only computed when some alternative starts with it.
    if !alts.iter().any(|alt| leading_rule(alt).is_some_and(|(r, _)| r == callee)) {
        return false;
    }
    let Some(callee_alts) = alternatives(&grammar.rule(callee).body) else { return false };
    let mut out = Vec::new();
    let mut changed = false;
    for alt in alts {
        match leading_rule(&alt) {
            Some((r, rest)) if r == callee => {
                changed = true;
                for head in &callee_alts {
                    // Flat sequences: substituted chains stay one level deep, so later
                    // substitutions do not walk and copy ever deeper nestings.
                    let mut items = Vec::new();
                    for part in [head.clone(), rest.clone()] {
                        match part {
                            Expr::Seq(inner) => items.extend(inner),
                            Expr::Empty => {}
                            other => items.push(other),
                        }
                    }
                    out.push(Expr::seq(items));
                }
            }
            _ => out.push(alt),
        }
        if out.len() > MAX_ALTERNATIVES {
            return false;
        }
    }
    if changed {
        grammar.rules[rule.index()].body = Expr::choice(out);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use grammask_syntax::parse_gbnf;

    fn cycles_after(src: &str) -> usize {
        let g = parse_gbnf(src).unwrap().grammar;
        left_recursion_cycles(&eliminate_left_recursion(g, &Deadline::unlimited()).unwrap()).len()
    }

    #[test]
    fn removes_direct_and_indirect_left_recursion() {
        assert_eq!(
            cycles_after("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]+"),
            0
        );
        assert_eq!(
            cycles_after("root ::= expr\nexpr ::= term \"+\" | \"1\"\nterm ::= expr \"*\" | \"2\""),
            0
        );
        assert_eq!(cycles_after("root ::= (root \"x\" | \"y\") | root \"z\""), 0);
    }

    #[test]
    fn hidden_left_recursion_stays() {
        assert_eq!(cycles_after("root ::= ws root \"x\" | \"y\"\nws ::= \" \"*"), 1);
    }
}
