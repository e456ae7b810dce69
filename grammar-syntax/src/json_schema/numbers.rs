//! Exact digit-range grammars for `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` and a few forms of `multipleOf`.
//!
//! Bounds are exact decimals (the shortest text of the JSON number, never a float
//! comparison). A range of integers becomes the classic digit-by-digit split: numbers
//! shorter or longer than a bound are ranges of lengths, and numbers of a bound's length
//! branch on the first digit that differs from it. A range of decimals splits on the
//! integer part, then compares fraction digits the same way (a fraction is padded with
//! zeros, so `0.5`, `0.50` and `0.500` are one value).
//!
//! Restricted forms (documented limits of the converter):
//! - A bounded `number` is generated without an exponent: `-?(0|[1-9][0-9]*)(\.[0-9]+)?`.
//! - An `integer` is written without exponent; a zero fraction (`5.0`) is accepted,
//!   since JSON Schema counts it as an integer.
//! - `multipleOf` is supported for integers whose last digits decide divisibility
//!   (`2^a·5^b`, at most 1000), for any integer step over a range of at most 10,000
//!   values, and for decimal steps `10^-k` (at most `k` fraction digits).

use crate::ir::Expr;

/// An exact non-negative decimal: integer digits without leading zeros (`"0"` for
/// zero) and fraction digits without trailing zeros.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decimal {
    /// Whether the value is below zero (never for zero itself).
    pub negative: bool,
    /// Integer digits, no leading zeros.
    pub int: String,
    /// Fraction digits, no trailing zeros.
    pub frac: String,
}

impl Decimal {
    /// Parses a plain decimal (`-12.50`) or exponent form (`1.5e3`).
    pub fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text.strip_prefix('+').unwrap_or(text)),
        };
        let (mantissa, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) || exp.abs() > 400 {
            return None;
        }
        let digits: String = format!("{int}{frac}");
        let point = int.len() as i64 + exp;
        let (i, f) = if point <= 0 {
            (String::new(), format!("{}{}", "0".repeat((-point) as usize), digits))
        } else if point as usize >= digits.len() {
            (format!("{digits}{}", "0".repeat(point as usize - digits.len())), String::new())
        } else {
            (digits[..point as usize].to_string(), digits[point as usize..].to_string())
        };
        let int = i.trim_start_matches('0');
        let int = if int.is_empty() { "0".to_string() } else { int.to_string() };
        let frac = f.trim_end_matches('0').to_string();
        let is_zero = int == "0" && frac.is_empty();
        Some(Decimal { negative: negative && !is_zero, int, frac })
    }

    /// The exact decimal of a JSON number.
    pub fn from_number(n: &serde_json::Number) -> Option<Decimal> {
        if let Some(i) = n.as_i64() {
            return Decimal::parse(&i.to_string());
        }
        if let Some(u) = n.as_u64() {
            return Decimal::parse(&u.to_string());
        }
        // Display of f64 is the shortest round-trip text, without exponent.
        n.as_f64().filter(|f| f.is_finite()).and_then(|f| Decimal::parse(&format!("{f}")))
    }

    /// Whether the value is an integer.
    pub fn is_integer(&self) -> bool {
        self.frac.is_empty()
    }

    /// Whether the value is an integer multiple of `step` (above zero), exactly: `None`
    /// when the step has more than 37 significant digits.
    pub fn is_multiple_of(&self, step: &Decimal) -> Option<bool> {
        let e = self.frac.len().max(step.frac.len());
        // Both scaled by 10^e, as digit strings.
        let scaled = |d: &Decimal| format!("{}{}{}", d.int, d.frac, "0".repeat(e - d.frac.len()));
        let b: u128 = scaled(step).trim_start_matches('0').parse().ok()?;
        if b == 0 || b > 10u128.pow(37) {
            return None;
        }
        let mut r: u128 = 0;
        for c in scaled(self).bytes() {
            r = (r * 10 + u128::from(c - b'0')) % b;
        }
        Some(r == 0)
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.int == "0" && self.frac.is_empty()
    }

    /// The absolute value.
    pub fn abs(&self) -> Decimal {
        Decimal { negative: false, ..self.clone() }
    }

    /// The negated value.
    pub fn neg(&self) -> Decimal {
        Decimal { negative: !self.negative && !self.is_zero(), ..self.clone() }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match (self.negative, other.negative) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => cmp_magnitude(self, other),
            (true, true) => cmp_magnitude(other, self),
        }
    }
}

