//! Whole-grammar analyses: which rules can match the empty string ([`nullable`]), which
//! can finish at all ([`productive`]), which the root can reach ([`reachable`]), and
//! whether some rule can call itself before consuming input ([`left_recursion_cycle`]).
//!
//! Every analysis is iterative (explicit stacks and work lists, no recursion), so grammars
//! with long chains of rules or deeply nested expressions cannot overflow the stack, and
//! runs in time linear in the size of the grammar (plus the number of left-position edges
//! for left recursion).
//!
//! Expressions are first flattened into an array of nodes (each node knowing its parent
//! and its children, contiguous). Nullability and productivity are then least fixpoints of
//! monotone and/or formulas, computed by propagating "true" upwards from the leaves, as in
//! linear-time Horn satisfiability: a sequence becomes true when its last pending item does,
//! a choice when its first alternative does, a rule when its body does, and then every
//! reference to that rule.
//!
//! ```
//! use grammask_syntax::{analysis, parse_gbnf};
//! let g = parse_gbnf("root ::= ws \"x\"\nws ::= [ ]*\n").unwrap().grammar;
//! assert_eq!(analysis::nullable(&g), vec![false, true]);
//! ```

use crate::ir::{Expr, Grammar, RuleId};

const NONE: usize = usize::MAX;

/// One expression node of the flattened grammar.
struct Node<'g> {
    expr: &'g Expr,
    parent: usize,
    first_child: usize,
    child_count: usize,
}

/// The expressions of a grammar as an array of nodes; each rule's nodes are contiguous.
struct Flat<'g> {
    nodes: Vec<Node<'g>>,
    /// Root node of each rule's body.
    body_roots: Vec<usize>,
    /// Node range of each rule (body and lookahead).
    rule_nodes: Vec<(usize, usize)>,
}

impl<'g> Flat<'g> {
    fn new(grammar: &'g Grammar) -> Self {
        let mut nodes: Vec<Node<'g>> = Vec::new();
        let mut body_roots = Vec::with_capacity(grammar.rules.len());
        let mut rule_nodes = Vec::with_capacity(grammar.rules.len());
        for rule in &grammar.rules {
            let start = nodes.len();
            body_roots.push(start);
            for root in std::iter::once(&rule.body).chain(rule.lookahead.as_ref()) {
                let mut next = nodes.len();
                nodes.push(Node { expr: root, parent: NONE, first_child: NONE, child_count: 0 });
                // Breadth first: the children of each node are appended together.
                while next < nodes.len() {
                    let expr = nodes[next].expr;
                    let first = nodes.len();
                    let children: &'g [Expr] = match expr {
                        Expr::Seq(items) | Expr::Choice(items) => items,
                        Expr::Repeat { expr, .. } => std::slice::from_ref(&**expr),
                        _ => &[],
                    };
                    for child in children {
                        nodes.push(Node {
                            expr: child,
                            parent: next,
                            first_child: NONE,
                            child_count: 0,
                        });
                    }
                    nodes[next].first_child = first;
                    nodes[next].child_count = children.len();
                    next += 1;
                }
            }
            rule_nodes.push((start, nodes.len()));
        }
        Flat { nodes, body_roots, rule_nodes }
    }

    #[cfg(test)]
    fn children(&self, node: usize) -> std::ops::Range<usize> {
        let n = &self.nodes[node];
        if n.child_count == 0 {
            0..0
        } else {
            n.first_child..n.first_child + n.child_count
        }
    }
}

/// How a node's truth follows from its children's.
#[derive(Clone, Copy)]
enum Gate {
    /// True when all of the remaining children are.
    All(usize),
    /// True when any child is.
    Any,
    /// Decided on its own (a leaf, or a repetition that may repeat zero times).
    Fixed,
    /// True when the rule it refers to is.
    Ref,
}

