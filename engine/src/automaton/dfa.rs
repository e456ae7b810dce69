//! Subset construction and minimization: a rule's NFA to a DFA over byte classes, rule
//! calls and token sets.
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

use super::nfa::{Edge, Nfa, NfaState};
use super::SetHasher;
use crate::deadline::Deadline;
use crate::ids::{StateId, TokenSetId};
use grammask_syntax::ir::RuleId;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

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
    /// meets ([`crate::slices`]), computed on first use.
    pub(crate) safe_reps: std::sync::OnceLock<crate::slices::ClassReps>,
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

    /// Reserves room for about `states` more states.
    fn reserve(&mut self, states: usize) {
        self.rows.reserve(states);
        self.targets.reserve(states * 2);
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
            self::minimize(raw, deadline)?
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

/// Byte classes of an NFA: bytes no edge distinguishes share a class. Each class is a run
/// of consecutive bytes, numbered from 0 in byte order.
fn byte_classes(nfa: &Nfa) -> ([u8; 256], usize) {
    let mut boundary = [false; 257];
    boundary[0] = true;
    for e in nfa.all_edges() {
        if let Edge::Bytes { lo, hi, .. } = *e {
            boundary[lo as usize] = true;
            boundary[hi as usize + 1] = true;
        }
    }
    let mut class_of = [0u8; 256];
    let mut class: usize = 0;
    for b in 0..256 {
        if b > 0 && boundary[b] {
            class += 1;
        }
        class_of[b] = class as u8;
    }
    (class_of, class + 1)
}

/// Scratch space of [`epsilon_closure`], reused across calls.
struct ClosureScratch {
    seen: Vec<bool>,
    stack: Vec<NfaState>,
}

fn epsilon_closure(nfa: &Nfa, set: &mut Vec<NfaState>, scratch: &mut ClosureScratch) {
    let ClosureScratch { seen, stack } = scratch;
    stack.clear();
    stack.extend_from_slice(set);
    for &s in set.iter() {
        seen[s as usize] = true;
    }
    while let Some(s) = stack.pop() {
        for e in nfa.edges(s) {
            if let Edge::Epsilon(t) = *e {
                if !seen[t as usize] {
                    seen[t as usize] = true;
                    set.push(t);
                    stack.push(t);
                }
            }
        }
    }
    for &s in set.iter() {
        seen[s as usize] = false;
    }
    set.sort_unstable();
    set.dedup();
}

/// The NFA state sets of subset construction, interned: every set in one arena, found
/// by hash, so building a DFA state allocates nothing of its own. Sets of one state
/// (most of them: literals, chains of a bounded repetition) are found by that state.
struct SetTable {
    data: Vec<NfaState>,
    spans: Vec<(u32, u32)>,
    by_hash: HashMap<u64, SmallVec<[u32; 1]>, BuildHasherDefault<SetHasher>>,
    /// Per NFA state `s`: the index of the set `{s}`, `DEAD` when it is not in the table.
    single: Vec<u32>,
}

impl SetTable {
    fn get(&self, i: usize) -> &[NfaState] {
        let (off, len) = self.spans[i];
        &self.data[off as usize..][..len as usize]
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    /// The index of `set` when it is in the table.
    fn find(&self, hash: u64, set: &[NfaState]) -> Option<u32> {
        if let &[s] = set {
            return Some(self.single[s as usize]).filter(|&i| i != DEAD);
        }
        self.by_hash.get(&hash)?.iter().copied().find(|&i| self.get(i as usize) == set)
    }

    /// Adds `set` (not in the table) under `hash`; returns its index.
    fn push(&mut self, hash: u64, set: &[NfaState]) -> u32 {
        let i = self.spans.len() as u32;
        self.spans.push((self.data.len() as u32, set.len() as u32));
        self.data.extend_from_slice(set);
        if let &[s] = set {
            self.single[s as usize] = i;
        } else {
            self.by_hash.entry(hash).or_default().push(i);
        }
        i
    }

    /// The index of `set` (sorted, deduplicated), added when new; `work` counts the NFA
    /// states of the sets added.
    fn intern(
        &mut self,
        set: &[NfaState],
        max_states: usize,
        max_work: usize,
        work: &mut usize,
    ) -> Result<u32, DfaError> {
        let hash = set_hash(set);
        if let Some(i) = self.find(hash, set) {
            return Ok(i);
        }
        if self.spans.len() >= max_states {
            return Err(DfaError::TooManyStates);
        }
        *work += set.len();
        if *work > max_work {
            return Err(DfaError::TooMuchWork);
        }
        Ok(self.push(hash, set))
    }
}

fn set_hash(set: &[NfaState]) -> u64 {
    let mut h = SetHasher(0);
    set.iter().for_each(|&x| h.write_u32(x));
    h.finish()
}

/// Subset construction's state sets and what turns a set of NFA states stepped to into
/// a DFA state: closure, live-state filter, interning under the budgets. Each set stepped
/// to (before its closure) is resolved once across the whole construction: states that
/// read the same bytes into the same places (a run of blanks before the same value, a
/// string's characters) close and look it up once.
struct Subsets<'a> {
    nfa: &'a Nfa,
    /// Per NFA state: whether it can reach the accepting state.
    live: Vec<bool>,
    scratch: ClosureScratch,
    /// The DFA states' sets.
    table: SetTable,
    /// The sets stepped to, and the DFA state each became (`state`, by index).
    stepped: SetTable,
    state: Vec<u32>,
    max_states: usize,
    max_work: usize,
    work: usize,
}

impl Subsets<'_> {
    /// The DFA state of the closure of `target` (its live states), added when new.
    fn close(&mut self, target: &mut Vec<NfaState>) -> Result<u32, DfaError> {
        epsilon_closure(self.nfa, target, &mut self.scratch);
        target.retain(|&s| self.live[s as usize]);
        self.table.intern(target, self.max_states, self.max_work, &mut self.work)
    }

    /// The DFA state of the pre-closure set `target` (sorted, deduplicated).
    fn resolve(&mut self, target: &mut Vec<NfaState>) -> Result<u32, DfaError> {
        let hash = set_hash(target);
        if let Some(i) = self.stepped.find(hash, target) {
            return Ok(self.state[i as usize]);
        }
        self.stepped.push(hash, target);
        let t = self.close(target)?;
        self.state.push(t);
        Ok(t)
    }
}

