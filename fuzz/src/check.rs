//! The checks shared by the property tests: a token mask against the naive answer of
//! every token, completion of the grammar after a token (bounded search over bytes), and
//! a random masked walk that checks every step, refused tokens, stop tokens, ids out of
//! range and rollback.

use crate::gen::{names_tokens, random_grammar, GrammarConfig};
use crate::reference::{RefState, Reference};
use crate::rng::XorShift;
use grammask::syntax::ir::Grammar;
use grammask::{bitmask_len, get_bit, Compiler, MatchError, Matcher, Vocabulary};
use std::sync::{Arc, OnceLock};

/// o200k, loaded once per test binary.
pub fn o200k() -> Arc<Vocabulary> {
    static VOCAB: OnceLock<Arc<Vocabulary>> = OnceLock::new();
    VOCAB.get_or_init(|| Arc::new(Vocabulary::load("o200k").expect("builtin o200k"))).clone()
}

/// The matcher's next-token mask.
pub fn mask_words(m: &Matcher) -> Vec<u32> {
    let size = m.grammar().vocabulary().vocab_size();
    let mut mask = vec![0u32; bitmask_len(size)];
    m.fill_next_token_bitmask(&mut mask).expect("the mask fills");
    mask
}

/// The ids set in a mask, below `size`.
pub fn ids_of(mask: &[u32], size: usize) -> Vec<u32> {
    (0..size as u32).filter(|&i| get_bit(mask, i)).collect()
}

/// Outcome of a bounded search for a completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Some byte string leads to a state where the root can end.
    Found,
    /// Every byte string was tried (none longer than the bound exists): a dead end.
    Exhausted,
    /// The bound was hit first.
    Unknown,
}

/// Breadth-first search over next bytes (`next_bytes` / `accept_bytes`) for a state that
/// can end, at most `max_depth` bytes deep and `budget` states in all.
pub fn completion(m: &Matcher, max_depth: usize, budget: usize) -> Completion {
    let mut frontier = vec![m.fork()];
    let mut seen = 0usize;
    for _ in 0..=max_depth {
        let mut next = Vec::new();
        for node in &frontier {
            if node.can_terminate() {
                return Completion::Found;
            }
            let Ok(bytes) = node.next_bytes() else { return Completion::Unknown };
            for b in (0..=255u8).filter(|&b| bytes[b as usize]) {
                let mut child = node.fork();
                if child.accept_bytes(&[b]).is_ok() {
                    next.push(child);
                    seen += 1;
                    if seen > budget {
                        return Completion::Unknown;
                    }
                }
            }
        }
        if next.is_empty() {
            return Completion::Exhausted;
        }
        frontier = next;
    }
    Completion::Unknown
}

/// Which tokens a check looks at.
#[derive(Clone, Copy, Debug)]
pub enum Coverage {
    /// Every id (small vocabularies).
    All,
    /// `sample` random ids plus every allowed id against the engine's own `accept_token`;
    /// the reference and the completion search on at most `sample` of the allowed ids.
    Sample {
        /// Random ids per step.
        sample: usize,
    },
}

/// Counters of one case.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Grammars the compiler refused (not tested further).
    pub refused: usize,
    /// Cases the reference could not follow (too ambiguous).
    pub too_big: usize,
    /// Steps checked.
    pub steps: usize,
    /// Token checks against the reference.
    pub token_checks: usize,
    /// Completion searches that found a completion.
    pub completions_found: usize,
    /// Completion searches that hit their bound.
    pub completions_unknown: usize,
    /// Walks that ended with a stop token.
    pub terminated: usize,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Stats) {
        self.refused += o.refused;
        self.too_big += o.too_big;
        self.steps += o.steps;
        self.token_checks += o.token_checks;
        self.completions_found += o.completions_found;
        self.completions_unknown += o.completions_unknown;
        self.terminated += o.terminated;
    }
}

struct Case<'g> {
    grammar: &'g Grammar,
    vocab: &'g Vocabulary,
    reference: Reference<'g>,
    named_tokens: bool,
    coverage: Coverage,
}

fn describe(g: &Grammar) -> String {
    grammask::syntax::print::to_gbnf(g)
}

fn show(vocab: &Vocabulary, id: u32) -> String {
    format!("{id} {:?}", String::from_utf8_lossy(vocab.token_bytes(id).unwrap_or_default()))
}