fn cmp_magnitude(a: &Decimal, b: &Decimal) -> std::cmp::Ordering {
    cmp_int(&a.int, &b.int).then_with(|| a.frac.cmp(&b.frac))
}

/// Compares canonical digit strings.
fn cmp_int(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// `n + 1` for a canonical digit string.
fn inc(n: &str) -> String {
    let mut d: Vec<u8> = n.bytes().collect();
    let mut i = d.len();
    loop {
        if i == 0 {
            d.insert(0, b'1');
            break;
        }
        i -= 1;
        if d[i] == b'9' {
            d[i] = b'0';
        } else {
            d[i] += 1;
            break;
        }
    }
    String::from_utf8(d).unwrap_or_default()
}

/// `n - 1` for a canonical digit string above zero.
fn dec(n: &str) -> String {
    let mut d: Vec<u8> = n.bytes().collect();
    let mut i = d.len();
    while i > 0 {
        i -= 1;
        if d[i] == b'0' {
            d[i] = b'9';
        } else {
            d[i] -= 1;
            break;
        }
    }
    let s = String::from_utf8(d).unwrap_or_default();
    let t = s.trim_start_matches('0');
    if t.is_empty() {
        "0".to_string()
    } else {
        t.to_string()
    }
}

/// A bound of a range: the value and whether it is excluded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// The bound.
    pub value: Decimal,
    /// Whether the bound itself is outside the range.
    pub exclusive: bool,
}

fn digit_class(lo: u8, hi: u8) -> Expr {
    Expr::class(false, [(lo as char, hi as char)])
}

fn any_digits(min: u32, max: Option<u32>) -> Expr {
    match (min, max) {
        (0, Some(0)) => Expr::Empty,
        (1, Some(1)) => digit_class(b'0', b'9'),
        _ => Expr::repeat(digit_class(b'0', b'9'), min, max),
    }
}

fn alt(mut alts: Vec<Expr>) -> Option<Expr> {
    alts.retain(|a| !crate::regex::is_never(a));
    if alts.is_empty() {
        None
    } else {
        Some(Expr::choice(alts))
    }
}

fn cat(items: Vec<Expr>) -> Expr {
    let mut out = Vec::new();
    for i in items {
        match i {
            Expr::Empty => {}
            Expr::Seq(inner) => out.extend(inner),
            i => out.push(i),
        }
    }
    Expr::seq(out)
}

/// Digit strings of length `a.len()` from `a` to `b` inclusive (same length, `a <= b`).
fn same_length(a: &[u8], b: &[u8]) -> Expr {
    if a.is_empty() {
        return Expr::Empty;
    }
    let n = a.len() as u32;
    if a[0] == b[0] {
        return cat(vec![
            Expr::literal(&(a[0] as char).to_string()),
            same_length(&a[1..], &b[1..]),
        ]);
    }
    let all_low = a[1..].iter().all(|&d| d == b'0');
    let all_high = b[1..].iter().all(|&d| d == b'9');
    let mut alts = Vec::new();
    let mut lo_first = a[0];
    let mut hi_first = b[0];
    if !all_low {
        let nines = vec![b'9'; a.len() - 1];
        alts.push(cat(vec![
            Expr::literal(&(a[0] as char).to_string()),
            same_length(&a[1..], &nines),
        ]));
        lo_first += 1;
    }
    let tail_high = if !all_high {
        hi_first -= 1;
        let zeros = vec![b'0'; b.len() - 1];
        Some(cat(vec![Expr::literal(&(b[0] as char).to_string()), same_length(&zeros, &b[1..])]))
    } else {
        None
    };
    if lo_first <= hi_first {
        alts.push(cat(vec![digit_class(lo_first, hi_first), any_digits(n - 1, Some(n - 1))]));
    }
    alts.extend(tail_high);
    alt(alts).unwrap_or_else(crate::regex::never)
}

