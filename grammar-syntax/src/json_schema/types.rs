//! Compiling a flat schema: `anyOf`/`oneOf` distribution, `not`, `enum`/`const`, then
//! one alternative per JSON type the schema allows (null, boolean, string, number,
//! object, array), each built from the keywords of its type.

use super::flat::{json_equal, types, Flat, Group};
use super::negate::Failure;
use super::numbers::{self, Decimal};
use super::shared::SharedRule;
use super::{Converter, FormatMode, Sub, MAX_BRANCHES};
use crate::diagnostic::{Category, Diagnostic};
use crate::ir::{CharClass, Expr};
use crate::regex::{
    encode_class, encode_literal, is_never, json_any_char, never, regex_to_ir, CharEncoding,
    RegexOptions,
};
use serde_json::Value;
use std::collections::HashMap;

/// Largest member expression (IR nodes) copied where an object's member list needs it
/// more than once; larger ones become rules.
const MAX_COPIED_MEMBER: usize = 48;
/// Most sets of distinct items an array with `uniqueItems` may track (a rule per set of
/// values written so far): enough for 12 values in any number, or 30 values at most 3.
pub const MAX_UNIQUE_ITEM_SETS: usize = 4_096;
/// Largest member expression (IR nodes) copied into each rule of an object's members in
/// any order; past it, what follows the key becomes a rule.
const MAX_ANY_ORDER_COPIED: usize = 12;

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

/// A JSON string whose decoded value is none of `names` (written canonically);
/// `any_char` is one character of a JSON string in any form.
fn string_excluding(names: &[&str], any_char: Expr) -> Expr {
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    let refs: Vec<&[char]> = chars.iter().map(|c| c.as_slice()).collect();
    quoted(excluding(&refs, any_char))
}

