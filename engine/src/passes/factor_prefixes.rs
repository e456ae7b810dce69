//! Left-factoring of choices: alternatives that start with the same literal bytes read
//! them once, so a choice of many strings (an `enum`, a pattern's alternation of names)
//! becomes a trie.
//!
//! Invariant established: no two alternatives of a choice that are byte strings start
//! with the same byte. The language is unchanged; the input is fused
//! ([`super::fuse_sequences`]) and so is the output.
//!
//! Built as written, a choice of `k` strings is one NFA state with `k` edges, and every
//! DFA state holding it reads all of them: inside a loop (`.*(name1|name2|...)`, an
//! unanchored pattern ending in an alternation) that is every state, and subset
//! construction does work in proportion to states times strings. As a trie, the
//! choice's state has one edge per distinct first byte, and each set holds one NFA state
//! per prefix matched rather than one per string.

use super::fuse_sequences::fuse_top;
use grammask_syntax::ir::{Expr, Grammar};

/// Left-factors every choice of every rule.
pub fn factor_prefixes(mut grammar: Grammar) -> Grammar {
    for rule in &mut grammar.rules {
        factor_in_place(&mut rule.body);
    }
    grammar
}

/// Factors the choices of `expr`, innermost first.
fn factor_in_place(expr: &mut Expr) {
    match expr {
        Expr::Seq(items) => items.iter_mut().for_each(factor_in_place),
        Expr::Choice(items) => {
            items.iter_mut().for_each(factor_in_place);
            factor_choice(expr);
        }
        Expr::Repeat { expr, .. } => factor_in_place(expr),
        _ => {}
    }
}

/// The bytes of an alternative that is a byte string. Only those are factored: an
/// alternative that goes on after its literal (an object's member, `"\"id\"" ws ":" ...`)
/// often equals a copy elsewhere (the same member after a comma), which the NFA builder
/// shares while the two stay equal; its literal split off, the copies would no longer be.
fn lead(item: &Expr) -> Option<&[u8]> {
    match item {
        Expr::Bytes(b) => Some(b),
        _ => None,
    }
}

/// Whether two alternatives of `items` start with the same byte.
fn shares_a_first_byte(items: &[Expr]) -> bool {
    let mut seen = [0u64; 4];
    for b in items.iter().filter_map(lead).filter_map(|b| b.first().copied()) {
        let (word, bit) = (usize::from(b >> 6), 1u64 << (b & 63));
        if seen[word] & bit != 0 {
            return true;
        }
        seen[word] |= bit;
    }
    false
}

/// Factors the choice `expr` (whose alternatives are factored): the alternatives sharing
/// a first byte become their longest common prefix followed by the choice of their rests,
/// factored in turn, in the place of the first of them.
fn factor_choice(expr: &mut Expr) {
    let Expr::Choice(items) = expr else { return };
    if !shares_a_first_byte(items) {
        return;
    }
    // The byte strings grouped by first byte, each group in the place of its first
    // string among the other alternatives, which keep theirs.
    let mut group_of_byte = [usize::MAX; 256];
    let mut groups: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut order: Vec<Result<Expr, usize>> = Vec::with_capacity(items.len());
    for item in std::mem::take(items) {
        let bytes = match item {
            Expr::Bytes(b) if !b.is_empty() => b,
            other => {
                order.push(Ok(other));
                continue;
            }
        };
        let g = &mut group_of_byte[usize::from(bytes[0])];
        if *g == usize::MAX {
            *g = groups.len();
            groups.push(Vec::new());
            order.push(Err(*g));
        }
        groups[*g].push(bytes);
    }
    let mut out = Vec::with_capacity(order.len());
    for entry in order {
        match entry {
            Ok(item) => out.push(item),
            Err(g) => {
                let mut group = std::mem::take(&mut groups[g]);
                out.push(match group.len() {
                    1 => Expr::Bytes(group.swap_remove(0)),
                    _ => factor_group(group),
                });
            }
        }
    }
    *expr = Expr::choice(out);
}

