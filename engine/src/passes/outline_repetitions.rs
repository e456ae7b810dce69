//! Outlining of large counted repetitions.
//!
//! Invariant established: a repetition whose automaton would copy a large body many
//! times (`x{0,1000}` expands to 1000 copies of `x`) repeats a call of a rule holding the
//! body instead. Each copy then costs a call edge and a state, so automaton size grows
//! linearly in the bound with a small constant, and the body's own automaton exists once.
//! Sizes count a character class as its UTF-8 byte automaton ([`super::class_to_bytes`],
//! once per distinct class), and a reference to a spliced rule ([`super::is_spliced`]) as
//! the body read in its place, so they stay close to automaton sizes.

use super::inline_rules::{refers, spliced_rules, stays_call};
use super::{shared_lowering, ByClass};
use grammask_syntax::ir::{Expr, Grammar, Rule, RuleId, Span};

/// Bodies at most this large (IR nodes) are always copied: a character of a JSON string
/// (about 35 nodes once lowered to UTF-8) stays in place, so the characters of a
/// `maxLength` string keep their context-independent token masks; a call per character
/// would make every multi-character token depend on the stack.
pub const MAX_COPIED_BODY: usize = 64;
/// Copies × body size up to which a repetition is expanded in place.
pub const MAX_EXPANSION: usize = 4_096;

/// Moves the bodies of large counted repetitions into rules of their own.
pub fn outline_repetitions(mut grammar: Grammar) -> Grammar {
    let mut new_rules: Vec<Rule> = Vec::new();
    let first_new = grammar.rules.len();
    // The lowered size of each distinct class, by class.
    let mut sizes: ByClass<usize> = ByClass::default();
    // The spliced rules first, measured as they are outlined: the lowered size of each
    // one's body is what the rules reading it in place count for it. (A spliced body
    // calls only rules that stay calls, none of them spliced.)
    let stays: Vec<bool> = grammar.rules.iter().map(stays_call).collect();
    let is_spliced = spliced_rules(&grammar.rules, grammar.root, &stays);
    let mut spliced: Vec<Option<usize>> = vec![None; grammar.rules.len()];
    let mut outline_rule = |rule: &mut Rule, measure: bool, spliced: &[Option<usize>]| {
        let mut body = std::mem::replace(&mut rule.body, Expr::Empty);
        let ctx = Outlining { owner: &rule.name, first_new, spliced };
        let size = outline(&mut body, measure, &ctx, &mut new_rules, &mut sizes);
        rule.body = body;
        size
    };
    for r in (0..grammar.rules.len()).filter(|&r| is_spliced[r]) {
        spliced[r] = Some(outline_rule(&mut grammar.rules[r], true, &[]));
    }
    for r in (0..grammar.rules.len()).filter(|&r| !is_spliced[r]) {
        outline_rule(&mut grammar.rules[r], false, &spliced);
    }
    grammar.rules.extend(new_rules);
    grammar
}

/// What [`outline`] reads: the rule outlined in, the id of the first new rule, and the
/// lowered size of each spliced rule's body.
struct Outlining<'a> {
    owner: &'a str,
    first_new: usize,
    spliced: &'a [Option<usize>],
}

