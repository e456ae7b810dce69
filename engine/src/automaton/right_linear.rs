//! Right-linear rules: rules that refer to others only where they end, reaching recursion
//! that does the same, each read as one automaton where the rest of the grammar enters
//! them.
//!
//! A regular language written as rules, one rule per state (`s0 ::= "" | [a-z] s1 | "A"
//! s2`, as complements of patterns and hand-written right recursion are), needs no stack:
//! a reference that ends its rule is a jump. Built as calls, every character of such a
//! text would push a frame, and the token mask cache, which reads one callee at a time,
//! would leave nearly every token to the stacks at each step inside it.
//!
//! The *linear* rules are the members of right-linear groups (strongly connected
//! components of the reference graph, recursive, whose every reference between members
//! is in tail position: the last item of a sequence, an alternative, never inside a
//! repetition), the leaves (rules that refer to none) that every reference reaches in
//! tail position (a large one only at the end of a chain, see [`RightLinear::with_calls`]), and
//! the rules whose every reference is in tail position to a linear rule (the states
//! before such a loop, or the chain of states a pattern with a length bound is written
//! as, ending in leaves). References to the `\u` tails of escapes
//! ([`crate::passes::is_escape_tail`]) are calls wherever they stand and count for none
//! of this. The automaton of a linear rule that a rule outside them refers
//! to (an *entry*, or the root) reads every linear rule it reaches through tail
//! references in place, so it calls none of them. The other linear rules get no
//! automaton of their own (the compiler builds only what some automaton calls).

use crate::passes::CallGraph;
use grammask_syntax::ir::{Grammar, RuleId};

/// The linear rules of a grammar and their entries.
#[derive(Clone, Debug, Default)]
pub(crate) struct RightLinear {
    /// Per rule: whether it is linear.
    linear: Vec<bool>,
    /// Per rule: whether it is linear and something else refers to it (or it is the root).
    entry: Vec<bool>,
}

impl RightLinear {
    /// [`RightLinear::with_calls`] of the grammar's call graph.
    #[cfg(test)]
    pub(crate) fn of(grammar: &Grammar, max_leaf_weight: usize) -> RightLinear {
        RightLinear::with_calls(grammar, &CallGraph::of(grammar), max_leaf_weight)
    }

    /// The linear rules of `grammar` (after the passes), whose call graph is `calls`. A
    /// leaf whose body weighs more than `max_leaf_weight`
    /// ([`grammask_syntax::ir::Expr::weight`]) is linear only where no entry refers to it
    /// directly (it ends a chain of states), so that a large rule ending an alternative
    /// stays an automaton of its own, built only when a generation enters it.
    pub(crate) fn with_calls(
        grammar: &Grammar,
        calls: &CallGraph,
        max_leaf_weight: usize,
    ) -> RightLinear {
        let n = grammar.rules.len();
        let adj = &calls.callees;
        // The leaves (rules calling nothing but `\u` tails) every reference reaches in
        // tail position.
        let mut leaves: Vec<bool> = (0..n)
            .map(|r| calls.only_at_ends[r] && calls.callees[r].iter().all(|&c| calls.tails[c]))
            .collect();
        loop {
            let solved = Self::solve(grammar, calls, &leaves);
            let mut dropped = false;
            for (callees, _) in adj.iter().zip(&solved.entry).filter(|&(_, &e)| e) {
                for &callee in callees {
                    if leaves[callee] && grammar.rules[callee].body.weight() > max_leaf_weight {
                        leaves[callee] = false;
                        dropped = true;
                    }
                }
            }
            if !dropped {
                return solved;
            }
        }
    }

