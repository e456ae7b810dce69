//! Flattening: a schema and everything merged into it (`allOf`, a `$ref` with sibling
//! keywords, `if: true` + `then`, ...) become one [`Flat`] schema, each keyword combined
//! the way the conjunction of the parts requires: `type`s intersect, `enum`s intersect,
//! bounds tighten, `required` lists unite, properties keep their order of first mention.
//! Parts merge in order of appearance: a `$ref`, `allOf` or `anyOf` stands where its
//! keyword stands among the object's keys, so a `properties` written before an `allOf`
//! lists its properties first.
//!
//! Object keywords are kept per part ([`ObjPart`]), since `additionalProperties` of one
//! part applies to the properties the *other* parts name. `anyOf`/`oneOf` groups stay
//! pending in the flat schema; the converter distributes them (each branch is merged
//! with the rest) when it compiles.

use super::numbers::{Bound, Decimal};
use super::refs::{child_pointer, parse_canonical};
use super::{Converter, Sub};
use crate::diagnostic::{Category, Diagnostic};
use serde_json::Value;
use std::borrow::Cow;

/// The JSON types as a bit set; `INTEGER` is the integral part of `number`.
pub(crate) mod types {
    /// `null`.
    pub const NULL: u8 = 1;
    /// `true`/`false`.
    pub const BOOLEAN: u8 = 2;
    /// Objects.
    pub const OBJECT: u8 = 4;
    /// Arrays.
    pub const ARRAY: u8 = 8;
    /// Strings.
    pub const STRING: u8 = 16;
    /// Numbers that are not integers.
    pub const FRACTIONAL: u8 = 32;
    /// Integers.
    pub const INTEGER: u8 = 64;
    /// `number`.
    pub const NUMBER: u8 = FRACTIONAL | INTEGER;
    /// Any value.
    pub const ALL: u8 = 127;
}

/// The object keywords of one merged part.
#[derive(Clone, Debug, Default)]
pub(crate) struct ObjPart<'a> {
    pub props: Vec<(String, Sub<'a>)>,
    pub patterns: Vec<(String, Sub<'a>)>,
    pub additional: Option<Sub<'a>>,
    pub ptr: String,
}

/// The array keywords of one merged part.
#[derive(Clone, Debug, Default)]
pub(crate) struct ArrPart<'a> {
    pub prefix: Vec<Sub<'a>>,
    /// The schema of items after the prefix; `None`: any.
    pub rest: Option<Sub<'a>>,
}

/// A member an object must have: how `additionalProperties`, `patternProperties` and
/// `propertyNames` fail under `not` (an object with a key outside the listed names, with
/// a key matching a pattern whose value fails the pattern's schema, with a key failing
/// `propertyNames`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Witness<'a> {
    /// Names the key is none of.
    pub besides: Vec<String>,
    /// Patterns the key matches, with their pointers.
    pub matching: Vec<(String, String)>,
    /// Patterns the key matches none of, with their pointers.
    pub not_matching: Vec<(String, String)>,
    /// Schemas the key (as a string) satisfies.
    pub key: Vec<Sub<'a>>,
    /// Schemas the member's value satisfies (none: any value).
    pub value: Vec<Sub<'a>>,
}

impl<'a> Witness<'a> {
    /// The members that fit both witnesses.
    pub fn and(&self, other: &Witness<'a>) -> Witness<'a> {
        let mut w = self.clone();
        w.besides.extend(other.besides.iter().cloned());
        w.matching.extend(other.matching.iter().cloned());
        w.not_matching.extend(other.not_matching.iter().cloned());
        w.key.extend(other.key.iter().cloned());
        w.value.extend(other.value.iter().cloned());
        w
    }
}

/// A `contains` with its counts.
#[derive(Clone, Debug)]
pub(crate) struct Contains<'a> {
    pub schema: Sub<'a>,
    pub min: u64,
    pub max: Option<u64>,
    pub ptr: String,
}

/// A pending `anyOf` (`exclusive: false`) or `oneOf` group.
#[derive(Clone, Debug)]
pub(crate) struct Group<'a> {
    pub branches: Vec<Sub<'a>>,
    pub exclusive: bool,
    pub ptr: String,
    /// How many object parts came before the group in the schema's text: a branch's
    /// properties are placed there (order of appearance).
    pub at: usize,
}

