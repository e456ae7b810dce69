//! Token masks: which tokens may come next.
//!
//! The vocabulary is walked in byte order ([`grammask_tokenset::SortedVocab`]), keeping
//! the matcher's closure after each prefix length: a token shares `lcp` bytes with the
//! previous one, so only its remaining bytes are read. When a prefix is refused, every
//! token that starts with it is skipped at once.
//!
//! With the adaptive token mask cache on (the default), the walk only visits the
//! context-dependent tokens of each stack's position ([`crate::mask_cache`]); the rest
//! come from the cache. A position under a return position has those tokens classified
//! once more with it (a parent entry), those that may return below it once more with the
//! next return position, and the walk then visits only the ones that may return below
//! both. A position inside a leaf rule that the cache walks through is
//! classified with its return position from the first visit (a through entry).
//!
//! A token is allowed when its last byte is read by some stack. Every automaton state
//! can still finish its rule and every rule can finish, so an allowed token
//! never leads into a dead end.

use crate::compiler::CompiledGrammar;
use crate::error::MatchError;
use crate::ids::SortedPos;
use crate::ids::TokenSetId;
use crate::mask_cache::counters::{self, Path, Work};
use crate::mask_cache::{MaskEntry, ParentMask, PositionMask, TokenList};
use crate::matcher::{close_into, step_byte_into, Closure};
use crate::stack::{Position, Stack};
use grammask_tokenset::{bitmask_len, clear_bit, get_bit, set_bit, Vocabulary};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Sets the bits of the stop tokens.
pub(crate) fn set_stop_tokens(vocab: &Vocabulary, bitmask: &mut [u32]) {
    for &id in vocab.stop_tokens() {
        set_bit(bitmask, id);
    }
}

/// Whether token `id` is in the grammar's token set `set`.
pub(crate) fn token_set_contains(grammar: &CompiledGrammar, set: TokenSetId, id: u32) -> bool {
    let set = &grammar.token_sets[set.index()];
    set.ids.binary_search(&id).is_ok() != set.negated
}