    /// The linear rules and entries when the linear leaves are `leaves`; `calls` the
    /// grammar's call graph.
    fn solve(grammar: &Grammar, calls: &CallGraph, leaves: &[bool]) -> RightLinear {
        let (components, adj) = (&calls.components, &calls.callees);
        let n = grammar.rules.len();
        let mut linear = vec![false; n];
        // Callees' components come first, so a rule's callees are decided before it.
        for component in components {
            if component.iter().any(|&r| grammar.rules[r].lookahead.is_some()) {
                continue;
            }
            let recursive = component.len() > 1 || adj[component[0]].contains(&component[0]);
            let member = |r: RuleId| component.contains(&r.index());
            // Every reference but those of `\u` tails (a call of its own from the state
            // after a backslash) ends the rule, or leaves a recursive component.
            let qualifies = component.iter().all(|&r| {
                let refers = adj[r].iter().any(|&c| !calls.tails[c]);
                let ok = if calls.ends_only[r] {
                    recursive || adj[r].iter().all(|&c| calls.tails[c] || linear[c])
                } else if recursive {
                    let mut ok = true;
                    grammar.rules[r].body.for_each_rule_ref_at_end(true, &mut |callee, tail| {
                        ok &= calls.tails[callee.index()] || tail || !member(callee);
                    });
                    ok
                } else {
                    false
                };
                ok && (refers || leaves[r])
            });
            if qualifies {
                for &r in component {
                    linear[r] = true;
                }
            }
        }
        let mut entry = vec![false; n];
        entry[grammar.root.index()] = linear[grammar.root.index()];
        for (callees, _) in adj.iter().zip(&linear).filter(|&(_, &l)| !l) {
            for &callee in callees {
                entry[callee] |= linear[callee];
            }
        }
        RightLinear { linear, entry }
    }

    /// Whether the automaton of `rule` reads the linear rules it reaches in place.
    pub(crate) fn is_entry(&self, rule: RuleId) -> bool {
        self.entry.get(rule.index()).copied().unwrap_or(false)
    }

