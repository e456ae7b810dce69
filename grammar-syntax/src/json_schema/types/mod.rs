//! Compiling a flat schema: `anyOf`/`oneOf` distribution, `not`, `enum`/`const`, then
//! one alternative per JSON type the schema allows (null, boolean, string, number,
//! object, array), each built from the keywords of its type.
//!
//! - `scalars`: constants, strings and numbers.
//! - `object`: objects.
//! - `array`: arrays.
//! - `check`: whether a value satisfies a flat schema.

mod array;
mod check;
mod object;
mod scalars;

use super::flat::{json_equal, types, Flat, Group, ObjPart};
use super::negate::Failure;
use super::numbers::{self, Decimal};
use super::{Converter, Sub, MAX_BRANCHES};
use crate::diagnostic::{Category, Diagnostic};
use crate::ir::{CharClass, Expr};
use crate::regex::{
    encode_class, encode_literal, has_json_escape, is_never, never, CharEncoding, JSON_MUST_ESCAPE,
};
use serde_json::Value;

/// Largest member expression (IR nodes) copied where an object's member list needs it
/// more than once; larger ones become rules.
const MAX_COPIED_MEMBER: usize = 48;
/// Optional listed members of one object from which their values may become rules of
/// their own (`Converter::optional_value`).
const MANY_OPTIONAL_MEMBERS: usize = 16;
/// Largest value written alike by several optional listed members of an object that
/// stays in each of them (its [`Expr::weight`]; `Converter::share_equal_values`).
const MIN_SHARED_OPTIONAL_VALUE: usize = 16;
/// Largest value of an optional listed member of an object of many (its
/// [`Expr::weight`]: IR nodes, a bounded repetition's copies counted) written in the
/// member; a heavier one becomes a rule that compilers keep a call
/// (`Converter::optional_value`).
const MAX_INLINE_OPTIONAL_VALUE: usize = 128;
/// Most sets of distinct items an array with `uniqueItems` may track (a rule per set of
/// values written so far): enough for 12 values in any number, or 30 values at most 3.
pub const MAX_UNIQUE_ITEM_SETS: usize = 4_096;
/// Largest member expression (IR nodes) copied into each rule of an object's members in
/// any order; past it, what follows the key becomes a rule.
const MAX_ANY_ORDER_COPIED: usize = 12;

/// `body`, or `null` too where the schema is `nullable`.
fn or_null(f: &Flat<'_>, body: Expr) -> Expr {
    match (f.nullable, is_never(&body)) {
        (false, _) => body,
        (true, false) => Expr::choice(vec![body, Expr::literal("null")]),
        (true, true) => Expr::literal("null"),
    }
}

/// `-?(0|[1-9][0-9]*)`: an integer as drafts 03 and 04 count them.
fn plain_integer() -> Expr {
    Expr::seq(vec![
        Expr::optional(Expr::literal("-")),
        Expr::choice(vec![
            Expr::literal("0"),
            Expr::seq(vec![
                Expr::class(false, [('1', '9')]),
                Expr::star(Expr::class(false, [('0', '9')])),
            ]),
        ]),
    ])
}

/// The expression without the optional zero fractions of integers (`5.0`).
fn strip_zero_fraction(e: Expr) -> Expr {
    if e == numbers::zero_fraction() {
        return Expr::Empty;
    }
    match e {
        Expr::Seq(items) => Expr::Seq(items.into_iter().map(strip_zero_fraction).collect()),
        Expr::Choice(items) => Expr::Choice(items.into_iter().map(strip_zero_fraction).collect()),
        Expr::Repeat { expr, min, max } => {
            Expr::Repeat { expr: Box::new(strip_zero_fraction(*expr)), min, max }
        }
        other => other,
    }
}

fn choice_or_never(alts: Vec<Expr>) -> Expr {
    let alts: Vec<Expr> = alts.into_iter().filter(|a| !is_never(a)).collect();
    if alts.is_empty() {
        never()
    } else {
        Expr::choice(alts)
    }
}

fn quoted(content: Expr) -> Expr {
    Expr::seq(vec![Expr::literal("\""), content, Expr::literal("\"")])
}

