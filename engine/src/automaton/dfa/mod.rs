//! A rule's deterministic automaton over byte classes, rule calls and token sets.
//!
//! The alphabet is split into byte equivalence classes (bytes that no edge of the rule
//! tells apart), so a state's byte transitions are one row indexed by class. Rows are
//! stored from their first to their last class with a target, back to back: most states
//! of a JSON Schema's rule read one byte of a literal or a few, and a full row of the
//! rule's tens of classes for each would make the tables several times larger (what a
//! kept grammar holds, and what a compile writes). Calls and token-set edges are symbols
//! of their own: a DFA state calls each rule at most once, continuing at one state; each
//! kind is stored flat with an offset per state.
//!
//! The state sets hold only NFA states from which the accepting state can be reached, so
//! every DFA state can still finish its rule (the start state aside, when the rule cannot
//! finish at all): the mask never allows a token that leads into a dead end.
//!
//! Minimization, when asked for ([`crate::CompilerConfig::minimize`]), is Hopcroft's
//! partition refinement (states with the same acceptance, the same call and token-set
//! symbols, and transitions into the same blocks merge), for automata of up to 256 states.
//!
//! - `construct`: subset construction from the NFA.
//! - `minimize`: Hopcroft's partition refinement.

mod construct;
mod minimize;
#[cfg(test)]
mod tests;

use super::nfa::Nfa;
use crate::deadline::Deadline;
use crate::ids::{StateId, TokenSetId};
use grammask_syntax::ir::RuleId;

use construct::determinize;
/// No transition.
pub(crate) const DEAD: u32 = u32::MAX;

/// Automata with more states than this are not minimized (see [`Dfa::from_nfa`]).
const MINIMIZE_MAX_STATES: usize = 256;

/// A state's byte transitions: `targets[at..at + len]` are those of the classes
/// `lo..lo + len`, from the first class with a target to the last (`DEAD` between them
/// where there is none); the other classes have none.
#[derive(Clone, Copy, Debug, Default)]
struct Row {
    at: u32,
    lo: u16,
    len: u16,
}

/// Byte-class targets per state that [`Dfa::reserve`] makes room for: rows are trimmed of
/// dead classes at both ends, and a state inside a string spans nearly every class.
const TARGETS_PER_STATE: usize = 12;

/// A deterministic automaton for one rule.
#[derive(Clone, Debug)]
pub struct Dfa {
    class_of: [u8; 256],
    /// Per class: its first byte (classes are runs of consecutive bytes, in byte order).
    class_start: [u8; 256],
    n_classes: usize,
    /// Per state: its byte transitions in `targets`.
    rows: Vec<Row>,
    targets: Vec<u32>,
    accepting: Vec<bool>,
    /// Per state `s`: its calls are `calls[call_at[s]..call_at[s + 1]]`.
    call_at: Vec<u32>,
    calls: Vec<(RuleId, StateId)>,
    /// Per state `s`: its token-set edges are `tokens[token_at[s]..token_at[s + 1]]`.
    token_at: Vec<u32>,
    tokens: Vec<(TokenSetId, StateId)>,
    /// Per state: whether it reads a byte or a token (filled by [`Dfa::from_nfa`]).
    reads_input: Vec<bool>,
    /// Per state, where it stands in budgeted free text; empty when the rule holds none.
    budget: Vec<Option<super::TextBudget>>,
    start: StateId,
    /// Per safe JSON-string character form, per byte range, one byte of each class it
    /// meets ([`crate::mask_cache`]), computed on first use.
    pub(crate) safe_reps: std::sync::OnceLock<crate::mask_cache::ClassReps>,
}

/// Why a DFA could not be built.
#[derive(Debug)]
pub(crate) enum DfaError {
    /// More states than the limit allows.
    TooManyStates,
    /// The compile time budget is spent.
    Timeout,
    /// Subset construction went past its work budget (NFA states summed over the
    /// subsets built).
    TooMuchWork,
}

impl Dfa {
    /// The start state.
    #[inline]
    pub fn start(&self) -> StateId {
        self.start
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.accepting.len()
    }

    /// Whether the automaton has no state (never: a built DFA has its start state).
    pub fn is_empty(&self) -> bool {
        self.accepting.is_empty()
    }

    /// An automaton without states, over these byte classes.
    fn empty(class_of: [u8; 256], n_classes: usize) -> Dfa {
        let mut class_start = [0u8; 256];
        for b in (0..256).rev() {
            class_start[class_of[b] as usize] = b as u8;
        }
        Dfa {
            class_of,
            class_start,
            n_classes,
            rows: Vec::new(),
            targets: Vec::new(),
            accepting: Vec::new(),
            call_at: vec![0],
            calls: Vec::new(),
            token_at: vec![0],
            tokens: Vec::new(),
            reads_input: Vec::new(),
            budget: Vec::new(),
            start: StateId(0),
            safe_reps: Default::default(),
        }
    }

