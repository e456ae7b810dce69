//! `not`: the failures of a schema.
//!
//! A value fails a merged schema when it fails one of its keywords, and each keyword
//! constrains one type only. So `not S` is a choice between the ways a value can fail
//! `S`: its type is not one of `S`'s types, it is not one of `S`'s `enum` values, or it
//! has the type a keyword applies to and fails that keyword (`minLength: 3` fails with a
//! string of at most 2 characters, `required: ["a"]` with an object without `a`,
//! `properties: {"a": T}` with an object whose `a` fails `T`, `anyOf` with a value that
//! fails every branch). Each failure narrows a copy of the schema being compiled; the
//! copies are alternatives. A `pattern` fails with its complement where
//! [`crate::regex::regex_complement`] writes it; `additionalProperties`,
//! `patternProperties` and `propertyNames` with a member the object must have (a
//! [`Witness`]: a key outside the listed ones, a key matching a pattern whose value fails
//! its schema, a key failing `propertyNames`); a `oneOf` with a value of none or of two
//! of its branches. Keywords whose failure a grammar cannot state (`multipleOf`,
//! `uniqueItems`, ...) make the `not` unsupported.

use super::flat::{tighten_lower, tighten_upper, types, Contains, Flat, ObjPart, Witness};
use super::numbers::Bound;
use super::{Converter, FormatMode, Sub};
use crate::diagnostic::Diagnostic;
use serde_json::Value;