fn count32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The type bit of a JSON value.
fn value_type(v: &Value) -> u8 {
    match v {
        Value::Null => types::NULL,
        Value::Bool(_) => types::BOOLEAN,
        Value::Object(_) => types::OBJECT,
        Value::Array(_) => types::ARRAY,
        Value::String(_) => types::STRING,
        Value::Number(n) => match Decimal::from_number(n) {
            Some(d) if d.is_integer() => types::INTEGER,
            _ => types::FRACTIONAL,
        },
    }
}

impl Converter<'_> {
    /// A JSON string whose decoded value is none of `names` (written canonically): an
    /// object's free keys beside listed properties, a string `not` in an `enum`. One walk
    /// of the names' trie, whose every node may end the string (when no name ends
    /// there), go on with a character continuing some name, or diverge: read a character
    /// continuing none (any other, in any form) and then anything. A divergence depends
    /// only on the characters continuing at its node (most nodes continue with one): it
    /// is a rule per set of them, shared by every string of the grammar and listed as
    /// rarely reached, so compilers keep it a call. The string's automaton then holds one
    /// state per node of the trie, reading only the continuing characters, and the
    /// expression of every character a string may hold is written once per set, not in
    /// every state of every object's keys.
    fn string_excluding(&mut self, names: &[&str]) -> Expr {
        let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
        let mut sorted: Vec<&[char]> = chars.iter().map(|c| c.as_slice()).collect();
        sorted.sort_unstable();
        sorted.dedup();
        quoted(self.excluding_node(Trie { names: &sorted, depth: 0 }))
    }

    /// The strings (canonical escapes) that continue the prefix of `trie` into none of its
    /// names ([`Converter::string_excluding`]).
    fn excluding_node(&mut self, trie: Trie<'_>) -> Expr {
        let continuing: Vec<char> = trie.children().map(|(c, _)| c).collect();
        let mut alts = Vec::new();
        if !trie.ends() {
            alts.push(Expr::Empty);
        }
        alts.push(self.divergence(continuing));
        for (c, child) in trie.children() {
            let after = self.excluding_node(child);
            if !is_never(&after) {
                alts.push(Expr::seq(vec![char_literal(c), after]));
            }
        }
        choice_or_never(alts)
    }

    /// A call of the rule reading a JSON string character whose value is none of
    /// `continuing` (sorted), in any form, then anything: one rule per set.
    fn divergence(&mut self, continuing: Vec<char>) -> Expr {
        if let Some(&id) = self.divergences.get(&continuing) {
            return Expr::Rule(id);
        }
        let plain =
            CharClass::new(true, continuing.iter().map(|&c| (c, c)).chain(JSON_MUST_ESCAPE));
        let first = choice_or_never(
            [Some(Expr::Class(plain)), self.foreign_escapes(&continuing)]
                .into_iter()
                .flatten()
                .collect(),
        );
        let tail = Expr::star(self.json_char());
        let id = self.b.add_fresh("diverge", Expr::seq(vec![first, tail]));
        self.rarely_reached.push(self.b.name(id).to_string());
        self.divergences.insert(continuing, id);
        Expr::Rule(id)
    }

    /// A call of the rule reading the escapes of the characters outside `used` (sorted):
    /// a backslash, then a choice of what may follow it (`None` when no such escape
    /// exists). One rule per set of the characters of `used` that have escapes, which
    /// decides its body. Engines keep a rule of escapes a call, as they keep
    /// `json-escape`, instead of copying it into every rule that reads it.
    fn foreign_escapes(&mut self, used: &[char]) -> Option<Expr> {
        let escaped: Vec<char> = used.iter().copied().filter(|&c| has_json_escape(c)).collect();
        if let Some(&id) = self.escape_rules.get(&escaped) {
            return id.map(Expr::Rule);
        }
        let class = CharClass::new(true, escaped.iter().map(|&c| (c, c)));
        // The class's escapes: all but the characters written as themselves.
        let escapes = match encode_class(&class, CharEncoding::JsonString) {
            Expr::Choice(alts) => {
                alts.into_iter().filter(|a| !matches!(a, Expr::Class(_))).collect()
            }
            Expr::Class(_) => Vec::new(),
            other => vec![other],
        };
        let id = (!escapes.is_empty()).then(|| {
            let name = self.b.fresh_name("json-escape-foreign");
            let id = self.b.declare(&name);
            self.b.define(id, Expr::choice(escapes));
            id
        });
        self.escape_rules.insert(escaped, id);
        id.map(Expr::Rule)
    }
}

