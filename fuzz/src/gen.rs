//! Random small grammars and vocabularies over a shared alphabet of characters, so that
//! tokens often match grammar symbols, split multi-byte characters, or span several symbols.
//!
//! Grammars have a few rules. A rule refers to a later rule anywhere, and to any rule
//! (itself included) only after a non-empty literal: recursion, but never left recursion.

use crate::rng::Choices;
use grammask::syntax::ir::{Expr, Grammar, GrammarBuilder, RuleId, TokenSet};
use grammask::Vocabulary;

/// Characters that literals, classes and tokens are made of: ASCII punctuation, and
/// characters of 2, 3 and 4 UTF-8 bytes, including the first and last of each length.
pub const CHARS: &[char] = &[
    'a',
    'b',
    'c',
    'x',
    '0',
    '9',
    ' ',
    '"',
    '[',
    ']',
    '{',
    '}',
    ',',
    ':',
    '\n',
    'é',
    'ÿ',
    'ʹ',
    '日',
    '本',
    'ぁ',
    '😀',
    '\u{7f}',
    '\u{80}',
    '\u{7ff}',
    '\u{800}',
    '\u{ffff}',
    '\u{10000}',
    '\u{10ffff}',
];

/// Class ranges that cross UTF-8 length boundaries or cover whole scripts.
const RANGES: &[(char, char)] = &[
    ('a', 'z'),
    ('0', '9'),
    ('\u{7e}', '\u{81}'),
    ('\u{7fe}', '\u{801}'),
    ('\u{fffe}', '\u{10001}'),
    ('\u{d7ff}', '\u{e000}'),
    ('ぁ', 'ゟ'),
    ('一', '鿿'),
    ('é', '日'),
    ('\u{10000}', '\u{10ffff}'),
];

/// What a random grammar may contain.
#[derive(Clone, Debug)]
pub struct GrammarConfig {
    /// Largest number of rules.
    pub max_rules: usize,
    /// Largest nesting depth of a rule body.
    pub max_depth: usize,
    /// Token ids the grammar may name (`<[id]>`); empty for none.
    pub token_ids: Vec<u32>,
}

impl Default for GrammarConfig {
    fn default() -> Self {
        GrammarConfig { max_rules: 3, max_depth: 3, token_ids: Vec::new() }
    }
}

/// A random grammar (the compiler may still refuse it, for example when a rule can
/// never end).
pub fn random_grammar<R: Choices>(rng: &mut R, config: &GrammarConfig) -> Grammar {
    let n = rng.range(1, config.max_rules.max(1));
    let mut b = GrammarBuilder::new();
    let ids: Vec<RuleId> = (0..n).map(|i| b.declare(&format!("r{i}"))).collect();
    for i in 0..n {
        let body = random_expr(rng, config, &ids, i, config.max_depth);
        b.define(ids[i], body);
    }
    b.finish(ids[0]).expect("every rule is defined")
}

fn random_literal<R: Choices>(rng: &mut R) -> Expr {
    let len = rng.range(1, 3);
    let s: String = (0..len).map(|_| *rng.pick(CHARS)).collect();
    Expr::literal(&s)
}

fn random_class<R: Choices>(rng: &mut R) -> Expr {
    let negated = rng.chance(0.2);
    let n = rng.range(1, 3);
    let ranges: Vec<(char, char)> = (0..n)
        .map(|_| match rng.below(3) {
            0 => {
                let c = *rng.pick(CHARS);
                (c, c)
            }
            1 => {
                let (a, b) = (*rng.pick(CHARS), *rng.pick(CHARS));
                (a.min(b), a.max(b))
            }
            _ => *rng.pick(RANGES),
        })
        .collect();
    Expr::class(negated, ranges)
}

