//! The classification of a position's tokens: accepted or rejected whatever the stack
//! holds, or context-dependent.
//!
//! Reading a token from position `(rule, state)` follows the rule's automaton byte by
//! byte:
//! - the automaton reads every byte: the token is *accepted* whatever the stack holds;
//! - it refuses a byte and no state on the way (after the first byte) could call another
//!   rule or end the rule: no other path exists, the token is *rejected*;
//! - otherwise the token may finish the rule and go on in the caller, or enter a callee:
//!   it is *context-dependent*, checked at run time against the real stacks.
//!
//! The walk goes over the sorted vocabulary with one [`Level`] per prefix length and
//! skips every token that shares a refused prefix: about one table lookup per trie node.
//! Context expansion ([`crate::follow`]) narrows the context-dependent tokens: leaving
//! the automaton only matters when the next byte can follow there. A token whose next
//! byte one callee can start with is read on in that callee's automaton; where several
//! can, the walk forks: the tokens sharing that prefix are read on in each of them in
//! turn ([`Walker::fork`]).
//! Inside strings, the vocabulary's slices (`super::slicing`) accept most tokens by one
//! bitmask, and only the other tokens are walked.

use super::counters::{self, Path};
use super::entry::{ParentMask, PositionMask, TokenList};
use super::runs::{
    depth_with_calls, diverted, reads_on, run_layers, safe_depth, safe_loop_state, Diverted,
    Excluded, RuleView, SafeDepth, DIVERT_STEPS_PER_TOKEN,
};
use super::slicing::{KeyRange, Part, Slicing, Tails, Trie, EXACT, RUN_LAYERS};
use super::MaskCache;
use crate::automaton::Dfa;
use crate::compiler::CompiledGrammar;
use crate::follow::RuleExits;
use crate::ids::{SortedPos, StateId};
use grammask_syntax::ir::RuleId;
use grammask_tokenset::{SortedVocab, Vocabulary};
use smallvec::SmallVec;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;

/// The automata a classification walk reads: the position's rule and the rules it
/// calls, which the walk may enter ([`Level`]).
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    /// The grammar, whose rules' automata the walk may enter.
    pub(crate) grammar: &'a CompiledGrammar,
    /// The cache, with the exit bytes of those rules.
    pub(crate) cache: &'a MaskCache,
    /// The automaton of the position's rule (the caller, when the walk starts inside a
    /// callee).
    pub(crate) dfa: &'a Dfa,
    /// The exit bytes of that rule's states: a dense index per state, read at every
    /// byte of the walk.
    pub(crate) exits: &'a RuleExits,
}

impl<'a> View<'a> {
    /// The automaton of `rule` (built now if it is not) and its states' exit bytes;
    /// `None` when it cannot be built.
    #[inline]
    fn callee(&self, rule: RuleId) -> Option<(&'a Dfa, &'a RuleExits)> {
        self.cache.callee(self.grammar, rule).map(|(dfa, slots)| (dfa, &slots.exits))
    }

    /// The view's rule with the memo of its safe depths, for [`depth_with_calls`].
    fn rule_view<'m>(&self, memo: &'m [AtomicU32]) -> RuleView<'m>
    where
        'a: 'm,
    {
        RuleView { dfa: self.dfa, exits: self.exits, memo, start: None }
    }

    /// The automata of the rules a walk may enter, for [`depth_with_calls`].
    fn rules(&self) -> impl Fn(RuleId) -> Option<RuleView<'a>> + '_ {
        |r| self.cache.rule_view(self.grammar, r)
    }

    /// Whether caller state `to` could take `b` in any way: read it, or leave through a
    /// call or the end of the rule.
    fn caller_takes(&self, to: StateId, b: u8) -> bool {
        self.dfa.next(to, b).is_some() || self.exits.contains(to, b)
    }

    /// The calls of caller state `s` that a refused exit byte `b` may enter: the callees
    /// that can start with `b` (directly or through their own calls), with whether another
    /// path could take `b` (the end of the rule, a nullable callee skipped).
    fn entered_calls(&self, s: StateId, b: u8) -> (SmallVec<[Frame; 4]>, bool) {
        let mut entered = SmallVec::new();
        let mut other = self.dfa.is_accepting(s) && self.exits.follow.contains(b);
        for &(callee, to) in self.dfa.calls(s) {
            let r = callee.index();
            if self.cache.summaries.first[r].contains(b) {
                entered.push(Frame { callee, to });
            }
            other |= self.cache.summaries.nullable[r] && self.caller_takes(to, b);
        }
        (entered, other)
    }
}

/// The steps of a classification walk, one byte at a time.
impl<'a> View<'a> {
    /// Reads byte `b` (the `d`-th of the token) from `lv`. At `d == 0` leaving the
    /// starting automaton (a call, the end of the rule, the callee's return) is the
    /// business of the closure's other stacks, which start there.
    #[inline(always)]
    fn step(&self, frames: &mut Frames<'a>, lv: Level, b: u8, d: usize) -> Result<Level, Refusal> {
        if lv.in_own_rule() {
            let s = lv.state;
            if let Some(next) = self.dfa.next(s, b) {
                let open = lv.is_open() || (d > 0 && self.exits.contains(s, b));
                return Ok(Level::in_own_rule_at(next, open));
            }
            // Refused here: only an exit byte could go on elsewhere.
            if d == 0 || !self.exits.contains(s, b) {
                return Err(Refusal::when_open(lv.is_open()));
            }
            return self.step_into_call(frames, lv, s, b);
        }
        self.step_in_callee(frames, lv, b, d)
    }

