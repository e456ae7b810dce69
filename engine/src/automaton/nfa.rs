//! Thompson construction: one rule body (after the passes, so byte-level only) to an NFA
//! whose edges read a byte range, call another rule, or read one whole token of a set.
//!
//! Cost: linear in the size of the expression with repetitions expanded, so `x{0,n}`
//! costs `n` copies of `x`. The builder counts states and stops at the configured limit.

use crate::ids::TokenSetId;
use grammask_syntax::ir::{Expr, RuleId};

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
}

/// Why an NFA could not be built.
#[derive(Debug)]
pub(crate) enum NfaError {
    /// More states than the limit allows.
    TooManyStates(usize),
    /// The body still holds a construct the passes should have removed.
    Unlowered(&'static str),
}

impl Nfa {
    /// Builds the NFA of `body`; `token_set` interns the token sets it meets.
    pub(crate) fn build(
        body: &Expr,
        max_states: usize,
        token_set: &mut dyn FnMut(&grammask_syntax::ir::TokenSet) -> TokenSetId,
    ) -> Result<Nfa, NfaError> {
        let mut b = Builder { states: 0, edges: Vec::new(), max_states, token_set };
        let start = b.state()?;
        let accept = b.state()?;
        b.expr(body, start, accept)?;
        // Edges grouped by source state, in the order they were added.
        let (offsets, list) = super::group_by_key(b.states as usize, &b.edges);
        Ok(Nfa { offsets, list, start, accept })
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
        // Predecessors by target: `off[t]..off[t + 1]` in `preds`.
        let pairs: Vec<(usize, NfaState)> = (0..n as NfaState)
            .flat_map(|s| self.edges(s).iter().map(move |e| (target(e), s)))
            .collect();
        let (off, preds) = super::group_by_key(n, &pairs);
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

struct Builder<'a> {
    states: u32,
    edges: Vec<(usize, Edge)>,
    max_states: usize,
    token_set: &'a mut dyn FnMut(&grammask_syntax::ir::TokenSet) -> TokenSetId,
}

impl Builder<'_> {
    fn state(&mut self) -> Result<NfaState, NfaError> {
        if self.states as usize >= self.max_states {
            return Err(NfaError::TooManyStates(self.max_states));
        }
        self.states += 1;
        Ok(self.states - 1)
    }

    fn edge(&mut self, from: NfaState, edge: Edge) {
        self.edges.push((from as usize, edge));
    }

    /// Adds states and edges so that paths from `from` to `to` spell `expr`.
    fn expr(&mut self, expr: &Expr, from: NfaState, to: NfaState) -> Result<(), NfaError> {
        match expr {
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
            Expr::Class(_) => return Err(NfaError::Unlowered("character class")),
            Expr::Seq(items) => {
                let mut cur = from;
                for (i, item) in items.iter().enumerate() {
                    let next = if i + 1 == items.len() { to } else { self.state()? };
                    self.expr(item, cur, next)?;
                    cur = next;
                }
                if items.is_empty() {
                    self.edge(from, Edge::Epsilon(to));
                }
            }
            Expr::Choice(alternatives) => {
                for alternative in alternatives {
                    self.expr(alternative, from, to)?;
                }
            }
            Expr::Rule(rule) => self.edge(from, Edge::Call { rule: *rule, to }),
            Expr::Tokens(set) => {
                let set = (self.token_set)(set);
                self.edge(from, Edge::Tokens { set, to });
            }
            Expr::Repeat { expr, min, max } => {
                let mut cur = from;
                for _ in 0..*min {
                    let next = self.state()?;
                    self.expr(expr, cur, next)?;
                    cur = next;
                }
                match max {
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
                    Some(max) => {
                        for _ in *min..*max {
                            let next = self.state()?;
                            self.edge(cur, Edge::Epsilon(to));
                            self.expr(expr, cur, next)?;
                            cur = next;
                        }
                        self.edge(cur, Edge::Epsilon(to));
                    }
                }
            }
        }
        Ok(())
    }
}
