//! The GBNF (llama.cpp) and EBNF (XGrammar) frontends: text → [`Grammar`] IR.
//!
//! Parsing goes one rule at a time with the pest grammar in `gbnf.pest`: when a rule
//! fails to parse, the error is recorded and parsing resumes at the next line that starts
//! a rule (`NAME ::=`), so one run reports every syntax error of a file. The parse tree of
//! each rule is then lowered to the IR with [`GrammarBuilder`]; rules are numbered in
//! order of first appearance (definition or reference). Finally the IR-level checks of
//! [`crate::validate`] run (rules that never finish, unreachable rules).
//!
//! The two dialects share one syntax; EBNF adds lookahead assertions `rule ::= body (= la)`,
//! the `\e` escape and dots inside rule names (in GBNF, `a.b` is `a`, any character, `b`).
//!
//! Grouping is kept as written (`("a" "b") "c"` is a sequence of a sequence and a string);
//! parentheses around a single item vanish. Hence `parse(print(ir)) == ir` up to spans.
//!
//! ```
//! use grammask_syntax::{parse_gbnf, Expr};
//! let parsed = parse_gbnf("root ::= \"a\" | digit+\ndigit ::= [0-9]\n").unwrap();
//! assert_eq!(parsed.grammar.rules.len(), 2);
//! assert!(parse_gbnf("root ::= root \"x\"").is_err()); // never finishes
//! ```

use crate::diagnostic::{Category, Diagnostic, Diagnostics};
use crate::ir::{CharClass, Expr, Grammar, GrammarBuilder, RuleId, Span, TokenSet};
use pest::iterators::Pair;
use pest::Parser;
use rustc_hash::FxHashMap as HashMap;

/// The pest parser generated from `gbnf.pest`.
mod syntax {
    #![allow(missing_docs)]

    #[derive(pest_derive::Parser)]
    #[grammar = "gbnf.pest"]
    pub(super) struct GbnfParser;
}
use syntax::{GbnfParser, Rule};

/// Deepest nesting of parentheses and repetition operators accepted. The parser and the
/// IR are recursive structures: deeper input is refused with an error instead of risking
/// a stack overflow.
pub const MAX_NESTING: usize = 1000;

/// Which grammar language the text is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Dialect {
    /// llama.cpp's GBNF.
    #[default]
    Gbnf,
    /// XGrammar's EBNF: GBNF plus lookahead assertions, `\e` and dotted rule names.
    Ebnf,
}

/// How to read a grammar.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// The grammar language.
    pub dialect: Dialect,
    /// The name of the root rule.
    pub root: String,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions { dialect: Dialect::Gbnf, root: "root".to_string() }
    }
}

/// A grammar read successfully, with the warnings found on the way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The grammar IR.
    pub grammar: Grammar,
    /// Warnings (unreachable rules, ...), in source order.
    pub warnings: Vec<Diagnostic>,
}

/// Looks a token up by its text (`<think>`, brackets included): its id, or `None` when the
/// vocabulary has no such token.
pub type TokenByText<'t> = &'t (dyn Fn(&str) -> Option<u32> + Sync);

/// Reads a grammar in the dialect of `opts`; on failure, every error found (and the
/// warnings), in source order. Tokens by text (`<think>`) need a vocabulary: see
/// [`parse_grammar_with_tokens`].
pub fn parse_grammar(src: &str, opts: &ParseOptions) -> Result<Parsed, Diagnostics> {
    parse_grammar_tokens(src, opts, None)
}

/// Reads a grammar as [`parse_grammar`] does, with tokens by text (`<think>`, `!<think>`,
/// as llama.cpp writes a token of its vocabulary) looked up by `token_id`; a text no token
/// has is an error at its position.
pub fn parse_grammar_with_tokens(
    src: &str,
    opts: &ParseOptions,
    token_id: TokenByText<'_>,
) -> Result<Parsed, Diagnostics> {
    parse_grammar_tokens(src, opts, Some(token_id))
}

