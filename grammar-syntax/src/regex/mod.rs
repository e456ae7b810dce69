//! Regular expressions → IR, with ECMA-262 semantics (the dialect of JSON Schema's
//! `pattern`), through `regex-syntax`.
//!
//! The pattern is first rewritten from ECMA-262 syntax into `regex-syntax` syntax so that
//! the ECMA meanings hold: `\d` and `\w` are ASCII, `\s` is ECMA's white space and line
//! terminators, `.` excludes the line terminators (`\n`, `\r`, U+2028, U+2029), `[^]` is
//! any character and `[]` nothing, `\uXXXX` and identity escapes (`\/`) are understood,
//! and a `{` that does not start a quantifier is literal. Lookaround, backreferences and
//! word boundaries cannot be expressed by a context-free grammar without them, so they
//! are refused with a [`Category::Unsupported`] diagnostic.
//!
//! The HIR is then lowered to IR expressions: literals become [`Expr::Bytes`], classes
//! [`Expr::Class`], repetitions [`Expr::Repeat`] (never unrolled), captures are
//! transparent. Characters are produced either as raw UTF-8 ([`CharEncoding::Raw`]) or as
//! the content of a JSON string ([`CharEncoding::JsonString`]): there a `"`, a `\` or a
//! control character is produced escaped (`\"`, `\\`, `\n`, `\u001f`, ...), `/` may also
//! be written `\/`, and every other character is written as itself.
//!
//! Anchors: with [`RegexOptions::whole_match`] the expression matches the whole text
//! (`^` and `$` at its ends are no-ops); otherwise (JSON Schema's unanchored search) any
//! text may come before the match unless it begins with `^`, and after it unless it ends
//! with `$`. Anchors inside alternations and groups (`^a$|^b`, `^(a$|b$)`) split the
//! pattern into ways of matching, each anchored on its own, and so do anchors inside a
//! repeated group (`(a($|/))*`); repetitions of such a group at least twice, and other
//! assertions (multi-line anchors), are refused.
//!
//! ```
//! use grammask_syntax::regex::parse_regex;
//! let grammar = parse_regex("[a-c]+x?").unwrap();
//! assert_eq!(grammar.rules.len(), 1);
//! ```

use crate::diagnostic::{Category, Diagnostic, Diagnostics};
use crate::ir::{CharClass, Expr, Grammar, GrammarBuilder};
use regex_syntax::hir::{Class, Hir, HirKind, Look};
use std::rc::Rc;

mod encode;
mod memo;
pub use encode::{
    any_char, encode_class, encode_literal, has_json_escape, is_never, is_unicode_tail,
    json_any_char, json_escape, json_unescaped_char, never, subtract, JSON_MUST_ESCAPE,
};
pub use memo::{remember, Remembering};

/// How the characters a regex matches are written in the text the grammar produces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CharEncoding {
    /// Each character as its UTF-8 bytes.
    #[default]
    Raw,
    /// Each character as the content of a JSON string (required escapes applied).
    JsonString,
}

/// Options of [`regex_to_ir`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegexOptions {
    /// Whether the regex must match the whole text (`true`, the `.regex` frontend) or
    /// may match anywhere in it (`false`, JSON Schema's `pattern`).
    pub whole_match: bool,
    /// How matched characters are written.
    pub encoding: CharEncoding,
}

impl Default for RegexOptions {
    fn default() -> Self {
        RegexOptions { whole_match: true, encoding: CharEncoding::Raw }
    }
}

impl RegexOptions {
    /// The options of JSON Schema's `pattern`: unanchored, inside a JSON string.
    pub fn json_schema_pattern() -> Self {
        RegexOptions { whole_match: false, encoding: CharEncoding::JsonString }
    }
}

/// ECMA-262 `\s`: white space and line terminators.
const ECMA_SPACE: &str = "\\x{9}-\\x{D}\\x{20}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";
/// ECMA-262 `\w`.
const ECMA_WORD: &str = "0-9A-Za-z_";
/// ECMA-262 `\d`.
const ECMA_DIGIT: &str = "0-9";
/// What ECMA-262 `.` excludes.
const ECMA_LINE_TERMINATORS: &str = "\\x{A}\\x{D}\\x{2028}\\x{2029}";

/// Lowers `pattern` (ECMA-262 syntax) to an expression, adding any helper rules to
/// `builder` (none today: the expression is self-contained, so the rule holding it stays
/// regular).
pub fn regex_to_ir(
    pattern: &str,
    builder: &mut GrammarBuilder,
    opts: RegexOptions,
) -> Result<Expr, Diagnostic> {
    let _ = builder;
    let hir = parse_pattern(pattern, opts.whole_match)?;
    let lowering = Lowering { encoding: opts.encoding, pattern };
    let forms = lowering.top(&hir)?;
    if forms.is_empty() {
        return Ok(never());
    }
    if opts.whole_match {
        return Ok(Expr::choice(forms.into_iter().map(|f| Expr::seq(f.body)).collect()));
    }
    let any = Expr::star(any_char(opts.encoding));
    let pad = |start: bool, body: Expr, end: bool| {
        let mut items = Vec::with_capacity(3);
        if !start {
            items.push(any.clone());
        }
        items.push(body);
        if !end {
            items.push(any.clone());
        }
        Expr::seq(items)
    };
    let (start, end) = (forms[0].start, forms[0].end);
    if forms.iter().all(|f| f.start == start && f.end == end) {
        let body = Expr::choice(forms.into_iter().map(|f| Expr::seq(f.body)).collect());
        return Ok(pad(start, body, end));
    }
    // Mixed anchoring: each way gets its own padding.
    Ok(Expr::choice(forms.into_iter().map(|f| pad(f.start, Expr::seq(f.body), f.end)).collect()))
}