/// A node of the names' trie: the names (sorted) that share a prefix of `depth`
/// characters, a run of the sorted names.
#[derive(Clone, Copy)]
struct Trie<'a> {
    names: &'a [&'a [char]],
    depth: usize,
}

impl<'a> Trie<'a> {
    /// Whether a name ends here (is the prefix itself).
    fn ends(self) -> bool {
        self.names.first().is_some_and(|n| n.len() == self.depth)
    }

    /// The characters that continue some name here, in order, each with its node (the
    /// names continuing with it: consecutive, as the names are sorted and the ones that
    /// end here come first).
    fn children(self) -> impl Iterator<Item = (char, Trie<'a>)> {
        let depth = self.depth;
        let ending = self.names.iter().take_while(|n| n.len() == depth).count();
        let mut rest = &self.names[ending..];
        std::iter::from_fn(move || {
            let c = *rest.first()?.get(depth)?;
            let n = rest.iter().take_while(|name| name.get(depth) == Some(&c)).count();
            let (group, tail) = rest.split_at(n);
            rest = tail;
            Some((c, Trie { names: group, depth: depth + 1 }))
        })
    }
}

/// `c` as a JSON-string literal (canonical escape).
fn char_literal(c: char) -> Expr {
    encode_literal(c.encode_utf8(&mut [0; 4]), CharEncoding::JsonString)
}

