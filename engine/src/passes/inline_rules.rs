//! Rule inlining.
//!
//! Invariant established: every remaining reference to a non-recursive rule is to a rule
//! whose body is larger than the inlining limit (or, larger than [`ALWAYS_INLINED_SIZE`],
//! whose caller reached its size limit), to a state of more than [`STATE_COPY_MAX`]
//! referred to more than once, where another state ends (see below), or to a rule that
//! is never inlined ([`PassConfig::never_inlined`]: what few documents reach, such as the
//! members of free keys, is built when a generation first enters it, not with its
//! callers); all others were replaced by the callee's body. Recursive rules (those on a
//! cycle of the call graph) are never inlined, so the pushdown stack only holds what
//! recursion needs, and a grammar without recursion usually becomes a single automaton.
//!
//! Sizes are weights ([`Expr::weight`]): IR nodes, with each bounded repetition counted
//! once per count, as automata hold its copies. A string of `maxLength: 255` is a few
//! hundred nodes but thousands of automaton states; measured by its nodes, it would be
//! copied into every continuation of an object's optional members.
//!
//! The whole grammar grows by inlining to a weight of at most
//! [`PassConfig::inline_max_total`], bodies of weight at most [`ALWAYS_INLINED_SIZE`]
//! aside (always inlined).
//!
//! Callees are processed before callers (strongly connected components come out in that
//! order), so an inlined body is already inlined itself.
//!
//! Spliced rules ([`is_spliced`]: small sequences such as JSON whitespace, referred to
//! after every token of a schema) are inlined without copies: their references stay in
//! the IR, counted against the budgets as copies, and automaton construction reads the
//! body at each of them as the copy would have been read there (its items among the
//! items of the sequence holding the reference). The IR then holds one body instead of
//! one per use: less for the later passes to walk, and for a compiled grammar to keep.
//!
//! An automaton written one rule per state (a pattern's complement, its product with a
//! format or a length bound: [`is_state`], rules that refer to others only where they
//! end) reaches most states by several ways. Copied where the states before it end, each
//! state would hold a copy of every way through the rest: the grammar grows to its budget
//! (tens of thousands of nodes for one `format: uri` with a pattern) and every later pass
//! and the automaton's construction walk the copies. A state larger than
//! [`STATE_COPY_MAX`] referred to more than once is therefore not copied where another
//! state ends: the automaton entering the states reads each of them in place, once
//! ([`crate::automaton`]'s right-linear rules).
//!
//! Three kinds of rules stay calls ([`stays_call`]). Chunks of calls (a rule of many
//! calls of one chunk rule: a bound in the thousands, counted in chunks of chunks) would
//! copy all their calls into every count of their caller's repetition. The other two are
//! leaf rules, and the mask cache classifies tokens through their calls as if they were
//! inlined ([`crate::mask_cache`]):
//! - long counted runs: a rule whose whole body is one ASCII character repeated `m..=n`
//!   times with `m >= 1` and `n >= COUNTED_RUN_MIN` (the blanks of JSON whitespace after
//!   the first) costs `n` automaton states at every site it is copied into, while a call
//!   costs one state there;
//! - escapes: a rule that starts with the byte `\` and calls nothing (a JSON string's
//!   escaped character, `json-escape`: `\uXXXX` with surrogate pairs is some sixteen
//!   automaton states, and its hex-digit classes split the byte classes of every rule
//!   holding a string). Text rarely holds escapes, so walking through the call costs
//!   little, where copies cost every compile of every schema.
//!
//! The `\u` tails of escapes ([`is_escape_tail`]: what follows `\u`, which
//! [`super::outline_unicode_escapes`] moves into calls after inlining, and which the JSON
//! Schema converter writes as calls in a complement's states) stay calls too, and weigh
//! what the tail does wherever they are called: a state reading one is copied, or not,
//! as it would be with the tail in place.

use super::fuse_sequences::fuse_top;
use super::outline_unicode_escapes::is_escape_tail;
use super::PassConfig;
use grammask_syntax::analysis::Components;
use grammask_syntax::ir::{Expr, Grammar, Rule, RuleId};

/// Bodies at most this large (weight) are inlined even past the caller's budget and
/// the grammar's room: JSON whitespace (`ws`, 11 nodes) is called after every value of
/// a schema, and a large schema whose room went to its large rules would otherwise keep
/// it a call there, every token after a value then depending on the stack. Each such
/// copy replaces one reference node, so they grow the grammar by at most this factor.
pub const ALWAYS_INLINED_SIZE: usize = 16;

