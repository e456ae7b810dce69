//! The adaptive token mask cache: for each PDA position, which tokens are decided by the
//! position alone.
//!
//! Reading a token from position `(rule, state)` follows the rule's automaton byte by
//! byte. If the automaton reads every byte, the token is *accepted* whatever the stack
//! holds. If it refuses a byte and no state on the way (after the first byte) could call
//! another rule or end the rule, no other path exists: the token is *rejected*, whatever
//! the stack holds. Otherwise the answer depends on the stack (the token may finish the
//! rule and continue in the caller, or enter a callee): the token is *context-dependent*
//! and is checked at run time against the real stacks.
//!
//! The classification walks the sorted vocabulary with one automaton state per prefix
//! length and skips every token that shares a refused prefix, so it costs about one table
//! lookup per trie node visited. Context expansion ([`crate::follow`]) narrows the
//! context-dependent tokens: leaving the automaton only matters when the next byte can
//! follow there (start a callee, or follow the rule somewhere in the grammar). A token
//! whose next byte only one callee can start with is read on in that callee's automaton
//! (and back in the rule if the callee ends first), so it is accepted or rejected at the
//! position unless another path could have taken a byte on the way.
//! Inside strings, the vocabulary's slices ([`crate::slices`]) accept most tokens at
//! once: a position that reads every run of up to `r` JSON-string characters takes the
//! slices of such runs by a shared bitmask and walks only the other tokens.
//! Entries are filled on first visit (`OnceLock`: never twice, safe from many threads)
//! and shared by every matcher of the grammar, while their total size stays within
//! `Limits::max_mask_cache_bytes`; past it an entry is computed for one mask and dropped. Accepted
//! sets are stored as an id list or a bitset, whichever is smaller (plus the shared
//! bitmask of the slices, which belongs to the vocabulary and is not counted).

use crate::automaton::Dfa;
use crate::follow::RuleExits;
use crate::ids::StateId;
use crate::slices::{
    diverted, run_layers, safe_depth, safe_loop_state, Excluded, SafeDepth, Slicing, TailKeys,
    Trie, EXACT, RUN_LAYERS,
};
use grammask_tokenset::{bitmask_len, set_bit, SortedVocab, Vocabulary};
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// The exit bytes of a rule's states ([`crate::follow`]): a dense index per state (read
/// at every byte of the classification walk), the 32-byte sets only for open states.
pub(crate) type Exits<'a> = &'a RuleExits;

/// The tokens an accepted set holds, in its smaller form.
#[derive(Debug)]
pub(crate) enum TokenList {
    /// Token ids.
    Ids(Vec<u32>),
    /// A bitmask over the vocabulary.
    Bits(Vec<u32>),
}

impl TokenList {
    /// ORs the set into `bitmask`.
    pub(crate) fn apply(&self, bitmask: &mut [u32]) {
        match self {
            TokenList::Ids(ids) => ids.iter().for_each(|&id| set_bit(bitmask, id)),
            TokenList::Bits(words) => {
                for (w, &x) in bitmask.iter_mut().zip(words) {
                    *w |= x;
                }
            }
        }
    }

    /// Adds the tokens of `other`.
    pub(crate) fn extend(&mut self, other: &TokenList) {
        match (self, other) {
            (TokenList::Ids(ids), TokenList::Ids(more)) => ids.extend_from_slice(more),
            (TokenList::Bits(words), other) => other.apply(words),
            (this @ TokenList::Ids(_), TokenList::Bits(more)) => {
                let mut words = more.clone();
                this.apply(&mut words);
                *this = TokenList::Bits(words);
            }
        }
    }

    /// Heap bytes used.
    pub(crate) fn memory(&self) -> usize {
        match self {
            TokenList::Ids(v) | TokenList::Bits(v) => v.len() * 4,
        }
    }
}

/// The cached classification of one position.
#[derive(Debug)]
pub(crate) struct PositionMask {
    /// Tokens accepted whatever the stack (with `sliced`).
    pub(crate) accepted: TokenList,
    /// The union of the vocabulary slices accepted whole ([`crate::slices`]): shared
    /// vocabulary-level data, not counted in [`PositionMask::memory`].
    pub(crate) sliced: Option<Arc<Vec<u32>>>,
    /// Positions in the sorted vocabulary of the context-dependent tokens, ascending.
    pub(crate) dependent: Vec<u32>,
}