/// The least fixpoint of "a rule is true when its body is", with leaves decided by
/// `leaf`; returns the truth of every rule and of every node.
fn propagate(
    grammar: &Grammar,
    flat: &Flat<'_>,
    leaf: impl Fn(&Expr) -> bool,
) -> (Vec<bool>, Vec<bool>) {
    let n = flat.nodes.len();
    let rule_count = grammar.rules.len();
    let mut truth = vec![false; n];
    let mut gates = Vec::with_capacity(n);
    let mut refs: Vec<Vec<usize>> = vec![Vec::new(); rule_count];
    let mut root_of = vec![NONE; n];
    for (rule, &root) in flat.body_roots.iter().enumerate() {
        root_of[root] = rule;
    }
    let mut work = Vec::new();
    for (i, node) in flat.nodes.iter().enumerate() {
        let gate = match node.expr {
            Expr::Seq(items) if !items.is_empty() => Gate::All(items.len()),
            Expr::Seq(_) => {
                truth[i] = true;
                Gate::Fixed
            }
            Expr::Choice(_) => Gate::Any,
            Expr::Repeat { min, max, .. } => {
                if *min == 0 || *max == Some(0) {
                    truth[i] = true;
                    Gate::Fixed
                } else {
                    Gate::All(1)
                }
            }
            Expr::Rule(id) => {
                if let Some(list) = refs.get_mut(id.index()) {
                    list.push(i);
                }
                Gate::Ref
            }
            other => {
                truth[i] = leaf(other);
                Gate::Fixed
            }
        };
        gates.push(gate);
        if truth[i] {
            work.push(i);
        }
    }
    let mut rule_truth = vec![false; rule_count];
    while let Some(node) = work.pop() {
        let rule = root_of[node];
        if rule != NONE && !rule_truth[rule] {
            rule_truth[rule] = true;
            for &r in &refs[rule] {
                if !truth[r] {
                    truth[r] = true;
                    work.push(r);
                }
            }
        }
        let parent = flat.nodes[node].parent;
        if parent == NONE || truth[parent] {
            continue;
        }
        match &mut gates[parent] {
            Gate::All(pending) => {
                *pending -= 1;
                if *pending == 0 {
                    truth[parent] = true;
                    work.push(parent);
                }
            }
            Gate::Any => {
                truth[parent] = true;
                work.push(parent);
            }
            Gate::Fixed | Gate::Ref => {}
        }
    }
    (rule_truth, truth)
}

fn nullable_leaf(expr: &Expr) -> bool {
    match expr {
        Expr::Empty => true,
        Expr::Bytes(bytes) => bytes.is_empty(),
        Expr::Text(text) => text.until.is_none(),
        _ => false,
    }
}

fn productive_leaf(expr: &Expr) -> bool {
    match expr {
        Expr::Empty | Expr::Bytes(_) => true,
        Expr::Class(class) => !class.is_empty(),
        Expr::ByteRanges(ranges) => !ranges.is_empty(),
        Expr::Tokens(set) => set.negated || !set.ids.is_empty(),
        Expr::Text(text) => text.can_end(),
        _ => false,
    }
}

/// For each rule (indexed by [`RuleId::index`]): whether it matches the empty string.
/// Lookahead assertions do not count.
pub fn nullable(grammar: &Grammar) -> Vec<bool> {
    least_fixpoint(grammar, nullable_leaf)
}

/// For each rule: whether it matches at least one finite string (has a finite
/// derivation). A rule that is not productive can never finish.
pub fn productive(grammar: &Grammar) -> Vec<bool> {
    least_fixpoint(grammar, productive_leaf)
}