/// Canonical integers (`0`, or no leading zero) from `lo` to `hi` (`None`: unbounded),
/// both inclusive; `None` when the range is empty.
pub fn integer_range(lo: &str, hi: Option<&str>) -> Option<Expr> {
    if let Some(h) = hi {
        if cmp_int(lo, h) == std::cmp::Ordering::Greater {
            return None;
        }
    }
    let mut alts = Vec::new();
    let mut lo = lo.to_string();
    if lo == "0" {
        alts.push(Expr::literal("0"));
        if hi == Some("0") {
            return alt(alts);
        }
        lo = "1".to_string();
    }
    let lo_len = lo.len();
    let last_len = hi.map_or(lo_len, str::len);
    for len in lo_len..=last_len {
        let start = if len == lo_len { lo.clone() } else { format!("1{}", "0".repeat(len - 1)) };
        let end = match hi {
            Some(h) if h.len() == len => h.to_string(),
            _ => "9".repeat(len),
        };
        alts.push(same_length(start.as_bytes(), end.as_bytes()));
    }
    if hi.is_none() {
        alts.push(cat(vec![digit_class(b'1', b'9'), any_digits(lo_len as u32, None)]));
    }
    alt(alts)
}

/// Fraction digit strings `f` (padded with zeros) with `lo <= f <= hi`; `lo`/`hi` are
/// digit strings without trailing zeros, `None` when there is no bound. With
/// `nonempty`, `f` has at least one digit. `None` when no string qualifies.
fn fraction(lo: Option<(&[u8], bool)>, hi: Option<(&[u8], bool)>, nonempty: bool) -> Option<Expr> {
    // A lower bound of zero that is inclusive is no bound.
    let lo = lo.filter(|(s, ex)| !s.is_empty() || *ex);
    let min = u32::from(nonempty);
    match (lo, hi) {
        (None, None) => return Some(any_digits(min, None)),
        (_, Some((&[], ex))) => {
            // f <= 0: only zeros, and only when zero itself is allowed.
            if ex || lo.is_some() {
                return None;
            }
            return Some(zeros(min));
        }
        (Some((&[], true)), None) => {
            // f > 0: some digit is not zero.
            return Some(cat(vec![
                any_digits(0, None),
                digit_class(b'1', b'9'),
                any_digits(0, None),
            ]));
        }
        _ => {}
    }
    let mut alts = Vec::new();
    let empty_ok = !nonempty
        && lo.is_none_or(|(l, ex)| l.is_empty() && !ex)
        && hi.is_none_or(|(h, ex)| !h.is_empty() || !ex);
    if empty_ok {
        alts.push(Expr::Empty);
    }
    let lo_d = lo.map(|(l, _)| l.first().copied().unwrap_or(b'0'));
    let hi_d = hi.map(|(h, _)| h.first().copied().unwrap_or(b'0'));
    // Digits strictly between the bounds' first digits leave the rest free.
    let free_lo = lo_d.map_or(b'0', |d| d + 1);
    let free_hi = hi_d.map_or(b'9', |d| d.saturating_sub(1));
    if free_lo <= free_hi {
        alts.push(cat(vec![digit_class(free_lo, free_hi), any_digits(0, None)]));
    }
    let rest = |s: &[u8]| -> Vec<u8> { s.get(1..).unwrap_or(&[]).to_vec() };
    match (lo_d, hi_d) {
        (Some(l), Some(h)) if l == h => {
            let (ls, lex) = lo.unwrap_or((&[], false));
            let (hs, hex) = hi.unwrap_or((&[], false));
            let (lr, hr) = (rest(ls), rest(hs));
            if let Some(r) = fraction(Some((&lr, lex)), Some((&hr, hex)), false) {
                alts.push(cat(vec![Expr::literal(&(l as char).to_string()), r]));
            }
        }
        _ => {
            if let (Some(l), Some((ls, lex))) = (lo_d, lo) {
                if hi_d.is_none_or(|h| l < h) {
                    let lr = rest(ls);
                    if let Some(r) = fraction(Some((&lr, lex)), None, false) {
                        alts.push(cat(vec![Expr::literal(&(l as char).to_string()), r]));
                    }
                }
            }
            if let (Some(h), Some((hs, hex))) = (hi_d, hi) {
                if lo_d.is_none_or(|l| l < h) {
                    let hr = rest(hs);
                    if let Some(r) = fraction(None, Some((&hr, hex)), false) {
                        alts.push(cat(vec![Expr::literal(&(h as char).to_string()), r]));
                    }
                }
            }
        }
    }
    alt(alts)
}

