//! Diagnostics: errors and warnings with a source location (a [`Span`] for grammar text,
//! a JSON pointer for schemas), rendered the way compilers print them:
//!
//! ```text
//! json.gbnf:3:14: error: undefined rule `valeu`
//!   root ::= "[" valeu "]"
//!                ^
//! ```

use crate::ir::Span;
use std::fmt;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Severity {
    /// The input is refused.
    Error,
    /// The input is accepted; something deserves the author's attention.
    Warning,
}

/// What kind of problem a diagnostic reports; the CLI prefixes messages accordingly
/// (`error:`, `unsupported:`, `limit:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// The input is malformed or meaningless.
    Invalid,
    /// The input is well-formed but asks for something grammask does not do.
    Unsupported,
    /// A documented resource limit was reached; the name is the limit's.
    Limit(&'static str),
}

/// One error or warning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// What kind of problem.
    pub category: Category,
    /// What went wrong, in one sentence without a trailing period.
    pub message: String,
    /// Where in the grammar text, when the input is text.
    pub span: Option<Span>,
    /// Where in a JSON document (RFC 6901 pointer), when the input is JSON.
    pub pointer: Option<String>,
}

impl Diagnostic {
    /// An error at `span`.
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            category: Category::Invalid,
            message: message.into(),
            span: Some(span),
            pointer: None,
        }
    }

    /// A warning at `span`.
    pub fn warning(span: Span, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(span, message) }
    }

    /// An error with no location.
    pub fn global(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            category: Category::Invalid,
            message: message.into(),
            span: None,
            pointer: None,
        }
    }

    /// An error at a JSON pointer.
    pub fn at_pointer(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic { pointer: Some(pointer.into()), ..Diagnostic::global(message) }
    }

    /// The same diagnostic with another category.
    pub fn with_category(mut self, category: Category) -> Self {
        self.category = category;
        self
    }

    /// The same diagnostic as a warning.
    pub fn into_warning(mut self) -> Self {
        self.severity = Severity::Warning;
        self
    }

    /// Whether this is an error (not a warning).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The label printed before the message: `error`, `warning`, `unsupported`, `limit`.
    pub fn label(&self) -> &'static str {
        match (self.severity, self.category) {
            (Severity::Warning, _) => "warning",
            (Severity::Error, Category::Invalid) => "error",
            (Severity::Error, Category::Unsupported) => "unsupported",
            (Severity::Error, Category::Limit(_)) => "limit",
        }
    }

    /// Renders as `FILE:LINE:COL: LABEL: MESSAGE`, then the source line and a caret under
    /// the column; `FILE: LABEL: MESSAGE at POINTER` for JSON pointers.
    pub fn render(&self, file: &str, source: &str) -> String {
        let label = self.label();
        let message = match self.category {
            Category::Limit(name) if self.severity == Severity::Error => {
                format!("{name}: {}", self.message)
            }
            _ => self.message.clone(),
        };
        if let Some(span) = self.span {
            let loc = LineCol::of(source, span.start);
            let line_text = source_line(source, span.start);
            let caret_pad: String = line_text
                .chars()
                .take(loc.column - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            format!(
                "{file}:{}:{}: {label}: {message}\n  {line_text}\n  {caret_pad}^",
                loc.line, loc.column
            )
        } else if let Some(pointer) = &self.pointer {
            let pointer = if pointer.is_empty() { "#" } else { pointer };
            format!("{file}: {label}: {message} (at {pointer})")
        } else {
            format!("{file}: {label}: {message}")
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.label(), self.message)?;
        if let Some(pointer) = &self.pointer {
            let pointer = if pointer.is_empty() { "#" } else { pointer };
            write!(f, " (at {pointer})")?;
        }
        Ok(())
    }
}

/// A 1-based line and column (the column counts characters, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl LineCol {
    /// The line and column of byte `offset` in `source` (clamped to its length).
    pub fn of(source: &str, offset: usize) -> LineCol {
        let offset = floor_char_boundary(source, offset.min(source.len()));
        let before = &source[..offset];
        let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = source[line_start..offset].chars().count() + 1;
        LineCol { line, column }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The text of the line holding byte `offset`, without its line terminator.
fn source_line(source: &str, offset: usize) -> &str {
    let offset = floor_char_boundary(source, offset.min(source.len()));
    let start = source[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = source[offset..].find('\n').map_or(source.len(), |i| offset + i);
    source[start..end].trim_end_matches('\r')
}

/// Every diagnostic of a failed operation (at least one is an error), in source order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// One diagnostic.
    pub fn one(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }

    /// The errors (not the warnings).
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter().filter(|d| d.is_error())
    }

    /// Renders every diagnostic, one block each.
    pub fn render(&self, file: &str, source: &str) -> String {
        self.0.iter().map(|d| d.render(file, source)).collect::<Vec<_>>().join("\n")
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for d in self.errors() {
            if !first {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
            first = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_line_column_and_caret() {
        let src = "root ::= a\n  x ::= \"é\" valeu\n";
        let at = src.find("valeu").unwrap();
        let d = Diagnostic::error(Span::new(at, at + 5), "undefined rule `valeu`");
        assert_eq!(
            d.render("g.gbnf", src),
            "g.gbnf:2:13: error: undefined rule `valeu`\n    x ::= \"é\" valeu\n              ^"
        );
    }
}
