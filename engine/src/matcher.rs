//! The pushdown matcher: the state of one generation, stepped token by token.
//!
//! The state is a set of persistent [`Stack`]s (several when the grammar is ambiguous).
//! Reading a byte replaces each stack's top by the automaton's successor; between bytes,
//! the *closure* expands calls (push) and rule ends (pop) until every stack stands in a
//! state that reads input. A tail call (one that returns to a state that can only end
//! its rule) pushes no return position: the callee returns to the frame below, so right
//! recursion and chains of rules that end in a call keep stacks shallow.
//! Every accepted token pushes an O(1) snapshot on the history,
//! so [`Matcher::rollback`] restores exactly an earlier state.

use crate::automaton::TextBudget;
use crate::compiler::CompiledGrammar;
use crate::error::MatchError;
use crate::mask;
use crate::stack::{Position, Stack, StackSet};
use grammask_tokenset::bitmask_len;
use smallvec::SmallVec;
use std::sync::Arc;

/// One step's state.
#[derive(Clone, Debug)]
struct Snapshot {
    stacks: Arc<[Stack]>,
    terminated: bool,
    /// Tokens accepted since the one that entered the free text the matcher stands in
    /// (0 outside free text with a token budget).
    free_tokens: u32,
}

/// Where a matcher stands in budgeted free text: the budget, whether a string that ends
/// the text has begun, and which text (rule and region).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InText {
    tokens: u32,
    read: u32,
    region: (usize, u32),
}

/// Matches one token sequence against a compiled grammar.
///
/// Cheap to create and to [`fork`](Matcher::fork); `Send`, so a batch of matchers can be
/// stepped on many threads (see [`fill_next_token_bitmasks`]).
#[derive(Clone, Debug)]
pub struct Matcher {
    grammar: Arc<CompiledGrammar>,
    current: Snapshot,
    history: im::Vector<Snapshot>,
    /// Steps kept for [`Matcher::rollback`]; older ones are dropped.
    max_rollback: usize,
}

/// The closure of a set of stacks: the stacks that read input, and whether the root can
/// end here.
#[derive(Debug, Default, Clone)]
pub(crate) struct Closure {
    pub(crate) configs: Vec<Stack>,
    pub(crate) can_end: bool,
}

impl Matcher {
    /// A matcher at the start of the grammar.
    pub fn new(grammar: Arc<CompiledGrammar>) -> Matcher {
        let max_rollback = grammar.limits.max_rollback;
        Matcher::with_max_rollback(grammar, max_rollback)
    }

    /// A matcher at the start of the grammar that keeps `max_rollback` steps for
    /// [`Matcher::rollback`] instead of the grammar's `max_rollback` limit (a runtime
    /// that rolls back only rejected draft tokens keeps a few).
    pub fn with_max_rollback(grammar: Arc<CompiledGrammar>, max_rollback: usize) -> Matcher {
        let current = Snapshot {
            stacks: Arc::from(vec![grammar.initial.clone()]),
            terminated: false,
            free_tokens: 0,
        };
        Matcher { grammar, current, history: im::Vector::new(), max_rollback }
    }

    /// Steps kept for [`Matcher::rollback`].
    pub fn max_rollback(&self) -> usize {
        self.max_rollback
    }

    /// The compiled grammar.
    pub fn grammar(&self) -> &Arc<CompiledGrammar> {
        &self.grammar
    }

    /// Fills `bitmask` (`ceil(vocab_size / 32)` words or more; token `i` is bit `i % 32` of
    /// word `i / 32`) with the tokens allowed next: every ordinary token whose bytes
    /// continue the text, the special tokens the grammar names here, and the stop tokens
    /// exactly when the root can end (a stop token is never allowed by its bytes, even
    /// when its kind is `Normal`, unless the grammar names it). After a stop token, only stop tokens are set (accepting one
    /// then changes nothing).
    pub fn fill_next_token_bitmask(&self, bitmask: &mut [u32]) -> Result<(), MatchError> {
        let vocab = &self.grammar.vocab;
        let need = bitmask_len(vocab.vocab_size());
        if bitmask.len() < need {
            return Err(MatchError::BitmaskTooShort { got: bitmask.len(), need });
        }
        bitmask.iter_mut().for_each(|w| *w = 0);
        if self.current.terminated {
            mask::set_stop_tokens(vocab, bitmask);
            return Ok(());
        }
        let closure = self.close(&self.current.stacks)?;
        mask::fill(&self.grammar, &closure, bitmask)?;
        if self.grammar.has_budgets && self.budget_spent(&closure) {
            self.keep_leaving_tokens(bitmask);
        }
        Ok(())
    }