impl PositionMask {
    /// ORs the accepted tokens into `bitmask`.
    pub(crate) fn apply(&self, bitmask: &mut [u32]) {
        if let Some(words) = &self.sliced {
            for (w, &x) in bitmask.iter_mut().zip(words.iter()) {
                *w |= x;
            }
        }
        self.accepted.apply(bitmask);
    }

    /// Heap bytes used.
    pub(crate) fn memory(&self) -> usize {
        self.accepted.memory() + self.dependent.len() * 4
    }
}

/// The context-dependent tokens of a position `P` classified once more with the return
/// position `R` below it, as if the stack ended there: the tokens some path reads to
/// their end without returning below `R` are accepted under any stack whose top two
/// frames are `R` and `P`; those no path reads and none could leave `R`'s rule before
/// their end are rejected; only the rest, which may return below `R` with bytes left,
/// still depend on the stack. A recursive grammar's strings, numbers and keys mostly end
/// inside their caller's rule (`",` `"}` `":`), so these entries spare most walks against
/// the real stacks.
#[derive(Debug)]
pub(crate) struct ParentMask {
    /// The tokens accepted.
    pub(crate) accepted: TokenList,
    /// Sorted-vocabulary positions of the tokens that still depend on the stack,
    /// ascending.
    pub(crate) dependent: Vec<u32>,
}

impl ParentMask {
    /// Heap bytes used.
    pub(crate) fn memory(&self) -> usize {
        self.accepted.memory() + self.dependent.len() * 4 + std::mem::size_of::<Self>()
    }
}

/// A position's classification: stored in the cache, or computed for one use because
/// the cache reached its bound (`Limits::max_mask_cache_bytes`).
#[derive(Debug)]
pub(crate) enum MaskEntry<'a> {
    /// The cache's entry.
    Stored(&'a PositionMask),
    /// Computed now, not kept.
    Unstored(PositionMask),
}

impl std::ops::Deref for MaskEntry<'_> {
    type Target = PositionMask;

    fn deref(&self) -> &PositionMask {
        match self {
            MaskEntry::Stored(mask) => mask,
            MaskEntry::Unstored(mask) => mask,
        }
    }
}

/// The automata a classification walk reads: the position's rule and the rules it
/// calls, which the walk may enter ([`Level`]).
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    /// Every rule's automaton.
    pub(crate) automata: &'a [Dfa],
    /// The automaton of the position's rule (the caller, when the walk starts inside a
    /// callee).
    pub(crate) dfa: &'a Dfa,
    /// The exit bytes of that rule's states.
    pub(crate) exits: Exits<'a>,
    /// The exit bytes of every rule's states (and whether each rule is nullable).
    pub(crate) all_exits: &'a [RuleExits],
}

impl View<'_> {
    /// Whether caller state `to` could take `b` in any way: read it, or leave through a
    /// call or the end of the rule.
    fn caller_takes(&self, to: StateId, b: u8) -> bool {
        self.dfa.next(to, b).is_some() || self.exits.contains(to, b)
    }

    /// The call of caller state `s` that a refused exit byte `b` enters: the one callee
    /// that can start with `b` (directly or through its own calls), with whether another
    /// path could take `b` (the end of the rule, a nullable callee skipped), or `None`
    /// when no callee or several can start with it.
    fn entered_call(&self, s: StateId, b: u8) -> Option<((usize, StateId), bool)> {
        let mut entered = None;
        let mut other = self.dfa.is_accepting(s) && self.exits.follow.contains(b);
        for &(callee, to) in self.dfa.calls(s) {
            let c = callee.index();
            let exits = &self.all_exits[c];
            if exits.first.contains(b) && entered.replace((c, to)).is_some() {
                return None;
            }
            other |= exits.nullable && self.caller_takes(to, b);
        }
        entered.map(|call| (call, other))
    }
}