fn parse_grammar_tokens(
    src: &str,
    opts: &ParseOptions,
    token_id: Option<TokenByText<'_>>,
) -> Result<Parsed, Diagnostics> {
    let depth = check_nesting(src).map_err(Diagnostics::one)?;
    if depth > SHALLOW_NESTING {
        // The parser recurses per nesting level: give deep input a stack of its own.
        let result = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(DEEP_STACK_BYTES)
                .spawn_scoped(scope, || parse_checked(src, opts, token_id))
                .ok()
                .map(|handle| handle.join())
        });
        match result {
            Some(Ok(parsed)) => return parsed,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => {}
        }
    }
    parse_checked(src, opts, token_id)
}

/// Nesting up to which parsing runs on the caller's stack.
const SHALLOW_NESTING: usize = 64;
/// Stack for parsing input nested up to [`MAX_NESTING`] levels (reserved, not committed).
const DEEP_STACK_BYTES: usize = 256 << 20;

/// Parses `src`, whose nesting depth was checked.
fn parse_checked(
    src: &str,
    opts: &ParseOptions,
    token_id: Option<TokenByText<'_>>,
) -> Result<Parsed, Diagnostics> {
    let mut lowerer = Lowerer::new(src, opts.dialect, token_id);
    let bom = if src.starts_with('\u{FEFF}') { '\u{FEFF}'.len_utf8() } else { 0 };
    let mut pos = skip_blank(src, bom);
    while pos < src.len() {
        match GbnfParser::parse(Rule::rule_def, &src[pos..]) {
            Ok(mut pairs) => match pairs.next() {
                Some(pair) => {
                    let end = pos + pair.as_span().end();
                    lowerer.rule(pair, pos);
                    // Zero-width matches cannot happen (a rule has a name), but never loop.
                    pos = skip_blank(src, end.max(pos + 1));
                }
                None => break,
            },
            Err(err) => {
                let next = next_rule_start(src, pos);
                lowerer.syntax_error(&err, pos, next);
                pos = skip_blank(src, next);
            }
        }
    }
    lowerer.finish(&opts.root)
}

/// Reads a GBNF grammar (llama.cpp's dialect) whose root rule is `root`.
pub fn parse_gbnf(src: &str) -> Result<Parsed, Diagnostics> {
    parse_grammar(src, &ParseOptions::default())
}

/// Reads an EBNF grammar (XGrammar's dialect) whose root rule is `root`.
pub fn parse_ebnf(src: &str) -> Result<Parsed, Diagnostics> {
    parse_grammar(src, &ParseOptions { dialect: Dialect::Ebnf, ..ParseOptions::default() })
}

/// Skips spaces, line breaks and comments from `pos`.
fn skip_blank(src: &str, mut pos: usize) -> usize {
    let bytes = src.as_bytes();
    while pos < bytes.len() {
        match bytes[pos] {
            b' ' | b'\t' | b'\r' | b'\n' => pos += 1,
            b'#' => {
                while pos < bytes.len() && bytes[pos] != b'\n' && bytes[pos] != b'\r' {
                    pos += 1;
                }
            }
            _ => break,
        }
    }
    pos
}

/// The start of the first line after the line holding `pos` that starts a rule
/// (`NAME ::=`), or the end of `src`.
fn next_rule_start(src: &str, pos: usize) -> usize {
    let mut line = pos;
    loop {
        match src[line..].find('\n') {
            Some(i) => line += i + 1,
            None => return src.len(),
        }
        if GbnfParser::parse(Rule::rule_start, &src[line..]).is_ok() {
            return line;
        }
    }
}

