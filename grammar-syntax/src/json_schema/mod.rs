//! JSON Schema → IR.
//!
//! [`json_schema_to_grammar`] converts a schema (draft 2020-12, with the forms of drafts
//! 04 to 2019-09 and OpenAPI's `nullable`) into a [`Grammar`] whose root matches exactly
//! the JSON texts valid under the schema, written with the whitespace the options allow
//! and with object properties in a fixed order (see [`PropertyOrder`]). Whatever cannot
//! be expressed exactly is refused with an error naming the keyword and its JSON pointer
//! ([`Category::Unsupported`]), or, with [`JsonSchemaOptions::lenient`], left out with a
//! warning. Nothing is skipped silently.
//!
//! How it works:
//! - [`refs`] rewrites every `$ref` into a canonical document + JSON pointer, following
//!   `$id` base URIs and `$anchor`s.
//! - Each schema becomes one expression; a schema referred to by `$ref` becomes a rule of
//!   its own, so recursive schemas become recursive rules (what the pushdown automaton is
//!   for). Rules are compiled from a work list, so recursion depth is bounded by the
//!   nesting of one schema, which [`JsonSchemaOptions::max_depth`] limits.
//! - [`flat`] merges `allOf`, `$ref` with siblings and trivial conditionals into one
//!   flat schema; `anyOf`/`oneOf` are distributed over the flat schema's other keywords.
//!   A merge of several subschemas becomes a rule of its own, so a schema recursive
//!   through `allOf` (or a `$ref` with siblings) becomes a recursive rule.
//! - Conditions become choices. `not S` (`negate.rs`) is the choice between the ways a
//!   value fails `S`: another type, not one of its `enum` values, or failing one keyword
//!   of the value's type (`minLength: 3` fails with at most 2 characters, `required`
//!   with a missing property, `properties` with a property whose value fails, `pattern`
//!   with the pattern's complement where [`crate::regex::regex_complement`] states it,
//!   `anyOf` with every branch failing). A `oneOf` whose branches are not provably
//!   disjoint (by type, const/enum values or a discriminating property) gives each branch
//!   the `not` of the branches it may overlap. `if`/`then`/`else` is (`if` and `then`)
//!   or (`not if` and `else`); a dependency of an optional property (`dependentRequired`,
//!   `dependentSchemas`, draft-04 `dependencies`) is (property absent) or (property
//!   present and what it brings); `minProperties: 1` beside optional properties is a
//!   choice of the first property present. Each alternative counts against
//!   [`MAX_BRANCHES`], and everything built against [`MAX_CONVERTED_NODES`].
//! - `minLength`/`maxLength` beside a `pattern` or a `format` fold into it when they
//!   bound its one variable-length part, or that of each branch of an anchored
//!   alternation ([`crate::regex::regex_to_ir_with_length`]); and
//!   `patternProperties` beside other keys use the pattern's complement for those keys.
//! - `const`/`enum` values are checked against the other keywords (objects, arrays and
//!   combinators included), so only the values the schema accepts are written.
//! - `types` compiles a flat schema per JSON type, [`numbers`] builds exact digit-range
//!   grammars for numeric bounds, `formats` the `format` grammars, and [`shared`] the
//!   rules every schema shares (`ws`, `json-string`, `json-number`, `json-value`, ...).
//!
//! ```
//! use grammask_syntax::json_schema::{parse_json_schema, JsonSchemaOptions};
//! let schema = r#"{"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}},
//!                  "required": ["a"], "additionalProperties": false}"#;
//! let converted = parse_json_schema(schema, &JsonSchemaOptions::default()).unwrap();
//! let m = grammask_syntax::json_schema::matcher::ReferenceMatcher::new(&converted.grammar);
//! assert!(m.matches(r#"{"a": 12}"#));
//! assert!(!m.matches(r#"{"a": 0}"#));
//! ```

mod counts;
mod draft;
mod flat;
pub(crate) mod formats;
pub mod matcher;
mod negate;
pub mod numbers;
mod refs;
pub mod shared;
mod types;

