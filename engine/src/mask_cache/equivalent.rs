//! Return positions that no token can tell apart: states of one rule's automaton that
//! behave alike on every text of at most the vocabulary's longest token, so that the
//! entries keyed by return positions (through and parent entries) serve all of them.
//!
//! The copies of a long string's chunk, or of its characters, are such states: the
//! tokens that leave a chunk return to a different state of the caller at every step of
//! the string, and without this each step would be a new key, its context-dependent
//! tokens classified (or walked against the stack) again.
//!
//! Two states are *equivalent up to `d` bytes* when they are the same state, or both
//! accept or neither, they read the same byte classes and reach states equivalent up to
//! `d - 1` bytes, and they make the same calls and return to states equivalent up to
//! `d - w` bytes, `w` the fewest bytes the callee reads. A classification from a return
//! position reads at most one token's bytes past it, so equivalent return positions give
//! the same entry. A state met as a return position is compared with the last few
//! representatives of its shape (acceptance, classes read, calls), pair by pair down the
//! depth: copies of one chunk meet the same states after a few pairs. A comparison that
//! grows past its budget counts as a difference, so that an answer costs little and is
//! never a wrong merge.

use crate::automaton::dfa::DEAD;
use crate::automaton::Dfa;
use crate::ids::StateId;
use grammask_syntax::ir::{Expr, Grammar, RuleId};
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

/// Pairs one comparison may visit; past it the states count as different.
const MAX_PAIRS: usize = 1_024;
/// Representatives of one shape a new state is compared with, the most recent first.
const MAX_CANDIDATES: usize = 2;

/// The fewest bytes of each rule's texts, or `cap` when that is more (also when the
/// rule has no text), found as the rules whose return positions are compared need them:
/// only the rules their callees reach are read, not the whole grammar (a large schema's
/// grammar holds thousands of rules, most of them read by no comparison).
///
/// A comparison up to `depth` bytes needs no length past `depth`, so with `cap = depth +
/// 1` a sequence is read only until its items reach the cap: a large rule's long literal
/// keys end the reading of its body early.
#[derive(Debug)]
pub(crate) struct ShortestTexts {
    cap: u32,
    /// Per rule: its length once found, [`UNKNOWN`] before.
    len: Vec<AtomicU32>,
    /// Held while lengths are found, so that each is found once.
    finding: Mutex<()>,
}

/// A length not found yet (lengths are at most the cap, below it).
const UNKNOWN: u32 = u32::MAX;

impl ShortestTexts {
    /// No length found yet, for a grammar of `rules` rules.
    pub(crate) fn new(rules: usize, cap: u32) -> ShortestTexts {
        let cap = cap.min(UNKNOWN - 1);
        ShortestTexts {
            cap,
            len: (0..rules).map(|_| AtomicU32::new(UNKNOWN)).collect(),
            finding: Mutex::default(),
        }
    }

    fn known(&self, rule: usize) -> Option<u32> {
        let len = self.len.get(rule)?.load(Ordering::Acquire);
        (len != UNKNOWN).then_some(len)
    }

    /// The length of `rule`, found by [`ShortestTexts::find`] before (the cap if not).
    pub(crate) fn get(&self, rule: RuleId) -> u32 {
        debug_assert!(self.known(rule.index()).is_some(), "{rule:?} not found yet");
        self.known(rule.index()).unwrap_or(self.cap)
    }

