//! The `\uXXXX` part of JSON string escapes, shared by the characters of one rule.
//!
//! Invariant established: a rule whose body holds many copies of a JSON string character
//! (`[^"\\\x00-\x1F] | "\\" (["/\\bfnrt] | "u" hex...)`: the characters of a string with a
//! `maxLength`, or of a chunk of a longer one) reads what follows `\u` through a call of
//! one rule, while the characters, their backslash and the one-letter escapes stay
//! copied in place. Four hex digits with surrogate pairs are most of a character's
//! automaton (some sixteen of its two dozen states, and hex-digit byte classes); as a
//! call from the state after the backslash, a rule with a long string has a few states
//! per character, and is built that much faster when a generation first enters it. The
//! characters' own states call nothing, so their token masks and closures stay as
//! before; only a token that reads `\u` walks into the call.
//!
//! Runs after [`super::outline_repetitions`], which moves whole escapes into a call when a
//! character is too large to copy at all; this pass counts the copies an automaton holds
//! in place (a repetition's body once per copy; the rules of a pattern's complement, one
//! per state, which the rule entering them reads in place, together) and moves their `\u`
//! tails when there are at least [`MIN_COPIES`]. The JSON Schema converter writes the
//! tails of a complement's states as calls already (one rule per class, shared by its
//! states): those hold no tail in place, and stay as they are.

use super::inline_rules::refers;
use grammask_syntax::ir::{Expr, Grammar, Rule, RuleId, Span};
use grammask_syntax::regex::is_unicode_tail;
use rustc_hash::FxHashMap;

/// The fewest copies of escapes in one rule whose `\u` tails move into a call.
pub const MIN_COPIES: usize = 4;

/// Moves the `\u` tails of escapes copied many times in one automaton into rules of their
/// own, one per distinct tail.
pub fn outline_unicode_escapes(mut grammar: Grammar) -> Grammar {
    let first_new = grammar.rules.len();
    let moves = rules_to_move(&grammar);
    // Every tail moved is hashed (the `\u` forms of a class: a hundred nodes or more, in
    // each of a complement's many states): a fast hash.
    let mut tails: FxHashMap<Expr, RuleId> = FxHashMap::default();
    let mut new_rules: Vec<Rule> = Vec::new();
    for r in (0..first_new).filter(|&r| moves[r]) {
        let owner = grammar.rules[r].name.clone();
        let mut body = std::mem::replace(&mut grammar.rules[r].body, Expr::Empty);
        move_tails(&mut body, &mut |tail| {
            *tails.entry(tail).or_insert_with_key(|tail| {
                let id = RuleId::new(first_new + new_rules.len());
                new_rules.push(Rule {
                    name: format!("{owner}-unicode-escape-{}", new_rules.len() + 1),
                    body: tail.clone(),
                    lookahead: None,
                    span: Span::default(),
                });
                id
            })
        });
        grammar.rules[r].body = body;
    }
    grammar.rules.extend(new_rules);
    grammar
}

/// The rules whose tails move: those holding [`MIN_COPIES`] escapes in place, and the
/// states of a pattern's complement, one rule each, whose every reference ends the rule
/// (the rule that enters them reads them in place, `automaton::right_linear`), where the
/// states that refer to one another so hold as many together.
fn rules_to_move(grammar: &Grammar) -> Vec<bool> {
    let n = grammar.rules.len();
    // Per rule: its copies, and its references when they all end it.
    let mut tails: Vec<Option<Vec<usize>>> = Vec::with_capacity(n);
    let mut own = Vec::with_capacity(n);
    for rule in &grammar.rules {
        let mut refs = Some(Vec::new());
        own.push(copies(&rule.body, true, &mut refs));
        tails.push(refs);
    }
    let mut moves: Vec<bool> = own.iter().map(|&c| c >= MIN_COPIES).collect();
    if !own.iter().any(|&c| (1..MIN_COPIES).contains(&c)) {
        return moves;
    }
    // The states (fewer copies, references only at the end) joined along their
    // references to one another.
    let state = |r: usize| own[r] < MIN_COPIES && tails[r].is_some();
    let mut group: Vec<usize> = (0..n).collect();
    fn find(group: &mut [usize], mut r: usize) -> usize {
        while group[r] != r {
            group[r] = group[group[r]];
            r = group[r];
        }
        r
    }
    for r in (0..n).filter(|&r| state(r)) {
        for &c in tails[r].iter().flatten() {
            if state(c) {
                let (a, b) = (find(&mut group, r), find(&mut group, c));
                group[a] = b;
            }
        }
    }
    let mut total = vec![0usize; n];
    for r in (0..n).filter(|&r| state(r)) {
        let g = find(&mut group, r);
        total[g] = total[g].saturating_add(own[r]);
    }
    for r in (0..n).filter(|&r| state(r) && own[r] > 0) {
        moves[r] |= total[find(&mut group, r)] >= MIN_COPIES;
    }
    moves
}

/// Whether `rule` is the `\u` tail of escapes ([module docs](self)): its body is a
/// sequence that starts with the byte `u`, followed by more, and calls nothing.
pub fn is_escape_tail(rule: &Rule) -> bool {
    rule.lookahead.is_none() && is_tail(&rule.body)
}