/// The optional `.digits` part after an integer part, the fraction in `lo..hi`.
fn fraction_part(lo: Option<(&[u8], bool)>, hi: Option<(&[u8], bool)>) -> Option<Expr> {
    let lo_free = lo.is_none_or(|(l, ex)| l.is_empty() && !ex);
    let hi_allows_zero = hi.is_none_or(|(h, ex)| !h.is_empty() || !ex);
    let none_ok = lo_free && hi_allows_zero;
    let with_point = fraction(lo, hi, true).map(|f| cat(vec![Expr::literal("."), f]));
    match (none_ok, with_point) {
        (true, Some(p)) => Some(Expr::optional(p)),
        (true, None) => Some(Expr::Empty),
        (false, Some(p)) => Some(p),
        (false, None) => None,
    }
}

/// Non-negative decimals (no sign, no exponent) with magnitude in the range.
fn magnitude_range(lo: &Bound, hi: Option<&Bound>) -> Option<Expr> {
    let lo_frac = lo.value.frac.as_bytes();
    let a = &lo.value.int;
    let mut alts = Vec::new();
    match hi {
        None => {
            alts.push(cat(vec![
                Expr::literal(a),
                fraction_part(Some((lo_frac, lo.exclusive)), None)?,
            ]));
            let above = integer_range(&inc(a), None)?;
            alts.push(cat(vec![above, fraction_part(None, None)?]));
        }
        Some(h) => {
            let b = &h.value.int;
            let hi_frac = h.value.frac.as_bytes();
            match cmp_int(a, b) {
                std::cmp::Ordering::Greater => return None,
                std::cmp::Ordering::Equal => {
                    let f =
                        fraction_part(Some((lo_frac, lo.exclusive)), Some((hi_frac, h.exclusive)))?;
                    alts.push(cat(vec![Expr::literal(a), f]));
                }
                std::cmp::Ordering::Less => {
                    if let Some(f) = fraction_part(Some((lo_frac, lo.exclusive)), None) {
                        alts.push(cat(vec![Expr::literal(a), f]));
                    }
                    let next = inc(a);
                    if cmp_int(&next, b) == std::cmp::Ordering::Less {
                        if let Some(mid) = integer_range(&next, Some(&dec(b))) {
                            alts.push(cat(vec![mid, fraction_part(None, None)?]));
                        }
                    }
                    if let Some(f) = fraction_part(None, Some((hi_frac, h.exclusive))) {
                        alts.push(cat(vec![Expr::literal(b), f]));
                    }
                }
            }
        }
    }
    alt(alts)
}

/// Most zeros a fraction may end with where they carry no meaning (the zero fraction of
/// an integer, `5.000`, and zeros after a fraction's last digit that counts): a confused
/// model cannot write them forever.
pub const MAX_TRAILING_ZEROS: u32 = 16;

/// From `min` to [`MAX_TRAILING_ZEROS`] zeros.
pub(crate) fn zeros(min: u32) -> Expr {
    Expr::repeat(Expr::literal("0"), min, Some(MAX_TRAILING_ZEROS.max(min)))
}

/// The zero fraction a JSON Schema integer may carry (`5.0`).
pub(crate) fn zero_fraction() -> Expr {
    Expr::optional(cat(vec![Expr::literal("."), zeros(1)]))
}

/// Integers as canonical digit strings in `[lo, hi]` after rounding the bounds inward.
fn integer_bounds(lo: Option<&Bound>, hi: Option<&Bound>) -> (Option<Decimal>, Option<Decimal>) {
    let lo = lo.map(|b| {
        let v = &b.value;
        if v.is_integer() {
            if b.exclusive {
                add_one(v)
            } else {
                v.clone()
            }
        } else {
            // ceil
            let t = Decimal { frac: String::new(), ..v.clone() };
            if v.negative {
                Decimal { negative: t.int != "0", ..t }
            } else {
                add_one(&t)
            }
        }
    });
    let hi = hi.map(|b| {
        let v = &b.value;
        if v.is_integer() {
            if b.exclusive {
                add_one(&v.neg()).neg()
            } else {
                v.clone()
            }
        } else {
            let t = Decimal { frac: String::new(), ..v.clone() };
            if v.negative {
                add_one(&t.neg()).neg()
            } else {
                Decimal { negative: false, ..t }
            }
        }
    });
    (lo, hi)
}