/// The least fixpoint of "a rule is true when its body is", leaves decided by `leaf`
/// (as [`propagate`] computes it). Rounds over the rules, each evaluating the bodies not
/// yet true with what was found before: from nothing, each round finds more, and a round
/// that finds nothing new ends at the least fixpoint. The first rounds (up to
/// [`LAST_FIRST_ROUNDS`]) take the rules last defined first (rules tend to refer to rules
/// defined after them), which settles most grammars with no allocation but the answer: a
/// round reads only what decides each body (a sequence up to its first item that does not
/// hold), where ordering the rules walks every reference. When they do not, the rounds
/// take each rule still false after the rules it refers to ([`callees_first`], over those
/// rules only: the settled ones are read, not walked), where only cycles need another
/// round; past a few, the linear propagation over the flattened grammar takes over, so
/// many nested cycles stay linear.
fn least_fixpoint(grammar: &Grammar, leaf: fn(&Expr) -> bool) -> Vec<bool> {
    let mut known = vec![false; grammar.rules.len()];
    let round = |known: &mut [bool], order: &mut dyn Iterator<Item = usize>| {
        let mut found = false;
        for i in order {
            if !known[i] && holds(&grammar.rules[i].body, known, leaf) {
                known[i] = true;
                found = true;
            }
        }
        found
    };
    let last_first = || (0..grammar.rules.len()).rev();
    for _ in 0..LAST_FIRST_ROUNDS {
        if !round(&mut known, &mut last_first()) || !known.contains(&false) {
            return known;
        }
    }
    let order = callees_first(grammar, &known);
    for _ in 0..FIXPOINT_ROUNDS {
        if !round(&mut known, &mut order.iter().copied()) {
            return known;
        }
    }
    let flat = Flat::new(grammar);
    propagate(grammar, &flat, leaf).0
}

/// Every rule not `settled` once, each after the rules its body refers to except inside
/// a cycle: the [`strongly_connected`] components of the references among those rules
/// (lookahead assertions left out), callees first. Only their bodies are walked.
fn callees_first(grammar: &Grammar, settled: &[bool]) -> Vec<usize> {
    let n = grammar.rules.len();
    let open: Vec<usize> = (0..n).filter(|&r| !settled[r]).collect();
    let mut local = vec![usize::MAX; n];
    for (i, &r) in open.iter().enumerate() {
        local[r] = i;
    }
    let refs: Vec<Vec<usize>> = open
        .iter()
        .map(|&r| {
            let mut out = Vec::new();
            grammar.rules[r].body.for_each_rule_ref(&mut |r| {
                if let Some(&i) = local.get(r.index()).filter(|&&i| i != usize::MAX) {
                    out.push(i);
                }
            });
            out
        })
        .collect();
    strongly_connected(&refs).nodes().iter().map(|&i| open[i]).collect()
}

/// Rounds of [`least_fixpoint`] over the rules last defined first before they are put in
/// [`callees_first`] order.
const LAST_FIRST_ROUNDS: usize = 6;

/// Rounds of [`least_fixpoint`] in [`callees_first`] order before the linear propagation
/// takes over.
const FIXPOINT_ROUNDS: usize = 4;

/// Whether `expr` is true when the rules `known` are, leaves decided by `leaf`: a
/// sequence when all its items are, a choice when one is, a repetition when it may
/// repeat zero times or its item is.
fn holds(expr: &Expr, known: &[bool], leaf: fn(&Expr) -> bool) -> bool {
    match expr {
        Expr::Seq(items) => items.iter().all(|e| holds(e, known, leaf)),
        Expr::Choice(items) => items.iter().any(|e| holds(e, known, leaf)),
        Expr::Repeat { expr, min, max } => *min == 0 || *max == Some(0) || holds(expr, known, leaf),
        Expr::Rule(id) => known.get(id.index()).copied().unwrap_or(false),
        other => leaf(other),
    }
}

/// For each rule: whether the root refers to it, directly or not (through bodies and
/// lookahead assertions). The root is reachable.
pub fn reachable(grammar: &Grammar) -> Vec<bool> {
    let flat = Flat::new(grammar);
    let count = grammar.rules.len();
    let mut seen = vec![false; count];
    let root = grammar.root.index();
    if root >= count {
        return seen;
    }
    seen[root] = true;
    let mut work = vec![root];
    while let Some(rule) = work.pop() {
        let (start, end) = flat.rule_nodes[rule];
        for node in &flat.nodes[start..end] {
            if let Expr::Rule(id) = node.expr {
                let i = id.index();
                if i < count && !seen[i] {
                    seen[i] = true;
                    work.push(i);
                }
            }
        }
    }
    seen
}

/// For each rule, the rules it may call before consuming any input (deduplicated).
fn left_edges(grammar: &Grammar) -> Vec<Vec<usize>> {
    let nullable = nullable(grammar);
    grammar
        .rules
        .iter()
        .map(|rule| {
            let mut out = Vec::new();
            leading_rules(&rule.body, &nullable, &mut out);
            out
        })
        .collect()
}

