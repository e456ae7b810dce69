//! Serialization of compiled grammars, so a server can store them and load them back
//! without compiling again.
//!
//! The format is a versioned little-endian byte stream: a magic number, the format
//! version, a fingerprint of the vocabulary (a compiled grammar only fits the vocabulary
//! it was compiled for), the limits, the grammar IR after the passes (with source spans), the token sets and
//! every rule's automaton. The token mask cache is not stored: it refills on first use.
//! Loading checks every index and length, so malformed bytes give an error, never a
//! panic or an out-of-bounds state.

use crate::automaton::Dfa;
use crate::compiler::Limits;
use grammask_syntax::ir::{CharClass, Expr, Grammar, Rule, RuleId, Span, TokenSet};

const MAGIC: &[u8; 8] = b"GRAMMASK";
const VERSION: u32 = 3;
/// Deepest expression nesting accepted when loading.
const MAX_DEPTH: usize = 10_000;

/// Appends values to a byte buffer.
#[derive(Default)]
pub(crate) struct Writer {
    pub(crate) bytes: Vec<u8>,
}

impl Writer {
    pub(crate) fn u8(&mut self, v: u8) {
        self.bytes.push(v);
    }
    pub(crate) fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn u64(&mut self, v: u64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    pub(crate) fn slice(&mut self, b: &[u8]) {
        self.len(b.len());
        self.bytes.extend_from_slice(b);
    }
}

/// Reads values from a byte buffer; every read is checked.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// Why bytes could not be loaded as a compiled grammar.
pub(crate) type LoadError = String;

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], LoadError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte {}", self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    pub(crate) fn u8(&mut self) -> Result<u8, LoadError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn u32(&mut self) -> Result<u32, LoadError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, LoadError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// A length, checked against the bytes left (each element takes at least `unit`).
    pub(crate) fn len(&mut self, unit: usize) -> Result<usize, LoadError> {
        let n = self.u64()?;
        let left = (self.bytes.len() - self.at) as u64;
        if n.saturating_mul(unit.max(1) as u64) > left {
            return Err(format!("length {n} at byte {} exceeds the data", self.at));
        }
        Ok(n as usize)
    }
    pub(crate) fn slice(&mut self) -> Result<&'a [u8], LoadError> {
        let n = self.len(1)?;
        self.take(n)
    }
    pub(crate) fn is_done(&self) -> bool {
        self.at == self.bytes.len()
    }
}

/// Everything a compiled grammar is rebuilt from.
pub(crate) struct Parts {
    pub(crate) limits: Limits,
    pub(crate) grammar: Grammar,
    pub(crate) token_sets: Vec<TokenSet>,
    pub(crate) automata: Vec<Dfa>,
}

/// Writes a compiled grammar's parts.
pub(crate) fn write(
    fingerprint: u64,
    limits: &Limits,
    grammar: &Grammar,
    token_sets: &[TokenSet],
    automata: &[&Dfa],
) -> Vec<u8> {
    let mut w = Writer::default();
    w.bytes.extend_from_slice(MAGIC);
    w.u32(VERSION);
    w.u64(fingerprint);
    for v in [
        limits.max_grammar_size,
        limits.max_automaton_states,
        limits.max_live_stacks,
        limits.max_stack_depth,
        limits.max_rollback,
        usize::try_from(limits.max_compile_time.as_millis()).unwrap_or(usize::MAX),
        limits.max_mask_cache_bytes,
    ] {
        w.len(v);
    }
    write_grammar(&mut w, grammar);
    w.len(token_sets.len());
    for set in token_sets {
        write_token_set(&mut w, set);
    }
    w.len(automata.len());
    for dfa in automata {
        dfa.write(&mut w);
    }
    w.bytes
}

/// A grammar IR as bytes (the serialization's IR part): equal bytes, equal grammars.
pub(crate) fn grammar_bytes(grammar: &Grammar) -> Vec<u8> {
    let mut w = Writer::default();
    write_grammar(&mut w, grammar);
    w.bytes
}