/// The least maximum count of a counted run that stays a call (see the module docs).
pub const COUNTED_RUN_MIN: u32 = 16;

/// Whether references to rule `rule` are spliced ([module docs](self)): not the root, no
/// lookahead, not a call that stays ([`stays_call`]), a sequence of at most
/// [`ALWAYS_INLINED_SIZE`] nodes and at least two items whose first and last are neither
/// byte strings nor empty (so that no item fuses across its edges: the copy's items would
/// be exactly its own), calling only rules that stay calls (so it calls no spliced rule
/// and lies on no cycle).
pub fn is_spliced(rules: &[Rule], rule: usize, root: RuleId) -> bool {
    spliced_with(rules, rule, root, &|r| stays_call(&rules[r]))
}

/// Per rule of `rules`, whether references to it are spliced ([`is_spliced`]); `stays`:
/// per rule, whether it stays a call ([`stays_call`], as [`CallGraph::stays`] holds it).
pub(crate) fn spliced_rules(rules: &[Rule], root: RuleId, stays: &[bool]) -> Vec<bool> {
    (0..rules.len()).map(|r| spliced_with(rules, r, root, &|c| stays[c])).collect()
}

/// [`is_spliced`] with whether each rule stays a call given by `stays`.
fn spliced_with(rules: &[Rule], rule: usize, root: RuleId, stays: &dyn Fn(usize) -> bool) -> bool {
    let r = &rules[rule];
    if rule == root.index() || r.lookahead.is_some() || stays(rule) {
        return false;
    }
    let Expr::Seq(items) = &r.body else { return false };
    let edge = |e: &Expr| !matches!(e, Expr::Bytes(_) | Expr::Empty | Expr::Seq(_));
    if items.len() < 2
        || !items.first().is_some_and(edge)
        || !items.last().is_some_and(edge)
        || !at_most(&r.body, ALWAYS_INLINED_SIZE)
    {
        return false;
    }
    let mut calls_only_leaves = true;
    r.body.for_each_rule_ref(&mut |callee: RuleId| {
        calls_only_leaves &= callee.index() < rules.len() && stays(callee.index());
    });
    calls_only_leaves
}

/// Whether `expr` has at most `limit` nodes ([`Expr::size`]), walking no further than
/// that (a large rule is not walked whole).
fn at_most(expr: &Expr, limit: usize) -> bool {
    fn count(e: &Expr, left: &mut usize) -> bool {
        if *left == 0 {
            return false;
        }
        *left -= 1;
        match e {
            Expr::Seq(items) | Expr::Choice(items) => items.iter().all(|i| count(i, left)),
            Expr::Repeat { expr, .. } => count(expr, left),
            _ => true,
        }
    }
    count(expr, &mut { limit })
}

/// Whether `rule` is a long counted run of one ASCII character, which stays a call.
pub fn is_counted_run(rule: &Rule) -> bool {
    if rule.lookahead.is_some() {
        return false;
    }
    let Expr::Repeat { expr, min, max: Some(max) } = &rule.body else { return false };
    let one_ascii_byte = match &**expr {
        Expr::Class(class) => {
            let ranges = class.positive_ranges();
            !ranges.is_empty() && ranges.iter().all(|&(_, hi)| hi.is_ascii())
        }
        Expr::Bytes(bytes) => bytes.len() == 1 && bytes[0].is_ascii(),
        Expr::ByteRanges(ranges) => !ranges.is_empty() && ranges.iter().all(|&(_, hi)| hi < 0x80),
        _ => false,
    };
    one_ascii_byte && *min >= 1 && *max >= COUNTED_RUN_MIN
}

/// Whether `rule` is an escape: it calls nothing, reads no token set, has no lookahead,
/// and its body is a sequence that starts with the byte `\`.
pub fn is_escape(rule: &Rule) -> bool {
    if rule.lookahead.is_some() {
        return false;
    }
    let Expr::Seq(items) = &rule.body else { return false };
    let starts = matches!(items.first(), Some(Expr::Bytes(b)) if b.first() == Some(&b'\\'));
    starts && items.len() > 1 && !refers(&rule.body)
}

/// Whether `expr` refers to a rule or reads a token set.
pub(super) fn refers(expr: &Expr) -> bool {
    match expr {
        Expr::Rule(_) | Expr::Tokens(_) => true,
        Expr::Seq(items) | Expr::Choice(items) => items.iter().any(refers),
        Expr::Repeat { expr, .. } => refers(expr),
        _ => false,
    }
}