use crate::diagnostic::{Category, Diagnostic, Diagnostics};
use crate::ir::{Expr, Grammar, GrammarBuilder, RuleId, Span};
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;
use std::borrow::Cow;

pub use draft::Draft;
pub use shared::builtin_json_grammar;

/// Most schemas merged into one flat schema (through `allOf`, `$ref`, branches).
pub(crate) const MAX_MERGED_PARTS: usize = 4_096;
/// Most expressions whose combinations [`Converter::combination`] remembers (by a table
/// of `2^n` answers).
const MAX_MEMO_COMBINED: usize = 12;
/// Most alternatives one schema's `anyOf`/`oneOf` groups may distribute into.
pub(crate) const MAX_BRANCHES: usize = 1_024;
/// Most IR nodes the converter builds for one schema (rule bodies and the alternatives of
/// distributed `anyOf`/`oneOf`/`not`, counted as they are built), reported as the limit
/// `grammar_size`: a schema past it would also be past the engine's default grammar size,
/// and the converter stops early instead of building it.
pub const MAX_CONVERTED_NODES: usize = 4_000_000;
/// Up to this many properties in one object, [`PropertyOrder::Any`] tracks every one (a
/// rule per set of properties written), so none can be written twice.
pub const MAX_ANY_ORDER_PROPERTIES: usize = 8;
/// Bound on the member copies of one object in [`PropertyOrder::Any`] (rules times
/// properties): the required properties are tracked when `2^required * properties` fits
/// it, else written in the order of `required` or of `properties`; optional ones are
/// tracked while the rules
/// fit. An object needs more than four times the bound (and is then refused) with about
/// 64 required properties listed in the same order by `required` and `properties`, or
/// about 45 listed in different orders (both sequences are written).
pub const MAX_ANY_ORDER_COPIES: usize = 1_024;

/// Which whitespace the grammar allows between JSON tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whitespace {
    /// None at all: `{"a":1}`.
    Compact,
    /// At each place between tokens: at most one line break (`\n` or `\r\n`) followed by
    /// at most `max_run` spaces or tabs. Accepts compact JSON, `json.dumps` style
    /// (`{"a": 1}`) and pretty printing indented up to `max_run` columns; a model cannot
    /// emit runs of blank lines.
    Flexible {
        /// Most spaces/tabs after the optional line break.
        max_run: u32,
    },
    /// Any run of JSON whitespace (`[ \t\n\r]*`).
    Any,
}

impl Default for Whitespace {
    fn default() -> Self {
        Whitespace::Flexible { max_run: 32 }
    }
}

/// Whether `format` is enforced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FormatMode {
    /// Known formats (date-time, date, time, duration, email, hostname, ipv4, ipv6,
    /// uuid, uri, uri-reference) are enforced; unknown ones are annotations (a warning).
    #[default]
    Assert,
    /// Every format is an annotation (the specification's default).
    Annotation,
}

/// The order of properties in generated objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PropertyOrder {
    /// Properties in the order of `properties`, then those only in `required`, merged
    /// left to right through `allOf`/`$ref`; additional and pattern properties after them.
    #[default]
    Schema,
    /// Properties in any order. Up to [`MAX_ANY_ORDER_PROPERTIES`] in one object, each
    /// at most once. Above, within [`MAX_ANY_ORDER_COPIES`]: the required ones once each,
    /// in any order while few (`2^required * properties` within the bound), else in the
    /// order of `required` or of `properties`, the others anywhere between them; optional
    /// ones at most
    /// once while the bound allows tracking them (first in schema order), the rest may be
    /// repeated, each value checked (like additional properties). An object past four
    /// times the bound is refused (or, with `lenient`, kept in schema order).
    Any,
}

