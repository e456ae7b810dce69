//! Dead-rule removal.
//!
//! Invariant established: every rule is reachable from the root; rule ids are renumbered
//! densely in order of first reach, the root first.

use grammask_syntax::ir::{Grammar, RuleId};

/// Removes the rules the root cannot reach.
///
/// One walk over the reachable rules both finds them and renumbers their references: a
/// rule's new id is given when a reference first reaches it (the rules are visited in
/// that order), so each reference is rewritten as it is read.
pub fn remove_dead_rules(grammar: Grammar) -> Grammar {
    let n = grammar.rules.len();
    let mut new_id: Vec<Option<RuleId>> = vec![None; n];
    let mut order = vec![grammar.root];
    new_id[grammar.root.index()] = Some(RuleId::new(0));
    let mut rules: Vec<_> = grammar.rules.into_iter().map(Some).collect();
    let mut renumbered = Vec::with_capacity(n);
    let mut i = 0;
    while i < order.len() {
        // Invariant: `order` lists each reachable rule once (a traversal of the call
        // graph), so each slot is taken once.
        let mut rule = rules[order[i].index()].take().expect("each rule is visited once");
        let mut renumber = |r: &mut RuleId| {
            let id = *new_id[r.index()].get_or_insert_with(|| {
                order.push(*r);
                RuleId::new(order.len() - 1)
            });
            *r = id;
        };
        rule.body.for_each_rule_ref_mut(&mut renumber);
        if let Some(la) = &mut rule.lookahead {
            la.for_each_rule_ref_mut(&mut renumber);
        }
        renumbered.push(rule);
        i += 1;
    }
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

    /// Rules are numbered in the order references first reach them (a body's, then its
    /// lookahead's, rule after rule), and every reference is rewritten.
    #[test]
    fn numbers_rules_in_order_of_first_reach() {
        use grammask_syntax::ir::Span;
        let mut b = GrammarBuilder::new();
        let names = ["root", "dead", "c", "b", "a", "ahead"];
        let ids: Vec<RuleId> = names.iter().map(|n| b.declare(n)).collect();
        let [root, dead, c, bb, a, ahead] = ids[..] else { unreachable!() };
        let seq = |rules: &[RuleId]| Expr::Seq(rules.iter().map(|&r| Expr::Rule(r)).collect());
        b.define_at(root, seq(&[a, bb]), Some(seq(&[ahead])), Span::default());
        b.define(dead, seq(&[c]));
        b.define(c, Expr::literal("c"));
        b.define(bb, Expr::choice(vec![seq(&[c]), seq(&[a])]));
        b.define(a, Expr::Repeat { expr: Box::new(seq(&[bb])), min: 0, max: None });
        b.define(ahead, Expr::literal("x"));
        let g = remove_dead_rules(b.finish(root).unwrap());
        let order: Vec<&str> = g.rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(order, ["root", "a", "b", "ahead", "c"]);
        let r = RuleId::new;
        assert_eq!(g.rules[0].body, seq(&[r(1), r(2)]));
        assert_eq!(g.rules[0].lookahead, Some(seq(&[r(3)])));
        assert_eq!(
            g.rules[1].body,
            Expr::Repeat { expr: Box::new(seq(&[r(2)])), min: 0, max: None }
        );
        assert_eq!(g.rules[2].body, Expr::choice(vec![seq(&[r(4)]), seq(&[r(1)])]));
        // Nothing dead, already in order: the same grammar.
        assert_eq!(remove_dead_rules(g.clone()), g);
    }
}