/// `v + 1` for an integer `v`.
fn add_one(v: &Decimal) -> Decimal {
    if v.negative {
        let m = dec(&v.int);
        Decimal { negative: m != "0", int: m, frac: String::new() }
    } else {
        Decimal { negative: false, int: inc(&v.int), frac: String::new() }
    }
}

/// JSON numbers in a range: `integer` restricts to integers (a zero fraction allowed).
/// Returns `None` when no number is in the range.
pub fn number_range(lo: Option<&Bound>, hi: Option<&Bound>, integer: bool) -> Option<Expr> {
    if integer {
        let (lo, hi) = integer_bounds(lo, hi);
        let lo_b = lo.map(|v| Bound { value: v, exclusive: false });
        let hi_b = hi.map(|v| Bound { value: v, exclusive: false });
        let body = signed_range(lo_b.as_ref(), hi_b.as_ref(), true)?;
        return Some(cat(vec![body, zero_fraction()]));
    }
    signed_range(lo, hi, false)
}

fn signed_range(lo: Option<&Bound>, hi: Option<&Bound>, integer: bool) -> Option<Expr> {
    if let (Some(l), Some(h)) = (lo, hi) {
        match l.value.cmp(&h.value) {
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Equal if l.exclusive || h.exclusive => return None,
            _ => {}
        }
    }
    let zero = Decimal { negative: false, int: "0".into(), frac: String::new() };
    let mut alts = Vec::new();
    // Non-negative side, written without a sign.
    let pos_possible = hi.is_none_or(|h| !(h.value.negative || h.value.is_zero() && h.exclusive));
    if pos_possible {
        let lo_m = match lo {
            Some(l) if !l.value.negative => l.clone(),
            _ => Bound { value: zero.clone(), exclusive: false },
        };
        if let Some(e) = magnitude(&lo_m, hi, integer) {
            alts.push(e);
        }
    }
    // Non-positive side, written with `-`: magnitudes in [max(-hi, 0), -lo].
    let neg_possible = lo.is_none_or(|l| l.value.negative || (l.value.is_zero() && !l.exclusive));
    if neg_possible {
        let lo_m = match hi {
            Some(h) if h.value.negative || h.value.is_zero() => {
                Bound { value: h.value.abs(), exclusive: h.exclusive }
            }
            _ => Bound { value: zero, exclusive: false },
        };
        let hi_m = lo.map(|l| Bound { value: l.value.abs(), exclusive: l.exclusive });
        if let Some(e) = magnitude(&lo_m, hi_m.as_ref(), integer) {
            alts.push(cat(vec![Expr::literal("-"), e]));
        }
    }
    alt(alts)
}

fn magnitude(lo: &Bound, hi: Option<&Bound>, integer: bool) -> Option<Expr> {
    if integer {
        // Bounds are inclusive integers here.
        integer_range(&lo.value.int, hi.map(|h| h.value.int.as_str()))
    } else {
        magnitude_range(lo, hi)
    }
}

/// The digits after which divisibility by `step` is decided, when `step = 2^a 5^b`.
fn decisive_digits(step: u64) -> Option<u32> {
    let mut n = step;
    let (mut twos, mut fives) = (0u32, 0u32);
    while n % 2 == 0 {
        n /= 2;
        twos += 1;
    }
    while n % 5 == 0 {
        n /= 5;
        fives += 1;
    }
    (n == 1 && twos.max(fives) <= 3).then_some(twos.max(fives))
}