/// Adds the rules `expr` may call before consuming input to `out` (once each); whether
/// `expr` matches the empty string, rules `nullable` given. Each node is visited at most
/// once: a sequence's items past its first non-nullable one are not leading.
fn leading_rules(expr: &Expr, nullable: &[bool], out: &mut Vec<usize>) -> bool {
    match expr {
        Expr::Rule(id) => {
            let Some(&empty) = nullable.get(id.index()) else { return false };
            if !out.contains(&id.index()) {
                out.push(id.index());
            }
            empty
        }
        Expr::Seq(items) => items.iter().all(|e| leading_rules(e, nullable, out)),
        Expr::Choice(items) => {
            // Every alternative leads: no short circuit.
            let mut empty = false;
            for e in items {
                empty |= leading_rules(e, nullable, out);
            }
            empty
        }
        Expr::Repeat { max: Some(0), .. } => true,
        Expr::Repeat { expr, min, .. } => leading_rules(expr, nullable, out) || *min == 0,
        other => nullable_leaf(other),
    }
}

/// The strongly connected components of a graph, in order, held in one buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Components {
    /// The nodes, component after component.
    nodes: Vec<usize>,
    /// Where each component ends in `nodes`.
    ends: Vec<usize>,
}

impl Components {
    /// The components in order, each its nodes.
    pub fn iter(&self) -> ComponentIter<'_> {
        ComponentIter { components: self, next: 0 }
    }

    /// Every node, component after component.
    pub fn nodes(&self) -> &[usize] {
        &self.nodes
    }

    /// How many components there are.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no component (an empty graph).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// The components of a [`Components`] in order.
pub struct ComponentIter<'a> {
    components: &'a Components,
    next: usize,
}

impl<'a> Iterator for ComponentIter<'a> {
    type Item = &'a [usize];

    fn next(&mut self) -> Option<&'a [usize]> {
        let Components { nodes, ends } = self.components;
        let end = *ends.get(self.next)?;
        let start = if self.next == 0 { 0 } else { ends[self.next - 1] };
        self.next += 1;
        Some(&nodes[start..end])
    }
}

impl<'a> IntoIterator for &'a Components {
    type Item = &'a [usize];
    type IntoIter = ComponentIter<'a>;

    fn into_iter(self) -> ComponentIter<'a> {
        self.iter()
    }
}

/// Strongly connected components of a graph given as adjacency lists (Tarjan's
/// algorithm, iterative). A component comes out after every component it reaches
/// (callees before callers).
pub fn strongly_connected(adj: &[Vec<usize>]) -> Components {
    let n = adj.len();
    let mut index = vec![NONE; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut calls: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    let mut components = Components { nodes: Vec::with_capacity(n), ends: Vec::with_capacity(n) };
    for start in 0..n {
        if index[start] != NONE {
            continue;
        }
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        calls.push((start, 0));
        while let Some(&(v, edge)) = calls.last() {
            if let Some(&w) = adj[v].get(edge) {
                if let Some(top) = calls.last_mut() {
                    top.1 += 1;
                }
                if index[w] == NONE {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    calls.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(u, _)) = calls.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    components.nodes.push(w);
                    if w == v {
                        break;
                    }
                }
                components.ends.push(components.nodes.len());
            }
        }
    }
    components
}

