//! llama.cpp's lazy grammars: free text until a trigger (a word, a pattern of the usual
//! `[\s\S]*?(WORD)[\s\S]*` shape, or a token), then the grammar, which starts with the
//! trigger, up to the end of the output.
//!
//! The text before the trigger is [`FreeText`]: the grammar starts where a trigger word
//! is first written. A grammar that cannot start with a trigger is refused.

use crate::diagnostic::{Category, Diagnostic, Diagnostics};
use crate::ir::{Expr, FreeText, Grammar, Rule, RuleId, Span, TokenSet};
use crate::json_schema::matcher::ReferenceMatcher;
use crate::regex::is_never;

/// What starts a lazy grammar.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LazyTriggers {
    /// Trigger words: the grammar starts where one is first written.
    pub words: Vec<String>,
    /// Trigger patterns (regular expressions); only a literal, optionally inside
    /// `[\s\S]*?( … )[\s\S]*` as llama.cpp's chat templates write them, is supported.
    pub patterns: Vec<String>,
    /// Trigger tokens: ids with their text; the grammar starts at the token.
    pub tokens: Vec<(u32, String)>,
}

/// The grammar `grammar`, applied from the first trigger on.
pub fn lazy_grammar(mut grammar: Grammar, triggers: &LazyTriggers) -> Result<Grammar, Diagnostics> {
    let mut words = triggers.words.clone();
    for pattern in &triggers.patterns {
        words.push(literal_of_pattern(pattern).ok_or_else(|| {
            Diagnostics::one(
                Diagnostic::global(format!(
                    "trigger pattern `{pattern}` is not supported: only a literal, optionally as `[\\s\\S]*?(LITERAL)[\\s\\S]*`"
                ))
                .with_category(Category::Unsupported),
            )
        })?);
    }
    if let Some(i) = words.iter().position(String::is_empty) {
        return Err(Diagnostics::one(Diagnostic::global(format!("trigger word {i} is empty"))));
    }
    if words.is_empty() && triggers.tokens.is_empty() {
        return Err(Diagnostics::one(Diagnostic::global(
            "a lazy grammar needs at least one trigger",
        )));
    }
    let root = Expr::Rule(grammar.root);
    let after = |grammar: &Grammar, text: &str| -> Result<Expr, Diagnostics> {
        let d = ReferenceMatcher::new(grammar).derivative(&root, text);
        if is_never(&d) {
            return Err(Diagnostics::one(Diagnostic::global(format!(
                "the grammar cannot start with the trigger `{text}`"
            ))));
        }
        Ok(d)
    };
    let mut alternatives = vec![Expr::Text(Box::new(FreeText::avoiding(words.clone())))];
    for (i, word) in words.iter().enumerate() {
        let rest = after(&grammar, word)?;
        alternatives
            .push(Expr::seq(vec![Expr::Text(Box::new(FreeText::until(words.clone(), i))), rest]));
    }
    for (id, text) in &triggers.tokens {
        let rest = after(&grammar, text)?;
        let token = Expr::Tokens(TokenSet { negated: false, ids: vec![*id].into() });
        let before = Expr::Text(Box::new(FreeText::avoiding(words.clone())));
        alternatives.push(Expr::seq(vec![before, token, rest]));
    }
    let mut name = "lazy-root".to_string();
    while grammar.rules.iter().any(|r| r.name == name) {
        name.push('-');
    }
    grammar.rules.push(Rule {
        name,
        body: Expr::choice(alternatives),
        lookahead: None,
        span: Span::default(),
    });
    grammar.root = RuleId::new(grammar.rules.len() - 1);
    Ok(grammar)
}

/// The literal a trigger pattern stands for: the pattern itself when it has no regex
/// syntax, or the group of `[\s\S]*?(LITERAL)[\s\S]*` (anchors allowed).
fn literal_of_pattern(pattern: &str) -> Option<String> {
    let mut p = pattern.strip_prefix('^').unwrap_or(pattern);
    p = p.strip_suffix('$').unwrap_or(p);
    for any in ["[\\s\\S]*?", "[\\s\\S]*", ".*?", ".*"] {
        if let Some(rest) = p.strip_prefix(any) {
            p = rest;
            break;
        }
    }
    for any in ["[\\s\\S]*", ".*"] {
        if let Some(rest) = p.strip_suffix(any) {
            p = rest;
            break;
        }
    }
    if let Some(inner) = p.strip_prefix('(').and_then(|q| q.strip_suffix(')')) {
        p = inner.strip_prefix("?:").unwrap_or(inner);
    }
    let mut out = String::new();
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                c if c.is_ascii_alphanumeric() => return None,
                c => out.push(c),
            },
            '[' | ']' | '(' | ')' | '{' | '}' | '*' | '+' | '?' | '|' | '.' | '^' | '$' => {
                return None
            }
            c => out.push(c),
        }
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_of_chat_templates_are_their_literal() {
        assert_eq!(
            literal_of_pattern("[\\s\\S]*?(<tool_call>)[\\s\\S]*").as_deref(),
            Some("<tool_call>")
        );
        assert_eq!(literal_of_pattern("^\\{\"name\":").as_deref(), Some("{\"name\":"));
        assert_eq!(literal_of_pattern("<function=").as_deref(), Some("<function="));
        assert_eq!(literal_of_pattern("[\\s\\S]*?(<a|<b)[\\s\\S]*"), None);
    }

    #[test]
    fn a_grammar_that_cannot_start_with_the_trigger_is_refused() {
        let g = crate::parse_gbnf("root ::= \"<tool_call>\" [a-z]+").unwrap().grammar;
        let ok = LazyTriggers { words: vec!["<tool_call>".into()], ..Default::default() };
        assert!(lazy_grammar(g.clone(), &ok).is_ok());
        let bad = LazyTriggers { words: vec!["<call>".into()], ..Default::default() };
        assert!(lazy_grammar(g, &bad).is_err());
    }
}
