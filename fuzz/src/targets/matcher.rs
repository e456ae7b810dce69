//! `matcher`: a grammar generated from the fuzzer's bytes ([`crate::gen`], driven by a
//! [`ByteSource`]) over one of 65,536 small random vocabularies, compiled twice (the
//! default configuration, and a variant: no mask cache, no inlining with minimized
//! automata, a serialize / deserialize round trip, or a mask cache of 256 bytes that
//! keeps almost nothing), then a sequence of fuzzer-chosen operations (accept an
//! allowed or any token, accept bytes, rollback, reset, fork and switch matchers,
//! validate tokens, jump-forward bytes, next bytes) on a small pool of matchers. After
//! every operation:
//!
//! - the mask equals `accept_token` on a fork for every id, stop tokens iff
//!   `can_terminate`, and it equals the reference matcher ([`crate::reference`]) token
//!   by token;
//! - both compilations give the same masks and answers;
//! - a refused operation changes nothing, rollback restores the mask recorded at that
//!   point of the history (the history keeps at most `max_rollback` steps), and every
//!   matcher of the pool keeps its own state;
//! - after an accepted token the grammar can still be completed.

use super::{allowed_ids, check_mask, check_no_dead_end, fuzz_limits, mask_of};
use crate::gen::{names_tokens, random_grammar, random_vocab, GrammarConfig, CHARS};
use crate::reference::{RefState, Reference};
use crate::rng::{ByteSource, Choices, XorShift};
use grammask::syntax::ir::Grammar;
use grammask::syntax::print::to_gbnf;
use grammask::{CompiledGrammar, Compiler, CompilerConfig, Matcher, Vocabulary};
use std::collections::VecDeque;
use std::sync::Arc;

/// Largest number of operations per input.
const MAX_OPS: usize = 48;
/// Largest pool of forked matchers.
const MAX_POOL: usize = 4;

/// One matcher of the pool, compiled both ways, with what was recorded at each step of
/// its history: the mask and the reference state.
#[derive(Clone)]
struct Slot<'g> {
    a: Matcher,
    b: Matcher,
    masks: VecDeque<Vec<u32>>,
    refs: VecDeque<Option<RefState<'g>>>,
}

struct Run<'g> {
    vocab: &'g Vocabulary,
    reference: Reference<'g>,
    names_tokens: bool,
    max_rollback: usize,
    /// Cleared when the reference gives up (too ambiguous).
    use_reference: bool,
}

impl<'g> Run<'g> {
    /// The mask of the slot's current state, checked against `accept_token`, the other
    /// compilation and the reference; `None` when a limit refused it.
    fn observe(&mut self, s: &Slot<'g>) -> Result<Option<Vec<u32>>, String> {
        let (ma, mb) = (mask_of(&s.a), mask_of(&s.b));
        if ma.is_ok() != mb.is_ok() {
            return Err(format!("fill_next_token_bitmask: {ma:?} vs variant {mb:?}"));
        }
        let Ok(mask) = ma else { return Ok(None) };
        if Ok(&mask) != mb.as_ref() {
            return Err("the variant compilation gives another mask".into());
        }
        if s.a.can_terminate() != s.b.can_terminate() || s.a.is_terminated() != s.b.is_terminated()
        {
            return Err("the variant compilation disagrees on termination".into());
        }
        if s.a.history_len() != s.b.history_len() || s.a.history_len() + 1 != s.masks.len() {
            return Err(format!(
                "history_len {} / {}, {} steps recorded",
                s.a.history_len(),
                s.b.history_len(),
                s.masks.len() - 1
            ));
        }
        let size = self.vocab.vocab_size();
        check_mask(&s.a, &mask, 0..size as u32, self.names_tokens)?;
        if s.a.next_bytes().ok() != s.b.next_bytes().ok() {
            return Err("the variant compilation gives other next bytes".into());
        }
        if let (true, Some(Some(r))) = (self.use_reference, s.refs.back()) {
            if !s.a.is_terminated() {
                if r.can_end() != s.a.can_terminate() {
                    return Err(format!(
                        "can_terminate {} but the reference says {}",
                        s.a.can_terminate(),
                        r.can_end()
                    ));
                }
                for id in 0..size as u32 {
                    let Ok(next) = self.reference.step_token(r, id) else {
                        self.use_reference = false;
                        break;
                    };
                    if next.is_some() != grammask::get_bit(&mask, id) {
                        return Err(format!(
                            "token {id} {:?}: mask bit {}, reference {}",
                            String::from_utf8_lossy(self.vocab.token_bytes(id).unwrap_or_default()),
                            next.is_none(),
                            next.is_some()
                        ));
                    }
                }
            }
        }
        Ok(Some(mask))
    }

