//! Every rule's automaton, built on first use and shared by every matcher of a grammar.
//!
//! A rule's automaton (its NFA, then subset construction) is built the first time a
//! matcher's closure enters the rule or a classification of the token mask cache walks
//! into it, so the cost of a grammar grows with what generations visit rather than with
//! its size. Compilation builds the root's, or with
//! [`crate::CompilerConfig::lazy_automata`] off every rule's reachable from it, as do
//! serialization and the mask cache's precompute. Each rule is built at most once: a
//! thread that needs a rule another thread is building waits for it.

use super::dfa::{Dfa, DfaError};
use super::nfa::{InPlace, Nfa, NfaError, Splices};
use super::right_linear::RightLinear;
use crate::compiler::LimitName;
use crate::deadline::Deadline;
use crate::error::{CompileError, MatchError};
use crate::ids::{StateId, TokenSetId};
use crate::mask_cache::counters::{self, Work};
use crate::passes::ClassTable;
use grammask_syntax::ir::{Grammar, RuleId, TokenSet};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

/// Why a rule's automaton could not be built.
#[derive(Clone, Debug)]
pub(crate) enum BuildError {
    /// Its NFA needs more than this many states.
    NfaStates(usize),
    /// Its body still holds a construct the passes should have removed.
    Unlowered(&'static str),
    /// The automata together would need more than `automaton_states` states.
    States,
    /// Subset construction went past the work budget of a rule with inlined bodies (at
    /// compile time only: the compile is tried again with the rule's calls kept).
    Work,
    /// Its construction took longer than `compile_time`.
    Timeout,
}

/// When a rule is built, which decides its budgets.
#[derive(Clone, Copy)]
pub(crate) enum When<'d> {
    /// During compilation: within the compile's deadline, and a rule with inlined bodies
    /// within its work budget ([`BuildError::Work`] past it).
    Compiling(&'d Deadline),
    /// While matching: within `compile_time` for the rule alone, with no work budget
    /// (the compile that could retry is over); `automaton_states` still bounds it.
    Matching,
}

/// What building one rule's automaton reads besides the rule's body.
#[derive(Debug)]
pub(crate) struct Recipe {
    /// The lowered character classes and free texts of every rule.
    pub(crate) classes: ClassTable,
    /// The linear rules, read in place by their entries.
    pub(crate) linear: RightLinear,
    /// Per rule: whether its references are spliced ([`crate::passes::is_spliced`]).
    pub(crate) spliced: Vec<bool>,
    /// The id of every token set of the grammar.
    pub(crate) token_index: HashMap<TokenSet, TokenSetId>,
    /// Per rule: whether its calls are kept (`PassConfig::keep_calls_in`): no splices, no
    /// linear rules read in place, no work budget.
    pub(crate) keep_calls: Vec<bool>,
    /// `Limits::max_automaton_states`.
    pub(crate) max_states: usize,
    /// `Limits::max_compile_time`, the budget of one rule built while matching.
    pub(crate) max_time: Duration,
    /// `CompilerConfig::minimize`.
    pub(crate) minimize: bool,
    /// `PassConfig::inlined_work_factor` and `inlined_work_floor`.
    pub(crate) work: (usize, usize),
}

/// The automata of a grammar's rules, each built on first use.
#[derive(Debug)]
pub(crate) struct Automata {
    /// Per rule: its automaton or why it could not be built, once built. Boxed: most
    /// rules are never built (inlined, spliced, or not reached), and a cell then holds a
    /// pointer, not a whole [`Dfa`] (hundreds of bytes) that every compile would write.
    cells: Vec<OnceLock<Result<Box<Dfa>, BuildError>>>,
    /// How to build a rule; `None` when every automaton was given (a loaded grammar).
    recipe: Option<Recipe>,
    /// States of the automata built so far.
    states: AtomicUsize,
    /// Heap bytes of the automata built so far.
    bytes: AtomicUsize,
    /// The outcome of building every rule reachable from the root while matching
    /// ([`Automata::build_all`]), once it was asked for.
    all_built: OnceLock<Result<(), (RuleId, BuildError)>>,
}

/// The automaton of a rule no state calls, and what a failed rule reads as (never on a
/// stack: entering a rule needs its automaton).
static UNREACHED: LazyLock<Dfa> = LazyLock::new(Dfa::unreached);

impl Automata {
    /// Automata of `rules` rules, none built yet.
    pub(crate) fn new(recipe: Recipe, rules: usize) -> Automata {
        Automata {
            cells: (0..rules).map(|_| OnceLock::new()).collect(),
            recipe: Some(recipe),
            states: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            all_built: OnceLock::new(),
        }
    }