impl Case<'_> {
    /// Checks the mask of one state.
    fn check_state(
        &self,
        m: &Matcher,
        r: &RefState<'_>,
        mask: &[u32],
        rng: &mut XorShift,
        stats: &mut Stats,
    ) -> Result<(), String> {
        let vocab = self.vocab;
        let size = vocab.vocab_size();
        // Bits past the vocabulary are never set; ids past it are refused.
        for i in size..mask.len() * 32 {
            if get_bit(mask, i as u32) {
                return Err(format!("bit {i} set past vocab_size {size}"));
            }
        }
        for id in [size as u32, size as u32 + 1, u32::MAX] {
            match m.fork().accept_token(id) {
                Err(MatchError::TokenOutOfRange { .. }) => {}
                other => return Err(format!("id {id} >= vocab_size: {other:?}")),
            }
        }
        if m.is_terminated() {
            let allowed = ids_of(mask, size);
            let mut stops = vocab.stop_tokens().to_vec();
            stops.sort_unstable();
            if allowed != stops {
                return Err(format!("after a stop token the mask is {allowed:?}"));
            }
            return Ok(());
        }
        if m.can_terminate() != r.can_end() {
            return Err(format!(
                "can_terminate {} but the reference says {}",
                m.can_terminate(),
                r.can_end()
            ));
        }
        for &s in vocab.stop_tokens() {
            if get_bit(mask, s) != m.can_terminate() {
                return Err(format!("stop token {s}: bit {} != can_terminate", get_bit(mask, s)));
            }
        }
        let allowed = ids_of(mask, size);
        let (engine_ids, reference_ids, completion_ids): (Vec<u32>, Vec<u32>, Vec<u32>) = match self
            .coverage
        {
            Coverage::All => {
                let all: Vec<u32> = (0..size as u32).collect();
                (all.clone(), all, allowed.clone())
            }
            Coverage::Sample { sample } => {
                let random: Vec<u32> = (0..sample).map(|_| rng.below(size) as u32).collect();
                let mut engine = random.clone();
                engine.extend(&allowed);
                let mut reference = random;
                reference.extend((0..sample.min(allowed.len())).map(|_| *rng.pick(&allowed)));
                let completion = (0..20.min(allowed.len())).map(|_| *rng.pick(&allowed)).collect();
                (engine, reference, completion)
            }
        };
        for &id in &engine_ids {
            let bit = get_bit(mask, id);
            let accepted = m.fork().accept_token(id).is_ok();
            if bit != accepted {
                return Err(format!(
                    "token {}: mask bit {bit}, accept_token {accepted}",
                    show(vocab, id)
                ));
            }
            if m.validate_tokens(&[id]) != accepted as usize {
                return Err(format!("token {}: validate_tokens disagrees", show(vocab, id)));
            }
        }
        for &id in &reference_ids {
            let bit = get_bit(mask, id);
            let expected = match self.reference.step_token(r, id) {
                Ok(next) => next.is_some(),
                Err(_) => {
                    stats.too_big += 1;
                    return Ok(());
                }
            };
            stats.token_checks += 1;
            if bit != expected {
                return Err(format!(
                    "token {}: mask bit {bit}, reference {expected}",
                    show(vocab, id)
                ));
            }
        }
        if !self.named_tokens {
            for (id, _) in vocab.special_tokens() {
                if !vocab.is_stop(id) && get_bit(mask, id) {
                    return Err(format!("special token {} allowed", show(vocab, id)));
                }
            }
        }
        for &id in &completion_ids {
            if vocab.is_stop(id) || self.named_tokens {
                continue;
            }
            let mut after = m.fork();
            after.accept_token(id).map_err(|e| format!("allowed token refused: {e}"))?;
            match completion(&after, 30, 3000) {
                Completion::Found => stats.completions_found += 1,
                Completion::Unknown => stats.completions_unknown += 1,
                Completion::Exhausted => {
                    return Err(format!(
                        "after allowed token {} the grammar cannot be completed",
                        show(vocab, id)
                    ))
                }
            }
        }
        Ok(())
    }
}

/// Parameters of [`run_case`].
#[derive(Clone, Debug)]
pub struct CaseConfig {
    /// Grammar shape.
    pub grammar: GrammarConfig,
    /// Largest number of tokens in the walk.
    pub max_steps: usize,
    /// Which tokens each step checks.
    pub coverage: Coverage,
}

