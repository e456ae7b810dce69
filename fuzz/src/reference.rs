//! A reference matcher that interprets the grammar IR directly, independent of the
//! engine's passes and automata: a state is a set of stacks of pending IR items, read
//! byte by byte (characters of a class are decoded from UTF-8, so a state may stand in
//! the middle of a character). Slow and simple; for small grammars only.
//!
//! Items whose rule can never finish are pruned when they are pushed, so every live
//! stack can be completed: "accepts the token" here means "accepts it and the grammar
//! can still be completed", the condition a token mask must state exactly.

use grammask::syntax::ir::{CharClass, Expr, Grammar, TokenSet};
use grammask::{TokenKind, Vocabulary};
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

/// A reference to IR compared and hashed by address.
#[derive(Debug)]
struct P<'g, T>(&'g T);

impl<T> Clone for P<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for P<'_, T> {}

impl<T> PartialEq for P<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}
impl<T> Eq for P<'_, T> {}
impl<T> Hash for P<'_, T> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        (self.0 as *const T).hash(h)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Item<'g> {
    /// An expression still to expand.
    Expr(P<'g, Expr>),
    /// A literal, `usize` bytes read.
    Lit(P<'g, Vec<u8>>, usize),
    /// One character of a class; the bytes of it read so far.
    Char(P<'g, CharClass>, Vec<u8>),
    /// One byte in ranges.
    ByteRanges(P<'g, Vec<(u8, u8)>>),
    /// `expr` repeated: at least `min` more, at most `max` more.
    Rep(P<'g, Expr>, u32, Option<u32>),
    /// One whole token of a set.
    Token(P<'g, TokenSet>),
}

type Stack<'g> = Vec<Item<'g>>;

/// Too many stacks (an ambiguous grammar): the reference gives no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooBig;

const MAX_STACKS: usize = 20_000;

/// The reference matcher's state.
#[derive(Clone, Debug)]
pub struct RefState<'g> {
    /// Stacks whose top reads input (a byte or a token); the empty stack means the root
    /// can end.
    stacks: Vec<Stack<'g>>,
    can_end: bool,
    terminated: bool,
}

/// The reference matcher of one grammar and vocabulary.
pub struct Reference<'g> {
    grammar: &'g Grammar,
    vocab: &'g Vocabulary,
    productive: Vec<bool>,
}

fn class_nonempty(c: &CharClass) -> bool {
    !c.positive_ranges().is_empty()
}

/// Number of bytes of a UTF-8 sequence starting with `lead`.
fn utf8_len(lead: u8) -> Option<usize> {
    match lead {
        0x00..=0x7F => Some(1),
        0xC2..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF4 => Some(4),
        _ => None,
    }
}

/// The scalar values whose UTF-8 encoding starts with `p`, as an inclusive interval;
/// `None` when `p` is not the start of any valid encoding.
pub fn prefix_interval(p: &[u8]) -> Option<(u32, u32)> {
    let len = utf8_len(*p.first()?)?;
    if p.len() > len {
        return None;
    }
    let second = match p[0] {
        0xE0 => (0xA0, 0xBF),
        0xED => (0x80, 0x9F),
        0xF0 => (0x90, 0xBF),
        0xF4 => (0x80, 0x8F),
        _ => (0x80, 0xBF),
    };
    for (i, &b) in p.iter().enumerate().skip(1) {
        let (lo, hi) = if i == 1 { second } else { (0x80, 0xBF) };
        if b < lo || b > hi {
            return None;
        }
    }
    let fill = |low: bool| -> u32 {
        let mut bytes = p.to_vec();
        while bytes.len() < len {
            let (lo, hi) = if bytes.len() == 1 { second } else { (0x80, 0xBF) };
            bytes.push(if low { lo } else { hi });
        }
        decode(&bytes)
    };
    Some((fill(true), fill(false)))
}

fn decode(b: &[u8]) -> u32 {
    match b.len() {
        1 => b[0] as u32,
        2 => ((b[0] as u32 & 0x1F) << 6) | (b[1] as u32 & 0x3F),
        3 => ((b[0] as u32 & 0x0F) << 12) | ((b[1] as u32 & 0x3F) << 6) | (b[2] as u32 & 0x3F),
        _ => {
            ((b[0] as u32 & 0x07) << 18)
                | ((b[1] as u32 & 0x3F) << 12)
                | ((b[2] as u32 & 0x3F) << 6)
                | (b[3] as u32 & 0x3F)
        }
    }
}

/// Reading `p` inside a character of class `c`: `Some(true)` when `p` is a whole
/// character of the class, `Some(false)` when it starts one, `None` otherwise.
fn char_step(c: &CharClass, p: &[u8]) -> Option<bool> {
    let (lo, hi) = prefix_interval(p)?;
    let complete = utf8_len(p[0]) == Some(p.len());
    let hit = c.positive_ranges().iter().any(|&(a, b)| (a as u32) <= hi && lo <= (b as u32));
    hit.then_some(complete)
}

impl<'g> Reference<'g> {
    /// The reference of `grammar` over `vocab`.
    pub fn new(grammar: &'g Grammar, vocab: &'g Vocabulary) -> Reference<'g> {
        let n = grammar.rules.len();
        let mut productive = vec![false; n];
        loop {
            let mut changed = false;
            for r in 0..n {
                if !productive[r] && expr_productive(&grammar.rules[r].body, &productive, vocab) {
                    productive[r] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Reference { grammar, vocab, productive }
    }

    fn productive(&self, e: &Expr) -> bool {
        expr_productive(e, &self.productive, self.vocab)
    }

    /// The state at the start of the grammar.
    pub fn start(&self) -> Result<RefState<'g>, TooBig> {
        let root = &self.grammar.rules[self.grammar.root.index()].body;
        if !self.productive(root) {
            return Ok(RefState { stacks: Vec::new(), can_end: false, terminated: false });
        }
        self.close(vec![vec![Item::Expr(P(root))]])
    }

    /// Expands the seeds until every stack's top reads input.
    fn close(&self, seeds: Vec<Stack<'g>>) -> Result<RefState<'g>, TooBig> {
        let mut visited: HashSet<Stack<'g>> = HashSet::new();
        let mut work = seeds;
        let mut out = Vec::new();
        let mut can_end = false;
        while let Some(stack) = work.pop() {
            if visited.contains(&stack) {
                continue;
            }
            if visited.len() > MAX_STACKS {
                return Err(TooBig);
            }
            visited.insert(stack.clone());
            let mut rest = stack.clone();
            let Some(top) = rest.pop() else {
                can_end = true;
                continue;
            };
            match top {
                Item::Lit(..) | Item::Char(..) | Item::ByteRanges(_) | Item::Token(_) => {
                    out.push(stack)
                }
                Item::Rep(e, min, max) => {
                    if min == 0 {
                        work.push(rest.clone());
                    }
                    if max != Some(0) && self.productive(e.0) {
                        let mut s = rest;
                        s.push(Item::Rep(e, min.saturating_sub(1), max.map(|m| m - 1)));
                        s.push(Item::Expr(e));
                        work.push(s);
                    }
                }
                Item::Expr(P(e)) => match e {
                    Expr::Empty => work.push(rest),
                    Expr::Bytes(b) => {
                        if !b.is_empty() {
                            rest.push(Item::Lit(P(b), 0));
                        }
                        work.push(rest);
                    }
                    Expr::Class(c) => {
                        if class_nonempty(c) {
                            rest.push(Item::Char(P(c), Vec::new()));
                            work.push(rest);
                        }
                    }
                    Expr::ByteRanges(r) => {
                        if !r.is_empty() {
                            rest.push(Item::ByteRanges(P(r)));
                            work.push(rest);
                        }
                    }
                    Expr::Seq(items) => {
                        if items.iter().all(|i| self.productive(i)) {
                            rest.extend(items.iter().rev().map(|i| Item::Expr(P(i))));
                            work.push(rest);
                        }
                    }
                    Expr::Choice(alts) => {
                        for a in alts.iter().filter(|a| self.productive(a)) {
                            let mut s = rest.clone();
                            s.push(Item::Expr(P(a)));
                            work.push(s);
                        }
                    }
                    Expr::Rule(id) => {
                        if self.productive[id.index()] {
                            rest.push(Item::Expr(P(&self.grammar.rules[id.index()].body)));
                            work.push(rest);
                        }
                    }
                    Expr::Repeat { expr, min, max } => {
                        if *min == 0 || self.productive(expr) {
                            rest.push(Item::Rep(P(expr), *min, *max));
                            work.push(rest);
                        }
                    }
                    Expr::Tokens(t) => {
                        if token_set_nonempty(t, self.vocab) {
                            rest.push(Item::Token(P(t)));
                            work.push(rest);
                        }
                    }
                    // The generator writes no free text; the engine's own tests check it.
                    Expr::Text(_) => return Err(TooBig),
                },
            }
        }
        Ok(RefState { stacks: out, can_end, terminated: false })
    }

    /// Reads one byte; `None` when no stack reads it.
    pub fn step_byte(
        &self,
        state: &RefState<'g>,
        byte: u8,
    ) -> Result<Option<RefState<'g>>, TooBig> {
        let mut seeds = Vec::new();
        for stack in &state.stacks {
            let mut rest = stack.clone();
            let Some(top) = rest.pop() else { continue };
            match top {
                Item::Lit(b, read) if b.0[read] == byte => {
                    if read + 1 < b.0.len() {
                        rest.push(Item::Lit(b, read + 1));
                    }
                    seeds.push(rest);
                }
                Item::Char(c, mut partial) => {
                    partial.push(byte);
                    match char_step(c.0, &partial) {
                        Some(true) => seeds.push(rest),
                        Some(false) => {
                            rest.push(Item::Char(c, partial));
                            seeds.push(rest);
                        }
                        None => {}
                    }
                }
                Item::ByteRanges(r) if r.0.iter().any(|&(lo, hi)| lo <= byte && byte <= hi) => {
                    seeds.push(rest);
                }
                _ => {}
            }
        }
        if seeds.is_empty() {
            return Ok(None);
        }
        self.close(seeds).map(Some)
    }

    /// Reads bytes; `None` when some byte is refused.
    pub fn step_bytes(
        &self,
        state: &RefState<'g>,
        bytes: &[u8],
    ) -> Result<Option<RefState<'g>>, TooBig> {
        let mut s = state.clone();
        for &b in bytes {
            match self.step_byte(&s, b)? {
                Some(next) => s = next,
                None => return Ok(None),
            }
        }
        Ok(Some(s))
    }

    /// Accepts token `id` (the rules of the engine's documentation: stop tokens where the
    /// root can end, grammar-named tokens where named, text tokens by their bytes);
    /// `None` when it is refused.
    pub fn step_token(
        &self,
        state: &RefState<'g>,
        id: u32,
    ) -> Result<Option<RefState<'g>>, TooBig> {
        if id as usize >= self.vocab.vocab_size() || state.terminated {
            return Ok(None);
        }
        if self.vocab.is_stop(id) && state.can_end {
            return Ok(Some(RefState { stacks: Vec::new(), can_end: false, terminated: true }));
        }
        let mut seeds = Vec::new();
        for stack in &state.stacks {
            if let Some(Item::Token(t)) = stack.last() {
                if t.0.ids.binary_search(&id).is_ok() != t.0.negated {
                    seeds.push(stack[..stack.len() - 1].to_vec());
                }
            }
        }
        let mut next = if seeds.is_empty() { None } else { Some(self.close(seeds)?) };
        // A stop token ends the output: it is never read as text, whatever its kind.
        let text = self.vocab.kind(id).is_some_and(TokenKind::is_text) && !self.vocab.is_stop(id);
        let bytes = self.vocab.token_bytes(id).unwrap_or_default();
        if text && !bytes.is_empty() {
            if let Some(by_bytes) = self.step_bytes(state, bytes)? {
                next = Some(match next {
                    None => by_bytes,
                    Some(mut n) => {
                        n.stacks.extend(by_bytes.stacks);
                        n.can_end |= by_bytes.can_end;
                        n
                    }
                });
            }
        }
        Ok(next)
    }
}

impl RefState<'_> {
    /// Whether the text so far is a whole document.
    pub fn can_end(&self) -> bool {
        self.can_end && !self.terminated
    }

    /// Whether a stop token was accepted.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Whether nothing at all can follow (no stack and the root cannot end).
    pub fn is_dead(&self) -> bool {
        self.stacks.is_empty() && !self.can_end
    }
}

fn token_set_nonempty(t: &TokenSet, vocab: &Vocabulary) -> bool {
    if t.negated {
        true
    } else {
        t.ids.iter().any(|&id| (id as usize) < vocab.vocab_size())
    }
}

fn expr_productive(e: &Expr, rules: &[bool], vocab: &Vocabulary) -> bool {
    match e {
        Expr::Empty | Expr::Bytes(_) => true,
        Expr::Class(c) => class_nonempty(c),
        Expr::ByteRanges(r) => !r.is_empty(),
        Expr::Seq(items) => items.iter().all(|i| expr_productive(i, rules, vocab)),
        Expr::Choice(alts) => alts.iter().any(|a| expr_productive(a, rules, vocab)),
        Expr::Rule(id) => rules[id.index()],
        Expr::Repeat { expr, min, .. } => *min == 0 || expr_productive(expr, rules, vocab),
        Expr::Tokens(t) => token_set_nonempty(t, vocab),
        Expr::Text(t) => t.can_end(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_intervals() {
        assert_eq!(prefix_interval(b"a"), Some((0x61, 0x61)));
        assert_eq!(prefix_interval(&[0xE0]), Some((0x800, 0xFFF)));
        assert_eq!(prefix_interval(&[0xED]), Some((0xD000, 0xD7FF)));
        assert_eq!(prefix_interval(&[0xF4]), Some((0x100000, 0x10FFFF)));
        assert_eq!(prefix_interval(&[0xC3, 0xA9]), Some((0xE9, 0xE9)));
        assert_eq!(prefix_interval(&[0xE0, 0x80]), None);
        assert_eq!(prefix_interval(&[0x80]), None);
        assert_eq!(prefix_interval(&[0xC0]), None);
        assert_eq!(prefix_interval(&[0x61, 0x61]), None);
    }
}