    /// Finds the lengths of `rules` and of the rules their reading reaches, those not
    /// found yet.
    ///
    /// Each rule is read last met first, a rule it reads whose length is not known yet
    /// met there (at the cap until read), and read again only when a rule its reading used
    /// has since fallen (lengths only fall, so this ends). A sequence whose items reach
    /// the cap is read no further, so the rules past them are not met. The rules met are
    /// closed under what their readings used, so each length is the whole grammar's.
    pub(crate) fn find(&self, grammar: &Grammar, rules: impl IntoIterator<Item = RuleId>) {
        let asked: Vec<usize> =
            rules.into_iter().map(RuleId::index).filter(|&r| self.known(r).is_none()).collect();
        if asked.is_empty() {
            return;
        }
        let _finding = self.finding.lock().unwrap_or_else(PoisonError::into_inner);
        let cap = self.cap;
        let mut met = Met::default();
        for r in asked {
            if r < self.len.len() && self.known(r).is_none() {
                met.place(r, cap);
            }
        }
        let mut used = Vec::new();
        while let Some(i) = met.pending.pop() {
            met.queued[i] = false;
            used.clear();
            let l = shortest(&grammar.rules[met.order[i]].body, cap, &mut |r| {
                if let Some(known) = self.known(r) {
                    return known;
                }
                if r >= self.len.len() {
                    // No such rule (a grammar checked before compiling has none).
                    return cap;
                }
                let j = met.place(r, cap);
                used.push(j);
                met.len[j]
            });
            for &j in &used {
                if met.readers[j].last() != Some(&i) {
                    met.readers[j].push(i);
                }
            }
            if l < met.len[i] {
                met.len[i] = l;
                for k in 0..met.readers[i].len() {
                    let reader = met.readers[i][k];
                    if !met.queued[reader] {
                        met.queued[reader] = true;
                        met.pending.push(reader);
                    }
                }
            }
        }
        for (&r, &l) in met.order.iter().zip(&met.len) {
            self.len[r].store(l, Ordering::Release);
        }
    }
}

/// The rules one [`ShortestTexts::find`] met, by their place in `order`.
#[derive(Default)]
struct Met {
    /// Each rule's place in `order`.
    place: HashMap<usize, usize>,
    order: Vec<usize>,
    /// The length of each so far (the cap until read).
    len: Vec<u32>,
    /// Per rule: the rules whose reading used its length.
    readers: Vec<Vec<usize>>,
    /// The rules to read (again), and whether each is among them.
    pending: Vec<usize>,
    queued: Vec<bool>,
}

impl Met {
    /// The place of rule `r`, met now (to be read) if it was not.
    fn place(&mut self, r: usize, cap: u32) -> usize {
        if let Some(&i) = self.place.get(&r) {
            return i;
        }
        let i = self.order.len();
        self.place.insert(r, i);
        self.order.push(r);
        self.len.push(cap);
        self.readers.push(Vec::new());
        self.pending.push(i);
        self.queued.push(true);
        i
    }
}

/// The fewest bytes of `e`'s texts, or `cap` when that is more, given those of the
/// rules by `rule_len`.
fn shortest(e: &Expr, cap: u32, rule_len: &mut dyn FnMut(usize) -> u32) -> u32 {
    let len = match e {
        Expr::Empty => 0,
        Expr::Bytes(bytes) => u32::try_from(bytes.len()).unwrap_or(cap),
        Expr::Class(class) => class.first().map_or(cap, |c| c.len_utf8() as u32),
        Expr::ByteRanges(ranges) => {
            if ranges.is_empty() {
                cap
            } else {
                1
            }
        }
        Expr::Seq(items) => {
            let mut sum = 0u32;
            for item in items {
                if sum >= cap {
                    break;
                }
                sum = sum.saturating_add(shortest(item, cap, rule_len));
            }
            sum
        }
        Expr::Choice(alternatives) => {
            let mut least = cap;
            for a in alternatives {
                if least == 0 {
                    break;
                }
                least = least.min(shortest(a, cap, rule_len));
            }
            least
        }
        Expr::Repeat { expr, min, .. } => {
            if *min == 0 {
                0
            } else {
                shortest(expr, cap, rule_len).saturating_mul(*min)
            }
        }
        Expr::Rule(r) => rule_len(r.index()),
        // A token set reads no byte a walk counts; free text may be empty.
        Expr::Tokens(_) | Expr::Text(_) => 0,
    };
    len.min(cap)
}

/// Every rule's [`ShortestTexts`] length.
#[cfg(test)]
fn shortest_texts(grammar: &Grammar, cap: u32) -> Vec<u32> {
    let texts = ShortestTexts::new(grammar.rules.len(), cap);
    texts.find(grammar, (0..grammar.rules.len()).map(RuleId::new));
    (0..grammar.rules.len()).map(|r| texts.get(RuleId::new(r))).collect()
}

