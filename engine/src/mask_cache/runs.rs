//! Analyses of a rule's automaton that let a position take vocabulary slices whole: how
//! many safe characters it certainly reads, which it refuses, where runs of them lead.
//!
//! Each analysis is exact about what it claims, so a position that uses the slices gets
//! the answers a walk over every token would give.

use super::slicing::{
    safe_ascii, Leads, ASCII_SEQS, EXACT, NON_ASCII_LEADS, RUN_LAYERS, SAFE_CHARS,
};
use crate::automaton::Dfa;
use crate::follow::{ByteSet, RuleExits};
use crate::ids::StateId;
use grammask_syntax::ir::RuleId;
use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// Layers of [`safe_depth`] larger than this end the search (no slice is used past the
/// depth reached so far).
const MAX_LEVEL_STATES: usize = 64;

/// States [`safe_depth`] visits at most (a linear scan checks each new one).
const MAX_VISITED_STATES: usize = 256;

/// Safe characters a position may refuse and still take slices, at most (beyond "every
/// character of more than one byte"). Fewer than 64, so that every proper prefix of an
/// excluded character is also a prefix of a safe character not excluded (each has at
/// least 64): a token ending in such a prefix is read where the slices accept it.
const MAX_EXCLUDED: usize = 32;

/// Search steps [`Excluded::at`] takes at most to list the characters refused.
const MAX_EXCLUDED_SEARCH: usize = 4096;

/// The safe characters a position refuses (a pattern's or a format's alphabet: `[^#/]`,
/// ECMAScript's `.` without U+2028 and U+2029, ASCII only): where every state on the way
/// refuses exactly these, a token of the slices that holds one is rejected, the others
/// are accepted by the slices' bitmask ([`Slicing::union_without`](super::slicing::Slicing::union_without)).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Excluded {
    /// Bit `b`: the safe ASCII character `b` is refused.
    pub(super) ascii: u128,
    /// Every safe character of more than one byte is refused.
    pub(super) non_ascii: bool,
    /// Otherwise, the refused ones of more than one byte, as UTF-8, in search order.
    pub(super) others: Vec<smallvec::SmallVec<[u8; 4]>>,
    /// The characters of more than one byte with these first bytes, read or not: a
    /// [`Diverted`] split walks their tokens, so the slices' bitmask leaves them out.
    pub(super) leads: Leads,
}

impl Excluded {
    /// The safe ASCII characters `state` refuses, when it reads at least
    /// [`MIN_READ_FOR_DIVERTING`] safe ones (a format's or a pattern's alphabet past
    /// [`MAX_EXCLUDED`] refused ones: a URI's scheme, an e-mail's local part), with every
    /// character of more than one byte: what a [`Diverted`] split starts from where
    /// [`Excluded::at`] gives up. With `true` when `state` reads some characters of more
    /// than one byte: the split then walks every token that holds one.
    pub(crate) fn alphabet_at(dfa: &Dfa, state: StateId) -> Option<(Excluded, bool)> {
        let reads_non_ascii = NON_ASCII_LEADS.clone().any(|b| dfa.next(state, b).is_some());
        let ascii = refused_ascii(dfa, state);
        let read = safe_ascii().count() - ascii.count_ones() as usize;
        (read >= MIN_READ_FOR_DIVERTING).then_some((
            Excluded { ascii, non_ascii: true, ..Excluded::default() },
            reads_non_ascii,
        ))
    }

    /// The safe ASCII characters `state` refuses, at most [`MAX_EXCLUDED`], with every
    /// character of more than one byte, and the first bytes of those it reads: where
    /// [`Excluded::at`] gives up on listing the characters of more than one byte it
    /// refuses (a pattern's class with `£` or Unicode's spaces of `\s`, bounded), the
    /// slices take the tokens of its ASCII ones and the tokens holding a character of
    /// more than one byte it may read are walked. `None` when it reads none.
    pub(crate) fn walking_leads_at(dfa: &Dfa, state: StateId) -> Option<(Excluded, Leads)> {
        let leads = Leads::read_by(|b| dfa.next(state, b).is_some());
        let ascii = refused_ascii(dfa, state);
        (!leads.is_empty() && ascii.count_ones() as usize <= MAX_EXCLUDED)
            .then_some((Excluded { ascii, non_ascii: true, ..Excluded::default() }, leads))
    }

    /// Whether no safe character is excluded.
    pub(crate) fn is_empty(&self) -> bool {
        self.ascii == 0 && !self.non_ascii && self.others.is_empty() && self.leads.is_empty()
    }

    /// The safe characters `state` refuses, when slices can still serve it: at most
    /// [`MAX_EXCLUDED`] of them, or every one of more than one byte and at most
    /// [`MAX_EXCLUDED`] of one byte (`None` otherwise).
    pub(crate) fn at(dfa: &Dfa, state: StateId) -> Option<Excluded> {
        let refused = |b: u8| dfa.next(state, b).is_none();
        // Most positions (outside strings) refuse most characters: stop early.
        let mut ascii = 0u128;
        let mut budget = MAX_EXCLUDED;
        for b in safe_ascii().filter(|&b| refused(b)) {
            budget = budget.checked_sub(1)?;
            ascii |= 1 << b;
        }
        let mut excluded = Excluded { ascii, ..Excluded::default() };
        if NON_ASCII_LEADS.clone().all(refused) {
            excluded.non_ascii = true;
            return Some(excluded);
        }
        let reps = class_reps(dfa);
        let mut search = RefusedSearch {
            dfa,
            read_all: Vec::new(),
            out: Vec::new(),
            budget,
            steps: MAX_EXCLUDED_SEARCH,
        };
        for (seq, seq_reps) in SAFE_CHARS.iter().zip(reps).skip(ASCII_SEQS) {
            let mut path = smallvec::SmallVec::<[u8; 4]>::new();
            search.refused(seq, seq_reps, state, &mut path)?;
        }
        excluded.others = search.out;
        Some(excluded)
    }
}