/// Byte strings that all start with the same byte, as their longest common prefix and
/// the choice of their rests.
fn factor_group(group: Vec<Vec<u8>>) -> Expr {
    let first = &group[0];
    let len = group[1..].iter().fold(first.len(), |len, b| {
        len.min(first.iter().zip(b).take_while(|(x, y)| x == y).count())
    });
    let prefix = first[..len].to_vec();
    let mut rests: Vec<Expr> = Vec::with_capacity(group.len());
    let mut empty = false;
    for mut bytes in group {
        bytes.drain(..len);
        if !bytes.is_empty() {
            rests.push(Expr::Bytes(bytes));
        } else if !empty {
            // One empty rest says the prefix alone is an alternative.
            empty = true;
            rests.push(Expr::Empty);
        }
    }
    // The rests differ in their first byte or are empty, but may share their next.
    let mut rest = Expr::choice(rests);
    factor_choice(&mut rest);
    let mut node = Expr::Seq(vec![Expr::Bytes(prefix), rest]);
    fuse_top(&mut node);
    node
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Expr {
        Expr::literal(s)
    }

    fn factored(e: Expr) -> Expr {
        let mut e = e;
        factor_in_place(&mut e);
        e
    }

    #[test]
    fn strings_sharing_a_prefix_become_a_trie() {
        let e = Expr::Choice(vec![lit("us-east-1"), lit("us-west-2"), lit("eu-west-1"), lit("us")]);
        let expected = Expr::Choice(vec![
            Expr::Seq(vec![
                lit("us"),
                Expr::Choice(vec![
                    Expr::Seq(vec![lit("-"), Expr::Choice(vec![lit("east-1"), lit("west-2")])]),
                    Expr::Empty,
                ]),
            ]),
            lit("eu-west-1"),
        ]);
        assert_eq!(factored(e), expected);
    }

    #[test]
    fn alternatives_going_on_after_their_literal_are_left_whole() {
        let member =
            |key: &str| Expr::Seq(vec![lit(key), Expr::Rule(grammask_syntax::ir::RuleId::new(0))]);
        let e = Expr::Choice(vec![member("\"a\""), member("\"b\""), lit("\"c"), lit("\"d")]);
        let expected = Expr::Choice(vec![
            member("\"a\""),
            member("\"b\""),
            Expr::Seq(vec![lit("\""), Expr::Choice(vec![lit("c"), lit("d")])]),
        ]);
        assert_eq!(factored(e), expected);
    }

    #[test]
    fn choices_without_a_shared_first_byte_are_left_alone() {
        let e = Expr::Choice(vec![lit("true"), lit("false"), lit("null")]);
        assert_eq!(factored(e.clone()), e);
        let one = Expr::Choice(vec![lit("ab"), lit("ab")]);
        assert_eq!(factored(one), lit("ab"));
    }

    /// The lengths of the prefixes of `text[at..]` that `expr` (literals, sequences and
    /// choices) matches.
    fn ends(expr: &Expr, text: &[u8], at: usize) -> Vec<usize> {
        let mut out = match expr {
            Expr::Empty => vec![at],
            Expr::Bytes(b) => {
                if text[at..].starts_with(b) {
                    vec![at + b.len()]
                } else {
                    vec![]
                }
            }
            Expr::Seq(items) => items.iter().fold(vec![at], |starts, item| {
                starts.iter().flat_map(|&s| ends(item, text, s)).collect()
            }),
            Expr::Choice(items) => items.iter().flat_map(|i| ends(i, text, at)).collect(),
            other => panic!("not in these tests: {other:?}"),
        };
        out.sort_unstable();
        out.dedup();
        out
    }

    #[test]
    fn the_language_stays_the_same() {
        // Every text over a small alphabet up to five bytes, against choices of strings
        // sharing prefixes of every length, nested in a sequence and a choice.
        let names = ["ab", "abc", "abd", "b", "ba", "", "abcd", "a", "abc", "bad"];
        let inner = Expr::Choice(names.iter().map(|n| lit(n)).collect());
        let body = Expr::Seq(vec![
            inner.clone(),
            Expr::Choice(vec![
                lit("c"),
                Expr::Seq(vec![lit("cd"), inner.clone()]),
                Expr::Empty,
                Expr::Seq(vec![lit("c"), Expr::Choice(vec![lit("a"), lit("cb")])]),
            ]),
        ]);
        let mut after = body.clone();
        factor_in_place(&mut after);
        assert_ne!(after, body);
        let alphabet = [b'a', b'b', b'c', b'd'];
        let mut texts: Vec<Vec<u8>> = vec![Vec::new()];
        let mut last = texts.clone();
        for _ in 0..5 {
            last = last
                .iter()
                .flat_map(|t| alphabet.iter().map(move |&c| [t.as_slice(), &[c]].concat()))
                .collect();
            texts.extend(last.iter().cloned());
        }
        let mut matched = 0;
        for t in &texts {
            let whole = |e: &Expr| ends(e, t, 0).contains(&t.len());
            assert_eq!(whole(&body), whole(&after), "{:?}", String::from_utf8_lossy(t));
            matched += usize::from(whole(&body));
        }
        assert!(matched > 20, "{matched}");
    }

    #[test]
    fn no_two_alternatives_share_a_first_byte_after() {
        fn check(e: &Expr) {
            match e {
                Expr::Choice(items) => {
                    assert!(!shares_a_first_byte(items), "{e:?}");
                    items.iter().for_each(check);
                }
                Expr::Seq(items) => items.iter().for_each(check),
                _ => {}
            }
        }
        let words = ["apne1-az1", "apne1-az2", "apne2-az1", "aps1-az1", "use1-az1", "use1", "a"];
        let mut e = Expr::Choice(words.iter().map(|w| lit(w)).collect());
        factor_in_place(&mut e);
        check(&e);
    }
}
