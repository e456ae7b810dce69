//! Constants and the scalar types: `const`/`enum` values, strings (patterns, formats,
//! lengths) and numbers (bounds, `multipleOf`).

use super::*;
use crate::diagnostic::{Category, Diagnostic};
use crate::ir::{CharClass, Expr};
use crate::json_schema::flat::{types, Flat};
use crate::json_schema::numbers::{self, Decimal};
use crate::json_schema::shared::SharedRule;
use crate::json_schema::{Converter, FormatMode};
use crate::regex::{encode_literal, json_any_char, never, regex_to_ir, CharEncoding, RegexOptions};
use serde_json::Value;

impl<'a> Converter<'a> {
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
                if self.opts.property_order == crate::json_schema::PropertyOrder::Any
                    && map.len() > 1
                    && map.len() <= crate::json_schema::MAX_ANY_ORDER_PROPERTIES =>
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
                    .member_list_any_order(&members, &order, None, None, &w, "")
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

    pub(super) fn string(&mut self, f: &Flat<'a>) -> Result<Expr, Diagnostic> {
        let excluded: Vec<&str> = f.excluded.iter().filter_map(|v| v.as_str()).collect();
        let mut formats = Vec::new();
        for (name, ptr) in &f.formats {
            if self.opts.format == FormatMode::Annotation {
                continue;
            }
            if crate::json_schema::formats::KNOWN.contains(&name.as_str()) {
                formats.push((name.clone(), ptr.clone()));
            } else if crate::json_schema::formats::UNIMPLEMENTED.contains(&name.as_str()) {
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
                        format!(
                            "`not` of this pattern (its complement is expressible alone on a \
                             string, within {} automaton states)",
                            crate::complement::MAX_DFA_STATES
                        ),
                    )?;
                    Ok(self.shared(SharedRule::String))
                }
            };
        }
        if f.patterns.is_empty() && formats.is_empty() && !lengths {
            if excluded.is_empty() {
                return Ok(self.shared(SharedRule::String));
            }
            return Ok(self.string_excluding(&excluded));
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
            ([], [(name, ptr)], true) => match crate::json_schema::formats::regex_for(name) {
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
    pub(super) fn pattern_with_length(
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

    pub(super) fn number(&mut self, f: &Flat<'a>) -> Result<Expr, Diagnostic> {
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

    /// The content of a string meeting every pattern, format and length of `f` and no `not`
    /// pattern, from one automaton of them all ([`crate::complement::combination`]): `None`
    /// when a format has no regular grammar or the automaton passes its limits.
    pub(super) fn string_combination(
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
            let Some(regex) = crate::json_schema::formats::regex_for(name) else { return Ok(None) };
            let whole = RegexOptions { whole_match: true, ..raw };
            exprs.push(self.raw_pattern(&regex, ptr, whole)?);
        }
        // Patterns and one format, no length: the format followed through the patterns.
        let unbounded = f.min_length == 0 && f.max_length.is_none();
        if formats.len() == 1 && unbounded && f.not_patterns.is_empty() {
            let (patterns, format) = exprs.split_at(f.patterns.len());
            if let Some(e) = self.product_with_format(patterns, &format[0]) {
                return Ok(Some(e));
            }
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
        Ok(self.combination(&exprs, accepts, "string"))
    }

    /// A pattern as a regular expression over raw characters, errors at `ptr`.
    pub(super) fn raw_pattern(
        &mut self,
        p: &str,
        ptr: &str,
        opts: RegexOptions,
    ) -> Result<Expr, Diagnostic> {
        regex_to_ir(p, &mut self.b, opts).map_err(|mut d| {
            d.pointer = Some(ptr.to_string());
            d
        })
    }

    /// The strings `pattern` (at `ptr`) does not match, as the content of a JSON string:
    /// a short expression for the shapes [`crate::regex::regex_complement`] knows, else
    /// rules of the complemented automaton ([`crate::complement`]); `None` past its limits.
    pub(super) fn pattern_complement(
        &mut self,
        pattern: &str,
        ptr: &str,
    ) -> Result<Option<Expr>, Diagnostic> {
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
        Ok(self.combination(std::slice::from_ref(&raw), |m| !m[0], "pattern"))
    }
}