/// The representatives of one rule's return positions ([module docs](self)).
#[derive(Debug)]
pub(crate) struct Equivalence {
    /// Whether states may be merged at all: the rule reads no token set, holds no
    /// budgeted text, and every rule it calls reads at least one byte (so that depth
    /// falls at every edge).
    usable: bool,
    /// The representative of each state met.
    resolved: HashMap<StateId, StateId>,
    /// The representatives by shape, in the order met.
    by_shape: HashMap<Vec<u32>, Vec<StateId>>,
}

impl Equivalence {
    /// The representatives of `dfa`'s states, the automaton of a rule of `grammar`; the
    /// lengths of its callees are found in `shortest`.
    pub(crate) fn new(dfa: &Dfa, grammar: &Grammar, shortest: &ShortestTexts) -> Equivalence {
        let callees =
            (0..dfa.len()).flat_map(|s| dfa.calls(StateId::new(s)).iter().map(|&(c, _)| c));
        shortest.find(grammar, callees);
        let usable = !dfa.has_text_budget()
            && (0..dfa.len()).all(|s| {
                let s = StateId::new(s);
                dfa.token_edges(s).is_empty()
                    && dfa.calls(s).iter().all(|&(callee, _)| shortest.get(callee) > 0)
            });
        Equivalence { usable, resolved: HashMap::default(), by_shape: HashMap::default() }
    }

    /// The first state met that is equivalent to `state` up to `depth` bytes (found among
    /// the last representatives of its shape), else `state`, which becomes one.
    pub(crate) fn representative(
        &mut self,
        dfa: &Dfa,
        shortest: &ShortestTexts,
        state: StateId,
        depth: u16,
    ) -> StateId {
        if !self.usable {
            return state;
        }
        if let Some(&known) = self.resolved.get(&state) {
            return known;
        }
        let candidates = self.by_shape.entry(shape(dfa, state)).or_default();
        let found = candidates.iter().rev().take(MAX_CANDIDATES).copied().find(|&c| {
            let mut pairs = Pairs { dfa, shortest, seen: HashMap::default() };
            pairs.equivalent(c, state, depth) == Some(true)
        });
        let representative = found.unwrap_or_else(|| {
            candidates.push(state);
            state
        });
        self.resolved.insert(state, representative);
        representative
    }

    /// Heap bytes held (approximately: the maps' entries).
    pub(crate) fn memory(&self) -> usize {
        self.resolved.len() * 16
            + self.by_shape.iter().map(|(k, v)| 48 + 4 * (k.len() + v.len())).sum::<usize>()
    }
}

/// What a state shows before any byte: acceptance, the classes it reads (from `lo`,
/// which), the rules it calls.
fn shape(dfa: &Dfa, state: StateId) -> Vec<u32> {
    let (lo, targets) = dfa.class_row(state);
    let calls = dfa.calls(state);
    let mut parts = Vec::with_capacity(3 + targets.len() + calls.len());
    parts.extend([u32::from(dfa.is_accepting(state)), lo as u32, targets.len() as u32]);
    parts.extend(targets.iter().map(|&t| u32::from(t != DEAD)));
    parts.extend(calls.iter().map(|&(callee, _)| callee.index() as u32));
    parts
}

/// Whether `s` and `t` have the same [`shape`].
fn same_shape(dfa: &Dfa, s: StateId, t: StateId) -> bool {
    let (s_lo, s_targets) = dfa.class_row(s);
    let (t_lo, t_targets) = dfa.class_row(t);
    dfa.is_accepting(s) == dfa.is_accepting(t)
        && s_lo == t_lo
        && s_targets.len() == t_targets.len()
        && s_targets.iter().zip(t_targets).all(|(&a, &b)| (a == DEAD) == (b == DEAD))
        && dfa.calls(s).len() == dfa.calls(t).len()
        && dfa.calls(s).iter().zip(dfa.calls(t)).all(|(a, b)| a.0 == b.0)
}

/// One comparison of two states, pair by pair.
struct Pairs<'a> {
    dfa: &'a Dfa,
    shortest: &'a ShortestTexts,
    /// The pairs compared so far, by depth.
    seen: HashMap<(StateId, StateId, u16), bool>,
}