fn determinize(
    nfa: &Nfa,
    max_states: usize,
    max_work: usize,
    deadline: &Deadline,
) -> Result<Dfa, DfaError> {
    let (class_of, n_classes) = byte_classes(nfa);
    let empty = || SetTable {
        data: Vec::new(),
        spans: Vec::new(),
        by_hash: HashMap::default(),
        single: vec![DEAD; nfa.len()],
    };
    // Sets keep only live NFA states (the others never reach the end of the rule), so
    // every DFA state but perhaps the start can finish the rule: no trimming after.
    let mut subsets = Subsets {
        nfa,
        live: nfa.live(),
        scratch: ClosureScratch { seen: vec![false; nfa.len()], stack: Vec::new() },
        table: empty(),
        stepped: empty(),
        state: Vec::new(),
        max_states,
        max_work,
        work: 0,
    };
    let mut target = vec![nfa.start];
    subsets.close(&mut target)?;

    let mut dfa = Dfa::empty(class_of, n_classes);
    // Subset construction of these grammars yields about one state per NFA state.
    dfa.reserve(nfa.len().min(max_states));
    // The state being expanded: its target per class (`DEAD` outside `written`, the
    // classes written so far).
    let mut row: Vec<u32> = vec![DEAD; n_classes];
    let mut written = (usize::MAX, 0usize);
    // Reused per state: the set being expanded, its byte edges as class ranges, the
    // class points where the set of targets changes, and its call and token edges.
    let mut set: Vec<NfaState> = Vec::new();
    let mut ranges: Vec<(u8, u8, NfaState)> = Vec::new();
    let mut points: Vec<u16> = Vec::new();
    let mut covered: Vec<NfaState> = Vec::new();
    let mut starts: Vec<u32> = Vec::new();
    let mut cursor: Vec<u32> = Vec::new();
    let mut seg_at = [0u16; 257];
    let mut symbols: Vec<(u8, u32, NfaState)> = Vec::new();
    // Per state: the targets (before closure) of the segments already resolved.
    let mut seen_targets: Vec<(Vec<NfaState>, u32)> = Vec::new();
    let mut i = 0;
    while i < subsets.table.len() {
        if i % 256 == 255 && deadline.exceeded() {
            return Err(DfaError::Timeout);
        }
        set.clear();
        set.extend_from_slice(subsets.table.get(i));
        if !nfa.budget.is_empty() {
            dfa.budget.push(nfa.budget_of(&set));
        }
        ranges.clear();
        symbols.clear();
        for &s in &set {
            for e in nfa.edges(s) {
                match *e {
                    Edge::Epsilon(_) => {}
                    Edge::Bytes { lo, hi, to } => {
                        ranges.push((class_of[lo as usize], class_of[hi as usize], to));
                    }
                    Edge::Call { rule, to } => symbols.push((0, rule.index() as u32, to)),
                    Edge::Tokens { set, to } => symbols.push((1, set.0, to)),
                }
            }
        }
        let accepting = set.binary_search(&nfa.accept).is_ok();
        // Every byte edge steps to one NFA state and nothing else leaves (a literal's
        // next byte, a class): one target, no segments to tell apart.
        if symbols.is_empty() && ranges.iter().all(|r| r.2 == ranges[0].2) {
            if let Some(&(_, _, to)) = ranges.first().filter(|r| subsets.live[r.2 as usize]) {
                target.clear();
                target.push(to);
                let t = subsets.resolve(&mut target)?;
                for &(first, last, _) in &ranges {
                    row[first as usize..=last as usize].fill(t);
                    written = (written.0.min(first as usize), written.1.max(last as usize + 1));
                }
            }
            push_row(&mut dfa, &mut row, &mut written, accepting, [], []);
            i += 1;
            continue;
        }
        // Classes between two consecutive points (where the set of ranges changes) step
        // to the same NFA states: close and intern each such segment once. The points in
        // order from a bitmap over the class indices (at most 257), and each one's segment.
        let mut marks = [0u64; 5];
        for &(first, last, _) in &ranges {
            for p in [usize::from(first), usize::from(last) + 1] {
                marks[p >> 6] |= 1 << (p & 63);
            }
        }
        points.clear();
        for (w, &word) in marks.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let p = w * 64 + bits.trailing_zeros() as usize;
                seg_at[p] = points.len() as u16;
                points.push(p as u16);
                bits &= bits - 1;
            }
        }
        // Each live range's target in every segment (between two consecutive points) it
        // covers, bucketed by segment: `starts[seg]..starts[seg + 1]` in `covered`.
        let segments = points.len().saturating_sub(1);
        starts.clear();
        starts.resize(segments + 1, 0);
        let span = |first: u8, last: u8| {
            usize::from(seg_at[usize::from(first)])..usize::from(seg_at[usize::from(last) + 1])
        };
        for &(first, last, t) in &ranges {
            if subsets.live[t as usize] {
                span(first, last).for_each(|seg| starts[seg + 1] += 1);
            }
        }
        for k in 1..starts.len() {
            starts[k] += starts[k - 1];
        }
        covered.clear();
        covered.resize(starts[segments] as usize, 0);
        cursor.clear();
        cursor.extend_from_slice(&starts);
        for &(first, last, t) in &ranges {
            if subsets.live[t as usize] {
                for seg in span(first, last) {
                    covered[cursor[seg] as usize] = t;
                    cursor[seg] += 1;
                }
            }
        }
        let mut used = 0;
        for seg in 0..segments {
            let bucket = &mut covered[starts[seg] as usize..starts[seg + 1] as usize];
            if bucket.is_empty() {
                continue;
            }
            bucket.sort_unstable();
            target.clear();
            target.extend_from_slice(bucket);
            target.dedup();
            let (from, to) = (points[seg], points[seg + 1]);
            // Segments of one state often step to the same NFA states (a character
            // class split by others): those are looked up once per state (one NFA state
            // is found by its index at once).
            let t = if target.len() == 1 {
                subsets.resolve(&mut target)?
            } else if let Some(&(_, t)) = seen_targets[..used].iter().find(|(t, _)| *t == target) {
                t
            } else {
                if used == seen_targets.len() {
                    seen_targets.push((Vec::new(), 0));
                }
                seen_targets[used].0.clear();
                seen_targets[used].0.extend_from_slice(&target);
                let t = subsets.resolve(&mut target)?;
                seen_targets[used].1 = t;
                used += 1;
                t
            };
            row[from as usize..to as usize].fill(t);
            written = (written.0.min(from as usize), written.1.max(to as usize));
        }
        symbols.sort_unstable();
        let mut call_row: SmallVec<[(RuleId, StateId); 2]> = SmallVec::new();
        let mut token_row: SmallVec<[(TokenSetId, StateId); 2]> = SmallVec::new();
        let mut k = 0;
        while k < symbols.len() {
            let (kind, key, _) = symbols[k];
            target.clear();
            while k < symbols.len() && symbols[k].0 == kind && symbols[k].1 == key {
                if subsets.live[symbols[k].2 as usize] {
                    target.push(symbols[k].2);
                }
                k += 1;
            }
            if target.is_empty() {
                continue;
            }
            let t = StateId(subsets.resolve(&mut target)?);
            if kind == 0 {
                call_row.push((RuleId::new(key as usize), t));
            } else {
                token_row.push((TokenSetId(key), t));
            }
        }
        push_row(&mut dfa, &mut row, &mut written, accepting, call_row, token_row);
        i += 1;
    }
    Ok(dfa)
}