    /// The automaton of a rule no state calls (see the compiler): one accepting state
    /// that reads nothing, the empty string's.
    pub(crate) fn unreached() -> Dfa {
        let mut dfa = Dfa::empty([0; 256], 1);
        dfa.push_state(0, &[], true, [], []);
        dfa.reads_input = vec![false];
        dfa
    }

    /// Adds a state: the targets of its byte classes from `lo` on (the first and the
    /// last of them not `DEAD`, or none), whether the rule may end there, its calls and
    /// its token-set edges.
    fn push_state(
        &mut self,
        lo: usize,
        targets: &[u32],
        accepting: bool,
        calls: impl IntoIterator<Item = (RuleId, StateId)>,
        tokens: impl IntoIterator<Item = (TokenSetId, StateId)>,
    ) {
        debug_assert!(lo + targets.len() <= self.n_classes);
        debug_assert!(targets.first().is_none_or(|&t| t != DEAD));
        debug_assert!(targets.last().is_none_or(|&t| t != DEAD));
        let at = self.targets.len() as u32;
        let lo = if targets.is_empty() { 0 } else { lo as u16 };
        self.rows.push(Row { at, lo, len: targets.len() as u16 });
        self.targets.extend_from_slice(targets);
        self.accepting.push(accepting);
        self.calls.extend(calls);
        self.call_at.push(self.calls.len() as u32);
        self.tokens.extend(tokens);
        self.token_at.push(self.tokens.len() as u32);
    }

    /// [`Dfa::push_state`] with the target of every byte class.
    fn push_dense(
        &mut self,
        row: &[u32],
        accepting: bool,
        calls: impl IntoIterator<Item = (RuleId, StateId)>,
        tokens: impl IntoIterator<Item = (TokenSetId, StateId)>,
    ) {
        let lo = row.iter().position(|&t| t != DEAD).unwrap_or(row.len());
        let hi = row.iter().rposition(|&t| t != DEAD).map_or(lo, |hi| hi + 1);
        self.push_state(lo, &row[lo..hi], accepting, calls, tokens);
    }

    /// Reserves room for about `states` more states, with as many targets per state as
    /// subset construction's states over JSON grammars hold on average.
    fn reserve(&mut self, states: usize) {
        self.rows.reserve(states);
        self.targets.reserve(states * TARGETS_PER_STATE);
        self.accepting.reserve(states);
        self.call_at.reserve(states);
        self.token_at.reserve(states);
    }

    /// Returns the spare capacity of the tables (what a kept grammar would hold for
    /// nothing).
    fn shrink(&mut self) {
        self.rows.shrink_to_fit();
        self.targets.shrink_to_fit();
        self.accepting.shrink_to_fit();
        self.call_at.shrink_to_fit();
        self.calls.shrink_to_fit();
        self.token_at.shrink_to_fit();
        self.tokens.shrink_to_fit();
    }

    /// The first class of `state`'s row and the row's targets from there.
    #[inline]
    fn row(&self, state: usize) -> (usize, &[u32]) {
        let row = self.rows[state];
        (row.lo as usize, &self.targets[row.at as usize..][..row.len as usize])
    }

    /// The target of `state` on byte class `class` (`DEAD`: none).
    #[inline]
    fn class_target(&self, state: usize, class: usize) -> u32 {
        let (lo, targets) = self.row(state);
        targets.get(class.wrapping_sub(lo)).copied().unwrap_or(DEAD)
    }

    /// The target of `state` per byte class, into `out`.
    fn dense_row(&self, state: usize, out: &mut Vec<u32>) {
        out.clear();
        out.resize(self.n_classes, DEAD);
        let (lo, targets) = self.row(state);
        out[lo..lo + targets.len()].copy_from_slice(targets);
    }

    /// The state after reading `byte` in `state`.
    #[inline]
    pub fn next(&self, state: StateId, byte: u8) -> Option<StateId> {
        let class = self.class_of[byte as usize] as usize;
        let row = self.rows[state.index()];
        let i = class.wrapping_sub(row.lo as usize);
        if i < row.len as usize {
            let t = self.targets[row.at as usize + i];
            (t != DEAD).then_some(StateId(t))
        } else {
            None
        }
    }