/// The most ways of matching ([`Form`]s) a pattern's anchors may split it into.
const MAX_FORMS: usize = 64;

/// One way a pattern matches: an expression without anchors, and whether its match must
/// begin at the start of the text (`^`) and finish at its end (`$`).
#[derive(Clone)]
struct Form {
    start: bool,
    /// The expression, as the items of a sequence.
    body: Vec<Expr>,
    end: bool,
    /// Whether the body matches the empty text.
    nullable: bool,
}

impl Form {
    fn plain(body: Vec<Expr>, nullable: bool) -> Form {
        Form { start: false, body, end: false, nullable }
    }

    fn anchor(start: bool, end: bool) -> Form {
        Form { start, body: Vec::new(), end, nullable: true }
    }

    /// `self` followed by `next`, where both anchors can hold: `None` where they cannot.
    /// After a `$`, `next` must match the empty text; before a `^`, `self` must; the
    /// part that matches only the empty text then adds nothing to the body.
    fn then(&self, next: &Form) -> Option<Form> {
        if self.end || next.start {
            let mut start = self.start;
            let mut body = Vec::new();
            let mut nullable = true;
            if self.end {
                if !next.nullable {
                    return None;
                }
                body.extend(self.body.iter().cloned());
                nullable = self.nullable;
            }
            if next.start {
                // The text before `next`'s `^` is empty: `self` matched nothing there.
                if !self.nullable {
                    return None;
                }
                start = true;
                if self.end {
                    // Both: the whole text is empty.
                    body.clear();
                    nullable = true;
                } else {
                    body.extend(next.body.iter().cloned());
                    nullable = next.nullable;
                }
            }
            return Some(Form { start, body, end: self.end || next.end, nullable });
        }
        let mut body = self.body.clone();
        body.extend(next.body.iter().cloned());
        Some(Form {
            start: self.start,
            body,
            end: next.end,
            nullable: self.nullable && next.nullable,
        })
    }
}

/// Parses a whole-text regex (ECMA-262 syntax) into a grammar whose root rule matches
/// exactly the texts the regex matches in full.
pub fn parse_regex(pattern: &str) -> Result<Grammar, Diagnostics> {
    let mut builder = GrammarBuilder::new();
    let expr =
        regex_to_ir(pattern, &mut builder, RegexOptions::default()).map_err(Diagnostics::one)?;
    let root = builder.declare("root");
    builder.define(root, expr);
    builder
        .finish(root)
        .map_err(|u| Diagnostics::one(Diagnostic::global(format!("undefined rule `{}`", u.0))))
}

/// Parses `pattern` as an ECMA-262 regex into `regex-syntax`'s HIR.
fn parse_hir(pattern: &str) -> Result<Hir, Diagnostic> {
    let translated = ecma_to_regex_syntax(pattern)?;
    regex_syntax::ParserBuilder::new().unicode(true).utf8(true).build().parse(&translated).map_err(
        |e| {
            let detail = match &e {
                regex_syntax::Error::Parse(p) => p.kind().to_string(),
                regex_syntax::Error::Translate(t) => t.kind().to_string(),
                other => other.to_string(),
            };
            Diagnostic::global(format!("invalid regex `{pattern}`: {detail}"))
        },
    )
}

/// The HIR of `pattern`: whole when it must match the whole text, else (a search) its
/// [`search_core`]; remembered ([`memo`]).
fn parse_pattern(pattern: &str, whole_match: bool) -> Result<Rc<Hir>, Diagnostic> {
    memo::parsed(pattern, whole_match, || {
        let hir = parse_hir(pattern)?;
        Ok(if whole_match { hir } else { search_core(hir) })
    })
}

/// The part of a search pattern (JSON Schema's `pattern`, unanchored unless `^`/`$` say
/// otherwise) that decides whether a text matches: the top-level concatenation without
/// the leading and trailing items that match the empty text and hold no anchor. A text
/// holds a match of `N S M` (`N`, `M` such items) exactly when it holds one of `S`, so
/// `\d+\.\d+\.\d+-?.*` searches as `\d+\.\d+\.\d+`, and its automaton need not follow
/// a trailing `.*` beside the padding `.*` of the search. A pattern whose every item may
/// be empty is kept whole (it matches every text).
fn search_core(hir: Hir) -> Hir {
    let mut top = &hir;
    while let HirKind::Capture(c) = top.kind() {
        top = &c.sub;
    }
    let HirKind::Concat(items) = top.kind() else { return hir };
    let optional =
        |h: &Hir| h.properties().minimum_len() == Some(0) && h.properties().look_set().is_empty();
    let Some(first) = items.iter().position(|h| !optional(h)) else { return hir };
    let last = items.iter().rposition(|h| !optional(h)).unwrap_or(first);
    if first == 0 && last + 1 == items.len() {
        return hir;
    }
    Hir::concat(items[first..=last].to_vec())
}