/// Options of the converter.
#[derive(Clone, Debug)]
pub struct JsonSchemaOptions {
    /// Whitespace between tokens.
    pub whitespace: Whitespace,
    /// Treat a missing `additionalProperties` as `false` (like providers' strict modes).
    pub strict: bool,
    /// Turn unsupported keywords into warnings instead of errors.
    pub lenient: bool,
    /// Whether `format` is enforced.
    pub format: FormatMode,
    /// Order of object properties.
    pub property_order: PropertyOrder,
    /// Deepest nesting of schemas accepted (reported as `Limit("schema_depth")`).
    pub max_depth: usize,
    /// Documents that remote `$ref`s may point to, by absolute URI.
    pub remote_documents: Vec<(String, Value)>,
    /// The URI the schema was read from (`file:///...`): the base its relative `$ref`s
    /// and `$id` resolve against (RFC 3986). `None`: a base of grammask's own, against
    /// which only absolute references and fragments resolve.
    pub base_uri: Option<String>,
    /// The draft of a schema whose `$schema` names none. `None`: 2020-12, also knowing
    /// the older drafts' forms (see [`Draft`]).
    pub draft: Option<Draft>,
}

impl Default for JsonSchemaOptions {
    fn default() -> Self {
        JsonSchemaOptions {
            whitespace: Whitespace::default(),
            strict: false,
            lenient: false,
            format: FormatMode::Assert,
            property_order: PropertyOrder::Schema,
            max_depth: 128,
            remote_documents: Vec::new(),
            base_uri: None,
            draft: None,
        }
    }
}

/// A converted schema: the grammar and the warnings (unknown formats, and with
/// `lenient`, what was left out).
#[derive(Clone, Debug)]
pub struct Converted {
    /// The grammar; its root matches the valid JSON texts.
    pub grammar: Grammar,
    /// Warnings, each with the JSON pointer of its keyword.
    pub warnings: Vec<Diagnostic>,
    /// Whether every rule of `grammar` was checked to finish (conversion drops the rules
    /// no value satisfies; see [`Converted::all_rules_finish`]).
    all_rules_finish: bool,
    /// Rules (by name) that few documents reach: the members of free keys beside
    /// listed properties, and the large values of optional members. A compiler keeps
    /// them calls, so their automata are built when a generation first enters one
    /// rather than within every object's.
    pub rarely_reached: Vec<String>,
}

impl Converted {
    /// Whether every rule of the grammar has a finite derivation, as the conversion
    /// checked (false only when no value satisfies the schema, whose root is then kept
    /// as it is). A compiler may skip its own check of the same property.
    pub fn all_rules_finish(&self) -> bool {
        self.all_rules_finish
    }
}

/// A subschema: the value and its JSON pointer (for diagnostics and rule names).
#[derive(Clone, Debug)]
pub(crate) struct Sub<'a> {
    pub v: &'a Value,
    pub ptr: String,
    /// The schema stands negated: a value must fail `v` (from `not` rewritten into
    /// the failures of its operand).
    pub neg: bool,
    /// The draft of the document the subschema is in.
    pub(crate) dialect: Dialect,
}

impl<'a> Sub<'a> {
    /// A subschema `v` of this one, at `ptr`, in the same document.
    pub(crate) fn child(&self, v: &'a Value, ptr: String) -> Sub<'a> {
        Sub { v, ptr, neg: false, dialect: self.dialect }
    }

    /// The subschema negated: a value satisfies it where it fails this one.
    pub(crate) fn negated(&self) -> Sub<'a> {
        Sub { neg: !self.neg, ..self.clone() }
    }

    /// Whether the subschema rejects every value (`false`, not negated).
    pub(crate) fn is_false(&self) -> bool {
        !self.neg && self.v == &Value::Bool(false)
    }

    /// Whether `other` is this very subschema (the same value, negated alike).
    pub(crate) fn same(&self, other: &Sub<'_>) -> bool {
        std::ptr::eq(self.v, other.v) && self.neg == other.neg
    }

    /// Whether the subschema accepts every value (`true` or `{}`, not negated).
    pub(crate) fn is_true(&self) -> bool {
        !self.neg
            && (self.v == &Value::Bool(true) || self.v.as_object().is_some_and(|o| o.is_empty()))
    }
}

/// The error reported when schemas nest deeper than the limit.
pub(crate) fn limit_error(ptr: &str, max: usize) -> Diagnostic {
    Diagnostic::at_pointer(ptr.to_string(), format!("schemas nest deeper than {max} levels"))
        .with_category(Category::Limit("schema_depth"))
}

