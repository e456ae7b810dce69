//! Whether a JSON value satisfies a flat schema: used to drop `enum` and `const` values
//! the other keywords forbid, and to tell `oneOf` branches apart.

use super::*;
use crate::diagnostic::Diagnostic;
use crate::ir::Expr;
use crate::json_schema::flat::{json_equal, Flat};
use crate::json_schema::numbers::Decimal;
use crate::json_schema::{Converter, FormatMode, Sub};
use crate::regex::{regex_to_ir, CharEncoding, RegexOptions};
use serde_json::Value;

impl<'a> Converter<'a> {
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
    pub(super) fn check_sub(
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
    pub(super) fn check_own(
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
                        if crate::json_schema::formats::KNOWN.contains(&name.as_str()) {
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
                for (step, _) in &f.multiple_of {
                    match d.is_multiple_of(step) {
                        Some(true) => {}
                        answer => return Ok(answer),
                    }
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

    pub(super) fn check_object(
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
        let mut result = Some(true);
        for w in f.witnesses.iter().chain(&f.unlisted_witnesses) {
            // Some member fits the witness.
            let mut found = Some(false);
            for (key, value) in map {
                let mut fits = self.key_fits(w, key, depth)?;
                for v in &w.value {
                    if fits != Some(false) {
                        fits = and3(fits, self.check_sub(v, value, depth)?);
                    }
                }
                found = or3(found, fits);
            }
            if found == Some(false) {
                return Ok(Some(false));
            }
            result = and3(result, found);
        }
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

    pub(super) fn check_array(
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
    pub(super) fn format_matches(&self, name: &str, text: &str) -> Option<bool> {
        let mut b = crate::ir::GrammarBuilder::new();
        let opts = RegexOptions { whole_match: true, encoding: CharEncoding::Raw };
        let mut regex =
            |n: &str| regex_to_ir(&crate::json_schema::formats::regex_for(n)?, &mut b, opts).ok();
        let e = match name {
            "time" => crate::json_schema::formats::time_expr()?,
            "date-time" => Expr::Seq(vec![
                regex("date")?,
                Expr::class(false, [('T', 'T'), ('t', 't')]),
                crate::json_schema::formats::time_expr()?,
            ]),
            _ => regex(name)?,
        };
        Some(self.matches(e, text))
    }

    /// Whether a self-contained expression (no rule references) matches `text`.
    pub(super) fn matches(&self, e: Expr, text: &str) -> bool {
        let mut b = crate::ir::GrammarBuilder::new();
        let root = b.declare("root");
        b.define(root, e);
        match b.finish(root) {
            Ok(g) => crate::json_schema::matcher::ReferenceMatcher::new(&g).matches(text),
            Err(_) => false,
        }
    }
}