/// The nesting depth of `src` (parentheses plus repetition operators applied to them);
/// refuses input nested deeper than [`MAX_NESTING`] before the recursive parser sees it.
fn check_nesting(src: &str) -> Result<usize, Diagnostic> {
    let bytes = src.as_bytes();
    // For each open parenthesis: the deepest item inside it so far.
    let mut levels: Vec<usize> = vec![0];
    // Depth of the last item at the current level, which a postfix operator wraps.
    let mut last = 0usize;
    let mut deepest = 0;
    let mut i = 0;
    let too_deep = |at: usize| {
        Diagnostic::error(
            Span::new(at, at + 1),
            format!("grammar nested too deeply (more than {MAX_NESTING} levels)"),
        )
        .with_category(Category::Limit("max_nesting"))
    };
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'[' => {
                let close = if b == b'"' { b'"' } else { b']' };
                i += 1;
                while i < bytes.len() && bytes[i] != close && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                last = 0;
            }
            b'(' => {
                if levels.len() > MAX_NESTING {
                    return Err(too_deep(i));
                }
                levels.push(0);
                last = 0;
            }
            b')' => {
                if levels.len() > 1 {
                    last = levels.pop().unwrap_or(0) + 1;
                } else {
                    last = 0;
                }
            }
            b'*' | b'+' | b'?' | b'{' => {
                last += 1;
                if b == b'{' {
                    while i < bytes.len() && bytes[i] != b'}' && bytes[i] != b'\n' {
                        i += 1;
                    }
                }
            }
            b' ' | b'\t' | b'\r' => {}
            _ => last = 0,
        }
        let depth = levels.len() - 1 + last;
        if depth > MAX_NESTING {
            return Err(too_deep(i.min(bytes.len().saturating_sub(1))));
        }
        deepest = deepest.max(depth);
        if let Some(top) = levels.last_mut() {
            *top = (*top).max(last);
        }
        i += 1;
    }
    Ok(deepest)
}

/// Lowers parse trees to the IR and collects diagnostics.
struct Lowerer<'s> {
    src: &'s str,
    dialect: Dialect,
    /// Looks tokens by text up, when a vocabulary is at hand.
    token_id: Option<TokenByText<'s>>,
    builder: GrammarBuilder,
    diagnostics: Vec<Diagnostic>,
    /// Where each rule was first referred to (for "undefined rule").
    first_reference: HashMap<RuleId, Span>,
    /// Where each rule was defined.
    definitions: HashMap<RuleId, Span>,
    /// Whether some rule failed to parse (then unreachable-rule warnings are noise).
    syntax_errors: bool,
    /// Rule names by id.
    names: Vec<String>,
}

impl<'s> Lowerer<'s> {
    fn new(src: &'s str, dialect: Dialect, token_id: Option<TokenByText<'s>>) -> Self {
        Lowerer {
            src,
            dialect,
            token_id,
            builder: GrammarBuilder::new(),
            diagnostics: Vec::new(),
            first_reference: HashMap::default(),
            definitions: HashMap::default(),
            syntax_errors: false,
            names: Vec::new(),
        }
    }