impl<'a> Converter<'a> {
    /// The expression of a flat schema.
    pub(crate) fn compile_flat(
        &mut self,
        mut f: Flat<'a>,
        depth: usize,
    ) -> Result<Expr, Diagnostic> {
        if depth > self.opts.max_depth {
            return Err(super::limit_error(&f.ptr, self.opts.max_depth));
        }
        if f.never {
            return Ok(never());
        }
        if f.values.is_some()
            && (!f.groups.is_empty() || !f.nots.is_empty() || !f.conditionals.is_empty())
        {
            // `enum`/`const` beside combinators: each value checked against them is
            // simpler than distributing them, and works where their failures do not.
            if let (body, true) = self.value_literals(&f, depth)? {
                return Ok(or_null(&f, body));
            }
        }
        if !f.groups.is_empty() {
            let group = f.groups.remove(0);
            if !group.exclusive
                && (f.unevaluated_properties.is_some() || f.unevaluated_items.is_some())
            {
                // Every matching branch of an anyOf evaluates properties, not just one.
                self.unsupported(
                    group.ptr.clone(),
                    "anyOf together with unevaluatedProperties/unevaluatedItems".into(),
                )?;
            }
            // Nothing but this group constrains the value: each branch compiles as a
            // schema of its own, so a branch that is a `$ref` stays a rule reference and
            // recursive schemas (`"tail": {"anyOf": [{"$ref": "#/$defs/list"}, {"type":
            // "null"}]}`) do not unfold until the depth limit.
            let rest_trivial = f.is_type_only()
                && f.types == types::ALL
                && f.unevaluated_properties.is_none()
                && f.unevaluated_items.is_none();
            let mut flats = Vec::new();
            for b in &group.branches {
                self.count_branch(&group.ptr)?;
                let mut g = f.clone();
                let (parts, groups) = (g.obj_parts.len(), g.groups.len());
                self.merge(&mut g, b, depth + 1, &mut Vec::new(), false)?;
                g.move_parts_to(parts, groups, group.at);
                flats.push(g);
            }
            let nots_before: Vec<usize> = flats.iter().map(|g| g.nots.len()).collect();
            if group.exclusive {
                self.exclude_overlaps(&group, &mut flats, depth)?;
            }
            let mut alts = Vec::new();
            for ((g, b), before) in flats.into_iter().zip(&group.branches).zip(nots_before) {
                // A oneOf branch made exclusive of the others (with `not`s) compiles from
                // its flat schema.
                let alt = if rest_trivial && g.nots.len() == before {
                    self.compile_sub(b, depth + 1)?
                } else {
                    self.compile_flat(g, depth + 1)?
                };
                self.charge(&alt, &group.ptr)?;
                alts.push(alt);
            }
            return Ok(choice_or_never(alts));
        }
        if let Some(c) = f.conditionals.pop() {
            // (if and then) or (not if and else).
            if f.unevaluated_properties.is_some() || f.unevaluated_items.is_some() {
                self.unsupported(
                    c.condition.ptr.clone(),
                    "`if`/`then`/`else` together with unevaluatedProperties/unevaluatedItems"
                        .into(),
                )?;
                return self.compile_flat(f, depth + 1);
            }
            self.count_branch(&c.condition.ptr)?;
            let mut yes = f.clone();
            self.merge(&mut yes, &c.condition, depth + 1, &mut Vec::new(), false)?;
            if let Some(t) = &c.then {
                self.merge(&mut yes, t, depth + 1, &mut Vec::new(), false)?;
            }
            self.count_branch(&c.condition.ptr)?;
            let mut no = f;
            no.nots.push(c.condition.clone());
            if let Some(e) = &c.otherwise {
                self.merge(&mut no, e, depth + 1, &mut Vec::new(), false)?;
            }
            let alts = vec![self.compile_flat(yes, depth + 1)?, self.compile_flat(no, depth + 1)?];
            return Ok(choice_or_never(alts));
        }
        let mut nots = std::mem::take(&mut f.nots);
        while let Some(n) = nots.pop() {
            match n.v {
                Value::Bool(true) => return Ok(never()),
                Value::Bool(false) => continue,
                _ => {}
            }
            let mut nf = Flat::new(&n.ptr);
            self.merge(&mut nf, &n, depth + 1, &mut Vec::new(), false)?;
            if nf.never {
                continue;
            }
            let only_groups = nf.groups.len() == 1 && !nf.groups[0].exclusive && {
                let mut t = nf.clone();
                t.groups.clear();
                t.is_type_only() && t.types == types::ALL
            };
            if only_groups {
                nots.extend(nf.groups[0].branches.iter().cloned());
                continue;
            }
            let values = nf.values.take();
            if nf.is_type_only() {
                match values {
                    None => f.types &= !nf.types,
                    Some(vs) => {
                        let t = nf.types;
                        f.excluded.extend(vs.into_iter().filter(|v| value_type(v) & t != 0));
                    }
                }
                continue;
            }
            let failures = if f.unevaluated_properties.is_some() {
                Err("unevaluatedProperties")
            } else if f.unevaluated_items.is_some() {
                Err("unevaluatedItems")
            } else {
                self.failures(&nf, depth)
            };
            let failures = match failures {
                Ok(failures) => failures,
                Err(keyword) => {
                    self.unsupported(
                        n.ptr.clone(),
                        format!("`not` of a schema with `{keyword}` is not expressible"),
                    )?;
                    continue;
                }
            };
            // f and not nf: one alternative per way to fail nf; the other `not`s still
            // apply to each.
            f.nots = nots;
            let mut alts = Vec::new();
            for failure in &failures {
                self.count_branch(&n.ptr)?;
                let mut g = f.clone();
                self.apply_failure(&mut g, failure, depth)?;
                let alt = self.compile_flat(g, depth + 1)?;
                self.charge(&alt, &n.ptr)?;
                alts.push(alt);
            }
            return Ok(choice_or_never(alts));
        }
        self.expand_dependencies(&mut f, depth)?;
        if f.never {
            return Ok(never());
        }
        if let Some(alts) = self.split_witness(&mut f, depth)? {
            return Ok(choice_or_never(alts));
        }
        if let Some(alts) = self.split_min_properties(&f, depth)? {
            return Ok(choice_or_never(alts));
        }
        if let Some((without, with)) = self.split_dependency(&mut f, depth)? {
            let alts =
                vec![self.compile_flat(without, depth + 1)?, self.compile_flat(with, depth + 1)?];
            return Ok(choice_or_never(alts));
        }
        if !f.groups.is_empty() || !f.nots.is_empty() || !f.conditionals.is_empty() {
            // Dependencies merged in brought `anyOf`/`oneOf`/`not`: handle them as above.
            return self.compile_flat(f, depth + 1);
        }
        let body = match &f.values {
            Some(_) => {
                let (body, checked) = self.value_literals(&f, depth)?;
                if !checked {
                    self.unsupported(
                        f.ptr.clone(),
                        "enum/const together with keywords that cannot be checked on its values"
                            .into(),
                    )?;
                }
                body
            }
            None => self.by_type(&f, depth)?,
        };
        Ok(or_null(&f, body))
    }

