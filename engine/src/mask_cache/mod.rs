//! The adaptive token mask cache: for each PDA position, the tokens decided by the
//! position alone, filled on first visit and shared by every matcher of a grammar.
//!
//! - [`MaskCache`] owns the entries and their memory bound.
//! - `entry`: what an entry holds ([`PositionMask`], [`ParentMask`]).
//! - `classify`: how a position's tokens are classified, by a walk over the sorted
//!   vocabulary against the position's automaton.
//! - `slicing`: vocabulary-level data, the tokens that are runs of JSON-string
//!   characters, which a position inside a string accepts by one bitmask.
//! - `runs`: the automaton analyses that say when a position may use those slices.
//! - `equivalent`: return positions no token tells apart, which share through and
//!   parent entries.
//! - `suffixes`: the rests of tokens that leave a position, read once from the return
//!   positions below it for every position above them.
//! - [`counters`]: which path decided each token, for tests.
//!
//! Three kinds of entries, and the rests of tokens, share one memory bound
//! (`Limits::max_mask_cache_bytes`):
//! - a position's own entry, one slot per automaton state;
//! - a *through* entry: a position inside a rule walked through, with its return
//!   position;
//! - a *parent* entry: a position's context-dependent tokens classified once more under
//!   the return positions below it;
//! - the outcome of a token's rest, read from the return positions below the position
//!   it leaves (`suffixes`).
//!
//! Past the bound an entry is computed for one mask and dropped: masks stay the same and
//! only cost more.

mod classify;
pub mod counters;
mod entry;
mod equivalent;
mod runs;
mod slicing;
mod suffixes;

pub(crate) use entry::{MaskEntry, ParentMask, PositionMask, TokenList};
pub(crate) use runs::ClassReps;
pub(crate) use slicing::slicing_for;

use crate::automaton::Dfa;
use crate::compiler::CompiledGrammar;
use crate::deadline::Deadline;
use crate::error::{CompileError, MatchError};
use crate::follow::{RuleExits, Summaries};
use crate::ids::{SortedPos, StateId};
use crate::stack::Position;
use classify::{classify, classify_listed, Start, View};
use equivalent::{Equivalence, ShortestTexts};
use grammask_syntax::ir::Grammar;
use grammask_syntax::ir::RuleId;
use grammask_tokenset::Vocabulary;
use runs::UNKNOWN_DEPTH;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use slicing::Slicing;
use std::hash::Hash;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use suffixes::Rests;

/// Positions with more context-dependent tokens than this are classified one frame
/// deeper ([`MaskCache::parent_entry`]) only from their second visit under the same
/// frames: a walk against the real stacks skips the tokens other stacks accepted
/// already, which the classification cannot, so at positions met once (long `maxLength`
/// strings, where tens of thousands of tokens may end the string) the entry would cost
/// more than the walk it spares; at positions met again (the keys of an open object) it
/// spares every later walk. A top inside a leaf rule is classified at its first visit
/// whatever the count: that classification reads two automata by table lookups, several
/// times cheaper per token than the walk (the chunks of long `maxLength` strings).
const MAX_PARENT_DEPENDENT: usize = 8_192;

/// The key of a parent entry: the frames' positions, top first; `None` for unused
/// frames.
type ParentKey = [Option<Position>; 3];

/// The token mask cache of one compiled grammar.
#[derive(Debug)]
pub(crate) struct MaskCache {
    /// Per rule: its positions' slots and analyses, made when the cache first reads one
    /// of its positions (its automaton is built by then). Boxed: most rules are never
    /// read, and an empty cell is then a pointer, not a whole [`RuleSlots`].
    rules: Vec<OnceLock<Box<RuleSlots>>>,
    /// Per rule: nullable, first and follow bytes ([`crate::follow`]).
    summaries: Summaries,
    /// The vocabulary's slices, fetched when a classification first needs them.
    slicing: OnceLock<Arc<Slicing>>,
    /// Through entries, by the position and its return position.
    through: Mutex<HashMap<(Position, Position), Arc<PositionMask>>>,
    /// Parent entries, by their frames.
    parent: Mutex<HashMap<ParentKey, Arc<ParentMask>>>,
    /// The frames of positions with more than [`MAX_PARENT_DEPENDENT`] context-dependent
    /// tokens met once, whose parent entry is made at the next visit.
    met_once: Mutex<HashSet<ParentKey>>,
    /// What the rests of tokens give, read from the frames below the positions they
    /// leave ([`suffixes`]).
    rests: Mutex<Rests>,
    /// The fewest bytes of each rule's texts up to one past the longest token
    /// ([`equivalent::ShortestTexts`]), found for the callees of each rule whose return
    /// positions are compared, when they first are.
    shortest: OnceLock<ShortestTexts>,
    /// Heap bytes of the stored entries, at most `max_bytes`.
    bytes: AtomicUsize,
    /// Heap bytes of the rules' slots and analyses made so far.
    fixed: AtomicUsize,
    /// `Limits::max_mask_cache_bytes`.
    max_bytes: usize,
}