fn unsupported(pattern: &str, what: &str) -> Diagnostic {
    Diagnostic::global(format!("regex `{pattern}` uses {what}, which a grammar cannot express"))
        .with_category(Category::Unsupported)
}

/// Rewrites an ECMA-262 pattern into `regex-syntax` syntax with the same meaning.
fn ecma_to_regex_syntax(pattern: &str) -> Result<String, Diagnostic> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut i = 0;
    let mut in_class = false;
    let hex = |c: char| format!("\\x{{{:X}}}", c as u32);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&n) = chars.get(i + 1) else {
                    return Err(Diagnostic::global(format!(
                        "invalid regex `{pattern}`: trailing backslash"
                    )));
                };
                i += 2;
                match n {
                    'd' | 'w' | 's' | 'D' | 'W' | 'S' => {
                        let set = match n.to_ascii_lowercase() {
                            'd' => ECMA_DIGIT,
                            'w' => ECMA_WORD,
                            _ => ECMA_SPACE,
                        };
                        let negated = n.is_ascii_uppercase();
                        match (in_class, negated) {
                            (true, false) => out.push_str(set),
                            (_, true) => out.push_str(&format!("[^{set}]")),
                            (false, false) => out.push_str(&format!("[{set}]")),
                        }
                    }
                    'b' if in_class => out.push_str("\\x{8}"),
                    'b' | 'B' => return Err(unsupported(pattern, "a word boundary `\\b`")),
                    '1'..='9' => return Err(unsupported(pattern, "a backreference")),
                    'k' if chars.get(i) == Some(&'<') => {
                        return Err(unsupported(pattern, "a backreference"))
                    }
                    '0' => out.push_str("\\x{0}"),
                    'c' => match chars.get(i) {
                        Some(&l) if l.is_ascii_alphabetic() => {
                            out.push_str(&format!("\\x{{{:X}}}", (l as u32) % 32));
                            i += 1;
                        }
                        _ => out.push_str("\\\\c"),
                    },
                    'u' => {
                        if chars.get(i) == Some(&'{') {
                            let close = chars[i..].iter().position(|&c| c == '}');
                            let Some(close) = close else {
                                return Err(Diagnostic::global(format!(
                                    "invalid regex `{pattern}`: unclosed `\\u{{`"
                                )));
                            };
                            let digits: String = chars[i + 1..i + close].iter().collect();
                            out.push_str(&format!("\\x{{{digits}}}"));
                            i += close + 1;
                        } else {
                            let digits: String =
                                chars[i..(i + 4).min(chars.len())].iter().collect();
                            if digits.len() != 4 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
                                return Err(Diagnostic::global(format!(
                                    "invalid regex `{pattern}`: `\\u` needs four hex digits"
                                )));
                            }
                            i += 4;
                            let mut code = u32::from_str_radix(&digits, 16).unwrap_or(0);
                            // A surrogate pair written as two escapes stands for one character.
                            if (0xD800..0xDC00).contains(&code)
                                && chars.get(i) == Some(&'\\')
                                && chars.get(i + 1) == Some(&'u')
                            {
                                let low: String = chars
                                    [(i + 2).min(chars.len())..(i + 6).min(chars.len())]
                                    .iter()
                                    .collect();
                                if let Ok(low) = u32::from_str_radix(&low, 16) {
                                    if (0xDC00..0xE000).contains(&low) {
                                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                                        i += 6;
                                    }
                                }
                            }
                            if (0xD800..0xE000).contains(&code) {
                                return Err(unsupported(pattern, "a lone surrogate escape"));
                            }
                            out.push_str(&format!("\\x{{{code:X}}}"));
                        }
                    }
                    'p' | 'P' if chars.get(i) == Some(&'{') => {
                        // A Unicode property, `\p{Letter}`: its braces are no quantifier.
                        let Some(close) = chars[i..].iter().position(|&c| c == '}') else {
                            return Err(Diagnostic::global(format!(
                                "invalid regex `{pattern}`: unclosed `\\{n}{{`"
                            )));
                        };
                        out.push('\\');
                        out.push(n);
                        out.extend(&chars[i..=i + close]);
                        i += close + 1;
                    }
                    'x' | 'p' | 'P' | 't' | 'n' | 'r' | 'f' | 'v' => {
                        if n == 'v' {
                            out.push_str("\\x{B}");
                        } else {
                            out.push('\\');
                            out.push(n);
                        }
                    }
                    c if c.is_ascii_alphanumeric() => {
                        return Err(Diagnostic::global(format!(
                            "invalid regex `{pattern}`: unknown escape `\\{c}`"
                        )))
                    }
                    // An identity escape (`\/`, `\.`, `\-`, ...): the character itself.
                    c => out.push_str(&hex(c)),
                }
                continue;
            }
            '[' if !in_class => {
                // `[]` matches nothing and `[^]` any character in ECMA-262.
                if chars.get(i + 1) == Some(&']') {
                    out.push_str("[^\\x{0}-\\x{10FFFF}]");
                    i += 2;
                    continue;
                }
                if chars.get(i + 1) == Some(&'^') && chars.get(i + 2) == Some(&']') {
                    out.push_str("[\\x{0}-\\x{10FFFF}]");
                    i += 3;
                    continue;
                }
                in_class = true;
                out.push('[');
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                i += 1;
                continue;
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            // Characters that are set operators or nested classes in regex-syntax but
            // literal in an ECMA-262 class.
            '[' | '&' | '~' if in_class => out.push_str(&hex(c)),
            '.' if !in_class => out.push_str(&format!("[^{ECMA_LINE_TERMINATORS}]")),
            '(' if !in_class && chars.get(i + 1) == Some(&'?') => {
                let rest: String = chars[i + 2..(i + 4).min(chars.len())].iter().collect();
                if rest.starts_with('=')
                    || rest.starts_with('!')
                    || rest.starts_with("<=")
                    || rest.starts_with("<!")
                {
                    return Err(unsupported(pattern, "lookaround"));
                }
                out.push('(');
            }
            '{' if !in_class => {
                // A quantifier `{n}`, `{n,}` or `{n,m}`; otherwise a literal brace.
                let end = chars[i..].iter().position(|&c| c == '}');
                let body: Option<String> = end.map(|e| chars[i + 1..i + e].iter().collect());
                let is_quantifier = body.as_deref().is_some_and(|b| {
                    let mut parts = b.splitn(2, ',');
                    let lo = parts.next().unwrap_or("");
                    let hi = parts.next();
                    !lo.is_empty()
                        && lo.chars().all(|c| c.is_ascii_digit())
                        && hi.is_none_or(|h| h.chars().all(|c| c.is_ascii_digit()))
                });
                match (is_quantifier, end) {
                    (true, Some(e)) => {
                        out.extend(&chars[i..=i + e]);
                        i += e + 1;
                        continue;
                    }
                    _ => out.push_str(&hex('{')),
                }
            }
            '}' if !in_class => out.push_str(&hex('}')),
            '#' | ' ' if !in_class => out.push_str(&hex(c)),
            c => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

/// Lowers HIR to IR in one character encoding.
struct Lowering<'p> {
    encoding: CharEncoding,
    pattern: &'p str,
}