/// String contents (canonical escapes) other than the given char sequences: a proper
/// prefix of one of them that is none of them, or a prefix of one of them followed by a
/// character that continues none of them and then anything. A character that occurs in
/// no name continues none after any prefix: that case is written once, after any prefix,
/// and so is the "anything" tail, instead of once per node of the names' trie (each
/// copy an automaton of its own for multi-byte characters and escapes).
fn excluding(names: &[&[char]], any_char: Expr) -> Expr {
    let mut used: Vec<char> = names.iter().flat_map(|n| n.iter().copied()).collect();
    used.sort();
    used.dedup();
    let foreign =
        encode_class(&CharClass::new(true, used.iter().map(|&c| (c, c))), CharEncoding::JsonString);
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    let trie = Trie { names: &sorted, depth: 0 };
    let mut divergent = vec![divergent_prefixes(trie, &used, &mut HashMap::new())];
    if !is_never(&foreign) {
        divergent.push(Expr::seq(vec![all_prefixes(trie), foreign]));
    }
    let divergent = choice_or_never(divergent);
    let tail = if is_never(&divergent) {
        never()
    } else {
        Expr::seq(vec![divergent, Expr::star(any_char)])
    };
    choice_or_never(vec![tail, unlisted_prefixes(trie)])
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

/// Every prefix (canonical escapes, the empty one and the names included) of the names
/// below `trie`, after its prefix.
fn all_prefixes(trie: Trie<'_>) -> Expr {
    let mut alts = vec![Expr::Empty];
    for (c, child) in trie.children() {
        alts.push(Expr::seq(vec![char_literal(c), all_prefixes(child)]));
    }
    Expr::choice(alts)
}

/// Strings `p c` (canonical escapes) where `p` continues the prefix of `trie` into a
/// prefix of some of its names, `c` is one of the characters `used` in them, and `p c`
/// continues none. `classes`: the class of such `c` by the characters that continue
/// (many nodes continue with the same one).
fn divergent_prefixes(
    trie: Trie<'_>,
    used: &[char],
    classes: &mut HashMap<Vec<char>, Expr>,
) -> Expr {
    let continuing: Vec<char> = trie.children().map(|(c, _)| c).collect();
    let others = classes
        .entry(continuing)
        .or_insert_with_key(|continuing| {
            // Both sorted: the used characters that continue no name here.
            let others =
                used.iter().filter(|c| continuing.binary_search(c).is_err()).map(|&c| (c, c));
            encode_class(&CharClass::new(false, others), CharEncoding::JsonString)
        })
        .clone();
    let mut alts = vec![others];
    for (c, child) in trie.children() {
        let after = divergent_prefixes(child, used, classes);
        if !is_never(&after) {
            alts.push(Expr::seq(vec![char_literal(c), after]));
        }
    }
    choice_or_never(alts)
}

/// The prefixes (canonical escapes, the empty one included) that continue the prefix of
/// `trie` and are none of its names.
fn unlisted_prefixes(trie: Trie<'_>) -> Expr {
    let mut alts = Vec::new();
    if !trie.ends() {
        alts.push(Expr::Empty);
    }
    for (c, child) in trie.children() {
        let after = unlisted_prefixes(child);
        if !is_never(&after) {
            alts.push(Expr::seq(vec![char_literal(c), after]));
        }
    }
    choice_or_never(alts)
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
            let unevaluated = f.unevaluated_properties.is_some() || f.unevaluated_items.is_some();
            let failures = if unevaluated { None } else { self.failures(&nf) };
            let Some(failures) = failures else {
                self.unsupported(n.ptr.clone(), "`not` of this schema is not expressible".into())?;
                continue;
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
        if let Some(alts) = self.split_key_outside(&mut f, depth)? {
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
        let body = match f.values.clone() {
            Some(values) => {
                let mut alts = Vec::new();
                // Each value is one of `values`: checking membership again would make a
                // large `enum` quadratic.
                let mut others = f.clone();
                others.values = None;
                for v in values {
                    if f.excluded.iter().any(|x| json_equal(x, v)) || value_type(v) & f.types == 0 {
                        continue;
                    }
                    match self.check_value(&others, v, depth)? {
                        Some(true) => alts.push(self.literal(v)),
                        Some(false) => {}
                        None => {
                            self.unsupported(
                                f.ptr.clone(),
                                "enum/const together with keywords that cannot be checked on its values".into(),
                            )?;
                            alts.push(self.literal(v));
                        }
                    }
                }
                choice_or_never(alts)
            }
            None => self.by_type(&f, depth)?,
        };
        if f.nullable && !is_never(&body) {
            return Ok(Expr::choice(vec![body, Expr::literal("null")]));
        }
        if f.nullable {
            return Ok(Expr::literal("null"));
        }
        Ok(body)
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

    /// "A key outside these names" where the object may only hold its listed properties
    /// (some part has `additionalProperties: false` and no patterns): the first listed
    /// property outside the names that is present is one of them, the ones before it
    /// absent. Refused when other keys may occur too.
    fn split_key_outside(
        &mut self,
        f: &mut Flat<'a>,
        depth: usize,
    ) -> Result<Option<Vec<Expr>>, Diagnostic> {
        let Some(outside) = f.key_outside.pop() else { return Ok(None) };
        if f.types & types::OBJECT == 0 {
            return Ok(Some(vec![self.compile_flat(f.clone(), depth + 1)?]));
        }
        let closed = f
            .obj_parts
            .iter()
            .any(|p| p.additional.as_ref().is_some_and(Sub::is_false) && p.patterns.is_empty());
        if !closed {
            self.unsupported(
                f.ptr.clone(),
                "`not` of `additionalProperties: false` where other keys may occur".into(),
            )?;
            return Ok(Some(vec![self.compile_flat(f.clone(), depth + 1)?]));
        }
        let mut names: Vec<String> = Vec::new();
        for part in &f.obj_parts {
            for (n, _) in &part.props {
                if !names.contains(n) && !outside.contains(n) && !forbids(f, n) {
                    names.push(n.clone());
                }
            }
        }
        let mut base = f.clone();
        base.types = types::OBJECT;
        let (mut alts, _) = self.first_present(base, &names, depth)?;
        if f.types != types::OBJECT {
            let mut other = f.clone();
            other.types &= !types::OBJECT;
            other.key_outside.clear();
            alts.push(self.compile_flat(other, depth + 1)?);
        }
        Ok(Some(alts))
    }

    /// One alternative per name: that property present and the names before it absent.
    /// Also returns `base` with every name absent.
    fn first_present(
        &mut self,
        mut base: Flat<'a>,
        names: &[String],
        depth: usize,
    ) -> Result<(Vec<Expr>, Flat<'a>), Diagnostic> {
        let mut alts = Vec::with_capacity(names.len());
        for name in names {
            self.count_branch(&base.ptr)?;
            let mut g = base.clone();
            if !g.required.contains(name) {
                g.required.push(name.clone());
            }
            let alt = self.compile_flat(g, depth + 1)?;
            self.charge(&alt, &base.ptr)?;
            alts.push(alt);
            let ptr = base.ptr.clone();
            self.apply_failure(&mut base, &Failure::Forbid(name.clone(), ptr), depth)?;
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
        let (present, mut none) = self.first_present(base, &names, depth)?;
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
            if self.failures(&nf).is_none() {
                return self.unsupported(
                    group.ptr.clone(),
                    format!("oneOf whose branches may overlap (not provably disjoint by type, const/enum or a discriminating property), and whose branch {j} cannot be negated to make them exclusive"),
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

    fn disjoint(&mut self, a: &Flat<'a>, b: &Flat<'a>) -> bool {
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

    /// Whether `v` satisfies the flat schema: `None` when a keyword cannot be checked.
    pub(crate) fn check_value(
        &mut self,
        f: &Flat<'a>,
        v: &Value,
        depth: usize,
    ) -> Result<Option<bool>, Diagnostic> {
        if f.never || value_type(v) & f.types == 0 {
            return Ok(Some(false));
        }
        if let Some(vs) = &f.values {
            if !vs.iter().any(|x| json_equal(x, v)) {
                return Ok(Some(false));
            }
        }
        if f.excluded.iter().any(|x| json_equal(x, v)) {
            return Ok(Some(false));
        }
        if depth > self.opts.max_depth {
            return Ok(None);
        }
        // Combinators, each a conjunct.
        let mut combined = Some(true);
        for g in &f.groups {
            let mut hits = Some(0usize);
            for b in &g.branches {
                match self.check_sub(b, v, depth)? {
                    Some(true) => hits = hits.map(|h| h + 1),
                    Some(false) => {}
                    None => hits = None,
                }
            }
            let ok = hits.map(|h| if g.exclusive { h == 1 } else { h >= 1 });
            combined = and3(combined, ok);
        }
        for n in &f.nots {
            combined = and3(combined, self.check_sub(n, v, depth)?.map(|b| !b));
        }
        for c in &f.conditionals {
            let ok = match self.check_sub(&c.condition, v, depth)? {
                Some(true) => match &c.then {
                    Some(t) => self.check_sub(t, v, depth)?,
                    None => Some(true),
                },
                Some(false) => match &c.otherwise {
                    Some(e) => self.check_sub(e, v, depth)?,
                    None => Some(true),
                },
                None => None,
            };
            combined = and3(combined, ok);
        }
        if combined == Some(false) {
            return Ok(Some(false));
        }
        let own = self.check_own(f, v, depth)?;
        Ok(and3(combined, own))
    }

    /// Whether `v` satisfies `sub` (`None` when a keyword cannot be checked).
    fn check_sub(
        &mut self,
        sub: &Sub<'a>,
        v: &Value,
        depth: usize,
    ) -> Result<Option<bool>, Diagnostic> {
        if sub.neg {
            let plain = Sub { neg: false, ..sub.clone() };
            return Ok(self.check_sub(&plain, v, depth)?.map(|b| !b));
        }
        if let Value::Bool(b) = sub.v {
            return Ok(Some(*b));
        }
        let mut f = Flat::new(&sub.ptr);
        match self.merge(&mut f, sub, depth + 1, &mut Vec::new(), false) {
            Ok(()) => {}
            Err(_) => return Ok(None),
        }
        self.check_value(&f, v, depth + 1)
    }

    /// [`Self::check_value`] without the combinators.
    fn check_own(
        &mut self,
        f: &Flat<'a>,
        v: &Value,
        depth: usize,
    ) -> Result<Option<bool>, Diagnostic> {
        match v {
            Value::String(s) => {
                let n = s.chars().count() as u64;
                if n < f.min_length || f.max_length.is_some_and(|m| n > m) {
                    return Ok(Some(false));
                }
                for (p, _) in &f.not_patterns {
                    let mut b = crate::ir::GrammarBuilder::new();
                    let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
                    let Ok(e) = regex_to_ir(p, &mut b, opts) else { return Ok(None) };
                    if self.matches(e, s) {
                        return Ok(Some(false));
                    }
                }
                for (p, _) in &f.patterns {
                    let mut b = crate::ir::GrammarBuilder::new();
                    let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
                    let Ok(e) = regex_to_ir(p, &mut b, opts) else { return Ok(None) };
                    if !self.matches(e, s) {
                        return Ok(Some(false));
                    }
                }
                if self.opts.format == FormatMode::Assert {
                    for (name, _) in &f.formats {
                        if super::formats::KNOWN.contains(&name.as_str()) {
                            match self.format_matches(name, s) {
                                Some(true) => {}
                                Some(false) => return Ok(Some(false)),
                                None => return Ok(None),
                            }
                        }
                    }
                }
                Ok(Some(true))
            }
            Value::Number(n) => {
                let Some(d) = Decimal::from_number(n) else { return Ok(None) };
                if let Some(l) = &f.lower {
                    if d < l.value || (l.exclusive && d == l.value) {
                        return Ok(Some(false));
                    }
                }
                if let Some(u) = &f.upper {
                    if d > u.value || (u.exclusive && d == u.value) {
                        return Ok(Some(false));
                    }
                }
                if !f.multiple_of.is_empty() {
                    return Ok(None);
                }
                Ok(Some(true))
            }
            Value::Object(map) => self.check_object(f, map, depth),
            Value::Array(items) => self.check_array(f, items, depth),
            _ => {
                let _ = depth;
                Ok(Some(true))
            }
        }
    }

    fn check_object(
        &mut self,
        f: &Flat<'a>,
        map: &serde_json::Map<String, Value>,
        depth: usize,
    ) -> Result<Option<bool>, Diagnostic> {
        if !f.has_object_constraints() {
            return Ok(Some(true));
        }
        if f.unevaluated_properties.is_some() {
            return Ok(None);
        }
        let n = map.len() as u64;
        if f.required.iter().any(|r| !map.contains_key(r))
            || n < f.min_properties
            || f.max_properties.is_some_and(|m| n > m)
        {
            return Ok(Some(false));
        }
        if f.key_outside.iter().any(|names| map.keys().all(|k| names.contains(k))) {
            return Ok(Some(false));
        }
        let mut result = Some(true);
        for (name, deps, _) in &f.dependent_required {
            if map.contains_key(name) && deps.iter().any(|d| !map.contains_key(d)) {
                return Ok(Some(false));
            }
        }
        let whole = Value::Object(map.clone());
        for (name, s) in &f.dependent_schemas {
            if map.contains_key(name) {
                result = and3(result, self.check_sub(s, &whole, depth)?);
            }
        }
        let strict_false = self.opts.strict
            && !f.obj_parts.iter().any(|p| p.additional.is_some() || !p.patterns.is_empty());
        for (key, value) in map {
            let key_value = Value::String(key.clone());
            for s in &f.property_names {
                result = and3(result, self.check_sub(s, &key_value, depth)?);
            }
            let (parts, evaluated) = self.property_parts(f, key);
            if !evaluated && strict_false {
                return Ok(Some(false));
            }
            for p in &parts {
                result = and3(result, self.check_sub(p, value, depth)?);
                if result == Some(false) {
                    return Ok(result);
                }
            }
        }
        Ok(result)
    }

    fn check_array(
        &mut self,
        f: &Flat<'a>,
        items: &[Value],
        depth: usize,
    ) -> Result<Option<bool>, Diagnostic> {
        if !f.has_array_constraints() {
            return Ok(Some(true));
        }
        if f.unevaluated_items.is_some() {
            return Ok(None);
        }
        let n = items.len() as u64;
        if n < f.min_items || f.max_items.is_some_and(|m| n > m) {
            return Ok(Some(false));
        }
        if f.unique_items.is_some() {
            for (i, a) in items.iter().enumerate() {
                if items[i + 1..].iter().any(|b| json_equal(a, b)) {
                    return Ok(Some(false));
                }
            }
        }
        let mut result = Some(true);
        for part in &f.arr_parts {
            for (i, item) in items.iter().enumerate() {
                let schema = part.prefix.get(i).or(part.rest.as_ref());
                if let Some(s) = schema {
                    result = and3(result, self.check_sub(s, item, depth)?);
                    if result == Some(false) {
                        return Ok(result);
                    }
                }
            }
        }
        for c in &f.contains {
            let mut count = Some(0u64);
            for item in items {
                match self.check_sub(&c.schema, item, depth)? {
                    Some(true) => count = count.map(|k| k + 1),
                    Some(false) => {}
                    None => count = None,
                }
            }
            let ok = count.map(|k| k >= c.min && c.max.is_none_or(|m| k <= m));
            result = and3(result, ok);
        }
        Ok(result)
    }

    /// Whether `text` has the known format `name` (`None` when it cannot be checked).
    fn format_matches(&self, name: &str, text: &str) -> Option<bool> {
        let mut b = crate::ir::GrammarBuilder::new();
        let opts = RegexOptions { whole_match: true, encoding: CharEncoding::Raw };
        let mut regex = |n: &str| regex_to_ir(&super::formats::regex_for(n)?, &mut b, opts).ok();
        let e = match name {
            "time" => super::formats::time_expr()?,
            "date-time" => Expr::Seq(vec![
                regex("date")?,
                Expr::class(false, [('T', 'T'), ('t', 't')]),
                super::formats::time_expr()?,
            ]),
            _ => regex(name)?,
        };
        Some(self.matches(e, text))
    }

    /// Whether a self-contained expression (no rule references) matches `text`.
    fn matches(&self, e: Expr, text: &str) -> bool {
        let mut b = crate::ir::GrammarBuilder::new();
        let root = b.declare("root");
        b.define(root, e);
        match b.finish(root) {
            Ok(g) => super::matcher::ReferenceMatcher::new(&g).matches(text),
            Err(_) => false,
        }
    }

    /// The JSON text of a value: objects keep their key order; numbers accept every
    /// text of the same value without exponent (`1`, `1.0`, `1.00`).
    pub(crate) fn literal(&mut self, v: &Value) -> Expr {
        match v {
            Value::Null => Expr::literal("null"),
            Value::Bool(b) => Expr::literal(if *b { "true" } else { "false" }),
            Value::String(s) => quoted(encode_literal(s, CharEncoding::JsonString)),
            Value::Number(n) => match Decimal::from_number(n) {
                Some(d) => {
                    let sign = if d.is_zero() {
                        Expr::optional(Expr::literal("-"))
                    } else if d.negative {
                        Expr::literal("-")
                    } else {
                        Expr::Empty
                    };
                    let frac = if d.frac.is_empty() {
                        numbers::zero_fraction()
                    } else {
                        Expr::seq(vec![Expr::literal(&format!(".{}", d.frac)), numbers::zeros(0)])
                    };
                    Expr::seq(vec![sign, Expr::literal(&d.int), frac])
                }
                None => Expr::literal(&n.to_string()),
            },
            Value::Array(items) => {
                let w = self.ws();
                let mut seq = vec![Expr::literal("["), w.clone()];
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        seq.push(Expr::literal(","));
                        seq.push(w.clone());
                    }
                    seq.push(self.literal(item));
                    seq.push(w.clone());
                }
                seq.push(Expr::literal("]"));
                Expr::seq(seq)
            }
            Value::Object(map)
                if self.opts.property_order == super::PropertyOrder::Any
                    && map.len() > 1
                    && map.len() <= super::MAX_ANY_ORDER_PROPERTIES =>
            {
                let w = self.ws();
                let mut members = Vec::new();
                for (k, item) in map {
                    let value = self.literal(item);
                    members.push((
                        true,
                        Expr::seq(vec![
                            quoted(encode_literal(k, CharEncoding::JsonString)),
                            w.clone(),
                            Expr::literal(":"),
                            w.clone(),
                            value,
                            w.clone(),
                        ]),
                    ));
                }
                let order: Vec<usize> = (0..members.len()).collect();
                let body = self
                    .member_list_any_order(&members, &order, None, &w, "")
                    .unwrap_or_else(|_| never());
                Expr::seq(vec![Expr::literal("{"), w, body, Expr::literal("}")])
            }
            Value::Object(map) => {
                let w = self.ws();
                let mut seq = vec![Expr::literal("{"), w.clone()];
                for (i, (k, item)) in map.iter().enumerate() {
                    if i > 0 {
                        seq.push(Expr::literal(","));
                        seq.push(w.clone());
                    }
                    seq.push(quoted(encode_literal(k, CharEncoding::JsonString)));
                    seq.push(w.clone());
                    seq.push(Expr::literal(":"));
                    seq.push(w.clone());
                    seq.push(self.literal(item));
                    seq.push(w.clone());
                }
                seq.push(Expr::literal("}"));
                Expr::seq(seq)
            }
        }
    }

    fn string(&mut self, f: &Flat<'a>) -> Result<Expr, Diagnostic> {
        let excluded: Vec<&str> = f.excluded.iter().filter_map(|v| v.as_str()).collect();
        let mut formats = Vec::new();
        for (name, ptr) in &f.formats {
            if self.opts.format == FormatMode::Annotation {
                continue;
            }
            if super::formats::KNOWN.contains(&name.as_str()) {
                formats.push((name.clone(), ptr.clone()));
            } else if super::formats::UNIMPLEMENTED.contains(&name.as_str()) {
                self.unsupported(ptr.clone(), format!("format `{name}` cannot be enforced"))?;
            } else {
                let w = Diagnostic::at_pointer(
                    ptr.clone(),
                    format!("unknown format `{name}` is not enforced"),
                )
                .into_warning();
                if !self.warnings.contains(&w) {
                    self.warnings.push(w);
                }
            }
        }
        let lengths = f.min_length > 0 || f.max_length.is_some();
        if f.max_length.is_some_and(|m| m < f.min_length) {
            return Ok(never());
        }
        if let Some((p, ptr)) = f.not_patterns.first() {
            let alone = f.not_patterns.len() == 1
                && f.patterns.is_empty()
                && formats.is_empty()
                && !lengths
                && excluded.is_empty();
            let complement = if alone {
                self.pattern_complement(p, ptr)?
            } else if excluded.is_empty() {
                self.string_combination(f, &formats)?
            } else {
                None
            };
            return match complement {
                Some(c) => Ok(quoted(c)),
                None => {
                    self.unsupported(
                        ptr.clone(),
                        "`not` of this pattern (its complement is expressible alone on a string, within 1,000 automaton states)".into(),
                    )?;
                    Ok(self.shared(SharedRule::String))
                }
            };
        }
        if f.patterns.is_empty() && formats.is_empty() && !lengths {
            if excluded.is_empty() {
                return Ok(self.shared(SharedRule::String));
            }
            let any_char = self.json_char();
            return Ok(string_excluding(&excluded, any_char));
        }
        if !excluded.is_empty() {
            self.unsupported(
                f.ptr.clone(),
                "`not` of a string value together with string keywords".into(),
            )?;
        }
        match (f.patterns.as_slice(), formats.as_slice(), lengths) {
            // Escapes inline: each counted position calling `json-escape` would be one more
            // position for the mask cache to classify at every character.
            ([], [], true) => Ok(quoted(self.counted(
                json_any_char(),
                count32(f.min_length),
                f.max_length.map(count32),
            ))),
            ([(p, ptr)], [], false) => {
                match regex_to_ir(p, &mut self.b, RegexOptions::json_schema_pattern()) {
                    Ok(e) => Ok(quoted(e)),
                    Err(mut d) => {
                        d.pointer = Some(ptr.clone());
                        if d.category == Category::Unsupported {
                            self.unsupported(ptr.clone(), d.message)?;
                            Ok(self.shared(SharedRule::String))
                        } else {
                            Err(d)
                        }
                    }
                }
            }
            ([(p, ptr)], [], true) => self.pattern_with_length(p, ptr, f, false),
            ([], [(name, ptr)], true) => match super::formats::regex_for(name) {
                Some(p) => self.pattern_with_length(&p, ptr, f, true),
                None => {
                    self.unsupported(
                        ptr.clone(),
                        format!("format `{name}` together with minLength/maxLength"),
                    )?;
                    Ok(self.shared(SharedRule::String))
                }
            },
            ([], [(name, ptr)], false) => match self.format_expr(name) {
                Some(e) => Ok(quoted(e)),
                None => {
                    self.unsupported(ptr.clone(), format!("format `{name}`"))?;
                    Ok(self.shared(SharedRule::String))
                }
            },
            _ => {
                if let Some(e) = self.string_combination(f, &formats)? {
                    return Ok(quoted(e));
                }
                let ptr = f
                    .patterns
                    .first()
                    .map(|p| p.1.clone())
                    .or_else(|| formats.first().map(|p| p.1.clone()))
                    .unwrap_or_else(|| f.ptr.clone());
                self.unsupported(
                    ptr,
                    "several of pattern/format/minLength/maxLength on one string cannot be combined".into(),
                )?;
                Ok(self.shared(SharedRule::String))
            }
        }
    }

    /// A string matching `pattern` (a format's regex when `whole`) with the lengths of `f`.
    fn pattern_with_length(
        &mut self,
        pattern: &str,
        ptr: &str,
        f: &Flat<'a>,
        whole: bool,
    ) -> Result<Expr, Diagnostic> {
        let opts = RegexOptions { whole_match: whole, encoding: CharEncoding::JsonString };
        match crate::regex::regex_to_ir_with_length(pattern, opts, f.min_length, f.max_length) {
            Ok(Some(e)) => Ok(quoted(e)),
            Ok(None) => {
                let formats = if whole { f.formats.as_slice() } else { &[] };
                if let Some(e) = self.string_combination(f, formats)? {
                    return Ok(quoted(e));
                }
                self.unsupported(
                    ptr.to_string(),
                    "minLength/maxLength together with a pattern or format whose several variable-length parts they would constrain".into(),
                )?;
                Ok(self.shared(SharedRule::String))
            }
            Err(mut d) => {
                d.pointer = Some(ptr.to_string());
                if d.category == Category::Unsupported {
                    self.unsupported(ptr.to_string(), d.message)?;
                    Ok(self.shared(SharedRule::String))
                } else {
                    Err(d)
                }
            }
        }
    }

    fn number(&mut self, f: &Flat<'a>) -> Result<Expr, Diagnostic> {
        let integer = f.types & types::FRACTIONAL == 0;
        if f.types & types::INTEGER == 0 {
            if f.has_number_constraints() {
                self.unsupported(f.ptr.clone(), "non-integer numbers with bounds".into())?;
            }
            // Numbers with a non-zero fraction.
            let digits = || Expr::class(false, [('0', '9')]);
            return Ok(Expr::seq(vec![
                Expr::optional(Expr::literal("-")),
                Expr::choice(vec![
                    Expr::literal("0"),
                    Expr::seq(vec![Expr::class(false, [('1', '9')]), Expr::star(digits())]),
                ]),
                Expr::literal("."),
                Expr::star(digits()),
                Expr::class(false, [('1', '9')]),
                Expr::star(digits()),
            ]));
        }
        if !f.has_number_constraints() {
            if integer && self.dialect.plain_integers() {
                return Ok(plain_integer());
            }
            return Ok(self.shared(if integer { SharedRule::Integer } else { SharedRule::Number }));
        }
        let (lo, hi) = (f.lower.as_ref(), f.upper.as_ref());
        let mut steps: Vec<&(Decimal, String)> = Vec::new();
        for m in &f.multiple_of {
            if !steps.iter().any(|s| s.0 == m.0) {
                steps.push(m);
            }
        }
        let result = match steps.as_slice() {
            [] => Ok(numbers::number_range(lo, hi, integer)),
            [(m, ptr)] => {
                let tenth_power = m.int == "0"
                    && m.frac.ends_with('1')
                    && m.frac[..m.frac.len() - 1].bytes().all(|b| b == b'0');
                if m.is_integer() {
                    match m.int.parse::<u64>() {
                        Ok(k) => {
                            numbers::integer_multiples(k, lo, hi).map_err(|e| (ptr.clone(), e))
                        }
                        Err(_) => Err((ptr.clone(), "a very large multipleOf".to_string())),
                    }
                } else if tenth_power && integer {
                    Ok(numbers::number_range(lo, hi, true))
                } else if tenth_power {
                    numbers::decimal_steps(m.frac.len() as u32, lo, hi)
                        .map_err(|e| (ptr.clone(), e))
                } else {
                    Err((ptr.clone(), format!("multipleOf {}.{}", m.int, m.frac)))
                }
            }
            [_, (_, ptr), ..] => Err((ptr.clone(), "several multipleOf".to_string())),
        };
        let result = match result {
            Ok(Some(e)) if integer && self.dialect.plain_integers() => {
                Ok(Some(strip_zero_fraction(e)))
            }
            other => other,
        };
        match result {
            Ok(Some(e)) => Ok(e),
            Ok(None) => Ok(never()),
            Err((ptr, msg)) => {
                self.unsupported(ptr, format!("{msg} is not expressible"))?;
                Ok(numbers::number_range(lo, hi, integer).unwrap_or_else(never))
            }
        }
    }

    /// The schema parts of property `name` in each object part.
    fn property_parts(&self, f: &Flat<'a>, name: &str) -> (Vec<Sub<'a>>, bool) {
        let mut parts = Vec::new();
        let mut evaluated = false;
        for part in &f.obj_parts {
            // `properties` and every matching `patternProperties` apply together;
            // `additionalProperties` only when neither does.
            let props: Vec<&Sub<'a>> =
                part.props.iter().filter(|(n, _)| n == name).map(|(_, s)| s).collect();
            let mut matched = !props.is_empty();
            parts.extend(props.into_iter().cloned());
            for (p, s) in &part.patterns {
                let mut b = crate::ir::GrammarBuilder::new();
                let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
                if let Ok(e) = regex_to_ir(p, &mut b, opts) {
                    if self.matches(e, name) {
                        parts.push(s.clone());
                        matched = true;
                    }
                }
            }
            if matched {
                evaluated = true;
                continue;
            }
            if let Some(a) = &part.additional {
                parts.push(a.clone());
                evaluated = true;
            }
        }
        (parts, evaluated)
    }

    fn object(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Diagnostic> {
        if !f.has_object_constraints() {
            return Ok(self.shared(SharedRule::Object));
        }
        let w = self.ws();
        let mut names: Vec<String> = Vec::new();
        for part in &f.obj_parts {
            for (n, _) in &part.props {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        for r in &f.required {
            if !names.contains(r) {
                names.push(r.clone());
            }
        }
        if let (true, Some(u)) = (f.has_if, &f.unevaluated_properties) {
            self.unsupported(u.ptr.clone(), "unevaluatedProperties together with `if`".into())?;
        }
        let any_additional_keyword = f.obj_parts.iter().any(|p| p.additional.is_some());
        let has_patterns = f.obj_parts.iter().any(|p| !p.patterns.is_empty());
        // What unknown keys must satisfy when no part says: unevaluatedProperties, strict.
        let fallback: Option<Sub<'a>> = if any_additional_keyword {
            None
        } else if let Some(u) = &f.unevaluated_properties {
            Some(u.clone())
        } else if self.opts.strict && !has_patterns {
            Some(Sub {
                v: &Value::Bool(false),
                ptr: f.ptr.clone(),
                neg: false,
                dialect: self.dialect,
            })
        } else {
            None
        };
        // Known properties.
        let mut members: Vec<(bool, Expr)> = Vec::new();
        // (position in `required`, index in `members`) of the required members.
        let mut ranked: Vec<(usize, usize)> = Vec::new();
        for name in &names {
            let required = f.required.contains(name);
            let (mut parts, evaluated) = self.property_parts(f, name);
            if !evaluated {
                parts.extend(fallback.clone());
            }
            let mut allowed = true;
            if !f.property_names.is_empty() {
                let mut pf = Flat::new(&f.ptr);
                for s in &f.property_names {
                    self.merge(&mut pf, s, depth + 1, &mut Vec::new(), false)?;
                }
                match self.check_value(&pf, &Value::String(name.clone()), depth)? {
                    Some(ok) => allowed = ok,
                    None => {
                        self.unsupported(
                            f.property_names[0].ptr.clone(),
                            "propertyNames that cannot be checked against the listed properties"
                                .into(),
                        )?;
                    }
                }
            }
            let value = if allowed {
                self.compile_parts(
                    &parts,
                    &format!("{}/properties/{}", f.ptr, super::refs::escape_token(name)),
                    depth,
                )?
            } else {
                never()
            };
            if is_never(&value) {
                if required {
                    return Ok(never());
                }
                continue;
            }
            let member = Expr::seq(vec![
                quoted(encode_literal(name, CharEncoding::JsonString)),
                w.clone(),
                Expr::literal(":"),
                w.clone(),
                value,
                w.clone(),
            ]);
            if let Some(rank) = f.required.iter().position(|r| r == name) {
                ranked.push((rank, members.len()));
            }
            members.push((required, member));
        }
        ranked.sort_unstable();
        let required_order: Vec<usize> = ranked.into_iter().map(|(_, i)| i).collect();
        let additional = self.additional_member(f, &names, fallback, depth)?;
        let additional = additional.map(|pairs| {
            Expr::choice(
                pairs
                    .into_iter()
                    .map(|(key, value)| {
                        Expr::seq(vec![
                            key,
                            w.clone(),
                            Expr::literal(":"),
                            w.clone(),
                            value,
                            w.clone(),
                        ])
                    })
                    .collect(),
            )
        });
        // Counts.
        let n_required = members.iter().filter(|m| m.0).count() as u64;
        let n_known = members.len() as u64;
        let (min, max) = (f.min_properties, f.max_properties);
        if max.is_some_and(|m| m < n_required) || (additional.is_none() && min > n_known) {
            return Ok(never());
        }
        let min_trivial = min <= n_required;
        let max_trivial = max.is_none_or(|m| additional.is_none() && m >= n_known);
        if !(members.is_empty() || min_trivial && max_trivial) {
            self.unsupported(
                format!("{}/minProperties", f.ptr),
                "minProperties/maxProperties together with listed properties".into(),
            )?;
        }
        let comma = |e: &Expr| Expr::seq(vec![Expr::literal(","), w.clone(), e.clone()]);
        let body = if members.is_empty() {
            match additional {
                None => Expr::Empty,
                Some(a) => {
                    let more = self.counted(
                        comma(&a),
                        count32(min.saturating_sub(1)),
                        max.map(|m| count32(m.saturating_sub(1))),
                    );
                    let list = Expr::seq(vec![a, more]);
                    if max == Some(0) {
                        Expr::Empty
                    } else if min == 0 {
                        Expr::optional(list)
                    } else {
                        list
                    }
                }
            }
        } else if self.opts.property_order == super::PropertyOrder::Any {
            self.member_list_any_order(&members, &required_order, additional.as_ref(), &w, &f.ptr)?
        } else {
            self.member_list(members, additional, &w)
        };
        Ok(Expr::seq(vec![Expr::literal("{"), w, body, Expr::literal("}")]))
    }

    /// `e` itself when it has at most `max` IR nodes, else a reference to a new rule of
    /// body `e` (for expressions written in several places).
    fn rule_past(&mut self, prefix: &str, e: &Expr, max: usize) -> Expr {
        if e.size() > max {
            Expr::Rule(self.b.add_fresh(prefix, e.clone()))
        } else {
            e.clone()
        }
    }

    /// [`Converter::rule_past`] of an expression given away.
    fn rule_past_owned(&mut self, prefix: &str, e: Expr, max: usize) -> Expr {
        if e.size() > max {
            Expr::Rule(self.b.add_fresh(prefix, e))
        } else {
            e
        }
    }

    /// Known members in any order, additional ones anywhere: a rule per state of what
    /// was written so far.
    ///
    /// Members are *tracked* (a bit each: written at most once), *sequenced* (written
    /// once, in a fixed order among themselves) or free. When `2^required * members`
    /// stays within [`super::MAX_ANY_ORDER_COPIES`], every required member is tracked,
    /// and so are as many optional ones, first in schema order, as keep
    /// `2^tracked * members` within it (up to [`super::MAX_ANY_ORDER_PROPERTIES`] members,
    /// all of them: each is written at most once). With more required members, they are
    /// sequenced, in `required_order` (the order of `required`) or in the schema's order,
    /// optional members going anywhere between them, as many tracked as keep
    /// `states * 2^tracked * members` within the bound. A free optional member may be
    /// written again, each occurrence's value checked against its schema, as additional
    /// properties are (JSON Schema's data model has no two properties of one name, so such
    /// a document has no meaning of its own to contradict). Objects whose sequenced
    /// members alone exceed four times the bound are refused (or, with `lenient`, kept in
    /// schema order).
    fn member_list_any_order(
        &mut self,
        members: &[(bool, Expr)],
        required_order: &[usize],
        additional: Option<&Expr>,
        w: &Expr,
        ptr: &str,
    ) -> Result<Expr, Diagnostic> {
        let n = members.len();
        let budget = super::MAX_ANY_ORDER_COPIES;
        let n_required = members.iter().filter(|m| m.0).count();
        let copies = |steps: usize, bits: usize| {
            if bits > 30 {
                usize::MAX
            } else {
                steps.saturating_mul(1usize << bits).saturating_mul(n)
            }
        };
        let all_tracked = n <= super::MAX_ANY_ORDER_PROPERTIES;
        // Required members as bits, or in sequence: the order of `required`, or the
        // schema's order (of `properties`), either one.
        let (sequences, mut tracked): (Vec<Vec<usize>>, Vec<usize>) =
            if all_tracked || copies(1, n_required) <= budget {
                (vec![Vec::new()], (0..n).filter(|&i| members[i].0).collect())
            } else {
                let mut listed: Vec<usize> =
                    required_order.iter().copied().filter(|&i| i < n && members[i].0).collect();
                let rest: Vec<usize> =
                    (0..n).filter(|i| members[*i].0 && !listed.contains(i)).collect();
                listed.extend(rest);
                let schema: Vec<usize> = (0..n).filter(|&i| members[i].0).collect();
                if listed == schema {
                    (vec![listed], Vec::new())
                } else {
                    (vec![listed, schema], Vec::new())
                }
            };
        let steps: usize = sequences.iter().map(|s| s.len() + 1).sum();
        if copies(steps, tracked.len()) > 4 * budget {
            self.unsupported(
                ptr.to_string(),
                format!(
                    "{n_required} required properties among {n} in any order (more than {} \
                     copies of members)",
                    4 * budget
                ),
            )?;
            return Ok(self.member_list(members.to_vec(), additional.cloned(), w));
        }
        for i in (0..n).filter(|&i| !members[i].0) {
            if all_tracked || copies(steps, tracked.len() + 1) <= budget {
                tracked.push(i);
            }
        }
        let bit_of = |i: usize| tracked.iter().position(|&t| t == i).map(|b| 1usize << b);
        let required_bits: usize =
            (0..n).filter(|&i| members[i].0).filter_map(bit_of).fold(0, |a, b| a | b);
        // Members are written in every rule: what follows a member's key becomes a rule
        // of its own unless tiny (the key stays in place, so the automaton tells members
        // apart without a call), and so does a large additional member.
        let members: Vec<Expr> = members
            .iter()
            .map(|(_, e)| match e {
                Expr::Seq(items) if e.size() > MAX_ANY_ORDER_COPIED && items.len() > 1 => {
                    let rest = self.b.add_fresh("member", Expr::seq(items[1..].to_vec()));
                    Expr::seq(vec![items[0].clone(), Expr::Rule(rest)])
                }
                _ => self.rule_past("member", e, MAX_ANY_ORDER_COPIED),
            })
            .collect();
        let additional = additional.map(|a| self.rule_past("additional", a, MAX_ANY_ORDER_COPIED));
        let additional = additional.as_ref();
        // State (step, set) of a sequence: its first `step` members and the tracked
        // members of `set` written; its rule is rules[step * sets + set].
        let sets = 1usize << tracked.len();
        let comma = |e: &Expr| Expr::seq(vec![Expr::literal(","), w.clone(), e.clone()]);
        let mut start = Vec::new();
        for (index, sequence) in sequences.iter().enumerate() {
            let steps = sequence.len() + 1;
            let rules: Vec<crate::ir::RuleId> =
                (0..steps * sets).map(|_| self.b.add_fresh("members", Expr::Empty)).collect();
            let rule = |step: usize, set: usize| Expr::Rule(rules[step * sets + set]);
            let step_of = |i: usize| sequence.iter().position(|&t| t == i);
            // The alternatives that write one more member in state (step, set), each
            // followed by the rule of the state after it.
            let alternatives = |step: usize, set: usize, first: bool| {
                let lead = |e: &Expr| if first { e.clone() } else { comma(e) };
                let mut alts = Vec::new();
                for (i, m) in members.iter().enumerate() {
                    let next = match (step_of(i), bit_of(i)) {
                        (Some(k), _) if k == step => rule(step + 1, set),
                        (Some(_), _) => continue,
                        (None, Some(bit)) if set & bit == 0 => rule(step, set | bit),
                        (None, Some(_)) => continue,
                        (None, None) => rule(step, set),
                    };
                    alts.push(Expr::seq(vec![lead(m), next]));
                }
                if let Some(a) = additional {
                    alts.push(Expr::seq(vec![lead(a), rule(step, set)]));
                }
                alts
            };
            let can_end =
                |step: usize, set: usize| step + 1 == steps && set & required_bits == required_bits;
            for step in 0..steps {
                for set in 0..sets {
                    let mut alts = Vec::new();
                    if can_end(step, set) {
                        alts.push(Expr::Empty);
                    }
                    alts.extend(alternatives(step, set, false));
                    let body = choice_or_never(alts);
                    self.b.define(rules[step * sets + set], body);
                }
            }
            // Writing nothing is one way in, whichever the sequence.
            if can_end(0, 0) && index == 0 {
                start.push(Expr::Empty);
            }
            start.extend(alternatives(0, 0, true));
        }
        Ok(choice_or_never(start))
    }

    /// Known members in order (optional ones may be left out), then additional ones.
    fn member_list(
        &mut self,
        members: Vec<(bool, Expr)>,
        additional: Option<Expr>,
        w: &Expr,
    ) -> Expr {
        let n = members.len();
        let comma = |e: &Expr| Expr::seq(vec![Expr::literal(","), w.clone(), e.clone()]);
        let first_required = members.iter().position(|m| m.0).unwrap_or(n);
        // Each member is written up to twice and each tail up to `first_required + 1`
        // times: large members become rules of their own, and tails become rules when
        // their copies would add up, so nested objects do not multiply sizes.
        let members: Vec<(bool, Expr)> = members
            .into_iter()
            .map(|(required, e)| (required, self.rule_past_owned("member", e, MAX_COPIED_MEMBER)))
            .collect();
        let additional =
            additional.map(|a| self.rule_past_owned("additional", a, MAX_COPIED_MEMBER));
        let additional = additional.as_ref();
        let total: usize = members.iter().map(|m| m.1.size() + 4).sum();
        let use_rules = (first_required + 1) * total > 1024;
        // tails[i]: what follows once something was written, from member i on.
        let mut tails: Vec<Expr> = vec![Expr::Empty; n + 1];
        tails[n] = match additional {
            Some(a) => Expr::star(comma(a)),
            None => Expr::Empty,
        };
        for i in (0..n).rev() {
            let item = if members[i].0 {
                comma(&members[i].1)
            } else {
                Expr::optional(comma(&members[i].1))
            };
            let body = Expr::seq(vec![item, tails[i + 1].clone()]);
            tails[i] = if use_rules && i > 0 {
                let id = self.b.add_fresh("members", body);
                Expr::Rule(id)
            } else {
                body
            };
        }
        // start(i): nothing written yet, members i.. remain.
        let mut start = match additional {
            Some(a) => Expr::optional(Expr::seq(vec![a.clone(), Expr::star(comma(a))])),
            None => Expr::Empty,
        };
        for i in (0..n).rev() {
            let this = Expr::seq(vec![members[i].1.clone(), tails[i + 1].clone()]);
            start = if members[i].0 {
                this
            } else if i > first_required {
                continue;
            } else {
                Expr::choice(vec![this, start])
            };
        }
        start
    }

    /// Keys of one pattern property with its schema, and the keys that do not match it
    /// with the schema of additional properties (an empty list: no such key may occur):
    /// `None` when the complement of the pattern is not expressible (or listed properties
    /// would have to be excluded from it).
    fn pattern_or_not(
        &mut self,
        patterns: &[(String, Sub<'a>)],
        others: &[Sub<'a>],
        own: Option<Sub<'a>>,
        names: &[String],
        depth: usize,
    ) -> Result<Option<Vec<(Expr, Expr)>>, Diagnostic> {
        let [(p, s)] = patterns else { return Ok(None) };
        let (rest, matching) = if names.is_empty() {
            let Ok(Some(rest)) = self.pattern_complement(p, &s.ptr) else {
                return Ok(None);
            };
            let opts = RegexOptions::json_schema_pattern();
            let Ok(matching) = regex_to_ir(p, &mut self.b, opts) else { return Ok(None) };
            (rest, matching)
        } else {
            // Keys other than the listed names: those the pattern matches, and the rest.
            let Ok(Some(matching)) = self.keys_besides(p, &s.ptr, names, true) else {
                return Ok(None);
            };
            let Ok(Some(rest)) = self.keys_besides(p, &s.ptr, names, false) else {
                return Ok(None);
            };
            (rest, matching)
        };
        let mut pairs = Vec::new();
        let mut value_parts = vec![s.clone()];
        value_parts.extend(others.iter().cloned());
        let value = self.compile_parts(&value_parts, &s.ptr, depth)?;
        if !is_never(&value) && !is_never(&matching) {
            pairs.push((quoted(matching), value));
        }
        let mut rest_parts: Vec<Sub<'a>> = others.to_vec();
        rest_parts.extend(own);
        let ptr = format!("{}/additionalProperties", s.ptr);
        let value = self.compile_parts(&rest_parts, &ptr, depth)?;
        if !is_never(&value) && !is_never(&rest) {
            pairs.push((quoted(rest), value));
        }
        Ok(Some(pairs))
    }

    /// The key and value expressions of additional properties, `None` when none may occur.
    fn additional_member(
        &mut self,
        f: &Flat<'a>,
        names: &[String],
        fallback: Option<Sub<'a>>,
        depth: usize,
    ) -> Result<Option<Vec<(Expr, Expr)>>, Diagnostic> {
        let pattern_parts: Vec<usize> =
            (0..f.obj_parts.len()).filter(|&i| !f.obj_parts[i].patterns.is_empty()).collect();
        let ptr = format!("{}/additionalProperties", f.ptr);
        if pattern_parts.is_empty() {
            let mut value_parts: Vec<Sub<'a>> =
                f.obj_parts.iter().filter_map(|p| p.additional.clone()).collect();
            value_parts.extend(fallback);
            if value_parts.iter().any(Sub::is_false) {
                return Ok(None);
            }
            let value = self.compile_parts(&value_parts, &ptr, depth)?;
            if is_never(&value) {
                return Ok(None);
            }
            let key = if f.property_names.is_empty() {
                let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                if refs.is_empty() {
                    self.shared(SharedRule::String)
                } else {
                    let any_char = self.json_char();
                    string_excluding(&refs, any_char)
                }
            } else {
                let mut pf = Flat::new(&f.ptr);
                for s in &f.property_names {
                    self.merge(&mut pf, s, depth + 1, &mut Vec::new(), false)?;
                }
                for name in names {
                    if self.check_value(&pf, &Value::String(name.clone()), depth)? != Some(false) {
                        self.unsupported(
                            f.property_names[0].ptr.clone(),
                            "propertyNames together with listed properties and additional properties".into(),
                        )?;
                        break;
                    }
                }
                pf.types &= types::STRING;
                let k = self.compile_flat(pf, depth + 1)?;
                if is_never(&k) {
                    return Ok(None);
                }
                k
            };
            return Ok(Some(vec![(key, value)]));
        }
        if pattern_parts.len() > 1 || !f.property_names.is_empty() {
            self.unsupported(
                format!("{}/patternProperties", f.obj_parts[pattern_parts[0]].ptr),
                "patternProperties in several merged schemas, or with propertyNames".into(),
            )?;
            return Ok(None);
        }
        let j = pattern_parts[0];
        let part = &f.obj_parts[j];
        let pptr = format!("{}/patternProperties", part.ptr);
        let mut others: Vec<Sub<'a>> = f
            .obj_parts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != j)
            .filter_map(|(_, p)| p.additional.clone())
            .collect();
        let own = part.additional.clone().or(fallback);
        let patterns = part.patterns.clone();
        // The listed names a pattern matches, which its keys must leave out (the names
        // are written as listed properties).
        let mut shadowed: Vec<Vec<String>> = Vec::new();
        for (p, _) in &patterns {
            let mut b = crate::ir::GrammarBuilder::new();
            let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
            let matched = match regex_to_ir(p, &mut b, opts) {
                Ok(e) => names.iter().filter(|n| self.matches(e.clone(), n)).cloned().collect(),
                Err(_) => Vec::new(),
            };
            shadowed.push(matched);
        }
        let own_false = own.as_ref().is_some_and(Sub::is_false);
        if own_false {
            let first = &patterns[0].1;
            if patterns.iter().any(|(_, s)| s.neg != first.neg || !json_equal(s.v, first.v)) {
                self.unsupported(
                    pptr.clone(),
                    "several patternProperties with different schemas (keys may match several)"
                        .into(),
                )?;
            }
            let mut alts = Vec::new();
            for ((p, s), listed) in patterns.iter().zip(&shadowed) {
                let key = match regex_to_ir(p, &mut self.b, RegexOptions::json_schema_pattern()) {
                    Ok(e) if listed.is_empty() => quoted(e),
                    Ok(_) => match self.keys_besides(p, &pptr, listed, true)? {
                        Some(e) => quoted(e),
                        None => {
                            self.unsupported(
                                pptr.clone(),
                                format!(
                                    "property `{}` also matches patternProperties `{p}`",
                                    listed[0]
                                ),
                            )?;
                            continue;
                        }
                    },
                    Err(d) => {
                        let d = Diagnostic {
                            pointer: Some(format!("{pptr}/{}", super::refs::escape_token(p))),
                            ..d
                        };
                        if d.category == Category::Unsupported {
                            self.unsupported(d.pointer.clone().unwrap_or_default(), d.message)?;
                            continue;
                        }
                        return Err(d);
                    }
                };
                let mut value_parts = vec![s.clone()];
                value_parts.append(&mut others.clone());
                let value = self.compile_parts(&value_parts, &s.ptr, depth)?;
                if !is_never(&value) {
                    alts.push((key, value));
                }
            }
            if alts.is_empty() {
                return Ok(None);
            }
            if alts.len() == 1 {
                return Ok(alts.pop().map(|a| vec![a]));
            }
            // Same value schema everywhere: one value, a choice of keys.
            let value = alts[0].1.clone();
            let keys = alts.into_iter().map(|a| a.0).collect();
            return Ok(Some(vec![(Expr::choice(keys), value)]));
        }
        let same = patterns.iter().all(|(_, s)| match &own {
            None => s.is_true(),
            Some(a) => s.neg == a.neg && json_equal(s.v, a.v),
        });
        if !same {
            if let Some(pairs) =
                self.pattern_or_not(&patterns, &others, own.clone(), names, depth)?
            {
                return Ok((!pairs.is_empty()).then_some(pairs));
            }
            self.unsupported(pptr, "patternProperties whose keys are not otherwise excluded (additionalProperties is not false)".into())?;
        }
        others.extend(own);
        let value = self.compile_parts(&others, &ptr, depth)?;
        if is_never(&value) {
            return Ok(None);
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let key = if refs.is_empty() {
            self.shared(SharedRule::String)
        } else {
            let any_char = self.json_char();
            string_excluding(&refs, any_char)
        };
        Ok(Some(vec![(key, value)]))
    }

    /// The content of a string meeting every pattern, format and length of `f` and no `not`
    /// pattern, from one automaton of them all ([`crate::complement::combination`]): `None`
    /// when a format has no regular grammar or the automaton passes its limits.
    fn string_combination(
        &mut self,
        f: &Flat<'a>,
        formats: &[(String, String)],
    ) -> Result<Option<Expr>, Diagnostic> {
        let raw = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        let mut exprs = Vec::new();
        for (p, ptr) in &f.patterns {
            exprs.push(self.raw_pattern(p, ptr, raw)?);
        }
        for (name, ptr) in formats {
            let Some(regex) = super::formats::regex_for(name) else { return Ok(None) };
            let whole = RegexOptions { whole_match: true, ..raw };
            exprs.push(self.raw_pattern(&regex, ptr, whole)?);
        }
        if f.min_length > 0 || f.max_length.is_some() {
            let any = Expr::Class(CharClass::any());
            exprs.push(Expr::repeat(any, count32(f.min_length), f.max_length.map(count32)));
        }
        let positive = exprs.len();
        for (p, ptr) in &f.not_patterns {
            exprs.push(self.raw_pattern(p, ptr, raw)?);
        }
        let accepts =
            |m: &[bool]| m[..positive].iter().all(|&x| x) && !m[positive..].iter().any(|&x| x);
        let enc = CharEncoding::JsonString;
        Ok(crate::complement::combination(&exprs, accepts, enc, &mut self.b, "string"))
    }

    /// The keys other than `names` that `pattern` (at `ptr`) matches (`matched`) or does
    /// not match, as the content of a JSON string: `None` past the automaton's limits.
    fn keys_besides(
        &mut self,
        pattern: &str,
        ptr: &str,
        names: &[String],
        matched: bool,
    ) -> Result<Option<Expr>, Diagnostic> {
        let raw = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        let exprs = [
            self.raw_pattern(pattern, ptr, raw)?,
            Expr::choice(names.iter().map(|n| Expr::literal(n)).collect()),
        ];
        let accepts = |m: &[bool]| m[0] == matched && !m[1];
        let enc = CharEncoding::JsonString;
        Ok(crate::complement::combination(&exprs, accepts, enc, &mut self.b, "pattern"))
    }

    /// A pattern as a regular expression over raw characters, errors at `ptr`.
    fn raw_pattern(&mut self, p: &str, ptr: &str, opts: RegexOptions) -> Result<Expr, Diagnostic> {
        regex_to_ir(p, &mut self.b, opts).map_err(|mut d| {
            d.pointer = Some(ptr.to_string());
            d
        })
    }

    /// The strings `pattern` (at `ptr`) does not match, as the content of a JSON string:
    /// a short expression for the shapes [`crate::regex::regex_complement`] knows, else
    /// rules of the complemented automaton ([`crate::complement`]); `None` past its limits.
    fn pattern_complement(&mut self, pattern: &str, ptr: &str) -> Result<Option<Expr>, Diagnostic> {
        let at_ptr = |mut d: Diagnostic| {
            d.pointer = Some(ptr.to_string());
            d
        };
        if let Some(e) =
            crate::regex::regex_complement(pattern, CharEncoding::JsonString).map_err(at_ptr)?
        {
            return Ok(Some(e));
        }
        let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        let raw = self.raw_pattern(pattern, ptr, opts)?;
        Ok(crate::complement::complement(&raw, CharEncoding::JsonString, &mut self.b, "pattern"))
    }

    /// An array of distinct items (`uniqueItems`) whose item schema `parts` accepts only
    /// a few listed values: a rule per set of values written so far, each continuing with
    /// a value not in it. `None` when the values are not listed (or too many sets).
    fn unique_array(
        &mut self,
        parts: &[Sub<'a>],
        ptr: &str,
        min: u64,
        max: Option<u64>,
        depth: usize,
    ) -> Result<Option<Expr>, Diagnostic> {
        static TRUE: Value = Value::Bool(true);
        static FALSE: Value = Value::Bool(false);
        static NULL: Value = Value::Null;
        if parts.is_empty() {
            return Ok(None);
        }
        let mut pf = Flat::new(ptr);
        for s in parts {
            self.merge(&mut pf, s, depth + 1, &mut Vec::new(), false)?;
        }
        let listed: Vec<&'a Value> = match &pf.values {
            Some(values) => values.clone(),
            None if pf.types & !(types::BOOLEAN | types::NULL) == 0 => vec![&TRUE, &FALSE, &NULL],
            None => {
                // A choice of listed values: `anyOf`/`oneOf` branches each with `enum`/`const`.
                let Some(g) = pf.groups.first() else { return Ok(None) };
                let mut values = Vec::new();
                for b in &g.branches {
                    let mut bf = Flat::new(&b.ptr);
                    self.merge(&mut bf, b, depth + 1, &mut Vec::new(), false)?;
                    let Some(vs) = bf.values else { return Ok(None) };
                    values.extend(vs);
                }
                values
            }
        };
        let mut domain: Vec<&'a Value> = Vec::new();
        for v in listed {
            if domain.iter().any(|d| json_equal(d, v)) {
                continue;
            }
            match self.check_value(&pf, v, depth)? {
                Some(true) => domain.push(v),
                Some(false) => {}
                None => return Ok(None),
            }
        }
        let d = domain.len();
        let most = max.map_or(d, |m| (m as usize).min(d));
        // Sets of at most `most` of the `d` values.
        let (mut sets, mut binomial) = (0usize, 1usize);
        for i in 0..=most {
            sets = sets.saturating_add(binomial);
            binomial = binomial.saturating_mul(d - i) / (i + 1);
        }
        if d > 63 || sets > MAX_UNIQUE_ITEM_SETS {
            return Ok(None);
        }
        if (d as u64) < min {
            return Ok(Some(never()));
        }
        let w = self.ws();
        let values: Vec<Expr> =
            domain.iter().map(|v| Expr::seq(vec![self.literal(v), w.clone()])).collect();
        // The rule after the set `used` (bits of `domain`), declared on first use.
        let mut rules: HashMap<u64, crate::ir::RuleId> = HashMap::new();
        let mut pending: Vec<u64> = Vec::new();
        type Rules = HashMap<u64, crate::ir::RuleId>;
        let rule_of = |this: &mut Self, used: u64, rules: &mut Rules, pending: &mut Vec<u64>| {
            *rules.entry(used).or_insert_with(|| {
                pending.push(used);
                let name = this.b.fresh_name("unique-items");
                this.b.declare(&name)
            })
        };
        let first: Vec<Expr> = (0..if most > 0 { d } else { 0 })
            .map(|i| {
                let next = rule_of(self, 1 << i, &mut rules, &mut pending);
                Expr::seq(vec![values[i].clone(), Expr::Rule(next)])
            })
            .collect();
        let mut done: HashMap<u64, ()> = HashMap::new();
        while let Some(used) = pending.pop() {
            if done.insert(used, ()).is_some() {
                continue;
            }
            let n = used.count_ones() as u64;
            let mut alts = Vec::new();
            if n >= min {
                alts.push(Expr::literal("]"));
            }
            if (n as usize) < most {
                for i in (0..d).filter(|i| used & 1 << i == 0) {
                    let next = rule_of(self, used | 1 << i, &mut rules, &mut pending);
                    alts.push(Expr::seq(vec![
                        Expr::literal(","),
                        w.clone(),
                        values[i].clone(),
                        Expr::Rule(next),
                    ]));
                }
            }
            let id = rules[&used];
            let body = choice_or_never(alts);
            self.charge(&body, ptr)?;
            self.b.define(id, body);
        }
        let mut top = Vec::new();
        if min == 0 {
            top.push(Expr::literal("]"));
        }
        top.extend(first);
        Ok(Some(Expr::seq(vec![Expr::literal("["), w, choice_or_never(top)])))
    }

    fn array(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Diagnostic> {
        if !f.has_array_constraints() {
            return Ok(self.shared(SharedRule::Array));
        }
        let w = self.ws();
        let mut max = f.max_items;
        let min = f.min_items;
        let k = f.arr_parts.iter().map(|p| p.prefix.len()).max().unwrap_or(0);
        let rest_parts: Vec<Sub<'a>> = {
            let mut r: Vec<Sub<'a>> = f.arr_parts.iter().filter_map(|p| p.rest.clone()).collect();
            if r.is_empty() {
                if let (true, Some(u)) = (f.has_if, &f.unevaluated_items) {
                    self.unsupported(u.ptr.clone(), "unevaluatedItems together with `if`".into())?;
                }
                if let Some(u) = &f.unevaluated_items {
                    if !f.contains.is_empty() {
                        self.unsupported(
                            u.ptr.clone(),
                            "unevaluatedItems together with contains".into(),
                        )?;
                    }
                    r.push(u.clone());
                }
            }
            r
        };
        if let Some(p) = &f.unique_items {
            if max.is_none_or(|m| m > 1) {
                let plain = k == 0
                    && f.unevaluated_items.is_none()
                    && f.contains.iter().all(|c| c.min == 0 && c.max.is_none());
                if plain {
                    if let Some(e) = self.unique_array(&rest_parts, &f.ptr, min, max, depth)? {
                        return Ok(e);
                    }
                }
                self.unsupported(
                    p.clone(),
                    format!(
                        "uniqueItems where the items are not one of at most {MAX_UNIQUE_ITEM_SETS} sets of few listed values (enum, const, boolean, null)"
                    ),
                )?;
            }
        }
        let mut positions = Vec::new();
        for p in 0..k {
            let parts: Vec<Sub<'a>> = f
                .arr_parts
                .iter()
                .filter_map(|part| part.prefix.get(p).cloned().or_else(|| part.rest.clone()))
                .collect();
            let e = self.compile_parts(&parts, &format!("{}/prefixItems/{p}", f.ptr), depth)?;
            if is_never(&e) {
                max = Some(max.map_or(p as u64, |m| m.min(p as u64)));
                break;
            }
            positions.push(Expr::seq(vec![e, w.clone()]));
        }
        let rest = self.compile_parts(&rest_parts, &format!("{}/items", f.ptr), depth)?;
        let rest = if is_never(&rest) {
            max = Some(max.map_or(k as u64, |m| m.min(k as u64)));
            None
        } else if rest.size() > MAX_COPIED_MEMBER {
            // Written at several places (and repeated by counts): a rule of its own.
            let id = self.b.add_fresh("item", rest);
            Some(Expr::seq(vec![Expr::Rule(id), w.clone()]))
        } else {
            Some(Expr::seq(vec![rest, w.clone()]))
        };
        if max.is_some_and(|m| m < min) {
            return Ok(never());
        }
        let comma = |e: &Expr| Expr::seq(vec![Expr::literal(","), w.clone(), e.clone()]);
        let active: Vec<&super::flat::Contains<'a>> =
            f.contains.iter().filter(|c| c.min > 0 || c.max.is_some()).collect();
        if let Some(c) = active.first() {
            let expressible = active.len() == 1
                && k == 0
                && c.max.is_none()
                && f.max_items.is_none()
                && min <= c.min;
            if !expressible {
                self.unsupported(c.ptr.clone(), "contains together with prefixItems, maxItems, maxContains or a larger minItems".into())?;
            } else {
                let any = rest.clone().unwrap_or_else(never);
                let mut parts = rest_parts.clone();
                parts.push(c.schema.clone());
                let hit = self.compile_parts(&parts, &c.ptr, depth)?;
                if is_never(&hit) {
                    return Ok(never());
                }
                let hit = Expr::seq(vec![hit, w.clone()]);
                let before =
                    Expr::star(Expr::seq(vec![any.clone(), Expr::literal(","), w.clone()]));
                let body = Expr::seq(vec![
                    before.clone(),
                    hit.clone(),
                    Expr::repeat(
                        Expr::seq(vec![Expr::literal(","), w.clone(), before, hit]),
                        count32(c.min - 1),
                        Some(count32(c.min - 1)),
                    ),
                    Expr::star(comma(&any)),
                ]);
                return Ok(Expr::seq(vec![Expr::literal("["), w, body, Expr::literal("]")]));
            }
        }
        if max == Some(0) {
            return Ok(Expr::seq(vec![Expr::literal("["), w, Expr::literal("]")]));
        }
        let k = positions.len();
        // After the prefix: rest items with the remaining counts.
        let tail = match &rest {
            Some(r) => {
                let lo = count32(min.saturating_sub(k as u64));
                let hi = max.map(|m| count32(m.saturating_sub(k as u64)));
                if hi == Some(0) {
                    Expr::Empty
                } else {
                    self.counted(comma(r), lo, hi)
                }
            }
            None => Expr::Empty,
        };
        let list = if k == 0 {
            let Some(r) = rest else {
                return Ok(Expr::seq(vec![Expr::literal("["), w, Expr::literal("]")]));
            };
            let lo = count32(min.saturating_sub(1));
            let hi = max.map(|m| count32(m.saturating_sub(1)));
            let list = Expr::seq(vec![r.clone(), self.counted(comma(&r), lo, hi)]);
            if min == 0 {
                Expr::optional(list)
            } else {
                list
            }
        } else {
            let limit = max.map_or(k, |m| (m as usize).min(k));
            let mut after = if limit < k { Expr::Empty } else { tail };
            for p in (1..limit).rev() {
                let step = Expr::seq(vec![comma(&positions[p]), after]);
                after = if (p as u64) < min { step } else { Expr::optional(step) };
            }
            let list = Expr::seq(vec![positions[0].clone(), after]);
            if min == 0 {
                Expr::optional(list)
            } else {
                list
            }
        };
        Ok(Expr::seq(vec![Expr::literal("["), w, list, Expr::literal("]")]))
    }
}

/// The types a flat schema's values may have.
/// Three-valued and: false wins, then unknown.
fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

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