/// What the cache keeps for one rule.
#[derive(Debug)]
pub(crate) struct RuleSlots {
    /// A position's own entry, one slot per automaton state.
    slots: Vec<OnceLock<Box<PositionMask>>>,
    /// Per state, the bytes that may follow when leaving the automaton there (context
    /// expansion, [`crate::follow`]).
    pub(crate) exits: RuleExits,
    /// Per state: the memo of the safe depth (`runs::safe_depth`).
    safe_memo: Vec<AtomicU32>,
    /// The safe depth of the start state, for the walks that call the rule
    /// (`runs::depth_with_calls`).
    start_depth: OnceLock<runs::SafeDepth>,
    /// Whether positions inside the rule are classified with their return position
    /// ([`MaskCache::through_entry`]): counted runs and escapes kept as calls.
    through: bool,
    /// Whether the rule is a leaf (no state reads a token set or calls a rule, but the
    /// `\u` tails of escapes: [`crate::passes::is_escape_tail`]), so that a walk from
    /// inside it back into its caller needs only the two automata (a token that reads
    /// `\u` there is context-dependent: the walk's frames do not nest).
    leaf: bool,
    /// Which of its states no token tells apart as return positions, made on first use.
    equivalence: Mutex<Option<Equivalence>>,
    /// The closures its positions' parent entries met reading their tokens.
    pub(crate) exit_walks: Mutex<crate::mask::ExitWalks>,
}

impl RuleSlots {
    /// The slots of rule `r`, whose automaton is `dfa`.
    fn new(grammar: &Grammar, r: usize, dfa: &Dfa, summaries: &Summaries) -> RuleSlots {
        let leaf = (0..dfa.len()).all(|s| {
            let s = StateId::new(s);
            let tail = |&(callee, _): &(RuleId, StateId)| {
                crate::passes::is_escape_tail(&grammar.rules[callee.index()])
            };
            dfa.calls(s).iter().all(tail) && dfa.token_edges(s).is_empty()
        });
        // Counted runs and escapes kept as calls by inlining (one ASCII character `m..=n`
        // times, `m >= 1`; `\` and what follows: no calls, no empty match, few tokens
        // inside; [`crate::passes::stays_call`]): positions inside one are classified
        // with their return position, as if the run were inlined. (Classifying positions
        // of other rules so, strings kept as calls for one, would walk most of the
        // vocabulary at each call site.)
        let through =
            leaf && crate::passes::stays_call(&grammar.rules[r]) && !dfa.is_accepting(dfa.start());
        RuleSlots {
            slots: (0..dfa.len()).map(|_| OnceLock::new()).collect(),
            exits: RuleExits::of(dfa, r, summaries),
            safe_memo: (0..dfa.len()).map(|_| AtomicU32::new(UNKNOWN_DEPTH)).collect(),
            start_depth: OnceLock::new(),
            through,
            leaf,
            equivalence: Mutex::new(None),
            exit_walks: Mutex::new(crate::mask::ExitWalks::default()),
        }
    }

    /// Heap bytes of the slots and analyses.
    fn memory(&self) -> usize {
        self.slots.len() * std::mem::size_of::<OnceLock<Box<PositionMask>>>()
            + self.safe_memo.len() * 4
            + self.exits.slot.len() * 4
            + self.exits.sets.len() * 32
    }
}

