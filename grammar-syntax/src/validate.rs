//! IR-level checks shared by every frontend (GBNF, EBNF, JSON Schema, regex):
//!
//! - rule references and the root must name rules of the grammar;
//! - repetition bounds must be in order (`{3,1}` is an error);
//! - every rule must be able to finish (have a finite derivation);
//! - left recursion is not checked here: the engine rewrites it (`expr ::= expr "+"
//!   term` is a grammar people write) and refuses, with the cycle named, only what it
//!   cannot rewrite ([`crate::analysis::left_recursion_cycles`] finds the cycles);
//! - rules the root never reaches get a warning.
//!
//! Diagnostics point at the rule's definition ([`crate::ir::Rule::span`]).

use crate::analysis;
use crate::diagnostic::Diagnostic;
use crate::ir::{Expr, Grammar};

/// Checks a grammar; returns its errors and warnings ordered by position.
pub fn validate(grammar: &Grammar) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let count = grammar.rules.len();
    if grammar.root.index() >= count {
        out.push(Diagnostic::global(format!(
            "the root {} is not a rule of the grammar",
            grammar.root
        )));
        return out;
    }
    let mut structurally_valid = true;
    for rule in &grammar.rules {
        let mut stack: Vec<&Expr> =
            std::iter::once(&rule.body).chain(rule.lookahead.as_ref()).collect();
        while let Some(expr) = stack.pop() {
            match expr {
                Expr::Seq(items) | Expr::Choice(items) => stack.extend(items),
                Expr::Repeat { expr, min, max } => {
                    if let Some(max) = max {
                        if min > max {
                            out.push(Diagnostic::error(
                                rule.span,
                                format!(
                                    "repetition bounds out of order in rule `{}`: `{{{min},{max}}}`",
                                    rule.name
                                ),
                            ));
                        }
                    }
                    stack.push(expr);
                }
                Expr::Text(text) => {
                    let bad_until = text.until.is_some_and(|i| i >= text.avoid.len());
                    if bad_until || text.avoid.iter().any(String::is_empty) {
                        structurally_valid = false;
                        out.push(Diagnostic::error(
                            rule.span,
                            format!(
                                "free text in rule `{}` avoids an empty string or ends with a string it does not list",
                                rule.name
                            ),
                        ));
                    }
                }
                Expr::Rule(id) if id.index() >= count => {
                    structurally_valid = false;
                    out.push(Diagnostic::error(
                        rule.span,
                        format!(
                            "rule `{}` refers to {id}, which is not a rule of the grammar",
                            rule.name
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    if !structurally_valid {
        return out;
    }
    for (rule, productive) in grammar.rules.iter().zip(analysis::productive(grammar)) {
        if !productive {
            out.push(Diagnostic::error(
                rule.span,
                format!("rule `{}` can never finish: it has no finite derivation", rule.name),
            ));
        }
    }
    let root_name = &grammar.rule(grammar.root).name;
    for (rule, reachable) in grammar.rules.iter().zip(analysis::reachable(grammar)) {
        if !reachable {
            out.push(Diagnostic::warning(
                rule.span,
                format!("rule `{}` is never used (unreachable from `{root_name}`)", rule.name),
            ));
        }
    }
    out.sort_by_key(|d| d.span.map_or(0, |s| s.start));
    out
}