/// Parses `text` as JSON and converts it; text that is not JSON is an error with its
/// line:col span.
pub fn parse_json_schema(text: &str, opts: &JsonSchemaOptions) -> Result<Converted, Diagnostics> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        let offset = offset_of(text, e.line(), e.column());
        // serde_json stops at 128 nested arrays/objects: valid JSON, too deep to read.
        if e.to_string().starts_with("recursion limit exceeded") {
            return Diagnostics::one(
                Diagnostic::error(
                    Span::new(offset, offset),
                    format!("the schema nests deeper than 128 JSON arrays and objects ({e})"),
                )
                .with_category(Category::Limit("schema_depth")),
            );
        }
        Diagnostics::one(Diagnostic::error(
            Span::new(offset, offset),
            format!("the schema is not valid JSON: {e}"),
        ))
    })?;
    json_schema_to_grammar(&value, opts)
}

/// The byte offset of a 1-based line and column (serde_json counts columns in bytes).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let mut at = (offset + column.saturating_sub(1)).min(text.len());
            while at > 0 && !text.is_char_boundary(at) {
                at -= 1;
            }
            return at;
        }
        offset += l.len();
    }
    text.len()
}

/// Converts a schema into a grammar.
pub fn json_schema_to_grammar(
    schema: &Value,
    opts: &JsonSchemaOptions,
) -> Result<Converted, Diagnostics> {
    // A pattern the schema uses many times is parsed once.
    let _remembering = crate::regex::remember();
    let mut warnings = Vec::new();
    let dialect = match Dialect::of(schema, opts) {
        Ok(d) => d,
        Err(d) if opts.lenient => {
            warnings.push(d.into_warning());
            Dialect::default()
        }
        Err(d) => return Err(Diagnostics::one(d)),
    };
    let (docs, dialects, ref_errors) =
        refs::canonicalize(schema, opts, dialect).map_err(Diagnostics::one)?;
    let mut conv = Converter {
        dialect,
        dialects: &dialects,
        opts,
        b: GrammarBuilder::new(),
        warnings,
        docs: &docs,
        ref_errors: &ref_errors,
        ref_rules: HashMap::default(),
        pending: Vec::new(),
        shared: HashMap::default(),
        branches: 0,
        built: 0,
        memo: HashMap::default(),
        combinations: HashMap::default(),
        format_products: HashMap::default(),
        escape_rules: HashMap::default(),
        divergences: HashMap::default(),
        counts: HashMap::default(),
        rarely_reached: Vec::new(),
        by_body: Default::default(),
    };
    let root = conv.b.declare("root");
    let result = conv.run(root);
    let Converter { b, warnings, rarely_reached, .. } = conv;
    match result {
        Ok(()) => {
            let grammar = b.finish(root).map_err(|u| {
                Diagnostics::one(Diagnostic::global(format!("internal: rule `{}` undefined", u.0)))
            })?;
            let (grammar, all_rules_finish) = drop_unsatisfiable_rules(grammar);
            Ok(Converted { grammar, warnings, all_rules_finish, rarely_reached })
        }
        Err(e) => {
            let mut all = warnings;
            all.push(e);
            Err(Diagnostics(all))
        }
    }
}

/// Removes the rules no value can satisfy (rules with no finite derivation, such as a
/// `oneOf` of identical branches or an object requiring such a property), each reference
/// to one becoming an expression that matches nothing. The language stays the same, and
/// the grammar has no rule that can never finish, which the engine refuses (a stack in
/// such a rule could never complete) and `grammask check` reports for hand-written
/// grammars. A root that can never finish is kept as it is, to be refused. Returns
/// whether every rule of the result can finish.
fn drop_unsatisfiable_rules(grammar: Grammar) -> (Grammar, bool) {
    let productive = crate::analysis::productive(&grammar);
    if !productive[grammar.root.index()] {
        return (grammar, false);
    }
    if productive.iter().all(|&p| p) {
        return (grammar, true);
    }
    let mut new_id = vec![None; grammar.rules.len()];
    let mut next = 0usize;
    for (i, &p) in productive.iter().enumerate() {
        if p {
            new_id[i] = Some(RuleId::new(next));
            next += 1;
        }
    }
    let root = new_id[grammar.root.index()].expect("the root is productive");
    let rules = grammar
        .rules
        .into_iter()
        .zip(productive)
        .filter(|(_, p)| *p)
        .map(|(mut rule, _)| {
            rule.body.renumber_rules_in_place(&new_id);
            if let Some(la) = &mut rule.lookahead {
                la.renumber_rules_in_place(&new_id);
            }
            rule
        })
        .collect();
    (Grammar { rules, root }, true)
}