    /// Where the configurations stand in budgeted free text: every top in such text, the
    /// budgets combined; `None` when some top is elsewhere.
    fn text_budget(&self, configs: &[Stack]) -> Option<InText> {
        let mut out: Option<InText> = None;
        for c in configs {
            let t: TextBudget = self.grammar.dfa(c.top).text_budget(c.top.state)?;
            let here =
                InText { tokens: t.tokens, read: t.read, region: (c.top.rule.index(), t.region) };
            out = Some(match out {
                None => here,
                Some(o) => InText {
                    tokens: o.tokens.min(here.tokens),
                    read: o.read.max(here.read),
                    region: o.region.min(here.region),
                },
            });
        }
        (!configs.is_empty()).then_some(out).flatten()
    }

    /// Whether the free text the matcher stands in has spent its token budget.
    fn budget_spent(&self, closure: &Closure) -> bool {
        self.text_budget(&closure.configs).is_some_and(|b| self.current.free_tokens >= b.tokens)
    }

    /// Once the budget is spent: clears every allowed token but the stop tokens and those
    /// that leave the free text or read more of a string that ends it (its end string or
    /// a trigger), as [`Matcher::step_token`] decides for each: the text then ends within
    /// as many tokens as the string has characters. A walk of the allowed tokens, at the
    /// few steps after a budget is spent.
    fn keep_leaving_tokens(&self, bitmask: &mut [u32]) {
        let vocab = &self.grammar.vocab;
        for (w, word) in bitmask.iter_mut().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let bit = bits.trailing_zeros();
                bits &= bits - 1;
                let id = (w as u32) * 32 + bit;
                if !vocab.is_stop(id) && self.step_token(id).is_err() {
                    *word &= !(1 << bit);
                }
            }
        }
    }

    /// Accepts one token. A token that is not allowed (or out of range) is refused with
    /// an error, and the state stays as it was.
    pub fn accept_token(&mut self, id: u32) -> Result<(), MatchError> {
        let next = self.step_token(id)?;
        self.push(next);
        Ok(())
    }

    fn step_token(&self, id: u32) -> Result<Snapshot, MatchError> {
        let vocab = &self.grammar.vocab;
        if id as usize >= vocab.vocab_size() {
            return Err(MatchError::TokenOutOfRange { id, vocab_size: vocab.vocab_size() });
        }
        if self.current.terminated {
            // After the end, stop tokens stay allowed (and change nothing); nothing else is.
            if vocab.stop_tokens().contains(&id) {
                return Ok(self.current.clone());
            }
            return Err(MatchError::Terminated);
        }
        let closure = self.close(&self.current.stacks)?;
        if vocab.stop_tokens().contains(&id) && closure.can_end {
            return Ok(Snapshot {
                stacks: self.current.stacks.clone(),
                terminated: true,
                free_tokens: self.current.free_tokens,
            });
        }
        let budgeted = self.grammar.has_budgets;
        let before = if budgeted { self.text_budget(&closure.configs) } else { None };
        let mut left = budgeted && before.is_none();
        let mut next: Vec<Stack> = Vec::new();
        // Tokens named by the grammar (`<[id]>`); padding ids never match.
        let is_token = vocab.kind(id).is_some();
        for config in closure.configs.iter().filter(|_| is_token) {
            let dfa = self.grammar.dfa(config.top);
            for &(set, target) in dfa.token_edges(config.top.state) {
                if mask::token_set_contains(&self.grammar, set, id) {
                    next.push(config.with_top(Position { rule: config.top.rule, state: target }));
                }
            }
        }
        // A stop token is never read as text (see `mask::fill`).
        if vocab.kind(id).is_some_and(|k| k.is_text()) && !vocab.is_stop(id) {
            let bytes = vocab.token_bytes(id).unwrap_or_default();
            if !bytes.is_empty() {
                let track = budgeted.then_some(&mut left);
                if let Some(stacks) = self.step_bytes(&closure, bytes, track)? {
                    next.extend(stacks);
                }
            }
        }
        if next.is_empty() {
            return Err(MatchError::TokenRejected { id });
        }
        let stacks = dedup(next);
        let mut free_tokens = 0;
        if budgeted {
            let after = self.text_budget(&self.close(&stacks)?.configs);
            // Another text than the one the token started in: it left that one.
            left |= after.zip(before).is_some_and(|(a, b)| a.region != b.region);
            let leaves = left || after.is_none();
            let reads_on = after.zip(before).is_some_and(|(a, b)| a.read > b.read);
            if self.budget_spent(&closure) && !leaves && !reads_on {
                // The budget is spent, and the token neither leaves the text nor reads
                // more of the string that ends it.
                return Err(MatchError::TokenRejected { id });
            }
            // The token that enters a text does not count against its budget.
            if after.is_some() && !left {
                free_tokens = self.current.free_tokens.saturating_add(1);
            }
        }
        Ok(Snapshot { stacks, terminated: false, free_tokens })
    }

    /// Accepts raw bytes (for text that is not tokenized, such as a forced prefix). Counts
    /// as one step for [`Matcher::rollback`]. On refusal, the error gives the offset of
    /// the first byte that is not allowed, and the state stays as it was.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> Result<(), MatchError> {
        if self.current.terminated {
            return Err(MatchError::Terminated);
        }
        let mut stacks: Vec<Stack> = self.current.stacks.to_vec();
        // Bytes given as text do not spend a token budget (a budget counts tokens); text
        // that leaves the free text ends its count.
        let budgeted = self.grammar.has_budgets;
        let mut left = false;
        let before = if budgeted { self.text_budget(&self.close(&stacks)?.configs) } else { None };
        for (offset, &b) in bytes.iter().enumerate() {
            let closure = self.close(&stacks)?;
            left |= budgeted && self.text_budget(&closure.configs).is_none();
            stacks = step_byte(&self.grammar, &closure.configs, b);
            if stacks.is_empty() {
                return Err(MatchError::BytesRejected { offset });
            }
        }
        let stacks = dedup(stacks);
        let mut free_tokens = if left { 0 } else { self.current.free_tokens };
        if budgeted {
            let after = self.text_budget(&self.close(&stacks)?.configs);
            if after.is_none() || after.zip(before).is_some_and(|(a, b)| a.region != b.region) {
                free_tokens = 0;
            }
        }
        self.push(Snapshot { stacks, terminated: false, free_tokens });
        Ok(())
    }

    /// Accepts a string's UTF-8 bytes; see [`Matcher::accept_bytes`].
    pub fn accept_string(&mut self, text: &str) -> Result<(), MatchError> {
        self.accept_bytes(text.as_bytes())
    }

    /// Whether a stop token was accepted.
    pub fn is_terminated(&self) -> bool {
        self.current.terminated
    }

    /// Whether the text so far is a whole document of the grammar (a stop token would be
    /// accepted now).
    pub fn can_terminate(&self) -> bool {
        !self.current.terminated && self.close(&self.current.stacks).is_ok_and(|c| c.can_end)
    }

    /// Undoes the last `n` accepted steps (tokens, byte strings, stop tokens).
    pub fn rollback(&mut self, n: usize) -> Result<(), MatchError> {
        if n > self.history.len() {
            return Err(MatchError::RollbackTooFar { requested: n, available: self.history.len() });
        }
        if n == 0 {
            return Ok(());
        }
        let keep = self.history.len() - n;
        self.current = self.history[keep].clone();
        self.history.truncate(keep);
        Ok(())
    }

    /// Returns to the start of the grammar, forgetting the history.
    pub fn reset(&mut self) {
        *self = Matcher::with_max_rollback(self.grammar.clone(), self.max_rollback);
    }

    /// Number of steps [`Matcher::rollback`] can undo.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    /// An independent copy of this matcher (O(1): stacks and history are shared).
    pub fn fork(&self) -> Matcher {
        self.clone()
    }

    /// How many tokens of `tokens`, from the first, would be accepted in turn (for
    /// speculative decoding). The state does not change.
    pub fn validate_tokens(&self, tokens: &[u32]) -> usize {
        let mut probe = Matcher {
            grammar: self.grammar.clone(),
            current: self.current.clone(),
            history: im::Vector::new(),
            max_rollback: 0,
        };
        for (i, &id) in tokens.iter().enumerate() {
            match probe.step_token(id) {
                Ok(next) => probe.current = next,
                Err(_) => return i,
            }
        }
        tokens.len()
    }

    /// The bytes the grammar forces next: as long as exactly one byte can follow (and
    /// the document cannot end, and no grammar-named token is possible), that byte.
    /// A runtime can append them without sampling.
    pub fn find_jump_forward_bytes(&self) -> Vec<u8> {
        const MAX_JUMP: usize = 4096;
        let mut out = Vec::new();
        if self.current.terminated {
            return out;
        }
        let mut stacks: Vec<Stack> = self.current.stacks.to_vec();
        while out.len() < MAX_JUMP {
            let Ok(closure) = self.close(&stacks) else { break };
            if closure.can_end {
                break;
            }
            if closure
                .configs
                .iter()
                .any(|c| !self.grammar.dfa(c.top).token_edges(c.top.state).is_empty())
            {
                break;
            }
            let allowed = byte_set(&self.grammar, &closure.configs);
            let count: u32 = allowed.iter().map(|w| w.count_ones()).sum();
            let only = (count == 1)
                .then(|| (0..=255u8).find(|&b| allowed[(b >> 6) as usize] & (1 << (b & 63)) != 0))
                .flatten();
            match only {
                Some(b) => {
                    out.push(b);
                    stacks = step_byte(&self.grammar, &closure.configs, b);
                }
                _ => break,
            }
        }
        out
    }

    /// The bytes that may come next, as a 256-entry table.
    pub fn next_bytes(&self) -> Result<[bool; 256], MatchError> {
        let mut allowed = [false; 256];
        if self.current.terminated {
            return Ok(allowed);
        }
        let closure = self.close(&self.current.stacks)?;
        let set = byte_set(&self.grammar, &closure.configs);
        for (b, slot) in allowed.iter_mut().enumerate() {
            *slot = set[b >> 6] & (1 << (b & 63)) != 0;
        }
        Ok(allowed)
    }

    /// Number of parallel stacks (ambiguous parses) alive now.
    pub fn num_stacks(&self) -> usize {
        self.current.stacks.len()
    }

    fn push(&mut self, next: Snapshot) {
        let previous = std::mem::replace(&mut self.current, next);
        self.history.push_back(previous);
        if self.history.len() > self.max_rollback {
            self.history.pop_front();
        }
    }

    /// Reads `bytes` from a closure; `None` when some byte is refused. With `left`, sets
    /// it when some byte is read where the matcher is not in budgeted free text.
    fn step_bytes(
        &self,
        closure: &Closure,
        bytes: &[u8],
        mut left: Option<&mut bool>,
    ) -> Result<Option<Vec<Stack>>, MatchError> {
        let mut stacks = step_byte(&self.grammar, &closure.configs, bytes[0]);
        for &b in &bytes[1..] {
            if stacks.is_empty() {
                return Ok(None);
            }
            let closure = self.close(&stacks)?;
            if let Some(left) = left.as_deref_mut() {
                *left |= self.text_budget(&closure.configs).is_none();
            }
            stacks = step_byte(&self.grammar, &closure.configs, b);
        }
        Ok((!stacks.is_empty()).then_some(stacks))
    }

    pub(crate) fn close(&self, stacks: &[Stack]) -> Result<Closure, MatchError> {
        let mut out = Closure::default();
        close_into(&self.grammar, stacks, &mut out)?;
        Ok(out)
    }
}