/// An `if`/`then`/`else` whose condition is a schema.
#[derive(Clone, Debug)]
pub(crate) struct Conditional<'a> {
    pub condition: Sub<'a>,
    pub then: Option<Sub<'a>>,
    pub otherwise: Option<Sub<'a>>,
}

/// One schema with everything merged into it.
#[derive(Clone, Debug)]
pub(crate) struct Flat<'a> {
    pub ptr: String,
    pub never: bool,
    pub types: u8,
    /// The allowed values when `enum`/`const` were given.
    pub values: Option<Vec<&'a Value>>,
    pub excluded: Vec<&'a Value>,
    pub nullable: bool,
    // strings
    pub min_length: u64,
    pub max_length: Option<u64>,
    pub patterns: Vec<(String, String)>,
    /// Patterns the string must not match (from `not`), with their pointers.
    pub not_patterns: Vec<(String, String)>,
    pub formats: Vec<(String, String)>,
    // numbers
    pub lower: Option<Bound>,
    pub upper: Option<Bound>,
    pub multiple_of: Vec<(Decimal, String)>,
    // objects
    pub obj_parts: Vec<ObjPart<'a>>,
    pub required: Vec<String>,
    pub property_names: Vec<Sub<'a>>,
    pub min_properties: u64,
    pub max_properties: Option<u64>,
    /// Members the object must have (from `not` of object keywords), each written as one
    /// of the listed properties or as an additional member.
    pub witnesses: Vec<Witness<'a>>,
    /// Members the object must have whose keys are none of the listed properties, which
    /// [`Converter::object`] requires among the additional members (witnesses that no
    /// listed property present fits), each a member of its own.
    pub unlisted_witnesses: Vec<Witness<'a>>,
    pub dependent_required: Vec<(String, Vec<String>, String)>,
    pub dependent_schemas: Vec<(String, Sub<'a>)>,
    pub unevaluated_properties: Option<Sub<'a>>,
    // arrays
    pub arr_parts: Vec<ArrPart<'a>>,
    pub min_items: u64,
    pub max_items: Option<u64>,
    pub contains: Vec<Contains<'a>>,
    pub unique_items: Option<String>,
    pub unevaluated_items: Option<Sub<'a>>,
    // combinators
    pub groups: Vec<Group<'a>>,
    pub nots: Vec<Sub<'a>>,
    /// `if`/`then`/`else` with a schema as condition.
    pub conditionals: Vec<Conditional<'a>>,
    /// How many parts were merged (a measure for limits).
    pub parts: usize,
    /// The subschemas merged in full so far, by the address of their value and their
    /// negation: merging one of them again adds nothing (a schema and itself is the
    /// schema), so a schema reached twice (a `$ref` in two `anyOf` groups) is merged once.
    merged: Vec<(usize, bool)>,
    /// Whether an `if` with trivial `then`/`else` was met (it still evaluates
    /// properties and items for `unevaluated*`).
    pub has_if: bool,
}

impl<'a> Flat<'a> {
    /// An unconstrained schema at `ptr`.
    pub fn new(ptr: &str) -> Self {
        Flat {
            ptr: ptr.to_string(),
            never: false,
            types: types::ALL,
            values: None,
            excluded: Vec::new(),
            nullable: false,
            min_length: 0,
            max_length: None,
            patterns: Vec::new(),
            not_patterns: Vec::new(),
            formats: Vec::new(),
            lower: None,
            upper: None,
            multiple_of: Vec::new(),
            obj_parts: Vec::new(),
            required: Vec::new(),
            property_names: Vec::new(),
            min_properties: 0,
            max_properties: None,
            witnesses: Vec::new(),
            unlisted_witnesses: Vec::new(),
            dependent_required: Vec::new(),
            dependent_schemas: Vec::new(),
            unevaluated_properties: None,
            arr_parts: Vec::new(),
            min_items: 0,
            max_items: None,
            contains: Vec::new(),
            unique_items: None,
            unevaluated_items: None,
            groups: Vec::new(),
            nots: Vec::new(),
            conditionals: Vec::new(),
            parts: 0,
            merged: Vec::new(),
            has_if: false,
        }
    }

    /// Whether string keywords constrain strings.
    pub fn has_string_constraints(&self) -> bool {
        self.min_length > 0
            || self.max_length.is_some()
            || !self.patterns.is_empty()
            || !self.not_patterns.is_empty()
            || !self.formats.is_empty()
    }