/// Where a classification walk is after some bytes of a token: in the position's rule, or
/// inside a rule called from it, which returns to a state of the position's rule
/// (the walk's [`Frames`]). `open`: whether some other path could have taken one of the
/// bytes so far (entered another rule, ended the rule, or returned from the callee
/// earlier): a token refused later is then context-dependent, not rejected. Eight bytes,
/// kept in registers by the walk.
#[derive(Clone, Copy)]
pub(crate) struct Level {
    state: StateId,
    /// Bit 0: `open`; the rest: 0 in the position's rule, else 1 + the index of the
    /// (callee, return state) pair in the walk's frames.
    tag: u32,
}

/// The (callee rule, return state) pairs a walk has entered, by [`Level::tag`].
pub(crate) type Frames = Vec<(usize, StateId)>;

impl Level {
    /// At `state` of the position's rule.
    pub(crate) fn at(state: StateId) -> Level {
        Level { state, tag: 0 }
    }

    /// At `state` of the callee of `frames[frame]`.
    fn in_frame(state: StateId, frame: usize, open: bool) -> Level {
        Level { state, tag: ((frame as u32 + 1) << 1) | u32::from(open) }
    }

    #[inline(always)]
    fn open(self) -> bool {
        self.tag & 1 != 0
    }

    #[inline(always)]
    fn with_open(self, open: bool) -> Level {
        Level { tag: self.tag | u32::from(open), ..self }
    }
}

/// Where a classification starts: a state of the position's rule, or a state of a leaf
/// rule walked through that returns to `to` of the position's rule.
#[derive(Clone, Copy)]
pub(crate) enum Start {
    /// At this state of the position's rule.
    At(StateId),
    /// Inside a callee.
    InCallee {
        /// The callee's rule index.
        callee: usize,
        /// Its state.
        state: StateId,
        /// The return state in the position's rule.
        to: StateId,
    },
}

impl Start {
    /// The walk's level at the start, with the callee's frame pushed to `frames`.
    fn level(self, frames: &mut Frames) -> Level {
        match self {
            Start::At(state) => Level::at(state),
            Start::InCallee { callee, state, to } => {
                frames.push((callee, to));
                Level::in_frame(state, 0, false)
            }
        }
    }
}

/// Reads byte `b` (the `d`-th of the token) from `lv`: the next level, or whether the
/// refused token is context-dependent. At `d == 0` leaving the starting automaton (a
/// call, the end of the rule, the callee's return) is the business of the closure's
/// other stacks, which start there.
#[inline(always)]
fn step(view: &View<'_>, frames: &mut Frames, lv: Level, b: u8, d: usize) -> Result<Level, bool> {
    if lv.tag <= 1 {
        let s = lv.state;
        if let Some(next) = view.dfa.next(s, b) {
            let open = lv.open() || (d > 0 && view.exits.contains(s, b));
            return Ok(Level { state: next, tag: u32::from(open) });
        }
        // Refused here: only an exit byte could go on elsewhere.
        if d == 0 || !view.exits.contains(s, b) {
            return Err(lv.open());
        }
        return step_into_call(view, frames, lv, s, b);
    }
    step_in_callee(view, frames, lv, b, d)
}

/// Caller state `s` refused exit byte `b`: into the one callee whose start reads it
/// (the rest of the token is read there, and back in the caller if the callee ends
/// first); the token is context-dependent when no callee or several read `b`.
#[cold]
#[inline(never)]
fn step_into_call(
    view: &View<'_>,
    frames: &mut Frames,
    lv: Level,
    s: StateId,
    b: u8,
) -> Result<Level, bool> {
    let Some(((callee, to), other)) = view.entered_call(s, b) else { return Err(true) };
    let dfa = &view.automata[callee];
    let start = dfa.start();
    // (A callee that starts with `b` only through a call of its own: frames do not nest.)
    let Some(cs) = dfa.next(start, b) else { return Err(true) };
    // What else could take `b` in the callee: a call of its start state.
    let inner = !dfa.calls(start).is_empty() && view.all_exits[callee].contains(start, b);
    let frame = match frames.iter().position(|&f| f == (callee, to)) {
        Some(i) => i,
        None => {
            frames.push((callee, to));
            frames.len() - 1
        }
    };
    Ok(Level::in_frame(cs, frame, lv.open() || other || inner))
}