/// The bytes some configuration can read next, as a 256-bit set.
fn byte_set(grammar: &CompiledGrammar, configs: &[Stack]) -> [u64; 4] {
    let mut set = [0u64; 4];
    for config in configs {
        for (w, x) in set.iter_mut().zip(grammar.dfa(config.top).byte_set(config.top.state)) {
            *w |= x;
        }
    }
    set
}

/// Reads one byte: each configuration's top moves to its successor, if any.
#[inline]
pub(crate) fn step_byte(grammar: &CompiledGrammar, configs: &[Stack], byte: u8) -> Vec<Stack> {
    let mut out = Vec::new();
    step_byte_into(grammar, configs, byte, &mut out);
    out
}

/// [`step_byte`] into a reused buffer.
#[inline(always)]
pub(crate) fn step_byte_into(
    grammar: &CompiledGrammar,
    configs: &[Stack],
    byte: u8,
    out: &mut Vec<Stack>,
) {
    out.clear();
    for config in configs {
        if let Some(t) = grammar.dfa(config.top).next(config.top.state, byte) {
            out.push(config.with_top(Position { rule: config.top.rule, state: t }));
        }
    }
}

/// Expands calls and returns from `seeds` until every stack reads input; sets
/// `out.can_end` when the root can end. Stacks are deduplicated.
pub(crate) fn close_into(
    grammar: &CompiledGrammar,
    seeds: &[Stack],
    out: &mut Closure,
) -> Result<(), MatchError> {
    out.configs.clear();
    out.can_end = false;
    // Fast path: one stack standing in a state that calls nothing and cannot return
    // (it does not accept, or it is the bottom frame).
    if let [only] = seeds {
        let dfa = grammar.dfa(only.top);
        let accepting = dfa.is_accepting(only.top.state);
        if dfa.calls(only.top.state).is_empty() && (!accepting || only.depth() == 0) {
            if dfa.reads_input(only.top.state) {
                out.configs.push(only.clone());
            }
            out.can_end = accepting;
            return Ok(());
        }
    }
    let limits = &grammar.limits;
    let mut visited = Visited::default();
    let mut work: SmallVec<[Stack; 8]> = seeds.iter().cloned().collect();
    while let Some(stack) = work.pop() {
        if visited.contains(&stack) {
            continue;
        }
        if visited.len() >= limits.max_live_stacks {
            return Err(MatchError::Limit {
                name: crate::compiler::LimitName::LiveStacks.as_str(),
                message: format!(
                    "more than {} parallel parses are alive; the grammar is too ambiguous",
                    limits.max_live_stacks
                ),
            });
        }
        let top = stack.top;
        let dfa = grammar.dfa(top);
        if dfa.reads_input(top.state) {
            out.configs.push(stack.clone());
        }
        for &(rule, return_state) in dfa.calls(top.state) {
            if stack.depth() as usize >= limits.max_stack_depth {
                return Err(MatchError::Limit {
                    name: crate::compiler::LimitName::StackDepth.as_str(),
                    message: format!("rules nest deeper than {}", limits.max_stack_depth),
                });
            }
            let callee = Position { rule, state: grammar.enter(rule)?.start() };
            // A tail call: returning to a state that can only end the rule would return
            // once more at once, so the callee returns straight to the frame below.
            work.push(if dfa.only_ends(return_state) {
                stack.with_top(callee)
            } else {
                stack.push(Position { rule: top.rule, state: return_state }, callee)
            });
        }
        if dfa.is_accepting(top.state) {
            match stack.pop() {
                Some(parent) => work.push(parent),
                None => out.can_end = true,
            }
        }
        visited.insert(stack);
    }
    Ok(())
}