    /// After an operation that must not change the state (or that returns to a recorded
    /// one): the mask is the recorded one.
    fn expect_recorded(&mut self, s: &Slot<'g>, what: &str) -> Result<(), String> {
        let mask = self.observe(s)?;
        if let Some(mask) = mask {
            if Some(&mask) != s.masks.back() {
                return Err(format!("{what}: the mask is not the one recorded for this state"));
            }
        }
        Ok(())
    }

    /// After a successful step: no dead end, then the new state is observed and recorded
    /// (the oldest steps beyond `max_rollback` are dropped, as the matcher drops them).
    fn accepted(
        &mut self,
        s: &mut Slot<'g>,
        r: Option<RefState<'g>>,
        check_completion: bool,
    ) -> Result<(), String> {
        if check_completion && !self.names_tokens {
            check_no_dead_end(&s.a)?;
        }
        s.masks.push_back(Vec::new());
        s.refs.push_back(r);
        while s.masks.len() > self.max_rollback + 1 {
            s.masks.pop_front();
            s.refs.pop_front();
        }
        let mask = self.observe(s)?.unwrap_or_default();
        *s.masks.back_mut().expect("just pushed") = mask;
        Ok(())
    }

    /// The reference state before a step, when the reference is followed.
    fn reference_now(&self, s: &Slot<'g>) -> Option<RefState<'g>> {
        if !self.use_reference {
            return None;
        }
        s.refs.back().cloned().flatten()
    }

    fn accept_token(&mut self, s: &mut Slot<'g>, id: u32) -> Result<(), String> {
        // The reference's answer first: `Some(next)` when it accepts.
        let expected: Option<Option<RefState<'g>>> = match self.reference_now(s) {
            // After a stop token, stop tokens are accepted and change nothing.
            Some(r) if r.is_terminated() => Some(self.vocab.is_stop(id).then_some(r)),
            Some(r) => match self.reference.step_token(&r, id) {
                Ok(next) => Some(next),
                Err(_) => {
                    self.use_reference = false;
                    None
                }
            },
            None => None,
        };
        let before = s.a.history_len();
        let ra = s.a.accept_token(id);
        let rb = s.b.accept_token(id);
        if !self.check_accept(s, &format!("accept_token({id})"), &ra, &rb, &expected, before)? {
            return Ok(());
        }
        let stop = self.vocab.is_stop(id);
        self.accepted(s, expected.flatten(), !stop)
    }

    /// Checks one accept call made on both matchers of `s`: they agree with each other
    /// and with the reference (when it answered), and a refusal changed nothing.
    /// `Ok(true)` when the call was accepted.
    fn check_accept<T: std::fmt::Debug, E: std::fmt::Debug>(
        &mut self,
        s: &Slot<'g>,
        what: &str,
        ra: &Result<T, E>,
        rb: &Result<T, E>,
        expected: &Option<Option<RefState<'g>>>,
        history_before: usize,
    ) -> Result<bool, String> {
        if ra.is_ok() != rb.is_ok() {
            return Err(format!("{what}: {ra:?} vs variant {rb:?}"));
        }
        if let Some(next) = expected {
            if next.is_some() != ra.is_ok() {
                return Err(format!("{what}: {ra:?}, the reference disagrees"));
            }
        }
        if ra.is_ok() {
            return Ok(true);
        }
        if s.a.history_len() != history_before {
            return Err(format!("refused {what} changed the history"));
        }
        self.expect_recorded(s, &format!("refused {what}")).map(|()| false)
    }