/// The search of [`Excluded::at`] for the refused characters of more than one byte.
struct RefusedSearch<'a> {
    dfa: &'a Dfa,
    /// `(byte index, state, whether every rest of a character is read from there)`,
    /// for the sequence searched.
    read_all: Vec<(usize, StateId, bool)>,
    /// The refused characters found, as UTF-8.
    out: Vec<smallvec::SmallVec<[u8; 4]>>,
    /// How many more characters may be refused.
    budget: usize,
    /// Search steps left.
    steps: usize,
}

impl RefusedSearch<'_> {
    /// Whether `state` reads the bytes `k..` of every character of the sequence.
    fn reads_all(
        &mut self,
        reps: &[smallvec::SmallVec<[u8; 8]>],
        k: usize,
        state: StateId,
    ) -> Option<bool> {
        if let Some(&(_, _, known)) = self.read_all.iter().find(|e| (e.0, e.1) == (k, state)) {
            return Some(known);
        }
        let mut all = true;
        for &b in &reps[k] {
            self.steps = self.steps.checked_sub(1)?;
            all &= match self.dfa.next(state, b) {
                None => false,
                Some(next) if k + 1 < reps.len() => self.reads_all(reps, k + 1, next)?,
                Some(_) => true,
            };
            if !all {
                break;
            }
        }
        self.read_all.push((k, state, all));
        Some(all)
    }

    /// Lists the characters of `seq` refused from `state` after the bytes of `path`
    /// (one representative of each byte's class): `None` when they would pass the
    /// budget or the search its steps.
    fn refused(
        &mut self,
        seq: &[(u8, u8)],
        reps: &[smallvec::SmallVec<[u8; 8]>],
        state: StateId,
        path: &mut smallvec::SmallVec<[u8; 4]>,
    ) -> Option<()> {
        if path.is_empty() {
            self.read_all.clear();
            if self.reads_all(reps, 0, state)? {
                return Some(());
            }
        }
        let k = path.len();
        for &b in &reps[k] {
            self.steps = self.steps.checked_sub(1)?;
            path.push(b);
            match self.dfa.next(state, b) {
                Some(next) if k + 1 < seq.len() => {
                    if !self.reads_all(reps, k + 1, next)? {
                        self.refused(seq, reps, next, path)?;
                    }
                }
                Some(_) => {}
                None => self.list(seq, path)?,
            }
            path.pop();
        }
        Some(())
    }

    /// Adds every character of `seq` whose bytes so far are in the classes of `path`.
    fn list(&mut self, seq: &[(u8, u8)], path: &[u8]) -> Option<()> {
        let dfa = self.dfa;
        let choices: Vec<Vec<u8>> = seq
            .iter()
            .enumerate()
            .map(|(j, &(lo, hi))| match path.get(j) {
                Some(&p) => (lo..=hi).filter(|&x| dfa.byte_class(x) == dfa.byte_class(p)).collect(),
                None => (lo..=hi).collect(),
            })
            .collect();
        let count = choices.iter().try_fold(1usize, |n, c| n.checked_mul(c.len()))?;
        self.budget = self.budget.checked_sub(count)?;
        let mut chars: Vec<smallvec::SmallVec<[u8; 4]>> = vec![smallvec::SmallVec::new()];
        for c in &choices {
            chars = chars
                .iter()
                .flat_map(|prefix| {
                    c.iter().map(move |&x| {
                        let mut bytes = prefix.clone();
                        bytes.push(x);
                        bytes
                    })
                })
                .collect();
        }
        self.out.extend(chars);
        Some(())
    }
}

/// The safe ASCII characters `state` refuses, bit `b` for character `b`.
fn refused_ascii(dfa: &Dfa, state: StateId) -> u128 {
    safe_ascii().filter(|&b| dfa.next(state, b).is_none()).fold(0, |m, b| m | 1 << b)
}

/// Small sorted sets of states.
type StateSet = smallvec::SmallVec<[StateId; 4]>;

/// Every byte of a safe character: the safe ASCII ones, the leads and the continuations.
const SAFE_BYTES: ByteSet =
    ByteSet::of_ranges(&[(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E), (0x80, 0xBF), (0xC2, 0xF4)]);

/// Whether the matcher could leave the automaton's path at `state` while reading a safe
/// character: `state` has an exit byte ([`RuleExits`]) among their bytes (a classification
/// walk then marks the token context-dependent, see `super::classify`).
fn is_open(exits: &RuleExits, state: StateId) -> bool {
    exits.any_of(state, &SAFE_BYTES)
}

/// One character read from a set of states.
struct CharStep {
    /// The states after one safe character, when every state of the set reads every safe
    /// character (and no set grew past [`MAX_LEVEL_STATES`]).
    next: Option<StateSet>,
    /// Whether a state reached after at least one byte of a character was open.
    open: bool,
}

