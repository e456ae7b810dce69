//! Objects: the member list in schema order or any order, additional and pattern
//! properties, and the keys they leave out.

use super::*;
use crate::diagnostic::{Category, Diagnostic};
use crate::ir::Expr;
use crate::json_schema::flat::{same_constraints, types, Flat, Witness};
use crate::json_schema::shared::SharedRule;
use crate::json_schema::{Converter, Sub};
use crate::regex::{encode_literal, is_never, never, regex_to_ir, CharEncoding, RegexOptions};
use serde_json::Value;

/// The most pattern properties with different schemas whose keys are cut into regions
/// (one per set of patterns a key matches).
const MAX_PATTERN_REGIONS: usize = 4;

/// The schemas `true` and `false`.
static TRUE: Value = Value::Bool(true);
static FALSE: Value = Value::Bool(false);

/// A state of members in any order under a count: the sequenced members written, the
/// tracked members written (a bit each), and how many members were written (counted up
/// to the maximum, or without one up to the minimum).
type CountedState = (usize, usize, u64);

/// The members of one sequence in any order, for the states of
/// [`Converter::member_list_any_order`] under `minProperties` and `maxProperties`.
struct CountedOrder<'s> {
    /// The sequenced members, in their order.
    sequence: &'s [usize],
    /// The tracked members, bit `b` standing for `tracked[b]`.
    tracked: &'s [usize],
    /// The bits of the tracked required members.
    required_bits: usize,
    /// The bits of the tracked optional members.
    optional_bits: usize,
    /// Whether some member may be written any number of times (a free or additional one).
    repeatable: bool,
    /// How many members there are, additional ones aside.
    n: usize,
    /// Whether additional members may be written.
    additional: bool,
}

impl<'s> CountedOrder<'s> {
    /// The members of `sequence` and `tracked` among members required or not as
    /// `required` says, with or without `additional` members.
    fn new(
        sequence: &'s [usize],
        tracked: &'s [usize],
        required: &[bool],
        additional: bool,
    ) -> CountedOrder<'s> {
        let mut required_bits = 0;
        let mut optional_bits = 0;
        for (b, &i) in tracked.iter().enumerate() {
            if required[i] {
                required_bits |= 1 << b;
            } else {
                optional_bits |= 1 << b;
            }
        }
        let free = (0..required.len()).any(|i| !sequence.contains(&i) && !tracked.contains(&i));
        CountedOrder {
            sequence,
            tracked,
            required_bits,
            optional_bits,
            repeatable: additional || free,
            n: required.len(),
            additional,
        }
    }

    /// The state after writing `member` (`None`: an additional one) in `state`, `None`
    /// when it may not be written there or no object within the bounds follows.
    fn next(
        &self,
        (step, set, c): CountedState,
        member: Option<usize>,
        min: u64,
        max: Option<u64>,
    ) -> Option<CountedState> {
        if max.is_some_and(|m| c >= m) {
            return None;
        }
        let c = if max.is_some() { c + 1 } else { (c + 1).min(min) };
        let (step, set) = match member {
            None => (step, set),
            Some(i) => {
                let bit = self.tracked.iter().position(|&t| t == i).map(|b| 1usize << b);
                match (self.sequence.iter().position(|&t| t == i), bit) {
                    (Some(k), _) if k == step => (step + 1, set),
                    (Some(_), _) => return None,
                    (None, Some(bit)) if set & bit == 0 => (step, set | bit),
                    (None, Some(_)) => return None,
                    (None, None) => (step, set),
                }
            }
        };
        let state = (step, set, c);
        self.viable(state, min, max).then_some(state)
    }

    /// Whether an object with between `min` and `max` members can be finished from
    /// `state`.
    fn viable(&self, (step, set, c): CountedState, min: u64, max: Option<u64>) -> bool {
        let least = c
            + (self.sequence.len() - step) as u64
            + u64::from((self.required_bits & !set).count_ones());
        let most = if self.repeatable {
            u64::MAX
        } else {
            least + u64::from((self.optional_bits & !set).count_ones())
        };
        max.is_none_or(|m| least <= m && min <= m) && most >= min
    }

    /// Whether the object may end in `state`.
    fn can_end(&self, (step, set, c): CountedState, min: u64) -> bool {
        step == self.sequence.len() && set & self.required_bits == self.required_bits && c >= min
    }

    /// The states reached from the start by writing members (the start, nothing written,
    /// not among them), in the order first reached; `None` past `limit` states.
    fn reached(&self, min: u64, max: Option<u64>, limit: usize) -> Option<Vec<CountedState>> {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut states: Vec<CountedState> = Vec::new();
        let mut k = 0;
        let mut state = (0, 0, 0);
        loop {
            let writes = (0..self.n).map(Some).chain(self.additional.then_some(None));
            for member in writes {
                if let Some(next) = self.next(state, member, min, max) {
                    if seen.insert(next) {
                        if states.len() == limit {
                            return None;
                        }
                        states.push(next);
                    }
                }
            }
            let Some(&s) = states.get(k) else { return Some(states) };
            state = s;
            k += 1;
        }
    }
}

