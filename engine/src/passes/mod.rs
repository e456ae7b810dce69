//! Passes over the grammar IR, each one function `Grammar -> Grammar` in its own file,
//! each stating the invariant it establishes. [`run`] is the one place that lists the
//! pipeline and its order.

mod eliminate_left_recursion;
mod factor_prefixes;
mod fuse_sequences;
mod inline_rules;
mod lower_char_classes;
mod merge_identical_rules;
mod outline_repetitions;
mod outline_unicode_escapes;
mod remove_dead_rules;

pub use eliminate_left_recursion::eliminate_left_recursion;
pub use factor_prefixes::factor_prefixes;
pub use fuse_sequences::fuse_sequences;
pub use inline_rules::{
    inline_rules, is_chunk_of_calls, is_counted_run, is_escape, is_spliced, recursive_rules,
    stays_call, COUNTED_RUN_MIN,
};
pub(crate) use inline_rules::{spliced_rules, CallGraph};
#[cfg(test)]
pub(crate) use lower_char_classes::class_to_bytes;
pub use lower_char_classes::lower_char_classes;
pub(crate) use lower_char_classes::{shared_lowering, ByClass, ClassTable};
pub use merge_identical_rules::merge_identical_rules;
pub use outline_repetitions::outline_repetitions;
pub use outline_unicode_escapes::{is_escape_tail, outline_unicode_escapes};
pub use remove_dead_rules::remove_dead_rules;

use crate::deadline::Deadline;
use crate::error::CompileError;
use grammask_syntax::ir::Grammar;

/// Settings of the pass pipeline.
#[derive(Clone, Debug)]
pub struct PassConfig {
    /// Largest body (its [`Expr::weight`](grammask_syntax::ir::Expr::weight): IR nodes,
    /// a bounded repetition's copies counted) of a non-recursive rule that is copied into
    /// its callers. Default 1,000: a larger body (an object of many members, a
    /// schema's definition used in many places) stays one shared automaton behind a
    /// call, so compile time grows with the grammar as written rather than with its
    /// copies, and the mask cache classifies its positions once for every caller.
    pub inline_max_rule_size: usize,
    /// Largest weight a caller may grow to by inlining; a body copied inside a bounded
    /// repetition costs it once per count.
    pub inline_max_caller_size: usize,
    /// Largest weight the whole grammar may grow to by inlining (a larger grammar does
    /// not grow at all).
    pub inline_max_total: usize,
    /// Rules (by name) whose references to other rules stay calls: no body is inlined
    /// into them. The compiler adds a rule here when inlining made its automaton blow
    /// up (see [`PassConfig::inlined_work_factor`]).
    pub keep_calls_in: Vec<String>,
    /// Rules (by name) that are never inlined: every reference to them stays a call, and
    /// their automata are built when a matcher or the mask cache first enters them. The
    /// compiler adds the rules a conversion found rarely reached
    /// ([`grammask_syntax::Converted::rarely_reached`]: the members of free keys).
    pub never_inlined: Vec<String>,
    /// Work budget of subset construction for a rule (NFA states summed over the DFA
    /// states built): this many per NFA state, plus [`PassConfig::inlined_work_floor`].
    /// A rule past it is built again without inlining into it. Subset construction can
    /// be exponential when inlined alternatives run side by side (fifteen `anyOf`
    /// objects each reading an unanchored `pattern` after the same key); as calls, the
    /// alternatives become parallel stacks of the pushdown automaton instead, and the
    /// language stays the same. MaskBench's rules need at most 55 per NFA state and
    /// 2.8 million in all (default 64 and 1,000,000: a rule of 30,000 NFA states may
    /// do 2.9 million).
    pub inlined_work_factor: usize,
    /// See [`PassConfig::inlined_work_factor`].
    pub inlined_work_floor: usize,
}

impl Default for PassConfig {
    fn default() -> Self {
        PassConfig {
            inline_max_rule_size: 1_000,
            inline_max_caller_size: 40_000,
            inline_max_total: 200_000,
            keep_calls_in: Vec::new(),
            never_inlined: Vec::new(),
            inlined_work_factor: 64,
            inlined_work_floor: 1_000_000,
        }
    }
}

/// The pipeline, in order:
///
/// 0. [`eliminate_left_recursion`]: `expr ::= expr "+" term | term` becomes
///    `expr ::= term ("+" term)*` (direct and indirect left recursion).
/// 1. [`remove_dead_rules`]: only rules reachable from the root remain.
/// 2. [`fuse_sequences`]: nested sequences and choices are flattened, adjacent byte
///    strings fused.
/// 3. [`inline_rules`]: references to small non-recursive rules are replaced by their
///    bodies, so most grammars become a few recursive rules (fewer stacks at run time);
///    long counted runs of one character, escapes and chunks of calls (a bound in the
///    thousands, counted in chunks of chunks) stay calls ([`stays_call`]); small
///    sequences referred to from many places (JSON whitespace) are spliced
///    ([`is_spliced`]): the reference stays, and automaton construction reads the body
///    in its place. Each
///    node a body lands in is fused again, so the result stays fused without a walk over
///    the copies.
/// 4. [`remove_dead_rules`] again: rules inlined everywhere disappear.
/// 5. [`factor_prefixes`]: alternatives of a choice that are byte strings sharing a first
///    byte read their common prefix once (a choice of many names becomes a trie), after
///    inlining put the bodies together.
/// 6. [`outline_repetitions`]: large bodies repeated many times (`maxItems`,
///    `{0,1000}`) move into rules of their own, so automata stay linear in the bound.
/// 7. [`outline_unicode_escapes`]: what follows `\u` in the escapes of JSON string
///    characters copied many times in one rule becomes a call.
/// 8. [`merge_identical_rules`]: rules that read the same (the chunks of every long
///    string with the same characters, a definition written out twice) become one, so
///    its automaton and mask entries serve every caller.
///
/// Character classes stay classes: automaton construction reads each as its UTF-8 byte
/// automaton, lowered once per distinct class ([`lower_char_classes`]), so tokens that
/// end inside a multi-byte character are matched exactly while the passes copy and walk
/// one node per class.
///
/// The `deadline` is checked between passes and inside left-recursion elimination; a
/// spent budget is [`CompileError::Limit`] `compile_time`.
pub fn run(
    grammar: Grammar,
    config: &PassConfig,
    deadline: &Deadline,
) -> Result<Grammar, CompileError> {
    Ok(run_noting(grammar, config, deadline)?.0)
}

/// [`run`], and whether the input held left recursion. The passes after the elimination
/// keep a grammar free of it (inlining and outlining move bodies, merging joins rules
/// that read the same), so only a grammar that held some can hold what the elimination
/// left (hidden recursion), which the compiler refuses.
pub(crate) fn run_noting(
    grammar: Grammar,
    config: &PassConfig,
    deadline: &Deadline,
) -> Result<(Grammar, bool), CompileError> {
    let (grammar, left_recursive) = eliminate_left_recursion::eliminate_noting(grammar, deadline)?;
    deadline.check("left-recursion elimination")?;
    let grammar = remove_dead_rules(grammar);
    let grammar = fuse_sequences(grammar);
    let grammar = inline_rules(grammar, config);
    deadline.check("rule inlining")?;
    let grammar = remove_dead_rules(grammar);
    let grammar = factor_prefixes(grammar);
    let grammar = outline_repetitions(grammar);
    let grammar = outline_unicode_escapes(grammar);
    deadline.check("repetition outlining")?;
    let grammar = merge_identical_rules(grammar);
    deadline.check("identical-rule merging")?;
    Ok((grammar, left_recursive))
}
