//! Thompson construction: one rule body (after the passes) to an NFA whose edges read a
//! byte range, call another rule, or read one whole token of a set. Character classes
//! are read as their UTF-8 byte automata, lowered once per grammar ([`ClassTable`]).
//!
//! Cost: linear in the size of the expression with repetitions expanded, so `x{0,n}`
//! costs `n` copies of `x`. The builder counts states and stops at the configured limit.
//!
//! Equal suffixes share their states: sequences are built from their last item back,
//! and an item (past the first) equal to one already built into the same target state
//! reuses that item's entry state instead of new states. An item is looked up by a
//! structural hash kept per node before it is built, so a copy costs a comparison, not
//! states built and undone. Sub-automata are thereby shared where the rest of the rule is
//! the same (a member written once per way of reaching it in an object with optional
//! members, the tail after each of them), so subset construction meets each such suffix
//! once instead of once per copy. An unbounded repetition loops on a state of its own
//! (its entry, or its last mandatory copy's target), and an item built in place (a
//! sequence's first, an alternative) that equals one built into the same target steps
//! into that one's entry: `x ("," x)*` (every array and object of a schema) holds `x`
//! once.

use super::right_linear::RightLinear;
use super::{mix, SetHasher, TextBudget};
use crate::ids::TokenSetId;
use crate::passes::ClassTable;
use grammask_syntax::ir::{Expr, Rule, RuleId};
use grammask_syntax::text::TextTarget;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// An NFA state's index.
pub(crate) type NfaState = u32;

/// An edge of the NFA.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Edge {
    /// Moves without reading.
    Epsilon(NfaState),
    /// Reads one byte in `lo..=hi`.
    Bytes { lo: u8, hi: u8, to: NfaState },
    /// Matches the whole of `rule`, then continues at `to`.
    Call { rule: RuleId, to: NfaState },
    /// Reads one whole token of a set.
    Tokens { set: TokenSetId, to: NfaState },
}

/// A rule body as an NFA with one start and one accepting state. Edges are stored by
/// source state in one list (`offsets[s]..offsets[s + 1]`).
#[derive(Debug, Default)]
pub(crate) struct Nfa {
    offsets: Vec<u32>,
    list: Vec<Edge>,
    pub(crate) start: NfaState,
    pub(crate) accept: NfaState,
    /// Per state, where it stands in free text with a token budget; empty when the rule
    /// holds none.
    pub(crate) budget: Vec<Option<TextBudget>>,
}

/// Why an NFA could not be built.
#[derive(Debug)]
pub(crate) enum NfaError {
    /// More states than the limit allows.
    TooManyStates(usize),
    /// The body still holds a construct the passes should have removed.
    Unlowered(&'static str),
}

/// The rules whose references an automaton reads as their bodies (spliced rules).
#[derive(Clone, Copy)]
pub(crate) struct Splices<'e> {
    /// Per rule: whether it is spliced (empty: none is).
    pub(crate) spliced: &'e [bool],
    /// Every rule of the grammar, for the bodies.
    pub(crate) rules: &'e [Rule],
}

impl<'e> Splices<'e> {
    /// No rule is spliced.
    pub(crate) const NONE: Splices<'static> = Splices { spliced: &[], rules: &[] };

    /// The body read for a reference to `rule`, when it is spliced.
    #[inline]
    pub(crate) fn body(&self, rule: RuleId) -> Option<&'e Expr> {
        let r = rule.index();
        (self.spliced.get(r) == Some(&true)).then(|| &self.rules[r].body)
    }
}

/// The linear rules that an entry's automaton reads in place of its tail references to
/// them ([`super::right_linear`]).
#[derive(Clone, Copy)]
pub(crate) struct InPlace<'e> {
    /// The rule being built, an entry.
    pub(crate) rule: RuleId,
    /// The linear rules of the grammar.
    pub(crate) linear: &'e RightLinear,
    /// Every rule of the grammar, for the members' bodies.
    pub(crate) rules: &'e [Rule],
}

