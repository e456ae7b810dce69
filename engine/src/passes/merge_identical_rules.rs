//! Identical-rule merging: rules that read the same are one rule.
//!
//! Invariant established: no two rules have the same body and lookahead, references
//! compared through the merge (rules that differ only in which of two merged rules they
//! call are merged too), but copies of a recursive component. Every reference to a
//! merged rule names its representative, the first of its class met (the root for its
//! own class); the others are dropped.
//!
//! The converter and the passes write the same rule under many names: the chunks of every
//! long string with the same characters (`maxLength` in the thousands), a repetition
//! outlined from several members. As one rule, their automaton is built once, and the
//! mask cache classifies each of its positions once for every place that calls it: the
//! characters of a chunk are positions met once per string otherwise, each first visit
//! a walk over the vocabulary.
//!
//! Runs last, after every pass that writes rules. Rules are read once, callees first
//! (the call graph's components in order), each compared with the rules kept before it
//! under the merges made so far: a rule merges only when its body equals another's once
//! the rules it calls are merged, never on the strength of its own merge, so the
//! grammar's languages stay the same. Rules of one recursive component that are copies
//! of another component's rules stay apart (they would have to merge together).
//!
//! Each rule is walked once for its shape (a hash without its references, and the
//! references in order); a rule is walked again only to confirm a merge its shape and
//! references promise. The root is walked only when some rule may read the same (the
//! kinds at the top of its body are the root's).

use grammask_syntax::analysis::strongly_connected;
use grammask_syntax::ir::{Expr, Grammar, Rule, RuleId};
use rustc_hash::{FxHashMap, FxHasher};
use std::hash::{Hash, Hasher};

/// Merges the rules that read the same, and drops the copies.
pub fn merge_identical_rules(grammar: Grammar) -> Grammar {
    let n = grammar.rules.len();
    let root = grammar.root;
    // The root, most of a grammar once its callees are inlined, is read only when some
    // rule may read the same: one whose top is the root's.
    let root_top = top_hash(&grammar.rules[root.index()]);
    let mut may_equal_root = false;
    let mut shapes: Vec<Shape> = grammar
        .rules
        .iter()
        .enumerate()
        .map(|(r, rule)| {
            if r == root.index() {
                return Shape::UNREAD;
            }
            may_equal_root |= top_hash(rule) == root_top;
            Shape::of(rule)
        })
        .collect();
    if may_equal_root {
        shapes[root.index()] = Shape::of(&grammar.rules[root.index()]);
    }
    let graph: Vec<Vec<usize>> =
        shapes.iter().map(|s| s.refs.iter().map(|r| r.index()).collect()).collect();
    let mut canon: Vec<RuleId> = (0..n).map(RuleId::new).collect();
    let mut kept: FxHashMap<u64, Vec<RuleId>> = FxHashMap::default();
    let mut merged = false;
    for &r in strongly_connected(&graph).nodes() {
        let key = shapes[r].key(&canon);
        let bucket = kept.entry(key).or_default();
        let same = |&c: &RuleId| {
            let (a, b) = (&shapes[c.index()], &shapes[r]);
            a.hash == b.hash
                && a.refs.len() == b.refs.len()
                && a.refs.iter().zip(&b.refs).all(|(x, y)| canon[x.index()] == canon[y.index()])
                && same_rule(&grammar.rules[c.index()], &grammar.rules[r], &canon)
        };
        match bucket.iter().copied().find(same) {
            Some(c) => {
                canon[r] = c;
                merged = true;
            }
            None => bucket.push(RuleId::new(r)),
        }
    }
    if !merged {
        return grammar;
    }
    // The root represents its class, and comes first; the other representatives keep
    // their order.
    let class = canon[root.index()];
    for c in canon.iter_mut().filter(|c| **c == class) {
        *c = root;
    }
    let order = std::iter::once(root.index())
        .chain((0..n).filter(|&r| r != root.index() && canon[r].index() == r));
    let mut index = vec![usize::MAX; n];
    for (i, r) in order.enumerate() {
        index[r] = i;
    }
    let new_id: Vec<Option<RuleId>> =
        canon.iter().map(|c| Some(RuleId::new(index[c.index()]))).collect();
    let mut rules: Vec<Option<Rule>> =
        vec![None; index.iter().filter(|&&i| i != usize::MAX).count()];
    for (r, mut rule) in grammar.rules.into_iter().enumerate() {
        let Some(slot) = rules.get_mut(index[r]) else { continue };
        rule.body.renumber_rules_in_place(&new_id);
        if let Some(la) = &mut rule.lookahead {
            la.renumber_rules_in_place(&new_id);
        }
        *slot = Some(rule);
    }
    let rules = rules.into_iter().map(|r| r.expect("every representative is kept")).collect();
    Grammar { rules, root: RuleId::new(0) }
}