/// The draft a schema is read in, and whether it was named (by `$schema` or
/// [`JsonSchemaOptions::draft`]): only a named draft makes other drafts' keywords unknown.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Dialect {
    pub(crate) draft: Draft,
    pub(crate) named: bool,
}

impl Dialect {
    /// The dialect of `schema`: its `$schema`, else the options'. A `$schema` outside
    /// json-schema.org, or naming draft 3, is refused (its vocabularies are not known).
    pub(crate) fn of(schema: &Value, opts: &JsonSchemaOptions) -> Result<Dialect, Diagnostic> {
        let fallback = opts.draft.map(|draft| Dialect { draft, named: true }).unwrap_or_default();
        Dialect::within(schema, fallback)
    }

    /// The dialect of a document whose `$schema` names none: `fallback`.
    pub(crate) fn within(schema: &Value, fallback: Dialect) -> Result<Dialect, Diagnostic> {
        let Some(Value::String(s)) = schema.get("$schema") else {
            return Ok(fallback);
        };
        if let Some(draft) = Draft::from_uri(s) {
            return Ok(Dialect { draft, named: true });
        }
        let what = if s.contains("draft-03") {
            format!("`{s}`: draft 3 is not supported (drafts 4 to 2020-12 are)")
        } else if s.contains("json-schema.org") {
            return Ok(fallback);
        } else {
            format!("custom meta-schema `{s}` (its vocabularies are not known)")
        };
        Err(Diagnostic::at_pointer("/$schema", what).with_category(Category::Unsupported))
    }

    /// Whether `keyword` is a keyword of the schema's draft.
    pub(crate) fn knows(self, keyword: &str) -> bool {
        !self.named || self.draft.knows(keyword)
    }

    /// `1.0` is not an integer (a named draft 4).
    pub(crate) fn plain_integers(self) -> bool {
        self.named && self.draft.plain_integers()
    }

    /// `exclusiveMinimum: true` makes `minimum` exclusive (draft 4, or no draft named).
    pub(crate) fn boolean_exclusive_bounds(self) -> bool {
        !self.named || self.draft.boolean_exclusive_bounds()
    }

    /// `contentEncoding` and `contentMediaType` may be asserted (a named draft 7; later
    /// drafts make them annotations only, and draft 6 does not have them).
    pub(crate) fn asserts_content(self) -> bool {
        self.named && self.draft == Draft::Draft7
    }

    /// Keywords beside `$ref` are ignored (a named draft 4 to 7).
    pub(crate) fn ref_overrides_siblings(self) -> bool {
        self.named && self.draft.ref_overrides_siblings()
    }
}