    /// Caller state `s` refused exit byte `b`: into the one callee whose start reads it
    /// (the rest of the token is read there, and back in the caller if the callee ends
    /// first); the token is context-dependent when no callee reads `b`, and the walk
    /// forks ([`Refusal::Fork`]) when several do.
    #[cold]
    #[inline(never)]
    fn step_into_call(
        &self,
        frames: &mut Frames<'a>,
        lv: Level,
        s: StateId,
        b: u8,
    ) -> Result<Level, Refusal> {
        let (calls, other) = self.entered_calls(s, b);
        match calls.as_slice() {
            [] => Err(Refusal::Dependent),
            &[frame] => self.enter(frames, frame, lv.is_open() || other, b),
            _ => Err(Refusal::Fork { state: s, open: lv.is_open() }),
        }
    }

    /// Enters `frame`'s callee with byte `b`, its first: the level in the callee after it,
    /// open when `open` says so or a call of the callee's start could take `b` too.
    fn enter(
        &self,
        frames: &mut Frames<'a>,
        frame: Frame,
        open: bool,
        b: u8,
    ) -> Result<Level, Refusal> {
        let Some((dfa, exits)) = self.callee(frame.callee) else {
            return Err(Refusal::Dependent);
        };
        let start = dfa.start();
        // (A callee that starts with `b` only through a call of its own: frames do not nest.)
        let Some(cs) = dfa.next(start, b) else { return Err(Refusal::Dependent) };
        // What else could take `b` in the callee: a call of its start state.
        let inner = !dfa.calls(start).is_empty() && exits.contains(start, b);
        let index = frames.index_of(frame, Some((dfa, exits)));
        counters::add(Path::CalleeEntry, || 1);
        Level::in_frame(cs, index, open || inner).ok_or(Refusal::Dependent)
    }

    /// Reads `b` inside a callee: on in the callee, or back in the caller. A byte only a
    /// call of the callee could take makes the token context-dependent (frames do not
    /// nest).
    #[inline(never)]
    fn step_in_callee(
        &self,
        frames: &mut Frames<'a>,
        lv: Level,
        b: u8,
        d: usize,
    ) -> Result<Level, Refusal> {
        let Some(index) = lv.frame_index() else { return self.step(frames, lv, b, d) };
        let (Frame { to, .. }, automaton) = frames.list[index];
        let view = self;
        let Some((dfa, exits)) = automaton else { return Err(Refusal::Dependent) };
        let can_return = dfa.is_accepting(lv.state);
        // Whether a call of the callee's state could take `b` (leaf callees have none).
        let calls_take = || !dfa.calls(lv.state).is_empty() && exits.contains(lv.state, b);
        match dfa.next(lv.state, b) {
            Some(next) => {
                let returns = d > 0 && can_return && view.caller_takes(to, b);
                Ok(lv.at_state(next).or_open(returns || calls_take()))
            }
            None if can_return && d > 0 => {
                let open = lv.is_open() || calls_take();
                self.step(frames, Level::in_own_rule_at(to, open), b, d)
            }
            None => Err(Refusal::when_open(lv.is_open() || calls_take())),
        }
    }
}

/// A rule a walk entered from the position's rule, and the state of the position's rule
/// it returns to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    callee: RuleId,
    to: StateId,
}

/// The frames a walk entered, numbered as its [`Level`]s name them, each with its
/// callee's automaton and exit bytes (`None` when the automaton cannot be built), looked
/// up once rather than at every byte read there.
#[derive(Default)]
struct Frames<'a> {
    list: Vec<(Frame, Option<(&'a Dfa, &'a RuleExits)>)>,
}

impl<'a> Frames<'a> {
    /// The number of `frame`, added with `automaton` if it is new.
    fn index_of(&mut self, frame: Frame, automaton: Option<(&'a Dfa, &'a RuleExits)>) -> usize {
        match self.list.iter().position(|&(f, _)| f == frame) {
            Some(i) => i,
            None => {
                self.list.push((frame, automaton));
                self.list.len() - 1
            }
        }
    }
}

/// Where a classification walk is after some bytes of a token: in the position's rule,
/// or inside a rule called from it (one of the walk's frames), and whether it is *open*:
/// some other path could have taken one of the bytes so far (entered another rule,
/// ended the rule, returned from the callee earlier), so that a token refused later is
/// context-dependent, not rejected. Eight bytes, kept in registers by the walk; the
/// methods below are the only readers of its packing.
#[derive(Clone, Copy)]
pub(crate) struct Level {
    state: StateId,
    /// `open` in bit 0; above it 0 in the position's rule, else 1 + the index of the
    /// level's [`Frame`].
    tag: u32,
}