/// The fewest calls of one rule in a row that make a chunk of calls ([`is_chunk_of_calls`]).
pub const CHUNK_OF_CALLS_MIN: usize = 16;

/// Whether `rule` is a chunk of calls: its body is a sequence of at least
/// [`CHUNK_OF_CALLS_MIN`] calls of one rule, and nothing else (the JSON Schema converter's
/// chunks of chunks, for a `maxLength` or `maxItems` in the thousands). Inlined, every
/// count of its caller's repetition would hold all of its calls as states of their own.
pub fn is_chunk_of_calls(rule: &Rule) -> bool {
    let Expr::Seq(items) = &rule.body else { return false };
    rule.lookahead.is_none()
        && items.len() >= CHUNK_OF_CALLS_MIN
        && matches!(items[0], Expr::Rule(_))
        && items.iter().all(|item| *item == items[0])
}

/// Whether references to `rule` stay calls: a long counted run ([`is_counted_run`]), an
/// escape ([`is_escape`]) or a chunk of calls ([`is_chunk_of_calls`]).
pub fn stays_call(rule: &Rule) -> bool {
    is_counted_run(rule) || is_escape(rule) || is_chunk_of_calls(rule)
}

/// Whether rule `r` reads as a state of an automaton written one rule per state (a
/// pattern's complement, its product with a format or a length bound): it refers to
/// rules, and only where it ends.
pub(crate) fn is_state(grammar: &Grammar, calls: &CallGraph, r: usize) -> bool {
    grammar.rules[r].lookahead.is_none() && !calls.callees[r].is_empty() && calls.ends_only[r]
}

/// States ([`is_state`]) of more than this weight are not copied where a state ends:
/// see [`inline_rules`].
pub const STATE_COPY_MAX: usize = 64;

/// For each rule, whether it *opens a loop of states*: a non-recursive state
/// ([`is_state`]) that refers to a recursive state, directly or through other rules
/// that open one (the first states of a pattern's complement, `key-not ::= "" | [^a]
/// key-not-1 | "a" key-not-2`, before the states that loop on every other character).
///
/// Such a rule stays a call from the rules that are not states. Inlined there, its first
/// states would land in the caller and the loop would stay a call from each of them, so
/// that a string's first character leads into another automaton by one way and stays in
/// the caller by another: a position there reads no run of the string's characters
/// whole, and the mask cache walks every token from it. Called, its automaton reads the
/// loop in place ([`crate::automaton`]'s right-linear rules), as one automaton from the
/// string's first character on.
fn opens_loops(
    sccs: &Components,
    graph: &[Vec<usize>],
    states: &[bool],
    recursive: &[bool],
) -> Vec<bool> {
    let mut opens = vec![false; graph.len()];
    // Components come callees first: a callee's answer is known before its callers'.
    for scc in sccs {
        for &r in scc {
            opens[r] = states[r]
                && !recursive[r]
                && graph[r].iter().any(|&c| (recursive[c] && states[c]) || opens[c]);
        }
    }
    opens
}

/// For each rule, whether it lies on a cycle of the call graph.
pub fn recursive_rules(grammar: &Grammar) -> Vec<bool> {
    let calls = CallGraph::of(grammar);
    on_cycles(&calls.components, &calls.callees)
}

/// For each node, whether its component is a cycle (several nodes, or a self-loop).
fn on_cycles(sccs: &Components, graph: &[Vec<usize>]) -> Vec<bool> {
    let mut recursive = vec![false; graph.len()];
    for scc in sccs {
        let on_cycle = scc.len() > 1 || graph[scc[0]].contains(&scc[0]);
        for &r in scc {
            recursive[r] = on_cycle;
        }
    }
    recursive
}