/// One random case: a random grammar compiled for `vocab`, a random masked walk with
/// every state checked ([`Case::check_state`]), a refused token at every step (refused,
/// and nothing changes), then rollback by a random n and re-accepting (same masks).
pub fn run_case(seed: u64, vocab: &Arc<Vocabulary>, config: &CaseConfig) -> Result<Stats, String> {
    let mut rng = XorShift::new(seed);
    let grammar = random_grammar(&mut rng, &config.grammar);
    run_grammar(&grammar, &mut rng, vocab, config)
        .map_err(|e| format!("seed {seed}\ngrammar:\n{}\n{e}", describe(&grammar)))
}

fn run_grammar(
    grammar: &Grammar,
    rng: &mut XorShift,
    vocab: &Arc<Vocabulary>,
    config: &CaseConfig,
) -> Result<Stats, String> {
    let mut stats = Stats::default();
    let Ok(compiled) = Compiler::from_arc(vocab.clone()).compile_grammar(grammar) else {
        stats.refused += 1;
        return Ok(stats);
    };
    let case = Case {
        grammar,
        vocab,
        reference: Reference::new(grammar, vocab),
        named_tokens: names_tokens(grammar),
        coverage: config.coverage,
    };
    let Ok(mut r) = case.reference.start() else {
        stats.too_big += 1;
        return Ok(stats);
    };
    let _ = case.grammar;
    let size = vocab.vocab_size();
    let mut m = Matcher::new(compiled);
    let mut masks: Vec<Vec<u32>> = Vec::new();
    let mut tokens: Vec<u32> = Vec::new();
    let mut text: Vec<u8> = Vec::new();
    loop {
        let mask = mask_words(&m);
        case.check_state(&m, &r, &mask, rng, &mut stats).map_err(|e| {
            format!("after tokens {tokens:?} (text {:?}): {e}", String::from_utf8_lossy(&text))
        })?;
        stats.steps += 1;
        masks.push(mask.clone());
        let allowed = ids_of(&mask, size);
        if m.is_terminated() || allowed.is_empty() || tokens.len() >= config.max_steps {
            break;
        }
        // A token outside the mask is refused and changes nothing.
        if allowed.len() < size {
            let outside = loop {
                let id = rng.below(size) as u32;
                if !get_bit(&mask, id) {
                    break id;
                }
            };
            let history = m.history_len();
            let can_end = m.can_terminate();
            if m.accept_token(outside).is_ok() {
                return Err(format!("token {} outside the mask accepted", show(vocab, outside)));
            }
            if mask_words(&m) != mask || m.history_len() != history || m.can_terminate() != can_end
            {
                return Err(format!("refused token {} changed the state", show(vocab, outside)));
            }
        }
        let non_stop: Vec<u32> = allowed.iter().copied().filter(|&t| !vocab.is_stop(t)).collect();
        let pick = if non_stop.is_empty() || (non_stop.len() < allowed.len() && rng.chance(0.15)) {
            *rng.pick(&allowed)
        } else {
            *rng.pick(&non_stop)
        };
        m.accept_token(pick)
            .map_err(|e| format!("allowed token {} refused: {e}", show(vocab, pick)))?;
        r = match case.reference.step_token(&r, pick) {
            Ok(Some(next)) => next,
            Ok(None) => {
                return Err(format!("the reference refuses allowed token {}", show(vocab, pick)))
            }
            Err(_) => {
                stats.too_big += 1;
                return Ok(stats);
            }
        };
        if !vocab.is_stop(pick) {
            text.extend_from_slice(vocab.token_bytes(pick).unwrap_or_default());
        }
        tokens.push(pick);
    }
    if m.is_terminated() {
        stats.terminated += 1;
    }
    // Rollback by n, then the same tokens again: the same masks.
    if !tokens.is_empty() {
        let n = rng.range(1, tokens.len());
        let at = tokens.len() - n;
        m.rollback(n).map_err(|e| format!("rollback({n}): {e}"))?;
        if mask_words(&m) != masks[at] {
            return Err(format!("after rollback({n}) of {tokens:?} the mask differs"));
        }
        if m.history_len() != at {
            return Err(format!("after rollback({n}) history_len is {}", m.history_len()));
        }
        for (i, &t) in tokens[at..].iter().enumerate() {
            m.accept_token(t).map_err(|e| format!("re-accepting {t} after rollback: {e}"))?;
            if mask_words(&m) != masks[at + i + 1] {
                return Err(format!(
                    "re-accepting {tokens:?} after rollback({n}): the mask differs"
                ));
            }
        }
        if m.rollback(tokens.len() + 1).is_ok() {
            return Err("rollback past the start succeeded".to_string());
        }
    }
    Ok(stats)
}