/// Integers (any sign, zero fraction allowed) that are multiples of `step`, optionally in
/// a range; `Err` with a reason when the combination is not expressible.
pub fn integer_multiples(
    step: u64,
    lo: Option<&Bound>,
    hi: Option<&Bound>,
) -> Result<Option<Expr>, String> {
    if step == 0 {
        return Err("multipleOf must be above zero".into());
    }
    if step == 1 {
        return Ok(number_range(lo, hi, true));
    }
    let (ilo, ihi) = integer_bounds(lo, hi);
    if let (Some(l), Some(h)) = (&ilo, &ihi) {
        let (l, h) = (to_i128(l), to_i128(h));
        if let (Some(l), Some(h)) = (l, h) {
            if h < l {
                return Ok(None);
            }
            if h - l <= 10_000 {
                let step = step as i128;
                let first = l + (step - l.rem_euclid(step)) % step;
                let mut alts = Vec::new();
                let mut v = first;
                while v <= h {
                    alts.push(if v == 0 {
                        cat(vec![Expr::optional(Expr::literal("-")), Expr::literal("0")])
                    } else {
                        Expr::literal(&v.to_string())
                    });
                    v += step;
                }
                return Ok(alt(alts).map(|e| cat(vec![e, zero_fraction()])));
            }
        }
    }
    if ilo.is_some() || ihi.is_some() {
        return Err(format!("multipleOf {step} together with bounds over a wide range"));
    }
    let Some(k) = decisive_digits(step) else {
        return Err(format!("multipleOf {step} (only 2^a·5^b up to 1000 is expressible)"));
    };
    let modulus = 10u64.pow(k);
    let mut small = Vec::new();
    let mut suffixes = Vec::new();
    let mut v = 0;
    while v < modulus {
        small.push(Expr::literal(&v.to_string()));
        suffixes.push(Expr::literal(&format!("{v:0width$}", width = k as usize)));
        v += step;
    }
    let large = cat(vec![digit_class(b'1', b'9'), any_digits(0, None), Expr::choice(suffixes)]);
    let mut alts = small;
    alts.push(large);
    let magnitude = Expr::choice(alts);
    Ok(Some(cat(vec![Expr::optional(Expr::literal("-")), magnitude, zero_fraction()])))
}

fn to_i128(d: &Decimal) -> Option<i128> {
    let v: i128 = d.int.parse().ok()?;
    Some(if d.negative { -v } else { v })
}