/// Reads `b` inside a callee: on in the callee, or back in the caller. A byte only a
/// call of the callee could take makes the token context-dependent (frames do not
/// nest).
#[inline(never)]
fn step_in_callee(
    view: &View<'_>,
    frames: &mut Frames,
    lv: Level,
    b: u8,
    d: usize,
) -> Result<Level, bool> {
    let (callee, to) = frames[(lv.tag >> 1) as usize - 1];
    let dfa = &view.automata[callee];
    let can_return = dfa.is_accepting(lv.state);
    // Whether a call of the callee's state could take `b` (leaf callees have none).
    let calls_take =
        || !dfa.calls(lv.state).is_empty() && view.all_exits[callee].contains(lv.state, b);
    match dfa.next(lv.state, b) {
        Some(next) => {
            let returns = d > 0 && can_return && view.caller_takes(to, b);
            Ok(Level { state: next, ..lv }.with_open(returns || calls_take()))
        }
        None if can_return && d > 0 => {
            let open = lv.open() || calls_take();
            step(view, frames, Level { state: to, tag: u32::from(open) }, b, d)
        }
        None => Err(lv.open() || calls_take()),
    }
}

/// Classifies every ordinary token from `start` (a state of `view`'s rule, or of a leaf
/// rule it called). `slicing` gives the vocabulary's slices ([`crate::slices`]), asked
/// for only when a position of the rule itself reads safe characters: the slices it
/// reads whole are accepted by their bitmask, the other parts walked; `safe_memo` is the
/// rule's memo of safe depths ([`safe_depth`]).
pub(crate) fn classify(
    view: View<'_>,
    start: Start,
    vocab: &Vocabulary,
    slicing: impl FnOnce() -> Arc<Slicing>,
    safe_memo: &[AtomicU32],
) -> PositionMask {
    let sorted = vocab.sorted();
    let mut accepted: Vec<u32> = Vec::new();
    let mut dependent: Vec<u32> = Vec::new();
    let mut sliced = None;
    let mut frames = Frames::new();
    let level = start.level(&mut frames);
    let state = match start {
        Start::At(state) => Some(state),
        Start::InCallee { .. } => None,
    };
    let dfa = view.dfa;
    let slices = state.and_then(|state| {
        let excluded = Excluded::at(dfa, state)?;
        let slicing = slicing();
        let depth = safe_depth(dfa, view.exits, state, slicing.depth_cap(), safe_memo, &excluded);
        // 0 when a state past the first character could leave with excluded ones.
        let covered = slicing.covered(depth.depth);
        if covered <= EXACT && !excluded.is_empty() {
            // Not every slice is covered: a pattern whose characters mostly stay among a
            // few states takes every slice without its refused and diverting characters,
            // and walks the tokens holding a diverting one. (Where every safe character
            // is read, the slices fall short because of a bounded length: a chain of
            // states, no such closure.)
            let split = diverted(dfa, view.exits, state, &excluded).and_then(|d| {
                let union = slicing.union_without(EXACT + 1, &d.excluded)?;
                Some((union, slicing.holding(sorted, d.diverting)?))
            });
            if let Some((union, holding)) = split {
                let no_depth = SafeDepth { depth: 0, rejects_longer: false };
                return Some((slicing, no_depth, EXACT + 1, union, None, Some(holding)));
            }
        }
        let union = if covered == 0 { None } else { slicing.union_without(covered, &excluded) }?;
        // Where each run of safe characters leads, by its length.
        let layers =
            excluded.is_empty().then(|| run_layers(dfa, view.exits, state, RUN_LAYERS)).flatten();
        Some((slicing, depth, covered, union, layers, None))
    });
    if let Some((slicing, depth, covered, union, layers, holding)) = slices {
        // A plain string: every run leads to one state.
        let run_target = layers.as_ref().filter(|l| covered == EXACT + 1 && l[0] == l[1]);
        if let Some(holding) = holding {
            // Every slice is taken by the union (the tokens holding a refused character
            // are rejected); the rest and the tokens holding a diverting one are walked.
            for part in slicing.remaining(covered) {
                walk(&view, &mut frames, level, part, &mut accepted, &mut dependent, None);
            }
            let listed = Listed { sorted, positions: &holding };
            walk(&view, &mut frames, level, &listed, &mut accepted, &mut dependent, None);
        } else if let Some(&[target, ..]) = run_target.map(|l| l.as_slice()) {
            // Every slice is accepted; a token of the rest that starts with safe
            // characters goes where its tail goes from `target`.
            let (head, tails) = slicing.rest_by_tails();
            walk(&view, &mut frames, level, head, &mut accepted, &mut dependent, None);
            let after_run = Level::at(target);
            walk(&view, &mut frames, after_run, tails, &mut accepted, &mut dependent, None);
        } else {
            // Longer safe runs are rejected whole when the automaton refuses any safe
            // character after `depth` of them, never having been open on the way (the
            // slices after `depth` then hold only longer runs when `depth <= EXACT`).
            let parts = slicing.remaining(covered);
            let skip = if depth.rejects_longer && depth.depth <= EXACT {
                slicing.slices_after(covered)
            } else {
                0
            };
            let (rest, runs, tails) = slicing.rest_with_tails();
            // A string of bounded length: the tails by run length, each from the state
            // after its run.
            let shortcut = match layers {
                Some(_) => None,
                None => state.and_then(|s| safe_loop_state(dfa, view.exits, s)).map(|g| {
                    let outcome = tail_outcomes(&view, &mut frames, g, slicing.rest_by_tails().1);
                    RunShortcut { state: g, outcome, runs, tails }
                }),
            };
            for part in parts.skip(skip) {
                if layers.is_some() && std::ptr::eq(part, rest) {
                    continue;
                }
                let shortcut = shortcut.as_ref().filter(|_| std::ptr::eq(part, rest));
                walk(&view, &mut frames, level, part, &mut accepted, &mut dependent, shortcut);
            }
            if let Some(layers) = layers {
                let (head, long, by_run) = slicing.rest_by_run();
                walk(&view, &mut frames, level, head, &mut accepted, &mut dependent, None);
                walk(&view, &mut frames, level, long, &mut accepted, &mut dependent, None);
                for (&after, tails) in layers.iter().zip(by_run) {
                    let at = Level::at(after);
                    walk(&view, &mut frames, at, tails, &mut accepted, &mut dependent, None);
                }
            }
        }
        dependent.sort_unstable();
        sliced = Some(union);
    } else {
        // A token whose first byte the start refuses is rejected: only the ranges of the
        // sorted vocabulary that start with a byte it reads are walked.
        let (dfa, state) = match start {
            Start::At(state) => (dfa, state),
            Start::InCallee { callee, state, .. } => (&view.automata[callee], state),
        };
        for range in first_byte_ranges(dfa, state, sorted) {
            let part = SortedRange { sorted, start: range.start, end: range.end };
            walk(&view, &mut frames, level, &part, &mut accepted, &mut dependent, None);
        }
    }
    PositionMask { accepted: smaller_form(accepted, vocab.vocab_size()), sliced, dependent }
}