    /// Whether numeric keywords constrain numbers.
    pub fn has_number_constraints(&self) -> bool {
        self.lower.is_some() || self.upper.is_some() || !self.multiple_of.is_empty()
    }

    /// Whether object keywords constrain objects.
    pub fn has_object_constraints(&self) -> bool {
        !self.obj_parts.is_empty()
            || !self.required.is_empty()
            || !self.property_names.is_empty()
            || self.min_properties > 0
            || self.max_properties.is_some()
            || !self.witnesses.is_empty()
            || !self.unlisted_witnesses.is_empty()
            || !self.dependent_required.is_empty()
            || !self.dependent_schemas.is_empty()
            || self.unevaluated_properties.is_some()
    }

    /// Moves the object parts from index `parts` on (merged from a branch, with the
    /// groups from index `groups` on) to index `at`, where the branch's group stood.
    pub fn move_parts_to(&mut self, parts: usize, groups: usize, at: usize) {
        let at = at.min(parts);
        let added: Vec<ObjPart<'a>> = self.obj_parts.drain(parts..).collect();
        let n = added.len();
        self.obj_parts.splice(at..at, added);
        for (i, g) in self.groups.iter_mut().enumerate() {
            if i >= groups {
                g.at = g.at - parts + at;
            } else if g.at >= at {
                g.at += n;
            }
        }
    }

    /// Whether array keywords constrain arrays.
    pub fn has_array_constraints(&self) -> bool {
        !self.arr_parts.is_empty()
            || self.min_items > 0
            || self.max_items.is_some()
            || !self.contains.is_empty()
            || self.unique_items.is_some()
            || self.unevaluated_items.is_some()
    }

    /// Whether only `type` (and nothing else) constrains values.
    pub fn is_type_only(&self) -> bool {
        !self.never
            && self.values.is_none()
            && self.excluded.is_empty()
            && !self.nullable
            && !self.has_string_constraints()
            && !self.has_number_constraints()
            && !self.has_object_constraints()
            && !self.has_array_constraints()
            && self.groups.is_empty()
            && self.nots.is_empty()
            && self.conditionals.is_empty()
    }
}

/// Keywords that only annotate; they never constrain.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "examples",
    "example",
    "default",
    "$comment",
    "$schema",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$defs",
    "definitions",
    "$vocabulary",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "discriminator",
    "xml",
    "externalDocs",
];

/// Whether `key` is an annotation keyword.
pub(crate) fn is_annotation(key: &str) -> bool {
    ANNOTATIONS.contains(&key)
}

/// Whether a resolved `$ref` in `v` points at `ptr` or inside it (in any document).
fn refers_into(v: &Value, ptr: &str) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| match (k.as_str(), x) {
            ("$ref", Value::String(r)) => parse_canonical(r).is_some_and(|(_, target)| {
                target
                    .strip_prefix(ptr)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            }),
            _ => refers_into(x, ptr),
        }),
        Value::Array(a) => a.iter().any(|x| refers_into(x, ptr)),
        _ => false,
    }
}

/// Whether `v` holds an object with `$id`, `id` or `$anchor` anywhere.
fn declares_identifier(v: &Value) -> bool {
    match v {
        Value::Object(m) => {
            ["$id", "id", "$anchor"].iter().any(|k| m.get(*k).is_some_and(Value::is_string))
                || m.values().any(declares_identifier)
        }
        Value::Array(a) => a.iter().any(declares_identifier),
        _ => false,
    }
}

fn at(ptr: &str, key: &str) -> String {
    child_pointer(ptr, key)
}

fn invalid(ptr: &str, key: &str, what: &str) -> Diagnostic {
    Diagnostic::at_pointer(at(ptr, key), format!("`{key}` {what}"))
}

fn count(v: &Value, ptr: &str, key: &str) -> Result<u64, Diagnostic> {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                return Ok(u);
            }
            match n.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 1e15 => Ok(f as u64),
                _ => Err(invalid(ptr, key, "must be a non-negative integer")),
            }
        }
        _ => Err(invalid(ptr, key, "must be a non-negative integer")),
    }
}