fn write_grammar(w: &mut Writer, grammar: &Grammar) {
    w.u32(grammar.root.index() as u32);
    w.len(grammar.rules.len());
    for rule in &grammar.rules {
        w.slice(rule.name.as_bytes());
        w.len(rule.span.start);
        w.len(rule.span.end);
        write_expr(w, &rule.body);
        match &rule.lookahead {
            None => w.u8(0),
            Some(e) => {
                w.u8(1);
                write_expr(w, e);
            }
        }
    }
}

/// Reads a compiled grammar's parts, checking the header and the vocabulary.
pub(crate) fn read(bytes: &[u8], fingerprint: u64) -> Result<Parts, LoadError> {
    let mut r = Reader::new(bytes);
    if r.take(MAGIC.len())? != MAGIC {
        return Err("not a serialized grammask grammar (bad magic number)".into());
    }
    let version = r.u32()?;
    if version != VERSION {
        return Err(format!("format version {version}, this build reads {VERSION}"));
    }
    if r.u64()? != fingerprint {
        return Err("the grammar was compiled for another vocabulary".into());
    }
    let mut next = || -> Result<usize, LoadError> { Ok(r.u64()? as usize) };
    let limits = Limits {
        max_grammar_size: next()?,
        max_automaton_states: next()?,
        max_live_stacks: next()?,
        max_stack_depth: next()?,
        max_rollback: next()?,
        max_compile_time: std::time::Duration::from_millis(next()? as u64),
        max_mask_cache_bytes: next()?,
    };
    let root = r.u32()? as usize;
    let n_rules = r.len(10)?;
    let mut rules = Vec::with_capacity(n_rules);
    for _ in 0..n_rules {
        let name = String::from_utf8(r.slice()?.to_vec()).map_err(|_| "rule name not UTF-8")?;
        let span = Span::new(r.u64()? as usize, r.u64()? as usize);
        let body = read_expr(&mut r, n_rules, 0)?;
        let lookahead = match r.u8()? {
            0 => None,
            1 => Some(read_expr(&mut r, n_rules, 0)?),
            t => return Err(format!("bad lookahead tag {t}")),
        };
        rules.push(Rule { name, body, lookahead, span });
    }
    if root >= n_rules {
        return Err(format!("root rule {root} out of range"));
    }
    let n_sets = r.len(9)?;
    let mut token_sets = Vec::with_capacity(n_sets);
    for _ in 0..n_sets {
        token_sets.push(read_token_set(&mut r)?);
    }
    let n_automata = r.len(8)?;
    if n_automata != n_rules {
        return Err(format!("{n_automata} automata for {n_rules} rules"));
    }
    let mut automata = Vec::with_capacity(n_automata);
    for _ in 0..n_automata {
        automata.push(Dfa::read(&mut r, n_rules, n_sets)?);
    }
    if !r.is_done() {
        return Err("trailing bytes after the grammar".into());
    }
    Ok(Parts { limits, grammar: Grammar { rules, root: RuleId::new(root) }, token_sets, automata })
}

fn write_token_set(w: &mut Writer, set: &TokenSet) {
    w.u8(set.negated as u8);
    w.len(set.ids.len());
    set.ids.iter().for_each(|&id| w.u32(id));
}

fn read_token_set(r: &mut Reader<'_>) -> Result<TokenSet, LoadError> {
    let negated = r.u8()? != 0;
    let n = r.len(4)?;
    let ids = (0..n).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
    Ok(TokenSet { negated, ids: ids.into() })
}