/// The accepted token ids (in walk order: only ever ORed into a bitmask) as a list or a
/// bitmask over a vocabulary of `vocab_size`, whichever is smaller.
fn smaller_form(accepted: Vec<u32>, vocab_size: usize) -> TokenList {
    let words = bitmask_len(vocab_size);
    if accepted.len() > words {
        let mut bits = vec![0u32; words];
        accepted.iter().for_each(|&id| set_bit(&mut bits, id));
        TokenList::Bits(bits)
    } else {
        TokenList::Ids(accepted)
    }
}

/// Classifies the tokens at the sorted-vocabulary positions `positions` (ascending)
/// from `start`, a state of a leaf rule called from `view`'s rule: the tokens read to
/// their end are accepted, those that may leave the caller's rule (or enter a rule it
/// calls) with bytes left stay dependent, the others are rejected.
pub(crate) fn classify_listed(
    view: View<'_>,
    start: Start,
    vocab: &Vocabulary,
    positions: &[u32],
) -> ParentMask {
    let mut frames = Frames::new();
    let level = start.level(&mut frames);
    let listed = Listed { sorted: vocab.sorted(), positions };
    let (mut accepted, mut dependent) = (Vec::new(), Vec::new());
    walk(&view, &mut frames, level, &listed, &mut accepted, &mut dependent, None);
    ParentMask { accepted: smaller_form(accepted, vocab.vocab_size()), dependent }
}