impl Level {
    /// At `state` of the position's rule.
    pub(crate) fn at(state: StateId) -> Level {
        Level { state, tag: 0 }
    }

    /// At `state` of the callee of the walk's first frame, not open.
    fn in_first_frame(state: StateId) -> Level {
        Level { state, tag: 1 << 1 }
    }

    /// At `state` of the callee of frame `frame`, if the walk can number it.
    fn in_frame(state: StateId, frame: usize, open: bool) -> Option<Level> {
        let slot = u32::try_from(frame).ok().filter(|&f| f < u32::MAX >> 2)? + 1;
        Some(Level { state, tag: (slot << 1) | u32::from(open) })
    }

    /// At `state` of the position's rule, open or not.
    #[inline(always)]
    fn in_own_rule_at(state: StateId, open: bool) -> Level {
        Level { state, tag: u32::from(open) }
    }

    /// Whether the walk is in the position's rule.
    #[inline(always)]
    fn in_own_rule(self) -> bool {
        self.tag <= 1
    }

    /// Whether the walk is in the position's rule and not open.
    #[inline(always)]
    fn in_own_rule_closed(self) -> bool {
        self.tag == 0
    }

    /// Whether some other path could have taken a byte so far.
    #[inline(always)]
    fn is_open(self) -> bool {
        self.tag & 1 != 0
    }

    /// The index of its frame, inside a callee.
    #[inline(always)]
    fn frame_index(self) -> Option<usize> {
        (self.tag >> 1).checked_sub(1).map(|f| f as usize)
    }

    /// The same level at another state.
    #[inline(always)]
    fn at_state(self, state: StateId) -> Level {
        Level { state, ..self }
    }

    /// The same level, open if it was or `open` says so.
    #[inline(always)]
    fn or_open(self, open: bool) -> Level {
        Level { tag: self.tag | u32::from(open), ..self }
    }
}

/// Why a walk stopped before the end of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    /// No path reads the token, whatever the stack holds.
    Rejected,
    /// Another path could have taken a byte on the way: the stack decides.
    Dependent,
    /// Caller state `state` refused an exit byte that several callees start with: the
    /// walk reads the token on in each of them ([`Walker::fork`]); `open` as the level
    /// was.
    Fork { state: StateId, open: bool },
}

impl Refusal {
    /// Dependent when the level was open.
    #[inline(always)]
    fn when_open(open: bool) -> Refusal {
        if open {
            Refusal::Dependent
        } else {
            Refusal::Rejected
        }
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
        /// The callee.
        callee: RuleId,
        /// Its state.
        state: StateId,
        /// The return state in the position's rule.
        to: StateId,
    },
}

/// What a walk found: the accepted keys and the context-dependent ones.
#[derive(Default)]
struct Found<A, D> {
    accepted: Vec<A>,
    dependent: Vec<D>,
}

impl<A, D> Found<A, D> {
    fn new() -> Self {
        Found { accepted: Vec::new(), dependent: Vec::new() }
    }

    fn len(&self) -> usize {
        self.accepted.len() + self.dependent.len()
    }
}

/// The classification walk of one position: its automata and the frames it entered.
struct Walker<'a> {
    view: View<'a>,
    /// The callees entered so far, numbered by [`Level::frame`].
    frames: Frames<'a>,
    /// Whether the walk is inside a fork ([`Walker::fork`]): forks do not nest.
    forking: bool,
    /// The buffers of the fork's walks, reused.
    scratch: ForkScratch,
}

/// The buffers of a fork's walks ([`Walker::fork`]): what the walk in one callee found,
/// the combined outcome per key, and the walk's levels.
#[derive(Default)]
struct ForkScratch {
    found: Found<u32, u32>,
    outcome: Vec<Outcome>,
    levels: Vec<Level>,
}

/// Most callees a walk forks into at one byte ([`Walker::fork`]); past it the tokens are
/// context-dependent.
const MAX_FORK_CALLEES: usize = 16;

/// A token's outcome from one position, as [`Walker::fork`] combines them: ordered, so
/// that the outcome over several callees is the greatest of theirs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Rejected,
    Dependent,
    Accepted,
}

impl<'a> Walker<'a> {
    /// A walk from `start`, with the level it starts at.
    fn new(view: View<'a>, start: Start) -> (Walker<'a>, Level) {
        let mut walker = Walker {
            view,
            frames: Frames::default(),
            forking: false,
            scratch: ForkScratch::default(),
        };
        let level = match start {
            Start::At(state) => Level::at(state),
            Start::InCallee { callee, state, to } => {
                walker.frames.index_of(Frame { callee, to }, view.callee(callee));
                Level::in_first_frame(state)
            }
        };
        (walker, level)
    }

    /// The walk over the keys of `trie` (the sorted vocabulary, a part of it, or tails
    /// read after [`Trie::OFFSET`] bytes) from `start`: records the accepted keys and
    /// the context-dependent ones in `found`. With a `shortcut` (only for the rest of a
    /// slicing), tokens whose safe run reaches its state are classified by their tails.
    fn walk<T: Trie>(
        &mut self,
        start: Level,
        trie: &T,
        found: &mut Found<T::Accepted, T::Dependent>,
        shortcut: Option<&RunShortcut<'_>>,
    ) {
        self.walk_from(start, 0, trie, found, shortcut, &mut Vec::new());
    }