impl Nfa {
    /// Builds the NFA of `body`, whose classes are in `classes`; `token_set` gives the id
    /// of each token set it meets (`None`: not interned, an error). `spliced`: the rules
    /// whose references are spliced ([`crate::passes::is_spliced`]), their bodies read in
    /// their place: alone where the reference is alone, its items among the items of a
    /// sequence holding it. With
    /// `in_place`, a reference that ends the rule, to a linear rule, moves into that
    /// rule's body (built once, ending where the rule ends). `nodes`: the IR nodes of
    /// `body` ([`ClassTable::rule_nodes`]; 0 when not known), which sizes the builder's
    /// tables, so that a large rule's do not grow by doubling.
    pub(crate) fn build<'e>(
        body: &'e Expr,
        nodes: usize,
        classes: &'e ClassTable,
        spliced: Splices<'e>,
        in_place: Option<InPlace<'e>>,
        max_states: usize,
        token_set: &dyn Fn(&grammask_syntax::ir::TokenSet) -> Option<TokenSetId>,
    ) -> Result<Nfa, NfaError> {
        let mut b = Builder {
            in_place,
            members: Vec::new(),
            member_entries: HashMap::default(),
            accept: 0,
            states: 0,
            edges: Vec::new(),
            max_states,
            token_set,
            classes,
            spliced,
            built: HashMap::default(),
            keys: HashMap::default(),
            budgets: Vec::new(),
            texts: 0,
            representatives: HashMap::default(),
        };
        b.reserve(nodes);
        let start = b.state()?;
        let accept = b.state()?;
        b.accept = accept;
        if let Some(p) = in_place {
            b.members.push((p.rule, start));
            b.member_entries.insert(p.rule, start);
        }
        b.expr(body, start, accept)?;
        // The linear rules met, each built once (in a loop, not recursively: there may be
        // thousands); building one may meet more.
        let mut built = 1;
        while let (Some(p), Some(&(rule, entry))) = (in_place, b.members.get(built)) {
            built += 1;
            b.reserve(classes.rule_nodes(rule));
            b.build(&p.rules[rule.index()].body, entry, accept, true)?;
        }
        // Edges grouped by source state, in the order they were added.
        let (offsets, list) = super::group_by_key(b.states as usize, &b.edges);
        let mut budget = Vec::new();
        if !b.budgets.is_empty() {
            budget = vec![None; b.states as usize];
            for (range, tag) in b.budgets {
                for s in range {
                    budget[s as usize] = Some(tag);
                }
            }
        }
        Ok(Nfa { offsets, list, start, accept, budget })
    }

    /// Where a DFA state of `set` stands in budgeted free text: when every state of the
    /// set that reads something does, the two combined ([`TextBudget::and`]).
    pub(crate) fn budget_of(&self, set: &[NfaState]) -> Option<TextBudget> {
        if self.budget.is_empty() {
            return None;
        }
        let mut out: Option<TextBudget> = None;
        for &s in set {
            if self.edges(s).iter().all(|e| matches!(e, Edge::Epsilon(_))) {
                continue;
            }
            let tag = self.budget[s as usize]?;
            out = Some(out.map_or(tag, |o| o.and(tag)));
        }
        out
    }

    /// Number of states.
    pub(crate) fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The edges leaving `state`.
    #[inline]
    pub(crate) fn edges(&self, state: NfaState) -> &[Edge] {
        let s = state as usize;
        &self.list[self.offsets[s] as usize..self.offsets[s + 1] as usize]
    }

    /// Every edge.
    pub(crate) fn all_edges(&self) -> &[Edge] {
        &self.list
    }

    /// Per state: whether the accepting state can be reached from it (calls and token
    /// edges count as passable: every rule is checked to finish before automata are
    /// built).
    pub(crate) fn live(&self) -> Vec<bool> {
        let n = self.len();
        let target = |e: &Edge| match *e {
            Edge::Epsilon(to)
            | Edge::Bytes { to, .. }
            | Edge::Call { to, .. }
            | Edge::Tokens { to, .. } => to as usize,
        };
        // Predecessors by target, `off[t]..off[t + 1]` in `preds`: each target's count
        // summed into the end of its run, then each run filled from its end down.
        let mut off = vec![0u32; n + 1];
        for e in &self.list {
            off[target(e)] += 1;
        }
        let mut sum = 0;
        for o in off.iter_mut() {
            sum += *o;
            *o = sum;
        }
        let mut preds = vec![0 as NfaState; self.list.len()];
        for s in 0..n {
            for e in &self.list[self.offsets[s] as usize..self.offsets[s + 1] as usize] {
                let t = target(e);
                off[t] -= 1;
                preds[off[t] as usize] = s as NfaState;
            }
        }
        let mut live = vec![false; n];
        live[self.accept as usize] = true;
        let mut stack = vec![self.accept];
        while let Some(s) = stack.pop() {
            for &p in &preds[off[s as usize] as usize..off[s as usize + 1] as usize] {
                if !live[p as usize] {
                    live[p as usize] = true;
                    stack.push(p);
                }
            }
        }
        live
    }
}