/// One way to fail a schema.
#[derive(Clone, Debug)]
pub(crate) enum Failure<'a> {
    /// The value's type is one of these.
    Types(u8),
    /// The value is none of these.
    Exclude(Vec<&'a Value>),
    /// A string of at most this many characters.
    MaxLength(u64),
    /// A string of at least this many characters.
    MinLength(u64),
    /// A number below this bound.
    Upper(Bound),
    /// A number above this bound.
    Lower(Bound),
    /// A string that this pattern (with its pointer) does not match.
    NotPattern(String, String),
    /// An object without this property.
    Forbid(String, String),
    /// An object with this property, whose value fails the schema.
    PropertyFails(String, Sub<'a>),
    /// An object with this member.
    Member(Witness<'a>),
    /// An object with the first property and without the second (the failure of
    /// `dependentRequired`), with the pointer of the dependency.
    DependencyMissing(String, String, String),
    /// An object with this property, which fails the schema (the failure of
    /// `dependentSchemas`).
    DependencyFails(String, Sub<'a>),
    /// An object with at most this many properties.
    MaxProperties(u64),
    /// An object with at least this many properties.
    MinProperties(u64),
    /// An array with an item that fails the schema (the failure of `items`).
    ItemFails(Sub<'a>),
    /// An array with at most this many items.
    MaxItems(u64),
    /// An array with at least this many items.
    MinItems(u64),
    /// The value fails each of these (the failure of an `anyOf`).
    FailsAll(Vec<Sub<'a>>),
    /// The value satisfies each of these schemas (the failure of a `not`: one; of a
    /// `oneOf`: two of its branches).
    Satisfies(Vec<Sub<'a>>),
}

impl<'a> Converter<'a> {
    /// The ways to fail `nf`, or the keyword whose failure a grammar cannot state. An
    /// empty list: nothing fails `nf` (it accepts every value).
    pub(crate) fn failures(
        &mut self,
        nf: &Flat<'a>,
        depth: usize,
    ) -> Result<Vec<Failure<'a>>, &'static str> {
        let mut out = Vec::new();
        if nf.never {
            return Ok(vec![Failure::Types(types::ALL)]);
        }
        if nf.nullable {
            return Err("nullable");
        }
        if !nf.excluded.is_empty() {
            return Err("not");
        }
        if nf.has_if || !nf.conditionals.is_empty() {
            return Err("if");
        }
        if nf.types != types::ALL {
            out.push(Failure::Types(types::ALL & !nf.types));
        }
        if let Some(vs) = &nf.values {
            out.push(Failure::Exclude(vs.clone()));
        }
        // Strings.
        if !nf.not_patterns.is_empty() {
            return Err("not");
        }
        if self.opts.format == FormatMode::Assert {
            // A format fails with the complement of its regex, where it has one.
            for (name, ptr) in &nf.formats {
                let regex = super::formats::regex_for(name).ok_or("format")?;
                out.push(Failure::NotPattern(format!("^(?:{regex})$"), ptr.clone()));
            }
        }
        for (p, ptr) in &nf.patterns {
            out.push(Failure::NotPattern(p.clone(), ptr.clone()));
        }
        if nf.min_length > 0 {
            out.push(Failure::MaxLength(nf.min_length - 1));
        }
        if let Some(m) = nf.max_length {
            out.push(Failure::MinLength(m + 1));
        }
        // Numbers.
        if !nf.multiple_of.is_empty() {
            return Err("multipleOf");
        }
        if let Some(l) = &nf.lower {
            out.push(Failure::Upper(Bound { value: l.value.clone(), exclusive: !l.exclusive }));
        }
        if let Some(u) = &nf.upper {
            out.push(Failure::Lower(Bound { value: u.value.clone(), exclusive: !u.exclusive }));
        }
        // Objects.
        if !nf.witnesses.is_empty() || !nf.unlisted_witnesses.is_empty() {
            return Err("not");
        }
        if nf.unevaluated_properties.is_some() {
            return Err("unevaluatedProperties");
        }
        for s in &nf.property_names {
            out.push(Failure::Member(Witness { key: vec![s.negated()], ..Witness::default() }));
        }
        for (name, deps, ptr) in &nf.dependent_required {
            for d in deps {
                out.push(Failure::DependencyMissing(name.clone(), d.clone(), ptr.clone()));
            }
        }
        for (name, s) in &nf.dependent_schemas {
            out.push(Failure::DependencyFails(name.clone(), s.clone()));
        }
        for part in &nf.obj_parts {
            for (p, s) in &part.patterns {
                if !s.is_true() {
                    out.push(Failure::Member(Witness {
                        matching: vec![(p.clone(), s.ptr.clone())],
                        value: (!s.is_false()).then(|| s.negated()).into_iter().collect(),
                        ..Witness::default()
                    }));
                }
            }
            if let Some(a) = part.additional.as_ref().filter(|a| !a.is_true()) {
                out.push(Failure::Member(Witness {
                    besides: part.props.iter().map(|(n, _)| n.clone()).collect(),
                    not_matching: part
                        .patterns
                        .iter()
                        .map(|(p, s)| (p.clone(), s.ptr.clone()))
                        .collect(),
                    value: (!a.is_false()).then(|| a.negated()).into_iter().collect(),
                    ..Witness::default()
                }));
            }
            for (name, s) in &part.props {
                if !s.is_true() {
                    out.push(Failure::PropertyFails(name.clone(), s.clone()));
                }
            }
        }
        for r in &nf.required {
            out.push(Failure::Forbid(r.clone(), nf.ptr.clone()));
        }
        if nf.min_properties > 0 {
            out.push(Failure::MaxProperties(nf.min_properties - 1));
        }
        if let Some(m) = nf.max_properties {
            out.push(Failure::MinProperties(m + 1));
        }
        // Arrays.
        if nf.arr_parts.iter().any(|p| !p.prefix.is_empty()) {
            return Err("prefixItems");
        }
        if !nf.contains.is_empty() {
            return Err("contains");
        }
        if nf.unique_items.is_some() {
            return Err("uniqueItems");
        }
        if nf.unevaluated_items.is_some() {
            return Err("unevaluatedItems");
        }
        for rest in nf.arr_parts.iter().filter_map(|p| p.rest.as_ref()) {
            if !rest.is_true() {
                out.push(Failure::ItemFails(rest.clone()));
            }
        }
        if nf.min_items > 0 {
            out.push(Failure::MaxItems(nf.min_items - 1));
        }
        if let Some(m) = nf.max_items {
            out.push(Failure::MinItems(m + 1));
        }
        // Combinators.
        for g in &nf.groups {
            out.push(Failure::FailsAll(g.branches.clone()));
            if g.exclusive {
                // A `oneOf` also fails with two of its branches at once.
                out.extend(self.overlapping_pairs(g, depth).map_err(|_| "oneOf")?);
            }
        }
        for n in &nf.nots {
            out.push(Failure::Satisfies(vec![n.clone()]));
        }
        Ok(out)
    }

    /// `Satisfies` of every two branches of the `oneOf` `g` that are not provably
    /// disjoint.
    fn overlapping_pairs(
        &mut self,
        g: &super::flat::Group<'a>,
        depth: usize,
    ) -> Result<Vec<Failure<'a>>, Diagnostic> {
        let mut flats = Vec::with_capacity(g.branches.len());
        for b in &g.branches {
            let mut bf = Flat::new(&b.ptr);
            self.merge(&mut bf, b, depth + 1, &mut Vec::new(), false)?;
            flats.push(bf);
        }
        let mut out = Vec::new();
        for i in 0..flats.len() {
            for j in i + 1..flats.len() {
                if !self.disjoint(&flats[i], &flats[j]) {
                    out.push(Failure::Satisfies(vec![
                        g.branches[i].clone(),
                        g.branches[j].clone(),
                    ]));
                }
            }
        }
        Ok(out)
    }

    /// `f` narrowed to the values with this failure.
    pub(crate) fn apply_failure(
        &mut self,
        f: &mut Flat<'a>,
        failure: &Failure<'a>,
        depth: usize,
    ) -> Result<(), Diagnostic> {
        match failure {
            Failure::Types(t) => f.types &= t,
            Failure::Exclude(vs) => f.excluded.extend(vs.iter().copied()),
            Failure::MaxLength(m) => {
                f.types &= types::STRING;
                f.max_length = Some(f.max_length.map_or(*m, |x| x.min(*m)));
            }
            Failure::MinLength(m) => {
                f.types &= types::STRING;
                f.min_length = f.min_length.max(*m);
            }
            Failure::Upper(b) => {
                f.types &= types::NUMBER;
                tighten_upper(&mut f.upper, b.clone());
            }
            Failure::Lower(b) => {
                f.types &= types::NUMBER;
                tighten_lower(&mut f.lower, b.clone());
            }
            Failure::NotPattern(p, ptr) => {
                f.types &= types::STRING;
                f.not_patterns.push((p.clone(), ptr.clone()));
            }
            Failure::Forbid(name, ptr) => {
                f.types &= types::OBJECT;
                f.obj_parts.push(ObjPart {
                    props: vec![(
                        name.clone(),
                        Sub {
                            v: &Value::Bool(false),
                            ptr: ptr.clone(),
                            neg: false,
                            dialect: self.dialect,
                        },
                    )],
                    ptr: ptr.clone(),
                    ..ObjPart::default()
                });
            }
            Failure::PropertyFails(name, s) => {
                f.types &= types::OBJECT;
                if !f.required.contains(name) {
                    f.required.push(name.clone());
                }
                f.obj_parts.push(ObjPart {
                    props: vec![(name.clone(), s.negated())],
                    ptr: s.ptr.clone(),
                    ..ObjPart::default()
                });
            }
            Failure::DependencyMissing(name, dep, ptr) => {
                if !f.required.contains(name) {
                    f.required.push(name.clone());
                }
                self.apply_failure(f, &Failure::Forbid(dep.clone(), ptr.clone()), depth)?;
            }
            Failure::DependencyFails(name, s) => {
                f.types &= types::OBJECT;
                if !f.required.contains(name) {
                    f.required.push(name.clone());
                }
                self.merge(f, &s.negated(), depth + 1, &mut Vec::new(), false)?;
            }
            Failure::Member(w) => {
                f.types &= types::OBJECT;
                f.witnesses.push(w.clone());
            }
            Failure::MaxProperties(m) => {
                f.types &= types::OBJECT;
                f.max_properties = Some(f.max_properties.map_or(*m, |x| x.min(*m)));
            }
            Failure::MinProperties(m) => {
                f.types &= types::OBJECT;
                f.min_properties = f.min_properties.max(*m);
            }
            Failure::ItemFails(s) => {
                f.types &= types::ARRAY;
                let negated = s.negated();
                if f.contains
                    .iter()
                    .any(|c| c.min == 1 && c.max.is_none() && c.schema.same(&negated))
                {
                    return Ok(());
                }
                f.contains.push(Contains {
                    schema: negated,
                    min: 1,
                    max: None,
                    ptr: s.ptr.clone(),
                });
            }
            Failure::MaxItems(m) => {
                f.types &= types::ARRAY;
                f.max_items = Some(f.max_items.map_or(*m, |x| x.min(*m)));
            }
            Failure::MinItems(m) => {
                f.types &= types::ARRAY;
                f.min_items = f.min_items.max(*m);
            }
            Failure::FailsAll(branches) => f.nots.extend(branches.iter().cloned()),
            Failure::Satisfies(subs) => {
                for s in subs {
                    self.merge(f, s, depth + 1, &mut Vec::new(), false)?;
                }
            }
        }
        if f.types == 0 {
            f.never = true;
        }
        Ok(())
    }
}