/// The stacks a closure has expanded: a short list scanned in place (most closures hold a
/// few stacks, and comparing stacks usually ends at their cached hashes), turned into a
/// hash set past [`Visited::LIST_MAX`] stacks.
#[derive(Default)]
struct Visited {
    list: SmallVec<[Stack; 8]>,
    set: Option<StackSet>,
}

impl Visited {
    /// Stacks kept in the list before it becomes a set.
    const LIST_MAX: usize = 32;

    fn contains(&self, stack: &Stack) -> bool {
        match &self.set {
            Some(set) => set.contains(stack),
            None => self.list.contains(stack),
        }
    }

    fn insert(&mut self, stack: Stack) {
        match &mut self.set {
            Some(set) => {
                set.insert(stack);
            }
            None if self.list.len() < Self::LIST_MAX => self.list.push(stack),
            None => {
                let mut set: StackSet = self.list.drain(..).collect();
                set.insert(stack);
                self.set = Some(set);
            }
        }
    }

    fn len(&self) -> usize {
        self.set.as_ref().map_or(self.list.len(), StackSet::len)
    }
}

fn dedup(stacks: Vec<Stack>) -> Arc<[Stack]> {
    if stacks.len() <= 1 {
        return Arc::from(stacks);
    }
    let mut seen = StackSet::with_capacity_and_hasher(stacks.len(), Default::default());
    let unique: Vec<Stack> = stacks.into_iter().filter(|s| seen.insert(s.clone())).collect();
    Arc::from(unique)
}

/// Fills the bitmasks of many matchers at once, in parallel (rayon): `bitmasks` holds
/// one mask of `ceil(vocab_size / 32)` words per matcher, back to back (the layout of a
/// `[batch, words]` tensor). Returns each matcher's result.
pub fn fill_next_token_bitmasks(
    matchers: &[Matcher],
    bitmasks: &mut [u32],
) -> Vec<Result<(), MatchError>> {
    use rayon::prelude::*;
    let Some(first) = matchers.first() else { return Vec::new() };
    let words = bitmask_len(first.grammar.vocab.vocab_size());
    if bitmasks.len() < words * matchers.len() {
        let err = MatchError::BitmaskTooShort { got: bitmasks.len(), need: words * matchers.len() };
        return matchers.iter().map(|_| Err(err.clone())).collect();
    }
    matchers
        .par_iter()
        .zip(bitmasks.par_chunks_mut(words))
        .map(|(m, mask)| {
            let need = bitmask_len(m.grammar.vocab.vocab_size());
            if need != words {
                return Err(MatchError::BitmaskTooShort { got: words, need });
            }
            m.fill_next_token_bitmask(mask)
        })
        .collect()
}