/// The conversion state.
pub(crate) struct Converter<'a> {
    pub(crate) opts: &'a JsonSchemaOptions,
    pub(crate) b: GrammarBuilder,
    pub(crate) warnings: Vec<Diagnostic>,
    pub(crate) docs: &'a [Cow<'a, Value>],
    pub(crate) ref_errors: &'a [Diagnostic],
    ref_rules: HashMap<String, RuleId>,
    pending: Vec<(Sub<'a>, RuleId)>,
    pub(crate) shared: HashMap<&'static str, RuleId>,
    /// The draft the schema is read in.
    pub(crate) dialect: Dialect,
    /// The draft of each document (the schema's, then the remote documents').
    pub(crate) dialects: &'a [Dialect],
    /// Alternatives created by distributing `anyOf`/`oneOf` so far.
    pub(crate) branches: usize,
    /// IR nodes built so far (see [`MAX_CONVERTED_NODES`]).
    pub(crate) built: usize,
    /// Rules of merged subschemas, by the pointers (and negations) merged.
    memo: HashMap<Vec<(String, bool)>, Memo>,
    /// String contents built from automata ([`Converter::combination`]), by their
    /// expressions and which combinations of them they accept.
    combinations: HashMap<(Vec<Expr>, Vec<bool>), Option<Expr>>,
    /// String contents of patterns and a format ([`Converter::product_with_format`]), by
    /// the patterns and the format.
    format_products: HashMap<Vec<Expr>, Option<Expr>>,
    /// Rules of the escapes of the characters outside a set ([`Converter::foreign_escapes`]),
    /// by the set's characters that have escapes; `None`: there are no such escapes.
    escape_rules: HashMap<Vec<char>, Option<RuleId>>,
    /// The rules of strings diverging from excluded names
    /// ([`Converter::string_excluding`]), by the characters continuing some name there.
    divergences: HashMap<Vec<char>, RuleId>,
    /// Large counted repetitions ([`Converter::counted`]) built so far, by item and
    /// bounds: the strings of one `maxLength` recur across a schema's properties.
    counts: HashMap<(Expr, u32, Option<u32>), Expr>,
    /// See [`Converted::rarely_reached`].
    pub(crate) rarely_reached: Vec<String>,
    /// Rules made by [`Converter::rule_by_body`], by their name's prefix and a hash of
    /// their body.
    by_body: rustc_hash::FxHashMap<(&'static str, u64), Vec<RuleId>>,
}

/// A merged subschema, built once.
struct Memo {
    /// Its rule, declared when a visit refers to it.
    id: Option<RuleId>,
    /// Where it is (the rule's name).
    ptr: String,
    /// The schema accepts nothing.
    never: bool,
    /// The body, until a rule holds it.
    body: Option<Expr>,
}

impl<'a> Converter<'a> {
    fn run(&mut self, root: RuleId) -> Result<(), Diagnostic> {
        let docs: &'a [Cow<'a, Value>] = self.docs;
        let sub = Sub { v: &docs[0], ptr: String::new(), neg: false, dialect: self.dialects[0] };
        let body = self.compile_sub(&sub, 0)?;
        self.charge(&body, "")?;
        self.b.define(root, body);
        while let Some((sub, id)) = self.pending.pop() {
            self.branches = 0;
            let body = self.compile_sub(&sub, 0)?;
            self.charge(&body, &sub.ptr)?;
            self.b.define(id, body);
        }
        Ok(())
    }

    /// The contents of a JSON string that `accepts` says yes to, given which of `exprs`
    /// match it ([`crate::complement::combination`]), built once per expressions and
    /// answers (keys cut by the same patterns recur across the alternatives of `anyOf`,
    /// `oneOf` and `not`). `None` past the automaton's limits.
    pub(crate) fn combination(
        &mut self,
        exprs: &[Expr],
        accepts: impl Fn(&[bool]) -> bool,
        name: &str,
    ) -> Option<Expr> {
        if exprs.len() > MAX_MEMO_COMBINED {
            return self.combined(exprs, accepts, name);
        }
        let n = exprs.len();
        let answers: Vec<bool> = (0..1usize << n)
            .map(|bits| accepts(&(0..n).map(|i| bits & (1 << i) != 0).collect::<Vec<_>>()))
            .collect();
        let key = (exprs.to_vec(), answers);
        if let Some(e) = self.combinations.get(&key) {
            return e.clone();
        }
        let e = self.combined(exprs, accepts, name);
        self.combinations.insert(key, e.clone());
        e
    }

    /// The contents of a JSON string that all of `patterns` and `format` match
    /// ([`crate::complement::product_with_format`]), built once per expressions; `None`
    /// past the product's limit.
    pub(crate) fn product_with_format(&mut self, patterns: &[Expr], format: &Expr) -> Option<Expr> {
        let key: Vec<Expr> = patterns.iter().chain([format]).cloned().collect();
        if let Some(e) = self.format_products.get(&key) {
            return e.clone();
        }
        let enc = crate::regex::CharEncoding::JsonString;
        let e =
            crate::complement::product_with_format(patterns, format, enc, &mut self.b, "string");
        self.format_products.insert(key, e.clone());
        e
    }

    /// [`Converter::combination`] built: the states past which only a length bound decides
    /// are counted repetitions ([`Converter::counted`]), so a pattern's free end under a
    /// large `maxLength` costs chunk calls, not a rule per count.
    fn combined(
        &mut self,
        exprs: &[Expr],
        accepts: impl Fn(&[bool]) -> bool,
        name: &str,
    ) -> Option<Expr> {
        let enc = crate::regex::CharEncoding::JsonString;
        let combined = crate::complement::combination(exprs, accepts, enc, &mut self.b, name)?;
        for rest in combined.rests {
            let body = self.counted(rest.item, rest.min, rest.max);
            self.b.define(rest.rule, body);
        }
        Some(combined.expr)
    }

    /// Counts the nodes of `e` against [`MAX_CONVERTED_NODES`].
    pub(crate) fn charge(&mut self, e: &Expr, ptr: &str) -> Result<(), Diagnostic> {
        self.built = self.built.saturating_add(e.size());
        if self.built > MAX_CONVERTED_NODES {
            return Err(Diagnostic::at_pointer(
                ptr.to_string(),
                format!(
                    "the grammar grows past {MAX_CONVERTED_NODES} IR nodes (distributed anyOf/oneOf/not copy the schema around them)"
                ),
            )
            .with_category(Category::Limit("grammar_size")));
        }
        Ok(())
    }

    /// The rule of a `$ref` target, declared on first use and compiled from the work list.
    pub(crate) fn ref_rule(&mut self, r: &str, ptr: &str) -> Result<RuleId, Diagnostic> {
        if let Some(&id) = self.ref_rules.get(r) {
            return Ok(id);
        }
        let target = self.target(r, ptr)?;
        let name = self.b.fresh_name(&rule_name(&target.ptr));
        let id = self.b.declare(&name);
        self.ref_rules.insert(r.to_string(), id);
        self.pending.push((target, id));
        Ok(id)
    }

    /// The expression of one subschema.
    pub(crate) fn compile_sub(&mut self, sub: &Sub<'a>, depth: usize) -> Result<Expr, Diagnostic> {
        if depth > self.opts.max_depth {
            return Err(limit_error(&sub.ptr, self.opts.max_depth));
        }
        if sub.neg {
            let mut f = flat::Flat::new(&sub.ptr);
            self.merge(&mut f, sub, depth, &mut Vec::new(), true)?;
            return self.compile_flat(f, depth);
        }
        match sub.v {
            Value::Bool(true) => return Ok(self.json_value()),
            Value::Bool(false) => return Ok(crate::regex::never()),
            Value::Object(obj) => {
                if let Some(Value::String(r)) = obj.get("$ref") {
                    let only_ref = sub.dialect.ref_overrides_siblings()
                        || obj.keys().all(|k| k == "$ref" || flat::is_annotation(k));
                    if only_ref {
                        return Ok(Expr::Rule(self.ref_rule(r, &sub.ptr)?));
                    }
                }
            }
            _ => {}
        }
        let merges_refs = sub.v.as_object().is_some_and(|o| {
            ["$ref", "allOf", "anyOf", "oneOf"].iter().any(|k| o.contains_key(*k))
        });
        if merges_refs {
            // Merged references can lead back here (a recursive schema through `allOf`
            // or a `$ref` with siblings): the schema becomes a rule of its own, and a
            // recursive visit refers to it.
            let key = vec![(sub.ptr.clone(), sub.neg)];
            return self.memo_rule(key, &sub.ptr, |this| {
                let mut f = flat::Flat::new(&sub.ptr);
                this.merge(&mut f, sub, depth, &mut Vec::new(), true)?;
                this.compile_flat(f, depth)
            });
        }
        let mut f = flat::Flat::new(&sub.ptr);
        self.merge(&mut f, sub, depth, &mut Vec::new(), true)?;
        self.compile_flat(f, depth)
    }

    /// A rule of body `body` named from `prefix`: the one made before from an equal body
    /// with the same prefix, else a new one (`true`: new). Rules that equal expressions
    /// refer to keep those expressions equal (the chunks of two strings of one bound),
    /// so that what holds them compares equal too.
    pub(crate) fn rule_by_body(&mut self, prefix: &'static str, body: Expr) -> (RuleId, bool) {
        let key = (prefix, std::hash::BuildHasher::hash_one(&rustc_hash::FxBuildHasher, &body));
        let same = self.by_body.get(&key).into_iter().flatten();
        if let Some(&id) = same.into_iter().find(|&&id| *self.b.body(id) == body) {
            return (id, false);
        }
        let id = self.b.add_fresh(prefix, body);
        self.by_body.entry(key).or_default().push(id);
        (id, true)
    }

    /// The expression compiled by `build` for the merge of the subschemas in `key`, built
    /// once: a visit while it is being built (recursion) or after (reuse) refers to a rule
    /// holding it, declared only then; the first visit gets the body itself unless it was
    /// recursive; a schema that accepts nothing stays visible as such.
    fn memo_rule(
        &mut self,
        key: Vec<(String, bool)>,
        ptr: &str,
        build: impl FnOnce(&mut Self) -> Result<Expr, Diagnostic>,
    ) -> Result<Expr, Diagnostic> {
        if let Some(entry) = self.memo.get_mut(&key) {
            if entry.never {
                return Ok(crate::regex::never());
            }
            let id = match entry.id {
                Some(id) => id,
                None => {
                    let name = self.b.fresh_name(&rule_name(&entry.ptr));
                    let id = self.b.declare(&name);
                    entry.id = Some(id);
                    id
                }
            };
            if let Some(body) = entry.body.take() {
                self.b.define(id, body);
            }
            return Ok(Expr::Rule(id));
        }
        self.memo
            .insert(key.clone(), Memo { id: None, ptr: ptr.to_string(), never: false, body: None });
        let body = build(self)?;
        let Some(entry) = self.memo.get_mut(&key) else { return Ok(body) };
        let never = crate::regex::is_never(&body);
        entry.never = never;
        match entry.id {
            // Referred to while being built: the rule holds the body.
            Some(id) => {
                self.b.define(id, body.clone());
                Ok(if never { body } else { Expr::Rule(id) })
            }
            None => {
                if !never {
                    entry.body = Some(body.clone());
                }
                Ok(body)
            }
        }
    }

    /// The expression of the conjunction of `parts` (any value when there are none).
    pub(crate) fn compile_parts(
        &mut self,
        parts: &[Sub<'a>],
        ptr: &str,
        depth: usize,
    ) -> Result<Expr, Diagnostic> {
        match parts {
            [] => Ok(self.json_value()),
            [one] => self.compile_sub(one, depth + 1),
            _ => {
                let key = parts.iter().map(|p| (p.ptr.clone(), p.neg)).collect();
                self.memo_rule(key, ptr, |this| {
                    let mut f = flat::Flat::new(ptr);
                    for p in parts {
                        this.merge(&mut f, p, depth + 1, &mut Vec::new(), false)?;
                    }
                    this.compile_flat(f, depth + 1)
                })
            }
        }
    }
}

/// A rule name for the schema at `ptr`: its last pointer tokens, as GBNF allows.
fn rule_name(ptr: &str) -> String {
    let tokens: Vec<&str> = ptr.split('/').filter(|t| !t.is_empty()).collect();
    let tail = &tokens[tokens.len().saturating_sub(2)..];
    let mut name = String::new();
    for t in tail {
        for c in t.chars() {
            if c.is_ascii_alphanumeric() {
                name.push(c.to_ascii_lowercase());
            } else if !name.ends_with('-') {
                name.push('-');
            }
        }
        if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name = name.trim_matches('-');
    if name.is_empty() {
        "schema".to_string()
    } else if name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("s-{name}")
    } else {
        name.to_string()
    }
}