    /// The targets of `state`'s byte transitions, one per byte class (a target may come
    /// several times).
    #[inline]
    pub(crate) fn byte_targets(&self, state: StateId) -> impl Iterator<Item = StateId> + '_ {
        self.row(state.index()).1.iter().filter(|&&t| t != DEAD).map(|&t| StateId(t))
    }

    /// The targets of `state` per byte class, from class `lo` on (`DEAD`: none): the
    /// first of the pair is `lo`.
    #[inline]
    pub(crate) fn class_row(&self, state: StateId) -> (usize, &[u32]) {
        self.row(state.index())
    }

    /// The byte class of `byte` (bytes of one class have the same transitions in every
    /// state).
    #[inline]
    pub(crate) fn byte_class(&self, byte: u8) -> u8 {
        self.class_of[byte as usize]
    }

    /// Whether the rule may end in `state`.
    #[inline]
    pub fn is_accepting(&self, state: StateId) -> bool {
        self.accepting[state.index()]
    }

    /// Whether `state` can only end the rule: accepting, reading nothing and calling
    /// nothing. A call that returns there is a tail call ([`crate::matcher`] pushes no
    /// return position for it).
    #[inline]
    pub fn only_ends(&self, state: StateId) -> bool {
        self.accepting[state.index()]
            && !self.reads_input[state.index()]
            && self.calls(state).is_empty()
    }

    /// The rules `state` may call, each with the state to continue at.
    #[inline]
    pub fn calls(&self, state: StateId) -> &[(RuleId, StateId)] {
        let s = state.index();
        &self.calls[self.call_at[s] as usize..self.call_at[s + 1] as usize]
    }

    /// The token sets `state` may read, each with the state to continue at.
    #[inline]
    pub fn token_edges(&self, state: StateId) -> &[(TokenSetId, StateId)] {
        let s = state.index();
        &self.tokens[self.token_at[s] as usize..self.token_at[s + 1] as usize]
    }

    /// Whether `state` reads a byte or a token.
    #[inline]
    pub fn reads_input(&self, state: StateId) -> bool {
        self.reads_input[state.index()]
    }

    /// Whether `state` reads any byte.
    pub fn has_byte_edges(&self, state: StateId) -> bool {
        self.rows[state.index()].len > 0
    }

    /// Bytes readable in `state`, as a 256-bit set.
    pub fn byte_set(&self, state: StateId) -> [u64; 4] {
        let mut set = [0u64; 4];
        if !self.has_byte_edges(state) {
            return set;
        }
        // Classes are runs of consecutive bytes numbered in byte order: each run of
        // classes with a target is one run of bytes.
        let (lo, targets) = self.row(state.index());
        let byte_at = |class: usize| {
            if class < self.n_classes {
                self.class_start[class] as usize
            } else {
                256
            }
        };
        let mut i = 0;
        while i < targets.len() {
            if targets[i] == DEAD {
                i += 1;
                continue;
            }
            let from = i;
            while i < targets.len() && targets[i] != DEAD {
                i += 1;
            }
            let (a, b) = (byte_at(lo + from), byte_at(lo + i));
            for (w, word) in set.iter_mut().enumerate() {
                let (wa, wb) = (a.clamp(w * 64, w * 64 + 64), b.clamp(w * 64, w * 64 + 64));
                if wa < wb {
                    let ones = if wb - wa == 64 { u64::MAX } else { (1u64 << (wb - wa)) - 1 };
                    *word |= ones << (wa - w * 64);
                }
            }
        }
        set
    }

    /// Where state `s` stands in free text with a token budget, if it does.
    #[inline]
    pub fn text_budget(&self, s: StateId) -> Option<super::TextBudget> {
        self.budget.get(s.0 as usize).copied().flatten()
    }

    /// Whether some state stands in free text with a token budget.
    pub fn has_text_budget(&self) -> bool {
        !self.budget.is_empty()
    }

    /// Heap bytes used.
    pub fn memory(&self) -> usize {
        self.rows.len() * std::mem::size_of::<Row>()
            + self.targets.len() * 4
            + self.accepting.len() * 2
            + (self.call_at.len() + self.token_at.len()) * 4
            + (self.calls.len() + self.tokens.len()) * 8
    }

    /// Appends the automaton to a serialization buffer.
    pub(crate) fn write(&self, w: &mut crate::serialize::Writer) {
        w.bytes.extend_from_slice(&self.class_of);
        w.len(self.n_classes);
        w.len(self.len());
        w.u32(self.start.0);
        for s in 0..self.len() {
            (0..self.n_classes).for_each(|c| w.u32(self.class_target(s, c)));
        }
        for s in 0..self.len() {
            w.u8(self.accepting[s] as u8 | (self.reads_input[s] as u8) << 1);
            let calls = self.calls(StateId::new(s));
            w.len(calls.len());
            for &(rule, t) in calls {
                w.u32(rule.index() as u32);
                w.u32(t.0);
            }
            let tokens = self.token_edges(StateId::new(s));
            w.len(tokens.len());
            for &(set, t) in tokens {
                w.u32(set.0);
                w.u32(t.0);
            }
        }
        w.len(self.budget.len());
        for b in &self.budget {
            let t = b.unwrap_or(super::TextBudget { tokens: 0, read: 0, region: 0 });
            w.u8(b.is_some() as u8);
            w.u32(t.tokens);
            w.u32(t.read);
            w.u32(t.region);
        }
    }

    /// Reads an automaton written by [`Dfa::write`], checking every index.
    pub(crate) fn read(
        r: &mut crate::serialize::Reader<'_>,
        n_rules: usize,
        n_token_sets: usize,
    ) -> Result<Dfa, crate::serialize::LoadError> {
        let mut class_of = [0u8; 256];
        for c in class_of.iter_mut() {
            *c = r.u8()?;
        }
        let n_classes = r.len(0)?;
        // Classes are runs of consecutive bytes, numbered from 0 in byte order.
        let runs = class_of[0] == 0 && class_of.windows(2).all(|w| w[1].wrapping_sub(w[0]) <= 1);
        if n_classes == 0 || !runs || class_of[255] as usize + 1 != n_classes {
            return Err(format!("bad byte classes ({n_classes})"));
        }
        let n = r.len(n_classes * 4)?;
        if n == 0 {
            return Err("automaton without states".into());
        }
        let start = r.u32()?;
        let check = |t: u32| -> Result<StateId, crate::serialize::LoadError> {
            if (t as usize) < n {
                Ok(StateId(t))
            } else {
                Err(format!("state {t} out of range ({n} states)"))
            }
        };
        let start = check(start)?;
        let mut trans = Vec::with_capacity(n * n_classes);
        for _ in 0..n * n_classes {
            let t = r.u32()?;
            trans.push(if t == DEAD { DEAD } else { check(t)?.0 });
        }
        let mut dfa = Dfa::empty(class_of, n_classes);
        dfa.start = start;
        let mut calls: Vec<(RuleId, StateId)> = Vec::new();
        let mut tokens: Vec<(TokenSetId, StateId)> = Vec::new();
        for row in trans.chunks_exact(n_classes) {
            let flags = r.u8()?;
            dfa.reads_input.push(flags & 2 != 0);
            calls.clear();
            for _ in 0..r.len(8)? {
                let rule = r.u32()? as usize;
                if rule >= n_rules {
                    return Err(format!("call of rule {rule} out of range"));
                }
                calls.push((RuleId::new(rule), check(r.u32()?)?));
            }
            tokens.clear();
            for _ in 0..r.len(8)? {
                let set = r.u32()?;
                if set as usize >= n_token_sets {
                    return Err(format!("token set {set} out of range"));
                }
                tokens.push((TokenSetId(set), check(r.u32()?)?));
            }
            dfa.push_dense(row, flags & 1 != 0, calls.iter().copied(), tokens.iter().copied());
        }
        let budgets = r.len(13)?;
        if budgets != 0 && budgets != n {
            return Err(format!("{budgets} budget entries for {n} states"));
        }
        for _ in 0..budgets {
            let (some, tokens, read, region) = (r.u8()?, r.u32()?, r.u32()?, r.u32()?);
            dfa.budget.push(match some {
                0 => None,
                1 => Some(super::TextBudget { tokens, read, region }),
                k => return Err(format!("bad budget flag {k}")),
            });
        }
        dfa.shrink();
        Ok(dfa)
    }

    /// Determinizes `nfa`, and minimizes the result when `minimize` says so.
    /// The `deadline` is checked every 256 states of subset construction and every 4,096
    /// splitters of minimization.
    pub(crate) fn from_nfa(
        nfa: &Nfa,
        max_states: usize,
        max_work: usize,
        minimize: bool,
        deadline: &Deadline,
    ) -> Result<Dfa, DfaError> {
        let raw = determinize(nfa, max_states, max_work, deadline)?;
        // Refinement keeps a predecessor table and a work list per (block, symbol), which
        // grow with states times symbols: past the threshold the automaton is kept as it
        // is. Large automata come near-minimal out of determinization: their NFA shares
        // equal suffixes ([`super::nfa`]), and what is left is mostly chains (bounded
        // repetitions, literals) with nothing to merge.
        // Minimization does not tell budgeted states apart: a rule holding budgeted free
        // text keeps its states as they are.
        let mut dfa = if minimize && raw.len() <= MINIMIZE_MAX_STATES && raw.budget.is_empty() {
            minimize::minimize(raw, deadline)?
        } else {
            raw
        };
        dfa.reads_input = (0..dfa.len())
            .map(|s| {
                let s = StateId::new(s);
                dfa.has_byte_edges(s) || !dfa.token_edges(s).is_empty()
            })
            .collect();
        dfa.shrink();
        Ok(dfa)
    }
}