fn number(v: &Value, ptr: &str, key: &str) -> Result<Decimal, Diagnostic> {
    match v {
        Value::Number(n)
            if n.is_f64() && n.as_f64().is_some_and(|f| f.abs() >= 9_007_199_254_740_992.0) =>
        {
            Err(Diagnostic::at_pointer(
                at(ptr, key),
                format!("`{key}` {n} is beyond the exact range of JSON parsers (2^53)"),
            )
            .with_category(Category::Unsupported))
        }
        Value::Number(n) => {
            Decimal::from_number(n).ok_or_else(|| invalid(ptr, key, "must be a finite number"))
        }
        _ => Err(invalid(ptr, key, "must be a number")),
    }
}

fn type_bits(name: &str) -> Option<u8> {
    Some(match name {
        "null" => types::NULL,
        "boolean" => types::BOOLEAN,
        "object" => types::OBJECT,
        "array" => types::ARRAY,
        "string" => types::STRING,
        "number" => types::NUMBER,
        "integer" => types::INTEGER,
        _ => return None,
    })
}

/// Keywords that constrain, or that change how a schema is read (identifiers, drafts,
/// definitions): two schemas that differ elsewhere than in these compile the same.
const READ_KEYWORDS: &[&str] = &[
    "$ref",
    "$id",
    "id",
    "$anchor",
    "$dynamicAnchor",
    "$schema",
    "$vocabulary",
    "$defs",
    "definitions",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "type",
    "nullable",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "properties",
    "patternProperties",
    "additionalProperties",
    "required",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedItems",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$dynamicRef",
    "$recursiveRef",
    "$recursiveAnchor",
    "extends",
    "disallow",
    "divisibleBy",
];

/// Whether two subschemas of one draft accept the same values because they are equal but
/// for annotations (`description`, `title`, ...) and unknown keywords at their top.
pub(crate) fn same_constraints(a: &Sub<'_>, b: &Sub<'_>) -> bool {
    if a.neg != b.neg || a.dialect.draft != b.dialect.draft || a.dialect.named != b.dialect.named {
        return false;
    }
    let read = |v: &Value| -> Option<Value> {
        match v {
            Value::Bool(true) => Some(Value::Object(serde_json::Map::new())),
            Value::Object(m) => Some(Value::Object(
                m.iter()
                    .filter(|(k, v)| READ_KEYWORDS.contains(&k.as_str()) || declares_identifier(v))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )),
            _ => None,
        }
    };
    match (read(a.v), read(b.v)) {
        (Some(x), Some(y)) => json_equal(&x, &y),
        _ => json_equal(a.v, b.v),
    }
}

/// Whether two JSON values are equal as JSON Schema compares them (numbers by value).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (Decimal::from_number(x), Decimal::from_number(y)) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

pub(crate) fn tighten_lower(current: &mut Option<Bound>, new: Bound) {
    let replace = match current {
        None => true,
        Some(c) => new.value > c.value || (new.value == c.value && new.exclusive),
    };
    if replace {
        *current = Some(new);
    }
}

pub(crate) fn tighten_upper(current: &mut Option<Bound>, new: Bound) {
    let replace = match current {
        None => true,
        Some(c) => new.value < c.value || (new.value == c.value && new.exclusive),
    };
    if replace {
        *current = Some(new);
    }
}

