//! Dead-rule removal.
//!
//! Invariant established: every rule is reachable from the root; rule ids are renumbered
//! densely in order of first reach, the root first.

use grammask_syntax::ir::{Grammar, RuleId};

/// Removes the rules the root cannot reach.
pub fn remove_dead_rules(grammar: Grammar) -> Grammar {
    let n = grammar.rules.len();
    let mut new_id: Vec<Option<RuleId>> = vec![None; n];
    let mut order = vec![grammar.root];
    new_id[grammar.root.index()] = Some(RuleId::new(0));
    let mut i = 0;
    while i < order.len() {
        let rule = &grammar.rules[order[i].index()];
        let mut refs = Vec::new();
        rule.body.for_each_rule_ref(&mut |r| refs.push(r));
        if let Some(la) = &rule.lookahead {
            la.for_each_rule_ref(&mut |r| refs.push(r));
        }
        for r in refs {
            if new_id[r.index()].is_none() {
                new_id[r.index()] = Some(RuleId::new(order.len()));
                order.push(r);
            }
        }
        i += 1;
    }
    if order.len() == n && order.iter().enumerate().all(|(i, r)| r.index() == i) {
        return grammar;
    }
    let mut rules: Vec<_> = grammar.rules.into_iter().map(Some).collect();
    let renumbered = order
        .iter()
        .map(|old| {
            // Invariant: `order` lists each reachable rule once (a traversal of the call
            // graph), so each slot is taken once.
            let mut rule = rules[old.index()].take().expect("each rule is visited once");
            // Every rule a reachable rule refers to is reachable: no reference is dropped.
            rule.body.renumber_rules_in_place(&new_id);
            if let Some(la) = &mut rule.lookahead {
                la.renumber_rules_in_place(&new_id);
            }
            rule
        })
        .collect();
    Grammar { rules: renumbered, root: RuleId::new(0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grammask_syntax::ir::{Expr, GrammarBuilder};

    #[test]
    fn drops_unreachable_and_puts_root_first() {
        let mut b = GrammarBuilder::new();
        let unused = b.declare("unused");
        b.define(unused, Expr::literal("u"));
        let a = b.declare("a");
        b.define(a, Expr::literal("a"));
        let root = b.declare("root");
        b.define(root, Expr::seq(vec![Expr::Rule(a), Expr::Rule(a)]));
        let g = remove_dead_rules(b.finish(root).unwrap());
        assert_eq!(g.rules.len(), 2);
        assert_eq!(g.rules[0].name, "root");
        assert_eq!(g.rules[0].body, Expr::Seq(vec![Expr::Rule(RuleId::new(1)); 2]));
    }
}