/// Outlines inside `expr`; returns its size afterwards ([`Expr::size`] with classes
/// lowered and each repetition left in place counted once per copy, as automata hold
/// them; computed on the way up so nested repetitions are not measured again) when
/// `measure` asks for it (inside a repetition of more than one copy), else 0.
fn outline(
    expr: &mut Expr,
    measure: bool,
    ctx: &Outlining<'_>,
    new_rules: &mut Vec<Rule>,
    sizes: &mut ByClass<usize>,
) -> usize {
    let (owner, first_new) = (ctx.owner, ctx.first_new);
    match expr {
        Expr::Seq(items) => {
            let inner = items
                .iter_mut()
                .map(|e| {
                    let size = outline(e, measure, ctx, new_rules, sizes);
                    // A spliced body's items are items of this sequence: its own node is
                    // not there.
                    match e {
                        Expr::Rule(r)
                            if ctx.spliced.get(r.index()).is_some_and(Option::is_some) =>
                        {
                            size.saturating_sub(1)
                        }
                        _ => size,
                    }
                })
                .sum::<usize>();
            if measure {
                1 + inner
            } else {
                0
            }
        }
        Expr::Choice(items) => {
            let inner =
                items.iter_mut().map(|e| outline(e, measure, ctx, new_rules, sizes)).sum::<usize>();
            if measure {
                1 + inner
            } else {
                0
            }
        }
        Expr::Repeat { expr: body, min, max } => {
            let copies = max.unwrap_or(min.saturating_add(1)).max(*min) as usize;
            let mut size = outline(body, measure || copies > 1, ctx, new_rules, sizes);
            let too_large =
                |size: usize| size > MAX_COPIED_BODY && size.saturating_mul(copies) > MAX_EXPANSION;
            if copies > 1 && too_large(size) && !matches!(**body, Expr::Rule(_)) {
                // Most of a JSON string character's body may be its escapes: as a call of
                // their own, the characters read directly may stay copied in place.
                let id = RuleId::new(first_new + new_rules.len());
                let mut split = (**body).clone();
                if let Some(escape) = split_escapes(&mut split, id) {
                    let mut none = Vec::new();
                    let split_size = outline(&mut split, true, ctx, &mut none, sizes);
                    if none.is_empty() && !too_large(split_size) {
                        **body = split;
                        size = split_size;
                        new_rules.push(Rule {
                            name: format!("{owner}-escape-{}", new_rules.len() + 1),
                            body: escape,
                            lookahead: None,
                            span: Span::default(),
                        });
                    }
                }
            }
            if copies > 1 && too_large(size) && !matches!(**body, Expr::Rule(_)) {
                let id = RuleId::new(first_new + new_rules.len());
                let inner = std::mem::replace(&mut **body, Expr::Rule(id));
                new_rules.push(Rule {
                    name: format!("{owner}-repeated-{}", new_rules.len() + 1),
                    body: inner,
                    lookahead: None,
                    span: Span::default(),
                });
                return 2;
            }
            // Copied in place: the automaton holds every copy.
            1 + size.saturating_mul(copies)
        }
        Expr::Rule(r) if measure => ctx.spliced.get(r.index()).copied().flatten().unwrap_or(1),
        Expr::Class(_) if !measure => 0,
        Expr::Class(class) => match sizes.get(class) {
            Some(&size) => size,
            None => *sizes.entry(class.clone()).or_insert(shared_lowering(class).size),
        },
        _ => 1,
    }
}

/// Moves the alternatives of choice `body` that start with the byte `\` and call nothing
/// (a JSON string character's escapes) into a call of rule `id`: returns that rule's
/// body, `\` and then the rest of each, an escape rule ([`super::is_escape`]). `None`
/// (and `body` left in pieces) when the body has no such alternatives or nothing else.
fn split_escapes(body: &mut Expr, id: RuleId) -> Option<Expr> {
    let mut alternatives = Vec::new();
    flatten_choice(std::mem::replace(body, Expr::Empty), &mut alternatives);
    let mut escapes = Vec::new();
    let mut rest = Vec::new();
    for alt in alternatives {
        match after_backslash(&alt).filter(|_| !refers(&alt)) {
            Some(tail) => escapes.push(tail),
            None => rest.push(alt),
        }
    }
    if escapes.is_empty() || rest.is_empty() {
        return None;
    }
    rest.push(Expr::Rule(id));
    *body = Expr::choice(rest);
    Some(Expr::Seq(vec![Expr::literal("\\"), Expr::choice(escapes)]))
}

/// The alternatives of `e`, nested choices opened.
fn flatten_choice(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Choice(items) => items.into_iter().for_each(|item| flatten_choice(item, out)),
        e => out.push(e),
    }
}