/// Every left-recursive cycle, one per group of mutually left-recursive rules: the
/// shortest cycle through the group's first rule, as a closed path (first == last),
/// e.g. `[expr, term, expr]`. Ordered by first rule.
pub fn left_recursion_cycles(grammar: &Grammar) -> Vec<Vec<RuleId>> {
    let edges = left_edges(grammar);
    let mut cycles = Vec::new();
    let mut in_component = vec![NONE; edges.len()];
    for (c, component) in strongly_connected(&edges).iter().enumerate() {
        let Some(&start) = component.iter().min() else { continue };
        if component.len() == 1 && !edges[start].contains(&start) {
            continue;
        }
        for &r in component {
            in_component[r] = c;
        }
        // Breadth-first search back to `start` inside the component.
        let mut previous = vec![NONE; edges.len()];
        let mut queue = std::collections::VecDeque::from([start]);
        let mut reached = false;
        'search: while let Some(v) = queue.pop_front() {
            for &w in &edges[v] {
                if w == start {
                    previous[start] = v;
                    reached = true;
                    break 'search;
                }
                if in_component[w] == c && previous[w] == NONE {
                    previous[w] = v;
                    queue.push_back(w);
                }
            }
        }
        if !reached {
            continue;
        }
        let mut path = vec![start];
        let mut at = previous[start];
        while at != start && at != NONE {
            path.push(at);
            at = previous[at];
        }
        path.push(start);
        path.reverse();
        cycles.push(path.into_iter().map(RuleId::new).collect());
    }
    cycles.sort();
    cycles
}