    /// The values of `f`'s `enum`/`const` that satisfy its other keywords, as a choice
    /// of literals, and whether every value could be checked (one that cannot is kept).
    fn value_literals(&mut self, f: &Flat<'a>, depth: usize) -> Result<(Expr, bool), Diagnostic> {
        let mut alts = Vec::new();
        let mut checked = true;
        // Each value is one of `values`: checking membership again would make a large
        // `enum` quadratic.
        let mut others = f.clone();
        let values = others.values.take().unwrap_or_default();
        for v in values {
            if f.excluded.iter().any(|x| json_equal(x, v)) || value_type(v) & f.types == 0 {
                continue;
            }
            match self.check_value(&others, v, depth)? {
                Some(true) => alts.push(self.literal(v)),
                Some(false) => {}
                None => {
                    checked = false;
                    alts.push(self.literal(v));
                }
            }
        }
        Ok((choice_or_never(alts), checked))
    }

    fn by_type(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Diagnostic> {
        let t = f.types;
        let excluded_of =
            |bits: u8| f.excluded.iter().filter(|v| value_type(v) & bits != 0).count();
        let mut alts = Vec::new();
        if t & types::NULL != 0 && excluded_of(types::NULL) == 0 {
            alts.push(Expr::literal("null"));
        }
        if t & types::BOOLEAN != 0 {
            for (b, text) in [(true, "true"), (false, "false")] {
                if !f.excluded.iter().any(|v| v == &&Value::Bool(b)) {
                    alts.push(Expr::literal(text));
                }
            }
        }
        if t & types::STRING != 0 {
            alts.push(self.string(f)?);
        }
        if t & types::NUMBER != 0 {
            if excluded_of(types::NUMBER) > 0 {
                self.unsupported(f.ptr.clone(), "`not` of a number value".into())?;
            }
            alts.push(self.number(f)?);
        }
        if t & types::OBJECT != 0 {
            if excluded_of(types::OBJECT) > 0 {
                self.unsupported(f.ptr.clone(), "`not` of an object value".into())?;
            }
            alts.push(self.object(f, depth)?);
        }
        if t & types::ARRAY != 0 {
            if excluded_of(types::ARRAY) > 0 {
                self.unsupported(f.ptr.clone(), "`not` of an array value".into())?;
            }
            alts.push(self.array(f, depth)?);
        }
        Ok(choice_or_never(alts))
    }

    /// `dependentRequired`/`dependentSchemas` are folded in when their property is
    /// required; otherwise they must be trivially satisfied.
    fn expand_dependencies(&mut self, f: &mut Flat<'a>, depth: usize) -> Result<(), Diagnostic> {
        if f.types & types::OBJECT == 0 {
            return Ok(());
        }
        loop {
            let mut changed = false;
            for (name, deps, _) in f.dependent_required.clone() {
                if f.required.contains(&name) {
                    for d in deps {
                        if !f.required.contains(&d) {
                            f.required.push(d);
                            changed = true;
                        }
                    }
                }
            }
            let schemas = std::mem::take(&mut f.dependent_schemas);
            for (name, s) in schemas {
                if f.required.contains(&name) {
                    self.merge(f, &s, depth + 1, &mut Vec::new(), false)?;
                    changed = true;
                } else if s.v != &Value::Bool(true) {
                    f.dependent_schemas.push((name, s));
                }
            }
            if !changed {
                break;
            }
        }
        Ok(())
    }

    /// A member the object must have ([`Flat::witnesses`]): one of the listed properties
    /// the witness fits, present (with its value satisfying the witness's; without a
    /// value schema, the first listed property present that fits, the ones before it
    /// absent); or, where the object may hold other keys than its listed properties, an
    /// additional member that fits ([`Flat::unlisted_witnesses`]: a member of its own, or
    /// the one an earlier unlisted witness requires, fitting both). A required property
    /// that fits, where any value does, is the member already.
    fn split_witness(
        &mut self,
        f: &mut Flat<'a>,
        depth: usize,
    ) -> Result<Option<Vec<Expr>>, Diagnostic> {
        let Some(w) = f.witnesses.pop() else { return Ok(None) };
        if f.types & types::OBJECT == 0 {
            return Ok(Some(vec![self.compile_flat(f.clone(), depth + 1)?]));
        }
        if w.value.is_empty() {
            for r in f.required.clone() {
                if self.key_fits(&w, &r, depth)? == Some(true) {
                    return Ok(Some(vec![self.compile_flat(f.clone(), depth + 1)?]));
                }
            }
        }
        let closed = f
            .obj_parts
            .iter()
            .any(|p| p.additional.as_ref().is_some_and(Sub::is_false) && p.patterns.is_empty());
        let mut names: Vec<String> = Vec::new();
        let listed = f.obj_parts.iter().flat_map(|p| p.props.iter().map(|(n, _)| n));
        for n in listed.chain(&f.required) {
            if names.contains(n) || forbids(f, n) {
                continue;
            }
            match self.key_fits(&w, n, depth)? {
                Some(true) => names.push(n.clone()),
                Some(false) => {}
                None => {
                    self.unsupported(
                        f.ptr.clone(),
                        format!("`not` of `propertyNames` that cannot be checked against property `{n}`"),
                    )?;
                }
            }
        }
        let mut base = f.clone();
        base.types = types::OBJECT;
        let (mut alts, mut none) = self.first_present(base, &names, &w.value, depth)?;
        if !closed {
            for i in 0..none.unlisted_witnesses.len() {
                self.count_branch(&none.ptr)?;
                let mut g = none.clone();
                g.unlisted_witnesses[i] = g.unlisted_witnesses[i].and(&w);
                alts.push(self.compile_flat(g, depth + 1)?);
            }
            none.unlisted_witnesses.push(w);
            alts.push(self.compile_flat(none, depth + 1)?);
        }
        if f.types != types::OBJECT {
            let mut other = f.clone();
            other.types &= !types::OBJECT;
            other.witnesses.clear();
            alts.push(self.compile_flat(other, depth + 1)?);
        }
        Ok(Some(alts))
    }

    /// One alternative per name: that property present, its value under `values` too.
    /// Without `values` the alternatives exclude each other (the names before the one
    /// present are absent); with them they may overlap (an earlier name may be present
    /// with another value). Also returns `base` with every name absent (without
    /// `values`) or `base` itself.
    fn first_present(
        &mut self,
        mut base: Flat<'a>,
        names: &[String],
        values: &[Sub<'a>],
        depth: usize,
    ) -> Result<(Vec<Expr>, Flat<'a>), Diagnostic> {
        let mut alts = Vec::with_capacity(names.len());
        for name in names {
            self.count_branch(&base.ptr)?;
            let mut g = base.clone();
            if !g.required.contains(name) {
                g.required.push(name.clone());
            }
            for value in values {
                g.obj_parts.push(ObjPart {
                    props: vec![(name.clone(), value.clone())],
                    ptr: value.ptr.clone(),
                    ..ObjPart::default()
                });
            }
            let alt = self.compile_flat(g, depth + 1)?;
            self.charge(&alt, &base.ptr)?;
            alts.push(alt);
            if values.is_empty() {
                let ptr = base.ptr.clone();
                self.apply_failure(&mut base, &Failure::Forbid(name.clone(), ptr), depth)?;
            }
        }
        Ok((alts, base))
    }

    /// `minProperties: 1` beside listed properties, none of them required: the first
    /// listed property present is one of them (the ones before it absent), or none is
    /// and another key is. One alternative each, plus the values that are not objects.
    fn split_min_properties(
        &mut self,
        f: &Flat<'a>,
        depth: usize,
    ) -> Result<Option<Vec<Expr>>, Diagnostic> {
        if f.types & types::OBJECT == 0 || f.min_properties != 1 || !f.required.is_empty() {
            return Ok(None);
        }
        let mut names: Vec<String> = Vec::new();
        for part in &f.obj_parts {
            for (n, _) in &part.props {
                if !names.contains(n) && !forbids(f, n) {
                    names.push(n.clone());
                }
            }
        }
        if names.is_empty() {
            return Ok(None);
        }
        let mut alts = Vec::new();
        if f.types != types::OBJECT {
            let mut other = f.clone();
            other.types &= !types::OBJECT;
            other.min_properties = 0;
            alts.push(self.compile_flat(other, depth + 1)?);
        }
        let mut base = f.clone();
        base.types = types::OBJECT;
        base.min_properties = 0;
        let (present, mut none) = self.first_present(base, &names, &[], depth)?;
        alts.extend(present);
        // No listed property: another key.
        none.min_properties = 1;
        alts.push(self.compile_flat(none, depth + 1)?);
        Ok(Some(alts))
    }

    /// A dependency (`dependentRequired`/`dependentSchemas`) of a property that may be
    /// absent: objects without the property, or with it and what it brings. Returns the
    /// two alternatives, or `None` when there is no such dependency left.
    fn split_dependency(
        &mut self,
        f: &mut Flat<'a>,
        depth: usize,
    ) -> Result<Option<(Flat<'a>, Flat<'a>)>, Diagnostic> {
        let name = if let Some(i) =
            f.dependent_required.iter().position(|(n, _, _)| !f.required.contains(n))
        {
            f.dependent_required[i].0.clone()
        } else if let Some((n, _)) = f.dependent_schemas.first() {
            n.clone()
        } else {
            return Ok(None);
        };
        self.count_branch(&f.ptr)?;
        self.count_branch(&f.ptr)?;
        let mut without = f.clone();
        without.dependent_required.retain(|(n, _, _)| n != &name);
        without.dependent_schemas.retain(|(n, _)| n != &name);
        let ptr = f.ptr.clone();
        self.apply_failure(&mut without, &Failure::Forbid(name.clone(), ptr), depth)?;
        let mut with = f.clone();
        with.required.push(name);
        Ok(Some((without, with)))
    }

    /// Counts one more alternative created by distributing `anyOf`/`oneOf`/`not`.
    fn count_branch(&mut self, ptr: &str) -> Result<(), Diagnostic> {
        self.branches += 1;
        if self.branches > MAX_BRANCHES {
            return Err(Diagnostic::at_pointer(
                ptr.to_string(),
                format!("anyOf/oneOf/not distribute into more than {MAX_BRANCHES} alternatives"),
            )
            .with_category(Category::Limit("schema_branches")));
        }
        Ok(())
    }

    /// Whether the branches of a `oneOf` are provably pairwise disjoint.
    fn pairwise_disjoint(&mut self, flats: &[Flat<'a>]) -> bool {
        for (i, a) in flats.iter().enumerate() {
            for b in &flats[i + 1..] {
                if !self.disjoint(a, b) {
                    return false;
                }
            }
        }
        true
    }

    /// Makes the branches of a `oneOf` exclusive: each branch that may overlap another
    /// (not provably disjoint by type, const/enum or a discriminating property) also
    /// gets `not` of that other branch. Refused when such a `not` is not expressible.
    fn exclude_overlaps(
        &mut self,
        group: &Group<'a>,
        flats: &mut [Flat<'a>],
        depth: usize,
    ) -> Result<(), Diagnostic> {
        let n = flats.len();
        if flats.iter().any(|f| f.unevaluated_properties.is_some() || f.unevaluated_items.is_some())
            && !self.pairwise_disjoint(flats)
        {
            // The failures of a branch would count as evaluated properties and items.
            return self.unsupported(
                group.ptr.clone(),
                "oneOf whose branches may overlap, together with unevaluatedProperties/unevaluatedItems".into(),
            );
        }
        let mut overlaps = vec![Vec::new(); n];
        for i in 0..n {
            for j in i + 1..n {
                if !self.disjoint(&flats[i], &flats[j]) {
                    overlaps[i].push(j);
                    overlaps[j].push(i);
                }
            }
        }
        let mut checked = vec![false; n];
        for j in overlaps.iter().flatten().copied() {
            if std::mem::replace(&mut checked[j], true) {
                continue;
            }
            let b = &group.branches[j];
            let mut nf = Flat::new(&b.ptr);
            self.merge(&mut nf, b, depth + 1, &mut Vec::new(), false)?;
            if let Err(keyword) = self.failures(&nf, depth) {
                return self.unsupported(
                    group.ptr.clone(),
                    format!("`oneOf` whose branches may overlap (not provably disjoint by type, const/enum or a discriminating property), and whose branch {j} cannot be negated to make them exclusive (its `{keyword}`)"),
                );
            }
        }
        for (i, others) in overlaps.iter().enumerate() {
            for &j in others {
                flats[i].nots.push(group.branches[j].clone());
            }
        }
        Ok(())
    }

    pub(crate) fn disjoint(&mut self, a: &Flat<'a>, b: &Flat<'a>) -> bool {
        if a.never || b.never {
            return true;
        }
        let ta = effective_types(a);
        let tb = effective_types(b);
        if ta & tb == 0 {
            return true;
        }
        for (x, y) in [(a, b), (b, a)] {
            if let Some(vs) = &x.values {
                let all_fail =
                    vs.iter().all(|v| matches!(self.check_value(y, v, 0), Ok(Some(false))));
                if all_fail {
                    return true;
                }
            }
        }
        if ta & tb == types::OBJECT {
            // A discriminating property: required in both, with disjoint const/enum.
            for name in &a.required {
                if !b.required.contains(name) {
                    if forbids(b, name) {
                        return true;
                    }
                    continue;
                }
                if let (Some(va), Some(vb)) = (prop_values(a, name), prop_values(b, name)) {
                    if va.iter().all(|x| !vb.iter().any(|y| json_equal(x, y))) {
                        return true;
                    }
                }
            }
            for name in &b.required {
                if !a.required.contains(name) && forbids(a, name) {
                    return true;
                }
            }
        }
        false
    }
}

/// Three-valued and: false wins, then unknown.
fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// Three-valued or: true wins, then unknown.
fn or3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    and3(a.map(|x| !x), b.map(|x| !x)).map(|x| !x)
}

/// The types a flat schema's values may have.
fn effective_types(f: &Flat<'_>) -> u8 {
    match &f.values {
        Some(vs) => vs.iter().fold(0, |acc, v| acc | value_type(v)) & f.types,
        None => f.types,
    }
}

/// Whether the flat schema forbids property `name` (a part with `additionalProperties:
/// false` that does not list it).
fn forbids(f: &Flat<'_>, name: &str) -> bool {
    f.obj_parts.iter().any(|p| {
        p.additional.as_ref().is_some_and(Sub::is_false)
            && p.patterns.is_empty()
            && !p.props.iter().any(|(n, _)| n == name)
    }) || f.obj_parts.iter().any(|p| p.props.iter().any(|(n, s)| n == name && s.is_false()))
}

/// The values a property may take by a `const`/`enum` of one part (a superset).
fn prop_values<'a>(f: &Flat<'a>, name: &str) -> Option<Vec<&'a Value>> {
    for p in &f.obj_parts {
        for (n, s) in &p.props {
            if n != name || s.neg {
                continue;
            }
            if let Some(c) = s.v.get("const") {
                return Some(vec![c]);
            }
            if let Some(Value::Array(e)) = s.v.get("enum") {
                return Some(e.iter().collect());
            }
        }
    }
    None
}