impl Lowering<'_> {
    /// The refusal of an anchor where no way of matching can hold it.
    fn anchor_refusal(&self) -> Diagnostic {
        unsupported(self.pattern, "an anchor inside the pattern")
    }

    /// Lowers the top of a pattern into the ways it can match, each with its anchors
    /// resolved (see [`Form`]).
    fn top(&self, hir: &Hir) -> Result<Vec<Form>, Diagnostic> {
        let forms = self.forms(hir)?;
        if forms.len() > MAX_FORMS {
            return Err(self.anchor_refusal());
        }
        Ok(forms)
    }

    /// The ways `hir` can match. A subexpression without anchors has one way, its lowered
    /// expression; `^` and `$` only mark the ways they begin or end, and a concatenation
    /// keeps a way only where its anchors can hold: `a$b` matches nothing, and in `x?^y`
    /// the `x?` must be empty.
    fn forms(&self, hir: &Hir) -> Result<Vec<Form>, Diagnostic> {
        if hir.properties().look_set().is_empty() {
            let nullable = hir.properties().minimum_len() == Some(0);
            return Ok(vec![Form::plain(vec![self.lower(hir)?], nullable)]);
        }
        Ok(match hir.kind() {
            HirKind::Look(look) if is_start(*look) => vec![Form::anchor(true, false)],
            HirKind::Look(look) if is_end(*look) => vec![Form::anchor(false, true)],
            HirKind::Capture(c) => self.forms(&c.sub)?,
            HirKind::Alternation(branches) => {
                let mut forms = Vec::new();
                for b in branches {
                    forms.extend(self.forms(b)?);
                    if forms.len() > MAX_FORMS {
                        return Err(self.anchor_refusal());
                    }
                }
                forms
            }
            HirKind::Concat(items) => {
                let mut forms = vec![Form::plain(Vec::new(), true)];
                for item in items {
                    let next = self.forms(item)?;
                    let mut joined = Vec::with_capacity(forms.len() * next.len());
                    for a in &forms {
                        joined.extend(next.iter().filter_map(|b| a.then(b)));
                    }
                    if joined.len() > MAX_FORMS {
                        return Err(self.anchor_refusal());
                    }
                    forms = joined;
                }
                forms
            }
            HirKind::Repetition(rep) => self.repeated_forms(rep)?,
            _ => return Err(self.anchor_refusal()),
        })
    }

    /// The ways a repetition of something with anchors can match: an iteration anchored
    /// at the start can only come first, one anchored at the end only last (the others
    /// there match nothing), and the ones between are the unanchored ways. Repetitions
    /// that must match twice or more, or at most a bounded number of times above one, are
    /// refused.
    fn repeated_forms(&self, rep: &regex_syntax::hir::Repetition) -> Result<Vec<Form>, Diagnostic> {
        let forms = self.forms(&rep.sub)?;
        if rep.max == Some(1) {
            let mut forms = forms;
            if rep.min == 0 {
                forms.push(Form::plain(Vec::new(), true));
            }
            return Ok(forms);
        }
        if rep.max.is_some() || rep.min > 1 {
            return Err(self.anchor_refusal());
        }
        let plain: Vec<&Form> = forms.iter().filter(|f| !f.start && !f.end).collect();
        let body = |min: u32| -> Option<Form> {
            if plain.is_empty() {
                return None;
            }
            let each = Expr::choice(plain.iter().map(|f| Expr::seq(f.body.clone())).collect());
            let nullable = min == 0 || plain.iter().any(|f| f.nullable);
            Some(Form::plain(vec![Expr::repeat(each, min, None)], nullable))
        };
        let middle = body(0).unwrap_or_else(|| Form::plain(Vec::new(), true));
        let none = Form::plain(Vec::new(), true);
        let firsts: Vec<&Form> =
            forms.iter().filter(|f| f.start && !f.end).chain(std::iter::once(&none)).collect();
        let lasts: Vec<&Form> =
            forms.iter().filter(|f| f.end && !f.start).chain(std::iter::once(&none)).collect();
        let mut out: Vec<Form> = Vec::new();
        for a in &firsts {
            for c in &lasts {
                if std::ptr::eq(*a, &none) && std::ptr::eq(*c, &none) {
                    if rep.min == 0 {
                        out.push(middle.clone());
                    } else {
                        out.extend(body(1));
                    }
                    continue;
                }
                if let Some(f) = a.then(&middle).and_then(|f| f.then(c)) {
                    out.push(f);
                }
            }
        }
        out.extend(forms.iter().filter(|f| f.start && f.end).cloned());
        Ok(out)
    }

    fn lower(&self, hir: &Hir) -> Result<Expr, Diagnostic> {
        Ok(match hir.kind() {
            HirKind::Empty => Expr::Empty,
            HirKind::Literal(lit) => {
                let text = std::str::from_utf8(&lit.0).map_err(|_| {
                    Diagnostic::global(format!("regex `{}` matches invalid UTF-8", self.pattern))
                })?;
                encode_literal(text, self.encoding)
            }
            HirKind::Class(Class::Unicode(class)) => {
                let cc = CharClass::new(false, class.ranges().iter().map(|r| (r.start(), r.end())));
                encode_class(&cc, self.encoding)
            }
            HirKind::Class(Class::Bytes(class)) => {
                if !class.is_ascii() {
                    return Err(Diagnostic::global(format!(
                        "regex `{}` matches bytes that are not characters",
                        self.pattern
                    )));
                }
                let cc = CharClass::new(
                    false,
                    class.ranges().iter().map(|r| (r.start() as char, r.end() as char)),
                );
                encode_class(&cc, self.encoding)
            }
            HirKind::Look(_) => {
                return Err(self.anchor_refusal());
            }
            HirKind::Repetition(rep) => {
                let sub = self.lower(&rep.sub)?;
                if is_never(&sub) {
                    if rep.min == 0 {
                        Expr::Empty
                    } else {
                        never()
                    }
                } else {
                    Expr::repeat(sub, rep.min, rep.max)
                }
            }
            HirKind::Capture(c) => self.lower(&c.sub)?,
            HirKind::Concat(items) => {
                let exprs: Vec<Expr> =
                    items.iter().map(|h| self.lower(h)).collect::<Result<_, _>>()?;
                if exprs.iter().any(is_never) {
                    never()
                } else {
                    Expr::seq(exprs)
                }
            }
            HirKind::Alternation(branches) => {
                let exprs: Vec<Expr> = branches
                    .iter()
                    .map(|h| self.lower(h))
                    .collect::<Result<Vec<_>, _>>()?
                    .into_iter()
                    .filter(|e| !is_never(e))
                    .collect();
                if exprs.is_empty() {
                    never()
                } else {
                    Expr::choice(exprs)
                }
            }
        })
    }
}