/// Inlines small non-recursive rules into their callers.
pub fn inline_rules(mut grammar: Grammar, config: &PassConfig) -> Grammar {
    let calls = CallGraph::of(&grammar);
    let states: Vec<bool> =
        (0..grammar.rules.len()).map(|r| is_state(&grammar, &calls, r)).collect();
    let CallGraph { components: sccs, callees: graph, mut refs, tails, stays, .. } = calls;
    let recursive = on_cycles(&sccs, &graph);
    let opens_loop = opens_loops(&sccs, &graph, &states, &recursive);
    // A `\u` tail's call weighs what the tail does: the states an automaton holds for the
    // escape are the same whether the JSON Schema converter wrote the tail as a call or
    // in place (which `outline_unicode_escapes` turns into the same call later), and so
    // are the decisions taken by weight.
    let tail_weights: Vec<usize> = (grammar.rules.iter().zip(&tails))
        .map(|(r, &tail)| if tail { r.body.weight() } else { 1 })
        .collect();
    let weight = |e: &Expr| e.weight_with(&|r: RuleId| tail_weights[r.index()]);
    let mut sizes: Vec<usize> = grammar.rules.iter().map(|r| weight(&r.body)).collect();
    let spliced = spliced_rules(&grammar.rules, grammar.root, &stays);
    let never: std::collections::HashSet<&str> =
        config.never_inlined.iter().map(String::as_str).collect();
    let kept: Vec<bool> = grammar.rules.iter().map(|r| never.contains(r.name.as_str())).collect();
    // The whole grammar may grow to a weight of `inline_max_total` (or stays as large as
    // it is): copies of rules called from many places must not multiply its size.
    let total = sizes.iter().fold(0usize, |sum, &w| sum.saturating_add(w));
    let mut room = config.inline_max_total.saturating_sub(total);
    // The body of a rule referred to once moves into its one caller instead of being
    // copied (the rule is dead after); the root is never moved.
    refs[grammar.root.index()] += 1;
    for scc in &sccs {
        for &r in scc {
            // A chunk of calls keeps its calls (the copies are what it exists to avoid).
            if config.keep_calls_in.iter().any(|name| *name == grammar.rules[r].name)
                || is_chunk_of_calls(&grammar.rules[r])
            {
                continue;
            }
            let mut body = std::mem::replace(&mut grammar.rules[r].body, Expr::Empty);
            debug_assert_eq!(sizes[r], weight(&body));
            let mut budget = config.inline_max_caller_size.saturating_sub(sizes[r]);
            budget = budget.min(room);
            let granted = budget;
            let mut ctx = Context {
                rules: &mut grammar.rules,
                recursive: &recursive,
                kept: &kept,
                spliced: &spliced,
                tails: &tails,
                stays: &stays,
                states: &states,
                opens_loop: &opens_loop,
                in_state: states[r],
                refs: &refs,
                inlined: 0,
                over: 0,
            };
            substitute(&mut body, &mut ctx, &sizes, config, &mut budget, 1, true);
            // Each callee body inlined (its weight times the copies of the reference,
            // taken from the budget) replaced those copies of one reference node; fusion
            // where bodies landed may have saved a few more (the weight kept is an upper
            // bound, which only makes the budgets stricter). Weights saturate (repetitions
            // nested with huge counts).
            room -= granted - budget;
            room = room.saturating_sub(ctx.over);
            sizes[r] = sizes[r].saturating_add(granted - budget).saturating_add(ctx.over);
            sizes[r] = sizes[r].saturating_sub(ctx.inlined);
            debug_assert!(sizes[r] >= weight(&body) || weight(&body) == usize::MAX);
            grammar.rules[r].body = body;
        }
    }
    grammar
}

/// What [`substitute`] reads and takes bodies from (the rule being inlined into is out
/// of `rules` meanwhile).
struct Context<'a> {
    rules: &'a mut [Rule],
    recursive: &'a [bool],
    /// Per rule: whether it is never inlined ([`PassConfig::never_inlined`]).
    kept: &'a [bool],
    /// Per rule: whether it is spliced ([`is_spliced`]).
    spliced: &'a [bool],
    /// Per rule: whether it is a `\u` tail ([`is_escape_tail`]), as the grammar came in.
    tails: &'a [bool],
    /// Per rule: whether it stays a call ([`stays_call`]), as the grammar came in.
    stays: &'a [bool],
    /// Per rule: whether it is a state ([`is_state`]), as the grammar came in.
    states: &'a [bool],
    /// Per rule: whether it opens a loop of states ([`opens_loops`]).
    opens_loop: &'a [bool],
    /// Whether the rule being inlined into is a state.
    in_state: bool,
    /// References to each rule in the grammar (the root counted once more).
    refs: &'a [usize],
    /// References replaced by a body so far.
    inlined: usize,
    /// Nodes of the bodies of at most [`ALWAYS_INLINED_SIZE`] inlined past the budget.
    over: usize,
}