    fn error(&mut self, span: Span, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::error(span, message));
    }

    /// The absolute span of `pair`, parsed from `src[offset..]`.
    fn span(pair: &Pair<'_, Rule>, offset: usize) -> Span {
        let s = pair.as_span();
        Span::new(offset + s.start(), offset + s.end())
    }

    /// Lowers one `rule_def`.
    fn rule(&mut self, pair: Pair<'_, Rule>, offset: usize) {
        let mut name_span = Span::default();
        let mut name = String::new();
        let mut body = Expr::Empty;
        let mut body_end = offset;
        let mut lookahead = None;
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::name => {
                    name_span = Self::span(&part, offset);
                    name = part.as_str().to_string();
                    // Declared before the body: rules are numbered by first appearance.
                    self.declare(&name);
                }
                Rule::alternates_top => {
                    body_end = Self::span(&part, offset).end;
                    body = self.alternates(part, offset);
                }
                Rule::lookahead => {
                    let span = Self::span(&part, offset);
                    body_end = span.end;
                    if self.dialect == Dialect::Gbnf {
                        self.error(
                            span,
                            "lookahead assertions `(= ...)` are only supported in EBNF",
                        );
                    }
                    let inner = part.into_inner().find(|p| p.as_rule() == Rule::alternates);
                    lookahead = inner.map(|p| self.alternates(p, offset));
                }
                Rule::rule_end => self.check_rule_end(&part, offset),
                _ => {}
            }
        }
        if self.dialect == Dialect::Gbnf {
            if let Some(dot) = name.find('.') {
                let at = name_span.start + dot;
                self.error(Span::new(at, at + 1), "expected `::=` after rule name");
            }
        }
        let id = self.declare(&name);
        if let Some(first) = self.definitions.get(&id) {
            let first = crate::diagnostic::LineCol::of(self.src, first.start);
            self.error(
                name_span,
                format!(
                    "duplicate rule `{name}` (first defined at {}:{})",
                    first.line, first.column
                ),
            );
            return;
        }
        self.definitions.insert(id, name_span);
        self.builder.define_at(id, body, lookahead, Span::new(name_span.start, body_end));
    }

    /// A rule may end where the next one starts only when a line break separates them.
    fn check_rule_end(&mut self, pair: &Pair<'_, Rule>, offset: usize) {
        let at = Self::span(pair, offset).start;
        let is_next_rule = pair.clone().into_inner().any(|p| p.as_rule() == Rule::rule_next);
        if !is_next_rule {
            return;
        }
        let before = self.src[..at].trim_end_matches([' ', '\t']);
        if !before.ends_with('\n') && !before.ends_with('\r') {
            self.syntax_errors = true;
            let found = describe_found(self.src, at);
            self.error(
                Span::new(at, at + 1),
                format!("expected newline or end of input, found {found}"),
            );
        }
    }

    fn alternates(&mut self, pair: Pair<'_, Rule>, offset: usize) -> Expr {
        let alternatives: Vec<Expr> = pair.into_inner().map(|p| self.sequence(p, offset)).collect();
        if alternatives.is_empty() {
            Expr::Empty
        } else {
            Expr::choice(alternatives)
        }
    }

    fn sequence(&mut self, pair: Pair<'_, Rule>, offset: usize) -> Expr {
        let mut items = Vec::new();
        for item in pair.into_inner() {
            self.item(item, offset, &mut items);
        }
        Expr::seq(items)
    }

    /// Lowers an item (a primary and its postfix operators) onto `out`.
    fn item(&mut self, pair: Pair<'_, Rule>, offset: usize, out: &mut Vec<Expr>) {
        let mut parts = pair.into_inner();
        let Some(primary) = parts.next() else { return };
        self.primary(primary, offset, out);
        for op in parts {
            // Operators apply to the last expression (in GBNF `a.b*` is `a . b*`).
            let Some(last) = out.pop() else { return };
            let wrapped = match op.as_rule() {
                Rule::star => Expr::star(last),
                Rule::plus => Expr::plus(last),
                Rule::question => Expr::optional(last),
                Rule::braces => match self.braces(op, offset) {
                    Some((min, max)) => Expr::repeat(last, min, max),
                    None => last,
                },
                _ => last,
            };
            out.push(wrapped);
        }
    }

    /// The bounds of `{m}`, `{m,}`, `{m,n}`, `{,n}`; `None` after reporting an error.
    fn braces(&mut self, pair: Pair<'_, Rule>, offset: usize) -> Option<(u32, Option<u32>)> {
        let span = Self::span(&pair, offset);
        let mut min = 0;
        let mut max = None;
        let mut ok = true;
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::count_exact => {
                    let n = self.number(part, offset);
                    ok &= n.is_some();
                    min = n.unwrap_or(0);
                    max = Some(min);
                }
                Rule::count_range => {
                    for bound in part.into_inner() {
                        let is_min = bound.as_rule() == Rule::count_min;
                        let n = self.number(bound, offset);
                        ok &= n.is_some();
                        if is_min {
                            min = n.unwrap_or(0);
                        } else {
                            max = n;
                        }
                    }
                }
                _ => {}
            }
        }
        if !ok {
            return None;
        }
        if let Some(max) = max {
            if min > max {
                self.error(
                    span,
                    format!("repetition bounds out of order: `{}`", pair_text(self.src, span)),
                );
                return None;
            }
        }
        Some((min, max))
    }

    /// `%json{...}`: the schema converted with the default options, its rules embedded;
    /// a schema error is reported at the schema's text with its JSON pointer.
    fn json_embed(&mut self, pair: Pair<'_, Rule>, offset: usize) -> Expr {
        let span = Self::span(&pair, offset);
        let text = pair.as_str().strip_prefix("%json").unwrap_or_default();
        let value: serde_json::Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                self.error(span, format!("the schema of `%json` is not valid JSON: {e}"));
                return Expr::Empty;
            }
        };
        match crate::json_schema_to_grammar(&value, &crate::JsonSchemaOptions::default()) {
            Ok(converted) => {
                let first = self.builder.rule_count();
                let prefix = self.builder.fresh_name("json-schema");
                let root = self.builder.embed(&converted.grammar, &prefix);
                for i in first..self.builder.rule_count() {
                    self.names.push(self.builder.name(RuleId::new(i)).to_string());
                }
                Expr::Rule(root)
            }
            Err(diagnostics) => {
                for d in diagnostics.0 {
                    let at = d.pointer.as_deref().unwrap_or("/");
                    let message = format!("in the schema of `%json`, at {at}: {}", d.message);
                    let mut e = Diagnostic::error(span, message).with_category(d.category);
                    e.severity = d.severity;
                    self.diagnostics.push(e);
                }
                Expr::Empty
            }
        }
    }

    /// A repetition count (`count_exact`, `count_min`, `count_max` wrap a `number`).
    fn number(&mut self, pair: Pair<'_, Rule>, offset: usize) -> Option<u32> {
        let span = Self::span(&pair, offset);
        match pair.as_str().parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                self.error(span, format!("repetition count too large (at most {})", u32::MAX));
                None
            }
        }
    }

    fn primary(&mut self, pair: Pair<'_, Rule>, offset: usize, out: &mut Vec<Expr>) {
        let span = Self::span(&pair, offset);
        match pair.as_rule() {
            Rule::string => {
                let mut text = String::new();
                for part in pair.into_inner() {
                    match part.as_rule() {
                        Rule::escape => {
                            if let Some(c) = self.escape(&part, offset) {
                                text.push(c);
                            }
                        }
                        _ => text.push_str(part.as_str()),
                    }
                }
                out.push(Expr::literal(&text));
            }
            Rule::unterminated_string => {
                self.syntax_errors = true;
                self.error(Span::new(span.start, span.start + 1), "unterminated string");
                out.push(Expr::Empty);
            }
            Rule::class => out.push(self.class(pair, offset)),
            Rule::unterminated_class => {
                self.syntax_errors = true;
                self.error(Span::new(span.start, span.start + 1), "unterminated character class");
                out.push(Expr::Empty);
            }
            Rule::group => {
                let inner = pair.into_inner().find(|p| p.as_rule() == Rule::alternates);
                out.push(inner.map_or(Expr::Empty, |p| self.alternates(p, offset)));
            }
            Rule::json_embed => out.push(self.json_embed(pair, offset)),
            Rule::any_char => out.push(Expr::Class(CharClass::any())),
            Rule::token_ref => out.push(self.tokens(pair, offset)),
            Rule::token_text => out.push(self.token_text(pair.as_str(), span)),
            Rule::reference => {
                let name = pair.as_str();
                if self.dialect == Dialect::Gbnf && name.contains('.') {
                    // `a.b` in GBNF: rule `a`, any character, rule `b`.
                    let mut at = span.start;
                    for (i, part) in name.split('.').enumerate() {
                        if i > 0 {
                            out.push(Expr::Class(CharClass::any()));
                            at += 1;
                        }
                        out.push(self.reference(part, Span::new(at, at + part.len())));
                        at += part.len();
                    }
                } else {
                    out.push(self.reference(name, span));
                }
            }
            _ => out.push(Expr::Empty),
        }
    }

    fn reference(&mut self, name: &str, span: Span) -> Expr {
        let id = self.declare(name);
        self.first_reference.entry(id).or_insert(span);
        Expr::Rule(id)
    }

    fn class(&mut self, pair: Pair<'_, Rule>, offset: usize) -> Expr {
        let mut negated = false;
        let mut ranges = Vec::new();
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::negation => negated = true,
                Rule::class_item => {
                    let span = Self::span(&part, offset);
                    let chars: Vec<Option<char>> =
                        part.into_inner().map(|c| self.class_char(c, offset)).collect();
                    match chars.as_slice() {
                        [Some(c)] => ranges.push((*c, *c)),
                        [Some(lo), Some(hi)] => {
                            if lo > hi {
                                // Kept (swapped) so that the class is not reported empty too.
                                ranges.push((*hi, *lo));
                                self.error(
                                    span,
                                    format!(
                                        "character range out of order: `{}`",
                                        pair_text(self.src, span)
                                    ),
                                );
                            } else {
                                ranges.push((*lo, *hi));
                            }
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        Expr::Class(CharClass::new(negated, ranges))
    }

    fn class_char(&mut self, pair: Pair<'_, Rule>, offset: usize) -> Option<char> {
        let inner = pair.into_inner().next()?;
        match inner.as_rule() {
            Rule::escape => self.escape(&inner, offset),
            _ => inner.as_str().chars().next(),
        }
    }

    /// The character an escape sequence stands for; `None` after reporting an error.
    fn escape(&mut self, pair: &Pair<'_, Rule>, offset: usize) -> Option<char> {
        let span = Self::span(pair, offset);
        let text = pair.as_str();
        let body = text.get(1..).unwrap_or("");
        let mut chars = body.chars();
        let kind = chars.next()?;
        let hex = chars.as_str();
        let digits = match kind {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        if digits > 0 {
            if hex.len() != digits {
                self.error(
                    span,
                    format!("invalid escape `\\{kind}`: expected {digits} hexadecimal digits"),
                );
                return None;
            }
            let value = u32::from_str_radix(hex, 16).ok();
            return match value.and_then(char::from_u32) {
                Some(c) => Some(c),
                None => {
                    self.error(
                        span,
                        format!("escape `{text}` is not a Unicode scalar value (a surrogate or above U+10FFFF)"),
                    );
                    None
                }
            };
        }
        let c = match kind {
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            '\\' | '"' | '[' | ']' | '-' => kind,
            'e' if self.dialect == Dialect::Ebnf => '\u{1b}',
            _ => {
                self.error(span, format!("unknown escape `{text}`"));
                return None;
            }
        };
        Some(c)
    }

    /// `<think>` or `!<think>`: the token whose text is `<think>` (or any other one token).
    fn token_text(&mut self, written: &str, span: Span) -> Expr {
        let (negated, text) = match written.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, written),
        };
        let Some(token_id) = self.token_id else {
            self.diagnostics.push(
                Diagnostic::error(
                    span,
                    format!(
                        "a token by its text (`{written}`) needs a vocabulary: compile the \
                         grammar for one, or write the token id, `<[id]>`"
                    ),
                )
                .with_category(Category::Unsupported),
            );
            return Expr::Empty;
        };
        match token_id(text) {
            Some(id) => Expr::Tokens(TokenSet { negated, ids: vec![id].into() }),
            None => {
                self.error(span, format!("the vocabulary has no token `{text}`"));
                Expr::Empty
            }
        }
    }

    fn tokens(&mut self, pair: Pair<'_, Rule>, offset: usize) -> Expr {
        let mut negated = false;
        let mut ids = Vec::new();
        for part in pair.into_inner() {
            match part.as_rule() {
                Rule::token_negation => negated = true,
                Rule::token_id => match part.as_str().parse::<u32>() {
                    Ok(id) => ids.push(id),
                    Err(_) => {
                        let span = Self::span(&part, offset);
                        self.error(span, format!("token id too large (at most {})", u32::MAX));
                    }
                },
                _ => {}
            }
        }
        ids.sort_unstable();
        ids.dedup();
        Expr::Tokens(TokenSet { negated, ids: ids.into() })
    }

    /// Records a pest failure of the rule starting at `rule_start`; `next_rule` is where
    /// parsing resumes.
    fn syntax_error(
        &mut self,
        err: &pest::error::Error<Rule>,
        rule_start: usize,
        next_rule: usize,
    ) {
        self.syntax_errors = true;
        let rel = match err.location {
            pest::error::InputLocation::Pos(p) => p,
            pest::error::InputLocation::Span((s, _)) => s,
        };
        let at = (rule_start + rel).min(self.src.len());
        let (positives, negatives): (&[Rule], &[Rule]) = match &err.variant {
            pest::error::ErrorVariant::ParsingError { positives, negatives } => {
                (positives, negatives)
            }
            pest::error::ErrorVariant::CustomError { message } => {
                // pest refuses to recurse further when the stack runs low.
                self.diagnostics.push(
                    Diagnostic::error(
                        Span::new(at, at + 1),
                        format!("grammar nested too deeply ({message})"),
                    )
                    .with_category(Category::Limit("max_nesting")),
                );
                return;
            }
        };
        // Keep the rule's name defined so that its uses do not all report "undefined".
        if let Ok(mut pairs) = GbnfParser::parse(Rule::rule_start, &self.src[rule_start..]) {
            if let Some(name) =
                pairs.next().and_then(|p| p.into_inner().find(|p| p.as_rule() == Rule::name))
            {
                let span = Self::span(&name, rule_start);
                let id = self.declare(name.as_str());
                if !self.builder.is_defined(id) {
                    self.definitions.insert(id, span);
                    self.builder.define_at(id, Expr::Empty, None, span);
                }
            }
        }
        // Failing where the next rule starts means a parenthesis was left open.
        if at >= next_rule && (next_rule < self.src.len() || positives.contains(&Rule::close_paren))
        {
            if let Some(open) = unclosed_paren(&self.src[rule_start..next_rule]) {
                let open = rule_start + open;
                self.error(Span::new(open, open + 1), "unclosed `(`");
                return;
            }
        }
        let message = syntax_message(self.src, at, positives, negatives);
        self.error(Span::new(at, at + 1), message);
    }

    /// Checks undefined rules and the root, builds the grammar and validates it.
    fn finish(mut self, root_name: &str) -> Result<Parsed, Diagnostics> {
        let mut undefined = Vec::new();
        for i in 0..self.names.len() {
            let id = RuleId::new(i);
            if !self.builder.is_defined(id) {
                undefined.push(id);
            }
        }
        for id in undefined {
            let span = self.first_reference.get(&id).copied().unwrap_or_default();
            let name = self.rule_name(id);
            self.error(span, format!("undefined rule `{name}`"));
            self.builder.define(id, Expr::Empty);
        }
        let root = self.builder.lookup(root_name).filter(|id| self.definitions.contains_key(id));
        let mut diagnostics = self.diagnostics;
        match root {
            None => diagnostics.push(Diagnostic::error(
                Span::new(0, 0),
                format!("missing root rule `{root_name}`"),
            )),
            Some(root) => {
                if let Ok(grammar) = self.builder.finish(root) {
                    let checks = crate::validate::validate(&grammar);
                    let has_errors = diagnostics.iter().any(Diagnostic::is_error);
                    diagnostics
                        .extend(checks.into_iter().filter(|d| d.is_error() || !self.syntax_errors));
                    if !has_errors && !diagnostics.iter().any(Diagnostic::is_error) {
                        sort_diagnostics(&mut diagnostics);
                        return Ok(Parsed { grammar, warnings: diagnostics });
                    }
                }
            }
        }
        sort_diagnostics(&mut diagnostics);
        Err(Diagnostics(diagnostics))
    }

    /// Declares rule `name` (numbered in order of first appearance).
    fn declare(&mut self, name: &str) -> RuleId {
        let id = self.builder.declare(name);
        if id.index() == self.names.len() {
            self.names.push(name.to_string());
        }
        id
    }

    fn rule_name(&self, id: RuleId) -> String {
        self.names.get(id.index()).cloned().unwrap_or_default()
    }
}

fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by_key(|d| d.span.map_or(usize::MAX, |s| s.start));
}

