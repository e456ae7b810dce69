//! The printer: [`Grammar`] IR → GBNF text that reads back to the same IR.
//!
//! `parse(to_gbnf(g)) == g` up to spans (and up to rule numbering when the rules carry no
//! source spans; see [`to_gbnf`]). Grouping is printed as it is in the IR: a sequence
//! inside a sequence, or a choice inside a choice, keeps its parentheses.
//!
//! - Rules whose names are not valid GBNF names are renamed (invalid characters become
//!   `-`, clashes get a numeric suffix).
//! - Lookahead assertions print in the EBNF form `rule ::= body (= lookahead)`, as do
//!   dotted rule names: such output must be read as EBNF.
//! - Non-printable characters are escaped (`\n`, `\x7F`, `\u2028`); character classes
//!   print as compact ranges (`[0-9a-f]`), `.` for any character.
//! - Engine-internal forms that GBNF cannot express ([`Expr::ByteRanges`], byte strings
//!   that are not UTF-8) print as `<bytes ...>`, which does not read back.
//!
//! ```
//! use grammask_syntax::{parse_gbnf, print::to_gbnf};
//! let g = parse_gbnf("root ::= [a-c]+ (\"x\" | \"\\n\")?").unwrap().grammar;
//! assert_eq!(to_gbnf(&g), "root ::= [a-c]+ (\"x\" | \"\\n\")?\n");
//! ```

use crate::ir::{CharClass, Expr, Grammar, TokenSet};
use std::collections::HashSet;
use std::fmt::Write;

/// Prints `grammar` as GBNF, one rule per line, root rule first when it comes first in the
/// source. Rules are printed in source order when every rule has a distinct source span
/// (so that reading the output back numbers the rules as the source did), else in id
/// order.
pub fn to_gbnf(grammar: &Grammar) -> String {
    let names = printable_names(grammar);
    let mut order: Vec<usize> = (0..grammar.rules.len()).collect();
    let starts: HashSet<usize> = grammar.rules.iter().map(|r| r.span.start).collect();
    let has_spans = grammar.rules.iter().all(|r| r.span.end > r.span.start)
        && starts.len() == grammar.rules.len();
    if has_spans {
        order.sort_by_key(|&i| grammar.rules[i].span.start);
    }
    let printer = Printer { names: &names };
    let mut out = String::new();
    for i in order {
        let rule = &grammar.rules[i];
        out.push_str(&names[i]);
        out.push_str(" ::= ");
        printer.expr(&mut out, &rule.body, Context::Top);
        if let Some(lookahead) = &rule.lookahead {
            out.push_str(" (= ");
            printer.expr(&mut out, lookahead, Context::Top);
            out.push(')');
        }
        out.push('\n');
    }
    out
}

/// Where an expression is printed, which decides whether it needs parentheses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    /// A whole rule body or the inside of parentheses.
    Top,
    /// One alternative of a choice.
    Alternative,
    /// One item of a sequence.
    Item,
    /// The operand of a repetition operator.
    Operand,
}

struct Printer<'n> {
    names: &'n [String],
}

impl Printer<'_> {
    fn expr(&self, out: &mut String, expr: &Expr, ctx: Context) {
        match expr {
            Expr::Empty => out.push_str("\"\""),
            Expr::Bytes(bytes) => self.bytes(out, bytes, ctx),
            Expr::Class(class) => print_class(out, class),
            Expr::ByteRanges(ranges) => {
                out.push_str("<bytes");
                for &(lo, hi) in ranges {
                    if lo == hi {
                        let _ = write!(out, " {lo:02x}");
                    } else {
                        let _ = write!(out, " {lo:02x}-{hi:02x}");
                    }
                }
                out.push('>');
            }
            Expr::Seq(items) => {
                let paren = matches!(ctx, Context::Item | Context::Operand);
                self.group(out, paren, |out| {
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(' ');
                        }
                        self.expr(out, item, Context::Item);
                    }
                });
            }
            Expr::Choice(alternatives) => {
                let paren = ctx != Context::Top;
                self.group(out, paren, |out| {
                    for (i, alternative) in alternatives.iter().enumerate() {
                        if i > 0 {
                            out.push_str(" | ");
                        }
                        self.expr(out, alternative, Context::Alternative);
                    }
                });
            }
            Expr::Rule(id) => match self.names.get(id.index()) {
                Some(name) => out.push_str(name),
                None => {
                    let _ = write!(out, "undefined-rule-{}", id.index());
                }
            },
            Expr::Repeat { expr, min, max } => {
                let paren = ctx == Context::Operand;
                self.group(out, paren, |out| {
                    self.expr(out, expr, Context::Operand);
                    match (*min, *max) {
                        (0, None) => out.push('*'),
                        (1, None) => out.push('+'),
                        (0, Some(1)) => out.push('?'),
                        (m, None) => {
                            let _ = write!(out, "{{{m},}}");
                        }
                        (m, Some(n)) if m == n => {
                            let _ = write!(out, "{{{m}}}");
                        }
                        (m, Some(n)) => {
                            let _ = write!(out, "{{{m},{n}}}");
                        }
                    }
                });
            }
            Expr::Tokens(set) => print_tokens(out, set),
            Expr::Text(text) => print_text(out, text),
        }
    }

    fn group(&self, out: &mut String, paren: bool, body: impl FnOnce(&mut String)) {
        if paren {
            out.push('(');
        }
        body(out);
        if paren {
            out.push(')');
        }
    }

    /// A byte string: a string literal when it is UTF-8, else literals and `<bytes>`.
    fn bytes(&self, out: &mut String, bytes: &[u8], ctx: Context) {
        let mut pieces: Vec<String> = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    pieces.push(quote(text));
                    break;
                }
                Err(err) => {
                    let (valid, after) = rest.split_at(err.valid_up_to());
                    if !valid.is_empty() {
                        pieces.push(quote(&String::from_utf8_lossy(valid)));
                    }
                    let bad = err.error_len().unwrap_or(after.len()).max(1).min(after.len());
                    let mut text = String::from("<bytes");
                    for b in &after[..bad] {
                        let _ = write!(text, " {b:02x}");
                    }
                    text.push('>');
                    pieces.push(text);
                    rest = &after[bad..];
                }
            }
        }
        let paren = pieces.len() > 1 && matches!(ctx, Context::Item | Context::Operand);
        if pieces.is_empty() {
            out.push_str("\"\"");
        }
        self.group(out, paren, |out| out.push_str(&pieces.join(" ")));
    }
}