impl MaskCache {
    /// An empty cache for a grammar of `rules` rules, with their `summaries`.
    pub(crate) fn new(rules: usize, summaries: Summaries, max_bytes: usize) -> MaskCache {
        MaskCache {
            rules: (0..rules).map(|_| OnceLock::new()).collect(),
            summaries,
            slicing: OnceLock::new(),
            through: Mutex::new(HashMap::default()),
            parent: Mutex::new(HashMap::default()),
            met_once: Mutex::new(HashSet::default()),
            rests: Mutex::new(HashMap::default()),
            shortest: OnceLock::new(),
            bytes: AtomicUsize::new(0),
            fixed: AtomicUsize::new(0),
            max_bytes,
        }
    }

    /// Heap bytes of the per-state slots and analyses (the entries aside).
    pub(crate) fn fixed_memory(&self) -> usize {
        self.fixed.load(Ordering::Acquire)
    }

    /// Counts an analysis that went from `before` to `after` heap bytes in `fixed`.
    fn refix(&self, before: usize, after: usize) {
        if after >= before {
            self.fixed.fetch_add(after - before, Ordering::AcqRel);
        } else {
            self.fixed.fetch_sub(before - after, Ordering::AcqRel);
        }
    }

    /// The slots of `rule`, a rule some stack stands in.
    fn slots(&self, grammar: &CompiledGrammar, rule: RuleId) -> &RuleSlots {
        self.rules[rule.index()].get_or_init(|| {
            let dfa = grammar.automata.dfa(&grammar.grammar, rule);
            let slots = RuleSlots::new(&grammar.grammar, rule.index(), dfa, &self.summaries);
            self.fixed.fetch_add(slots.memory(), Ordering::AcqRel);
            Box::new(slots)
        })
    }