    /// [`Walker::walk`] over keys that all start with the same `from` bytes, from
    /// `start`, the level after them; `levels` is the walk's buffer of levels.
    fn walk_from<T: Trie>(
        &mut self,
        start: Level,
        from: usize,
        trie: &T,
        found: &mut Found<T::Accepted, T::Dependent>,
        shortcut: Option<&RunShortcut<'_>>,
        levels: &mut Vec<Level>,
    ) {
        // The automata are read through a copy (no write of the walk can change them);
        // only the frames grow.
        let view = self.view;
        let n = trie.count();
        // levels[d]: where the walk is after the first d bytes of the current token.
        levels.clear();
        levels.resize(from + 1, start);
        let mut depth = from;
        let mut k = 0usize;
        while k < n {
            let bytes = trie.bytes(k);
            let shared = trie.shared(k).min(depth).max(from);
            depth = shared;
            let mut refused_at = None;
            let mut stopped = false;
            // The current level stays in registers; `levels` is only written.
            let mut current = levels[shared];
            for (d, &b) in bytes.iter().enumerate().skip(shared) {
                match view.step(&mut self.frames, current, b, d + T::OFFSET) {
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
                    Err(refusal) => {
                        refused_at = Some((d, refusal));
                        break;
                    }
                }
            }
            if let (true, Some(sc)) = (stopped, shortcut) {
                // Every token sharing these bytes has a safe run at least as long.
                let end = trie.skip(k, depth);
                counters::add(Path::LoopState, || end - k);
                for j in k..end {
                    match sc.outcome[sc.tails[j] as usize] {
                        TailOutcome::Accepted => trie.accepted(j, &mut found.accepted),
                        TailOutcome::Dependent => trie.dependent(j, j + 1, &mut found.dependent),
                        TailOutcome::Rejected => {}
                    }
                }
                k = end;
                continue;
            }
            match refused_at {
                Some((d, refusal)) => {
                    let end = trie.skip(k, d + 1);
                    match refusal {
                        Refusal::Rejected => {}
                        Refusal::Dependent => trie.dependent(k, end, &mut found.dependent),
                        Refusal::Fork { state, open } => {
                            self.fork(trie, k..end, d, state, open, found);
                        }
                    }
                    k = end;
                }
                None => {
                    if !bytes.is_empty() {
                        trie.accepted(k, &mut found.accepted);
                    }
                    k += 1;
                }
            }
        }
    }

    /// Keys `keys` of `trie`, which share their first `d + 1` bytes, the last of which
    /// caller state `state` refused and several of its callees start with: read on in
    /// each such callee in turn, and recorded in `found`. A key is accepted when some
    /// callee reads it, rejected when every one refuses it and no other path could take
    /// a byte (`open`, the end of the rule, a nullable callee skipped), else
    /// context-dependent. Inside a fork, or past [`MAX_FORK_CALLEES`], the keys are
    /// context-dependent: the cost of a fork stays one walk of its keys per callee.
    fn fork<T: Trie>(
        &mut self,
        trie: &T,
        keys: std::ops::Range<usize>,
        d: usize,
        state: StateId,
        open: bool,
        found: &mut Found<T::Accepted, T::Dependent>,
    ) {
        let b = trie.bytes(keys.start)[d];
        let (calls, other) = self.view.entered_calls(state, b);
        if calls.len() > MAX_FORK_CALLEES || self.forking {
            trie.dependent(keys.start, keys.end, &mut found.dependent);
            return;
        }
        let range = trie.range(keys.start, keys.end);
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.outcome.clear();
        scratch.outcome.resize(keys.len(), Outcome::Rejected);
        self.forking = true;
        for frame in calls {
            let Ok(level) = self.view.enter(&mut self.frames, frame, open || other, b) else {
                for o in &mut scratch.outcome {
                    *o = (*o).max(Outcome::Dependent);
                }
                continue;
            };
            scratch.found.accepted.clear();
            scratch.found.dependent.clear();
            self.walk_from(level, d + 1, &range, &mut scratch.found, None, &mut scratch.levels);
            for &a in &scratch.found.accepted {
                scratch.outcome[a as usize] = Outcome::Accepted;
            }
            for &x in &scratch.found.dependent {
                let o = &mut scratch.outcome[x as usize];
                *o = (*o).max(Outcome::Dependent);
            }
        }
        self.forking = false;
        counters::add(Path::Fork, || {
            scratch.outcome.iter().filter(|&&o| o != Outcome::Dependent).count()
        });
        for (j, &o) in keys.zip(&scratch.outcome) {
            match o {
                Outcome::Accepted => trie.accepted(j, &mut found.accepted),
                Outcome::Dependent => trie.dependent(j, j + 1, &mut found.dependent),
                Outcome::Rejected => {}
            }
        }
        self.scratch = scratch;
    }