impl<'a> Converter<'a> {
    /// Whether the JSON Schema `pattern` matches somewhere in `name` (never where the
    /// pattern is not one grammask reads: its error is reported where it constrains).
    pub(super) fn pattern_matches(&self, pattern: &str, name: &str) -> bool {
        let mut b = crate::ir::GrammarBuilder::new();
        let opts = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        regex_to_ir(pattern, &mut b, opts).is_ok_and(|e| self.matches(e, name))
    }

    /// Whether the key `name` fits the witness `w` (`None` where its key schemas cannot
    /// be checked on the name).
    pub(super) fn key_fits(
        &mut self,
        w: &Witness<'a>,
        name: &str,
        depth: usize,
    ) -> Result<Option<bool>, Diagnostic> {
        if w.besides.iter().any(|b| b == name)
            || w.matching.iter().any(|(p, _)| !self.pattern_matches(p, name))
            || w.not_matching.iter().any(|(p, _)| self.pattern_matches(p, name))
        {
            return Ok(Some(false));
        }
        let mut fits = Some(true);
        for k in &w.key {
            fits = and3(fits, self.check_sub(k, &Value::String(name.to_string()), depth)?);
        }
        Ok(fits)
    }

    /// `f` as the additional members of which the unlisted member `w` is one: the
    /// witness's patterns, and each of its value schemas and `fallback` (what keys no
    /// part names take), as object parts of their own; its key schemas as
    /// `propertyNames`.
    fn witness_flat(&self, f: &Flat<'a>, w: &Witness<'a>, fallback: Option<Sub<'a>>) -> Flat<'a> {
        let mut wf = f.clone();
        let sub = |v: &'a Value, ptr: &str| Sub {
            v,
            ptr: ptr.to_string(),
            neg: false,
            dialect: self.dialect,
        };
        let part = |patterns, additional| ObjPart {
            patterns,
            additional,
            ptr: f.ptr.clone(),
            ..ObjPart::default()
        };
        for (p, ptr) in &w.matching {
            wf.obj_parts.push(part(vec![(p.clone(), sub(&TRUE, ptr))], Some(sub(&FALSE, ptr))));
        }
        if !w.not_matching.is_empty() {
            let patterns = w.not_matching.iter().map(|(p, ptr)| (p.clone(), sub(&FALSE, ptr)));
            wf.obj_parts.push(part(patterns.collect(), None));
        }
        for v in w.value.iter().cloned().chain(fallback) {
            wf.obj_parts.push(part(Vec::new(), Some(v)));
        }
        wf.property_names.extend(w.key.iter().cloned());
        wf
    }