/// Runs of first bytes at most this many: past it the whole vocabulary is walked.
const MAX_FIRST_BYTE_RUNS: usize = 16;

/// The ranges of the sorted vocabulary whose tokens start with a byte `state` reads (one
/// per run of consecutive such bytes; the whole vocabulary past [`MAX_FIRST_BYTE_RUNS`]).
fn first_byte_ranges(
    dfa: &Dfa,
    state: StateId,
    sorted: &SortedVocab,
) -> smallvec::SmallVec<[std::ops::Range<usize>; 4]> {
    let mut runs: smallvec::SmallVec<[(u8, u8); 4]> = smallvec::SmallVec::new();
    for b in 0..=255u8 {
        if dfa.next(state, b).is_none() {
            continue;
        }
        match runs.last_mut() {
            Some(run) if run.1 as usize + 1 == b as usize => run.1 = b,
            _ => runs.push((b, b)),
        }
        if runs.len() > MAX_FIRST_BYTE_RUNS {
            return smallvec::smallvec![0..sorted.len()];
        }
    }
    runs.iter()
        .map(|&(lo, hi)| sorted.prefix_range(&[lo]).start..sorted.prefix_range(&[hi]).end)
        .filter(|r| !r.is_empty())
        .collect()
}

/// The tokens of a range of the sorted vocabulary, as a trie.
struct SortedRange<'a> {
    sorted: &'a SortedVocab,
    start: usize,
    end: usize,
}

impl Trie for SortedRange<'_> {
    const OFFSET: usize = 0;
    #[inline]
    fn count(&self) -> usize {
        self.end - self.start
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        self.sorted.bytes(self.start + k)
    }
    #[inline]
    fn shared(&self, k: usize) -> usize {
        if k == 0 {
            0
        } else {
            self.sorted.lcp(self.start + k)
        }
    }
    #[inline]
    fn skip(&self, k: usize, depth: usize) -> usize {
        self.sorted.next_without_prefix(self.start + k, depth).min(self.end) - self.start
    }
    #[inline]
    fn accepted(&self, k: usize, ids: &mut Vec<u32>) {
        ids.push(self.sorted.token_id(self.start + k));
    }
    #[inline]
    fn dependent(&self, k: usize, end: usize, positions: &mut Vec<u32>) {
        positions.extend((self.start + k) as u32..(self.start + end) as u32);
    }
}

/// The tokens at some sorted-vocabulary positions (ascending), as a trie.
struct Listed<'a> {
    sorted: &'a SortedVocab,
    positions: &'a [u32],
}

impl Trie for Listed<'_> {
    const OFFSET: usize = 0;
    #[inline]
    fn count(&self) -> usize {
        self.positions.len()
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        self.sorted.bytes(self.positions[k] as usize)
    }
    #[inline]
    fn shared(&self, k: usize) -> usize {
        match k {
            0 => 0,
            _ => {
                let (a, b) = (self.bytes(k - 1), self.bytes(k));
                a.iter().zip(b).take_while(|(x, y)| x == y).count()
            }
        }
    }
    fn skip(&self, k: usize, depth: usize) -> usize {
        let prefix = &self.bytes(k)[..depth];
        let mut j = k + 1;
        while j < self.positions.len() && self.bytes(j).starts_with(prefix) {
            j += 1;
        }
        j
    }
    #[inline]
    fn accepted(&self, k: usize, ids: &mut Vec<u32>) {
        ids.push(self.sorted.token_id(self.positions[k] as usize));
    }
    #[inline]
    fn dependent(&self, k: usize, end: usize, positions: &mut Vec<u32>) {
        positions.extend_from_slice(&self.positions[k..end]);
    }
}

/// What a tail does from a [`safe_loop_state`].
const TAIL_REJECTED: u8 = 0;
const TAIL_ACCEPTED: u8 = 1;
const TAIL_DEPENDENT: u8 = 2;