/// Replaces the references of `expr` to rules that are inlined by their bodies; whether
/// a body landed in `expr` (replaced it, or one of its items). Bodies are fused
/// ([`super::fuse_sequences`] runs before inlining), and so is each node a body lands in
/// ([`fuse_top`]): the result is fused. `at_end`: nothing of the rule follows `expr`.
fn substitute(
    expr: &mut Expr,
    ctx: &mut Context<'_>,
    sizes: &[usize],
    config: &PassConfig,
    budget: &mut usize,
    copies: usize,
    at_end: bool,
) -> bool {
    match expr {
        Expr::Rule(r) => {
            let i = r.index();
            let size = sizes[i];
            if at_end && ctx.in_state && ctx.states[i] && ctx.refs[i] > 1 && size > STATE_COPY_MAX {
                // A state where another ends: the automaton entering them reads both in
                // place, each once, where copies would hold every way through the rest.
                return false;
            }
            if ctx.opens_loop[i] && !ctx.in_state {
                // The first states of a loop of states, entered from a rule that is not
                // one: a call, whose automaton reads the whole loop in place.
                return false;
            }
            // What the copies of the body cost the caller: one per copy of the reference
            // a repetition around it makes.
            let cost = size.saturating_mul(copies);
            let callee = &mut ctx.rules[i];
            if !ctx.recursive[i]
                && !ctx.kept[i]
                && callee.lookahead.is_none()
                && !ctx.stays[i]
                && !ctx.tails[i]
                && size <= config.inline_max_rule_size
                && (cost <= *budget || size <= ALWAYS_INLINED_SIZE)
            {
                if cost <= *budget {
                    *budget -= cost;
                } else {
                    ctx.over = ctx.over.saturating_add(cost);
                }
                ctx.inlined = ctx.inlined.saturating_add(copies);
                if ctx.spliced[i] {
                    // The reference stays: automata read the body in its place.
                    return false;
                }
                *expr = if ctx.refs[i] == 1 {
                    std::mem::replace(&mut callee.body, Expr::Empty)
                } else {
                    callee.body.clone()
                };
                return true;
            }
            false
        }
        Expr::Seq(items) => {
            let last = items.len().saturating_sub(1);
            let mut landed = false;
            for (k, item) in items.iter_mut().enumerate() {
                landed |= substitute(item, ctx, sizes, config, budget, copies, at_end && k == last);
            }
            if landed {
                fuse_top(expr);
            }
            landed
        }
        Expr::Choice(items) => {
            let mut landed = false;
            for item in items {
                landed |= substitute(item, ctx, sizes, config, budget, copies, at_end);
            }
            if landed {
                // (It may become an item its parent must flatten: a sequence of one choice.)
                fuse_top(expr);
            }
            landed
        }
        Expr::Repeat { expr, min, max } => {
            let copies = copies.saturating_mul(grammask_syntax::ir::copies(*min, *max));
            substitute(expr, ctx, sizes, config, budget, copies, false);
            false
        }
        _ => false,
    }
}

/// A grammar's call graph: which rules each body refers to, in components.
pub(crate) struct CallGraph {
    /// The strongly connected components, callees first.
    pub(crate) components: Components,
    /// Per rule, the rules its body refers to (sorted, each once).
    pub(crate) callees: Vec<Vec<usize>>,
    /// Per rule, the references to it (bodies and lookaheads, each counted).
    pub(crate) refs: Vec<usize>,
    /// Per rule, whether every reference its body holds is in tail position (nothing of
    /// the body is read after it: [`Expr::for_each_rule_ref_at_end`]) or calls a `\u`
    /// tail ([`is_escape_tail`]).
    pub(crate) ends_only: Vec<bool>,
    /// Per rule, whether every reference to it from a body is in tail position.
    pub(crate) only_at_ends: Vec<bool>,
    /// Per rule, whether it is a `\u` tail ([`is_escape_tail`]).
    pub(crate) tails: Vec<bool>,
    /// Per rule, whether it stays a call ([`stays_call`]).
    pub(crate) stays: Vec<bool>,
}