impl<'a> Converter<'a> {
    /// The schema a canonical `$ref` points to.
    pub(crate) fn target(&self, r: &str, ptr: &str) -> Result<Sub<'a>, Diagnostic> {
        let docs: &'a [Cow<'a, Value>] = self.docs;
        if let Some(i) = super::refs::parse_unresolved(r) {
            if let Some(e) = self.ref_errors.get(i) {
                return Err(e.clone());
            }
        }
        let (doc, p) = parse_canonical(r).ok_or_else(|| {
            Diagnostic::at_pointer(at(ptr, "$ref"), format!("$ref `{r}` cannot be resolved"))
        })?;
        let v = docs.get(doc).and_then(|d| d.pointer(p)).ok_or_else(|| {
            Diagnostic::at_pointer(at(ptr, "$ref"), format!("$ref `{r}` points to nothing"))
        })?;
        let shown = if doc == 0 { p.to_string() } else { r.to_string() };
        Ok(Sub { v, ptr: shown, neg: false, dialect: self.dialects[doc] })
    }

    /// Reports a keyword that cannot be converted: an error, or a warning with `lenient`.
    pub(crate) fn unsupported(&mut self, ptr: String, message: String) -> Result<(), Diagnostic> {
        let d = Diagnostic::at_pointer(ptr, message).with_category(Category::Unsupported);
        if self.opts.lenient {
            self.warnings.push(d.into_warning());
            Ok(())
        } else {
            Err(d)
        }
    }

    /// Merges the target of the `$ref` of `obj` (at `ptr`) into `flat`.
    fn merge_ref(
        &mut self,
        flat: &mut Flat<'a>,
        obj: &'a serde_json::Map<String, Value>,
        ptr: &str,
        depth: usize,
        stack: &mut Vec<String>,
    ) -> Result<(), Diagnostic> {
        let Some(Value::String(r)) = obj.get("$ref") else {
            return Err(invalid(ptr, "$ref", "must be a string"));
        };
        if stack.contains(r) {
            return self.unsupported(
                at(ptr, "$ref"),
                "a schema that includes itself through $ref/allOf cannot be merged".into(),
            );
        }
        let target = self.target(r, ptr)?;
        stack.push(r.clone());
        let merged = self.merge(flat, &target, depth + 1, stack, false);
        stack.pop();
        merged
    }

    /// Ignores a keyword the schema's draft does not know, with a warning (JSON Schema
    /// core, "unknown keywords"); one holding `$id`/`$anchor` is refused where a `$ref`
    /// resolved into it (through such an identifier, which validators do not honour).
    fn unknown_keyword(
        &mut self,
        kp: String,
        key: &str,
        v: &Value,
        why: &str,
    ) -> Result<(), Diagnostic> {
        if declares_identifier(v) && self.docs.iter().any(|d| refers_into(d, &kp)) {
            return self.unsupported(kp, format!("unknown keyword `{key}`{why} holding `$id`"));
        }
        let w = Diagnostic::at_pointer(kp, format!("unknown keyword `{key}`{why} is ignored"))
            .into_warning();
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
        Ok(())
    }

    /// Draft 7's content keywords, which a validator may assert: `contentEncoding:
    /// base64` is the base64 alphabet with its padding (RFC 4648, section 4); other
    /// encodings, and `contentMediaType: application/json` (a document inside the string),
    /// are refused; other media types cannot be checked by validators either (a warning).
    fn content(
        &mut self,
        flat: &mut Flat<'a>,
        key: &str,
        v: &Value,
        kp: String,
    ) -> Result<(), Diagnostic> {
        let value = v.as_str().ok_or_else(|| invalid(&flat.ptr, key, "must be a string"))?;
        match (key, value.to_ascii_lowercase().as_str()) {
            ("contentEncoding", "base64") => {
                const BASE64: &str =
                    "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";
                flat.patterns.push((BASE64.to_string(), kp));
                Ok(())
            }
            ("contentEncoding", _) => {
                self.unsupported(kp, format!("`contentEncoding: {value}` (only base64 is checked)"))
            }
            ("contentMediaType", "application/json") => self.unsupported(
                kp,
                "`contentMediaType: application/json` (a JSON document inside a string)".into(),
            ),
            _ => {
                let w = Diagnostic::at_pointer(
                    kp,
                    format!("`contentMediaType: {value}` cannot be checked; it annotates"),
                )
                .into_warning();
                if !self.warnings.contains(&w) {
                    self.warnings.push(w);
                }
                Ok(())
            }
        }
    }

    /// Merges `sub` into `flat`. `stack` holds the `$ref` targets being merged, to refuse
    /// a schema that includes itself through `allOf`/`$ref`; `top` is false for parts
    /// merged into another schema.
    pub(crate) fn merge(
        &mut self,
        flat: &mut Flat<'a>,
        sub: &Sub<'a>,
        depth: usize,
        stack: &mut Vec<String>,
        top: bool,
    ) -> Result<(), Diagnostic> {
        // Recorded once merged in full, so that a schema including itself (through
        // `allOf`/`$ref`) still meets itself on `stack`.
        let id = (std::ptr::from_ref(sub.v) as usize, sub.neg);
        if flat.merged.contains(&id) {
            return Ok(());
        }
        self.merge_new(flat, sub, depth, stack, top)?;
        flat.merged.push(id);
        Ok(())
    }

    /// [`Converter::merge`] of a subschema not merged into `flat` yet.
    fn merge_new(
        &mut self,
        flat: &mut Flat<'a>,
        sub: &Sub<'a>,
        depth: usize,
        stack: &mut Vec<String>,
        top: bool,
    ) -> Result<(), Diagnostic> {
        if depth > self.opts.max_depth {
            return Err(super::limit_error(&sub.ptr, self.opts.max_depth));
        }
        flat.parts += 1;
        if sub.neg {
            flat.nots.push(Sub { neg: false, ..sub.clone() });
            return Ok(());
        }
        if flat.parts > super::MAX_MERGED_PARTS {
            return Err(Diagnostic::at_pointer(
                sub.ptr.clone(),
                format!("more than {} schemas merged into one", super::MAX_MERGED_PARTS),
            )
            .with_category(Category::Limit("schema_merge")));
        }
        let obj = match sub.v {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => {
                flat.never = true;
                return Ok(());
            }
            Value::Object(obj) => obj,
            _ => {
                return Err(Diagnostic::at_pointer(
                    sub.ptr.clone(),
                    "a schema must be an object or a boolean",
                ))
            }
        };
        let ptr = sub.ptr.as_str();
        if obj.contains_key("$ref") && sub.dialect.ref_overrides_siblings() {
            // Before draft 2019-09, keywords beside `$ref` are ignored.
            return self.merge_ref(flat, obj, ptr, depth, stack);
        }
        let mut obj_part = ObjPart { ptr: ptr.to_string(), ..ObjPart::default() };
        // Where this schema's object part goes among the flat's: at its first object
        // keyword, before what later keywords merge.
        let mut obj_slot: Option<usize> = None;
        let mut arr_part = ArrPart::default();
        let mut has_arr_part = false;
        for (key, v) in obj {
            let kp = at(ptr, key);
            if !sub.dialect.knows(key) {
                self.unknown_keyword(
                    kp,
                    key,
                    v,
                    &format!(" (not a keyword of {})", sub.dialect.draft),
                )?;
                continue;
            }
            if matches!(key.as_str(), "properties" | "patternProperties" | "additionalProperties")
                && obj_slot.is_none()
            {
                obj_slot = Some(flat.obj_parts.len());
                flat.obj_parts.push(ObjPart::default());
            }
            match key.as_str() {
                "$ref" => self.merge_ref(flat, obj, ptr, depth, stack)?,
                "contentEncoding" | "contentMediaType" if sub.dialect.asserts_content() => {
                    self.content(flat, key, v, kp)?;
                }
                k if is_annotation(k) => {}
                "type" => {
                    let names: Vec<&Value> = match v {
                        Value::Array(a) => a.iter().collect(),
                        v => vec![v],
                    };
                    let mut bits = 0;
                    for n in names {
                        let b = n.as_str().and_then(type_bits).ok_or_else(|| {
                            invalid(ptr, key, "must name JSON types (null, boolean, object, array, string, number, integer)")
                        })?;
                        bits |= b;
                    }
                    flat.types &= bits;
                }
                "nullable" => {
                    if v == &Value::Bool(true) {
                        if top {
                            flat.nullable = true;
                        } else {
                            self.unsupported(kp, "`nullable` inside a merged schema".into())?;
                        }
                    }
                }
                "enum" | "const" => {
                    let list: Vec<&'a Value> = match (key.as_str(), v) {
                        ("const", v) => vec![v],
                        (_, Value::Array(a)) => a.iter().collect(),
                        _ => return Err(invalid(ptr, key, "must be an array")),
                    };
                    flat.values = Some(match flat.values.take() {
                        None => list,
                        Some(prev) => prev
                            .into_iter()
                            .filter(|p| list.iter().any(|l| json_equal(p, l)))
                            .collect(),
                    });
                }
                "minLength" => flat.min_length = flat.min_length.max(count(v, ptr, key)?),
                "maxLength" => {
                    let m = count(v, ptr, key)?;
                    flat.max_length = Some(flat.max_length.map_or(m, |x| x.min(m)));
                }
                "pattern" => {
                    let p = v.as_str().ok_or_else(|| invalid(ptr, key, "must be a string"))?;
                    if !flat.patterns.iter().any(|(q, _)| q == p) {
                        flat.patterns.push((p.to_string(), kp));
                    }
                }
                "format" => {
                    let f = v.as_str().ok_or_else(|| invalid(ptr, key, "must be a string"))?;
                    if !flat.formats.iter().any(|(q, _)| q == f) {
                        flat.formats.push((f.to_string(), kp));
                    }
                }
                "minimum" | "maximum" => {
                    let value = number(v, ptr, key)?;
                    let ex_key =
                        if key == "minimum" { "exclusiveMinimum" } else { "exclusiveMaximum" };
                    let exclusive = obj.get(ex_key) == Some(&Value::Bool(true))
                        && sub.dialect.boolean_exclusive_bounds();
                    let b = Bound { value, exclusive };
                    if key == "minimum" {
                        tighten_lower(&mut flat.lower, b);
                    } else {
                        tighten_upper(&mut flat.upper, b);
                    }
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    if let Value::Bool(_) = v {
                        // draft-04 form, read together with minimum/maximum.
                        continue;
                    }
                    let b = Bound { value: number(v, ptr, key)?, exclusive: true };
                    if key == "exclusiveMinimum" {
                        tighten_lower(&mut flat.lower, b);
                    } else {
                        tighten_upper(&mut flat.upper, b);
                    }
                }
                "multipleOf" => {
                    let d = number(v, ptr, key)?;
                    if d.negative || d.is_zero() {
                        return Err(invalid(ptr, key, "must be above zero"));
                    }
                    flat.multiple_of.push((d, kp));
                }
                "properties" | "patternProperties" => {
                    let Value::Object(map) = v else {
                        return Err(invalid(ptr, key, "must be an object"));
                    };
                    for (name, s) in map {
                        let entry = (name.clone(), sub.child(s, at(&kp, name)));
                        if key == "properties" {
                            obj_part.props.push(entry);
                        } else {
                            obj_part.patterns.push(entry);
                        }
                    }
                }
                "additionalProperties" => {
                    obj_part.additional = Some(sub.child(v, kp));
                }
                "required" => {
                    let Value::Array(names) = v else {
                        return Err(invalid(ptr, key, "must be an array of strings"));
                    };
                    for n in names {
                        let n = n
                            .as_str()
                            .ok_or_else(|| invalid(ptr, key, "must be an array of strings"))?;
                        if !flat.required.iter().any(|r| r == n) {
                            flat.required.push(n.to_string());
                        }
                    }
                }
                "propertyNames" => flat.property_names.push(sub.child(v, kp)),
                "minProperties" => {
                    flat.min_properties = flat.min_properties.max(count(v, ptr, key)?)
                }
                "maxProperties" => {
                    let m = count(v, ptr, key)?;
                    flat.max_properties = Some(flat.max_properties.map_or(m, |x| x.min(m)));
                }
                "dependentRequired" | "dependentSchemas" | "dependencies" => {
                    let Value::Object(map) = v else {
                        return Err(invalid(ptr, key, "must be an object"));
                    };
                    for (name, dep) in map {
                        match dep {
                            Value::Array(names) if key != "dependentSchemas" => {
                                let names = names
                                    .iter()
                                    .map(|n| n.as_str().map(str::to_string))
                                    .collect::<Option<Vec<_>>>()
                                    .ok_or_else(|| invalid(ptr, key, "must list property names"))?;
                                flat.dependent_required.push((name.clone(), names, at(&kp, name)));
                            }
                            s if key != "dependentRequired" => {
                                flat.dependent_schemas
                                    .push((name.clone(), sub.child(s, at(&kp, name))));
                            }
                            _ => return Err(invalid(ptr, key, "must map names to arrays")),
                        }
                    }
                }
                "unevaluatedProperties" => {
                    if top {
                        flat.unevaluated_properties = Some(sub.child(v, kp));
                    } else {
                        self.unsupported(
                            kp,
                            "`unevaluatedProperties` inside a merged schema".into(),
                        )?;
                    }
                }
                "items" => {
                    has_arr_part = true;
                    match v {
                        Value::Array(items) => {
                            arr_part.prefix = items
                                .iter()
                                .enumerate()
                                .map(|(i, s)| sub.child(s, format!("{kp}/{i}")))
                                .collect();
                            if let Some(extra) = obj.get("additionalItems") {
                                arr_part.rest = Some(sub.child(extra, at(ptr, "additionalItems")));
                            }
                        }
                        s => arr_part.rest = Some(sub.child(s, kp)),
                    }
                }
                "prefixItems" => {
                    let Value::Array(items) = v else {
                        return Err(invalid(ptr, key, "must be an array"));
                    };
                    has_arr_part = true;
                    arr_part.prefix = items
                        .iter()
                        .enumerate()
                        .map(|(i, s)| sub.child(s, format!("{kp}/{i}")))
                        .collect();
                }
                "additionalItems" => {}
                "minItems" => flat.min_items = flat.min_items.max(count(v, ptr, key)?),
                "maxItems" => {
                    let m = count(v, ptr, key)?;
                    flat.max_items = Some(flat.max_items.map_or(m, |x| x.min(m)));
                }
                "uniqueItems" => {
                    if v == &Value::Bool(true) {
                        flat.unique_items = Some(kp);
                    }
                }
                "contains" => {
                    let min = match obj.get("minContains") {
                        Some(m) => count(m, ptr, "minContains")?,
                        None => 1,
                    };
                    let max = match obj.get("maxContains") {
                        Some(m) => Some(count(m, ptr, "maxContains")?),
                        None => None,
                    };
                    flat.contains.push(Contains {
                        schema: sub.child(v, kp.clone()),
                        min,
                        max,
                        ptr: kp,
                    });
                }
                "minContains" | "maxContains" => {}
                "unevaluatedItems" => {
                    if top {
                        flat.unevaluated_items = Some(sub.child(v, kp));
                    } else {
                        self.unsupported(kp, "`unevaluatedItems` inside a merged schema".into())?;
                    }
                }
                "allOf" => {
                    let Value::Array(items) = v else {
                        return Err(invalid(ptr, key, "must be an array"));
                    };
                    for (i, s) in items.iter().enumerate() {
                        self.merge(
                            flat,
                            &sub.child(s, format!("{kp}/{i}")),
                            depth + 1,
                            stack,
                            false,
                        )?;
                    }
                }
                "anyOf" | "oneOf" => {
                    let Value::Array(items) = v else {
                        return Err(invalid(ptr, key, "must be an array"));
                    };
                    if items.is_empty() {
                        return Err(invalid(ptr, key, "must not be empty"));
                    }
                    let branches = items
                        .iter()
                        .enumerate()
                        .map(|(i, s)| sub.child(s, format!("{kp}/{i}")))
                        .collect();
                    let at = flat.obj_parts.len();
                    flat.groups.push(Group { branches, exclusive: key == "oneOf", ptr: kp, at });
                }
                "not" => flat.nots.push(sub.child(v, kp)),
                "if" => match v {
                    Value::Bool(true) => {
                        if let Some(t) = obj.get("then") {
                            self.merge(
                                flat,
                                &sub.child(t, at(ptr, "then")),
                                depth + 1,
                                stack,
                                false,
                            )?;
                        }
                    }
                    Value::Bool(false) => {
                        if let Some(e) = obj.get("else") {
                            self.merge(
                                flat,
                                &sub.child(e, at(ptr, "else")),
                                depth + 1,
                                stack,
                                false,
                            )?;
                        }
                    }
                    _ => {
                        flat.has_if = true;
                        let trivial = |k: &str| obj.get(k).is_none_or(|s| s == &Value::Bool(true));
                        if !(trivial("then") && trivial("else")) {
                            flat.conditionals.push(Conditional {
                                condition: sub.child(v, kp),
                                then: obj.get("then").map(|t| sub.child(t, at(ptr, "then"))),
                                otherwise: obj.get("else").map(|e| sub.child(e, at(ptr, "else"))),
                            });
                        }
                    }
                },
                "then" | "else" => {}
                "$dynamicRef" | "$recursiveRef" => {
                    self.unsupported(kp, format!("`{key}` is not supported"))?;
                }
                "extends" | "disallow" | "divisibleBy" => {
                    // draft-03 validation keywords: not ignorable.
                    self.unsupported(kp, format!("draft-03 keyword `{key}` is not supported"))?;
                }
                _ => self.unknown_keyword(kp, key, v, "")?,
            }
        }
        if let Some(slot) = obj_slot {
            flat.obj_parts[slot] = obj_part;
        }
        if has_arr_part {
            flat.arr_parts.push(arr_part);
        }
        Ok(())
    }
}