impl Pairs<'_> {
    /// Whether `s` and `t` are equivalent up to `depth` bytes; `None` past
    /// [`MAX_PAIRS`].
    fn equivalent(&mut self, s: StateId, t: StateId, depth: u16) -> Option<bool> {
        if s == t {
            return Some(true);
        }
        if let Some(&known) = self.seen.get(&(s, t, depth)) {
            return Some(known);
        }
        if self.seen.len() >= MAX_PAIRS {
            return None;
        }
        let dfa = self.dfa;
        let same = same_shape(dfa, s, t) && {
            let (_, s_targets) = dfa.class_row(s);
            let (_, t_targets) = dfa.class_row(t);
            let mut same = true;
            if depth > 0 {
                for (&a, &b) in s_targets.iter().zip(t_targets) {
                    if a != DEAD
                        && !self.equivalent(
                            StateId::new(a as usize),
                            StateId::new(b as usize),
                            depth - 1,
                        )?
                    {
                        same = false;
                        break;
                    }
                }
            }
            for (&(callee, a), &(_, b)) in dfa.calls(s).iter().zip(dfa.calls(t)) {
                if !same {
                    break;
                }
                let w = self.shortest.get(callee);
                if let Ok(w) = u16::try_from(w) {
                    if w <= depth && !self.equivalent(a, b, depth - w)? {
                        same = false;
                    }
                }
            }
            same
        };
        self.seen.insert((s, t, depth), same);
        Some(same)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::{Compiler, CompilerConfig};
    use grammask_syntax::ir::{CharClass, GrammarBuilder, RuleId};
    use grammask_tokenset::Vocabulary;

    /// `root ::= "x" chunk{0,10} "y"` with `chunk` twenty letters kept a call: the states
    /// after `k` chunks are told apart up to 40 bytes only near the end, where fewer than
    /// three chunks remain.
    #[test]
    fn copies_of_a_call_far_from_the_end_are_one_return_position() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let chunk = b.declare("chunk");
        let letter = Expr::Class(CharClass::new(false, [('a', 'z')]));
        b.define(chunk, Expr::Seq(vec![letter; 20]));
        b.define(
            root,
            Expr::seq(vec![
                Expr::literal("x"),
                Expr::repeat(Expr::Rule(chunk), 0, Some(10)),
                Expr::literal("y"),
            ]),
        );
        let grammar = b.finish(root).unwrap();
        let tokens = vec![b"x".to_vec(), b"y".to_vec(), b"a".to_vec(), b"</s>".to_vec()];
        let vocab = Vocabulary::from_byte_tokens(tokens, &[3], &[3], None).unwrap();
        let mut config = CompilerConfig::default();
        config.passes.inline_max_rule_size = 0;
        let compiled = Compiler::new(&vocab).with_config(config).compile_grammar(&grammar).unwrap();
        let root = RuleId::new(0);
        let dfa = compiled.automaton(root).unwrap();
        let shortest = ShortestTexts::new(compiled.grammar.rules.len(), 61);
        let chunk = dfa.calls(dfa.next(dfa.start(), b'x').unwrap())[0].0;
        // The state after k chunks, for k = 0..=10.
        let mut after = vec![dfa.next(dfa.start(), b'x').unwrap()];
        for _ in 0..10 {
            let &[(_, ret)] = dfa.calls(*after.last().unwrap()) else { panic!("one call") };
            after.push(ret);
        }
        let mut eq = Equivalence::new(dfa, &compiled.grammar, &shortest);
        assert_eq!(shortest.get(chunk), 20);
        let first = eq.representative(dfa, &shortest, after[1], 40);
        assert_eq!(first, after[1]);
        for (k, &state) in after.iter().enumerate().skip(2) {
            let expected = if k <= 7 { after[1] } else { state };
            assert_eq!(eq.representative(dfa, &shortest, state, 40), expected, "k = {k}");
        }
        // One byte deeper, the seventh copy is told apart too: the third call ends 60
        // bytes on, but the state after two calls must still call.
        let mut deeper = Equivalence::new(dfa, &compiled.grammar, &shortest);
        assert_eq!(deeper.representative(dfa, &shortest, after[1], 60), after[1]);
        assert_eq!(deeper.representative(dfa, &shortest, after[6], 60), after[1]);
        assert_eq!(deeper.representative(dfa, &shortest, after[7], 60), after[7]);
    }

    #[test]
    fn shortest_texts_count_bytes_through_rules() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let chunk = b.declare("chunk");
        let eacute = Expr::Class(CharClass::new(false, [('é', 'é')]));
        b.define(chunk, Expr::repeat(eacute, 3, Some(3)));
        b.define(
            root,
            Expr::choice(vec![
                Expr::seq(vec![Expr::Rule(chunk), Expr::literal("ab")]),
                Expr::seq(vec![Expr::literal("x"), Expr::star(Expr::Rule(chunk))]),
            ]),
        );
        let g = b.finish(root).unwrap();
        let len = shortest_texts(&g, 100);
        assert_eq!(shortest_texts(&g, 5), vec![1, 5]);
        assert_eq!(len[chunk.index()], 6);
        assert_eq!(len[root.index()], 1);
    }

    /// `root ::= "a" pair nest`, `word ::= "bbb"`, `pair ::= word word`, `nest ::= "("
    /// inner ")" | "[" pair "]"`, `inner ::= nest nest | "<>"`: rules defined before the
    /// rules they refer to, and a cycle. The grammar and the rules in that order.
    fn nested_pairs() -> (Grammar, [RuleId; 5]) {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let word = b.declare("word");
        let pair = b.declare("pair");
        let nest = b.declare("nest");
        let inner = b.declare("inner");
        b.define(word, Expr::literal("bbb"));
        // Read first (last defined first), while `word` is still at the cap.
        b.define(pair, Expr::seq(vec![Expr::Rule(word), Expr::Rule(word)]));
        // nest ::= "(" inner ")" | "[" pair "]"; inner ::= nest nest | "<>".
        b.define(
            nest,
            Expr::choice(vec![
                Expr::seq(vec![Expr::literal("("), Expr::Rule(inner), Expr::literal(")")]),
                Expr::seq(vec![Expr::literal("["), Expr::Rule(pair), Expr::literal("]")]),
            ]),
        );
        b.define(
            inner,
            Expr::choice(vec![
                Expr::seq(vec![Expr::Rule(nest), Expr::Rule(nest)]),
                Expr::literal("<>"),
            ]),
        );
        b.define(root, Expr::seq(vec![Expr::literal("a"), Expr::Rule(pair), Expr::Rule(nest)]));
        (b.finish(root).unwrap(), [root, word, pair, nest, inner])
    }

    /// Lengths asked for a few rules read only the rules those reach; asked later for the
    /// rest, they are the same as the whole grammar's found at once.
    #[test]
    fn shortest_texts_read_only_what_the_rules_asked_for_reach() {
        let (g, [root, word, pair, nest, inner]) = nested_pairs();
        let texts = ShortestTexts::new(g.rules.len(), 100);
        texts.find(&g, [pair]);
        assert_eq!((texts.get(pair), texts.get(word)), (6, 3));
        for unread in [root, nest, inner] {
            assert_eq!(texts.known(unread.index()), None, "{unread:?} is not reached");
        }
        texts.find(&g, [inner, root]);
        let all: Vec<u32> = (0..g.rules.len()).map(|r| texts.get(RuleId::new(r))).collect();
        assert_eq!(all, shortest_texts(&g, 100));
        assert_eq!(all, vec![1 + 6 + 4, 3, 6, 4, 2]);
    }

    /// Rules read before the rules they refer to, and a cycle: each is read again when a
    /// length it used falls.
    #[test]
    fn shortest_texts_settle_callees_defined_first_and_cycles() {
        let (g, _) = nested_pairs();
        assert_eq!(shortest_texts(&g, 100), vec![1 + 6 + 4, 3, 6, 4, 2]);
        assert_eq!(shortest_texts(&g, 7), vec![7, 3, 6, 4, 2]);
    }
}
