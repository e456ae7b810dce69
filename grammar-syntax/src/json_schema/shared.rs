//! The rules every converted schema shares: whitespace (`ws`), strings (`json-string`, and
//! `json-escape`, one escaped character, which strings call: engines keep it a call
//! instead of a copy in every string),
//! numbers (`json-number`, `json-integer`) and any JSON value (`json-value`,
//! `json-object`, `json-array`). Grammars of different schemas name and define them the
//! same way, so an engine can share their compiled automata and mask caches.
//!
//! `json-integer` accepts what JSON Schema calls an integer in the forms a serializer
//! writes: `-?(0|[1-9][0-9]*)`, optionally with a zero fraction (`5.0`, at most
//! [`super::numbers::MAX_TRAILING_ZEROS`] zeros), and exponent
//! forms that are always integral (at most 16 fraction digits and an exponent of at
//! least 16: `1.2345e52`).

use super::{JsonSchemaOptions, Whitespace};
use crate::ir::{Expr, Grammar, GrammarBuilder, RuleId};
use crate::regex::{json_escape, json_unescaped_char};
use rustc_hash::FxHashMap as HashMap;

/// One of the shared rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SharedRule {
    /// Whitespace between tokens (`ws`).
    Ws,
    /// The spaces and tabs of `ws` after its first one (`ws-tail`).
    WsTail,
    /// Any JSON string (`json-string`).
    String,
    /// One escaped character of a JSON string (`json-escape`).
    Escape,
    /// Any JSON number (`json-number`).
    Number,
    /// Any JSON integer (`json-integer`).
    Integer,
    /// Any JSON value (`json-value`).
    Value,
    /// Any JSON object (`json-object`).
    Object,
    /// Any JSON array (`json-array`).
    Array,
}

impl SharedRule {
    /// The rule's name.
    pub fn name(self) -> &'static str {
        match self {
            SharedRule::Ws => "ws",
            SharedRule::WsTail => "ws-tail",
            SharedRule::String => "json-string",
            SharedRule::Escape => "json-escape",
            SharedRule::Number => "json-number",
            SharedRule::Integer => "json-integer",
            SharedRule::Value => "json-value",
            SharedRule::Object => "json-object",
            SharedRule::Array => "json-array",
        }
    }
}

/// The whitespace expression of a mode.
pub fn whitespace_expr(ws: Whitespace) -> Expr {
    let blank = || Expr::class(false, [(' ', ' '), ('\t', '\t')]);
    match ws {
        Whitespace::Compact => Expr::Empty,
        Whitespace::Any => Expr::star(Expr::class(false, [(' ', ' '), ('\t', '\n'), ('\r', '\r')])),
        Whitespace::Flexible { max_run } => Expr::seq(vec![
            Expr::optional(Expr::seq(vec![
                Expr::optional(Expr::literal("\r")),
                Expr::literal("\n"),
            ])),
            Expr::repeat(blank(), 0, Some(max_run)),
        ]),
    }
}

fn digits() -> Expr {
    Expr::class(false, [('0', '9')])
}

fn int_part() -> Expr {
    Expr::choice(vec![
        Expr::literal("0"),
        Expr::seq(vec![Expr::class(false, [('1', '9')]), Expr::star(digits())]),
    ])
}