/// For each byte range of each sequence of [`SAFE_CHARS`]: one byte of each byte class
/// of the automaton met in the range (bytes of one class have the same transitions).
pub(crate) type ClassReps = Vec<Vec<smallvec::SmallVec<[u8; 8]>>>;

/// The [`ClassReps`] of `dfa`.
fn class_reps(dfa: &Dfa) -> &ClassReps {
    dfa.safe_reps.get_or_init(|| compute_class_reps(dfa))
}

fn compute_class_reps(dfa: &Dfa) -> ClassReps {
    SAFE_CHARS
        .iter()
        .map(|seq| {
            seq.iter()
                .map(|&(lo, hi)| {
                    let mut seen = [false; 256];
                    (lo..=hi)
                        .filter(|&b| {
                            !std::mem::replace(&mut seen[dfa.byte_class(b) as usize], true)
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

/// Reads one safe character from every state of `from`. With a `reference` state
/// (the one [`Excluded`] was read at), only the characters the reference reads, and each
/// state must refuse the others as the reference does (at the same byte).
fn step_char(
    dfa: &Dfa,
    exits: &RuleExits,
    reps: &[Vec<smallvec::SmallVec<[u8; 8]>>],
    from: &StateSet,
    reference: Option<StateId>,
) -> CharStep {
    let mut out = StateSet::new();
    // (state, reference state): the reference is `from`'s own state when there is none.
    let mut frontier: smallvec::SmallVec<[(StateId, StateId); 4]> = smallvec::SmallVec::new();
    let mut next: smallvec::SmallVec<[(StateId, StateId); 4]> = smallvec::SmallVec::new();
    let mut open = false;
    for seq in reps {
        frontier.clear();
        frontier.extend(from.iter().map(|&s| (s, reference.unwrap_or(s))));
        for range in seq {
            next.clear();
            for &(s, r) in &frontier {
                for &b in range {
                    let t = dfa.next(s, b);
                    // Without a reference every character must be read.
                    let expected = if reference.is_some() { dfa.next(r, b) } else { Some(r) };
                    match (t, expected) {
                        (Some(t), Some(u)) => {
                            let pair = (t, if reference.is_some() { u } else { t });
                            // Most bytes of a range go to one state: skip repeats early.
                            if next.last() != Some(&pair) {
                                next.push(pair);
                            }
                        }
                        (None, None) => {}
                        _ => return CharStep { next: None, open },
                    }
                }
            }
            next.sort_unstable();
            next.dedup();
            if next.len() > MAX_LEVEL_STATES {
                return CharStep { next: None, open: true };
            }
            open |= next.iter().any(|&(t, _)| is_open(exits, t));
            std::mem::swap(&mut frontier, &mut next);
        }
        out.extend(frontier.iter().map(|&(t, _)| t));
    }
    out.sort_unstable();
    out.dedup();
    CharStep { next: (out.len() <= MAX_LEVEL_STATES).then_some(out), open }
}

/// The nearest state, reached from `state` by safe characters (`state` itself
/// included), that reads every safe character back to itself without an open state on
/// the way or at it, among the first [`MAX_LEVEL_STATES`] such states reached; a walk
/// that gets there at the end of a safe run goes on as the token's tail does from there.
/// The strings of object keys that are either known names or any others have one: the
/// state of the other keys.
pub(crate) fn safe_loop_state(dfa: &Dfa, exits: &RuleExits, state: StateId) -> Option<StateId> {
    let reps = class_reps(dfa);
    let mut seen: StateSet = smallvec::smallvec![state];
    let mut i = 0;
    while i < seen.len().min(MAX_LEVEL_STATES) {
        let s = seen[i];
        let from: StateSet = smallvec::smallvec![s];
        let step = step_char(dfa, exits, reps, &from, None);
        if let Some(next) = step.next {
            if !step.open && !is_open(exits, s) && next.as_slice() == [s] {
                return Some(s);
            }
            for t in next {
                if !seen.contains(&t) {
                    seen.push(t);
                }
            }
        }
        i += 1;
    }
    None
}

/// The states after 1, 2, ..., `n` safe characters from `state`, when each is one state
/// whatever the characters, with no open state ([`is_open`]) on the way: a token whose
/// safe run is `r <= n` characters long then goes on from the `r`-th as its tail does
/// ([`Tails`]). In a plain string the first layer already reads every safe character
/// back to itself and so are all the others; in a string of bounded length they differ.
pub(crate) fn run_layers(
    dfa: &Dfa,
    exits: &RuleExits,
    state: StateId,
    n: usize,
) -> Option<smallvec::SmallVec<[StateId; RUN_LAYERS]>> {
    let reps = class_reps(dfa);
    let mut layers = smallvec::SmallVec::new();
    let mut from: StateSet = smallvec::smallvec![state];
    while layers.len() < n {
        let step = step_char(dfa, exits, reps, &from, None);
        match step.next.as_deref() {
            // Back where it was: every later layer is this state too.
            Some(&[t]) if !step.open && from[0] == t => layers.resize(n, t),
            Some(&[t]) if !step.open => layers.push(t),
            _ => return None,
        }
        from = step.next?;
    }
    Some(layers)
}

/// Whether every state of `set` refuses the first byte of every safe character.
fn refuses_every_char(dfa: &Dfa, set: &StateSet) -> bool {
    set.iter().all(|&s| refuses_every_char_at(dfa, s))
}

/// Whether `state` refuses the first byte of every safe character.
fn refuses_every_char_at(dfa: &Dfa, state: StateId) -> bool {
    SAFE_CHARS.iter().all(|seq| (seq[0].0..=seq[0].1).all(|b| dfa.next(state, b).is_none()))
}

/// A position of a pattern whose characters mostly lead to a few states that read them
/// all again (the local part of an e-mail address, a host name: `[a-z0-9]` loops, `.` and
/// `-` go elsewhere): the safe ASCII characters split into the `kept` ones, which every
/// state of the closure they reach from the position reads (staying in it), the
/// `diverting` ones, which the position or a state of the closure reads but which are not
/// kept, and the others, which none of them reads. A token of the slices (safe characters
/// only) of kept characters only is then accepted, one without diverting characters is
/// rejected where it meets its first other one, and those holding a diverting character
/// are walked ([`Slicing::holding`](super::slicing::Slicing::holding)).
#[derive(Debug)]
pub(crate) struct Diverted {
    /// The characters not kept.
    pub(crate) excluded: Excluded,
    /// The diverting characters (ASCII), bit `b` for character `b`.
    pub(crate) diverting: u128,
    /// The characters of more than one byte that divert too, by their first bytes (a
    /// position that reads a few of them: `ñ`, `“`, Unicode's spaces): those a state of
    /// the closure reads. A token holding another is rejected where it meets it.
    pub(crate) leads: Leads,
}

/// States of a [`Diverted`] closure at most.
const MAX_DIVERT_STATES: usize = 4096;
/// Characters from the position to the farthest state of a [`Diverted`] closure, at
/// most: the states of keys not among an object's names are many but near (a trie of the
/// names), while a bounded string's chain of states is long and read by its length.
const MAX_DIVERT_DEPTH: usize = 64;
/// Transitions one search for a [`Diverted`] split may look up, at most, whatever the
/// walk it would spare.
const MAX_DIVERT_STEPS: usize = 1 << 19;
/// Transitions one search may look up, at least, whatever the walk it would spare (a
/// few tens of microseconds).
const MIN_DIVERT_STEPS: usize = 1 << 14;
/// Transitions a search for a [`Diverted`] split may look up per token it would spare
/// walking: a lookup costs several times less than a token's walk, so a search that
/// fails costs a fraction of the walk that follows.
pub(crate) const DIVERT_STEPS_PER_TOKEN: usize = 2;
/// Safe characters a position past [`MAX_EXCLUDED`] refused ones must read for a
/// [`Diverted`] split to be sought (positions between a JSON document's values read a
/// handful).
const MIN_READ_FOR_DIVERTING: usize = 16;
/// Diverting characters at most (their tokens are walked).
const MAX_DIVERTING: u32 = 32;

/// The [`Diverted`] split at `state`, which refuses `excluded`: the kept characters
/// start as those `state` reads (the characters of more than one byte all, none, or all
/// but those `excluded` lists, which every state of the closure must refuse too); while
/// a state of their closure refuses some of the kept ASCII ones, either the characters
/// that lead into that state or those it refuses are no longer kept, the fewer. `None`
/// when the closure grows past [`MAX_DIVERT_STATES`] states or [`MAX_DIVERT_DEPTH`]
/// characters, the search past `max_steps` lookups (within [`MIN_DIVERT_STEPS`] and
/// [`MAX_DIVERT_STEPS`]), a state of it is open ([`is_open`]), or more than
/// [`MAX_DIVERTING`] characters divert, or more than are kept. With `non_ascii_diverts`,
/// or when `state` refuses every character of more than one byte and a state of the
/// closure reads one (`.*` after an ASCII first character), the characters of more than
/// one byte are neither kept nor followed: every token holding one whose first byte a
/// state of the closure reads is walked, the others are rejected. A split where
/// nothing diverts says that every run of kept characters is read: the keys of an object
/// of many names, whose states are too many for [`safe_depth`].
///
/// Where a state of the closure reads a character of more than one byte otherwise than
/// `state` does (ECMAScript's `.` at a pattern's first character refuses U+2028, any
/// character after it reads it; after the comma of `^[^,]*,.+$` it refuses U+2028 again),
/// the characters sharing a first byte with one read otherwise divert too: their tokens
/// are walked (those holding `“` or `…` beside U+2028), and the closure is searched
/// again.
pub(crate) fn diverted(
    dfa: &Dfa,
    exits: &RuleExits,
    state: StateId,
    excluded: &Excluded,
    mut non_ascii_diverts: bool,
    max_steps: usize,
) -> Option<Diverted> {
    let safe = safe_ascii().fold(0u128, |m, b| m | 1 << b);
    // The safe ASCII characters by byte class (runs of consecutive bytes): one byte of
    // each class and the class's characters, so that a state is read once per class.
    let mut classes: Vec<(u8, u128)> = Vec::new();
    for b in safe_ascii() {
        match classes.last_mut() {
            Some((rep, chars)) if dfa.byte_class(*rep) == dfa.byte_class(b) => *chars |= 1 << b,
            _ => classes.push((b, 1 << b)),
        }
    }
    let refused_by = |s: StateId| {
        classes.iter().filter(|&&(b, _)| dfa.next(s, b).is_none()).fold(0, |m, &(_, c)| m | c)
    };
    let reads = |s: StateId| safe & !refused_by(s);
    // The characters of more than one byte whose tokens are walked, by their first
    // bytes, and the others, followed: one byte of each class of each sequence.
    let mut walked = Leads::default();
    let mut multi_byte: Vec<Vec<smallvec::SmallVec<[u8; 8]>>> =
        class_reps(dfa)[ASCII_SEQS..].to_vec();
    let mut kept = reads(state);
    // Each state met costs a lookup per class, twice.
    let per_state = 2 * classes.len();
    let mut steps = max_steps.clamp(MIN_DIVERT_STEPS, MAX_DIVERT_STEPS);
    // Per state: the last round whose closure holds it.
    let mut met = vec![u32::MAX; dfa.len()];
    // Each round but the last keeps fewer characters, which then divert.
    'round: for round in 0..=MAX_DIVERTING {
        // The closure of `state` by the kept characters, met in breadth-first order, and
        // where the states one character further than `closure[i]` start.
        let mut closure = vec![state];
        met[state.index()] = round;
        let (mut i, mut depth, mut layer_end) = (0, 0, 1);
        while let Some(&s) = closure.get(i) {
            if i == layer_end {
                depth += 1;
                layer_end = closure.len();
                if depth > MAX_DIVERT_DEPTH {
                    return None;
                }
            }
            i += 1;
            steps = steps.checked_sub(per_state)?;
            let mut refused = 0;
            let mut next: StateSet = StateSet::new();
            for &(b, chars) in &classes {
                match dfa.next(s, b) {
                    None => refused |= chars,
                    Some(t) if chars & kept != 0 && !next.contains(&t) => next.push(t),
                    Some(_) => {}
                }
            }
            let refused = kept & refused;
            if refused != 0 {
                // A state that refuses a kept character: either the characters that
                // lead into it or those it refuses are no longer kept, the fewer (a `%`
                // before hex digits goes, not every other character; a `[` that letters
                // lead away from goes, not the letters).
                steps = steps.checked_sub(i * classes.len())?;
                let into = classes
                    .iter()
                    .filter(|&&(b, chars)| {
                        chars & kept != 0 && closure[..i].iter().any(|&q| dfa.next(q, b) == Some(s))
                    })
                    .fold(0u128, |m, &(_, chars)| m | chars & kept);
                kept &= !if into.count_ones() <= refused.count_ones() { into } else { refused };
                continue 'round;
            }
            if non_ascii_diverts {
                // Every token holding a character of more than one byte is walked.
            } else if excluded.non_ascii {
                // `state` refuses every character of more than one byte: where a state of
                // the closure reads one (`.*` after an ASCII first character), the tokens
                // holding one it may read are walked, the others rejected.
                if NON_ASCII_LEADS.clone().any(|b| dfa.next(s, b).is_some()) {
                    non_ascii_diverts = true;
                }
            } else {
                // With refused characters of more than one byte listed, each state of the
                // closure must refuse those as `state` does, and read the others.
                let from: StateSet = smallvec::smallvec![s];
                let reference =
                    (!excluded.others.is_empty() || !walked.is_empty()).then_some(state);
                let step = step_char(dfa, exits, &multi_byte, &from, reference);
                match step.next {
                    Some(targets) if !step.open => next.extend(targets),
                    _ => {
                        // The first bytes of the characters `s` reads otherwise than
                        // `state`, each byte with its class, divert from now on.
                        let otherwise = otherwise_read(dfa, exits, &multi_byte, s, state);
                        if otherwise.is_empty() {
                            return None;
                        }
                        steps = steps.checked_sub(i * per_state)?;
                        walked = walked.union(otherwise);
                        multi_byte = multi_byte
                            .into_iter()
                            .filter_map(|mut seq| {
                                seq[0].retain(|b| !walked.contains(*b));
                                (!seq[0].is_empty()).then_some(seq)
                            })
                            .collect();
                        continue 'round;
                    }
                }
            }
            for t in next {
                if met[t.index()] != round {
                    if closure.len() == MAX_DIVERT_STATES {
                        return None;
                    }
                    met[t.index()] = round;
                    closure.push(t);
                }
            }
        }
        let read = closure.iter().fold(0, |m, &s| m | reads(s));
        let diverting = read & !kept;
        let leads = if non_ascii_diverts {
            let read_by = |s: StateId| Leads::read_by(|b| dfa.next(s, b).is_some());
            closure.iter().fold(Leads::default(), |l, &s| l.union(read_by(s)))
        } else {
            walked
        };
        // Where the matcher could leave the automaton before a safe character (a key
        // pattern's first character, beside a complement in the caller that reads
        // U+2028), every such character must divert, so that its tokens are walked.
        let walks = |b: u8| {
            if b.is_ascii() {
                diverting >> b & 1 != 0
            } else {
                leads.contains(b)
            }
        };
        let leaves_unwalked = |s: StateId| {
            is_open(exits, s)
                && (0..=u8::MAX)
                    .any(|b| exits.contains(s, b) && SAFE_BYTES.contains(b) && !walks(b))
        };
        if closure.iter().any(|&s| leaves_unwalked(s)) {
            return None;
        }
        // A split that keeps fewer characters than divert walks more than it takes.
        let worth = kept.count_ones() >= diverting.count_ones().max(1);
        return (worth && diverting.count_ones() <= MAX_DIVERTING).then(|| Diverted {
            excluded: Excluded {
                ascii: safe & !kept,
                non_ascii: excluded.non_ascii || non_ascii_diverts,
                others: if non_ascii_diverts { Vec::new() } else { excluded.others.clone() },
                leads: walked,
            },
            diverting,
            leads,
        });
    }
    None
}

/// The first bytes (each with every byte of its class) of the characters of more than
/// one byte of `reps` that `s` reads otherwise than `reference`: refuses where it reads,
/// reads where it refuses, or reads into an open state. Empty when each alone agrees
/// (their states together were too many).
fn otherwise_read(
    dfa: &Dfa,
    exits: &RuleExits,
    reps: &[Vec<smallvec::SmallVec<[u8; 8]>>],
    s: StateId,
    reference: StateId,
) -> Leads {
    let from: StateSet = smallvec::smallvec![s];
    let mut otherwise = Leads::default();
    for seq in reps {
        for &b in &seq[0] {
            let mut one = seq.clone();
            one[0] = smallvec::smallvec![b];
            let step = step_char(dfa, exits, std::slice::from_ref(&one), &from, Some(reference));
            if step.next.is_none() || step.open {
                let class = dfa.byte_class(b);
                otherwise = otherwise.union(Leads::read_by(|c| dfa.byte_class(c) == class));
            }
        }
    }
    otherwise
}

/// What [`safe_depth`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SafeDepth {
    /// The largest `r` (at most the cap) such that every sequence of at most `r` safe
    /// characters (and so every prefix of one) is read from the state.
    pub(crate) depth: usize,
    /// Whether every run of more than `depth` safe characters is refused at its
    /// character `depth + 1` without the matcher having been able to leave the
    /// automaton on the way: no state reached after the first byte is open, and every
    /// state after `depth` characters refuses the first byte of every safe character.
    /// Such runs are rejected whatever the stack.
    pub(crate) rejects_longer: bool,
    /// Whether every run of more than `depth` safe characters leaves the automaton after
    /// `depth` of them: every state after `depth` characters refuses the first byte of
    /// every safe character, ends the rule and is open (the end of a string's chunk,
    /// whose caller reads on). Such runs are context-dependent whatever they hold after
    /// that.
    pub(crate) leaves_longer: bool,
    /// Whether runs of `depth` safe characters reach a state that refuses the first byte
    /// of every safe character and calls a rule, or all reach one state that refuses
    /// them: runs may read on past it, through its calls or the position's own
    /// ([`reads_on`] counts how far). The characters before a long string's next chunk;
    /// a pattern's product with a length bound, whose states past the pattern's match
    /// are calls while the others are read in place.
    pub(crate) ends_in_calls: bool,
}

impl SafeDepth {
    /// `depth` alone, with nothing claimed about longer runs.
    pub(crate) fn only(depth: usize) -> SafeDepth {
        SafeDepth { depth, rejects_longer: false, leaves_longer: false, ends_in_calls: false }
    }
}

/// A memo entry of [`safe_depth`] not filled yet.
pub(crate) const UNKNOWN_DEPTH: u32 = u32::MAX;

/// A memo entry of [`safe_depth`] for a state from which no state that refuses a safe
/// character is reachable.
const UNBOUNDED_DEPTH: u32 = u32::MAX - 1;

/// The safe depth of `state`, capped at `cap` (see [`SafeDepth`]): the distance, in
/// characters, from `state` to the nearest state that refuses some safe character. A
/// breadth-first search by characters, each state visited once (at most
/// [`MAX_VISITED_STATES`]; past that, or when a layer grows past [`MAX_LEVEL_STATES`],
/// the depth reached is returned, a lower bound); when no new state is left, no state
/// that refuses a character is reachable and the depth is unbounded (`cap`).
///
/// `rejects_longer` needs the exact set of states after `depth` characters: it is only
/// claimed while no layer met an already visited state (then each layer is exactly the
/// set of states after that many characters).
///
/// `memo` (one entry per state of the automaton) spares later positions the same search:
/// when a search ends unbounded, every state it visited is marked unbounded; otherwise
/// each state it first met after `i` characters keeps the lower bound `depth - i` of its
/// own depth (were it nearer to a refusing state, so would the start be). A later search
/// stops at a layer whose states are all known: unbounded when all are, and where their
/// least bound puts the depth past [`EXACT`] + 1, since past [`EXACT`] characters only
/// the depth matters, and only to accept the last slice whole (the next positions of a
/// long string, or of a long pattern's chain of states, stop one character in instead of
/// searching as far again). A lower bound only makes fewer slices accepted whole:
/// answers never depend on the memo.
///
/// With `excluded` characters ([`Excluded::at`] the state), the search reads the other
/// safe characters and every state on the way must refuse the first byte of each
/// excluded one, and none may be open (not even `state`): a token of the slices within
/// the depth that holds an excluded character is then rejected where it meets it. The
/// depth is 0 when a state on the way is open.
pub(crate) fn safe_depth(
    dfa: &Dfa,
    exits: &RuleExits,
    state: StateId,
    cap: usize,
    memo: &[AtomicU32],
    excluded: &Excluded,
) -> SafeDepth {
    if excluded.is_empty() {
        return search_depth(dfa, exits, state, cap, memo, None).0;
    }
    // A token holding an excluded character is rejected where it meets it only if no
    // state on the way could leave the automaton. The memo is for runs of every safe
    // character.
    let (found, open) = search_depth(dfa, exits, state, cap, &[], Some(state));
    if open || is_open(exits, state) {
        return SafeDepth::only(0);
    }
    found
}

/// An automaton and its analyses, for [`depth_through_return`].
pub(crate) struct RuleView<'a> {
    pub(crate) dfa: &'a Dfa,
    pub(crate) exits: &'a RuleExits,
    /// The memo of [`safe_depth`], one entry per state.
    pub(crate) memo: &'a [AtomicU32],
    /// Where the safe depth of the start state is kept once searched (as far as
    /// [`START_CAP`]); `None` for a rule only read from, never called.
    pub(crate) start: Option<&'a OnceLock<SafeDepth>>,
}

/// How far [`RuleView::start_depth`] searches: past any token's safe run.
const START_CAP: usize = 1 << 12;

impl RuleView<'_> {
    /// The [`safe_depth`] of `state` (no character excluded), capped at `cap`.
    fn own_depth(&self, state: StateId, cap: usize) -> SafeDepth {
        safe_depth(self.dfa, self.exits, state, cap, self.memo, &Excluded::default())
    }

    /// The [`safe_depth`] of the start state (a callee's, met at every call), capped at
    /// `cap`.
    fn start_depth(&self, cap: usize) -> SafeDepth {
        let search = || self.own_depth(self.dfa.start(), START_CAP);
        let found = match self.start {
            Some(kept) => *kept.get_or_init(search),
            None => search(),
        };
        if found.depth >= cap {
            SafeDepth::only(cap)
        } else {
            found
        }
    }
}

/// Searches [`depth_past_calls`] makes at most from the states one depth query reaches
/// (each a state that only calls, counted through its calls): past them, such a state
/// counts for no character more.
const MAX_CALL_SEARCHES: u32 = 32;

/// The safe characters read for certain from `state` of a rule called from `to` of
/// another (at most `cap`): the callee's own [`safe_depth`], and when every longer run
/// leaves the callee there ([`SafeDepth::leaves_longer`]: the end of a string's chunk),
/// the caller's from `to` on top ([`depth_with_calls`]). A token of the slices within it
/// is read whole, in the callee and then in the caller, whatever the frames below.
pub(crate) fn depth_through_return<'a>(
    callee: &RuleView<'a>,
    state: StateId,
    caller: &RuleView<'a>,
    to: StateId,
    cap: usize,
    rules: &dyn Fn(RuleId) -> Option<RuleView<'a>>,
) -> usize {
    let own = callee.own_depth(state, cap);
    if !own.leaves_longer || own.depth >= cap {
        return own.depth;
    }
    own.depth + depth_with_calls(caller, to, cap - own.depth, rules)
}

/// The safe characters read for certain from `state` of `rule` (at most `cap`), its
/// calls counted: its own [`safe_depth`], with what its runs read on past the states
/// that only call ([`SafeDepth::ends_in_calls`], [`depth_past_calls`]), or, if more, a
/// callee's from its start, and when every longer run leaves the callee there
/// ([`SafeDepth::leaves_longer`]), what `rule` reads on from the call's return state (a
/// long string's chunks, one call after another). `rules` gives the callees' automata.
/// Each way reads every run of its depth by itself, so the largest holds.
pub(crate) fn depth_with_calls<'a>(
    rule: &RuleView<'a>,
    state: StateId,
    cap: usize,
    rules: &dyn Fn(RuleId) -> Option<RuleView<'a>>,
) -> usize {
    reads_on(rule, state, rule.own_depth(state, cap), cap, rules)
}

/// [`depth_with_calls`] from `state`'s own [`safe_depth`] (without excluded
/// characters), `own`, found already.
pub(crate) fn reads_on<'a>(
    rule: &RuleView<'a>,
    state: StateId,
    own: SafeDepth,
    cap: usize,
    rules: &dyn Fn(RuleId) -> Option<RuleView<'a>>,
) -> usize {
    let searches = Cell::new(MAX_CALL_SEARCHES);
    reads_on_within(rule, state, own, cap, rules, &searches)
}