    /// The outcome of each tail of `tails` from `state`, read after at least one byte of
    /// its token.
    fn tail_outcomes(&mut self, state: StateId, tails: &Tails) -> Vec<TailOutcome> {
        let keys = tails.range(0, tails.count());
        let mut found = Found::new();
        self.walk(Level::at(state), &keys, &mut found, None);
        let mut outcome = vec![TailOutcome::Rejected; keys.count()];
        found.accepted.iter().for_each(|&k| outcome[k as usize] = TailOutcome::Accepted);
        found.dependent.iter().for_each(|&k| outcome[k as usize] = TailOutcome::Dependent);
        outcome
    }

    /// [`Walker::walk`] over the tokens of the slices at `positions` that hold a
    /// character the slices do not decide, counted as [`Path::Diverted`].
    fn walk_diverted(
        &mut self,
        start: Level,
        sorted: &SortedVocab,
        positions: &[SortedPos],
        found: &mut Found<u32, SortedPos>,
    ) {
        let before = found.len();
        self.walk(start, &Listed { sorted, positions }, found, None);
        counters::add(Path::Diverted, || found.len() - before);
    }

    /// [`Walker::walk`] over tails, counted as [`Path::Tails`].
    fn walk_tails(&mut self, start: Level, tails: &Tails, found: &mut Found<u32, SortedPos>) {
        let before = found.len();
        self.walk(start, tails, found, None);
        counters::add(Path::Tails, || found.len() - before);
    }
}

/// How many times the tokens a [`RestWalk::Diverted`] plan walks must be fewer than
/// those the plain walk would, for a position whose alphabet [`Excluded::at`] does not
/// take (or the walk of the parts the slices by length leave, for one that reads every
/// safe character).
const DIVERTED_WALK_COST: usize = 3;

/// How a position inside a string takes the vocabulary's slices.
struct SlicePlan {
    slicing: Arc<Slicing>,
    /// The slices accepted whole: the first `covered`.
    covered: usize,
    /// Their tokens, as a bitmask (without those holding a character the position
    /// refuses).
    union: Arc<Vec<u32>>,
    /// Whether the slicing keeps `union`, shared; otherwise it is the position's own
    /// ([`Slicing::union_without`]).
    kept: bool,
    /// How the other tokens are walked.
    rest: RestWalk,
}

/// How the tokens a [`SlicePlan`] does not accept whole are walked.
enum RestWalk {
    /// A pattern's loop with diverting characters ([`diverted`]): the tokens of the
    /// slices holding one are walked, with the parts after the first `covered`.
    Diverted { holding: Arc<Vec<SortedPos>> },
    /// A plain string: every safe run leads to `target`, so a token of the rest that
    /// starts with safe characters goes where its tail goes from there.
    Plain { target: StateId },
    /// Any other string: the remaining parts are walked, longer safe runs rejected whole
    /// when `depth` says so; with `layers`, the tails of the rest by run length. With
    /// `walked`, the tokens of the slices taken that hold a character of more than one
    /// byte the position may read ([`Excluded::walking_leads_at`]) are walked too.
    Bounded {
        depth: SafeDepth,
        layers: Option<SmallVec<[StateId; RUN_LAYERS]>>,
        walked: Option<Arc<Vec<SortedPos>>>,
    },
}