/// Whether `e` is a `\u` tail: a sequence that starts with the byte `u`, followed by
/// more, and calls nothing.
fn is_tail(e: &Expr) -> bool {
    is_unicode_tail(e) && !refers(e)
}

/// Whether `items[i]` ends with a backslash and `items[i + 1]` is a choice holding a `\u`
/// tail: an escape.
fn escape_at(items: &[Expr], i: usize) -> bool {
    matches!(&items[i], Expr::Bytes(b) if b.last() == Some(&b'\\'))
        && matches!(items.get(i + 1), Some(Expr::Choice(alts)) if alts.iter().any(is_tail))
}

/// The escapes with a `\u` tail `e` holds in place; the rules `e` refers to go on
/// `refs` while each reference ends the rule (`at_end`: `e` does), and it becomes `None`
/// at the first that does not.
fn copies(e: &Expr, at_end: bool, refs: &mut Option<Vec<usize>>) -> usize {
    match e {
        Expr::Seq(items) => {
            let own = (0..items.len()).filter(|&i| escape_at(items, i)).count();
            let last = items.len().saturating_sub(1);
            let inner =
                items.iter().enumerate().map(|(i, item)| copies(item, at_end && i == last, refs));
            own + inner.sum::<usize>()
        }
        Expr::Choice(items) => items.iter().map(|item| copies(item, at_end, refs)).sum(),
        Expr::Repeat { expr, min, max } => {
            let n = max.unwrap_or(min.saturating_add(1)).max(*min) as usize;
            copies(expr, false, refs).saturating_mul(n)
        }
        Expr::Rule(r) => {
            match refs {
                Some(list) if at_end => list.push(r.index()),
                _ => *refs = None,
            }
            0
        }
        _ => 0,
    }
}

/// Replaces every `\u` tail of an escape in `e` by a call, `rule_of` giving the rule of
/// a tail.
fn move_tails(e: &mut Expr, rule_of: &mut impl FnMut(Expr) -> RuleId) {
    match e {
        Expr::Seq(items) => {
            for i in 0..items.len() {
                if escape_at(items, i) {
                    let Expr::Choice(alts) = &mut items[i + 1] else { unreachable!() };
                    for alt in alts.iter_mut().filter(|a| is_tail(a)) {
                        let tail = std::mem::replace(alt, Expr::Empty);
                        *alt = Expr::Rule(rule_of(tail));
                    }
                }
            }
            items.iter_mut().for_each(|item| move_tails(item, rule_of));
        }
        Expr::Choice(items) => items.iter_mut().for_each(|item| move_tails(item, rule_of)),
        Expr::Repeat { expr, .. } => move_tails(expr, rule_of),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grammask_syntax::ir::{CharClass, GrammarBuilder};

    /// A JSON string character: read directly, a one-letter escape, or `\u` and a tail.
    fn character() -> Expr {
        let hex = Expr::Class(CharClass::new(false, [('0', '9'), ('A', 'F'), ('a', 'f')]));
        Expr::choice(vec![
            Expr::Class(CharClass::new(true, [('"', '"'), ('\\', '\\'), ('\0', '\x1f')])),
            Expr::seq(vec![
                Expr::literal("\\"),
                Expr::choice(vec![
                    Expr::Class(CharClass::new(false, [('n', 'n'), ('"', '"')])),
                    Expr::seq(vec![Expr::literal("u"), hex.clone(), hex.clone(), hex.clone(), hex]),
                ]),
            ]),
        ])
    }

    fn grammar_of(body: Expr) -> Grammar {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        b.define(root, body);
        b.finish(root).unwrap()
    }

    #[test]
    fn many_copies_share_one_tail_rule_and_few_stay_in_place() {
        let many = Expr::seq(vec![
            Expr::literal("\""),
            Expr::repeat(character(), 0, Some(20)),
            character(),
            Expr::literal("\""),
        ]);
        let g = outline_unicode_escapes(grammar_of(many));
        assert_eq!(g.rules.len(), 2, "{g:?}");
        assert!(is_escape_tail(&g.rules[1]), "{:?}", g.rules[1]);
        assert_eq!(copies(&g.rules[0].body, true, &mut None), 0, "every tail moved");
        // The characters and their backslash stay in place; the escape's choice calls.
        let Expr::Seq(items) = &g.rules[0].body else { panic!() };
        let Expr::Choice(alts) = &items[2] else { panic!("{:?}", items[2]) };
        let Expr::Seq(escape) = &alts[1] else { panic!() };
        assert_eq!(escape[0], Expr::literal("\\"));
        assert!(matches!(&escape[1], Expr::Choice(a) if a.contains(&Expr::Rule(RuleId::new(1)))));
        let few = Expr::repeat(character(), 0, Some(MIN_COPIES as u32 - 1));
        let g = outline_unicode_escapes(grammar_of(few.clone()));
        assert_eq!(g.rules.len(), 1);
        assert_eq!(g.rules[0].body, few);
    }
}
