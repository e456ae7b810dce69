//! Counted repetitions whose size does not grow with the bound.
//!
//! `x{min,max}` written as one IR repetition becomes `max` copies of `x` in an automaton.
//! For large bounds (`maxLength: 32767`, `maxItems: 10000`) the converter instead groups
//! the items into chunks: a rule `chunk ::= x{CHUNK}`, called up to `max / CHUNK` times,
//! then the remainder. Each call costs the automaton one state, so its size grows with
//! `max / CHUNK` instead of `max × |x|`; a count of chunks past `8 × CHUNK` is chunked
//! the same way (a rule of `CHUNK` chunk calls, which the engine keeps a call), so the
//! size grows with the logarithm of the bound.
//! Inside a chunk the items stay in one automaton, so the token masks of, say, string
//! characters stay context-independent except near a chunk's end. The optional part's
//! first chunk is written in place, so a run shorter than a chunk (most strings under a
//! large `maxLength`) never enters a chunk's call.

use super::Converter;
use crate::ir::Expr;
use crate::regex::never;

/// Largest body copied by a repetition, by weight ([`Expr::weight`]: a nested bounded
/// repetition counts once per copy); larger ones become a rule.
const MAX_COPIED: usize = 64;
/// Items per chunk.
pub const CHUNK: u32 = 32;
/// Chunk calls past which they are counted in chunks of chunks: a call of a chunk of
/// chunks saves `CHUNK - 1` call states but its own rule, its in-place first copy and its
/// remainders cost about `4 × CHUNK`.
const MANY_CHUNKS: u32 = 8 * CHUNK;

impl Converter<'_> {
    /// `x{min,max}` (`max` `None`: unbounded), chunked when large.
    pub(crate) fn counted(&mut self, x: Expr, min: u32, max: Option<u32>) -> Expr {
        if max.is_some_and(|m| m < min) {
            return never();
        }
        let large = |n: u32| n > 2 * CHUNK;
        if !large(max.unwrap_or(min)) {
            return self.counted_new(x, min, max);
        }
        // A large count is built once per item and bounds: its chunk rules are the same
        // each time, and building it copies the item dozens of times.
        let key = (x, min, max);
        if let Some(e) = self.counts.get(&key) {
            return e.clone();
        }
        let e = self.counted_new(key.0.clone(), min, max);
        self.counts.insert(key, e.clone());
        e
    }

    /// [`Converter::counted`] built.
    fn counted_new(&mut self, x: Expr, min: u32, max: Option<u32>) -> Expr {
        let large = |n: u32| n > 2 * CHUNK;
        let called = x.weight() > MAX_COPIED && max.unwrap_or(min) > 1;
        // Equal items and chunks are one rule each (`Converter::rule_by_body`): two strings
        // of one bound are then equal expressions.
        let x = if called { Expr::Rule(self.rule_by_body("repeated", x).0) } else { x };
        // A chunk of items, one repetition `x{CHUNK}`: the engine copies a small item into
        // every place of it (the chunk's automaton holds its items, as if written out, in
        // a fraction of the IR) and repeats the call of a large one (a rule) rather than
        // copy it. A chunk of chunks (the item a chunk's call) is written out as calls,
        // which the engine keeps a call (`is_chunk_of_calls`): inlined, every count of its
        // caller would hold all of its calls.
        let of_calls = !called && matches!(x, Expr::Rule(_));
        let in_chunk = |x: &Expr| {
            if of_calls {
                Expr::Seq(vec![x.clone(); CHUNK as usize])
            } else {
                Expr::repeat(x.clone(), CHUNK, Some(CHUNK))
            }
        };
        let top = max.unwrap_or(min);
        if !large(top) {
            return Expr::repeat(x, min, max);
        }
        // The same expression as the in-place first chunk below.
        let chunk = self.rule_by_body("chunk", in_chunk(&x)).0;
        // Past `MANY_CHUNKS` the chunks' own counts are chunked in turn (chunks of
        // chunks), so that a bound of a million costs a few hundred call states rather
        // than 31,250.
        let mut chunks = |min: u32, max: u32| {
            if max > MANY_CHUNKS {
                self.counted(Expr::Rule(chunk), min, Some(max))
            } else {
                Expr::repeat(Expr::Rule(chunk), min, Some(max))
            }
        };
        let head = if large(min) {
            let (q, r) = (min / CHUNK, min % CHUNK);
            Expr::seq(vec![chunks(q, q), Expr::repeat(x.clone(), r, Some(r))])
        } else {
            Expr::repeat(x.clone(), min, Some(min))
        };
        let tail = match max {
            None => Expr::star(x.clone()),
            Some(max) => {
                let n = max - min;
                if !large(n) {
                    Expr::repeat(x.clone(), 0, Some(n))
                } else {
                    // Lengths a·CHUNK + b: a < q with any b < CHUNK, or a = q with b ≤ r.
                    // The first chunk is written in place (`q >= 2`): a run shorter than
                    // a chunk, the common case, never enters a call, so its tokens never
                    // run past a chunk's end (where they would depend on the stack).
                    let (q, r) = (n / CHUNK, n % CHUNK);
                    let below_chunk = || Expr::repeat(x.clone(), 0, Some(CHUNK - 1));
                    let chunks = chunks(0, q - 2);
                    Expr::choice(vec![
                        below_chunk(),
                        Expr::seq(vec![
                            in_chunk(&x),
                            chunks,
                            Expr::choice(vec![
                                below_chunk(),
                                Expr::seq(vec![Expr::Rule(chunk), Expr::repeat(x, 0, Some(r))]),
                            ]),
                        ]),
                    ])
                }
            }
        };
        Expr::seq(vec![head, tail])
    }
}