impl SlicePlan {
    /// The plan for `state` of `view`'s rule, when it reads safe characters.
    fn at(
        view: &View<'_>,
        state: StateId,
        slicing: impl FnOnce() -> Arc<Slicing>,
        sorted: &SortedVocab,
        safe_memo: &[AtomicU32],
    ) -> Option<SlicePlan> {
        let dfa = view.dfa;
        let Some(excluded) = Excluded::at(dfa, state) else {
            // Too many refused characters for the slices by length; a loop of a format's
            // or a pattern's alphabet may still take the slices of its kept characters.
            // It must walk fewer tokens than the walk of the tokens starting with a byte
            // the position reads, by a margin (a list walks each token alone, a trie its
            // shared prefixes once): not a number's digits, whose diverting `e`, `,` and
            // space most tokens hold.
            let starting =
                || -> usize { first_byte_ranges(dfa, state, sorted).iter().map(|r| r.len()).sum() };
            let alphabet = Excluded::alphabet_at(dfa, state);
            let d = alphabet.and_then(|(e, non_ascii)| {
                let steps = starting() * DIVERT_STEPS_PER_TOKEN;
                diverted(dfa, view.exits, state, &e, non_ascii, steps)
            });
            let leads = Excluded::walking_leads_at(dfa, state);
            if d.is_none() && leads.is_none() {
                return SlicePlan::through_calls(view, state, slicing, safe_memo);
            }
            let slicing = slicing();
            if let Some(d) = d {
                let walked = slicing.remaining(EXACT + 1).map(Trie::count).sum::<usize>()
                    + slicing.holding_count(d.diverting, d.leads, EXACT + 1);
                if walked * DIVERTED_WALK_COST < starting() {
                    return Some(SlicePlan::diverted(slicing, sorted, d));
                }
            }
            // A bounded class with a few characters of more than one byte: its ASCII ones
            // by the slices, the tokens holding the others walked.
            if let Some((excluded, leads)) = leads {
                let depth =
                    safe_depth(dfa, view.exits, state, slicing.depth_cap(), safe_memo, &excluded);
                let covered = slicing.covered(depth.depth);
                let walked = || slicing.holding_count(0, leads, covered);
                if covered > 0 && walked() * DIVERTED_WALK_COST < starting() {
                    let walked = slicing.holding(sorted, 0, leads, covered);
                    let (union, kept) = slicing.union_without(covered, &excluded);
                    let rest = RestWalk::Bounded { depth, layers: None, walked: Some(walked) };
                    return Some(SlicePlan { slicing, covered, union, kept, rest });
                }
            }
            return SlicePlan::through_calls(view, state, || slicing, safe_memo);
        };
        let slicing = slicing();
        let mut depth =
            safe_depth(dfa, view.exits, state, slicing.depth_cap(), safe_memo, &excluded);
        if depth.ends_in_calls && excluded.is_empty() {
            // Runs reach states that only call (the next chunk of a long string, a
            // pattern's product with a length bound): what the calls read counts.
            let cap = slicing.depth_cap();
            let more = reads_on(&view.rule_view(safe_memo), state, depth, cap, &view.rules());
            if more > depth.depth {
                depth = SafeDepth::only(more);
            }
        }
        // 0 when a state past the first character could leave with excluded ones.
        let covered = slicing.covered(depth.depth);
        if covered <= EXACT {
            // Not every slice is covered: a pattern whose characters mostly stay among a
            // few states takes every slice without its refused and diverting characters,
            // and walks the tokens holding a diverting one. So does a position that reads
            // every safe character but reaches a state that refuses a few (the keys not
            // matching `/.*/`: a second `/` is refused), and one whose states are too
            // many for the depth search but read every safe run (the keys of an object of
            // many names: nothing diverts). (Where the slices fall short because of a
            // bounded length, a chain of states, there is no such closure.)
            // Reading every safe character, the position must walk fewer tokens than the
            // slices by length leave, by a margin (the rest walked by length has its
            // shortcuts): looked for only where those are many. The search looks up
            // fewer transitions than it would spare walking tokens.
            let rest = || slicing.remaining(EXACT + 1).map(Trie::count).sum::<usize>();
            let by_length = || slicing.remaining(covered).map(Trie::count).sum::<usize>();
            let sought = !excluded.is_empty() || rest() * DIVERTED_WALK_COST < by_length();
            let d = sought
                .then(|| {
                    let steps = by_length() * DIVERT_STEPS_PER_TOKEN;
                    diverted(dfa, view.exits, state, &excluded, false, steps)
                })
                .flatten();
            if let Some(d) = d {
                let walked = || rest() + slicing.holding_count(d.diverting, d.leads, EXACT + 1);
                // A split that walks the tokens of characters of more than one byte (read
                // otherwise past the position) must walk fewer than the slices by length
                // leave.
                let worth = if !d.leads.is_empty() {
                    walked() < by_length()
                } else {
                    !excluded.is_empty() || walked() * DIVERTED_WALK_COST < by_length()
                };
                if worth {
                    return Some(SlicePlan::diverted(slicing, sorted, d));
                }
            }
        }
        if covered == 0 {
            return None;
        }
        let (union, kept) = slicing.union_without(covered, &excluded);
        // Where each run of safe characters leads, by its length.
        let layers =
            excluded.is_empty().then(|| run_layers(dfa, view.exits, state, RUN_LAYERS)).flatten();
        let rest = match layers {
            // A plain string: every run leads to one state.
            Some(l) if covered == EXACT + 1 && l[0] == l[1] => RestWalk::Plain { target: l[0] },
            layers => RestWalk::Bounded { depth, layers, walked: None },
        };
        Some(SlicePlan { slicing, covered, union, kept, rest })
    }

    /// The plan of a [`Diverted`] split: every slice is taken without its excluded
    /// characters, and the tokens holding a diverting one are walked.
    fn diverted(slicing: Arc<Slicing>, sorted: &SortedVocab, d: Diverted) -> SlicePlan {
        let (union, kept) = slicing.union_without(EXACT + 1, &d.excluded);
        let holding = slicing.holding(sorted, d.diverting, d.leads, EXACT + 1);
        let rest = RestWalk::Diverted { holding };
        SlicePlan { slicing, covered: EXACT + 1, union, kept, rest }
    }

    /// The plan for `state` of `view`'s rule when it reads safe characters only through
    /// calls (the next chunk of a long string): the slices its calls read whole are
    /// accepted by their bitmask ([`depth_with_calls`]), the other parts walked.
    fn through_calls(
        view: &View<'_>,
        state: StateId,
        slicing: impl FnOnce() -> Arc<Slicing>,
        safe_memo: &[AtomicU32],
    ) -> Option<SlicePlan> {
        if view.dfa.calls(state).is_empty() {
            return None;
        }
        let (rule, rules) = (view.rule_view(safe_memo), view.rules());
        // A first look as far as the slices read exactly, before the vocabulary's
        // slicing is asked for.
        if depth_with_calls(&rule, state, EXACT + 1, &rules) == 0 {
            return None;
        }
        let slicing = slicing();
        let depth = depth_with_calls(&rule, state, slicing.depth_cap(), &rules);
        let covered = slicing.covered(depth);
        if covered == 0 {
            return None;
        }
        let (union, kept) = (slicing.union(covered).clone(), true);
        let rest = RestWalk::Bounded { depth: SafeDepth::only(depth), layers: None, walked: None };
        Some(SlicePlan { slicing, covered, union, kept, rest })
    }
}