fn write_expr(w: &mut Writer, e: &Expr) {
    match e {
        Expr::Empty => w.u8(0),
        Expr::Bytes(b) => {
            w.u8(1);
            w.slice(b);
        }
        Expr::Class(c) => {
            w.u8(2);
            w.u8(c.negated as u8);
            w.len(c.ranges.len());
            for &(lo, hi) in &c.ranges {
                w.u32(lo as u32);
                w.u32(hi as u32);
            }
        }
        Expr::ByteRanges(ranges) => {
            w.u8(3);
            w.len(ranges.len());
            for &(lo, hi) in ranges {
                w.u8(lo);
                w.u8(hi);
            }
        }
        Expr::Seq(items) | Expr::Choice(items) => {
            w.u8(if matches!(e, Expr::Seq(_)) { 4 } else { 5 });
            w.len(items.len());
            items.iter().for_each(|i| write_expr(w, i));
        }
        Expr::Rule(r) => {
            w.u8(6);
            w.u32(r.index() as u32);
        }
        Expr::Repeat { expr, min, max } => {
            w.u8(7);
            w.u32(*min);
            w.u32(max.map_or(u32::MAX, |m| m));
            w.u8(max.is_some() as u8);
            write_expr(w, expr);
        }
        Expr::Tokens(set) => {
            w.u8(8);
            write_token_set(w, set);
        }
        Expr::Text(text) => {
            w.u8(9);
            w.u32(text.until.map_or(u32::MAX, |i| i as u32));
            w.len(text.avoid.len());
            text.avoid.iter().for_each(|s| w.slice(s.as_bytes()));
            w.u32(text.max_tokens.unwrap_or(u32::MAX));
        }
    }
}

fn read_char(r: &mut Reader<'_>) -> Result<char, LoadError> {
    let v = r.u32()?;
    char::from_u32(v).ok_or_else(|| format!("{v:#x} is not a Unicode scalar value"))
}

fn read_expr(r: &mut Reader<'_>, n_rules: usize, depth: usize) -> Result<Expr, LoadError> {
    if depth > MAX_DEPTH {
        return Err("expression nesting too deep".into());
    }
    Ok(match r.u8()? {
        0 => Expr::Empty,
        1 => Expr::Bytes(r.slice()?.to_vec()),
        2 => {
            let negated = r.u8()? != 0;
            let n = r.len(8)?;
            let ranges = (0..n)
                .map(|_| Ok((read_char(r)?, read_char(r)?)))
                .collect::<Result<Vec<_>, LoadError>>()?;
            Expr::Class(CharClass::new(negated, ranges))
        }
        3 => {
            let n = r.len(2)?;
            Expr::ByteRanges(
                (0..n).map(|_| Ok((r.u8()?, r.u8()?))).collect::<Result<_, LoadError>>()?,
            )
        }
        tag @ (4 | 5) => {
            let n = r.len(1)?;
            let items =
                (0..n).map(|_| read_expr(r, n_rules, depth + 1)).collect::<Result<Vec<_>, _>>()?;
            if tag == 4 {
                Expr::Seq(items)
            } else if items.is_empty() {
                return Err("empty choice".into());
            } else {
                Expr::Choice(items)
            }
        }
        6 => {
            let id = r.u32()? as usize;
            if id >= n_rules {
                return Err(format!("rule reference {id} out of range"));
            }
            Expr::Rule(RuleId::new(id))
        }
        7 => {
            let min = r.u32()?;
            let max = r.u32()?;
            let bounded = r.u8()? != 0;
            let expr = Box::new(read_expr(r, n_rules, depth + 1)?);
            Expr::Repeat { expr, min, max: bounded.then_some(max) }
        }
        8 => Expr::Tokens(read_token_set(r)?),
        9 => {
            let until = r.u32()?;
            let n = r.len(8)?;
            let avoid = (0..n)
                .map(|_| {
                    let bytes = r.slice()?;
                    String::from_utf8(bytes.to_vec())
                        .map_err(|_| "free text string is not UTF-8".to_string())
                })
                .collect::<Result<Vec<_>, LoadError>>()?;
            let until = (until != u32::MAX).then_some(until as usize);
            let max_tokens = Some(r.u32()?).filter(|&m| m != u32::MAX);
            if avoid.iter().any(String::is_empty) || until.is_some_and(|i| i >= avoid.len()) {
                return Err("malformed free text".into());
            }
            Expr::Text(Box::new(grammask_syntax::ir::FreeText { avoid, until, max_tokens }))
        }
        t => return Err(format!("bad expression tag {t}")),
    })
}
