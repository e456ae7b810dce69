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
//! [`crate::regex::regex_complement`] writes it, `additionalProperties: false` with a key
//! outside the list where the object may hold only listed keys. Keywords whose failure a
//! grammar cannot state (`multipleOf`, `items`, `format`, ...) make the `not` unsupported.

use super::flat::{tighten_lower, tighten_upper, types, Contains, Flat, ObjPart};
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
    /// An object with a key outside these names.
    KeyOutside(Vec<String>),
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
    /// The value satisfies this schema (the failure of a `not`).
    Satisfies(Sub<'a>),
}

impl<'a> Converter<'a> {
    /// The ways to fail `nf`, or `None` when one of its keywords has a failure a grammar
    /// cannot state. An empty list: nothing fails `nf` (it accepts every value).
    pub(crate) fn failures(&self, nf: &Flat<'a>) -> Option<Vec<Failure<'a>>> {
        let mut out = Vec::new();
        if nf.never {
            return Some(vec![Failure::Types(types::ALL)]);
        }
        if nf.nullable || !nf.excluded.is_empty() || nf.has_if || !nf.conditionals.is_empty() {
            return None;
        }
        if nf.types != types::ALL {
            out.push(Failure::Types(types::ALL & !nf.types));
        }
        if let Some(vs) = &nf.values {
            out.push(Failure::Exclude(vs.clone()));
        }
        // Strings.
        if !nf.not_patterns.is_empty() {
            return None;
        }
        if self.opts.format == FormatMode::Assert {
            // A format fails with the complement of its regex, where it has one.
            for (name, ptr) in &nf.formats {
                let regex = super::formats::regex_for(name)?;
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
            return None;
        }
        if let Some(l) = &nf.lower {
            out.push(Failure::Upper(Bound { value: l.value.clone(), exclusive: !l.exclusive }));
        }
        if let Some(u) = &nf.upper {
            out.push(Failure::Lower(Bound { value: u.value.clone(), exclusive: !u.exclusive }));
        }
        // Objects.
        if !nf.property_names.is_empty()
            || !nf.key_outside.is_empty()
            || nf.unlisted_key_outside.is_some()
            || nf.unevaluated_properties.is_some()
        {
            return None;
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
            let closed = part.additional.as_ref().is_some_and(Sub::is_false);
            if !part.patterns.is_empty()
                || (!closed && part.additional.as_ref().is_some_and(|a| !a.is_true()))
            {
                return None;
            }
            if closed {
                out.push(Failure::KeyOutside(part.props.iter().map(|(n, _)| n.clone()).collect()));
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
        if nf.arr_parts.iter().any(|p| !p.prefix.is_empty())
            || !nf.contains.is_empty()
            || nf.unique_items.is_some()
            || nf.unevaluated_items.is_some()
        {
            return None;
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
            if g.exclusive {
                return None;
            }
            out.push(Failure::FailsAll(g.branches.clone()));
        }
        for n in &nf.nots {
            out.push(Failure::Satisfies(n.clone()));
        }
        Some(out)
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
                    props: vec![(name.clone(), Sub { neg: !s.neg, ..s.clone() })],
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
                self.merge(
                    f,
                    &Sub { neg: !s.neg, ..s.clone() },
                    depth + 1,
                    &mut Vec::new(),
                    false,
                )?;
            }
            Failure::KeyOutside(names) => {
                f.types &= types::OBJECT;
                f.key_outside.push(names.clone());
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
                let negated = Sub { neg: !s.neg, ..s.clone() };
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
            Failure::Satisfies(s) => self.merge(f, s, depth + 1, &mut Vec::new(), false)?,
        }
        if f.types == 0 {
            f.never = true;
        }
        Ok(())
    }
}