fn is_start(look: Look) -> bool {
    matches!(look, Look::Start)
}

fn is_end(look: Look) -> bool {
    matches!(look, Look::End)
}

/// Lowers `pattern` restricted to texts of `min..=max` characters (`max` `None`: no upper
/// bound), as JSON Schema's `pattern` together with `minLength`/`maxLength` asks.
/// Exact when the bounds follow from the pattern (they are dropped), contradict it (the
/// result matches nothing), or constrain its one variable-length part, a repetition of
/// something of fixed length (`^[a-z]+$` with `maxLength: 8` becomes `[a-z]{1,8}`; the
/// padding `.*` of an unanchored side counts as such a part). An alternation, at the top
/// of an unanchored pattern or between both anchors (`^(A|B)$`), is bounded branch by
/// branch. `Ok(None)` otherwise.
pub fn regex_to_ir_with_length(
    pattern: &str,
    opts: RegexOptions,
    min: u64,
    max: Option<u64>,
) -> Result<Option<Expr>, Diagnostic> {
    let hir = parse_pattern(pattern, opts.whole_match)?;
    let lowering = Lowering { encoding: opts.encoding, pattern };
    lowering.with_length(&hir, opts.whole_match, min, max)
}

/// A repetition of something of fixed length: the unit's length in characters, the
/// fewest and most repetitions, and the repeated expression.
type Repetition = (u64, u64, Option<u64>, Expr);