/// Where a walk over the rest of a slicing can stop before a token's tail: at the
/// [`safe_loop_state`] `state`, at the end of a run of whole safe characters. The
/// token then goes where its tail goes from `state`, and so do the tokens that share
/// the bytes read so far: they are classified by `outcome` without being walked.
struct RunShortcut<'a> {
    state: StateId,
    /// Per tail of the slicing: `TAIL_*` from `state`.
    outcome: Vec<u8>,
    /// Per token of the rest: the length of its safe run, in bytes.
    runs: &'a [u32],
    /// Per token of the rest: its tail.
    tails: &'a [u32],
}

impl RunShortcut<'_> {
    /// Whether the walk, at `level` after the first `depth` bytes of the rest's `k`-th
    /// token, can stop: in the position's rule, not open, at `state`, with `depth` at
    /// the end of a character of the token's safe run.
    #[inline(always)]
    fn stops(&self, level: Level, k: usize, bytes: &[u8], depth: usize) -> bool {
        level.tag == 0
            && level.state == self.state
            && self.runs[k] as usize >= depth
            && bytes.get(depth).is_none_or(|&b| b & 0xC0 != 0x80)
    }
}

/// The outcome of each tail of `tails` from `state`, read after at least one byte of
/// its token.
fn tail_outcomes(
    view: &View<'_>,
    frames: &mut Frames,
    state: StateId,
    tails: &crate::slices::Tails,
) -> Vec<u8> {
    let (mut accepted, mut dependent) = (Vec::new(), Vec::new());
    let keys = TailKeys(tails);
    walk(view, frames, Level::at(state), &keys, &mut accepted, &mut dependent, None);
    let mut outcome = vec![TAIL_REJECTED; keys.count()];
    accepted.iter().for_each(|&k| outcome[k as usize] = TAIL_ACCEPTED);
    dependent.iter().for_each(|&k| outcome[k as usize] = TAIL_DEPENDENT);
    outcome
}

/// The classification walk over the keys of `trie` (the sorted vocabulary, a part of
/// it, or tails read after [`Trie::OFFSET`] bytes): pushes the ids of the accepted
/// tokens and the sorted-vocabulary positions of the context-dependent ones. With a
/// `shortcut` (only for the rest of a slicing), tokens whose safe run reaches its
/// state are classified by their tails.
fn walk<T: Trie>(
    view: &View<'_>,
    frames: &mut Frames,
    start: Level,
    trie: &T,
    accepted: &mut Vec<u32>,
    dependent: &mut Vec<u32>,
    shortcut: Option<&RunShortcut<'_>>,
) {
    let n = trie.count();
    // levels[d]: where the walk is after the first d bytes of the current token.
    let mut levels: Vec<Level> = vec![start];
    let mut depth = 0usize;
    let mut k = 0usize;
    while k < n {
        let bytes = trie.bytes(k);
        let shared = trie.shared(k).min(depth);
        depth = shared;
        let mut refused_at = None;
        let mut stopped = false;
        // The current level stays in registers; `levels` is only written.
        let mut current = levels[shared];
        for (d, &b) in bytes.iter().enumerate().skip(shared) {
            match step(view, frames, current, b, d + T::OFFSET) {
                Ok(entry) => {
                    current = entry;
                    if levels.len() <= d + 1 {
                        levels.push(entry);
                    } else {
                        levels[d + 1] = entry;
                    }
                    depth = d + 1;
                    if shortcut.is_some_and(|sc| sc.stops(entry, k, bytes, d + 1)) {
                        stopped = true;
                        break;
                    }
                }
                Err(open) => {
                    refused_at = Some((d, open));
                    break;
                }
            }
        }
        if let (true, Some(sc)) = (stopped, shortcut) {
            // Every token sharing these bytes has a safe run at least as long.
            let end = trie.skip(k, depth);
            for j in k..end {
                match sc.outcome[sc.tails[j] as usize] {
                    TAIL_ACCEPTED => trie.accepted(j, accepted),
                    TAIL_DEPENDENT => trie.dependent(j, j + 1, dependent),
                    _ => {}
                }
            }
            k = end;
            continue;
        }
        match refused_at {
            Some((d, open)) => {
                let end = trie.skip(k, d + 1);
                if open {
                    trie.dependent(k, end, dependent);
                }
                k = end;
            }
            None => {
                if !bytes.is_empty() {
                    trie.accepted(k, accepted);
                }
                k += 1;
            }
        }
    }
}
