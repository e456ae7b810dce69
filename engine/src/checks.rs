//! The checks a compiled grammar must pass before a matcher may rely on it: every rule can
//! finish, no left recursion, every token id named exists.
//!
//! A rule that can never finish would leave the mask a dead end; left recursion would make
//! a top-down matcher loop. Refusals name the rule at its source span when it has one.

use crate::automaton::Dfa;
use crate::error::CompileError;
use crate::follow::nullable_rules;
use crate::ids::StateId;
use grammask_syntax::ir::{Grammar, RuleId, TokenSet};

/// Refuses a token set naming an id past the vocabulary.
pub(crate) fn check_token_ids(
    token_sets: &[TokenSet],
    vocab_size: usize,
) -> Result<(), CompileError> {
    for set in token_sets {
        if let Some(&id) = set.ids.iter().find(|&&id| id as usize >= vocab_size) {
            return Err(CompileError::TokenOutOfRange { id, vocab_size });
        }
    }
    Ok(())
}

/// Refuses a grammar with a rule that can never finish (a stack in it would never
/// complete).
pub(crate) fn check_productive(grammar: &Grammar) -> Result<(), CompileError> {
    // Over the IR after the passes (the language of each rule's automaton): linear in the
    // grammar, where a check over the automata revisits a caller whenever a callee
    // becomes productive.
    let productive = grammask_syntax::analysis::productive(grammar);
    refuse_unproductive(grammar, &productive)
}

/// The same check over automata, for loaded ones (whose grammar the bytes only claim).
/// Fixpoint: a rule is productive when an accepting state is reachable from its start
/// through bytes, tokens and calls of productive rules.
pub(crate) fn check_automata_productive(
    grammar: &Grammar,
    automata: &[Dfa],
) -> Result<(), CompileError> {
    let n = automata.len();
    // Callers of each rule: a rule's productivity is rechecked when a callee becomes
    // productive (a work list, not rounds over every rule).
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (r, dfa) in automata.iter().enumerate() {
        for s in 0..dfa.len() {
            for &(callee, _) in dfa.calls(StateId::new(s)) {
                callers[callee.index()].push(r);
            }
        }
    }
    for c in &mut callers {
        c.sort_unstable();
        c.dedup();
    }
    let mut productive = vec![false; n];
    let mut queued = vec![true; n];
    let mut work: Vec<usize> = (0..n).rev().collect();
    while let Some(r) = work.pop() {
        queued[r] = false;
        if productive[r] {
            continue;
        }
        let dfa = &automata[r];
        let found = reach(dfa, |_| true, |rule| productive[rule.index()])
            .iter()
            .enumerate()
            .any(|(s, &seen)| seen && dfa.is_accepting(StateId::new(s)));
        if found {
            productive[r] = true;
            for &c in &callers[r] {
                if !productive[c] && !queued[c] {
                    queued[c] = true;
                    work.push(c);
                }
            }
        }
    }
    refuse_unproductive(grammar, &productive)
}

/// The refusal of the first rule that can never finish, if any.
fn refuse_unproductive(grammar: &Grammar, productive: &[bool]) -> Result<(), CompileError> {
    match productive.iter().position(|p| !p) {
        None => Ok(()),
        Some(r) => Err(refusal(
            grammar,
            RuleId::new(r),
            format!(
                "rule `{}` can never finish (it has no finite derivation)",
                grammar.rules[r].name
            ),
        )),
    }
}

/// The engine's refusal of `rule`: a diagnostic at the rule's source span when it has one
/// (a grammar parsed from text), so it renders with line:col; otherwise
/// [`CompileError::Unsupported`].
fn refusal(grammar: &Grammar, rule: RuleId, message: String) -> CompileError {
    use grammask_syntax::{Category, Diagnostic, Diagnostics};
    match grammar.rules.get(rule.index()).map(|r| r.span) {
        Some(span) if span.end > span.start => CompileError::Grammar(Diagnostics::one(
            Diagnostic::error(span, message).with_category(Category::Unsupported),
        )),
        _ => CompileError::Unsupported(message),
    }
}

/// States reachable from the start through byte and token edges (when `bytes` says so)
/// and calls of rules `call` admits.
fn reach(dfa: &Dfa, bytes: impl Fn(()) -> bool, call: impl Fn(RuleId) -> bool) -> Vec<bool> {
    let mut seen = vec![false; dfa.len()];
    let mut stack = vec![dfa.start()];
    seen[dfa.start().index()] = true;
    let with_bytes = bytes(());
    while let Some(s) = stack.pop() {
        let mut visit = |t: StateId| {
            if !seen[t.index()] {
                seen[t.index()] = true;
                stack.push(t);
            }
        };
        if with_bytes {
            for t in dfa.byte_targets(s) {
                visit(t);
            }
            for &(_, t) in dfa.token_edges(s) {
                visit(t);
            }
        }
        for &(rule, t) in dfa.calls(s) {
            if call(rule) {
                visit(t);
            }
        }
    }
    seen
}

/// Refuses left recursion in the IR after the passes (whose rules the automata accept):
/// a rule that can refer to itself (directly, or through other rules, or behind what
/// matches the empty string) before reading anything.
pub(crate) fn check_no_left_recursion(grammar: &Grammar) -> Result<(), CompileError> {
    match grammask_syntax::analysis::left_recursion_cycle(grammar) {
        None => Ok(()),
        Some(cycle) => {
            let names: Vec<&str> =
                cycle.iter().map(|r| grammar.rules[r.index()].name.as_str()).collect();
            Err(refusal(grammar, cycle[0], format!("left recursion: {}", names.join(" -> "))))
        }
    }
}

/// Refuses left recursion in given automata (a loaded grammar): a rule that can call
/// itself (directly, or through other rules, or behind rules that match the empty string)
/// before reading anything.
pub(crate) fn check_left_recursion(
    grammar: &Grammar,
    automata: &[Dfa],
) -> Result<(), CompileError> {
    let n = automata.len();
    let nullable = nullable_rules(automata);
    // left_calls[r]: rules r may call before reading anything.
    let left_calls: Vec<Vec<usize>> = (0..n)
        .map(|r| {
            let dfa = &automata[r];
            let seen = reach(dfa, |_| false, |rule| nullable[rule.index()]);
            let mut out: Vec<usize> = seen
                .iter()
                .enumerate()
                .filter(|(_, &v)| v)
                .flat_map(|(s, _)| dfa.calls(StateId::new(s)).iter().map(|c| c.0.index()))
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    // Depth-first search for a cycle, iterative.
    let mut color = vec![0u8; n]; // 0 new, 1 on path, 2 done
    for start in 0..n {
        if color[start] != 0 {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(start, 0)];
        color[start] = 1;
        while let Some(&mut (v, ref mut i)) = path.last_mut() {
            if let Some(&w) = left_calls[v].get(*i) {
                *i += 1;
                if color[w] == 1 {
                    let from = path.iter().position(|&(x, _)| x == w).unwrap_or(0);
                    let mut names: Vec<&str> =
                        path[from..].iter().map(|&(x, _)| grammar.rules[x].name.as_str()).collect();
                    names.push(grammar.rules[w].name.as_str());
                    return Err(refusal(
                        grammar,
                        RuleId::new(w),
                        format!("left recursion: {}", names.join(" -> ")),
                    ));
                }
                if color[w] == 0 {
                    color[w] = 1;
                    path.push((w, 0));
                }
            } else {
                color[v] = 2;
                path.pop();
            }
        }
    }
    Ok(())
}