/// A string literal with its escapes.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => push_char(&mut out, c),
        }
    }
    out.push('"');
    out
}

/// A character, escaped when it is not printable.
fn push_char(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if needs_hex_escape(c) => push_hex(out, c),
        c => out.push(c),
    }
}

fn push_hex(out: &mut String, c: char) {
    let v = c as u32;
    let _ = if v <= 0xFF {
        write!(out, "\\x{v:02X}")
    } else if v <= 0xFFFF {
        write!(out, "\\u{v:04X}")
    } else {
        write!(out, "\\U{v:08X}")
    };
}

/// Characters printed as hex escapes: controls, separators other than the space,
/// invisible formatting characters, private use, and noncharacters.
fn needs_hex_escape(c: char) -> bool {
    let v = c as u32;
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || v == 0xAD
        || (0x200B..=0x200F).contains(&v)
        || (0x202A..=0x202E).contains(&v)
        || (0x2060..=0x206F).contains(&v)
        || v == 0xFEFF
        || (0xFFF9..=0xFFFB).contains(&v)
        || (0xE000..=0xF8FF).contains(&v)
        || v >= 0xF0000
        || (0xFDD0..=0xFDEF).contains(&v)
        || (v & 0xFFFE) == 0xFFFE
}

/// A character inside a class: also escapes what would end or change the class.
fn push_class_char(out: &mut String, c: char, first: bool) {
    match c {
        ']' => out.push_str("\\]"),
        '[' => out.push_str("\\["),
        '\\' => out.push_str("\\\\"),
        '-' => out.push_str("\\-"),
        '^' if first => push_hex(out, c),
        c => push_char(out, c),
    }
}

fn print_class(out: &mut String, class: &CharClass) {
    if class.negated && class.ranges.is_empty() {
        out.push('.');
        return;
    }
    out.push('[');
    if class.negated {
        out.push('^');
    }
    let mut first = true;
    for &(lo, hi) in &class.ranges {
        push_class_char(out, lo, first && !class.negated);
        first = false;
        if hi != lo {
            if hi as u32 != lo as u32 + 1 {
                out.push('-');
            }
            push_class_char(out, hi, false);
        }
    }
    out.push(']');
}

fn print_tokens(out: &mut String, set: &TokenSet) {
    if set.negated {
        out.push('!');
    }
    out.push_str("<[");
    for (i, id) in set.ids.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{id}");
    }
    out.push_str("]>");
}

/// A valid, unique name for every rule.
fn printable_names(grammar: &Grammar) -> Vec<String> {
    let mut used: HashSet<String> = HashSet::new();
    let valid: Vec<bool> = grammar.rules.iter().map(|r| is_valid_name(&r.name)).collect();
    // Valid names are kept as they are; only the others may need a suffix.
    for (rule, ok) in grammar.rules.iter().zip(&valid) {
        if *ok {
            used.insert(rule.name.clone());
        }
    }
    let mut names = Vec::with_capacity(grammar.rules.len());
    let mut seen: HashSet<String> = HashSet::new();
    for (rule, ok) in grammar.rules.iter().zip(&valid) {
        if *ok && seen.insert(rule.name.clone()) {
            names.push(rule.name.clone());
            continue;
        }
        let base = sanitize(&rule.name);
        let mut candidate = base.clone();
        let mut n = 1;
        while used.contains(&candidate) {
            candidate = format!("{base}-{n}");
            n += 1;
        }
        used.insert(candidate.clone());
        seen.insert(candidate.clone());
        names.push(candidate);
    }
    names
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// A name is `word(.word)*`, words of ASCII letters, digits, `-` and `_`.
fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && name.split('.').all(|w| !w.is_empty() && w.chars().all(is_word_char))
}

fn sanitize(name: &str) -> String {
    let s: String = name.chars().map(|c| if is_word_char(c) { c } else { '-' }).collect();
    if s.is_empty() {
        "rule".to_string()
    } else {
        s
    }
}

/// Free text as `%text("a" "b")` (avoiding `a` and `b`) or `%text("a" "b" -> "b")` (up to
/// the first `b`): an extension of the notation, which GBNF itself cannot express.
fn print_text(out: &mut String, text: &crate::text::FreeText) {
    out.push_str("%text(");
    for (i, s) in text.avoid.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&quote(s));
    }
    if let Some(until) = text.until.and_then(|i| text.avoid.get(i)) {
        out.push_str(" -> ");
        out.push_str(&quote(until));
    }
    if let Some(max) = text.max_tokens {
        let _ = write!(out, "; max_tokens {max}");
    }
    out.push(')');
}