/// [`reads_on`] (and so [`depth_with_calls`]), with at most `searches` more
/// [`depth_past_calls`] searches.
fn reads_on_within<'a>(
    rule: &RuleView<'a>,
    state: StateId,
    own: SafeDepth,
    cap: usize,
    rules: &dyn Fn(RuleId) -> Option<RuleView<'a>>,
    searches: &Cell<u32>,
) -> usize {
    let mut best = own.depth;
    if own.ends_in_calls && own.depth > 0 && own.depth < cap {
        best = best.max(depth_past_calls(rule, state, cap, rules, searches));
    }
    for &(callee, back) in rule.dfa.calls(state) {
        if best >= cap {
            break;
        }
        let Some(view) = rules(callee) else { continue };
        let own = view.start_depth(cap);
        let mut depth = own.depth;
        if own.leaves_longer && own.depth > 0 && own.depth < cap {
            let cap = cap - own.depth;
            depth += reads_on_within(rule, back, rule.own_depth(back, cap), cap, rules, searches);
        }
        best = best.max(depth);
    }
    best.min(cap)
}

/// The safe characters read for certain from `state` of `rule` (at most `cap`) when its
/// runs reach states that refuse every safe character but call rules: a breadth-first
/// search by characters in which each such state ends its runs there and counts what
/// they read on from it ([`depth_with_calls`]: its calls, and after their return). Each
/// run leads to one state of each layer, so the least of its branches holds. A state
/// that reads some safe characters but not all ends the search.
///
/// A lower bound: past [`MAX_VISITED_STATES`] states, a layer of more than
/// [`MAX_LEVEL_STATES`], or `searches` (each state that only calls takes one), it counts
/// what it has read so far.
fn depth_past_calls<'a>(
    rule: &RuleView<'a>,
    state: StateId,
    cap: usize,
    rules: &dyn Fn(RuleId) -> Option<RuleView<'a>>,
    searches: &Cell<u32>,
) -> usize {
    let (dfa, reps) = (rule.dfa, class_reps(rule.dfa));
    let mut visited: Vec<StateId> = vec![state];
    let mut layer: StateSet = smallvec::smallvec![state];
    let (mut bound, mut depth) = (cap, 0);
    while depth < bound && !layer.is_empty() {
        let mut next = StateSet::new();
        for &s in &layer {
            if depth > 0 && refuses_every_char_at(dfa, s) {
                let left = searches.get();
                let on = if left == 0 || dfa.calls(s).is_empty() {
                    0
                } else {
                    searches.set(left - 1);
                    let cap = bound - depth;
                    reads_on_within(rule, s, rule.own_depth(s, cap), cap, rules, searches)
                };
                bound = bound.min(depth + on);
                continue;
            }
            match step_char(dfa, rule.exits, reps, &smallvec::smallvec![s], None).next {
                Some(after) => next.extend(after),
                None => return bound.min(depth),
            }
        }
        next.sort_unstable();
        next.dedup();
        next.retain(|t| !visited.contains(t));
        if next.len() > MAX_LEVEL_STATES || visited.len() + next.len() > MAX_VISITED_STATES {
            return bound.min(depth + 1);
        }
        visited.extend_from_slice(&next);
        layer = next;
        depth += 1;
    }
    bound.min(cap)
}