/// Classifies every ordinary token from `start` (a state of `view`'s rule, or of a leaf
/// rule it called). `slicing` gives the vocabulary's slices, asked for only when a
/// position of the rule itself reads safe characters: the slices it reads whole are
/// accepted by their bitmask, the other parts walked; `safe_memo` is the rule's memo of
/// safe depths ([`safe_depth`]).
pub(crate) fn classify(
    view: View<'_>,
    start: Start,
    vocab: &Vocabulary,
    slicing: impl FnOnce() -> Arc<Slicing>,
    safe_memo: &[AtomicU32],
) -> PositionMask {
    let sorted = vocab.sorted();
    let (mut walker, level) = Walker::new(view, start);
    let mut found = Found::new();
    let plan = match start {
        Start::At(state) => SlicePlan::at(&view, state, slicing, sorted, safe_memo),
        Start::InCallee { .. } => None,
    };
    let Some(plan) = plan else {
        // A token whose first byte the start refuses is rejected: only the ranges of the
        // sorted vocabulary that start with a byte it reads are walked.
        let (dfa, state) = match start {
            Start::At(state) => (view.dfa, state),
            Start::InCallee { callee, state, .. } => {
                (view.grammar.automata.dfa(&view.grammar.grammar, callee), state)
            }
        };
        for range in first_byte_ranges(dfa, state, sorted) {
            let part = SortedRange { sorted, start: range.start, end: range.end };
            walker.walk(level, &part, &mut found, None);
        }
        let accepted = TokenList::from_ids(found.accepted, vocab.vocab_size());
        return PositionMask { accepted, sliced: None, dependent: found.dependent };
    };
    let slicing = &plan.slicing;
    counters::add(Path::Slices, || plan.union.iter().map(|w| w.count_ones() as usize).sum());
    match &plan.rest {
        RestWalk::Diverted { holding } => {
            // Every slice is taken by the union (the tokens holding a refused character
            // are rejected); the rest and the tokens holding a diverting one are walked.
            for part in slicing.remaining(plan.covered) {
                walker.walk(level, part, &mut found, None);
            }
            walker.walk_diverted(level, sorted, holding, &mut found);
        }
        &RestWalk::Plain { target } => {
            // Every slice is accepted; a token of the rest that starts with safe
            // characters goes where its tail goes from `target`.
            let (head, tails) = slicing.rest_by_tails();
            walker.walk(level, head, &mut found, None);
            walker.walk_tails(Level::at(target), tails, &mut found);
        }
        RestWalk::Bounded { depth, layers, walked } => {
            if let Some(walked) = walked {
                walker.walk_diverted(level, sorted, walked, &mut found);
            }
            // Longer safe runs are rejected whole when the automaton refuses any safe
            // character after `depth` of them, never having been open on the way, and
            // are context-dependent whole when every state there leaves it instead (the
            // slices after `depth` then hold only longer runs when `depth <= EXACT`).
            let whole = depth.depth <= EXACT && (depth.rejects_longer || depth.leaves_longer);
            let skip = if whole { slicing.slices_after(plan.covered) } else { 0 };
            if whole && depth.leaves_longer {
                for part in slicing.remaining(plan.covered).take(skip) {
                    part.dependent(0, part.count(), &mut found.dependent);
                }
                counters::add(Path::LeftWhole, || {
                    slicing.remaining(plan.covered).take(skip).map(|p| p.count()).sum()
                });
            }
            let (rest, runs, tails) = slicing.rest_with_tails();
            // A string of bounded length: the tails by run length, each from the state
            // after its run.
            let state = match start {
                Start::At(state) => state,
                Start::InCallee { state, .. } => state,
            };
            let shortcut = match layers {
                Some(_) => None,
                None => safe_loop_state(view.dfa, view.exits, state).map(|g| {
                    let outcome = walker.tail_outcomes(g, slicing.rest_by_tails().1);
                    RunShortcut { state: g, outcome, runs, tails }
                }),
            };
            for part in slicing.remaining(plan.covered).skip(skip) {
                let is_rest = std::ptr::eq::<Part>(part, rest);
                if layers.is_some() && is_rest {
                    continue;
                }
                let shortcut = shortcut.as_ref().filter(|_| is_rest);
                walker.walk(level, part, &mut found, shortcut);
            }
            if let Some(layers) = layers {
                let (head, long, by_run) = slicing.rest_by_run();
                walker.walk(level, head, &mut found, None);
                walker.walk(level, long, &mut found, None);
                for (&after, tails) in layers.iter().zip(by_run) {
                    walker.walk_tails(Level::at(after), tails, &mut found);
                }
            }
        }
    }
    // Ascending runs, one per part walked or taken whole.
    ascending(&mut found.dependent, sorted.len());
    let accepted = TokenList::from_ids(found.accepted, vocab.vocab_size());
    if plan.kept {
        return PositionMask { accepted, sliced: Some(plan.union), dependent: found.dependent };
    }
    // A union the slicing does not keep is the entry's own: one bitmask with its other
    // accepted tokens, counted in its memory.
    let mut bits = Arc::unwrap_or_clone(plan.union);
    accepted.apply(&mut bits);
    PositionMask { accepted: TokenList::Bits(bits), sliced: None, dependent: found.dependent }
}