/// Adds the state whose targets `row` holds in `written` (`DEAD` elsewhere), and
/// empties both for the next state.
fn push_row(
    dfa: &mut Dfa,
    row: &mut [u32],
    written: &mut (usize, usize),
    accepting: bool,
    calls: impl IntoIterator<Item = (RuleId, StateId)>,
    tokens: impl IntoIterator<Item = (TokenSetId, StateId)>,
) {
    let (lo, hi) = *written;
    if lo < hi {
        dfa.push_state(lo, &row[lo..hi], accepting, calls, tokens);
        row[lo..hi].fill(DEAD);
    } else {
        dfa.push_state(0, &[], accepting, calls, tokens);
    }
    *written = (usize::MAX, 0);
}

/// Merges equivalent states ([`refine`]), numbered breadth-first from the start (only
/// reachable blocks survive).
fn minimize(dfa: Dfa, deadline: &Deadline) -> Result<Dfa, DfaError> {
    let n = dfa.len();
    let nc = dfa.n_classes;
    let block: Vec<u32> = {
        // States without calls or token edges (most) split by acceptance alone.
        type Key = (bool, SmallVec<[RuleId; 2]>, SmallVec<[TokenSetId; 2]>);
        let mut keys: HashMap<Key, u32> = HashMap::new();
        for accepting in [false, true] {
            keys.insert((accepting, SmallVec::new(), SmallVec::new()), accepting as u32);
        }
        (0..n)
            .map(|s| {
                let (calls, tokens) =
                    (dfa.calls(StateId::new(s)), dfa.token_edges(StateId::new(s)));
                if calls.is_empty() && tokens.is_empty() {
                    return dfa.accepting[s] as u32;
                }
                let key = (
                    dfa.accepting[s],
                    calls.iter().map(|c| c.0).collect(),
                    tokens.iter().map(|t| t.0).collect(),
                );
                let next = keys.len() as u32;
                *keys.entry(key).or_insert(next)
            })
            .collect()
    };
    let (block, n_blocks) = refine(&dfa, &block, deadline)?;
    // Renumber so the start state's block comes first.
    let mut order: Vec<u32> = vec![DEAD; n_blocks as usize];
    let mut representative: Vec<usize> = Vec::new();
    let mut queue = vec![dfa.start.index()];
    let mut seen = vec![false; n];
    seen[dfa.start.index()] = true;
    // Breadth-first from the start, so only reachable blocks survive.
    let mut qi = 0;
    while qi < queue.len() {
        let s = queue[qi];
        qi += 1;
        let b = block[s] as usize;
        if order[b] == DEAD {
            order[b] = representative.len() as u32;
            representative.push(s);
        }
        let succ = dfa
            .byte_targets(StateId::new(s))
            .chain(dfa.calls(StateId::new(s)).iter().map(|c| c.1))
            .chain(dfa.token_edges(StateId::new(s)).iter().map(|t| t.1))
            .map(StateId::index);
        for t in succ.collect::<SmallVec<[usize; 16]>>() {
            if !seen[t] {
                seen[t] = true;
                queue.push(t);
            }
        }
    }
    let map = |t: u32| if t == DEAD { DEAD } else { order[block[t as usize] as usize] };
    let mut out = Dfa::empty(dfa.class_of, nc);
    let mut row = Vec::with_capacity(nc);
    for &s in &representative {
        dfa.dense_row(s, &mut row);
        row.iter_mut().for_each(|t| *t = map(*t));
        let state = StateId::new(s);
        out.push_dense(
            &row,
            dfa.accepting[s],
            dfa.calls(state).iter().map(|&(r, t)| (r, StateId(map(t.0)))),
            dfa.token_edges(state).iter().map(|&(k, t)| (k, StateId(map(t.0)))),
        );
    }
    Ok(out)
}