/// A rule read without its references: what it must share with another rule to read
/// the same, but the rules it calls.
struct Shape {
    /// A hash of the body and lookahead, each reference hashed as a reference only.
    hash: u64,
    /// The references of the body, then of the lookahead, in order.
    refs: Vec<RuleId>,
}

impl Shape {
    /// The shape of a rule left unread (no hash, no references): a rule meets it only on
    /// a hash of 0 and no references, and merges with it only when [`same_rule`] finds
    /// the two equal.
    const UNREAD: Shape = Shape { hash: 0, refs: Vec::new() };

    fn of(rule: &Rule) -> Shape {
        let mut h = FxHasher::default();
        let mut refs = Vec::new();
        shape_of(&rule.body, &mut h, &mut refs);
        match &rule.lookahead {
            Some(la) => {
                1u8.hash(&mut h);
                shape_of(la, &mut h, &mut refs);
            }
            None => 0u8.hash(&mut h),
        }
        Shape { hash: h.finish(), refs }
    }

    /// The shape with its references read through `canon`: equal for rules that may
    /// merge.
    fn key(&self, canon: &[RuleId]) -> u64 {
        let mut h = FxHasher::default();
        self.hash.hash(&mut h);
        self.refs.iter().for_each(|r| canon[r.index()].hash(&mut h));
        h.finish()
    }
}

fn shape_of(e: &Expr, h: &mut FxHasher, refs: &mut Vec<RuleId>) {
    std::mem::discriminant(e).hash(h);
    match e {
        Expr::Rule(r) => refs.push(*r),
        Expr::Seq(items) | Expr::Choice(items) => {
            items.len().hash(h);
            items.iter().for_each(|i| shape_of(i, h, refs));
        }
        Expr::Repeat { expr, min, max } => {
            min.hash(h);
            max.hash(h);
            shape_of(expr, h, refs);
        }
        Expr::Empty
        | Expr::Bytes(_)
        | Expr::Class(_)
        | Expr::ByteRanges(_)
        | Expr::Tokens(_)
        | Expr::Text(_) => e.hash(h),
    }
}

/// A hash of what a rule is at its top: the kinds of its body and of the body's items, and
/// whether it has a lookahead. Rules that read the same have the same.
fn top_hash(rule: &Rule) -> u64 {
    let mut h = FxHasher::default();
    rule.lookahead.is_some().hash(&mut h);
    std::mem::discriminant(&rule.body).hash(&mut h);
    if let Expr::Seq(items) | Expr::Choice(items) = &rule.body {
        items.len().hash(&mut h);
        items.iter().for_each(|i| std::mem::discriminant(i).hash(&mut h));
    }
    h.finish()
}

/// Whether `a` and `b` read the same, each reference read through `canon`.
fn same_rule(a: &Rule, b: &Rule, canon: &[RuleId]) -> bool {
    same_expr(&a.body, &b.body, canon)
        && match (&a.lookahead, &b.lookahead) {
            (Some(x), Some(y)) => same_expr(x, y, canon),
            (None, None) => true,
            _ => false,
        }
}