/// Decimals (no exponent) with at most `digits` significant fraction digits, in a range.
pub fn decimal_steps(
    digits: u32,
    lo: Option<&Bound>,
    hi: Option<&Bound>,
) -> Result<Option<Expr>, String> {
    if lo.is_some() || hi.is_some() {
        return Err("a decimal multipleOf together with bounds".into());
    }
    let frac = cat(vec![Expr::literal("."), any_digits(1, Some(digits)), zeros(0)]);
    let int = Expr::choice(vec![
        Expr::literal("0"),
        cat(vec![digit_class(b'1', b'9'), any_digits(0, None)]),
    ]);
    Ok(Some(cat(vec![Expr::optional(Expr::literal("-")), int, Expr::optional(frac)])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Grammar, GrammarBuilder};
    use crate::json_schema::matcher::ReferenceMatcher;

    fn grammar(e: Expr) -> Grammar {
        let mut b = GrammarBuilder::new();
        let root = b.declare("root");
        b.define(root, e);
        b.finish(root).unwrap()
    }

    fn bound(v: &str, exclusive: bool) -> Bound {
        Bound { value: Decimal::parse(v).unwrap(), exclusive }
    }

    #[test]
    fn decimals_parse_and_compare() {
        assert_eq!(Decimal::parse("-0.0").unwrap(), Decimal::parse("0").unwrap());
        assert_eq!(Decimal::parse("1.5e2").unwrap().int, "150");
        assert!(Decimal::parse("-2").unwrap() < Decimal::parse("-1.5").unwrap());
        assert!(Decimal::parse("0.05").unwrap() < Decimal::parse("0.5").unwrap());
    }

    #[test]
    fn integer_ranges_match_brute_force() {
        let bounds = [
            None,
            Some(-1000),
            Some(-57),
            Some(-10),
            Some(-1),
            Some(0),
            Some(1),
            Some(9),
            Some(10),
            Some(99),
            Some(100),
            Some(345),
            Some(999),
        ];
        for lo in bounds {
            for hi in bounds {
                for ex in [false, true] {
                    let lo_b = lo.map(|v: i64| bound(&v.to_string(), ex));
                    let hi_b = hi.map(|v: i64| bound(&v.to_string(), !ex));
                    let expr = number_range(lo_b.as_ref(), hi_b.as_ref(), true);
                    let Some(expr) = expr else {
                        for n in -1000..1000i64 {
                            let in_lo = lo.is_none_or(|l| if ex { n > l } else { n >= l });
                            let in_hi = hi.is_none_or(|h| if !ex { n < h } else { n <= h });
                            assert!(!(in_lo && in_hi), "{lo:?} {hi:?} {ex} misses {n}");
                        }
                        continue;
                    };
                    let g = grammar(expr);
                    let m = ReferenceMatcher::new(&g);
                    for n in -1000..1000i64 {
                        let in_lo = lo.is_none_or(|l| if ex { n > l } else { n >= l });
                        let in_hi = hi.is_none_or(|h| if !ex { n < h } else { n <= h });
                        assert_eq!(
                            m.matches(&n.to_string()),
                            in_lo && in_hi,
                            "{lo:?} {hi:?} {ex} at {n}"
                        );
                    }
                    assert!(!m.matches("01"));
                }
            }
        }
    }

    #[test]
    fn decimal_ranges_match_brute_force() {
        let bounds = [
            None,
            Some("-1.5"),
            Some("-0.25"),
            Some("0"),
            Some("0.3"),
            Some("1"),
            Some("1.25"),
            Some("2.5"),
        ];
        for lo in bounds {
            for hi in bounds {
                for (lex, hex) in [(false, false), (true, false), (false, true), (true, true)] {
                    let lo_b = lo.map(|v| bound(v, lex));
                    let hi_b = hi.map(|v| bound(v, hex));
                    let expr = number_range(lo_b.as_ref(), hi_b.as_ref(), false);
                    let g = expr.map(grammar);
                    let m = g.as_ref().map(ReferenceMatcher::new);
                    for n in -400..400i64 {
                        for text in
                            [format!("{}", n as f64 / 100.0), format!("{:.3}", n as f64 / 100.0)]
                        {
                            let d = Decimal::parse(&text).unwrap();
                            let in_lo = lo_b.as_ref().is_none_or(|b| {
                                if b.exclusive {
                                    d > b.value
                                } else {
                                    d >= b.value
                                }
                            });
                            let in_hi = hi_b.as_ref().is_none_or(|b| {
                                if b.exclusive {
                                    d < b.value
                                } else {
                                    d <= b.value
                                }
                            });
                            let got = m.as_ref().is_some_and(|m| m.matches(&text));
                            assert_eq!(
                                got,
                                in_lo && in_hi,
                                "[{lo:?} {lex}, {hi:?} {hex}] at {text}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn multiples_of_decimal_steps_are_exact() {
        let cases = [
            ("7", "2", false),
            ("35", "1.5", false),
            ("4.5", "1.5", true),
            ("-4.5", "1.5", true),
            ("0.3", "0.1", true),
            ("1e3", "8", true),
            ("1.01", "0.01", true),
            ("1.015", "0.01", false),
            ("0", "7", true),
            ("12345678901234567890", "3", true),
            ("12345678901234567891", "3", false),
        ];
        for (v, step, yes) in cases {
            let (v, s) = (Decimal::parse(v).unwrap(), Decimal::parse(step).unwrap());
            assert_eq!(v.is_multiple_of(&s), Some(yes), "{v:?} {step}");
        }
    }

    #[test]
    fn multiples_match_brute_force() {
        for step in [2u64, 4, 5, 8, 10, 25] {
            let e = integer_multiples(step, None, None).unwrap().unwrap();
            let g = grammar(e);
            let m = ReferenceMatcher::new(&g);
            for n in -1000..1000i64 {
                assert_eq!(m.matches(&n.to_string()), n % step as i64 == 0, "{step} {n}");
            }
        }
        let e = integer_multiples(3, Some(&bound("-10", false)), Some(&bound("20", true)))
            .unwrap()
            .unwrap();
        let g = grammar(e);
        let m = ReferenceMatcher::new(&g);
        for n in -100..100i64 {
            assert_eq!(m.matches(&n.to_string()), n % 3 == 0 && (-10..20).contains(&n), "{n}");
        }
    }
}