    /// The keys and values of an unlisted member that fits `w` (of any additional member,
    /// with an empty witness), where neither `w` nor `f` has key schemas and `f`'s parts
    /// have at most [`MAX_PATTERN_REGIONS`] patterns:
    /// keys outside `besides` matching every pattern of `w` and none of its excluded
    /// ones, cut into regions by the patterns of `f` they match; a region's values under
    /// `w`'s schemas and, for each part of `f`, the schemas of its patterns the keys
    /// match, or else its `additionalProperties` (and `fallback` where no pattern
    /// matches). `None` when no such member may occur; refused past the automaton's
    /// limits.
    fn witness_member(
        &mut self,
        f: &Flat<'a>,
        w: &Witness<'a>,
        besides: &[String],
        fallback: Option<Sub<'a>>,
        depth: usize,
    ) -> Result<Option<Vec<(Expr, Expr)>>, Diagnostic> {
        let raw = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        // The patterns of `f`'s parts, with the part each stands in.
        let own: Vec<(usize, &String, &Sub<'a>)> = f
            .obj_parts
            .iter()
            .enumerate()
            .flat_map(|(i, part)| part.patterns.iter().map(move |(p, s)| (i, p, s)))
            .collect();
        let mut exprs = Vec::new();
        for (p, ptr) in w.matching.iter().chain(&w.not_matching) {
            exprs.push(self.raw_pattern(p, ptr, raw)?);
        }
        for (_, p, s) in &own {
            exprs.push(self.raw_pattern(p, &s.ptr, raw)?);
        }
        exprs.push(choice_or_never(besides.iter().map(|n| Expr::literal(n)).collect()));
        let n_matching = w.matching.len();
        let n_witness = n_matching + w.not_matching.len();
        let mut pairs = Vec::new();
        for region in 0..1usize << own.len() {
            let matched = |i: usize| region & (1 << i) != 0;
            let accepts = |m: &[bool]| {
                m[..n_matching].iter().all(|&b| b)
                    && !m[n_matching..n_witness].iter().any(|&b| b)
                    && (0..own.len()).all(|i| m[n_witness + i] == matched(i))
                    && !m[n_witness + own.len()]
            };
            let Some(key) = self.combination(&exprs, accepts, "pattern") else {
                let ptr = w.matching.first().map_or(f.ptr.clone(), |(_, ptr)| ptr.clone());
                let message =
                    "keys cut by several patterns are not expressible within the automaton limits";
                self.unsupported(ptr, message.into())?;
                return Ok(None);
            };
            if is_never(&key) {
                continue;
            }
            let mut value_parts: Vec<Sub<'a>> = w.value.clone();
            for (j, part) in f.obj_parts.iter().enumerate() {
                let matching: Vec<Sub<'a>> = own
                    .iter()
                    .enumerate()
                    .filter(|(i, (k, _, _))| *k == j && matched(*i))
                    .map(|(_, (_, _, s))| (*s).clone())
                    .collect();
                if matching.is_empty() {
                    value_parts.extend(part.additional.clone());
                } else {
                    value_parts.extend(matching);
                }
            }
            if region == 0 {
                value_parts.extend(fallback.clone());
            }
            if value_parts.iter().any(Sub::is_false) {
                continue;
            }
            let ptr = format!("{}/additionalProperties", f.ptr);
            let value = self.compile_parts(&value_parts, &ptr, depth)?;
            if !is_never(&value) {
                pairs.push((quoted(key), value));
            }
        }
        Ok((!pairs.is_empty()).then_some(pairs))
    }

    /// The schema parts of property `name` in each object part.
    pub(super) fn property_parts(&self, f: &Flat<'a>, name: &str) -> (Vec<Sub<'a>>, bool) {
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
                if self.pattern_matches(p, name) {
                    parts.push(s.clone());
                    matched = true;
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

    pub(super) fn object(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Diagnostic> {
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
        // Many optional members: a generation enters the start of each at once.
        let optional = names.iter().filter(|&n| !f.required.contains(n)).count();
        let many_optional = optional >= MANY_OPTIONAL_MEMBERS;
        let member_of = |(key, value)| {
            Expr::seq(vec![key, w.clone(), Expr::literal(":"), w.clone(), value, w.clone()])
        };
        // Each listed member's key and value, and whether it is required.
        let mut listed: Vec<(bool, Expr, Expr)> = Vec::new();
        for name in &names {
            let required = f.required.contains(name);
            let outline = many_optional && !required;
            let Some((key, value)) =
                self.listed_member(f, name, outline, fallback.as_ref(), depth)?
            else {
                if required {
                    return Ok(never());
                }
                continue;
            };
            if let Some(rank) = f.required.iter().position(|r| r == name) {
                ranked.push((rank, listed.len()));
            }
            listed.push((required, key, value));
        }
        self.share_equal_values(&mut listed);
        members.extend(listed.into_iter().map(|(required, k, v)| (required, member_of((k, v)))));
        ranked.sort_unstable();
        let required_order: Vec<usize> = ranked.into_iter().map(|(_, i)| i).collect();
        // Whether one listed member may stand for several members of the object.
        let mut several = false;
        for witness in &f.unlisted_witnesses {
            // An additional member that fits the witness is required. In schema order it
            // follows the listed members and the additional ones the witness names.
            let outside = &witness.besides;
            let mut besides = names.clone();
            besides.extend(outside.iter().filter(|n| !names.contains(n)).cloned());
            let direct = witness.key.is_empty()
                && f.property_names.is_empty()
                && f.obj_parts.iter().map(|p| p.patterns.len()).sum::<usize>()
                    <= MAX_PATTERN_REGIONS;
            let pairs = if direct {
                self.witness_member(f, witness, &besides, fallback.clone(), depth)?
            } else {
                let wf = self.witness_flat(f, witness, fallback.clone());
                self.additional_member(&wf, &besides, None, depth)?
            };
            let Some(pairs) = pairs else {
                return Ok(never());
            };
            let mut required = Expr::choice(pairs.into_iter().map(member_of).collect());
            if self.opts.property_order != crate::json_schema::PropertyOrder::Any {
                let mut named = Vec::new();
                for n in outside.iter().filter(|n| !names.contains(n)) {
                    let member = self.listed_member(f, n, false, fallback.as_ref(), depth)?;
                    named.extend(member.map(member_of));
                }
                if !named.is_empty() {
                    let before =
                        Expr::seq(vec![Expr::choice(named), Expr::literal(","), w.clone()]);
                    required = Expr::seq(vec![Expr::star(before), required]);
                    several = true;
                }
            }
            members.push((true, required));
        }
        let additional = self.additional_member(f, &names, fallback, depth)?;
        let additional =
            additional.map(|pairs| Expr::choice(pairs.into_iter().map(member_of).collect()));
        // Counts.
        let n_required = members.iter().filter(|m| m.0).count() as u64;
        let n_known = members.len() as u64;
        let (min, max) = (f.min_properties, f.max_properties);
        if max.is_some_and(|m| m < n_required || m < min) || (additional.is_none() && min > n_known)
        {
            return Ok(never());
        }
        let min_trivial = min <= n_required;
        let max_trivial = max.is_none_or(|m| additional.is_none() && m >= n_known);
        let mut count = (!(min_trivial && max_trivial)).then_some((min, max));
        if several && count.is_some() {
            self.unsupported(
                format!("{}/minProperties", f.ptr),
                "minProperties/maxProperties together with a key outside listed ones".into(),
            )?;
            count = None;
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
        } else if self.opts.property_order == crate::json_schema::PropertyOrder::Any {
            let additional = additional.as_ref();
            self.member_list_any_order(&members, &required_order, additional, count, &w, &f.ptr)?
        } else {
            self.member_list(members, additional, count, &w)
        };
        Ok(Expr::seq(vec![Expr::literal("{"), w, body, Expr::literal("}")]))
    }

    /// The member of a property by its name (key, colon and value, with whitespace), its
    /// value under every part that applies to the name (with `outline`, a large value a
    /// rule of its own: `Converter::optional_value`); `None` when no value may follow the
    /// name.
    fn listed_member(
        &mut self,
        f: &Flat<'a>,
        name: &str,
        outline: bool,
        fallback: Option<&Sub<'a>>,
        depth: usize,
    ) -> Result<Option<(Expr, Expr)>, Diagnostic> {
        let (mut parts, evaluated) = self.property_parts(f, name);
        if !evaluated {
            parts.extend(fallback.cloned());
        }
        if !f.property_names.is_empty() {
            let mut pf = Flat::new(&f.ptr);
            for s in &f.property_names {
                self.merge(&mut pf, s, depth + 1, &mut Vec::new(), false)?;
            }
            match self.check_value(&pf, &Value::String(name.to_string()), depth)? {
                Some(true) => {}
                Some(false) => return Ok(None),
                None => {
                    self.unsupported(
                        f.property_names[0].ptr.clone(),
                        "propertyNames that cannot be checked against the listed properties".into(),
                    )?;
                }
            }
        }
        let ptr = format!("{}/properties/{}", f.ptr, crate::json_schema::refs::escape_token(name));
        let mut value = self.compile_parts(&parts, &ptr, depth)?;
        if is_never(&value) {
            return Ok(None);
        }
        if outline {
            value = self.optional_value(value);
        }
        Ok(Some((quoted(encode_literal(name, CharEncoding::JsonString)), value)))
    }

    /// `e` itself when it has at most `max` IR nodes, else a reference to a new rule of
    /// body `e` (for expressions written in several places).
    pub(super) fn rule_past(&mut self, prefix: &str, e: &Expr, max: usize) -> Expr {
        if e.size() > max {
            Expr::Rule(self.b.add_fresh(prefix, e.clone()))
        } else {
            e.clone()
        }
    }

    /// The value of an optional member of an object of many
    /// ([`MANY_OPTIONAL_MEMBERS`]): a rule of its own past [`MAX_INLINE_OPTIONAL_VALUE`]
    /// in weight, listed as rarely reached
    /// ([`crate::json_schema::Converted::rarely_reached`]). Such an object may go on with
    /// any of its optional members after each member written, so a generation enters the
    /// start of every one at once; inline, each member's automaton would hold its whole
    /// value (a `maxLength: 32` string is some 300 states), all built in that step. As
    /// calls, only the value written is built, and the values of one schema (the same
    /// string type under many keys) become one rule.
    fn optional_value(&mut self, value: Expr) -> Expr {
        if value.weight() <= MAX_INLINE_OPTIONAL_VALUE {
            return value;
        }
        self.rarely_reached_rule("value", value)
    }

    /// The values that two or more optional members of an object write alike (one object
    /// type under several keys, two lists of ids), past [`MIN_SHARED_OPTIONAL_VALUE`] in
    /// weight: one rule, listed as rarely reached
    /// ([`crate::json_schema::Converted::rarely_reached`]). Such a value's weight says
    /// little when it refers to definitions, which compilers copy in; inline, every
    /// member's automaton would hold a copy, all built in the step that enters the
    /// object's members. As one call it is built once, when first written.
    fn share_equal_values(&mut self, listed: &mut [(bool, Expr, Expr)]) {
        let candidate = |m: &(bool, Expr, Expr)| !m.0 && !matches!(m.2, Expr::Rule(_));
        if listed.iter().filter(|m| candidate(m)).count() < 2 {
            return;
        }
        // Equal values first, then the weight of those met twice: most objects have none,
        // and a value is walked once.
        let mut counts: rustc_hash::FxHashMap<&Expr, usize> = Default::default();
        for m in listed.iter().filter(|m| candidate(m)) {
            *counts.entry(&m.2).or_default() += 1;
        }
        counts.retain(|value, n| *n >= 2 && value.weight() > MIN_SHARED_OPTIONAL_VALUE);
        if counts.is_empty() {
            return;
        }
        let shared: Vec<bool> =
            listed.iter().map(|m| candidate(m) && counts.contains_key(&m.2)).collect();
        // In the members' order, so that the rules are numbered alike in every run; equal
        // values meet the one rule made from the first.
        for (m, shared) in listed.iter_mut().zip(shared) {
            if shared {
                let value = std::mem::replace(&mut m.2, Expr::Empty);
                m.2 = self.rarely_reached_rule("value", value);
            }
        }
    }

    /// A reference to a rule of body `e`, named from `prefix` and listed as rarely
    /// reached ([`crate::json_schema::Converted::rarely_reached`]): a new one, or the one
    /// made before from an equal body (the free members of objects alike), so that what
    /// holds it compares equal too.
    fn rarely_reached_rule(&mut self, prefix: &'static str, e: Expr) -> Expr {
        let (id, new) = self.rule_by_body(prefix, e);
        if new {
            self.rarely_reached.push(self.b.name(id).to_string());
        }
        Expr::Rule(id)
    }

    /// The member of free keys beside listed properties (`additional`): a rule of its own
    /// past `max` nodes, listed as rarely reached
    /// ([`crate::json_schema::Converted::rarely_reached`]): documents seldom write such
    /// keys, so compilers keep it a call and build its automaton (a key complement, a
    /// value) when a generation first reaches it rather than within every object's.
    fn free_member(&mut self, e: Expr, max: usize) -> Expr {
        if e.size() <= max {
            return e;
        }
        self.rarely_reached_rule("additional", e)
    }

    /// [`Converter::rule_past`] of an expression given away.
    pub(super) fn rule_past_owned(&mut self, prefix: &str, e: Expr, max: usize) -> Expr {
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
    /// stays within [`crate::json_schema::MAX_ANY_ORDER_COPIES`], every required member is tracked,
    /// and so are as many optional ones, first in schema order, as keep
    /// `2^tracked * members` within it (up to [`crate::json_schema::MAX_ANY_ORDER_PROPERTIES`] members,
    /// all of them: each is written at most once). With more required members, they are
    /// sequenced, in `required_order` (the order of `required`) or in the schema's order,
    /// optional members going anywhere between them, as many tracked as keep
    /// `states * 2^tracked * members` within the bound. A free optional member may be
    /// written again, each occurrence's value checked against its schema, as additional
    /// properties are (JSON Schema's data model has no two properties of one name, so such
    /// a document has no meaning of its own to contradict). Objects whose sequenced
    /// members alone exceed four times the bound are refused (or, with `lenient`, kept in
    /// schema order).
    ///
    /// With `count` (`minProperties`, `maxProperties`; `None` when the members leave no
    /// count out of bounds), a state also counts the members written, every write of a
    /// free or additional member included, and only the states from which an object
    /// within the bounds can be finished have rules. Past four times the bound in copies
    /// of members, optional members stop being tracked, last first; then the object is
    /// refused (or, with `lenient`, its count left out).
    pub(super) fn member_list_any_order(
        &mut self,
        members: &[(bool, Expr)],
        required_order: &[usize],
        additional: Option<&Expr>,
        mut count: Option<(u64, Option<u64>)>,
        w: &Expr,
        ptr: &str,
    ) -> Result<Expr, Diagnostic> {
        let n = members.len();
        let budget = crate::json_schema::MAX_ANY_ORDER_COPIES;
        let n_required = members.iter().filter(|m| m.0).count();
        let copies = |steps: usize, bits: usize| {
            if bits > 30 {
                usize::MAX
            } else {
                steps.saturating_mul(1usize << bits).saturating_mul(n)
            }
        };
        let all_tracked = n <= crate::json_schema::MAX_ANY_ORDER_PROPERTIES;
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
            return Ok(self.member_list(members.to_vec(), additional.cloned(), count, w));
        }
        for i in (0..n).filter(|&i| !members[i].0) {
            if all_tracked || copies(steps, tracked.len() + 1) <= budget {
                tracked.push(i);
            }
        }
        let required: Vec<bool> = members.iter().map(|m| m.0).collect();
        // With a count, the states each sequence reaches from its start.
        let mut reached: Vec<Vec<CountedState>> = Vec::new();
        while let Some((min, max)) = count {
            let found: Option<Vec<Vec<CountedState>>> = sequences
                .iter()
                .map(|s| {
                    let order = CountedOrder::new(s, &tracked, &required, additional.is_some());
                    order.reached(min, max, 4 * budget / n.max(1))
                })
                .collect();
            match found {
                Some(found) if found.iter().map(Vec::len).sum::<usize>() * n <= 4 * budget => {
                    reached = found;
                    break;
                }
                _ if tracked.last().is_some_and(|&i| !members[i].0) => {
                    tracked.pop();
                }
                _ => {
                    self.unsupported(
                        format!("{ptr}/minProperties"),
                        format!(
                            "minProperties/maxProperties together with {n} properties in any \
                             order (more than {} copies of members)",
                            4 * budget
                        ),
                    )?;
                    count = None;
                }
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
        let additional = additional.cloned().map(|a| self.free_member(a, MAX_ANY_ORDER_COPIED));
        let additional = additional.as_ref();
        // State (step, set) of a sequence: its first `step` members and the tracked
        // members of `set` written; its rule is rules[step * sets + set].
        let sets = 1usize << tracked.len();
        let comma = |e: &Expr| Expr::seq(vec![Expr::literal(","), w.clone(), e.clone()]);
        let mut start = Vec::new();
        for (index, sequence) in sequences.iter().enumerate() {
            if let Some((min, max)) = count {
                let order = CountedOrder::new(sequence, &tracked, &required, additional.is_some());
                let states = &reached[index];
                let rules: Vec<crate::ir::RuleId> =
                    states.iter().map(|_| self.b.add_fresh("members", Expr::Empty)).collect();
                let rule_of: rustc_hash::FxHashMap<CountedState, crate::ir::RuleId> =
                    states.iter().copied().zip(rules.iter().copied()).collect();
                // The alternatives that write one more member in `state`, each followed by
                // the rule of the state after it, when an object within the bounds follows.
                let alternatives = |state: CountedState, first: bool| {
                    let lead = |e: &Expr| if first { e.clone() } else { comma(e) };
                    let mut alts = Vec::new();
                    let writes = members.iter().enumerate().map(|(i, m)| (Some(i), m));
                    for (member, m) in writes.chain(additional.map(|a| (None, a))) {
                        if let Some(next) = order.next(state, member, min, max) {
                            alts.push(Expr::seq(vec![lead(m), Expr::Rule(rule_of[&next])]));
                        }
                    }
                    alts
                };
                for (&state, &id) in states.iter().zip(&rules) {
                    let mut alts = Vec::new();
                    if order.can_end(state, min) {
                        alts.push(Expr::Empty);
                    }
                    alts.extend(alternatives(state, false));
                    self.b.define(id, choice_or_never(alts));
                }
                if order.can_end((0, 0, 0), min) && index == 0 {
                    start.push(Expr::Empty);
                }
                start.extend(alternatives((0, 0, 0), true));
                continue;
            }
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

    /// Known members in order (optional ones may be left out), then additional ones;
    /// `count` bounds how many members are written (`minProperties`, `maxProperties`),
    /// `None` when the members leave no count out of bounds.
    pub(super) fn member_list(
        &mut self,
        members: Vec<(bool, Expr)>,
        additional: Option<Expr>,
        count: Option<(u64, Option<u64>)>,
        w: &Expr,
    ) -> Expr {
        if let Some((min, max)) = count {
            return self.member_list_counted(members, additional, min, max, w);
        }
        let n = members.len();
        let comma = |e: Expr| Expr::seq(vec![Expr::literal(","), w.clone(), e]);
        let first_required = members.iter().position(|m| m.0).unwrap_or(n);
        // Each member is written up to twice and each tail up to `first_required + 1`
        // times: large members become rules of their own, and tails become rules when
        // their copies would add up, so nested objects do not multiply sizes.
        let members: Vec<(bool, Expr)> = members
            .into_iter()
            .map(|(required, e)| (required, self.rule_past_owned("member", e, MAX_COPIED_MEMBER)))
            .collect();
        let additional = additional.map(|a| self.free_member(a, MAX_COPIED_MEMBER));
        let total: usize = members.iter().map(|m| m.1.size() + 4).sum();
        let use_rules = (first_required + 1) * total > 1024;
        // The first member written: a listed one (up to the first required one, which
        // must be written unless an earlier one was), followed by the tail of the listed
        // members after it, or, when every listed member is optional, an additional one.
        // The tails are built from the last member back, each moved into the one before
        // it once copied after its first member. The additional members after them are
        // written once, after the choice of the first member, not at the end of every
        // tail: a key complement is hundreds of nodes, and each copy is inlined and
        // determinized again.
        let mut firsts = Vec::with_capacity(first_required + 2);
        // Each member moves into its last use.
        let mut tail = Expr::Empty;
        for (i, (required, member)) in members.into_iter().enumerate().rev() {
            if i <= first_required {
                debug_assert_eq!(required, i == first_required);
                if i == 0 {
                    firsts.push(then(member, tail));
                    break;
                }
                firsts.push(then(member.clone(), tail.clone()));
            }
            let item = if required { comma(member) } else { Expr::optional(comma(member)) };
            let body = then(item, tail);
            tail = if use_rules { Expr::Rule(self.b.add_fresh("members", body)) } else { body };
        }
        firsts.reverse();
        let all_optional = first_required == n;
        if let Some(a) = additional.as_ref().filter(|_| all_optional) {
            firsts.push(a.clone());
        }
        if firsts.is_empty() {
            return Expr::Empty;
        }
        let mut written = Expr::choice(firsts);
        if let Some(a) = additional {
            written = Expr::seq(vec![written, Expr::star(comma(a))]);
        }
        if all_optional {
            Expr::optional(written)
        } else {
            written
        }
    }

    /// Known members in order, then additional ones, between `min` and `max` members in
    /// all: an expression per state (next listed member, members written so far), the
    /// states from which no object within the bounds can be finished left out.
    ///
    /// Without `max`, the members written are counted up to `min` only.
    fn member_list_counted(
        &mut self,
        members: Vec<(bool, Expr)>,
        additional: Option<Expr>,
        min: u64,
        max: Option<u64>,
        w: &Expr,
    ) -> Expr {
        if max.is_some_and(|m| m < min) {
            return never();
        }
        let n = members.len();
        let comma = |e: &Expr| Expr::seq(vec![Expr::literal(","), w.clone(), e.clone()]);
        let members: Vec<(bool, Expr)> = members
            .into_iter()
            .map(|(required, e)| (required, self.rule_past_owned("member", e, MAX_COPIED_MEMBER)))
            .collect();
        let additional = additional.map(|a| self.free_member(a, MAX_COPIED_MEMBER));
        // Required and optional members from member i on.
        let mut required_from = vec![0u64; n + 1];
        let mut optional_from = vec![0u64; n + 1];
        for i in (0..n).rev() {
            required_from[i] = required_from[i + 1] + u64::from(members[i].0);
            optional_from[i] = optional_from[i + 1] + u64::from(!members[i].0);
        }
        let top = max.unwrap_or(min);
        // Whether an object within the bounds can be finished from member i with c written.
        let viable = |i: usize, c: u64| {
            let least = c + required_from[i];
            max.is_none_or(|m| least <= m)
                && (additional.is_some() || least + optional_from[i] >= min)
        };
        // states[i][c]: what may follow with member i next and c members written (at most
        // i), or `None` when nothing within the bounds can.
        let mut states: Vec<Vec<Option<Expr>>> = vec![Vec::new(); n + 1];
        for c in 0..=top.min(n as u64) {
            let e = viable(n, c).then(|| {
                // Additional members: as many as keep the count within the bounds.
                let (lo, hi) = (min.saturating_sub(c), max.map(|m| m - c));
                match &additional {
                    None => Expr::Empty,
                    Some(a) if c == 0 => {
                        if hi == Some(0) {
                            Expr::Empty
                        } else {
                            let more = self.counted(
                                comma(a),
                                count32(lo.saturating_sub(1)),
                                hi.map(|h| count32(h - 1)),
                            );
                            let list = Expr::seq(vec![a.clone(), more]);
                            if lo == 0 {
                                Expr::optional(list)
                            } else {
                                list
                            }
                        }
                    }
                    Some(a) => self.counted(comma(a), count32(lo), hi.map(count32)),
                }
            });
            states[n].push(e);
        }
        for i in (0..n).rev() {
            for c in 0..=top.min(i as u64) {
                if !viable(i, c) {
                    states[i].push(None);
                    continue;
                }
                let (required, m) = &members[i];
                let mut alts = Vec::new();
                let after = if max.is_some() { c + 1 } else { (c + 1).min(top) };
                if max.is_none_or(|m| c < m) {
                    if let Some(next) = &states[i + 1][after as usize] {
                        let lead = if c == 0 { m.clone() } else { comma(m) };
                        alts.push(Expr::seq(vec![lead, next.clone()]));
                    }
                }
                if !required {
                    alts.extend(states[i + 1][c as usize].clone());
                }
                let body = choice_or_never(alts);
                states[i].push(Some(self.rule_past_owned("members", body, MAX_COPIED_MEMBER)));
            }
        }
        states[0][0].clone().unwrap_or_else(never)
    }

    /// Keys of one pattern property with its schema, and the keys that do not match it
    /// with the schema of additional properties (an empty list: no such key may occur):
    /// `None` when the complement of the pattern is not expressible (or listed properties
    /// would have to be excluded from it).
    pub(super) fn pattern_or_not(
        &mut self,
        patterns: &[(String, Sub<'a>)],
        others: &[Sub<'a>],
        own: Option<Sub<'a>>,
        names: &[String],
        depth: usize,
    ) -> Result<Option<Vec<(Expr, Expr)>>, Diagnostic> {
        let [(p, s)] = patterns else {
            return self.pattern_regions(patterns, others, own, names, depth);
        };
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

    /// Keys and values of several pattern properties: the keys are cut into regions by
    /// which patterns they match (and the listed `names` left out), and a key of a region
    /// takes the schemas of every pattern it matches, or those of additional properties
    /// where it matches none. `None` when a region's keys are not expressible within the
    /// automaton limits, or there are more than [`MAX_PATTERN_REGIONS`] patterns.
    fn pattern_regions(
        &mut self,
        patterns: &[(String, Sub<'a>)],
        others: &[Sub<'a>],
        own: Option<Sub<'a>>,
        names: &[String],
        depth: usize,
    ) -> Result<Option<Vec<(Expr, Expr)>>, Diagnostic> {
        // Patterns whose schemas constrain alike act as one.
        let mut groups: Vec<(Vec<&str>, &Sub<'a>)> = Vec::new();
        for (p, s) in patterns {
            match groups.iter_mut().find(|g| same_constraints(g.1, s)) {
                Some(g) => g.0.push(p),
                None => groups.push((vec![p], s)),
            }
        }
        let k = groups.len();
        if k > MAX_PATTERN_REGIONS {
            return Ok(None);
        }
        let raw = RegexOptions { whole_match: false, encoding: CharEncoding::Raw };
        let mut exprs = Vec::with_capacity(k + 1);
        for (ps, _) in &groups {
            let mut alts = Vec::with_capacity(ps.len());
            for p in ps {
                match regex_to_ir(p, &mut self.b, raw) {
                    Ok(e) => alts.push(e),
                    Err(_) => return Ok(None),
                }
            }
            exprs.push(Expr::choice(alts));
        }
        if !names.is_empty() {
            exprs.push(Expr::choice(names.iter().map(|n| Expr::literal(n)).collect()));
        }
        let mut pairs = Vec::new();
        for region in 0..1usize << k {
            let matched = |i: usize| region & (1 << i) != 0;
            let accepts =
                |m: &[bool]| (0..k).all(|i| m[i] == matched(i)) && m.get(k) != Some(&true);
            let Some(key) = self.combination(&exprs, accepts, "pattern") else {
                return Ok(None);
            };
            if is_never(&key) {
                continue;
            }
            let mut value_parts: Vec<Sub<'a>> =
                (0..k).filter(|&i| matched(i)).map(|i| groups[i].1.clone()).collect();
            value_parts.extend(others.iter().cloned());
            let ptr = if region == 0 {
                value_parts.extend(own.clone());
                format!("{}/additionalProperties", groups[0].1.ptr)
            } else {
                groups[region.trailing_zeros() as usize].1.ptr.clone()
            };
            let value = self.compile_parts(&value_parts, &ptr, depth)?;
            if !is_never(&value) {
                pairs.push((quoted(key), value));
            }
        }
        Ok(Some(pairs))
    }

    /// The key and value expressions of additional properties, `None` when none may occur.
    pub(super) fn additional_member(
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
                    self.string_excluding(&refs)
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
        let n_patterns: usize = f.obj_parts.iter().map(|p| p.patterns.len()).sum();
        if pattern_parts.len() > 1
            && f.property_names.is_empty()
            && n_patterns <= MAX_PATTERN_REGIONS
        {
            // Several merged schemas with patterns: keys cut into regions by them all.
            return self.witness_member(f, &Witness::default(), names, fallback, depth);
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
            shadowed.push(names.iter().filter(|n| self.pattern_matches(p, n)).cloned().collect());
        }
        let own_false = own.as_ref().is_some_and(Sub::is_false);
        if own_false {
            let first = &patterns[0].1;
            if patterns.iter().any(|(_, s)| !same_constraints(s, first)) {
                if let Some(pairs) =
                    self.pattern_regions(&patterns, &others, own.clone(), names, depth)?
                {
                    return Ok((!pairs.is_empty()).then_some(pairs));
                }
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
                            pointer: Some(format!(
                                "{pptr}/{}",
                                crate::json_schema::refs::escape_token(p)
                            )),
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
            None => s.is_true() || same_constraints(s, &Sub { v: &TRUE, ..s.clone() }),
            Some(a) => same_constraints(s, a),
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
            self.string_excluding(&refs)
        };
        Ok(Some(vec![(key, value)]))
    }

    /// The keys other than `names` that `pattern` (at `ptr`) matches (`matched`) or does
    /// not match, as the content of a JSON string: `None` past the automaton's limits.
    pub(super) fn keys_besides(
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
        Ok(self.combination(&exprs, accepts, "pattern"))
    }
}

/// `first` followed by `rest` (`first` alone when nothing follows).
fn then(first: Expr, rest: Expr) -> Expr {
    match rest {
        Expr::Empty => first,
        rest => Expr::seq(vec![first, rest]),
    }
}