/// Bodies of at least this many IR nodes have the builder's tables sized for them first
/// ([`Builder::reserve`]).
const RESERVED_FROM: usize = 256;

/// Where an item was built: its structural hash and target state.
type BuiltKey = (u64, NfaState);

/// An item built into a target from an entry state of its own.
#[derive(Clone, Copy)]
struct BuiltItem<'e> {
    item: &'e Expr,
    entry: NfaState,
    /// The states it took besides its entry.
    states: u32,
}

struct Builder<'a, 'e> {
    states: u32,
    /// Every edge with its source state, in the order added.
    edges: Vec<(NfaState, Edge)>,
    max_states: usize,
    token_set: &'a dyn Fn(&grammask_syntax::ir::TokenSet) -> Option<TokenSetId>,
    classes: &'e ClassTable,
    /// See [`Nfa::build`].
    spliced: Splices<'e>,
    /// Items built into a target from an entry state of their own.
    built: HashMap<BuiltKey, BuiltItem<'e>, BuildHasherDefault<SetHasher>>,
    /// The structural hash of each item met, by address ([`Builder::key`]).
    keys: HashMap<usize, u64, BuildHasherDefault<SetHasher>>,
    /// Ranges of states built for budgeted free text, with where they stand.
    budgets: Vec<(std::ops::Range<NfaState>, TextBudget)>,
    /// Free texts built so far (each one's region).
    texts: u32,
    /// See [`Nfa::build`].
    in_place: Option<InPlace<'e>>,
    /// The linear rules met so far, with their entry states, in the order met (so that
    /// an undo forgets the ones whose states it removes); [`Nfa::build`] builds their
    /// bodies after the rule's own.
    members: Vec<(RuleId, NfaState)>,
    /// The entry state of each member in `members`.
    member_entries: HashMap<RuleId, NfaState, BuildHasherDefault<SetHasher>>,
    /// The accepting state: an item built into it ends the rule.
    accept: NfaState,
    /// Items found equal to an earlier one, by address: that one's representative (see
    /// [`Builder::equal`]).
    representatives: HashMap<usize, &'e Expr, BuildHasherDefault<SetHasher>>,
}