fn same_expr(a: &Expr, b: &Expr, canon: &[RuleId]) -> bool {
    match (a, b) {
        (Expr::Rule(x), Expr::Rule(y)) => canon[x.index()] == canon[y.index()],
        (Expr::Seq(x), Expr::Seq(y)) | (Expr::Choice(x), Expr::Choice(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_expr(x, y, canon))
        }
        (
            Expr::Repeat { expr: x, min: a0, max: a1 },
            Expr::Repeat { expr: y, min: b0, max: b1 },
        ) => a0 == b0 && a1 == b1 && same_expr(x, y, canon),
        (Expr::Rule(_) | Expr::Seq(_) | Expr::Choice(_) | Expr::Repeat { .. }, _) => false,
        (a, b) => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grammask_syntax::ir::GrammarBuilder;

    fn rule_names(g: &Grammar) -> Vec<&str> {
        g.rules.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn chunks_of_chunks_merge_and_distinct_rules_stay() {
        // Two strings' chunks, written twice: `a1`/`a2` equal, so `b1`/`b2` (calling
        // them) are equal once they are merged; `c` differs by one character.
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let a1 = b.declare("a1");
        let b1 = b.declare("b1");
        let a2 = b.declare("a2");
        let b2 = b.declare("b2");
        let c = b.declare("c");
        let chars =
            |s: &str| Expr::Repeat { expr: Box::new(Expr::literal(s)), min: 3, max: Some(3) };
        b.define(a1, chars("x"));
        b.define(a2, chars("x"));
        b.define(c, chars("y"));
        b.define(b1, Expr::Seq(vec![Expr::Rule(a1), Expr::Rule(a1)]));
        b.define(b2, Expr::Seq(vec![Expr::Rule(a2), Expr::Rule(a2)]));
        b.define(
            root,
            Expr::Seq(vec![Expr::Rule(b1), Expr::literal(","), Expr::Rule(b2), Expr::Rule(c)]),
        );
        let g = merge_identical_rules(b.finish(root).unwrap());
        assert_eq!(rule_names(&g), ["root", "a1", "b1", "c"]);
        let (a1, b1, c) = (RuleId::new(1), RuleId::new(2), RuleId::new(3));
        assert_eq!(
            g.rules[0].body,
            Expr::Seq(vec![Expr::Rule(b1), Expr::literal(","), Expr::Rule(b1), Expr::Rule(c)])
        );
        assert_eq!(g.rules[2].body, Expr::Seq(vec![Expr::Rule(a1); 2]));
    }

    #[test]
    fn the_root_represents_its_class_and_lookaheads_count() {
        // `r` reads as the root does: references to it name the root. `l` has a
        // lookahead, so it stays apart from `m`.
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let r = b.declare("r");
        let l = b.declare("l");
        let m = b.declare("m");
        let body = Expr::Choice(vec![
            Expr::literal("a"),
            Expr::Seq(vec![Expr::literal("("), Expr::Rule(r), Expr::Rule(l), Expr::Rule(m)]),
        ]);
        b.define(root, body.clone());
        b.define(r, body);
        b.define(l, Expr::literal("z"));
        b.define(m, Expr::literal("z"));
        let mut g = b.finish(root).unwrap();
        g.rules[l.index()].lookahead = Some(Expr::literal(")"));
        let g = merge_identical_rules(g);
        assert_eq!(rule_names(&g), ["root", "l", "m"]);
        assert_eq!(
            g.rules[0].body,
            Expr::Choice(vec![
                Expr::literal("a"),
                Expr::Seq(vec![
                    Expr::literal("("),
                    Expr::Rule(RuleId::new(0)),
                    Expr::Rule(RuleId::new(1)),
                    Expr::Rule(RuleId::new(2)),
                ]),
            ])
        );
    }
}