/// Fills `bitmask` (already zeroed) from the closure of the current stacks.
pub(crate) fn fill(
    grammar: &CompiledGrammar,
    closure: &Closure,
    bitmask: &mut [u32],
) -> Result<(), MatchError> {
    let vocab = &grammar.vocab;
    fill_text(grammar, closure, bitmask)?;
    // A stop token ends the output wherever it is taken, so it is never allowed by its
    // bytes (a tokenizer may give a stop token the kind `Normal`): only where the root
    // can end, or where the grammar names it.
    for &id in vocab.stop_tokens() {
        clear_bit(bitmask, id);
    }
    if closure.can_end {
        set_stop_tokens(vocab, bitmask);
    }
    // Tokens the grammar names.
    for config in &closure.configs {
        let dfa = grammar.dfa(config.top);
        for &(set, _) in dfa.token_edges(config.top.state) {
            let token_set = &grammar.token_sets[set.index()];
            if token_set.negated {
                for id in 0..vocab.id_bound() as u32 {
                    if vocab.kind(id).is_some() && token_set_contains(grammar, set, id) {
                        set_bit(bitmask, id);
                    }
                }
            } else {
                for &id in &token_set.ids {
                    // Padding ids (no token) are never allowed, even when named.
                    if vocab.kind(id).is_some() {
                        set_bit(bitmask, id);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Sets the bits of the text tokens some stack reads to their end.
fn fill_text(
    grammar: &CompiledGrammar,
    closure: &Closure,
    bitmask: &mut [u32],
) -> Result<(), MatchError> {
    if closure.configs.is_empty() {
        return Ok(());
    }
    let Some(cache) = &grammar.mask_cache else {
        return counters::timed(Work::StackWalk, || walk(grammar, closure, None, bitmask, None));
    };
    // Context-independent tokens from the cache, then the context-dependent ones of each
    // position checked against that stack alone (the other stacks are other configs).
    // (stack, its entry, how many return positions its dependent tokens are classified
    // with once more: one below a position's own entry, two below a through entry, whose
    // tokens may leave the caller's rule)
    let mut dependent: Vec<(&Stack, Entry<'_>, usize)> = Vec::new();
    for config in &closure.configs {
        // Inside a rule walked through: classified with its return position.
        let through = cache.walks_through(grammar, config.top.rule).then(|| config.pop()).flatten();
        let (entry, below) = match through {
            Some(parent) => {
                let entry = cache.through_entry(grammar, config.top, parent.top);
                counters::add(Path::ThroughEntry, || ordinary(grammar) - entry.dependent.len());
                (Entry::Through(entry), 2)
            }
            None => {
                let entry = cache.position_entry(grammar, config.top);
                counters::add(Path::PositionEntry, || ordinary(grammar) - entry.dependent.len());
                (Entry::Cache(entry), 1)
            }
        };
        entry.apply(bitmask);
        if !entry.dependent.is_empty() {
            dependent.push((config, entry, below));
        }
    }
    for (config, entry, below) in dependent {
        // Deeper first: most of these tokens end inside the rule below. `frames`: the top
        // and up to two return positions below it, bottom first.
        let mut frames = [config.top; 3];
        let mut stack = config.clone();
        let mut n = 1;
        while n < frames.len() {
            let Some(next) = stack.pop() else { break };
            frames[n] = next.top;
            stack = next;
            n += 1;
        }
        frames[..n].reverse();
        // A shorter stack is classified whole: the root's own dependent tokens (those
        // that enter a callee such as `json-value` after some bytes) are then decided
        // once, not walked at every visit.
        let first = n.min(below + 1);
        let mut held = cache.parent_entry(grammar, &frames[n - first..n], &entry.dependent)?;
        if let Some(deeper) = &held {
            deeper.accepted.apply(bitmask);
            counters::add(Path::ParentEntry, || entry.dependent.len() - deeper.dependent.len());
        }
        // A position's own tokens that may return below its return position (`"}` at
        // the end of an object's member) are classified once more, one frame deeper.
        if let Some(deeper) = held.as_ref().filter(|d| first < n && !d.dependent.is_empty()) {
            let deepest = cache.parent_entry(grammar, &frames[..n], &deeper.dependent)?;
            if let Some(deepest) = deepest {
                deepest.accepted.apply(bitmask);
                counters::add(Path::ParentEntry, || {
                    deeper.dependent.len() - deepest.dependent.len()
                });
                held = Some(deepest);
            }
        }
        let remaining = held.as_ref().map_or(&entry.dependent[..], |d| &d.dependent[..]);
        if !remaining.is_empty() {
            let seed = Closure { configs: vec![config.clone()], can_end: false };
            counters::timed(Work::StackWalk, || {
                walk(grammar, &seed, Some(remaining), bitmask, None)
            })?;
        }
    }
    Ok(())
}

/// The number of ordinary tokens (those of the sorted vocabulary), read only by the
/// path counters.
fn ordinary(grammar: &CompiledGrammar) -> usize {
    grammar.vocab.sorted().len()
}

/// A stack top's classification: its position's cache entry, or its entry with the
/// return position inside a rule walked through.
enum Entry<'a> {
    Cache(MaskEntry<'a>),
    Through(Arc<PositionMask>),
}

impl std::ops::Deref for Entry<'_> {
    type Target = PositionMask;

    fn deref(&self) -> &PositionMask {
        match self {
            Entry::Cache(entry) => entry,
            Entry::Through(entry) => entry,
        }
    }
}

/// Classifies the context-dependent tokens `dependent` of the top of `frames` (positions,
/// bottom first: the return positions below the top, then the top) as if the stack held
/// those frames and nothing below them ([`ParentMask`]).
pub(crate) fn classify_below(
    grammar: &CompiledGrammar,
    frames: &[Position],
    dependent: &[SortedPos],
) -> Result<ParentMask, MatchError> {
    // Returning below the bottom frame ends the stack (`can_end`).
    let seed = Closure { configs: vec![stack_of(frames)], can_end: false };
    let mut bits = vec![0u32; bitmask_len(grammar.vocab.vocab_size())];
    let mut still = Vec::new();
    walk(grammar, &seed, Some(dependent), &mut bits, Some(&mut still))?;
    let sorted = grammar.vocab.sorted();
    let accepted = dependent
        .iter()
        .map(|&p| sorted.token_id(p.index()))
        .filter(|&id| get_bit(&bits, id))
        .collect();
    Ok(ParentMask { accepted: TokenList::Ids(accepted), dependent: still })
}

/// The stack of `frames` (positions, bottom first, the last its top) and nothing below.
fn stack_of(frames: &[Position]) -> Stack {
    let mut stack = Stack::root(frames[0]);
    for pair in frames.windows(2) {
        stack = stack.push(pair[0], pair[1]);
    }
    stack
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The closures after each prefix of the text read last, kept so that the next text
/// (in byte order) reads only the bytes past the prefix it shares with it; and every
/// closure met, with the step between them, so that a prefix whose last byte leads to a
/// closure met before (the characters of a string, read by every token after a quote
/// alike) is read by a lookup.
struct Levels {
    /// The closures met, each once while the bound allows: the seed first.
    met: Vec<Closure>,
    /// The closures met after a byte, by the stacks that byte's steps gave before their
    /// closure.
    by_steps: FxHashMap<Vec<Stack>, u32>,
    /// The closure a byte leads to from a closure met ([`REFUSED`] when no stack reads
    /// it).
    next: FxHashMap<(u32, u8), u32>,
    /// Stacks held by the closures met.
    met_stacks: usize,
    /// Stacks the closures met may hold ([`MAX_MET_STACKS`]).
    bound: usize,
    /// `path[d]`: the closure after the first `d` bytes of the text read last.
    path: Vec<u32>,
    /// `ended_by[d]`: whether a closure after at most `d` bytes could return below the
    /// bottom.
    ended_by: Vec<bool>,
    /// `path[0..=depth]` hold for the text read last.
    depth: usize,
    /// The stacks after one byte, before their closure.
    raw: Vec<Stack>,
}

/// [`Levels::next`]'s mark of a byte no stack reads.
const REFUSED: u32 = u32::MAX;

/// Stacks the closures met by one [`Levels`] may hold; past it only those of the text
/// being read are kept, and the others are met anew.
const MAX_MET_STACKS: usize = 1 << 16;

impl Levels {
    /// Levels holding only `seed`, the closure before any byte.
    fn new(seed: &Closure) -> Levels {
        Levels::bounded(seed, MAX_MET_STACKS)
    }

    /// [`Levels::new`], the closures met holding at most `bound` stacks.
    fn bounded(seed: &Closure, bound: usize) -> Levels {
        Levels {
            bound,
            met: vec![seed.clone()],
            by_steps: FxHashMap::default(),
            next: FxHashMap::default(),
            met_stacks: seed.configs.len(),
            path: vec![0],
            ended_by: vec![seed.can_end],
            depth: 0,
            raw: Vec::new(),
        }
    }

    /// Starts the texts read next from `seed` (the closure before any byte), keeping the
    /// closures met and the steps between them; past the bound, only `seed`.
    fn reseed(&mut self, seed: &Closure) {
        if self.met_stacks + seed.configs.len() > self.bound {
            self.met.clear();
            self.by_steps.clear();
            self.next.clear();
            self.met_stacks = 0;
        }
        self.met_stacks += seed.configs.len();
        self.met.push(seed.clone());
        self.path.clear();
        self.path.push((self.met.len() - 1) as u32);
        self.ended_by.clear();
        self.ended_by.push(seed.can_end);
        self.depth = 0;
    }

    /// Heap bytes, about: the closures met (each stack held twice, in its closure and in
    /// the steps that found it) and the steps between them.
    fn memory(&self) -> usize {
        self.met_stacks * 2 * std::mem::size_of::<Stack>()
            + self.met.len() * std::mem::size_of::<Closure>()
            + self.by_steps.len() * std::mem::size_of::<(Vec<Stack>, u32)>()
            + self.next.len() * std::mem::size_of::<((u32, u8), u32)>()
    }

    /// The closure after `d` bytes of the text read last.
    fn closure(&self, d: usize) -> &Closure {
        &self.met[self.path[d] as usize]
    }

    /// Reads `bytes`, whose first `shared` bytes are those of the text read last (their
    /// closures are reused up to the depth kept); returns the index of the byte no
    /// stack reads, if there is one.
    fn read(
        &mut self,
        grammar: &CompiledGrammar,
        bytes: &[u8],
        shared: usize,
    ) -> Result<Option<usize>, MatchError> {
        self.depth = shared.min(self.depth);
        for (d, &b) in bytes.iter().enumerate().skip(self.depth) {
            let from = self.path[d];
            let to = match self.next.get(&(from, b)) {
                Some(&to) => to,
                None => self.step(grammar, d, b)?,
            };
            if to == REFUSED {
                return Ok(Some(d));
            }
            if self.path.len() <= d + 1 {
                self.path.push(to);
                self.ended_by.push(false);
            } else {
                self.path[d + 1] = to;
            }
            self.ended_by[d + 1] = self.ended_by[d] || self.met[to as usize].can_end;
            self.depth = d + 1;
        }
        Ok(None)
    }

    /// The closure byte `b` leads to from the one after `d` bytes, found among those met
    /// or closed now, and remembered.
    fn step(&mut self, grammar: &CompiledGrammar, d: usize, b: u8) -> Result<u32, MatchError> {
        let from = &self.met[self.path[d] as usize];
        step_byte_into(grammar, &from.configs, b, &mut self.raw);
        let to = if self.raw.is_empty() {
            REFUSED
        } else if let Some(&known) = self.by_steps.get(self.raw.as_slice()) {
            known
        } else {
            let mut closure = Closure::default();
            close_into(grammar, &self.raw, &mut closure)?;
            if self.met_stacks + closure.configs.len() > self.bound {
                self.forget(d);
            }
            self.met_stacks += closure.configs.len();
            self.met.push(closure);
            let to = (self.met.len() - 1) as u32;
            self.by_steps.insert(self.raw.clone(), to);
            to
        };
        self.next.insert((self.path[d], b), to);
        Ok(to)
    }

    /// Forgets every closure met but those after the first `d` bytes of the text being
    /// read.
    fn forget(&mut self, d: usize) {
        // The same closure may stand at several depths: each keeps a copy.
        self.met = self.path[..=d].iter().map(|&i| self.met[i as usize].clone()).collect();
        for (k, i) in self.path[..=d].iter_mut().enumerate() {
            *i = k as u32;
        }
        self.met_stacks = self.met.iter().map(|c| c.configs.len()).sum();
        self.by_steps.clear();
        self.next.clear();
    }
}

/// The sorted-vocabulary walk from `seed`: over every token (`positions` is `None`) or
/// over the listed sorted-vocabulary positions (ascending). Sets the bit of each token
/// some stack reads to its end; tokens already set are not walked again.
///
/// With `ended`, the seed's bottom is a boundary rather than the end of the document:
/// the listed tokens that no stack reads to the end, but whose prefix left a closure
/// that could return below the bottom (`can_end`) with bytes still to read, are pushed
/// to `ended` (ascending), as they depend on what lies below.
///
/// Kept out of line, so that the byte steps inline into its loop.
#[inline(never)]
fn walk(
    grammar: &CompiledGrammar,
    seed: &Closure,
    positions: Option<&[SortedPos]>,
    bitmask: &mut [u32],
    mut ended: Option<&mut Vec<SortedPos>>,
) -> Result<(), MatchError> {
    let sorted = grammar.vocab.sorted();
    let count = positions.map_or(sorted.len(), <[SortedPos]>::len);
    counters::add(Path::StackWalk, || count);
    let position = |k: usize| positions.map_or(k, |p| p[k].index());
    let mut levels = Levels::new(seed);
    let mut previous: &[u8] = &[];
    let mut k = 0usize;
    while k < count {
        let i = position(k);
        let id = sorted.token_id(i);
        if positions.is_some() && get_bit(bitmask, id) {
            k += 1;
            continue;
        }
        let bytes = sorted.bytes(i);
        let shared = match positions {
            None => sorted.lcp(i),
            Some(_) => common_prefix_len(previous, bytes),
        };
        previous = bytes;
        match levels.read(grammar, bytes, shared)? {
            Some(d) => match positions {
                None => k = sorted.next_without_prefix(i, d + 1),
                Some(p) => {
                    let refused = &bytes[..=d];
                    let first = k;
                    k += 1;
                    while k < count && sorted.bytes(p[k].index()).starts_with(refused) {
                        k += 1;
                    }
                    if let Some(ended) = ended.as_deref_mut().filter(|_| levels.ended_by[d]) {
                        ended.extend_from_slice(&p[first..k]);
                    }
                }
            },
            None => {
                if !bytes.is_empty() {
                    set_bit(bitmask, id);
                }
                k += 1;
            }
        }
    }
    Ok(())
}

/// Stacks the closures of one rule's [`ExitWalks`] may hold; past it they start over.
const MAX_EXIT_STACKS: usize = 1 << 14;

/// The closures met reading tokens from the positions of one rule, each alone in its
/// frame ([`token_exits`]), kept from one position to the next: at the characters of a
/// string, a position's walks reach after one byte the closures the position before
/// reached after two, and read on from them by lookups.
#[derive(Default)]
pub(crate) struct ExitWalks {
    levels: Option<Levels>,
}

impl std::fmt::Debug for ExitWalks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExitWalks").field("bytes", &self.memory()).finish()
    }
}

impl ExitWalks {
    /// Heap bytes, about.
    pub(crate) fn memory(&self) -> usize {
        self.levels.as_ref().map_or(0, Levels::memory)
    }
}

/// Where the listed tokens (sorted-vocabulary positions, ascending) may leave the frame
/// `top`, read from it alone: per token, whether some path reads it to its end inside
/// the frame, and the offsets (bytes read, short of the whole token) after which the
/// frame may return to the one below it. `walks`: the closures met from other positions
/// of `top`'s rule.
pub(crate) fn token_exits(
    grammar: &CompiledGrammar,
    top: Position,
    positions: &[SortedPos],
    walks: &mut ExitWalks,
) -> Result<Vec<TokenExits>, MatchError> {
    let sorted = grammar.vocab.sorted();
    let seed = Closure { configs: vec![Stack::root(top)], can_end: false };
    let levels = match &mut walks.levels {
        Some(levels) => {
            levels.reseed(&seed);
            levels
        }
        None => walks.levels.insert(Levels::bounded(&seed, MAX_EXIT_STACKS)),
    };
    let mut previous: &[u8] = &[];
    let mut out = Vec::with_capacity(positions.len());
    for &p in positions {
        let bytes = sorted.bytes(p.index());
        let shared = common_prefix_len(previous, bytes);
        previous = bytes;
        let refused = levels.read(grammar, bytes, shared)?;
        // Prefixes read: every byte, or those before the one refused.
        let read = refused.unwrap_or(bytes.len());
        let offsets =
            (1..=read.min(bytes.len().saturating_sub(1))).filter(|&d| levels.closure(d).can_end);
        out.push(TokenExits {
            token: p,
            read_whole: refused.is_none() && !bytes.is_empty(),
            offsets: offsets.map(|d| d as u16).collect(),
        });
    }
    Ok(out)
}

/// Where one token may leave a frame ([`token_exits`]).
#[derive(Debug)]
pub(crate) struct TokenExits {
    /// Its sorted-vocabulary position.
    pub(crate) token: SortedPos,
    /// Whether some path reads it to its end inside the frame.
    pub(crate) read_whole: bool,
    /// The bytes read when the frame may return, ascending, each short of the token.
    pub(crate) offsets: smallvec::SmallVec<[u16; 2]>,
}

/// What reading a text from a closure whose bottom is a boundary gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Some stack reads it to its end.
    Read,
    /// No stack reads it, but a closure after some of its bytes could return below the
    /// bottom: it depends on what lies below.
    Below,
    /// Refused whatever lies below.
    Refused,
}

/// Reads each of `texts` (in byte order) from the stack of `frames` (return positions,
/// bottom first, the top the position just returned to), whose bottom is a boundary.
pub(crate) fn read_texts(
    grammar: &CompiledGrammar,
    frames: &[Position],
    texts: &[&[u8]],
) -> Result<Vec<Outcome>, MatchError> {
    let mut seed = Closure::default();
    close_into(grammar, &[stack_of(frames)], &mut seed)?;
    let mut levels = Levels::new(&seed);
    let mut previous: &[u8] = &[];
    let mut out = Vec::with_capacity(texts.len());
    for &bytes in texts {
        let shared = common_prefix_len(previous, bytes);
        previous = bytes;
        out.push(match levels.read(grammar, bytes, shared)? {
            None if !bytes.is_empty() => Outcome::Read,
            None => Outcome::Refused,
            Some(d) if levels.ended_by[d] => Outcome::Below,
            Some(_) => Outcome::Refused,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Compiler;
    use grammask_tokenset::Vocabulary;

    /// Token exits read with the closures of other positions kept (and with a bound so
    /// small that every position starts over) are those read afresh, at every
    /// character of a counted string.
    #[test]
    fn exits_from_kept_closures_are_those_read_afresh() {
        let src = r#"root ::= "[" ("\"" [a-z]{0,6} "\"" ws ("," ws)?)* "]"
ws ::= [ ]?
"#;
        let grammar = grammask_syntax::parse_gbnf(src).unwrap().grammar;
        let tokens: Vec<Vec<u8>> = [
            "a", "ab", "abc", "abcd", "\"", "a\"", "ab\",", "\",", "\"]", "x\" ,\"", "zz\"]",
            "a\"a", "]", " ",
        ]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .collect();
        let vocab = Vocabulary::from_byte_tokens(tokens, &[], &[], None).unwrap();
        let compiled = Compiler::new(&vocab).compile_grammar(&grammar).unwrap();
        let root = compiled.grammar.root;
        let dfa = compiled.dfa(compiled.initial.top);
        let all: Vec<SortedPos> = (0..vocab.sorted().len()).map(SortedPos::new).collect();
        let mut kept = ExitWalks::default();
        let mut starting_over = ExitWalks { levels: Some(Levels::bounded(&Closure::default(), 2)) };
        // The positions after `["` and each of six letters.
        let mut state = dfa.next(dfa.start(), b'[').and_then(|s| dfa.next(s, b'"')).unwrap();
        for k in 0..=6 {
            let top = Position { rule: root, state };
            let fresh = token_exits(&compiled, top, &all, &mut ExitWalks::default()).unwrap();
            for walks in [&mut kept, &mut starting_over] {
                let exits = token_exits(&compiled, top, &all, walks).unwrap();
                for (a, b) in fresh.iter().zip(&exits) {
                    let token = String::from_utf8_lossy(vocab.sorted().bytes(a.token.index()));
                    assert_eq!(a.token, b.token);
                    assert_eq!(a.read_whole, b.read_whole, "{token:?} after {k} letters");
                    assert_eq!(a.offsets, b.offsets, "{token:?} after {k} letters");
                }
            }
            if k < 6 {
                state = dfa.next(state, b'a').unwrap();
            }
        }
        assert!(kept.memory() > 0);
    }

    /// Forgetting the closures met past the bound changes no answer: texts read with
    /// every closure kept and with almost none give the same refusals, ends and exits.
    #[test]
    fn closures_forgotten_past_the_bound_give_the_same_answers() {
        let src = r#"root ::= "[" ws (item ("," ws item)*)? "]"
item ::= "\"" [a-z]{0,6} "\"" ws | root ws
ws ::= [ ]?
"#;
        let grammar = grammask_syntax::parse_gbnf(src).unwrap().grammar;
        let vocab = Vocabulary::from_byte_tokens(vec![b"x".to_vec()], &[], &[], None).unwrap();
        let compiled = Compiler::new(&vocab).compile_grammar(&grammar).unwrap();
        let mut seed = Closure::default();
        close_into(&compiled, std::slice::from_ref(&compiled.initial), &mut seed).unwrap();
        let mut texts: Vec<&[u8]> = vec![
            b"[",
            b"[\"",
            b"[\"ab",
            b"[\"abcdefg",
            b"[\"a\",",
            b"[\"a\", [",
            b"[[[[",
            b"[[]",
            b"[[] ]",
            b"[\"\"]",
            b"]",
            b"[ \"zz\" ,\"y\"]",
        ];
        texts.sort();
        let mut kept = Levels::new(&seed);
        let mut forgetting = Levels::bounded(&seed, 2);
        let mut previous: &[u8] = &[];
        for &text in &texts {
            let shared = common_prefix_len(previous, text);
            previous = text;
            let a = kept.read(&compiled, text, shared).unwrap();
            let b = forgetting.read(&compiled, text, shared).unwrap();
            assert_eq!(a, b, "{:?}", String::from_utf8_lossy(text));
            let read = a.unwrap_or(text.len());
            for d in 0..=read {
                assert_eq!(kept.closure(d).configs, forgetting.closure(d).configs);
                assert_eq!(kept.closure(d).can_end, forgetting.closure(d).can_end);
                assert_eq!(kept.ended_by[d], forgetting.ended_by[d]);
            }
        }
        assert!(forgetting.met.len() < kept.met.len(), "the bound made it forget");
    }
}