    /// Automata all given (one per rule, `root`'s first built), as serialized: those of
    /// rules no state calls are the empty string's, and count as not built.
    pub(crate) fn given(automata: Vec<Dfa>, root: RuleId) -> Automata {
        let mut reached = vec![false; automata.len()];
        let mut states = 0;
        let mut to_visit = vec![root.index()];
        reached[root.index()] = true;
        while let Some(r) = to_visit.pop() {
            let dfa = &automata[r];
            states += dfa.len();
            for s in 0..dfa.len() {
                for &(callee, _) in dfa.calls(StateId::new(s)) {
                    if !std::mem::replace(&mut reached[callee.index()], true) {
                        to_visit.push(callee.index());
                    }
                }
            }
        }
        let bytes = automata.iter().map(Dfa::memory).sum();
        Automata {
            cells: automata.into_iter().map(|dfa| OnceLock::from(Ok(Box::new(dfa)))).collect(),
            recipe: None,
            states: AtomicUsize::new(states),
            bytes: AtomicUsize::new(bytes),
            all_built: OnceLock::from(Ok(())),
        }
    }

    /// States of the automata built so far.
    pub(crate) fn states(&self) -> usize {
        self.states.load(Ordering::Acquire)
    }

    /// Heap bytes of the automata built so far.
    pub(crate) fn memory(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// The automaton of `rule` if it is built.
    pub(crate) fn get(&self, rule: RuleId) -> Option<&Dfa> {
        self.cells[rule.index()].get()?.as_deref().ok()
    }

    /// The automaton of `rule`, a rule some stack stands in (built when it was entered).
    #[inline]
    pub(crate) fn dfa(&self, grammar: &Grammar, rule: RuleId) -> &Dfa {
        match self.cells[rule.index()].get() {
            Some(Ok(dfa)) => dfa,
            _ => self.build(grammar, rule, When::Matching).as_deref().unwrap_or(&UNREACHED),
        }
    }

    /// The automaton of `rule`, built now if it is not; the error names the limit its
    /// construction ran into, and it stays: the rule cannot be entered.
    #[inline]
    pub(crate) fn enter(&self, grammar: &Grammar, rule: RuleId) -> Result<&Dfa, MatchError> {
        match self.cells[rule.index()].get() {
            Some(Ok(dfa)) => Ok(dfa),
            _ => self.build(grammar, rule, When::Matching).as_deref().map_err(|e| {
                let (name, message) = self.describe(grammar, rule, e);
                MatchError::Limit { name, message }
            }),
        }
    }

    /// The automaton of `rule` at compile time, built now if it is not.
    pub(crate) fn compile(
        &self,
        grammar: &Grammar,
        rule: RuleId,
        deadline: &Deadline,
    ) -> Result<&Dfa, BuildError> {
        self.build(grammar, rule, When::Compiling(deadline)).as_deref().map_err(Clone::clone)
    }

    /// Builds every rule some automaton calls, from the root on (the others keep the
    /// automaton of the empty string, which no state reaches); stops at the first rule
    /// that cannot be built, with its name.
    pub(crate) fn build_reachable(
        &self,
        grammar: &Grammar,
        when: When,
    ) -> Result<(), (RuleId, BuildError)> {
        let mut reached = vec![false; self.cells.len()];
        reached[grammar.root.index()] = true;
        let mut to_build = vec![grammar.root];
        while let Some(rule) = to_build.pop() {
            let dfa = self.build(grammar, rule, when).as_ref().map_err(|e| (rule, e.clone()))?;
            for s in 0..dfa.len() {
                for &(callee, _) in dfa.calls(StateId::new(s)) {
                    if !std::mem::replace(&mut reached[callee.index()], true) {
                        to_build.push(callee);
                    }
                }
            }
        }
        Ok(())
    }

    /// [`Automata::build_reachable`] while matching, walked once: later calls return its
    /// outcome (a rule that failed keeps failing, a built one stays built).
    pub(crate) fn build_all(&self, grammar: &Grammar) -> Result<(), (RuleId, BuildError)> {
        self.all_built.get_or_init(|| self.build_reachable(grammar, When::Matching)).clone()
    }

    /// The automaton of `rule` if built, else the empty string's (that of a rule no state
    /// calls, after [`Automata::build_reachable`]).
    pub(crate) fn finished(&self, rule: RuleId) -> &Dfa {
        self.get(rule).unwrap_or(&UNREACHED)
    }

    /// Every rule's automaton, as [`Automata::finished`] gives it.
    pub(crate) fn all(&self) -> Vec<&Dfa> {
        (0..self.cells.len()).map(|r| self.finished(RuleId::new(r))).collect()
    }

    /// The cell of `rule`, filled now if empty.
    fn build(&self, grammar: &Grammar, rule: RuleId, when: When) -> &Result<Box<Dfa>, BuildError> {
        self.cells[rule.index()].get_or_init(|| {
            let dfa = counters::timed(Work::Construction, || self.construct(grammar, rule, when))?;
            self.states.fetch_add(dfa.len(), Ordering::AcqRel);
            self.bytes.fetch_add(dfa.memory(), Ordering::AcqRel);
            Ok(Box::new(dfa))
        })
    }

    /// Builds the automaton of `rule`.
    fn construct(&self, grammar: &Grammar, rule: RuleId, when: When) -> Result<Dfa, BuildError> {
        // Every cell of given automata is filled.
        let Some(recipe) = &self.recipe else { return Ok(Dfa::unreached()) };
        let r = rule.index();
        let keep_calls = recipe.keep_calls[r];
        let splices = if keep_calls {
            Splices::NONE
        } else {
            Splices { spliced: &recipe.spliced, rules: &grammar.rules }
        };
        // A rule whose calls are kept after a blow-up keeps its calls to linear rules too.
        let in_place = (recipe.linear.is_entry(rule) && !keep_calls).then_some(InPlace {
            rule,
            linear: &recipe.linear,
            rules: &grammar.rules,
        });
        let token_set = |set: &TokenSet| recipe.token_index.get(set).copied();
        let body = &grammar.rules[r].body;
        let nodes = recipe.classes.rule_nodes(rule);
        let nfa = Nfa::build(
            body,
            nodes,
            &recipe.classes,
            splices,
            in_place,
            recipe.max_states,
            &token_set,
        )
        .map_err(|e| match e {
            NfaError::TooManyStates(max) => BuildError::NfaStates(max),
            NfaError::Unlowered(what) => BuildError::Unlowered(what),
        })?;
        let budget = recipe.max_states.saturating_sub(self.states());
        let matching = Deadline::new(recipe.max_time);
        let (deadline, work) = match when {
            // A rule with inlined bodies has a work budget (`PassConfig::inlined_work_factor`).
            When::Compiling(deadline) if !keep_calls => {
                let (factor, floor) = recipe.work;
                (deadline, nfa.len().saturating_mul(factor).saturating_add(floor))
            }
            When::Compiling(deadline) => (deadline, usize::MAX),
            When::Matching => (&matching, usize::MAX),
        };
        Dfa::from_nfa(&nfa, budget, work, recipe.minimize, deadline).map_err(|e| match e {
            DfaError::TooManyStates => BuildError::States,
            DfaError::TooMuchWork => BuildError::Work,
            DfaError::Timeout => BuildError::Timeout,
        })
    }

    /// The limit or refusal of a rule that cannot be built, as a compile error.
    pub(crate) fn compile_error(
        &self,
        grammar: &Grammar,
        rule: RuleId,
        error: &BuildError,
        deadline: &Deadline,
    ) -> CompileError {
        let name = &grammar.rules[rule.index()].name;
        match error {
            BuildError::Unlowered(what) => CompileError::Unsupported(format!(
                "rule `{name}` still holds a {what} after the passes"
            )),
            BuildError::Timeout => {
                deadline.error(&format!("automaton construction, rule `{name}`"))
            }
            _ => {
                let (name, message) = self.describe(grammar, rule, error);
                CompileError::Limit { name, message }
            }
        }
    }

    /// The limit a rule that cannot be built ran into, and a message naming the rule.
    fn describe(
        &self,
        grammar: &Grammar,
        rule: RuleId,
        error: &BuildError,
    ) -> (&'static str, String) {
        let name = &grammar.rules[rule.index()].name;
        let states = LimitName::AutomatonStates.as_str();
        let (max_states, max_time) =
            self.recipe.as_ref().map_or((0, Duration::ZERO), |r| (r.max_states, r.max_time));
        match error {
            BuildError::NfaStates(max) => {
                (states, format!("rule `{name}` needs more than {max} NFA states"))
            }
            BuildError::States | BuildError::Work => (
                states,
                format!("the automata need more than {max_states} states (at rule `{name}`)"),
            ),
            BuildError::Timeout => (
                LimitName::CompileTime.as_str(),
                format!(
                    "building the automaton of rule `{name}` takes more than {} ms",
                    max_time.as_millis()
                ),
            ),
            BuildError::Unlowered(what) => {
                (states, format!("rule `{name}` still holds a {what} after the passes"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule never built (inlined, spliced, not reached) costs its grammar a cell the
    /// size of a pointer and a state, not a whole automaton: most rules of a schema's
    /// grammar are never built, and every compile writes every cell.
    #[test]
    fn an_unbuilt_rule_holds_no_automaton() {
        let cell = std::mem::size_of::<OnceLock<Result<Box<Dfa>, BuildError>>>();
        assert!(cell <= 32, "{cell} bytes");
        assert!(std::mem::size_of::<Dfa>() > 8 * cell, "{} bytes", std::mem::size_of::<Dfa>());
    }
}