/// Hopcroft's partition refinement of the states of `dfa`, starting from `initial` (a
/// block number per state): the coarsest partition, finer than `initial`, in which states
/// of one block step into one block on every byte class, call and token set. A state
/// without a transition steps into an extra sink state. Returns the block of each state
/// (numbered from 0) and the number of blocks.
///
/// A splitter is a block, taken for every symbol at once: its states' incoming edges,
/// sorted by symbol, split the blocks of their sources symbol by symbol. Each split
/// re-queues the smaller half only (the larger is implied by the two), so the work is
/// `O(m log n)` in the transitions `m` that exist, where rounds of Moore's refinement
/// cost one pass over every state per character of the longest chain of states that
/// differ only far ahead (the 32 states of a bounded whitespace run, in every inlined
/// copy), and a work list of (block, symbol) pairs visits every pair, most without an
/// edge (tens of byte classes, few of them read by any one state).
fn refine(dfa: &Dfa, initial: &[u32], deadline: &Deadline) -> Result<(Vec<u32>, u32), DfaError> {
    let n = dfa.len();
    let nc = dfa.n_classes;
    let total = n + 1;
    // Symbols: byte classes, then each rule called, then each token set read.
    let mut called: Vec<RuleId> = dfa.calls.iter().map(|&(r, _)| r).collect();
    called.sort_unstable();
    called.dedup();
    let mut read: Vec<TokenSetId> = dfa.tokens.iter().map(|&(t, _)| t).collect();
    read.sort_unstable();
    read.dedup();
    // Incoming edges by target, each `symbol << 32 | source`. Missing transitions (into
    // the sink) are left out: the sink's block is never a splitter (below).
    let mut edges: Vec<(usize, u64)> = Vec::with_capacity(n * 4);
    for s in 0..n {
        let edge = |a: usize| (a as u64) << 32 | s as u64;
        let (lo, targets) = dfa.row(s);
        for (a, &t) in targets.iter().enumerate() {
            if t != DEAD {
                edges.push((t as usize, edge(lo + a)));
            }
        }
        for &(rule, t) in dfa.calls(StateId::new(s)) {
            let a = nc + called.partition_point(|&r| r < rule);
            edges.push((t.index(), edge(a)));
        }
        for &(set, t) in dfa.token_edges(StateId::new(s)) {
            let a = nc + called.len() + read.partition_point(|&r| r < set);
            edges.push((t.index(), edge(a)));
        }
    }
    let (off, inv) = super::group_by_key(n, &edges);
    drop(edges);
    // The refinable partition: `elems[start[b]..end[b]]` are the states of block `b`.
    let mut numbering: HashMap<u32, u32> = HashMap::new();
    let mut blk: Vec<u32> = initial
        .iter()
        .map(|&b| {
            let next = numbering.len() as u32;
            *numbering.entry(b).or_insert(next)
        })
        .collect();
    blk.push(numbering.len() as u32); // the sink, a block of its own
    let n_initial = numbering.len() + 1;
    let mut elems: Vec<u32> = (0..total as u32).collect();
    elems.sort_by_key(|&s| blk[s as usize]);
    let mut loc = vec![0u32; total];
    for (i, &s) in elems.iter().enumerate() {
        loc[s as usize] = i as u32;
    }
    let (mut start, mut end) = (vec![0u32; n_initial], vec![0u32; n_initial]);
    for (i, &s) in elems.iter().enumerate().rev() {
        start[blk[s as usize] as usize] = i as u32;
    }
    for (i, &s) in elems.iter().enumerate() {
        end[blk[s as usize] as usize] = i as u32 + 1;
    }
    let mut marked = vec![0u32; n_initial];
    // Every initial block but one is a splitter (splitting by all blocks but one splits
    // by that one too). The one left out is the sink's, a block of its own forever, so
    // the many missing transitions into it are never walked.
    let sink_block = n_initial - 1;
    let mut queued: Vec<bool> = (0..n_initial).map(|b| b != sink_block).collect();
    let mut work: Vec<u32> = (0..n_initial as u32).filter(|&b| b as usize != sink_block).collect();
    let mut incoming: Vec<u64> = Vec::new();
    let mut touched: Vec<u32> = Vec::new();
    let mut rounds = 0usize;
    while let Some(splitter) = work.pop() {
        rounds += 1;
        if rounds % 4096 == 0 && deadline.exceeded() {
            return Err(DfaError::Timeout);
        }
        let splitter = splitter as usize;
        queued[splitter] = false;
        // The splitter's incoming edges are gathered before any split (splits reorder
        // blocks, the splitter's own included), then taken symbol by symbol.
        incoming.clear();
        for &t in &elems[start[splitter] as usize..end[splitter] as usize] {
            incoming
                .extend_from_slice(&inv[off[t as usize] as usize..off[t as usize + 1] as usize]);
        }
        incoming.sort_unstable();
        let mut i = 0;
        while i < incoming.len() {
            let symbol = incoming[i] >> 32;
            // Mark the predecessors through `symbol`, each moved to the front of its
            // block (a state has one target per symbol: each is marked once).
            touched.clear();
            while i < incoming.len() && incoming[i] >> 32 == symbol {
                let p = incoming[i] as u32;
                i += 1;
                let b = blk[p as usize] as usize;
                if marked[b] == 0 {
                    touched.push(b as u32);
                }
                let front = start[b] + marked[b];
                let here = loc[p as usize];
                let other = elems[front as usize];
                elems.swap(front as usize, here as usize);
                loc[other as usize] = here;
                loc[p as usize] = front;
                marked[b] += 1;
            }
            for &b in &touched {
                let b = b as usize;
                let m = marked[b];
                marked[b] = 0;
                if m == end[b] - start[b] {
                    continue;
                }
                // The marked front becomes a new block.
                let nb = start.len();
                start.push(start[b]);
                end.push(start[b] + m);
                marked.push(0);
                start[b] += m;
                for i in start[nb]..end[nb] {
                    blk[elems[i as usize] as usize] = nb as u32;
                }
                if queued[b] {
                    queued.push(true);
                    work.push(nb as u32);
                } else {
                    let smaller = if end[nb] - start[nb] <= end[b] - start[b] { nb } else { b };
                    queued.push(false);
                    queued[smaller] = true;
                    work.push(smaller as u32);
                }
            }
        }
    }
    blk.truncate(n);
    // Number the blocks of the real states from 0 (the sink's block holds only the sink:
    // no state is equivalent to it, each keeps a path to the end of its rule).
    let mut renumber: HashMap<u32, u32> = HashMap::new();
    for b in blk.iter_mut() {
        let next = renumber.len() as u32;
        *b = *renumber.entry(*b).or_insert(next);
    }
    let count = renumber.len() as u32;
    Ok((blk, count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Moore's refinement, the reference: blocks split by their targets' blocks on every
    /// symbol until nothing changes.
    fn moore(dfa: &Dfa, initial: &[u32]) -> Vec<u32> {
        let n = dfa.len();
        let nc = dfa.n_classes;
        let mut blk: Vec<u32> = initial.to_vec();
        loop {
            let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
            let next: Vec<u32> = (0..n)
                .map(|s| {
                    let mut key = vec![blk[s]];
                    let at = |t: u32| if t == DEAD { u32::MAX } else { blk[t as usize] };
                    key.extend((0..nc).map(|c| at(dfa.class_target(s, c))));
                    let state = StateId::new(s);
                    key.extend(
                        dfa.calls(state).iter().flat_map(|c| [c.0.index() as u32, at(c.1 .0)]),
                    );
                    key.extend(dfa.token_edges(state).iter().flat_map(|c| [c.0 .0, at(c.1 .0)]));
                    let fresh = ids.len() as u32;
                    *ids.entry(key).or_insert(fresh)
                })
                .collect();
            if ids.len() == blk.iter().collect::<std::collections::HashSet<_>>().len() {
                return next;
            }
            blk = next;
        }
    }

    /// The equivalence of two block numberings: whether `a` and `b` put the same states
    /// together.
    fn same_partition(a: &[u32], b: &[u32]) -> bool {
        let mut ab: HashMap<u32, u32> = HashMap::new();
        let mut ba: HashMap<u32, u32> = HashMap::new();
        a.iter()
            .zip(b)
            .all(|(&x, &y)| *ab.entry(x).or_insert(y) == y && *ba.entry(y).or_insert(x) == x)
    }

    fn arbitrary_dfa() -> impl Strategy<Value = (Dfa, Vec<u32>)> {
        (1usize..40, 1usize..6).prop_flat_map(|(n, nc)| {
            let target = prop_oneof![Just(DEAD), 0..n as u32];
            (
                proptest::collection::vec(target.clone(), n * nc),
                proptest::collection::vec(any::<bool>(), n),
                proptest::collection::vec(proptest::option::of((0u32..2, 0..n as u32)), n),
            )
                .prop_map(move |(trans, accepting, calls)| {
                    let initial = accepting.iter().map(|&a| a as u32).collect();
                    let mut class_of = [0u8; 256];
                    for (b, c) in class_of.iter_mut().enumerate() {
                        *c = (b * nc / 256) as u8;
                    }
                    let mut dfa = Dfa::empty(class_of, nc);
                    for ((row, &accepting), call) in
                        trans.chunks_exact(nc).zip(&accepting).zip(&calls)
                    {
                        let call = call.map(|(r, t)| (RuleId::new(r as usize), StateId(t)));
                        dfa.push_dense(row, accepting, call, []);
                    }
                    (dfa, initial)
                })
        })
    }

    proptest! {
        /// Rows stored from their first to their last target give every byte's target,
        /// byte set and edge list of the full rows, and survive serialization.
        #[test]
        fn trimmed_rows_keep_every_target(
            (nc, rows) in (1usize..12).prop_flat_map(|nc| {
                let target = prop_oneof![3 => Just(DEAD), 1 => 0u32..6];
                (Just(nc), proptest::collection::vec(proptest::collection::vec(target, nc), 6))
            })
        ) {
            let mut class_of = [0u8; 256];
            for (b, c) in class_of.iter_mut().enumerate() {
                *c = (b * nc / 256) as u8;
            }
            let mut dfa = Dfa::empty(class_of, nc);
            for row in &rows {
                dfa.push_dense(row, false, [], []);
            }
            dfa.reads_input = vec![false; rows.len()];
            let mut w = crate::serialize::Writer::default();
            dfa.write(&mut w);
            let loaded = Dfa::read(&mut crate::serialize::Reader::new(&w.bytes), 0, 0).unwrap();
            for d in [&dfa, &loaded] {
                for (s, row) in rows.iter().enumerate() {
                    let state = StateId::new(s);
                    let mut set = [0u64; 4];
                    for b in 0..=255u8 {
                        let t = row[class_of[b as usize] as usize];
                        prop_assert_eq!(d.next(state, b), (t != DEAD).then_some(StateId(t)));
                        if t != DEAD {
                            set[(b >> 6) as usize] |= 1 << (b & 63);
                        }
                    }
                    prop_assert_eq!(d.byte_set(state), set);
                    prop_assert_eq!(d.has_byte_edges(state), row.iter().any(|&t| t != DEAD));
                    let targets: Vec<u32> = d.byte_targets(state).map(|t| t.0).collect();
                    let expected: Vec<u32> = row.iter().copied().filter(|&t| t != DEAD).collect();
                    prop_assert_eq!(targets, expected);
                }
            }
        }

        #[test]
        fn refinement_agrees_with_moore((dfa, initial) in arbitrary_dfa()) {
            // Calls are symbols too: states with different calls start apart, as in
            // `minimize`.
            let initial: Vec<u32> = initial
                .iter()
                .enumerate()
                .map(|(s, &b)| {
                    let c = dfa.calls(StateId::new(s));
                    b * 3 + c.first().map_or(0, |c| 1 + c.0.index() as u32)
                })
                .collect();
            let (fast, count) = refine(&dfa, &initial, &Deadline::unlimited()).unwrap();
            let slow = moore(&dfa, &initial);
            prop_assert!(same_partition(&fast, &slow), "{fast:?} vs {slow:?}");
            prop_assert_eq!(count as usize, fast.iter().collect::<std::collections::HashSet<_>>().len());
        }
    }
}