fn random_expr<R: Choices>(
    rng: &mut R,
    config: &GrammarConfig,
    rules: &[RuleId],
    me: usize,
    depth: usize,
) -> Expr {
    if depth == 0 {
        return if rng.chance(0.6) { random_literal(rng) } else { random_class(rng) };
    }
    let sub = |rng: &mut R| random_expr(rng, config, rules, me, depth - 1);
    loop {
        match rng.below(100) {
            0..=19 => return random_literal(rng),
            20..=32 => return random_class(rng),
            33..=52 => {
                let n = rng.range(2, 3);
                return Expr::seq((0..n).map(|_| sub(rng)).collect());
            }
            53..=67 => {
                let n = rng.range(2, 3);
                return Expr::choice((0..n).map(|_| sub(rng)).collect());
            }
            68..=80 => {
                let min = rng.range(0, 2) as u32;
                let max = if rng.chance(0.4) { None } else { Some(min + rng.range(0, 2) as u32) };
                return Expr::repeat(sub(rng), min, max);
            }
            81..=87 if me + 1 < rules.len() => {
                return Expr::Rule(rules[rng.range(me + 1, rules.len() - 1)]);
            }
            88..=95 => {
                // Any rule, itself included, after a non-empty literal.
                let target = *rng.pick(rules);
                return Expr::seq(vec![random_literal(rng), Expr::Rule(target)]);
            }
            96..=97 => return Expr::Empty,
            98..=99 if !config.token_ids.is_empty() => {
                let id = *rng.pick(&config.token_ids);
                return Expr::Tokens(TokenSet { negated: false, ids: vec![id].into() });
            }
            _ => {}
        }
    }
}

/// Whether the grammar names tokens (`<[id]>`) anywhere.
pub fn names_tokens(grammar: &Grammar) -> bool {
    fn walk(e: &Expr) -> bool {
        match e {
            Expr::Tokens(_) => true,
            Expr::Seq(items) | Expr::Choice(items) => items.iter().any(walk),
            Expr::Repeat { expr, .. } => walk(expr),
            _ => false,
        }
    }
    grammar.rules.iter().any(|r| walk(&r.body))
}

/// A random vocabulary and the ids of its special tokens.
#[derive(Clone, Debug)]
pub struct RandomVocab {
    /// The vocabulary.
    pub vocab: Vocabulary,
    /// Stop tokens (special).
    pub stop: Vec<u32>,
    /// A special token whose bytes equal an ordinary token's (`a`): never allowed as text.
    pub special_a: u32,
}

/// A small random vocabulary: byte strings made of 1-3 characters of [`CHARS`], often
/// cut at either end inside a multi-byte character; two stop tokens; a special token
/// spelled like text; a few padding ids.
pub fn random_vocab<R: Choices>(rng: &mut R) -> RandomVocab {
    let n = rng.range(15, 50);
    let mut tokens: Vec<Vec<u8>> = (0..n)
        .map(|_| {
            let k = rng.range(1, 3);
            let mut bytes = Vec::new();
            for _ in 0..k {
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(rng.pick(CHARS).encode_utf8(&mut buf).as_bytes());
            }
            if bytes.len() > 1 && rng.chance(0.25) {
                let cut = rng.range(1, bytes.len() - 1);
                bytes.drain(..cut);
            }
            if bytes.len() > 1 && rng.chance(0.25) {
                let keep = rng.range(1, bytes.len() - 1);
                bytes.truncate(keep);
            }
            bytes
        })
        .collect();
    if rng.chance(0.7) {
        // Every single byte of the alphabet, so that walks rarely run out of tokens.
        let mut singles: Vec<u8> = CHARS.iter().flat_map(|c| c.to_string().into_bytes()).collect();
        singles.sort_unstable();
        singles.dedup();
        tokens.extend(singles.into_iter().filter(|_| rng.chance(0.8)).map(|b| vec![b]));
    }
    tokens.push(b"a".to_vec());
    let special_a = tokens.len() as u32;
    tokens.push(b"a".to_vec());
    let stop1 = tokens.len() as u32;
    tokens.push(b"</s>".to_vec());
    let stop2 = tokens.len() as u32;
    tokens.push(b"<|eot|>".to_vec());
    let size = tokens.len() + rng.range(0, 40);
    let vocab = Vocabulary::from_byte_tokens(
        tokens,
        &[special_a, stop1, stop2],
        &[stop1, stop2],
        Some(size),
    )
    .expect("a valid random vocabulary");
    RandomVocab { vocab, stop: vec![stop1, stop2], special_a }
}