    fn accept_bytes(&mut self, s: &mut Slot<'g>, bytes: &[u8]) -> Result<(), String> {
        let expected: Option<Option<RefState<'g>>> = match self.reference_now(s) {
            Some(r) if r.is_terminated() => Some(None),
            Some(r) => match self.reference.step_bytes(&r, bytes) {
                Ok(next) => Some(next),
                Err(_) => {
                    self.use_reference = false;
                    None
                }
            },
            None => None,
        };
        let before = s.a.history_len();
        let ra = s.a.accept_bytes(bytes);
        let rb = s.b.accept_bytes(bytes);
        if !self.check_accept(
            s,
            &format!("accept_bytes({bytes:?})"),
            &ra,
            &rb,
            &expected,
            before,
        )? {
            return Ok(());
        }
        self.accepted(s, expected.flatten(), true)
    }
}

fn compile(
    vocab: &Arc<Vocabulary>,
    grammar: &Grammar,
    variant: u8,
    max_rollback: usize,
) -> (Option<Arc<CompiledGrammar>>, Option<Arc<CompiledGrammar>>) {
    let mut limits = fuzz_limits();
    limits.max_rollback = max_rollback;
    let base = CompilerConfig { limits, ..CompilerConfig::default() };
    let a = Compiler::from_arc(vocab.clone()).with_config(base.clone()).compile_grammar(grammar);
    let mut other = base;
    match variant % 4 {
        0 => other.mask_cache = false,
        1 => {
            other.passes.inline_max_rule_size = 0;
            other.passes.inline_max_caller_size = 0;
            other.minimize = true;
            other.lazy_automata = false;
        }
        3 => other.limits.max_mask_cache_bytes = 256,
        _ => {}
    }
    let compiler = Compiler::from_arc(vocab.clone()).with_config(other);
    let b = if variant % 4 == 2 {
        a.as_ref()
            .ok()
            .map(|g| g.serialize().expect("a compiled grammar serializes"))
            .map(|bytes| compiler.deserialize(&bytes).expect("a serialized grammar loads back"))
    } else {
        compiler.compile_grammar(grammar).ok()
    };
    (a.ok(), b)
}