impl<'e> Builder<'_, 'e> {
    /// Makes room for what building a body of `nodes` IR nodes adds, at about the rates
    /// MaskBench's rules show: an edge per node, a structural hash per two, a shared item
    /// per two. Small bodies start small (what most rules are, and what a compile of a
    /// small schema would otherwise allocate for nothing).
    fn reserve(&mut self, nodes: usize) {
        if nodes >= RESERVED_FROM {
            self.edges.reserve(nodes);
            self.keys.reserve(nodes / 2);
            self.built.reserve(nodes / 2);
        }
    }

    fn state(&mut self) -> Result<NfaState, NfaError> {
        if self.states as usize >= self.max_states {
            return Err(NfaError::TooManyStates(self.max_states));
        }
        self.states += 1;
        Ok(self.states - 1)
    }

    fn edge(&mut self, from: NfaState, edge: Edge) {
        self.edges.push((from, edge));
    }

    /// Builds `item` into `to` from an entry state of its own, or reuses the entry of an
    /// equal item built into `to` before.
    fn shared_item(&mut self, item: &'e Expr, to: NfaState) -> Result<NfaState, NfaError> {
        let item = self.resolve(item);
        let hash = self.key(item);
        let earlier = self.built.get(&(hash, to)).copied();
        if let Some(earlier) = earlier {
            if self.equal(earlier.item, item) {
                return Ok(earlier.entry);
            }
        }
        let entry = self.state()?;
        self.build(item, entry, to, true)?;
        if earlier.is_none() {
            let states = self.states - entry - 1;
            self.built.insert((hash, to), BuiltItem { item, entry, states });
        }
        Ok(entry)
    }

    /// Builds `item` from `from` (a state with edges of its own) into `to`; when an
    /// equal item of more than a few states was built into `to` from an entry of its
    /// own, `from` steps into that entry instead (the first item of `x ("," x)*`, whose
    /// loop built `x` into the same state).
    fn direct_item(
        &mut self,
        item: &'e Expr,
        from: NfaState,
        to: NfaState,
    ) -> Result<(), NfaError> {
        let item = self.resolve(item);
        let hash = self.key(item);
        if let Some(earlier) = self.built.get(&(hash, to)).copied() {
            if earlier.states > 2 && self.equal(earlier.item, item) {
                self.edge(from, Edge::Epsilon(earlier.entry));
                return Ok(());
            }
        }
        self.expr(item, from, to)
    }

    /// The structural hash of `expr` (equal items have equal ones), kept by address so
    /// that each node is hashed once; a spliced rule's reference hashes as its body.
    fn key(&mut self, expr: &'e Expr) -> u64 {
        let expr = self.resolve(expr);
        // A byte string's, a range list's or a call's hash costs less than looking it up:
        // only the others are kept.
        if let Some(hash) = leaf_key(expr) {
            return hash;
        }
        let address = expr as *const Expr as usize;
        if let Some(&hash) = self.keys.get(&address) {
            return hash;
        }
        let hash = match expr {
            Expr::Seq(items) => items.iter().fold(4, |h, i| mix(h, self.key(i))),
            Expr::Choice(alternatives) => alternatives.iter().fold(5, |h, a| mix(h, self.key(a))),
            Expr::Repeat { expr: inner, min, max } => {
                let inner = self.key(inner);
                mix(mix(mix(8, inner), u64::from(*min)), max.map_or(u64::MAX, u64::from))
            }
            Expr::Class(class) => match self.classes.get(class) {
                Some(lowered) => self.key(lowered),
                None => 11,
            },
            Expr::Tokens(set) => (self.token_set)(set).map_or(7, |id| mix(7, u64::from(id.0))),
            Expr::Text(text) => {
                let strings = text.avoid.iter().flat_map(|s| s.bytes().chain([0xFF]));
                let hash = strings.fold(9, |h, b| mix(h, u64::from(b)));
                let hash = mix(hash, text.until.map_or(u64::MAX, |i| i as u64));
                mix(hash, text.max_tokens.map_or(u64::MAX, u64::from))
            }
            // Hashed by `leaf_key` above.
            Expr::Empty | Expr::Bytes(_) | Expr::ByteRanges(_) | Expr::Rule(_) => 0,
        };
        self.keys.insert(address, hash);
        hash
    }

    /// Whether `earlier` and `item` are equal (as `==` says); when they are, `item` is
    /// remembered as equal to `earlier`'s representative.
    ///
    /// Items are compared before they are built, from the outermost in: one found equal
    /// is not built (its sub-items are never compared), and the sub-items of one that is
    /// built are compared as they are built. Comparing two items whose sub-items were
    /// found equal to the same representative stops there. Without it, copies of
    /// one subtree that inlining wrote in many places (the states of a pattern's product
    /// with a format or a length bound, each holding the rest of the product) would be
    /// compared again to their ends at each of their levels.
    fn equal(&mut self, earlier: &'e Expr, item: &'e Expr) -> bool {
        if !self.same(earlier, item) {
            return false;
        }
        let representative = self.representative(earlier);
        if !std::ptr::eq(representative, item) {
            self.representatives.insert(item as *const Expr as usize, representative);
        }
        true
    }

    /// The earlier item `item` was found equal to, else `item` itself.
    #[inline]
    fn representative(&self, item: &'e Expr) -> &'e Expr {
        self.representatives.get(&(item as *const Expr as usize)).copied().unwrap_or(item)
    }

    /// Whether `a` and `b` are equal (as `==` says), sequences, choices and repetitions
    /// found equal to one representative at once.
    fn same(&self, a: &'e Expr, b: &'e Expr) -> bool {
        #[cfg(test)]
        tests::COMPARED.with(|c| c.set(c.get() + 1));
        if std::ptr::eq(a, b) {
            return true;
        }
        match (a, b) {
            (Expr::Seq(x), Expr::Seq(y)) | (Expr::Choice(x), Expr::Choice(y)) => {
                std::ptr::eq(self.representative(a), self.representative(b))
                    || (x.len() == y.len() && x.iter().zip(y).all(|(p, q)| self.same(p, q)))
            }
            (
                Expr::Repeat { expr: x, min: x_min, max: x_max },
                Expr::Repeat { expr: y, min: y_min, max: y_max },
            ) => x_min == y_min && x_max == y_max && self.same(x, y),
            _ => a == b,
        }
    }

    /// The body of a spliced rule for a reference to it, else `expr` itself.
    #[inline]
    fn resolve(&self, expr: &'e Expr) -> &'e Expr {
        match expr {
            Expr::Rule(r) => self.spliced.body(*r).unwrap_or(expr),
            _ => expr,
        }
    }

    /// The entry state of linear rule `rule`'s body, built in place and ending where the
    /// rule being built ends: one for every reference to it.
    fn member_entry(&mut self, rule: RuleId) -> Result<NfaState, NfaError> {
        if let Some(&entry) = self.member_entries.get(&rule) {
            return Ok(entry);
        }
        let entry = self.state()?;
        self.members.push((rule, entry));
        self.member_entries.insert(rule, entry);
        Ok(entry)
    }

    /// Adds states and edges so that paths from `from` to `to` spell `expr`.
    fn expr(&mut self, expr: &'e Expr, from: NfaState, to: NfaState) -> Result<(), NfaError> {
        self.build(expr, from, to, false)
    }

    /// [`Builder::expr`]; `fresh`: `from` is an entry state of its own, with no edges
    /// yet, so an unbounded repetition may loop on it.
    fn build(
        &mut self,
        expr: &'e Expr,
        from: NfaState,
        to: NfaState,
        fresh: bool,
    ) -> Result<(), NfaError> {
        match self.resolve(expr) {
            Expr::Empty => self.edge(from, Edge::Epsilon(to)),
            Expr::Bytes(bytes) => {
                let mut cur = from;
                for (i, &byte) in bytes.iter().enumerate() {
                    let next = if i + 1 == bytes.len() { to } else { self.state()? };
                    self.edge(cur, Edge::Bytes { lo: byte, hi: byte, to: next });
                    cur = next;
                }
                if bytes.is_empty() {
                    self.edge(from, Edge::Epsilon(to));
                }
            }
            Expr::ByteRanges(ranges) => {
                for &(lo, hi) in ranges {
                    self.edge(from, Edge::Bytes { lo, hi, to });
                }
            }
            Expr::Class(class) => {
                let lowered =
                    self.classes.get(class).ok_or(NfaError::Unlowered("character class"))?;
                self.expr(lowered, from, to)?;
            }
            Expr::Seq(items) => {
                // The items of spliced bodies among the others (a fused sequence holds
                // no sequence: one met here is a spliced body).
                let spliced: SmallVec<[&'e Expr; 16]>;
                let items: &[&'e Expr] = {
                    let mut all = SmallVec::new();
                    for item in items {
                        match self.resolve(item) {
                            Expr::Seq(inner) => all.extend(inner.iter()),
                            _ => all.push(item),
                        }
                    }
                    spliced = all;
                    &spliced
                };
                // From the last item back: each item's target is already final, so equal
                // suffixes meet equal keys.
                let mut target = to;
                for (i, &item) in items.iter().enumerate().rev() {
                    if i == 0 {
                        self.direct_item(item, from, target)?;
                    } else {
                        target = self.shared_item(item, target)?;
                    }
                }
                if items.is_empty() {
                    self.edge(from, Edge::Epsilon(to));
                }
            }
            Expr::Choice(alternatives) => {
                for alternative in alternatives {
                    self.direct_item(alternative, from, to)?;
                }
            }
            Expr::Rule(rule) => match self.in_place {
                Some(p) if to == self.accept && p.linear.is_linear(*rule) => {
                    let entry = self.member_entry(*rule)?;
                    self.edge(from, Edge::Epsilon(entry));
                }
                _ => self.edge(from, Edge::Call { rule: *rule, to }),
            },
            Expr::Tokens(set) => {
                let id = (self.token_set)(set).ok_or(NfaError::Unlowered("token set"))?;
                self.edge(from, Edge::Tokens { set: id, to });
            }
            Expr::Text(text) => {
                let automaton = self.classes.text(text).ok_or(NfaError::Unlowered("free text"))?;
                // A state per automaton state; the start is fresh, so the loops back to it
                // stay inside the text.
                let mut ids: SmallVec<[NfaState; 32]> = SmallVec::new();
                for _ in &automaton.states {
                    ids.push(self.state()?);
                }
                let region = self.texts;
                self.texts += 1;
                let tag = |tokens, read: usize| TextBudget { tokens, read: read as u32, region };
                if let Some(n) = text.max_tokens {
                    for (state, &id) in automaton.states.iter().zip(&ids) {
                        self.budgets.push((id..id + 1, tag(n, state.read)));
                    }
                }
                self.edge(from, Edge::Epsilon(ids[0]));
                for (i, (state, &id)) in automaton.states.iter().zip(&ids).enumerate() {
                    if automaton.open && i < automaton.free {
                        self.edge(id, Edge::Epsilon(to));
                    }
                    for (class, target) in &state.edges {
                        let dest = match *target {
                            TextTarget::State(s) => ids[s],
                            TextTarget::End => to,
                        };
                        let lowered = self
                            .classes
                            .get(class)
                            .ok_or(NfaError::Unlowered("character class"))?;
                        // Equal classes into the same state share their multi-byte states.
                        let before = self.states;
                        let entry = self.shared_item(lowered, dest)?;
                        self.edge(id, Edge::Epsilon(entry));
                        if let Some(n) = text.max_tokens {
                            // Inside a character: as far into the end string as the
                            // character leads; before it (the entry), where it is read from.
                            let read = match *target {
                                TextTarget::State(s) => automaton.states[s].read,
                                TextTarget::End => state.read + 1,
                            };
                            self.budgets.push((before..self.states, tag(n, read)));
                            if entry >= before {
                                self.budgets.push((entry..entry + 1, tag(n, state.read)));
                            }
                        }
                    }
                }
            }
            Expr::Repeat { expr, min, max } => {
                let mut cur = from;
                for _ in 0..*min {
                    let next = self.state()?;
                    self.expr(expr, cur, next)?;
                    cur = next;
                }
                match max {
                    None if *min > 0 || fresh => {
                        // A loop on a state of the repetition's own (the last copy's
                        // target, or a fresh entry): what follows the loop meets the same
                        // target as the copies before it, and shares their states (the
                        // two `x` of `x ("," x)*` are one).
                        self.expr(expr, cur, cur)?;
                        self.edge(cur, Edge::Epsilon(to));
                    }
                    None => {
                        // A loop through a fresh state, so the loop cannot leak into `from`'s
                        // other edges.
                        let head = self.state()?;
                        self.edge(cur, Edge::Epsilon(head));
                        let tail = self.state()?;
                        self.expr(expr, head, tail)?;
                        self.edge(tail, Edge::Epsilon(head));
                        self.edge(head, Edge::Epsilon(to));
                    }
                    Some(max) if max > min => {
                        // Each optional copy may be the last; the last one reads into `to`
                        // itself (so an optional item's suffix is shared like any other).
                        for k in *min..*max {
                            self.edge(cur, Edge::Epsilon(to));
                            let next = if k + 1 == *max { to } else { self.state()? };
                            self.expr(expr, cur, next)?;
                            cur = next;
                        }
                    }
                    Some(_) => self.edge(cur, Edge::Epsilon(to)),
                }
            }
        }
        Ok(())
    }
}

/// The structural hash ([`Builder::key`]) of the empty string, a byte string, byte ranges
/// or a call; `None` for the other items.
fn leaf_key(expr: &Expr) -> Option<u64> {
    match expr {
        Expr::Empty => Some(1),
        Expr::Bytes(bytes) => Some(bytes.iter().fold(2, |h, &b| mix(h, u64::from(b)))),
        Expr::ByteRanges(ranges) => {
            Some(ranges.iter().fold(3, |h, &(lo, hi)| mix(h, u64::from(lo) << 8 | u64::from(hi))))
        }
        Expr::Rule(rule) => Some(mix(6, rule.index() as u64)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Nodes [`Builder::same`] visited on this thread.
        pub(super) static COMPARED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn build(e: &Expr) -> Nfa {
        Nfa::build(e, 0, &ClassTable::default(), Splices::NONE, None, 1_000, &|_| {
            Some(TokenSetId(0))
        })
        .unwrap()
    }

    /// Whether the NFA spells `text` (bytes and epsilons only).
    fn accepts(nfa: &Nfa, text: &[u8]) -> bool {
        let close = |mut set: Vec<NfaState>| {
            let mut i = 0;
            while i < set.len() {
                for e in nfa.edges(set[i]) {
                    if let Edge::Epsilon(to) = *e {
                        if !set.contains(&to) {
                            set.push(to);
                        }
                    }
                }
                i += 1;
            }
            set
        };
        let mut set = close(vec![nfa.start]);
        for &b in text {
            let next = set
                .iter()
                .flat_map(|&s| nfa.edges(s))
                .filter_map(|e| match *e {
                    Edge::Bytes { lo, hi, to } if (lo..=hi).contains(&b) => Some(to),
                    _ => None,
                })
                .collect();
            set = close(next);
        }
        set.contains(&nfa.accept)
    }

    fn lit(s: &str) -> Expr {
        Expr::literal(s)
    }

    #[test]
    fn equal_suffixes_share_states() {
        let x = lit("xyz");
        let shared = Expr::choice(vec![
            Expr::seq(vec![lit("a"), x.clone()]),
            Expr::seq(vec![lit("b"), x.clone()]),
        ]);
        let distinct = Expr::choice(vec![
            Expr::seq(vec![lit("a"), x.clone()]),
            Expr::seq(vec![lit("b"), lit("xyw")]),
        ]);
        // Start, accept, and one copy of `xyz` (entry and two inner states).
        assert_eq!(build(&shared).len(), 5);
        assert_eq!(build(&distinct).len(), 8);
        assert!(accepts(&build(&shared), b"bxyz") && !accepts(&build(&shared), b"bxyw"));
    }

    #[test]
    fn a_separated_list_holds_its_item_once() {
        let list = |first: &str, next: &str| {
            let items =
                Expr::seq(vec![lit(first), Expr::star(Expr::seq(vec![lit(","), lit(next)]))]);
            Expr::seq(vec![lit("["), Expr::repeat(items, 0, Some(1)), lit("]")])
        };
        // Start, accept, the entries of `]`, of the optional items and of the loop, and
        // one copy of `item` (its entry and three inner states): the first item steps
        // into the entry of the one the loop built.
        let shared = build(&list("item", "item"));
        assert_eq!(shared.len(), 9);
        assert_eq!(build(&list("item", "itex")).len(), 12);
        for (text, ok) in [
            (&b"[item]"[..], true),
            (b"[item,item,item]", true),
            (b"[]", true),
            (b"[,item]", false),
            (b"[item,]", false),
            (b"[itemitem]", false),
        ] {
            assert_eq!(accepts(&shared, text), ok, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn undone_copies_leave_no_shared_entry_behind() {
        // The second loop equals the first and is undone, with the entry its body
        // registered inside it; the third reuses the undone state numbers.
        let looped = |head: &str, a: &str, b: &str| {
            Expr::seq(vec![lit(head), Expr::star(Expr::seq(vec![lit(a), lit(b)]))])
        };
        let e =
            Expr::choice(vec![looped("a", "p", "q"), looped("b", "p", "q"), looped("c", "z", "q")]);
        let nfa = build(&e);
        let n = nfa.len() as NfaState;
        assert!(nfa.all_edges().iter().all(|e| match *e {
            Edge::Epsilon(to) | Edge::Bytes { to, .. } => to < n,
            _ => true,
        }));
        for (text, ok) in [
            (&b"a"[..], true),
            (b"apqpq", true),
            (b"bpq", true),
            (b"czqzq", true),
            (b"cpq", false),
            (b"azq", false),
            (b"czqp", false),
        ] {
            assert_eq!(accepts(&nfa, text), ok, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn copies_of_a_deep_chain_are_compared_once_per_level() {
        // `"" | "a" ("" | "a" (...))`, as inlining writes the states of a pattern's
        // product with a length bound, copied after each of many first bytes.
        fn chain(depth: usize) -> Expr {
            let mut e = Expr::Empty;
            for _ in 0..depth {
                e = Expr::Choice(vec![Expr::Empty, Expr::Seq(vec![lit("a"), e])]);
            }
            e
        }
        let (copies, depth) = (20, 200);
        let e = Expr::Choice(
            (0..copies)
                .map(|i| Expr::Seq(vec![lit(&format!("{}", i % 10)), chain(depth)]))
                .collect(),
        );
        COMPARED.with(|c| c.set(0));
        let nfa = build(&e);
        // Each copy's levels are compared once each, not each to the chain's end.
        let compared = COMPARED.with(|c| c.get());
        assert!(compared < 10 * copies * depth, "{compared} nodes compared");
        // The copies share one chain's states.
        assert!(nfa.len() < 3 * depth, "{} states", nfa.len());
        for (text, ok) in [(&b"7"[..], true), (b"3aaa", true), (b"0aaaa", true), (b"a", false)] {
            assert_eq!(accepts(&nfa, text), ok, "{}", String::from_utf8_lossy(text));
        }
        let long = [b"5".to_vec(), vec![b'a'; depth]].concat();
        assert!(accepts(&nfa, &long) && !accepts(&nfa, &[long.clone(), b"a".to_vec()].concat()));
    }
}