impl CallGraph {
    /// The call graph of `grammar` (one walk of every rule).
    pub(crate) fn of(grammar: &Grammar) -> CallGraph {
        let n = grammar.rules.len();
        let mut refs = vec![0usize; n];
        let mut ends_only = vec![true; n];
        let mut only_at_ends = vec![true; n];
        let tails: Vec<bool> = grammar.rules.iter().map(is_escape_tail).collect();
        let stays: Vec<bool> = grammar.rules.iter().map(stays_call).collect();
        let mut callees: Vec<Vec<usize>> = Vec::with_capacity(n);
        // Each rule's references gathered in one buffer, kept at their exact size.
        let mut out = Vec::new();
        for (r, rule) in grammar.rules.iter().enumerate() {
            out.clear();
            rule.body.for_each_rule_ref_at_end(true, &mut |callee: RuleId, tail| {
                out.push(callee.index());
                // A `\u` tail is a call from the state after a backslash, wherever it
                // stands (as `automaton::right_linear` reads it).
                ends_only[r] &= tail || tails[callee.index()];
                only_at_ends[callee.index()] &= tail;
            });
            if let Some(la) = &rule.lookahead {
                la.for_each_rule_ref(&mut |callee: RuleId| refs[callee.index()] += 1);
            }
            out.iter().for_each(|&callee| refs[callee] += 1);
            out.sort_unstable();
            out.dedup();
            callees.push(out.clone());
        }
        let components = grammask_syntax::analysis::strongly_connected(&callees);
        CallGraph { components, callees, refs, ends_only, only_at_ends, tails, stays }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grammask_syntax::ir::GrammarBuilder;

    #[test]
    fn inlines_leaves_and_keeps_recursion() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let value = b.declare("value");
        let digit = b.declare("digit");
        b.define(digit, Expr::class(false, vec![('0', '9')]));
        b.define(
            value,
            Expr::choice(vec![
                Expr::Rule(digit),
                Expr::seq(vec![Expr::literal("["), Expr::Rule(value), Expr::literal("]")]),
            ]),
        );
        b.define(root, Expr::Rule(value));
        let g = inline_rules(b.finish(root).unwrap(), &PassConfig::default());
        assert_eq!(g.rules[0].body, Expr::Rule(value));
        assert!(
            matches!(&g.rules[1].body, Expr::Choice(alts) if matches!(alts[0], Expr::Class(_)))
        );
        assert_eq!(recursive_rules(&g), vec![false, true, false]);
    }

