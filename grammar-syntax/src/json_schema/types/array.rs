//! Arrays: prefix items, items, `contains`, length bounds and `uniqueItems` over listed
//! values.

use super::*;
use crate::diagnostic::Diagnostic;
use crate::ir::Expr;
use crate::json_schema::flat::{json_equal, types, Flat};
use crate::json_schema::shared::SharedRule;
use crate::json_schema::{Converter, Sub};
use crate::regex::{is_never, never};
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;

impl<'a> Converter<'a> {
    /// An array of distinct items (`uniqueItems`) whose item schema `parts` accepts only
    /// a few listed values: a rule per set of values written so far, each continuing with
    /// a value not in it. `None` when the values are not listed (or too many sets).
    pub(super) fn unique_array(
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
        let mut rules: HashMap<u64, crate::ir::RuleId> = HashMap::default();
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
        let mut done: HashMap<u64, ()> = HashMap::default();
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

    pub(super) fn array(&mut self, f: &Flat<'a>, depth: usize) -> Result<Expr, Diagnostic> {
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
        let active: Vec<&crate::json_schema::flat::Contains<'a>> =
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