/// What `e` matches after its first byte, when every text it matches starts with `\`.
fn after_backslash(e: &Expr) -> Option<Expr> {
    match e {
        Expr::Bytes(b) if b.first() == Some(&b'\\') => {
            Some(if b.len() == 1 { Expr::Empty } else { Expr::Bytes(b[1..].to_vec()) })
        }
        Expr::Seq(items) => {
            let first = after_backslash(items.first()?)?;
            let mut rest = vec![first];
            rest.extend(items[1..].iter().cloned());
            Some(Expr::seq(rest))
        }
        Expr::Choice(items) => {
            Some(Expr::choice(items.iter().map(after_backslash).collect::<Option<_>>()?))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grammask_syntax::ir::GrammarBuilder;

    #[test]
    fn large_bounded_repetition_repeats_a_call() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let item = Expr::seq(vec![
            Expr::literal("{\"a\":"),
            Expr::class(false, vec![('0', '9')]),
            Expr::literal("}"),
        ]);
        // Thirty alternatives: a body far above the size that is copied in place.
        let item = Expr::choice(
            (0..30).map(|i| Expr::seq(vec![Expr::literal(&i.to_string()), item.clone()])).collect(),
        );
        b.define(root, Expr::repeat(item.clone(), 0, Some(1000)));
        let g = outline_repetitions(b.finish(root).unwrap());
        assert_eq!(g.rules.len(), 2);
        assert_eq!(g.rules[0].body, Expr::repeat(Expr::Rule(RuleId::new(1)), 0, Some(1000)));
        assert_eq!(g.rules[1].body, item);
        assert_eq!(g.rules[1].name, "root-repeated-1");
    }

    #[test]
    fn escapes_of_a_large_character_become_a_call_and_the_rest_stays_in_place() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        // A JSON string character: read directly, or one of many `\uXXXX` escapes.
        let hex = Expr::class(false, vec![('0', '9'), ('A', 'F'), ('a', 'f')]);
        let mut alternatives = vec![
            Expr::class(true, vec![('"', '"'), ('\\', '\\'), ('\0', '\x1f')]),
            Expr::seq(vec![Expr::literal("\\"), Expr::class(false, vec![('n', 'n')])]),
        ];
        for d in '0'..='9' {
            let digit = Expr::class(false, vec![(d, d)]);
            alternatives.push(Expr::seq(vec![
                Expr::literal("\\u"),
                digit,
                hex.clone(),
                hex.clone(),
                hex.clone(),
            ]));
        }
        b.define(root, Expr::repeat(Expr::choice(alternatives.clone()), 0, Some(300)));
        let g = outline_repetitions(b.finish(root).unwrap());
        assert_eq!(g.rules.len(), 2);
        let Expr::Repeat { expr, max: Some(300), .. } = &g.rules[0].body else { panic!() };
        assert_eq!(**expr, Expr::choice(vec![alternatives[0].clone(), Expr::Rule(RuleId::new(1))]));
        assert!(super::super::is_escape(&g.rules[1]), "{:?}", g.rules[1]);
    }

    #[test]
    fn a_body_holding_a_long_counted_run_is_repeated_as_a_call() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        // A few nodes, but 255 copies of the class in every copy of the body.
        let item = Expr::seq(vec![
            Expr::literal("{"),
            Expr::repeat(Expr::class(false, vec![('a', 'z')]), 1, Some(255)),
            Expr::literal("}"),
        ]);
        b.define(root, Expr::repeat(item.clone(), 0, Some(40)));
        let g = outline_repetitions(b.finish(root).unwrap());
        assert_eq!(g.rules.len(), 2);
        assert_eq!(g.rules[0].body, Expr::repeat(Expr::Rule(RuleId::new(1)), 0, Some(40)));
        assert_eq!(g.rules[1].body, item);
    }

    #[test]
    fn small_repetitions_stay_in_place() {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        let body = Expr::repeat(Expr::ByteRanges(vec![(b' ', b' ')]), 0, Some(100_000));
        b.define(root, body.clone());
        assert_eq!(outline_repetitions(b.finish(root).unwrap()).rules[0].body, body);
    }
}