    /// The automaton and slots of `rule`, which a classification walks into: built now
    /// if they are not; `None` when its automaton cannot be built (the walk against the
    /// stacks then meets the error).
    pub(crate) fn callee<'a>(
        &'a self,
        grammar: &'a CompiledGrammar,
        rule: RuleId,
    ) -> Option<(&'a Dfa, &'a RuleSlots)> {
        let dfa = grammar.enter(rule).ok()?;
        Some((dfa, self.slots(grammar, rule)))
    }

    /// The automaton of `rule` (built now if it is not) with its safe-depth analyses, for
    /// the depths read through calls and returns ([`runs::depth_with_calls`]); `None`
    /// when it cannot be built.
    pub(crate) fn rule_view<'a>(
        &'a self,
        grammar: &'a CompiledGrammar,
        rule: RuleId,
    ) -> Option<runs::RuleView<'a>> {
        let (dfa, slots) = self.callee(grammar, rule)?;
        let start = Some(&slots.start_depth);
        Some(runs::RuleView { dfa, exits: &slots.exits, memo: &slots.safe_memo, start })
    }

    /// Heap bytes held by the stored entries (at most the limit `mask_cache_bytes`).
    pub(crate) fn entry_memory(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// The vocabulary's slices.
    fn slicing(&self, vocab: &Arc<Vocabulary>) -> Arc<Slicing> {
        self.slicing.get_or_init(|| slicing_for(vocab)).clone()
    }

    /// What a classification at a position of `rule` reads.
    fn view<'a>(&'a self, grammar: &'a CompiledGrammar, rule: RuleId) -> View<'a> {
        View {
            grammar,
            cache: self,
            dfa: grammar.automata.dfa(&grammar.grammar, rule),
            exits: &self.slots(grammar, rule).exits,
        }
    }

    /// Stores `value`, an entry of `bytes`, when the memory bound leaves room for it:
    /// `insert` puts it in place and returns what the cache then holds, with `false` when
    /// another thread stored the same entry first (the reservation is given back).
    /// `Err(value)` when it does not fit.
    fn keep<V, H>(
        &self,
        value: V,
        bytes: usize,
        insert: impl FnOnce(V) -> (H, bool),
    ) -> Result<H, V> {
        let reserved = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.max_bytes)
            })
            .is_ok();
        if !reserved {
            return Err(value);
        }
        let (held, inserted) = insert(value);
        if !inserted {
            self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        }
        Ok(held)
    }

    /// [`MaskCache::keep`] into a map entry.
    fn keep_in<K: Eq + Hash, V>(
        &self,
        map: &Mutex<HashMap<K, Arc<V>>>,
        key: K,
        value: Arc<V>,
        bytes: usize,
    ) -> Arc<V> {
        // The maps only ever gain complete entries: a poisoned lock is used as is.
        let stored = self.keep(value, bytes, |value| {
            let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
            match map.get(&key) {
                Some(stored) => (stored.clone(), false),
                None => {
                    map.insert(key, value.clone());
                    (value, true)
                }
            }
        });
        stored.unwrap_or_else(|value| value)
    }

    /// Whether the frames `key` were met before; remembers them otherwise (while the
    /// memory bound allows).
    fn met_before(&self, key: ParentKey) -> bool {
        let mut met = self.met_once.lock().unwrap_or_else(PoisonError::into_inner);
        if met.contains(&key) {
            return true;
        }
        if self.keep((), std::mem::size_of::<ParentKey>() * 2, |()| ((), true)).is_ok() {
            met.insert(key);
        }
        false
    }

    /// A map's entry for `key`, if stored.
    fn find<K: Eq + Hash, V>(map: &Mutex<HashMap<K, Arc<V>>>, key: &K) -> Option<Arc<V>> {
        map.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned()
    }

    /// The entry of `position`, computed on first use and stored while the cache's
    /// memory bound allows (past it, computed and returned without being stored).
    pub(crate) fn position_entry(
        &self,
        grammar: &CompiledGrammar,
        position: Position,
    ) -> MaskEntry<'_> {
        let rule = self.slots(grammar, position.rule);
        let slot = &rule.slots[position.state.index()];
        if let Some(stored) = slot.get() {
            return MaskEntry::Stored(stored);
        }
        let memo = &rule.safe_memo[..];
        let view = self.view(grammar, position.rule);
        let slicing = || self.slicing(&grammar.vocab);
        let start = Start::At(position.state);
        let mask = counters::timed(counters::Work::PositionFill, || {
            classify(view, start, &grammar.vocab, slicing, memo)
        });
        // A stored entry is boxed (the slot of a state never visited stays one word).
        let bytes = mask.memory() + std::mem::size_of::<PositionMask>();
        let stored = self.keep(mask, bytes, |mask| {
            let mut ours = false;
            let stored = slot.get_or_init(|| {
                ours = true;
                Box::new(mask)
            });
            (stored, ours)
        });
        match stored {
            Ok(stored) => MaskEntry::Stored(stored),
            Err(mask) => MaskEntry::Unstored(mask),
        }
    }

    /// Whether positions inside `rule` are classified with their return position
    /// ([`MaskCache::through_entry`]).
    pub(crate) fn walks_through(&self, grammar: &CompiledGrammar, rule: RuleId) -> bool {
        self.slots(grammar, rule).through
    }

    /// The classification of `top`, a position inside a rule walked through, under the
    /// return position `parent`: tokens read to their end within the two frames are
    /// accepted whatever lies below; those that may return below `parent` with bytes
    /// left depend on the stack.
    pub(crate) fn through_entry(
        &self,
        grammar: &CompiledGrammar,
        top: Position,
        parent: Position,
    ) -> Arc<PositionMask> {
        // Most lookups find the entry of this very return position; the representative
        // is looked for on a miss.
        if let Some(stored) = Self::find(&self.through, &(top, parent)) {
            return stored;
        }
        let key = (top, self.representative(grammar, parent));
        if key.1 != parent {
            if let Some(stored) = Self::find(&self.through, &key) {
                return stored;
            }
        }
        let view = self.view(grammar, parent.rule);
        let start = Start::InCallee { callee: top.rule, state: top.state, to: parent.state };
        let slicing = || self.slicing(&grammar.vocab);
        let mask = counters::timed(counters::Work::ThroughFill, || {
            Arc::new(classify(view, start, &grammar.vocab, slicing, &[]))
        });
        let bytes = mask.memory()
            + std::mem::size_of::<PositionMask>()
            + std::mem::size_of::<((Position, Position), Arc<PositionMask>)>();
        self.keep_in(&self.through, key, mask, bytes)
    }

    /// The context-dependent tokens `dependent` of the top of `frames` (its position
    /// entry's, or its through entry's) classified with the return positions below it,
    /// `frames` bottom first: one, or two for a position inside a rule walked through,
    /// fewer on a shorter stack (the top alone at the root); computed on first use and
    /// stored while the memory bound allows. For more than [`MAX_PARENT_DEPENDENT`]
    /// tokens, `None` at the first visit under these frames (the walk against the stack
    /// gives the same answers), computed at the next.
    pub(crate) fn parent_entry(
        &self,
        grammar: &CompiledGrammar,
        frames: &[Position],
        dependent: &[SortedPos],
    ) -> Result<Option<Arc<ParentMask>>, MatchError> {
        let mut exact: ParentKey = [None; 3];
        for (k, &position) in exact.iter_mut().zip(frames.iter().rev()) {
            *k = Some(position);
        }
        if let Some(stored) = Self::find(&self.parent, &exact) {
            return Ok(Some(stored));
        }
        // On a miss: the top as it is (its entry's dependent tokens are the ones
        // classified), the return positions below it by their representatives.
        let mut key = exact;
        for k in key.iter_mut().skip(1).flatten() {
            *k = self.representative(grammar, *k);
        }
        if key != exact {
            if let Some(stored) = Self::find(&self.parent, &key) {
                return Ok(Some(stored));
            }
        }
        if dependent.len() > MAX_PARENT_DEPENDENT
            && !self.top_in_leaf(grammar, frames)
            && !self.met_before(key)
        {
            return Ok(None);
        }
        let computed = counters::timed(counters::Work::ParentFill, || {
            self.classify_under(grammar, frames, &key, dependent)
        })?;
        let bytes = computed.memory() + std::mem::size_of::<(ParentKey, Arc<ParentMask>)>();
        Ok(Some(self.keep_in(&self.parent, key, computed, bytes)))
    }

    /// The first return position met that no token tells apart from `position`
    /// ([`equivalent`]): entries keyed by it serve both.
    fn representative(&self, grammar: &CompiledGrammar, position: Position) -> Position {
        let slots = self.slots(grammar, position.rule);
        let dfa = grammar.automata.dfa(&grammar.grammar, position.rule);
        // How far return positions are compared: the vocabulary's longest token.
        let depth = u16::try_from(grammar.vocab.sorted().longest()).unwrap_or(u16::MAX);
        let shortest = self
            .shortest
            .get_or_init(|| ShortestTexts::new(grammar.grammar.rules.len(), u32::from(depth) + 1));
        let mut equivalence = slots.equivalence.lock().unwrap_or_else(PoisonError::into_inner);
        let equivalence =
            equivalence.get_or_insert_with(|| Equivalence::new(dfa, &grammar.grammar, shortest));
        let before = equivalence.memory();
        let state = equivalence.representative(dfa, shortest, position.state, depth);
        self.fixed.fetch_add(equivalence.memory().saturating_sub(before), Ordering::AcqRel);
        Position { rule: position.rule, state }
    }

    /// Whether `frames` (bottom first) are a return position and a top inside a leaf
    /// rule, whose parent entry [`MaskCache::classify_under`] reads by table lookups.
    fn top_in_leaf(&self, grammar: &CompiledGrammar, frames: &[Position]) -> bool {
        matches!(frames, &[_, top] if self.slots(grammar, top.rule).leaf)
    }

    /// The classification of a parent entry ([`MaskCache::parent_entry`]) under the
    /// frames `frames` (bottom first), `key` by their representatives.
    fn classify_under(
        &self,
        grammar: &CompiledGrammar,
        frames: &[Position],
        key: &ParentKey,
        dependent: &[SortedPos],
    ) -> Result<Arc<ParentMask>, MatchError> {
        let below = suffixes::below_key(key);
        Ok(Arc::new(match frames {
            // Inside a leaf rule: the classification walk reads its automaton and the
            // caller's at the cost of a table lookup a byte; only the tokens it leaves
            // (those that may enter a rule the caller calls, or leave the caller's rule)
            // are read with the stack's frames.
            &[parent, top] if self.top_in_leaf(grammar, frames) => {
                let start =
                    Start::InCallee { callee: top.rule, state: top.state, to: parent.state };
                let view = self.view(grammar, parent.rule);
                let (through, dependent) =
                    self.read_through_return(grammar, parent, top, dependent);
                let mut mask = classify_listed(view, start, &grammar.vocab, &dependent);
                if !through.is_empty() {
                    let size = grammar.vocab.vocab_size();
                    mask.accepted.extend(&TokenList::from_ids(through, size));
                }
                if !mask.dependent.is_empty() {
                    let split = self.classify_split(grammar, frames, below, &mask.dependent)?;
                    mask.accepted.extend(&split.accepted);
                    mask.dependent = split.dependent;
                }
                mask
            }
            [_, _, ..] => self.classify_split(grammar, frames, below, dependent)?,
            _ => crate::mask::classify_below(grammar, frames, dependent)?,
        }))
    }

    /// Of `dependent`, the context-dependent tokens of `top` (a position of a leaf rule
    /// called from `parent`), those of the slices read whole through the return to
    /// `parent` ([`runs::depth_through_return`]: the runs a string's chunk leaves at its
    /// end, which the caller reads on), as token ids; and the others, to classify.
    fn read_through_return<'d>(
        &self,
        grammar: &CompiledGrammar,
        parent: Position,
        top: Position,
        dependent: &'d [SortedPos],
    ) -> (Vec<u32>, std::borrow::Cow<'d, [SortedPos]>) {
        let rule_view = |rule: RuleId| self.rule_view(grammar, rule);
        let (Some(callee), Some(caller)) = (rule_view(top.rule), rule_view(parent.rule)) else {
            return (Vec::new(), dependent.into());
        };
        let depth = |cap| {
            runs::depth_through_return(&callee, top.state, &caller, parent.state, cap, &rule_view)
        };
        // A first look as far as the slices read exactly, before the vocabulary's slicing
        // is asked for (a leaf rule of digits reads no safe run).
        if depth(slicing::EXACT + 1) == 0 {
            return (Vec::new(), dependent.into());
        }
        let slicing = self.slicing(&grammar.vocab);
        let depth = depth(slicing.depth_cap());
        let covered = slicing.covered(depth);
        if covered == 0 {
            return (Vec::new(), dependent.into());
        }
        let union = slicing.union(covered);
        let sorted = grammar.vocab.sorted();
        let mut through = Vec::new();
        let mut rest = Vec::new();
        for &p in dependent {
            let id = sorted.token_id(p.index());
            if grammask_tokenset::get_bit(union, id) {
                through.push(id);
            } else {
                rest.push(p);
            }
        }
        counters::add(counters::Path::ThroughReturn, || through.len());
        (through, rest.into())
    }

    /// Fills every position's entry now, in parallel. Fails with the limit
    /// `compile_time` or `mask_cache_bytes` named; the entries filled before stay.
    pub(crate) fn precompute(
        &self,
        grammar: &CompiledGrammar,
        deadline: &Deadline,
    ) -> Result<(), CompileError> {
        use rayon::prelude::*;
        let positions: Vec<Position> = grammar
            .automata
            .all()
            .into_iter()
            .enumerate()
            .flat_map(|(r, dfa)| {
                (0..dfa.len())
                    .filter(move |&s| dfa.reads_input(StateId::new(s)))
                    .map(move |s| Position { rule: RuleId::new(r), state: StateId::new(s) })
            })
            .collect();
        positions.par_iter().try_for_each(|&p| {
            deadline.check("the mask cache's precompute")?;
            match self.position_entry(grammar, p) {
                MaskEntry::Unstored(_) => Err(CompileError::Limit {
                    name: crate::compiler::LimitName::MaskCacheBytes.as_str(),
                    message: format!(
                        "the token mask cache needs more than {} bytes ({} automaton \
                         positions to precompute)",
                        self.max_bytes,
                        positions.len()
                    ),
                }),
                MaskEntry::Stored(_) => Ok(()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule the cache never reads costs it a cell the size of a pointer and a state,
    /// not a whole [`RuleSlots`].
    #[test]
    fn an_unread_rule_holds_no_slots() {
        let cell = std::mem::size_of::<OnceLock<Box<RuleSlots>>>();
        assert!(cell <= 16, "{cell} bytes");
        assert!(std::mem::size_of::<RuleSlots>() > 8 * cell);
    }
}
