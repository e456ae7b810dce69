//! Subset construction: a rule's NFA to a [`Dfa`] whose state sets hold only NFA states
//! that can still finish the rule.

use crate::automaton::nfa::{Edge, Nfa, NfaState};
use crate::automaton::SetHasher;
use crate::deadline::Deadline;
use crate::ids::{StateId, TokenSetId};
use grammask_syntax::ir::RuleId;
use smallvec::SmallVec;
use std::hash::Hasher;

use super::{Dfa, DfaError, DEAD};
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

/// Per NFA state, whether [`epsilon_closure`] has met it, reused across calls (all
/// `false` between calls).
struct ClosureScratch {
    seen: Vec<bool>,
}

/// Replaces `set` (sorted, deduplicated) with the live states of its epsilon closure,
/// sorted. A state that cannot finish the rule reaches no state that can, so the walk
/// leaves dead states out as it meets them; `set` itself is its work list.
fn epsilon_closure(
    nfa: &Nfa,
    live: &[bool],
    set: &mut Vec<NfaState>,
    scratch: &mut ClosureScratch,
) {
    let seen = &mut scratch.seen;
    set.retain(|&s| live[s as usize]);
    let given = set.len();
    for &s in set.iter() {
        seen[s as usize] = true;
    }
    let mut i = 0;
    while i < set.len() {
        for e in nfa.edges(set[i]) {
            if let Edge::Epsilon(t) = *e {
                if !seen[t as usize] && live[t as usize] {
                    seen[t as usize] = true;
                    set.push(t);
                }
            }
        }
        i += 1;
    }
    for &s in set.iter() {
        seen[s as usize] = false;
    }
    if set.len() > given {
        set.sort_unstable();
    }
}

/// The NFA state sets of subset construction, interned: every set in one arena, found
/// by hash in a table of its own (open addressing), so building a DFA state allocates
/// nothing of its own. Sets of one state (most of them: literals, chains of a bounded
/// repetition) are found by that state, unhashed.
struct SetTable {
    data: Vec<NfaState>,
    spans: Vec<(u32, u32)>,
    /// The other sets by hash, probed linearly from the slot the hash's top bits give:
    /// each slot's hash and set index, `DEAD` for a free slot. At most half full.
    slots: Vec<(u64, u32)>,
    /// How many of `slots` hold a set.
    hashed: usize,
    /// Per NFA state `s`: the index of the set `{s}`, `DEAD` when it is not in the table.
    single: Vec<u32>,
}

/// Where [`SetTable::find`] would put a set it did not find: its hash and free slot.
#[derive(Clone, Copy)]
struct Vacant {
    hash: u64,
    slot: usize,
}

impl SetTable {
    /// An empty table for the sets of an NFA of `states` states (0: a table never asked
    /// for a set of one state), with room for about `sets` sets.
    fn new(states: usize, sets: usize) -> SetTable {
        SetTable {
            data: Vec::with_capacity(2 * sets),
            spans: Vec::with_capacity(sets),
            slots: vec![(0, DEAD); (sets / 4).next_power_of_two().max(16)],
            hashed: 0,
            single: vec![DEAD; states],
        }
    }

    fn get(&self, i: usize) -> &[NfaState] {
        let (off, len) = self.spans[i];
        &self.data[off as usize..][..len as usize]
    }

    fn len(&self) -> usize {
        self.spans.len()
    }