    /// A rule named in [`PassConfig::never_inlined`] stays a call, however small.
    #[test]
    fn rules_never_inlined_stay_calls() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let leaf = b.declare("leaf");
        b.define(leaf, Expr::seq(vec![Expr::literal("x"), Expr::class(false, vec![('0', '9')])]));
        b.define(root, Expr::seq(vec![Expr::literal("a"), Expr::star(Expr::Rule(leaf))]));
        let grammar = b.finish(root).unwrap();
        let calls = |g: &Grammar| {
            let mut refs = Vec::new();
            g.rules[root.index()].body.for_each_rule_ref(&mut |r| refs.push(r));
            refs
        };
        assert!(calls(&inline_rules(grammar.clone(), &PassConfig::default())).is_empty());
        let config = PassConfig { never_inlined: vec!["leaf".into()], ..PassConfig::default() };
        assert_eq!(calls(&inline_rules(grammar, &config)), vec![leaf]);
    }

    /// The first states of a complement (`not ::= "" | [^a] rest | "a" not-a`, before
    /// the loop `rest`) stay a call from a rule that is not a state, and are inlined
    /// into one that is.
    #[test]
    fn rules_opening_loops_of_states_stay_calls_from_other_rules() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let not = b.declare("not");
        let not_a = b.declare("not-a");
        let rest = b.declare("rest");
        let before = b.declare("before");
        let other = |except: char| {
            let below = char::from_u32(except as u32 - 1).unwrap();
            let above = char::from_u32(except as u32 + 1).unwrap();
            Expr::class(false, vec![(' ', below), (above, '~')])
        };
        b.define(
            rest,
            Expr::choice(vec![
                Expr::Empty,
                Expr::seq(vec![Expr::class(false, vec![(' ', '~')]), Expr::Rule(rest)]),
            ]),
        );
        b.define(
            not_a,
            Expr::choice(vec![Expr::seq(vec![other('b'), Expr::Rule(rest)]), Expr::literal("b")]),
        );
        b.define(
            not,
            Expr::choice(vec![
                Expr::Empty,
                Expr::seq(vec![other('a'), Expr::Rule(rest)]),
                Expr::seq(vec![Expr::literal("a"), Expr::Rule(not_a)]),
            ]),
        );
        // A state too: `not` is read in place there.
        b.define(before, Expr::seq(vec![Expr::literal("k"), Expr::Rule(not)]));
        b.define(
            root,
            Expr::seq(vec![
                Expr::literal("\""),
                Expr::Rule(not),
                Expr::literal("\""),
                Expr::Rule(before),
                Expr::literal("\""),
            ]),
        );
        let grammar = b.finish(root).unwrap();
        let calls = CallGraph::of(&grammar);
        let states: Vec<bool> =
            (0..grammar.rules.len()).map(|r| is_state(&grammar, &calls, r)).collect();
        let recursive = on_cycles(&calls.components, &calls.callees);
        let opens = opens_loops(&calls.components, &calls.callees, &states, &recursive);
        // `rest` is the loop, `before` opens it through `not`.
        assert_eq!(opens, vec![false, true, true, false, true]);
        let g = inline_rules(grammar, &PassConfig::default());
        let refs = |r: RuleId| {
            let mut refs = Vec::new();
            g.rules[r.index()].body.for_each_rule_ref(&mut |c| refs.push(c));
            refs
        };
        assert_eq!(refs(root), vec![not, before]);
        assert_eq!(refs(before), vec![rest, rest]);
    }

    #[test]
    fn escapes_stay_calls() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let esc = b.declare("esc");
        let calls = b.declare("calls");
        b.define(esc, Expr::seq(vec![Expr::literal("\\"), Expr::class(false, vec![('n', 'n')])]));
        // Starts with `\` but calls a rule: not an escape.
        b.define(calls, Expr::seq(vec![Expr::literal("\\"), Expr::Rule(esc)]));
        let item = Expr::choice(vec![Expr::literal("a"), Expr::Rule(esc), Expr::Rule(calls)]);
        b.define(root, Expr::seq(vec![item.clone(), item]));
        let g = inline_rules(b.finish(root).unwrap(), &PassConfig::default());
        assert!(is_escape(&g.rules[esc.index()]) && !is_escape(&g.rules[calls.index()]));
        let mut refs = Vec::new();
        g.rules[root.index()].body.for_each_rule_ref(&mut |r| refs.push(r));
        // Two calls of `esc` of its own, two inside the inlined copies of `calls`.
        assert_eq!(refs, vec![esc; 4]);
    }

    /// A body referred to inside a bounded repetition costs the caller one copy per count:
    /// it is inlined while its copies fit the caller's budget, and stays a call past it.
    #[test]
    fn copies_in_a_repetition_count_against_the_budget() {
        let inlined = |count: u32| {
            let mut b = GrammarBuilder::new();
            let root = b.declare("root");
            let item = b.declare("item");
            let words: Vec<Expr> = (0..20).map(|i| Expr::literal(&format!("w{i}"))).collect();
            b.define(item, Expr::choice(words));
            b.define(root, Expr::repeat(Expr::Rule(item), 0, Some(count)));
            let grammar = b.finish(root).unwrap();
            let size = grammar.rules[item.index()].body.weight();
            assert!(size == 21 && size > ALWAYS_INLINED_SIZE);
            let config = PassConfig { inline_max_caller_size: 100, ..PassConfig::default() };
            let g = inline_rules(grammar, &config);
            let mut refs = 0;
            g.rules[root.index()].body.for_each_rule_ref(&mut |_| refs += 1);
            refs == 0
        };
        // The caller (a repetition and a reference: weight 1 + count) has 100 - 1 - count
        // left for copies of 21 nodes each.
        assert!(inlined(4));
        assert!(!inlined(5));
    }

    /// Repetitions nested with huge counts saturate the weights: the body stays a call,
    /// and nothing overflows.
    #[test]
    fn huge_nested_counts_saturate() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let item = b.declare("item");
        let words: Vec<Expr> = (0..20).map(|i| Expr::literal(&format!("w{i}"))).collect();
        b.define(item, Expr::choice(words));
        let huge = |e: Expr| Expr::repeat(e, 0, Some(u32::MAX));
        let tiny = b.declare("tiny");
        b.define(tiny, Expr::literal("t"));
        let body =
            Expr::seq(vec![huge(huge(huge(Expr::Rule(item)))), huge(huge(Expr::Rule(tiny)))]);
        b.define(root, body);
        let g = inline_rules(b.finish(root).unwrap(), &PassConfig::default());
        let mut refs = Vec::new();
        g.rules[root.index()].body.for_each_rule_ref(&mut |r| refs.push(r));
        // `tiny` (at most ALWAYS_INLINED_SIZE) is inlined all the same.
        assert_eq!(refs, vec![item]);
    }

    /// The bounded count stops where [`Expr::size`] would pass the limit, and agrees with it.
    #[test]
    fn at_most_counts_like_size() {
        for n in 0..20 {
            let e =
                Expr::Seq((0..n).map(|i| Expr::optional(Expr::literal(&i.to_string()))).collect());
            for limit in 0..45 {
                assert_eq!(at_most(&e, limit), e.size() <= limit, "{n} items, limit {limit}");
            }
        }
    }

    /// Where the grammar's room is spent, small bodies (JSON whitespace) are inlined all
    /// the same, and larger ones stay calls.
    #[test]
    fn small_bodies_are_inlined_past_the_room() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let ws = b.declare("ws");
        let comma = b.declare("comma");
        let big = b.declare("big");
        b.define(
            ws,
            Expr::seq(vec![
                Expr::optional(Expr::literal("\n")),
                Expr::repeat(Expr::class(false, vec![(' ', ' ')]), 0, Some(3)),
            ]),
        );
        // Starts with a byte string: copied, not spliced.
        b.define(comma, Expr::seq(vec![Expr::literal(","), Expr::optional(Expr::literal(" "))]));
        let words: Vec<Expr> = (0..40).map(|i| Expr::literal(&format!("w{i}"))).collect();
        b.define(big, Expr::choice(words));
        let item = Expr::seq(vec![Expr::Rule(big), Expr::Rule(ws), Expr::Rule(comma)]);
        b.define(root, Expr::seq(vec![item.clone(), item]));
        let grammar = b.finish(root).unwrap();
        assert!(grammar.rules[ws.index()].body.size() <= ALWAYS_INLINED_SIZE);
        assert!(grammar.rules[comma.index()].body.size() <= ALWAYS_INLINED_SIZE);
        assert!(grammar.rules[big.index()].body.size() > ALWAYS_INLINED_SIZE);
        assert!(is_spliced(&grammar.rules, ws.index(), root));
        assert!(!is_spliced(&grammar.rules, comma.index(), root));
        assert!(!is_spliced(&grammar.rules, big.index(), root));
        let no_room = PassConfig { inline_max_total: 0, ..PassConfig::default() };
        let g = inline_rules(grammar, &no_room);
        // `big` stays a call, `ws` stays a reference that automata splice, `comma` is
        // copied past the room.
        let mut refs = Vec::new();
        g.rules[root.index()].body.for_each_rule_ref(&mut |r| refs.push(r));
        assert_eq!(refs, vec![big, ws, big, ws]);
    }

    /// States of an automaton written as rules, each reached from two earlier ones (as a
    /// format's product with a pattern writes them): copied where states end, they would
    /// hold every way through the rest, and the grammar would grow to its budget; kept
    /// as references there, each state is written once.
    #[test]
    fn states_are_not_copied_where_states_end() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let states: Vec<RuleId> = (0..40).map(|k| b.declare(&format!("s{k}"))).collect();
        for (k, &state) in states.iter().enumerate() {
            let mut alternatives = vec![Expr::Empty];
            for (byte, next) in [("a", k + 1), ("b", k + 2)] {
                if let Some(&next) = states.get(next) {
                    alternatives.push(Expr::seq(vec![Expr::literal(byte), Expr::Rule(next)]));
                }
            }
            b.define(state, Expr::choice(alternatives));
        }
        b.define(
            root,
            Expr::seq(vec![Expr::literal("\""), Expr::Rule(states[0]), Expr::literal("\"")]),
        );
        let grammar = b.finish(root).unwrap();
        let calls = CallGraph::of(&grammar);
        assert!(states[..39].iter().all(|s| is_state(&grammar, &calls, s.index())));
        let g = inline_rules(grammar, &PassConfig::default());
        let total: usize = g.rules.iter().map(|r| r.body.weight()).sum();
        assert!(total < 40 * 2 * STATE_COPY_MAX, "the grammar grew to {total}");
        // The root calls the first states kept (it holds the ones it moved in); the
        // states refer to the others where they end.
        let mut kept = 0;
        let calls = CallGraph::of(&g);
        for (r, rule) in g.rules.iter().enumerate().filter(|(_, r)| r.name != "root") {
            rule.body.for_each_rule_ref_at_end(true, &mut |callee, tail| {
                assert!(states.contains(&callee) && tail && is_state(&g, &calls, r));
                kept += 1;
            });
        }
        assert!(kept > 0);
    }
}