    /// Whether `rule` is linear.
    pub(crate) fn is_linear(&self, rule: RuleId) -> bool {
        self.linear.get(rule.index()).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grammask_syntax::ir::{Expr, GrammarBuilder};

    /// A rule's body, given a way to refer to the rules by name.
    type Body = fn(&dyn Fn(&str) -> Expr) -> Expr;

    fn grammar(rules: &[(&str, Body)]) -> Grammar {
        let mut b = GrammarBuilder::new();
        let ids: Vec<RuleId> = rules.iter().map(|(name, _)| b.declare(name)).collect();
        let by_name = |name: &str| {
            let i = rules.iter().position(|(n, _)| *n == name).expect("a declared rule");
            Expr::Rule(ids[i])
        };
        for (i, (_, body)) in rules.iter().enumerate() {
            b.define(ids[i], body(&by_name));
        }
        b.finish(ids[0]).expect("a valid grammar")
    }

    #[test]
    fn rules_referring_to_one_another_at_their_ends_form_a_group_entered_from_outside() {
        let g = grammar(&[
            ("root", |r| Expr::seq(vec![Expr::literal("\""), r("a"), Expr::literal("\"")])),
            ("a", |r| {
                Expr::choice(vec![
                    Expr::Empty,
                    Expr::seq(vec![Expr::literal("x"), r("b")]),
                    Expr::seq(vec![Expr::literal("y"), r("a")]),
                ])
            }),
            ("b", |r| {
                Expr::choice(vec![Expr::literal("z"), Expr::seq(vec![Expr::literal("x"), r("a")])])
            }),
        ]);
        let linear = RightLinear::of(&g, 1000);
        let id = |name: &str| RuleId::new(g.rules.iter().position(|r| r.name == name).unwrap());
        assert!(!linear.is_linear(id("root")));
        assert!(linear.is_linear(id("a")) && linear.is_linear(id("b")));
        // `a` is entered from `root`; `b` only from inside the group.
        assert!(linear.is_entry(id("a")));
        assert!(!linear.is_entry(id("b")));
    }

    #[test]
    fn rules_leading_into_a_group_at_their_ends_are_linear() {
        let g = grammar(&[
            ("root", |r| Expr::seq(vec![r("pre"), Expr::literal(":"), r("inner")])),
            ("pre", |r| Expr::choice(vec![Expr::seq(vec![Expr::literal("p"), r("a")]), r("a")])),
            ("a", |r| Expr::choice(vec![Expr::Empty, Expr::seq(vec![Expr::literal("y"), r("a")])])),
            ("inner", |r| Expr::seq(vec![r("leaf"), Expr::literal("!")])),
            ("leaf", |_| Expr::literal("z")),
        ]);
        let linear = RightLinear::of(&g, 1000);
        let id = |name: &str| RuleId::new(g.rules.iter().position(|r| r.name == name).unwrap());
        assert!(linear.is_linear(id("pre")) && linear.is_entry(id("pre")));
        assert!(linear.is_linear(id("a")) && !linear.is_entry(id("a")));
        // `leaf` is followed by "!" where `inner` refers to it.
        assert!(!linear.is_linear(id("leaf")) && !linear.is_linear(id("inner")));
        assert!(!linear.is_linear(id("root")));
    }

    #[test]
    fn a_chain_of_states_ending_in_leaves_is_read_in_place_by_its_entry() {
        // What a pattern with a length bound is written as: no recursion, every state
        // moving to the next at its end, the last states leaves.
        let g = grammar(&[
            ("root", |r| Expr::seq(vec![Expr::literal("\""), r("s0"), Expr::literal("\"")])),
            ("s0", |r| {
                Expr::choice(vec![
                    Expr::seq(vec![Expr::literal("a"), r("s1")]),
                    Expr::seq(vec![Expr::literal("b"), r("s2")]),
                ])
            }),
            ("s1", |r| {
                Expr::choice(vec![Expr::Empty, Expr::seq(vec![Expr::literal("c"), r("end")])])
            }),
            ("s2", |r| Expr::seq(vec![Expr::literal("e"), r("end")])),
            ("end", |_| Expr::literal("d")),
        ]);
        let id = |name: &str| RuleId::new(g.rules.iter().position(|r| r.name == name).unwrap());
        // A leaf at the end of a chain is read in place whatever its size.
        for max_leaf_weight in [0, 1000] {
            let linear = RightLinear::of(&g, max_leaf_weight);
            assert!(["s0", "s1", "s2", "end"].iter().all(|&r| linear.is_linear(id(r))));
            assert!(linear.is_entry(id("s0")));
            assert!(["s1", "s2", "end"].iter().all(|&r| !linear.is_entry(id(r))));
            assert!(!linear.is_linear(id("root")));
        }
    }

    #[test]
    fn a_large_leaf_that_an_entry_refers_to_stays_a_call() {
        let g = grammar(&[
            ("root", |r| Expr::seq(vec![Expr::literal("("), r("x"), Expr::literal(")")])),
            ("x", |r| {
                Expr::choice(vec![
                    Expr::seq(vec![Expr::literal("a"), r("big")]),
                    Expr::seq(vec![Expr::literal("b"), r("small")]),
                ])
            }),
            ("big", |_| Expr::choice(vec![Expr::literal("yes"), Expr::literal("no")])),
            ("small", |_| Expr::literal("z")),
        ]);
        let id = |name: &str| RuleId::new(g.rules.iter().position(|r| r.name == name).unwrap());
        let linear = RightLinear::of(&g, 1000);
        assert!(["x", "big", "small"].iter().all(|&r| linear.is_linear(id(r))));
        assert!(linear.is_entry(id("x")) && !linear.is_entry(id("big")));
        // `big` (weight 3) over the bound: `x` calls it, so `x` is no longer linear.
        let bounded = RightLinear::of(&g, 2);
        assert!(!bounded.is_linear(id("big")) && !bounded.is_linear(id("x")));
        assert!(bounded.is_linear(id("small")) && bounded.is_entry(id("small")));
    }

    #[test]
    fn a_reference_before_more_input_or_inside_a_repetition_is_no_jump() {
        // `a` refers to itself before a closing parenthesis: a real recursion.
        let nested = grammar(&[
            ("root", |r| r("a")),
            ("a", |r| {
                Expr::choice(vec![
                    Expr::literal("x"),
                    Expr::seq(vec![Expr::literal("("), r("a"), Expr::literal(")")]),
                ])
            }),
        ]);
        assert!(!RightLinear::of(&nested, 1000).is_linear(RuleId::new(1)));
        let repeated = grammar(&[
            ("root", |r| r("a")),
            ("a", |r| {
                Expr::choice(vec![
                    Expr::literal("x"),
                    Expr::seq(vec![
                        Expr::literal("["),
                        Expr::Repeat { expr: Box::new(r("a")), min: 0, max: None },
                    ]),
                ])
            }),
        ]);
        assert!(!RightLinear::of(&repeated, 1000).is_linear(RuleId::new(1)));
    }
}