/// Puts `positions` (of a sorted vocabulary of `len` tokens, in ascending runs) in
/// ascending order. Many of them (the slices a string's chunk leaves whole near its end,
/// some 90,000 tokens in runs of one slice each) are ordered through a bitmap of the
/// positions, in time linear in their number (a merge of the runs reads each once per
/// level of merging), and a position met twice is then listed once.
fn ascending(positions: &mut Vec<SortedPos>, len: usize) {
    if positions.len() <= len / 64 {
        positions.sort();
        return;
    }
    let mut bits = vec![0u64; len.div_ceil(64)];
    for p in positions.iter() {
        bits[p.index() / 64] |= 1 << (p.index() % 64);
    }
    positions.clear();
    for (w, &word) in bits.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            positions.push(SortedPos::new(w * 64 + rest.trailing_zeros() as usize));
            rest &= rest - 1;
        }
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
    positions: &[SortedPos],
) -> ParentMask {
    let (mut walker, level) = Walker::new(view, start);
    let listed = Listed { sorted: vocab.sorted(), positions };
    let mut found = Found::new();
    walker.walk(level, &listed, &mut found, None);
    let accepted = TokenList::from_ids(found.accepted, vocab.vocab_size());
    ParentMask { accepted, dependent: found.dependent }
}

/// Runs of first bytes at most this many: past it the whole vocabulary is walked.
const MAX_FIRST_BYTE_RUNS: usize = 16;

/// The ranges of the sorted vocabulary whose tokens start with a byte `state` reads (one
/// per run of consecutive such bytes; the whole vocabulary past [`MAX_FIRST_BYTE_RUNS`]).
fn first_byte_ranges(
    dfa: &Dfa,
    state: StateId,
    sorted: &SortedVocab,
) -> SmallVec<[std::ops::Range<usize>; 4]> {
    let mut runs: SmallVec<[(u8, u8); 4]> = SmallVec::new();
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
    type Base = Self;
    fn range(&self, k: usize, end: usize) -> KeyRange<'_, Self> {
        KeyRange { trie: self, start: k, end }
    }
    type Accepted = u32;
    type Dependent = SortedPos;
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
    fn dependent(&self, k: usize, end: usize, positions: &mut Vec<SortedPos>) {
        positions.extend(SortedPos::range(self.start + k, self.start + end));
    }
}

/// The tokens at some sorted-vocabulary positions (ascending), as a trie.
struct Listed<'a> {
    sorted: &'a SortedVocab,
    positions: &'a [SortedPos],
}

impl Trie for Listed<'_> {
    type Base = Self;
    fn range(&self, k: usize, end: usize) -> KeyRange<'_, Self> {
        KeyRange { trie: self, start: k, end }
    }
    type Accepted = u32;
    type Dependent = SortedPos;
    const OFFSET: usize = 0;
    #[inline]
    fn count(&self) -> usize {
        self.positions.len()
    }
    #[inline]
    fn bytes(&self, k: usize) -> &[u8] {
        self.sorted.bytes(self.positions[k].index())
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
        ids.push(self.sorted.token_id(self.positions[k].index()));
    }
    #[inline]
    fn dependent(&self, k: usize, end: usize, positions: &mut Vec<SortedPos>) {
        positions.extend_from_slice(&self.positions[k..end]);
    }
}

/// What a tail does from a [`safe_loop_state`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TailOutcome {
    Rejected,
    Accepted,
    Dependent,
}

/// Where a walk over the rest of a slicing can stop before a token's tail: at the
/// [`safe_loop_state`] `state`, at the end of a run of whole safe characters. The
/// token then goes where its tail goes from `state`, and so do the tokens that share
/// the bytes read so far: they are classified by `outcome` without being walked.
struct RunShortcut<'a> {
    state: StateId,
    /// Per tail of the slicing: what it does from `state`.
    outcome: Vec<TailOutcome>,
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
        level.in_own_rule_closed()
            && level.state == self.state
            && self.runs[k] as usize >= depth
            && bytes.get(depth).is_none_or(|&b| b & 0xC0 != 0x80)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ascending runs, as the parts of a classification give them, come out in order
    /// both ways: sorted when few, through the bitmap when many.
    #[test]
    fn ascending_orders_runs() {
        let len = 10_000;
        for (runs, every) in [(3, 97), (40, 3)] {
            let mut positions: Vec<SortedPos> = (0..runs)
                .flat_map(|r| (r..len).step_by(runs * every).map(SortedPos::new))
                .collect();
            let mut expected: Vec<usize> = positions.iter().map(|p| p.index()).collect();
            expected.sort_unstable();
            ascending(&mut positions, len);
            let got: Vec<usize> = positions.iter().map(|p| p.index()).collect();
            assert_eq!(got, expected, "{runs} runs of every {}th", runs * every);
        }
    }
}