/// The items of a top-level concatenation without its leading start anchors and trailing
/// end anchors, and whether there were any.
fn concat_items(hir: &Hir) -> (&[Hir], bool, bool) {
    let mut items: &[Hir] = match hir.kind() {
        HirKind::Concat(items) => items,
        _ => std::slice::from_ref(hir),
    };
    let (mut start, mut end) = (false, false);
    while let Some(HirKind::Look(l)) = items.first().map(Hir::kind) {
        if !is_start(*l) {
            break;
        }
        start = true;
        items = &items[1..];
    }
    while let Some(HirKind::Look(l)) = items.last().map(Hir::kind) {
        if !is_end(*l) {
            break;
        }
        end = true;
        items = &items[..items.len() - 1];
    }
    (items, start, end)
}

/// One part of a top-level concatenation.
enum Part<'h> {
    Hir(&'h Hir),
    /// The `.*` of an unanchored side.
    AnyStar,
}

/// The fewest and most characters a text matching `hir` has (`None`: unbounded).
fn char_len(hir: &Hir) -> (u64, Option<u64>) {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => (0, Some(0)),
        HirKind::Literal(lit) => {
            let n = String::from_utf8_lossy(&lit.0).chars().count() as u64;
            (n, Some(n))
        }
        HirKind::Class(_) => (1, Some(1)),
        HirKind::Capture(c) => char_len(&c.sub),
        HirKind::Repetition(rep) => {
            let (lo, hi) = char_len(&rep.sub);
            let max = match (rep.max, hi) {
                (_, Some(0)) => Some(0),
                (Some(m), Some(h)) => Some(u64::from(m).saturating_mul(h)),
                _ => None,
            };
            (u64::from(rep.min).saturating_mul(lo), max)
        }
        HirKind::Concat(items) => items.iter().map(char_len).fold((0, Some(0)), |a, b| {
            (a.0.saturating_add(b.0), a.1.zip(b.1).map(|(x, y)| x.saturating_add(y)))
        }),
        HirKind::Alternation(branches) => {
            let lens: Vec<_> = branches.iter().map(char_len).collect();
            let lo = lens.iter().map(|l| l.0).min().unwrap_or(0);
            let hi = lens.iter().try_fold(0u64, |acc, l| l.1.map(|h| acc.max(h)));
            (lo, hi)
        }
    }
}