/// The source text of `span`, for messages.
fn pair_text(src: &str, span: Span) -> &str {
    src.get(span.start..span.end).unwrap_or("")
}

/// What is at `at`, for "found ..." in messages.
fn describe_found(src: &str, at: usize) -> String {
    match src.get(at..).and_then(|s| s.chars().next()) {
        None => "end of input".to_string(),
        Some('\n') | Some('\r') => "end of line".to_string(),
        Some(c) if c.is_control() => format!("`{}`", c.escape_default()),
        Some(c) => format!("`{c}`"),
    }
}

/// The offset of the last `(` left open in `text` (a rule's source), if any.
fn unclosed_paren(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut open = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' | b'[' => {
                let close = if bytes[i] == b'"' { b'"' } else { b']' };
                i += 1;
                while i < bytes.len() && bytes[i] != close && bytes[i] != b'\n' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'(' => open.push(i),
            b')' => {
                open.pop();
            }
            _ => {}
        }
        i += 1;
    }
    open.pop()
}

/// A human message for a pest failure: what was expected, in grammar terms.
fn syntax_message(src: &str, at: usize, positives: &[Rule], negatives: &[Rule]) -> String {
    let found = describe_found(src, at);
    if positives.contains(&Rule::assign) {
        return "expected `::=` after rule name".to_string();
    }
    if positives.contains(&Rule::rule_end) {
        return format!("expected newline or end of input, found {found}");
    }
    if positives.contains(&Rule::rule_def)
        || positives.contains(&Rule::name) && positives.len() == 1
    {
        return format!("expected a rule definition (`name ::= ...`), found {found}");
    }
    let mut wanted: Vec<&str> = Vec::new();
    let mut want = |s: &'static str| {
        if !wanted.contains(&s) {
            wanted.push(s);
        }
    };
    for rule in positives {
        match rule {
            Rule::close_paren => want("`)`"),
            Rule::close_brace => want("`}`"),
            Rule::count_exact
            | Rule::count_range
            | Rule::count_min
            | Rule::count_max
            | Rule::number => want("a repetition count"),
            Rule::rule_end | Rule::rule_next => want("newline or end of input"),
            Rule::token_id => want("a token id"),
            Rule::token_close => want("`]>`"),
            Rule::item
            | Rule::sequence
            | Rule::sequence_top
            | Rule::alternates
            | Rule::alternates_top
            | Rule::string
            | Rule::class
            | Rule::group
            | Rule::reference
            | Rule::name => want("an expression"),
            _ => {}
        }
    }
    if wanted.is_empty() && !negatives.is_empty() {
        return format!("unexpected {found}");
    }
    if wanted.is_empty() {
        return format!("syntax error at {found}");
    }
    // The line end is what most failures need; name it first.
    wanted.sort_by_key(|w| *w != "newline or end of input");
    let list = match wanted.as_slice() {
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
        [] => String::new(),
    };
    format!("expected {list}, found {found}")
}