    /// The slot to probe first for `hash`.
    #[inline]
    fn home(&self, hash: u64) -> usize {
        (hash >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    /// The index of `set` when it is in the table, else where [`SetTable::push`] puts it.
    fn find(&mut self, set: &[NfaState]) -> Result<u32, Vacant> {
        if let &[s] = set {
            let i = self.single[s as usize];
            return if i == DEAD { Err(Vacant { hash: 0, slot: usize::MAX }) } else { Ok(i) };
        }
        if 2 * (self.hashed + 1) > self.slots.len() {
            self.grow();
        }
        let hash = set_hash(set);
        let mask = self.slots.len() - 1;
        let mut slot = self.home(hash);
        loop {
            let (h, i) = self.slots[slot];
            if i == DEAD {
                return Err(Vacant { hash, slot });
            }
            if h == hash && self.get(i as usize) == set {
                return Ok(i);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Twice the slots, the sets placed again.
    fn grow(&mut self) {
        let doubled = vec![(0, DEAD); 2 * self.slots.len()];
        let old = std::mem::replace(&mut self.slots, doubled);
        let mask = self.slots.len() - 1;
        for (hash, i) in old {
            if i != DEAD {
                let mut slot = self.home(hash);
                while self.slots[slot].1 != DEAD {
                    slot = (slot + 1) & mask;
                }
                self.slots[slot] = (hash, i);
            }
        }
    }

    /// Adds `set`, which [`SetTable::find`] did not find (nothing added since); returns
    /// its index.
    fn push(&mut self, set: &[NfaState], vacant: Vacant) -> u32 {
        let i = self.spans.len() as u32;
        self.spans.push((self.data.len() as u32, set.len() as u32));
        self.data.extend_from_slice(set);
        if let &[s] = set {
            self.single[s as usize] = i;
        } else {
            self.slots[vacant.slot] = (vacant.hash, i);
            self.hashed += 1;
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
        let vacant = match self.find(set) {
            Ok(i) => return Ok(i),
            Err(vacant) => vacant,
        };
        if self.spans.len() >= max_states {
            return Err(DfaError::TooManyStates);
        }
        *work += set.len();
        if *work > max_work {
            return Err(DfaError::TooMuchWork);
        }
        Ok(self.push(set, vacant))
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
    /// The sets of two states or more stepped to, and the DFA state each became
    /// (`state`, by index).
    stepped: SetTable,
    state: Vec<u32>,
    /// Per NFA state `s`: the DFA state the set `{s}` stepped to became, `DEAD` before
    /// it is met.
    single_state: Vec<u32>,
    max_states: usize,
    max_work: usize,
    work: usize,
}

impl Subsets<'_> {
    /// The DFA state of the closure of `target` (its live states), added when new.
    fn close(&mut self, target: &mut Vec<NfaState>) -> Result<u32, DfaError> {
        epsilon_closure(self.nfa, &self.live, target, &mut self.scratch);
        self.table.intern(target, self.max_states, self.max_work, &mut self.work)
    }

    /// The DFA state of the pre-closure set `target` (sorted, deduplicated).
    fn resolve(&mut self, target: &mut Vec<NfaState>) -> Result<u32, DfaError> {
        if let &[s] = target.as_slice() {
            let known = self.single_state[s as usize];
            if known != DEAD {
                return Ok(known);
            }
            let t = self.close(target)?;
            self.single_state[s as usize] = t;
            return Ok(t);
        }
        let vacant = match self.stepped.find(target) {
            Ok(i) => return Ok(self.state[i as usize]),
            Err(vacant) => vacant,
        };
        self.stepped.push(target, vacant);
        let t = self.close(target)?;
        self.state.push(t);
        Ok(t)
    }
}

pub(super) fn determinize(
    nfa: &Nfa,
    max_states: usize,
    max_work: usize,
    deadline: &Deadline,
) -> Result<Dfa, DfaError> {
    let (class_of, n_classes) = byte_classes(nfa);
    // Subset construction of these grammars yields about one state per NFA state.
    let expected = nfa.len().min(max_states);
    // Sets keep only live NFA states (the others never reach the end of the rule), so
    // every DFA state but perhaps the start can finish the rule: no trimming after.
    let mut subsets = Subsets {
        nfa,
        live: nfa.live(),
        scratch: ClosureScratch { seen: vec![false; nfa.len()] },
        table: SetTable::new(nfa.len(), expected),
        stepped: SetTable::new(0, expected),
        state: Vec::new(),
        single_state: vec![DEAD; nfa.len()],
        max_states,
        max_work,
        work: 0,
    };
    let mut target = vec![nfa.start];
    subsets.close(&mut target)?;

    let mut dfa = Dfa::empty(class_of, n_classes);
    dfa.reserve(expected);
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
            push_row(&mut dfa, &mut row, &mut written, accepting, &[], &[]);
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
            // Two states may call the same rule into the same state.
            target.dedup();
            let t = StateId(subsets.resolve(&mut target)?);
            if kind == 0 {
                call_row.push((RuleId::new(key as usize), t));
            } else {
                token_row.push((TokenSetId(key), t));
            }
        }
        push_row(&mut dfa, &mut row, &mut written, accepting, &call_row, &token_row);
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
    calls: &[(RuleId, StateId)],
    tokens: &[(TokenSetId, StateId)],
) {
    let (calls, tokens) = (calls.iter().copied(), tokens.iter().copied());
    let (lo, hi) = *written;
    if lo < hi {
        dfa.push_state(lo, &row[lo..hi], accepting, calls, tokens);
        row[lo..hi].fill(DEAD);
    } else {
        dfa.push_state(0, &[], accepting, calls, tokens);
    }
    *written = (usize::MAX, 0);
}