/// The target; the error names the broken invariant.
pub fn check(data: &[u8]) -> Result<(), String> {
    let mut src = ByteSource::new(data);
    let flags = src.byte();
    let vocab_seed = u16::from_le_bytes([src.byte(), src.byte()]);
    let rv = random_vocab(&mut XorShift::new(vocab_seed as u64));
    let vocab = Arc::new(rv.vocab);
    let config =
        GrammarConfig { max_rules: 4, max_depth: 3, token_ids: vec![rv.special_a, 0, rv.stop[0]] };
    let grammar = random_grammar(&mut src, &config);
    let max_rollback = [10_000, 1, 2, 5][(flags as usize >> 2) % 4];
    let (a, b) = compile(&vocab, &grammar, flags, max_rollback);
    let (a, b) = match (a, b) {
        (Some(a), Some(b)) => (a, b),
        (None, None) => return Ok(()),
        (a, b) => {
            return Err(format!(
                "compiles in one configuration only (default: {}, variant {}: {})",
                a.is_some(),
                flags % 4,
                b.is_some()
            ))
        }
    };
    let reference = Reference::new(&grammar, &vocab);
    let start = reference.start().ok();
    let mut run = Run {
        vocab: &vocab,
        use_reference: start.is_some(),
        reference,
        names_tokens: names_tokens(&grammar),
        max_rollback,
    };
    let mut first = Slot {
        a: Matcher::new(a),
        b: Matcher::new(b),
        masks: VecDeque::new(),
        refs: VecDeque::from([start]),
    };
    first.masks.push_back(Vec::new());
    let Some(initial) = run.observe(&first)? else { return Ok(()) };
    first.masks[0] = initial.clone();
    let mut pool = vec![first];
    let mut cur = 0;
    let size = vocab.vocab_size();
    for _ in 0..MAX_OPS {
        if src.is_empty() {
            break;
        }
        let op = src.byte();
        let s = &mut pool[cur];
        match op % 10 {
            0..=2 => {
                // An allowed token (most walks go deep this way).
                let Some(mask) = s.masks.back().filter(|m| !m.is_empty()) else { continue };
                let allowed = allowed_ids(mask, size);
                if allowed.is_empty() {
                    continue;
                }
                let id = *src.pick(&allowed);
                run.accept_token(s, id)?;
            }
            3 => {
                // Any id, past the vocabulary included.
                let id = src.below(size + 3) as u32;
                run.accept_token(s, id)?;
            }
            4 => {
                let n = src.below(s.masks.len() + 2);
                let kept = s.a.history_len();
                let ra = s.a.rollback(n);
                let rb = s.b.rollback(n);
                if ra.is_ok() != rb.is_ok() || ra.is_ok() != (n <= kept) {
                    return Err(format!("rollback({n}) with {kept} kept: {ra:?} / {rb:?}"));
                }
                if ra.is_ok() {
                    for _ in 0..n {
                        s.masks.pop_back();
                        s.refs.pop_back();
                    }
                }
                run.expect_recorded(s, &format!("rollback({n})"))?;
            }
            5 => {
                s.a.reset();
                s.b.reset();
                let start = run.reference.start().ok();
                s.masks = VecDeque::from([initial.clone()]);
                s.refs = VecDeque::from([start]);
                run.expect_recorded(s, "reset")?;
            }
            6 => {
                if pool.len() < MAX_POOL {
                    let f = Slot {
                        a: pool[cur].a.fork(),
                        b: pool[cur].b.fork(),
                        masks: pool[cur].masks.clone(),
                        refs: pool[cur].refs.clone(),
                    };
                    pool.push(f);
                }
                cur = src.below(pool.len());
                run.expect_recorded(&pool[cur], "fork / switch")?;
            }
            7 => {
                // Bytes: characters of the alphabet, or one raw byte.
                let bytes: Vec<u8> = if src.chance(0.8) {
                    let n = src.range(1, 3);
                    (0..n).map(|_| src.pick(CHARS).to_string()).collect::<String>().into_bytes()
                } else {
                    vec![src.byte()]
                };
                run.accept_bytes(s, &bytes)?;
            }
            8 => {
                // validate_tokens against accepting one by one.
                let n = src.range(1, 4);
                let ids: Vec<u32> = (0..n).map(|_| src.below(size + 1) as u32).collect();
                let count = s.a.validate_tokens(&ids);
                let mut f = s.a.fork();
                let seq = ids.iter().take_while(|&&id| f.accept_token(id).is_ok()).count();
                if count != seq || s.b.validate_tokens(&ids) != count {
                    return Err(format!("validate_tokens({ids:?}) = {count}, one by one {seq}"));
                }
            }
            _ => {
                // Jump-forward bytes are accepted; every next byte is accepted, others not.
                let jump = s.a.find_jump_forward_bytes();
                if jump != s.b.find_jump_forward_bytes() {
                    return Err("the variant compilation forces other bytes".into());
                }
                if let Ok(next) = s.a.next_bytes() {
                    for byte in 0..=255u8 {
                        let ok = s.a.fork().accept_bytes(&[byte]).is_ok();
                        if ok != next[byte as usize] {
                            return Err(format!("next_bytes[{byte}] {} but accept {ok}", !ok));
                        }
                    }
                }
                if !jump.is_empty() {
                    if s.a.fork().accept_bytes(&jump).is_err() {
                        return Err(format!("forced bytes {jump:?} refused"));
                    }
                    run.accept_bytes(s, &jump)?;
                }
            }
        }
    }
    Ok(())
}

/// The target.
pub fn run(data: &[u8]) {
    if let Err(e) = check(data) {
        panic!("{e}\ngrammar:\n{}", describe(data));
    }
}

/// The generated grammar of an input, as GBNF (to report a finding).
pub fn describe(data: &[u8]) -> String {
    let mut src = ByteSource::new(data);
    let _flags = src.byte();
    let vocab_seed = u16::from_le_bytes([src.byte(), src.byte()]);
    let rv = random_vocab(&mut XorShift::new(vocab_seed as u64));
    let config =
        GrammarConfig { max_rules: 4, max_depth: 3, token_ids: vec![rv.special_a, 0, rv.stop[0]] };
    to_gbnf(&random_grammar(&mut src, &config))
}