impl Lowering<'_> {
    /// The union of `branches` each bounded by [`Lowering::with_length`] (`whole_match`:
    /// each between both anchors); `None` when one of them is not.
    fn branches_with_length(
        &self,
        branches: &[Hir],
        whole_match: bool,
        min: u64,
        max: Option<u64>,
    ) -> Result<Option<Expr>, Diagnostic> {
        let mut alts = Vec::new();
        for b in branches {
            match self.with_length(b, whole_match, min, max)? {
                Some(e) => alts.push(e),
                None => return Ok(None),
            }
        }
        alts.retain(|e| !is_never(e));
        Ok(Some(if alts.is_empty() { never() } else { Expr::choice(alts) }))
    }

    fn with_length(
        &self,
        hir: &Hir,
        whole_match: bool,
        min: u64,
        max: Option<u64>,
    ) -> Result<Option<Expr>, Diagnostic> {
        match hir.kind() {
            HirKind::Capture(c) => return self.with_length(&c.sub, whole_match, min, max),
            HirKind::Alternation(branches) if !whole_match => {
                return self.branches_with_length(branches, false, min, max);
            }
            _ => {}
        }
        let (items, start, end) = concat_items(hir);
        let (start, end) = (start || whole_match, end || whole_match);
        if let ([item], true, true) = (items, start, end) {
            // `^(A|B)$` is `^A$|^B$`: each branch bounded on its own (the slug pattern
            // `^([\w-]|[\w-][\w/-]*[\w-])$` under `maxLength`: one variable part per
            // branch, a repetition whose count the bound caps).
            let mut h = item;
            while let HirKind::Capture(c) = h.kind() {
                h = &c.sub;
            }
            if let HirKind::Alternation(branches) = h.kind() {
                // A branch not bounded so (or not lowered: an anchor inside it) leaves the
                // whole pattern to the caller's other ways.
                return Ok(self.branches_with_length(branches, true, min, max).ok().flatten());
            }
        }
        let mut parts: Vec<Part<'_>> = Vec::new();
        if !start {
            parts.push(Part::AnyStar);
        }
        parts.extend(items.iter().map(Part::Hir));
        if !end {
            parts.push(Part::AnyStar);
        }
        let lens: Vec<(u64, Option<u64>)> = parts
            .iter()
            .map(|p| match p {
                Part::Hir(h) => char_len(h),
                Part::AnyStar => (0, None),
            })
            .collect();
        let lo: u64 = lens.iter().fold(0u64, |a, l| a.saturating_add(l.0));
        let hi: Option<u64> = lens.iter().try_fold(0u64, |a, l| l.1.map(|h| a.saturating_add(h)));
        if hi.is_some_and(|h| h < min) || max.is_some_and(|m| lo > m) {
            return Ok(Some(never()));
        }
        let lower_parts = |this: &Self, special: Vec<(usize, Expr)>| -> Result<Expr, Diagnostic> {
            let mut out = Vec::with_capacity(parts.len());
            for (i, p) in parts.iter().enumerate() {
                if let Some((_, e)) = special.iter().find(|(k, _)| *k == i) {
                    out.push(e.clone());
                    continue;
                }
                out.push(match p {
                    Part::Hir(h) => this.lower(h)?,
                    Part::AnyStar => Expr::star(any_char(this.encoding)),
                });
            }
            Ok(if out.iter().any(is_never) { never() } else { Expr::seq(out) })
        };
        let implied = lo >= min
            && match (hi, max) {
                (_, None) => true,
                (Some(h), Some(m)) => h <= m,
                (None, Some(_)) => false,
            };
        if implied {
            return lower_parts(self, Vec::new()).map(Some);
        }
        let variable: Vec<usize> =
            (0..parts.len()).filter(|&i| lens[i].1 != Some(lens[i].0)).collect();
        // A variable part as a repetition of something of fixed length:
        // (unit length, min count, max count, the repeated expression).
        let repetition = |i: usize| -> Result<Option<Repetition>, Diagnostic> {
            match &parts[i] {
                Part::AnyStar => Ok(Some((1, 0, None, any_char(self.encoding)))),
                Part::Hir(h) => {
                    let mut h: &Hir = h;
                    while let HirKind::Capture(c) = h.kind() {
                        h = &c.sub;
                    }
                    let HirKind::Repetition(rep) = h.kind() else { return Ok(None) };
                    let (ulo, uhi) = char_len(&rep.sub);
                    if uhi != Some(ulo) || ulo == 0 {
                        return Ok(None);
                    }
                    let body = self.lower(&rep.sub)?;
                    Ok(Some((ulo, u64::from(rep.min), rep.max.map(u64::from), body)))
                }
            }
        };
        if max == Some(lo) {
            // No room to grow: every variable part at its fewest repetitions.
            let mut pinned = Vec::new();
            for &i in &variable {
                let Some((_, m, _, body)) = repetition(i)? else { return Ok(None) };
                let Ok(m) = u32::try_from(m) else { return Ok(None) };
                pinned.push((i, Expr::repeat(body, m, Some(m))));
            }
            return lower_parts(self, pinned).map(Some);
        }
        let [k] = variable[..] else { return Ok(None) };
        // The one variable part: a repetition of something of fixed length `unit`.
        let Some((unit, rep_min, rep_max, body)) = repetition(k)? else { return Ok(None) };
        let fixed = lo - rep_min * unit;
        let n_min = min.saturating_sub(fixed).div_ceil(unit).max(rep_min);
        let n_max = match (max.map(|m| m.saturating_sub(fixed) / unit), rep_max) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if max.is_some_and(|m| m < fixed) || n_max.is_some_and(|n| n < n_min) {
            return Ok(Some(never()));
        }
        let (Ok(n_min), Ok(n_max)) = (u32::try_from(n_min), n_max.map(u32::try_from).transpose())
        else {
            return Ok(None);
        };
        lower_parts(self, vec![(k, Expr::repeat(body, n_min, n_max))]).map(Some)
    }
}