/// A left-recursive cycle if there is one: a closed path of rules (first == last), each
/// of which may call the next before consuming input, e.g. `[expr, term, expr]`; for
/// direct left recursion `[expr, expr]`.
pub fn left_recursion_cycle(grammar: &Grammar) -> Option<Vec<RuleId>> {
    left_recursion_cycles(grammar).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Expr, GrammarBuilder};

    /// Builds a grammar from `(name, body)` pairs; bodies refer to rules by name through
    /// `Expr::Rule` ids declared in order.
    type Body = fn(&dyn Fn(&str) -> Expr) -> Expr;

    fn grammar(rules: &[(&str, Body)]) -> Grammar {
        let mut b = GrammarBuilder::new();
        for (name, _) in rules {
            b.declare(name);
        }
        let ids: Vec<RuleId> = rules.iter().map(|(n, _)| b.lookup(n).unwrap()).collect();
        let names: Vec<&str> = rules.iter().map(|(n, _)| *n).collect();
        let r = |n: &str| Expr::Rule(ids[names.iter().position(|m| *m == n).unwrap()]);
        for (i, (_, body)) in rules.iter().enumerate() {
            b.define(ids[i], body(&r));
        }
        b.finish(ids[0]).unwrap()
    }

    #[test]
    fn nullable_through_rules_and_repeats() {
        let g = grammar(&[
            ("root", |r| Expr::seq(vec![r("a"), r("b")])),
            ("a", |_| Expr::star(Expr::literal("x"))),
            ("b", |r| Expr::choice(vec![Expr::literal("y"), r("a")])),
            ("c", |r| Expr::seq(vec![r("a"), Expr::literal("z")])),
            ("d", |r| Expr::repeat(r("c"), 2, Some(3))),
            ("e", |r| Expr::repeat(r("c"), 0, Some(0))),
        ]);
        assert_eq!(nullable(&g), vec![true, true, true, false, false, true]);
    }

    #[test]
    fn productive_needs_a_finite_derivation() {
        let g = grammar(&[
            ("root", |r| Expr::choice(vec![r("loop"), r("ok")])),
            ("loop", |r| Expr::seq(vec![Expr::literal("x"), r("loop")])),
            ("ok", |r| Expr::choice(vec![Expr::literal("x"), Expr::seq(vec![r("ok"), r("ok")])])),
            ("never", |_| Expr::class(false, Vec::new())),
            ("opt", |r| Expr::optional(r("never"))),
            ("uses", |r| Expr::plus(r("never"))),
        ]);
        assert_eq!(productive(&g), vec![true, false, true, false, true, false]);
    }

    /// Leading calls over the flattened grammar and its nodes' nullability: the
    /// reference for [`left_edges`].
    fn left_edges_by_propagation(grammar: &Grammar) -> Vec<Vec<usize>> {
        let flat = Flat::new(grammar);
        let (_, node_nullable) = propagate(grammar, &flat, nullable_leaf);
        let count = grammar.rules.len();
        let mut edges = vec![Vec::new(); count];
        for (rule, out) in edges.iter_mut().enumerate() {
            let mut stack = vec![flat.body_roots[rule]];
            while let Some(node) = stack.pop() {
                match flat.nodes[node].expr {
                    Expr::Rule(id) if id.index() < count && !out.contains(&id.index()) => {
                        out.push(id.index());
                    }
                    Expr::Seq(_) => {
                        for child in flat.children(node) {
                            stack.push(child);
                            if !node_nullable[child] {
                                break;
                            }
                        }
                    }
                    Expr::Choice(_) => stack.extend(flat.children(node)),
                    Expr::Repeat { max: Some(0), .. } => {}
                    Expr::Repeat { .. } => stack.extend(flat.children(node)),
                    _ => {}
                }
            }
            out.sort_unstable();
        }
        edges
    }

    /// The rounds of `productive` and `nullable` agree with the linear propagation, and
    /// the leading calls with those found over the flattened grammar: on random grammars
    /// (settled in a few rounds or not), and on long chains of rules declared in either
    /// order.
    #[test]
    fn fixpoint_rounds_agree_with_propagation() {
        let by_propagation = |g: &Grammar| propagate(g, &Flat::new(g), productive_leaf).0;
        let nullable_by_propagation = |g: &Grammar| propagate(g, &Flat::new(g), nullable_leaf).0;
        let mut rng = grammask_fuzz::rng::XorShift::new(0x2545_F491_4F6C_DD1D);
        let mut next = |n: u64| rng.below(n as usize) as u64;
        for _ in 0..2_000 {
            let count = 1 + next(8) as usize;
            let mut b = GrammarBuilder::new();
            let ids: Vec<RuleId> = (0..count).map(|i| b.declare(&format!("r{i}"))).collect();
            for &id in &ids {
                let mut items = Vec::new();
                for _ in 0..1 + next(3) {
                    items.push(match next(6) {
                        0 => Expr::literal("x"),
                        1 => Expr::class(false, Vec::new()),
                        2 => Expr::star(Expr::Rule(ids[next(count as u64) as usize])),
                        3 => Expr::plus(Expr::Rule(ids[next(count as u64) as usize])),
                        _ => Expr::Rule(ids[next(count as u64) as usize]),
                    });
                }
                let body = if next(2) == 0 { Expr::seq(items) } else { Expr::choice(items) };
                b.define(id, body);
            }
            let g = b.finish(ids[0]).unwrap();
            assert_eq!(productive(&g), by_propagation(&g), "{g:?}");
            assert_eq!(nullable(&g), nullable_by_propagation(&g), "{g:?}");
            let mut edges = left_edges(&g);
            edges.iter_mut().for_each(|e| e.sort_unstable());
            assert_eq!(edges, left_edges_by_propagation(&g), "{g:?}");
        }
        for forward in [true, false] {
            let n: usize = 50;
            let mut b = GrammarBuilder::new();
            let ids: Vec<RuleId> = (0..n).map(|i| b.declare(&format!("r{i}"))).collect();
            for i in 0..n {
                let next = if forward { i + 1 } else { i.wrapping_sub(1) };
                let body = match ids.get(next) {
                    Some(&id) => Expr::seq(vec![Expr::literal("a"), Expr::Rule(id)]),
                    None => Expr::literal("end"),
                };
                b.define(ids[i], body);
            }
            let g = b.finish(ids[0]).unwrap();
            assert_eq!(productive(&g), vec![true; n]);
            assert_eq!(productive(&g), by_propagation(&g));
        }
        // One cycle of rules, each finishing only through the one that calls it: each
        // round finds one more in any order, so the propagation takes over.
        let n: usize = 20;
        let mut b = GrammarBuilder::new();
        let ids: Vec<RuleId> = (0..n).map(|i| b.declare(&format!("r{i}"))).collect();
        for i in 0..n {
            let back = if i == 0 { Expr::literal("end") } else { Expr::Rule(ids[i - 1]) };
            let deeper = match ids.get(i + 1) {
                Some(&id) => Expr::seq(vec![Expr::Rule(id), Expr::class(false, Vec::new())]),
                None => Expr::class(false, Vec::new()),
            };
            b.define(ids[i], Expr::choice(vec![back, deeper]));
        }
        let g = b.finish(ids[0]).unwrap();
        assert_eq!(productive(&g), vec![true; n]);
        assert_eq!(productive(&g), by_propagation(&g));
    }

    /// Every rule once, callees before callers outside cycles, whatever the order the
    /// rules were declared in.
    #[test]
    fn callees_come_first() {
        let g = grammar(&[
            ("root", |r| Expr::seq(vec![r("shared"), r("a")])),
            ("shared", |_| Expr::literal("s")),
            ("a", |r| Expr::choice(vec![r("b"), r("shared")])),
            ("b", |r| Expr::seq(vec![Expr::literal("("), r("a"), r("shared")])),
        ]);
        let order = callees_first(&g, &[false; 4]);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
        let at = |r: usize| order.iter().position(|&o| o == r).unwrap();
        assert!(at(1) < at(0) && at(2) < at(0));
        assert!(at(1) < at(2) && at(1) < at(3));
        // Settled rules are left out, and so are references to them.
        let open = callees_first(&g, &[false, true, false, false]);
        assert_eq!(open.len(), 3);
        let at = |r: usize| open.iter().position(|&o| o == r).unwrap();
        assert!(at(2) < at(0) && at(3) < at(0));
    }

    #[test]
    fn reachable_follows_bodies_and_lookaheads() {
        let mut g = grammar(&[
            ("root", |r| r("a")),
            ("a", |_| Expr::literal("x")),
            ("b", |r| r("c")),
            ("c", |_| Expr::literal("y")),
            ("d", |_| Expr::literal("z")),
        ]);
        g.rules[1].lookahead = Some(Expr::Rule(RuleId::new(4)));
        assert_eq!(reachable(&g), vec![true, true, false, false, true]);
    }

    #[test]
    fn finds_direct_indirect_and_hidden_left_recursion() {
        let direct = grammar(&[("root", |r| {
            Expr::choice(vec![Expr::seq(vec![r("root"), Expr::literal("+")]), Expr::literal("1")])
        })]);
        assert_eq!(left_recursion_cycle(&direct), Some(vec![RuleId::new(0), RuleId::new(0)]));

        let indirect = grammar(&[
            ("root", |r| r("expr")),
            ("expr", |r| Expr::choice(vec![r("term"), Expr::literal("1")])),
            ("term", |r| Expr::seq(vec![r("expr"), Expr::literal("*")])),
        ]);
        let ids = |v: &[usize]| v.iter().map(|&i| RuleId::new(i)).collect::<Vec<_>>();
        assert_eq!(left_recursion_cycle(&indirect), Some(ids(&[1, 2, 1])));

        let hidden = grammar(&[
            ("root", |r| {
                Expr::choice(vec![
                    Expr::seq(vec![r("ws"), r("root"), Expr::literal("x")]),
                    Expr::literal("y"),
                ])
            }),
            ("ws", |_| Expr::star(Expr::literal(" "))),
        ]);
        assert_eq!(left_recursion_cycle(&hidden), Some(ids(&[0, 0])));

        let right = grammar(&[("root", |r| {
            Expr::choice(vec![Expr::seq(vec![Expr::literal("x"), r("root")]), Expr::Empty])
        })]);
        assert_eq!(left_recursion_cycle(&right), None);
    }

    #[test]
    fn long_rule_chains_do_not_overflow() {
        let n = 200_000;
        let mut b = GrammarBuilder::new();
        let ids: Vec<RuleId> = (0..n).map(|i| b.declare(&format!("r{i}"))).collect();
        for i in 0..n {
            let body = if i + 1 < n {
                Expr::seq(vec![Expr::Rule(ids[i + 1]), Expr::Rule(ids[(i + 1) % n])])
            } else {
                Expr::Rule(ids[0])
            };
            b.define(ids[i], body);
        }
        let g = b.finish(ids[0]).unwrap();
        assert!(productive(&g).iter().all(|p| !p));
        assert!(nullable(&g).iter().all(|p| !p));
        assert!(reachable(&g).iter().all(|p| *p));
        let cycle = left_recursion_cycle(&g).unwrap();
        assert_eq!(cycle.len(), n + 1);
    }
}