/// [`safe_depth`]'s search, reading the safe characters (only those `reference` reads,
/// see [`step_char`]), and whether a state reached on the way (after at least one byte)
/// was open.
fn search_depth(
    dfa: &Dfa,
    exits: &RuleExits,
    state: StateId,
    cap: usize,
    memo: &[AtomicU32],
    reference: Option<StateId>,
) -> (SafeDepth, bool) {
    // Each state visited, with the layer it was first met in (its distance from `state`).
    let mut visited: Vec<(StateId, u32)> = vec![(state, 0)];
    let mut layer: StateSet = smallvec::smallvec![state];
    let mut open = false;
    let mut exact_layers = true;
    let mut depth = 0;
    let mut unbounded = false;
    let mut rejects_longer = false;
    let mut leaves_longer = false;
    let mut ends_in_calls = false;
    let reps = class_reps(dfa);
    let known =
        |s: StateId| memo.get(s.index()).map_or(UNKNOWN_DEPTH, |m| m.load(Ordering::Relaxed));
    let found = loop {
        if depth >= cap {
            break cap;
        }
        if depth > 0 {
            // The layer's least known bound (every state known), as a depth from `state`.
            let least = layer.iter().try_fold(UNBOUNDED_DEPTH, |least, &s| match known(s) {
                UNKNOWN_DEPTH => None,
                m => Some(least.min(m)),
            });
            match least {
                Some(UNBOUNDED_DEPTH) => {
                    unbounded = true;
                    break cap;
                }
                // A lower bound ends the search where it puts the depth past the slices
                // read exactly (only the depth matters there, not `rejects_longer`).
                Some(m) if depth > EXACT || depth + m as usize > EXACT + 1 => {
                    break cap.min(depth + m as usize)
                }
                _ => {}
            }
        }
        let step = step_char(dfa, exits, reps, &layer, reference);
        let Some(next) = step.next else {
            let refuses = depth > 0 && exact_layers && refuses_every_char(dfa, &layer);
            rejects_longer = refuses && !open;
            leaves_longer =
                refuses && layer.iter().all(|&s| dfa.is_accepting(s) && is_open(exits, s));
            ends_in_calls = (refuses && layer.len() == 1)
                || depth > 0
                    && layer
                        .iter()
                        .any(|&s| !dfa.calls(s).is_empty() && refuses_every_char_at(dfa, s));
            break depth;
        };
        open |= step.open;
        let before = next.len();
        layer = next.into_iter().filter(|s| !visited.iter().any(|&(v, _)| v == *s)).collect();
        exact_layers &= layer.len() == before;
        if layer.is_empty() {
            unbounded = true;
            break cap;
        }
        if visited.len() + layer.len() > MAX_VISITED_STATES {
            break depth + 1;
        }
        visited.extend(layer.iter().map(|&s| (s, depth as u32 + 1)));
        depth += 1;
    };
    for &(s, at) in &visited {
        let Some(m) = memo.get(s.index()) else { continue };
        // Unbounded: every state reachable from a visited one was visited or known
        // unbounded, and none refuses a character. Otherwise a state first met after
        // `at` characters is at least `found - at` characters from one that refuses a
        // character (or `state` would be nearer): a lower bound kept if larger.
        let bound =
            if unbounded { UNBOUNDED_DEPTH } else { found.saturating_sub(at as usize) as u32 };
        let current = m.load(Ordering::Relaxed);
        if current == UNKNOWN_DEPTH || (current != UNBOUNDED_DEPTH && current < bound) {
            m.store(bound, Ordering::Relaxed);
        }
    }
    (SafeDepth { depth: found, rejects_longer, leaves_longer, ends_in_calls }, open)
}