/// The texts that JSON Schema's `pattern` (a search: unanchored unless `^`/`$` say
/// otherwise) does *not* match, for the shapes where a grammar states that exactly:
/// - a pattern that matches the empty string somewhere matches every text: nothing;
/// - `^C{m,n}$` (a class repeated): a character outside `C`, or too few or too many;
/// - `C`, `C+` or `C{1,n}` unanchored: no character of `C` at all;
/// - `^literal` (a prefix): texts that do not start with it.
///
/// `Ok(None)` for other shapes.
pub fn regex_complement(pattern: &str, encoding: CharEncoding) -> Result<Option<Expr>, Diagnostic> {
    let hir = parse_pattern(pattern, false)?;
    let mut h: &Hir = &hir;
    while let HirKind::Capture(c) = h.kind() {
        h = &c.sub;
    }
    let (items, start, end) = concat_items(h);
    if items.iter().any(|i| matches!(i.kind(), HirKind::Look(_))) {
        return Ok(None);
    }
    let any = || any_char(encoding);
    if !start && !end && items.iter().all(|i| char_len(i).0 == 0) {
        // Matches the empty string at position 0 of every text.
        return Ok(Some(never()));
    }
    let class_of = |h: &Hir| -> Option<CharClass> {
        let mut h = h;
        while let HirKind::Capture(c) = h.kind() {
            h = &c.sub;
        }
        match h.kind() {
            HirKind::Class(Class::Unicode(c)) => {
                Some(CharClass::new(false, c.ranges().iter().map(|r| (r.start(), r.end()))))
            }
            HirKind::Class(Class::Bytes(c)) if c.is_ascii() => Some(CharClass::new(
                false,
                c.ranges().iter().map(|r| (r.start() as char, r.end() as char)),
            )),
            HirKind::Literal(lit) => {
                let text = std::str::from_utf8(&lit.0).ok()?;
                let mut chars = text.chars();
                let c = chars.next()?;
                chars.next().is_none().then(|| CharClass::new(false, [(c, c)]))
            }
            _ => None,
        }
    };
    let outside = |c: &CharClass| {
        let full = [('\0', char::MAX)];
        let rest = subtract(&full, &c.ranges);
        encode_class(&CharClass::new(false, rest), encoding)
    };
    // A class, repeated: (class, min, max).
    let repeated = |h: &Hir| -> Option<(CharClass, u32, Option<u32>)> {
        let mut h = h;
        while let HirKind::Capture(c) = h.kind() {
            h = &c.sub;
        }
        match h.kind() {
            HirKind::Repetition(rep) => Some((class_of(&rep.sub)?, rep.min, rep.max)),
            _ => Some((class_of(h)?, 1, Some(1))),
        }
    };
    match (start, end, items) {
        (true, true, [one]) => {
            let Some((class, min, max)) = repeated(one) else { return Ok(None) };
            let inside = encode_class(&class, encoding);
            let mut alts =
                vec![Expr::seq(vec![Expr::star(any()), outside(&class), Expr::star(any())])];
            if min > 0 {
                alts.push(Expr::repeat(inside.clone(), 0, Some(min - 1)));
            }
            if let Some(m) = max {
                alts.push(Expr::repeat(inside, m.saturating_add(1), None));
            }
            Ok(Some(Expr::choice(alts)))
        }
        (false, false, [one]) => match repeated(one) {
            Some((class, 1, _)) => Ok(Some(Expr::star(outside(&class)))),
            _ => Ok(None),
        },
        (true, false, items) => {
            let mut prefix = String::new();
            for i in items {
                match i.kind() {
                    HirKind::Literal(lit) => match std::str::from_utf8(&lit.0) {
                        Ok(t) => prefix.push_str(t),
                        Err(_) => return Ok(None),
                    },
                    _ => return Ok(None),
                }
            }
            if prefix.is_empty() {
                return Ok(Some(never()));
            }
            // Shorter than the prefix, or a first difference.
            let chars: Vec<char> = prefix.chars().collect();
            let mut alts = Vec::new();
            for (i, &c) in chars.iter().enumerate() {
                let head: String = chars[..i].iter().collect();
                let head = encode_literal(&head, encoding);
                let other = CharClass::new(false, [(c, c)]);
                alts.push(head.clone());
                alts.push(Expr::seq(vec![head, outside(&other), Expr::star(any())]));
            }
            Ok(Some(Expr::choice(alts)))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_ecma_escapes() {
        assert_eq!(ecma_to_regex_syntax("\\d").unwrap(), "[0-9]");
        assert_eq!(ecma_to_regex_syntax("[\\w-]").unwrap(), "[0-9A-Za-z_-]");
        assert_eq!(ecma_to_regex_syntax("a{").unwrap(), "a\\x{7B}");
        assert_eq!(ecma_to_regex_syntax("a{2,3}").unwrap(), "a{2,3}");
        assert_eq!(ecma_to_regex_syntax("\\/").unwrap(), "\\x{2F}");
    }

    #[test]
    fn refuses_lookaround_and_backreferences() {
        for p in ["(?=a)", "(?!a)", "(?<=a)b", "(a)\\1", "\\bx"] {
            let e = parse_regex(p).unwrap_err();
            assert_eq!(e.0[0].category, Category::Unsupported, "{p}");
        }
    }

    #[test]
    fn a_search_drops_the_ends_that_may_match_nothing() {
        let core = |p: &str| search_core(parse_hir(p).unwrap());
        let hir = |p: &str| parse_hir(p).unwrap();
        assert_eq!(core(r"\d+\.\d+\.\d+-?.*"), hir(r"\d+\.\d+\.\d+"));
        assert_eq!(core("(.*foo(bar)?)"), hir("foo"));
        assert_eq!(core("^a.*"), hir("^a"));
        // An anchor stops the trimming; a pattern that may match nothing stays whole.
        assert_eq!(core("a.*$"), hir("a.*$"));
        assert_eq!(core("x*y?"), hir("x*y?"));
    }

    #[test]
    fn json_encoding_escapes_quotes() {
        let e = encode_literal("a\"b", CharEncoding::JsonString);
        assert_eq!(
            e,
            Expr::Seq(vec![Expr::literal("a"), Expr::literal("\\\""), Expr::literal("b")])
        );
    }
}