/// The body of a shared rule; references to other shared rules go through `get`.
fn body(which: SharedRule, ws: Whitespace, get: &mut dyn FnMut(SharedRule) -> RuleId) -> Expr {
    match which {
        SharedRule::Ws => match ws {
            Whitespace::Flexible { max_run } if max_run >= 2 => Expr::seq(vec![
                Expr::optional(Expr::seq(vec![
                    Expr::optional(Expr::literal("\r")),
                    Expr::literal("\n"),
                ])),
                Expr::optional(Expr::seq(vec![
                    Expr::class(false, [(' ', ' '), ('\t', '\t')]),
                    Expr::optional(Expr::Rule(get(SharedRule::WsTail))),
                ])),
            ]),
            _ => whitespace_expr(ws),
        },
        SharedRule::WsTail => {
            let max_run = match ws {
                Whitespace::Flexible { max_run } => max_run,
                _ => 1,
            };
            Expr::repeat(Expr::class(false, [(' ', ' '), ('\t', '\t')]), 1, Some(max_run - 1))
        }
        SharedRule::String => {
            let char =
                Expr::choice(vec![json_unescaped_char(), Expr::Rule(get(SharedRule::Escape))]);
            Expr::seq(vec![Expr::literal("\""), Expr::star(char), Expr::literal("\"")])
        }
        SharedRule::Escape => json_escape(),
        SharedRule::Number => Expr::seq(vec![
            Expr::optional(Expr::literal("-")),
            int_part(),
            Expr::optional(Expr::seq(vec![Expr::literal("."), Expr::plus(digits())])),
            Expr::optional(Expr::seq(vec![
                Expr::class(false, [('e', 'e'), ('E', 'E')]),
                Expr::optional(Expr::class(false, [('+', '+'), ('-', '-')])),
                Expr::plus(digits()),
            ])),
        ]),
        SharedRule::Integer => {
            let plain = Expr::seq(vec![int_part(), super::numbers::zero_fraction()]);
            let exponent = Expr::seq(vec![
                Expr::class(false, [('1', '9')]),
                Expr::optional(Expr::seq(vec![
                    Expr::literal("."),
                    Expr::repeat(digits(), 1, Some(16)),
                ])),
                Expr::class(false, [('e', 'e'), ('E', 'E')]),
                Expr::optional(Expr::literal("+")),
                Expr::choice(vec![
                    Expr::seq(vec![Expr::literal("1"), Expr::class(false, [('6', '9')])]),
                    Expr::seq(vec![Expr::class(false, [('2', '9')]), digits()]),
                    Expr::seq(vec![Expr::class(false, [('1', '9')]), Expr::plus(digits())]),
                ]),
            ]);
            Expr::seq(vec![Expr::optional(Expr::literal("-")), Expr::choice(vec![plain, exponent])])
        }
        SharedRule::Value => Expr::choice(vec![
            Expr::Rule(get(SharedRule::Object)),
            Expr::Rule(get(SharedRule::Array)),
            Expr::Rule(get(SharedRule::String)),
            Expr::Rule(get(SharedRule::Number)),
            Expr::literal("true"),
            Expr::literal("false"),
            Expr::literal("null"),
        ]),
        SharedRule::Object => {
            let w = Expr::Rule(get(SharedRule::Ws));
            let member = Expr::seq(vec![
                Expr::Rule(get(SharedRule::String)),
                w.clone(),
                Expr::literal(":"),
                w.clone(),
                Expr::Rule(get(SharedRule::Value)),
                w.clone(),
            ]);
            Expr::seq(vec![
                Expr::literal("{"),
                w.clone(),
                Expr::optional(Expr::seq(vec![
                    member.clone(),
                    Expr::star(Expr::seq(vec![Expr::literal(","), w, member])),
                ])),
                Expr::literal("}"),
            ])
        }
        SharedRule::Array => {
            let w = Expr::Rule(get(SharedRule::Ws));
            let item = Expr::seq(vec![Expr::Rule(get(SharedRule::Value)), w.clone()]);
            Expr::seq(vec![
                Expr::literal("["),
                w.clone(),
                Expr::optional(Expr::seq(vec![
                    item.clone(),
                    Expr::star(Expr::seq(vec![Expr::literal(","), w, item])),
                ])),
                Expr::literal("]"),
            ])
        }
    }
}

/// The id of shared rule `which` in `b`, adding it (and the rules it uses) on first use.
pub fn shared_rule(
    b: &mut GrammarBuilder,
    cache: &mut HashMap<&'static str, RuleId>,
    ws: Whitespace,
    which: SharedRule,
) -> RuleId {
    if let Some(&id) = cache.get(which.name()) {
        return id;
    }
    let name = b.fresh_name(which.name());
    let id = b.declare(&name);
    // In the cache before its body is built: the rules it uses may use it.
    cache.insert(which.name(), id);
    let e = body(which, ws, &mut |r| shared_rule(b, cache, ws, r));
    b.define(id, e);
    id
}

/// A grammar for any JSON value, with the whitespace of `opts`.
pub fn builtin_json_grammar(opts: &JsonSchemaOptions) -> Grammar {
    let mut b = GrammarBuilder::new();
    let root = b.declare("root");
    let mut cache = HashMap::default();
    let value = shared_rule(&mut b, &mut cache, opts.whitespace, SharedRule::Value);
    b.define(root, Expr::Rule(value));
    // Every rule used was defined by `shared_rule`.
    b.finish(root).unwrap_or_else(|_| Grammar { rules: Vec::new(), root })
}

impl super::Converter<'_> {
    /// A reference to shared rule `which`.
    pub(crate) fn shared(&mut self, which: SharedRule) -> Expr {
        Expr::Rule(shared_rule(&mut self.b, &mut self.shared, self.opts.whitespace, which))
    }

    /// Any JSON value.
    pub(crate) fn json_value(&mut self) -> Expr {
        self.shared(SharedRule::Value)
    }

    /// Whitespace between tokens.
    pub(crate) fn ws(&mut self) -> Expr {
        self.shared(SharedRule::Ws)
    }

    /// One character of a JSON string in any form (escapes through `json-escape`).
    pub(crate) fn json_char(&mut self) -> Expr {
        Expr::choice(vec![json_unescaped_char(), self.shared(SharedRule::Escape)])
    }
}
