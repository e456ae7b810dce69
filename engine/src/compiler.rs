//! Compilation: a grammar IR and a vocabulary to an immutable [`CompiledGrammar`].
//!
//! Steps: the pass pipeline ([`crate::passes::run`]), one byte automaton per remaining
//! rule ([`crate::automaton`]), then checks the matcher relies on: every rule can finish
//! (so every automaton state can be completed and the mask never leads into a dead end),
//! no left recursion (a top-down matcher would loop), token ids named by the grammar
//! exist. Every limit is explicit ([`Limits`]) and reported as [`CompileError::Limit`].

use crate::automaton::dfa::DfaError;
use crate::automaton::nfa::{Nfa, NfaError};
use crate::automaton::Dfa;
use crate::cache::GrammarCache;
use crate::deadline::Deadline;
use crate::error::{CompileError, MatchError};
use crate::follow::{exit_bytes, nullable_rules, RuleExits};
use crate::ids::{StateId, TokenSetId};
use crate::passes::{self, PassConfig};
use crate::slices::{slicing_for, Slicing, UNKNOWN_DEPTH};
use crate::stack::{Position, Stack};
use crate::token_cache::{
    classify, classify_listed, MaskEntry, ParentMask, PositionMask, Start, View,
};
use grammask_syntax::ir::{Expr, Grammar, RuleId, TokenSet};
use grammask_tokenset::Vocabulary;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Resource limits, each with a documented default. A limit that is hit is an error that
/// names it (`limit: NAME: ...`), never a panic, a hang or a silent slowdown; the one
/// exception is `mask_cache_bytes` at run time, which only costs speed (see there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `grammar_size`: IR nodes after the passes. Default 2,000,000.
    pub max_grammar_size: usize,
    /// `automaton_states`: NFA states of one rule, and DFA states of all rules together.
    /// Default 2,000,000.
    pub max_automaton_states: usize,
    /// `live_stacks`: parallel stacks (ambiguous parses) alive at one step. Default 10,000.
    pub max_live_stacks: usize,
    /// `stack_depth`: nesting depth of rule calls at run time. Default 10,000.
    pub max_stack_depth: usize,
    /// `rollback_history`: steps a matcher keeps for [`crate::Matcher::rollback`].
    /// Default 10,000; older steps are dropped.
    pub max_rollback: usize,
    /// `compile_time`: wall-clock time of one compilation, from the start of parsing
    /// (for the `compile_*` methods taking text) through the passes, the automata, the
    /// compile-time checks and, when [`CompilerConfig::precompute_mask_cache`] asks for
    /// it, the mask cache's eager precompute. Checked cooperatively (between passes,
    /// every 256 states of subset construction, every 4,096 splitters of minimization, after the
    /// (linear) productivity check, before each precomputed position), so a compile past it
    /// stops soon after with the limit named. Default 30 s: real grammars (llama.cpp's,
    /// MaskBench's schemas) compile in milliseconds to a few hundred milliseconds.
    pub max_compile_time: Duration,
    /// `mask_cache_bytes`: heap bytes the adaptive token mask cache may store (its
    /// entries' id lists, bitsets and context-dependent lists, as counted by
    /// [`CompiledGrammar::mask_cache_memory`]). The eager precompute
    /// ([`CompilerConfig::precompute_mask_cache`],
    /// [`CompiledGrammar::precompute_mask_cache`]) fails with this limit named when the
    /// entries do not fit. Entries filled lazily at run time are stored while they fit;
    /// past the bound, a position's entry is computed for that mask and not kept, so
    /// masks stay the same and only cost more (a vocabulary walk for that position).
    /// Default 1 GiB.
    pub max_mask_cache_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_grammar_size: 2_000_000,
            max_automaton_states: 2_000_000,
            max_live_stacks: 10_000,
            max_stack_depth: 10_000,
            max_rollback: 10_000,
            max_compile_time: Duration::from_secs(30),
            max_mask_cache_bytes: 1 << 30,
        }
    }
}

/// What the compiler is asked to do besides the grammar itself.
#[derive(Clone, Debug)]
pub struct CompilerConfig {
    /// Resource limits.
    pub limits: Limits,
    /// Settings of the pass pipeline.
    pub passes: PassConfig,
    /// Whether masks use the adaptive token mask cache (default). Off, every mask walks
    /// the whole vocabulary against the stacks: the same answers, slower; kept for
    /// differential tests.
    pub mask_cache: bool,
    /// Whether each rule's automaton of up to 256 states is minimized (Hopcroft's
    /// partition refinement) after subset construction. Default off: the NFA builder
    /// shares equal suffixes and the two copies of `x ("," x)*`, so subset construction
    /// leaves little to merge (MaskBench's largest schemas: under 0.5% of states; the
    /// same mask cache for llama.cpp's json.gbnf and the built-in JSON grammar) at about a
    /// tenth of compile time. On, hand-written grammars with equivalent alternatives
    /// spelled differently get their smallest automata.
    pub minimize: bool,
    /// Whether compilation fills every entry of the token mask cache (in parallel), so
    /// no mask pays a first visit; default off (entries fill on first use). Counts
    /// against `compile_time`; entries that do not fit in `mask_cache_bytes` make the
    /// compile fail with that limit named.
    pub precompute_mask_cache: bool,
}

impl Default for CompilerConfig {
    fn default() -> Self {
        CompilerConfig {
            limits: Limits::default(),
            passes: PassConfig::default(),
            mask_cache: true,
            minimize: false,
            precompute_mask_cache: false,
        }
    }
}

/// Compiles grammars for one vocabulary.
///
/// ```
/// use grammask_engine::{Compiler, Matcher};
/// use grammask_syntax::ir::{Expr, GrammarBuilder};
/// use grammask_tokenset::Vocabulary;
///
/// let vocab = Vocabulary::from_byte_tokens(
///     vec![b"a".to_vec(), b"b".to_vec(), b"ab".to_vec(), b"</s>".to_vec()], &[3], &[3], None,
/// ).unwrap();
/// let mut g = GrammarBuilder::new();
/// let root = g.declare("root");
/// g.define(root, Expr::plus(Expr::literal("ab")));
/// let compiled = Compiler::new(&vocab).compile_grammar(&g.finish(root).unwrap()).unwrap();
/// let mut m = Matcher::new(compiled);
/// m.accept_token(2).unwrap();
/// assert!(m.can_terminate());
/// assert!(m.accept_token(1).is_err());
/// ```
#[derive(Clone, Debug)]
pub struct Compiler {
    vocab: Arc<Vocabulary>,
    config: CompilerConfig,
    cache: Option<Arc<GrammarCache>>,
}

impl Compiler {
    /// A compiler for `vocab` with default settings.
    pub fn new(vocab: &Vocabulary) -> Self {
        Compiler::from_arc(Arc::new(vocab.clone()))
    }

    /// A compiler sharing an existing vocabulary.
    pub fn from_arc(vocab: Arc<Vocabulary>) -> Self {
        Compiler { vocab, config: CompilerConfig::default(), cache: None }
    }

    /// The same compiler with other settings.
    pub fn with_config(mut self, config: CompilerConfig) -> Self {
        self.config = config;
        self
    }

    /// The vocabulary.
    pub fn vocabulary(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// The settings.
    pub fn config(&self) -> &CompilerConfig {
        &self.config
    }

    /// Reads GBNF or EBNF text whose root rule is `root`, with tokens by text (`<think>`)
    /// looked up in the vocabulary.
    fn parse_text(
        &self,
        text: &str,
        dialect: grammask_syntax::Dialect,
    ) -> Result<Grammar, grammask_syntax::Diagnostics> {
        let opts = grammask_syntax::ParseOptions { dialect, ..Default::default() };
        let token_id = |t: &str| self.vocab.token_id(t.as_bytes());
        grammask_syntax::parse_grammar_with_tokens(text, &opts, &token_id).map(|p| p.grammar)
    }

    /// Compiles GBNF text (llama.cpp's dialect) whose root rule is `root`; tokens by text
    /// (`<think>`) are the vocabulary's.
    pub fn compile_gbnf(&self, text: &str) -> Result<Arc<CompiledGrammar>, CompileError> {
        let start = Instant::now();
        self.cached(
            || [b"gbnf".into(), text.as_bytes().into()],
            || {
                let parse = || self.parse_text(text, grammask_syntax::Dialect::Gbnf);
                let grammar = parse().map_err(CompileError::Grammar)?;
                self.compile_made(grammar, &|| parse().map_err(CompileError::Grammar), false, start)
            },
        )
    }

    /// Compiles EBNF text (XGrammar's dialect) whose root rule is `root`.
    pub fn compile_ebnf(&self, text: &str) -> Result<Arc<CompiledGrammar>, CompileError> {
        let start = Instant::now();
        self.cached(
            || [b"ebnf".into(), text.as_bytes().into()],
            || {
                let parse = || self.parse_text(text, grammask_syntax::Dialect::Ebnf);
                let grammar = parse().map_err(CompileError::Grammar)?;
                self.compile_made(grammar, &|| parse().map_err(CompileError::Grammar), false, start)
            },
        )
    }

    /// Compiles a JSON Schema (its text) with the given conversion options.
    pub fn compile_json_schema(
        &self,
        schema: &str,
        options: &grammask_syntax::JsonSchemaOptions,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let start = Instant::now();
        let key = || {
            let options = format!("{options:?}").into_bytes();
            [b"json-schema-text".into(), options.into(), schema.as_bytes().into()]
        };
        self.cached(key, || {
            self.compile_converted(&|| grammask_syntax::parse_json_schema(schema, options), start)
        })
    }

    /// Compiles a JSON Schema (a parsed JSON value) with the given conversion options.
    pub fn compile_json_schema_value(
        &self,
        schema: &serde_json::Value,
        options: &grammask_syntax::JsonSchemaOptions,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let start = Instant::now();
        let key = || {
            let options = format!("{options:?}").into_bytes();
            let schema = serde_json::to_vec(schema).unwrap_or_default();
            [b"json-schema".into(), options.into(), schema.into()]
        };
        self.cached(key, || {
            self.compile_converted(
                &|| grammask_syntax::json_schema_to_grammar(schema, options),
                start,
            )
        })
    }

    /// Compiles the grammar `convert` makes of a schema (again for a retry), without the
    /// productivity check the conversion made.
    fn compile_converted(
        &self,
        convert: &dyn Fn() -> Result<grammask_syntax::Converted, grammask_syntax::Diagnostics>,
        start: Instant,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let converted = convert().map_err(CompileError::Grammar)?;
        let finish = converted.all_rules_finish();
        let again = || convert().map(|c| c.grammar).map_err(CompileError::Grammar);
        self.compile_made(converted.grammar, &again, finish, start)
    }

    /// Compiles a structural tag (XGrammar's JSON format, with or without the outer
    /// `{"type": "structural_tag", "format": ...}`); tokens named by their text are looked
    /// up in the vocabulary.
    pub fn compile_structural_tag(
        &self,
        tag: &serde_json::Value,
        options: &grammask_syntax::StructuralTagOptions,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let start = Instant::now();
        let key = || {
            let options = format!("{options:?}").into_bytes();
            let tag = serde_json::to_vec(tag).unwrap_or_default();
            [b"structural-tag".into(), options.into(), tag.into()]
        };
        self.cached(key, || {
            let token_id = |text: &str| self.vocab.token_id(text.as_bytes());
            let convert = || {
                grammask_syntax::structural_tag_to_grammar(tag, options, &token_id)
                    .map_err(CompileError::Grammar)
            };
            self.compile_made(convert()?, &convert, false, start)
        })
    }

    /// Compiles the tool calls `options` asks for over OpenAI-style `tools` (see
    /// [`grammask_syntax::tools`]): the arguments of each call checked against its
    /// function's `parameters`, with no properties beyond those listed (`strict`) and the
    /// converter's default whitespace.
    pub fn compile_tools(
        &self,
        tools: &serde_json::Value,
        options: &grammask_syntax::ToolsOptions,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        use grammask_syntax::tools::{parse_tools, tools_structural_tag};
        let parsed = parse_tools(tools).map_err(CompileError::Grammar)?;
        let tag = tools_structural_tag(&parsed, options).map_err(CompileError::Grammar)?;
        self.compile_structural_tag(&tag, &grammask_syntax::tools::structural_tag_options(options))
    }

    /// Compiles a regular expression that must match the whole text.
    pub fn compile_regex(&self, pattern: &str) -> Result<Arc<CompiledGrammar>, CompileError> {
        let start = Instant::now();
        self.cached(
            || [b"regex".into(), pattern.as_bytes().into()],
            || {
                let parse = || grammask_syntax::parse_regex(pattern).map_err(CompileError::Grammar);
                self.compile_made(parse()?, &parse, false, start)
            },
        )
    }

    /// Compiles a grammar given as IR.
    pub fn compile_grammar(&self, grammar: &Grammar) -> Result<Arc<CompiledGrammar>, CompileError> {
        self.compile_grammar_since(grammar, Instant::now())
    }

    /// Compiles a grammar given as IR whose making (parsing, conversion) started at
    /// `start`: that time counts against the `compile_time` limit.
    pub fn compile_grammar_since(
        &self,
        grammar: &Grammar,
        start: Instant,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        self.cached(
            || [b"ir".into(), crate::serialize::grammar_bytes(grammar).into()],
            || self.compile_made(grammar.clone(), &|| Ok(grammar.clone()), false, start),
        )
    }

    /// `compile()`'s grammar, from the grammar cache when there is one: looked up by its
    /// source (`parts()`, made only then: the kind of source, then what makes it, each
    /// part length-prefixed in the key) and the settings.
    fn cached<'k, const N: usize>(
        &self,
        parts: impl FnOnce() -> [std::borrow::Cow<'k, [u8]>; N],
        compile: impl FnOnce() -> Result<Arc<CompiledGrammar>, CompileError>,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let Some(cache) = &self.cache else { return compile() };
        let parts = parts();
        let mut key = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
        for part in &parts {
            key.extend_from_slice(&(part.len() as u64).to_le_bytes());
            key.extend_from_slice(part);
        }
        cache.get_or_compile(key, &self.config, compile)
    }

    /// Compiles `grammar`, made from its source at `start`. The passes consume it; a
    /// retry ([`Attempt::KeepCallsIn`], rare) takes a new one from `again` instead of a
    /// copy kept for it. `finish`: its maker checked that every rule can finish.
    fn compile_made(
        &self,
        grammar: Grammar,
        again: &dyn Fn() -> Result<Grammar, CompileError>,
        finish: bool,
        start: Instant,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let deadline = Deadline::starting_at(start, self.config.limits.max_compile_time);
        deadline.check("parsing")?;
        self.compile_uncached(grammar, again, finish, &deadline)
    }

    /// The same compiler, keeping compiled grammars in `cache` (keyed by the grammar's
    /// source and the settings), so the same grammar compiles once.
    pub fn with_grammar_cache(mut self, cache: Arc<GrammarCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    fn compile_uncached(
        &self,
        grammar: Grammar,
        again: &dyn Fn() -> Result<Grammar, CompileError>,
        finish: bool,
        deadline: &Deadline,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let mut passes = self.config.passes.clone();
        let mut grammar = grammar;
        loop {
            match self.compile_with(grammar, finish, &passes, deadline)? {
                Attempt::Done(compiled) => return Ok(compiled),
                Attempt::KeepCallsIn(name) => {
                    passes.keep_calls_in.push(name);
                    grammar = again()?;
                }
            }
        }
    }

    /// One compilation with the given passes; a rule whose automaton blew up after
    /// inlining comes back as [`Attempt::KeepCallsIn`] for another try.
    fn compile_with(
        &self,
        grammar: Grammar,
        finish: bool,
        passes: &PassConfig,
        deadline: &Deadline,
    ) -> Result<Attempt, CompileError> {
        let limits = &self.config.limits;
        // The passes keep each rule's language, so when every rule of the input can
        // finish, every rule after them can: the check runs on the input (before inlining
        // multiplies it) unless its maker made it (`finish`), and again after the passes
        // only to name a rule that cannot.
        let all_productive =
            finish || grammask_syntax::analysis::productive(&grammar).iter().all(|&p| p);
        let grammar = passes::run(grammar, passes, deadline)?;
        // Lowers each distinct class once, and counts the nodes on the way.
        let classes = passes::ClassTable::of(&grammar);
        let size = classes.nodes;
        if size > limits.max_grammar_size {
            return Err(CompileError::Limit {
                name: "grammar_size",
                message: format!(
                    "the grammar has {size} IR nodes after inlining; the limit is {}",
                    limits.max_grammar_size
                ),
            });
        }
        let mut token_sets: Vec<TokenSet> = Vec::new();
        let mut token_index: HashMap<TokenSet, TokenSetId> = HashMap::new();
        let mut automata = Vec::with_capacity(grammar.rules.len());
        let mut total_states = 0usize;
        // The bodies of spliced rules, read where they are referred to (but in rules whose
        // references all stay calls).
        let spliced: Vec<Option<&Expr>> = (0..grammar.rules.len())
            .map(|r| {
                passes::is_spliced(&grammar.rules, r, grammar.root)
                    .then_some(&grammar.rules[r].body)
            })
            .collect();
        for rule in &grammar.rules {
            deadline.check("automaton construction")?;
            let mut intern = |set: &TokenSet| {
                *token_index.entry(set.clone()).or_insert_with(|| {
                    token_sets.push(set.clone());
                    TokenSetId((token_sets.len() - 1) as u32)
                })
            };
            let max = limits.max_automaton_states;
            let splices: &[Option<&Expr>] =
                if passes.keep_calls_in.contains(&rule.name) { &[] } else { &spliced };
            let nfa =
                Nfa::build(&rule.body, &classes, splices, max, &mut intern).map_err(
                    |e| match e {
                        NfaError::TooManyStates(max) => CompileError::Limit {
                            name: "automaton_states",
                            message: format!(
                                "rule `{}` needs more than {max} NFA states",
                                rule.name
                            ),
                        },
                        NfaError::Unlowered(what) => CompileError::Unsupported(format!(
                            "rule `{}` still holds a {what} after the passes",
                            rule.name
                        )),
                    },
                )?;
            let budget = limits.max_automaton_states.saturating_sub(total_states);
            // Work budget of subset construction: unbounded, except for a rule with
            // inlined bodies (see `PassConfig::inlined_work_factor`).
            let work_budget = if passes.keep_calls_in.contains(&rule.name) {
                usize::MAX
            } else {
                nfa.len()
                    .saturating_mul(passes.inlined_work_factor)
                    .saturating_add(passes.inlined_work_floor)
            };
            let dfa =
                match Dfa::from_nfa(&nfa, budget, work_budget, self.config.minimize, deadline) {
                    Ok(dfa) => dfa,
                    Err(DfaError::TooMuchWork) => {
                        return Ok(Attempt::KeepCallsIn(rule.name.clone()));
                    }
                    Err(DfaError::TooManyStates) => {
                        return Err(CompileError::Limit {
                            name: "automaton_states",
                            message: format!(
                                "the automata need more than {} states (at rule `{}`)",
                                limits.max_automaton_states, rule.name
                            ),
                        })
                    }
                    Err(DfaError::Timeout) => {
                        return Err(deadline
                            .error(&format!("automaton construction, rule `{}`", rule.name)))
                    }
                };
            total_states += dfa.len();
            automata.push(dfa);
        }
        let vocab_size = self.vocab.vocab_size();
        for set in &token_sets {
            if let Some(&id) = set.ids.iter().find(|&&id| id as usize >= vocab_size) {
                return Err(CompileError::TokenOutOfRange { id, vocab_size });
            }
        }
        if !all_productive {
            check_productive(&grammar)?;
            deadline.check("the productivity check")?;
        }
        check_left_recursion(&grammar, &automata)?;
        deadline.check("the left-recursion check")?;
        let compiled = CompiledGrammar::assemble(
            self.vocab.clone(),
            grammar,
            automata,
            token_sets,
            limits.clone(),
            self.config.mask_cache,
        );
        if self.config.precompute_mask_cache {
            compiled.precompute(deadline)?;
        }
        Ok(Attempt::Done(Arc::new(compiled)))
    }

    /// Loads a grammar serialized by [`CompiledGrammar::serialize`] for this compiler's
    /// vocabulary. Malformed bytes, another format version or another vocabulary give
    /// [`CompileError::Load`].
    pub fn deserialize(&self, bytes: &[u8]) -> Result<Arc<CompiledGrammar>, CompileError> {
        let parts =
            crate::serialize::read(bytes, self.vocab.fingerprint()).map_err(CompileError::Load)?;
        let vocab_size = self.vocab.vocab_size();
        for set in &parts.token_sets {
            if let Some(&id) = set.ids.iter().find(|&&id| id as usize >= vocab_size) {
                return Err(CompileError::TokenOutOfRange { id, vocab_size });
            }
        }
        check_automata_productive(&parts.grammar, &parts.automata)?;
        check_left_recursion(&parts.grammar, &parts.automata)?;
        Ok(Arc::new(CompiledGrammar::assemble(
            self.vocab.clone(),
            parts.grammar,
            parts.automata,
            parts.token_sets,
            parts.limits,
            self.config.mask_cache,
        )))
    }
}

/// How one try of [`Compiler::compile_with`] ended.
enum Attempt {
    Done(Arc<CompiledGrammar>),
    /// This rule's automaton blew up after inlining: try again with its calls kept.
    KeepCallsIn(String),
}

/// A grammar compiled for one vocabulary: immutable, `Send + Sync`, shared by `Arc` among
/// any number of [`crate::Matcher`]s on any threads.
#[derive(Debug)]
pub struct CompiledGrammar {
    pub(crate) vocab: Arc<Vocabulary>,
    pub(crate) grammar: Grammar,
    pub(crate) automata: Vec<Dfa>,
    pub(crate) token_sets: Vec<TokenSet>,
    pub(crate) limits: Limits,
    pub(crate) initial: Stack,
    total_states: usize,
    /// Global index of each rule's state 0, for the cache.
    state_base: Vec<u32>,
    /// The adaptive token mask cache, one slot per automaton state (empty when off).
    cache: Vec<OnceLock<Box<PositionMask>>>,
    /// Per rule and state, the bytes that may follow when leaving the automaton there
    /// (context expansion for the cache; empty when the cache is off).
    exits: Vec<RuleExits>,
    /// Heap bytes of the stored cache entries (at most `limits.max_mask_cache_bytes`).
    cache_bytes: AtomicUsize,
    /// The vocabulary's slices ([`crate::slices`]), fetched when a classification first
    /// needs them.
    slicing: OnceLock<Arc<Slicing>>,
    /// Per automaton state (indexed like `cache`): the memo of
    /// [`crate::slices::safe_depth`] (4 bytes per state; empty when the cache is off).
    safe_memo: Vec<AtomicU32>,
    /// The context-dependent tokens of a position classified once more with the return
    /// positions below it, by the frames' global state indices, top first
    /// ([`ParentMask`]; unused slots `u32::MAX`).
    parent_cache: Mutex<HashMap<[u32; 3], Arc<ParentMask>>>,
    /// Per rule: whether positions inside it are classified with their return position
    /// ([`CompiledGrammar::through_mask`]): counted runs and escapes kept as calls.
    through: Vec<bool>,
    /// Per rule: whether it is a leaf (no state calls a rule or reads a token set), so
    /// that a walk from inside it back into its caller needs only the two automata
    /// ([`CompiledGrammar::parent_mask`]).
    leaf: Vec<bool>,
    /// Classifications of positions inside rules walked through, with their return
    /// position, by the pair's global state indices ([`CompiledGrammar::through_mask`]).
    through_cache: Mutex<HashMap<(u32, u32), Arc<PositionMask>>>,
    /// Whether some free text has a token budget ([`crate::Matcher`] then counts tokens
    /// in it).
    pub(crate) has_budgets: bool,
}

/// Positions with more context-dependent tokens than this are not classified one frame
/// deeper ([`CompiledGrammar::parent_mask`]): a walk against the real stacks skips the
/// tokens other stacks accepted already, which the classification cannot, and at such
/// positions (long `maxLength` strings, where tens of thousands of tokens may end the
/// string) it costs more than the walks it would spare.
const MAX_PARENT_DEPENDENT: usize = 8_192;

impl CompiledGrammar {
    fn assemble(
        vocab: Arc<Vocabulary>,
        grammar: Grammar,
        automata: Vec<Dfa>,
        token_sets: Vec<TokenSet>,
        limits: Limits,
        mask_cache: bool,
    ) -> CompiledGrammar {
        let root = grammar.root;
        let initial = Stack::root(Position { rule: root, state: automata[root.index()].start() });
        let mut state_base = Vec::with_capacity(automata.len());
        let mut total_states = 0usize;
        for dfa in &automata {
            state_base.push(total_states as u32);
            total_states += dfa.len();
        }
        let (cache, exits, safe_memo): (Vec<_>, Vec<RuleExits>, Vec<_>) = if mask_cache {
            (
                (0..total_states).map(|_| OnceLock::new()).collect(),
                exit_bytes(&automata),
                (0..total_states).map(|_| AtomicU32::new(UNKNOWN_DEPTH)).collect(),
            )
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        let leaf: Vec<bool> = automata
            .iter()
            .map(|dfa| {
                (0..dfa.len()).all(|s| {
                    let s = StateId::new(s);
                    dfa.calls(s).is_empty() && dfa.token_edges(s).is_empty()
                })
            })
            .collect();
        // Counted runs and escapes kept as calls by inlining (one ASCII character `m..=n`
        // times, `m >= 1`; `\` and what follows: no calls, no empty match, few tokens
        // inside; [`crate::passes::stays_call`]): positions inside one are classified
        // with their return position, as if the run were inlined. (Classifying positions
        // of other rules so, strings kept as calls for one, would walk most of the
        // vocabulary at each call site.)
        let through = grammar
            .rules
            .iter()
            .zip(&automata)
            .zip(&leaf)
            .map(|((rule, dfa), &leaf)| {
                leaf && crate::passes::stays_call(rule) && !dfa.is_accepting(dfa.start())
            })
            .collect();
        let has_budgets = automata.iter().any(Dfa::has_text_budget);
        CompiledGrammar {
            has_budgets,
            vocab,
            grammar,
            automata,
            token_sets,
            limits,
            initial,
            total_states,
            state_base,
            cache,
            exits,
            cache_bytes: AtomicUsize::new(0),
            slicing: OnceLock::new(),
            safe_memo,
            parent_cache: Mutex::new(HashMap::new()),
            through,
            through_cache: Mutex::new(HashMap::new()),
            leaf,
        }
    }

    /// The grammar as bytes, for [`Compiler::deserialize`] with the same vocabulary. The
    /// token mask cache is not included; it refills on first use.
    pub fn serialize(&self) -> Vec<u8> {
        crate::serialize::write(
            self.vocab.fingerprint(),
            &self.limits,
            &self.grammar,
            &self.token_sets,
            &self.automata,
        )
    }

    /// Heap bytes used: the automata, the IR (counted per node), the per-state slots of
    /// the token mask cache and its filled entries.
    pub fn memory(&self) -> usize {
        let exits: usize = self.exits.iter().map(|e| e.slot.len() * 4 + e.sets.len() * 32).sum();
        self.automata.iter().map(Dfa::memory).sum::<usize>()
            + self.grammar.size() * std::mem::size_of::<grammask_syntax::ir::Expr>()
            + self.cache.len() * std::mem::size_of::<OnceLock<Box<PositionMask>>>()
            + self.safe_memo.len() * 4
            + exits
            + self.mask_cache_memory()
    }

    /// The vocabulary it was compiled for.
    pub fn vocabulary(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// The grammar after the passes (what the automata were built from).
    pub fn grammar(&self) -> &Grammar {
        &self.grammar
    }

    /// The automaton of `rule`.
    pub fn automaton(&self, rule: RuleId) -> &Dfa {
        &self.automata[rule.index()]
    }

    /// Total number of automaton states.
    pub fn num_states(&self) -> usize {
        self.total_states
    }

    /// The limits it was compiled with (the matcher enforces the run-time ones).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    #[inline]
    pub(crate) fn dfa(&self, position: Position) -> &Dfa {
        &self.automata[position.rule.index()]
    }

    /// The cached classification of `position`, computed on first use and stored while
    /// the cache holds at most `max_mask_cache_bytes` (past it, computed and returned
    /// without being stored); `None` when the cache is off.
    pub(crate) fn position_mask(&self, position: Position) -> Option<MaskEntry<'_>> {
        let index = self.state_base[position.rule.index()] as usize + position.state.index();
        let slot = self.cache.get(index)?;
        if let Some(stored) = slot.get() {
            return Some(MaskEntry::Stored(stored));
        }
        let slicing = || self.slicing.get_or_init(|| slicing_for(&self.vocab)).clone();
        let base = self.state_base[position.rule.index()] as usize;
        let memo = self.safe_memo.get(base..base + self.dfa(position).len()).unwrap_or(&[]);
        let view = self.view(position.rule.index());
        let mask = classify(view, Start::At(position.state), &self.vocab, slicing, memo);
        // A stored entry is boxed (the slot of a state never visited stays one word).
        let bytes = mask.memory() + std::mem::size_of::<PositionMask>();
        if !self.reserve(bytes) {
            return Some(MaskEntry::Unstored(mask));
        }
        let mut ours = false;
        let stored = slot.get_or_init(|| {
            ours = true;
            Box::new(mask)
        });
        if !ours {
            // Another thread stored the same entry first: give the reservation back.
            self.cache_bytes.fetch_sub(bytes, Ordering::AcqRel);
        }
        Some(MaskEntry::Stored(stored))
    }

    /// What a classification at a position of rule `rule` reads.
    fn view(&self, rule: usize) -> View<'_> {
        View {
            automata: &self.automata,
            dfa: &self.automata[rule],
            exits: &self.exits[rule],
            all_exits: &self.exits,
        }
    }

    /// Whether positions inside `rule` are classified with their return position
    /// ([`CompiledGrammar::through_mask`]).
    pub(crate) fn walks_through(&self, rule: RuleId) -> bool {
        self.through.get(rule.index()).copied().unwrap_or(false)
    }

    /// The classification of `top`, a position inside a rule walked through, under the
    /// return position `parent` (tokens read to their end within the two frames are
    /// accepted whatever lies below; those that may return below `parent` with bytes
    /// left depend on the stack), computed on the pair's first visit and stored while the
    /// cache's memory bound allows. `None` when the cache is off.
    pub(crate) fn through_mask(
        &self,
        top: Position,
        parent: Position,
    ) -> Option<Arc<PositionMask>> {
        if !self.has_mask_cache() {
            return None;
        }
        let key = (self.global_index(top), self.global_index(parent));
        let lock = || self.through_cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(stored) = lock().get(&key) {
            return Some(stored.clone());
        }
        let view = self.view(parent.rule.index());
        let start =
            Start::InCallee { callee: top.rule.index(), state: top.state, to: parent.state };
        let slicing = || self.slicing.get_or_init(|| slicing_for(&self.vocab)).clone();
        let mask = Arc::new(classify(view, start, &self.vocab, slicing, &[]));
        let bytes = mask.memory()
            + std::mem::size_of::<PositionMask>()
            + std::mem::size_of::<((u32, u32), Arc<PositionMask>)>();
        if !self.reserve(bytes) {
            return Some(mask);
        }
        let mut cache = lock();
        if let Some(stored) = cache.get(&key) {
            // Another thread stored the same entry first: give the reservation back.
            self.cache_bytes.fetch_sub(bytes, Ordering::AcqRel);
            return Some(stored.clone());
        }
        cache.insert(key, mask.clone());
        Some(mask)
    }

    /// The global state index of `position`.
    fn global_index(&self, position: Position) -> u32 {
        self.state_base[position.rule.index()] + position.state.index() as u32
    }

    /// The context-dependent tokens `dependent` of the top of `frames` (its cache entry's,
    /// or its through entry's) classified with the return positions below it, `frames`
    /// bottom first: one ([`ParentMask`]), or two for a position inside a rule walked
    /// through ([`CompiledGrammar::through_mask`]), fewer on a shorter stack (the top
    /// alone at the root), from the first time the frames are asked for. (A position's
    /// tokens are classified with one list for given frames: the top of a rule walked
    /// through takes its through entry whenever a frame lies below it.) `None` for more
    /// than [`MAX_PARENT_DEPENDENT`] tokens, and past the cache's memory bound: the walk
    /// against the stack gives the same answers.
    pub(crate) fn parent_mask(
        &self,
        frames: &[Position],
        dependent: &[u32],
    ) -> Result<Option<Arc<ParentMask>>, MatchError> {
        if dependent.len() > MAX_PARENT_DEPENDENT {
            return Ok(None);
        }
        let mut key = [u32::MAX; 3];
        for (k, &position) in key.iter_mut().zip(frames.iter().rev()) {
            *k = self.global_index(position);
        }
        let lock = || self.parent_cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(stored) = lock().get(&key) {
            return Ok(Some(stored.clone()));
        }
        let computed = Arc::new(match frames {
            // Inside a leaf rule: the classification walk reads its automaton and the
            // caller's at the cost of a table lookup a byte; only the tokens it leaves
            // (those that may enter a rule the caller calls, or leave the caller's rule)
            // are walked with the stack's frames.
            &[parent, top] if self.leaf[top.rule.index()] => {
                let start = Start::InCallee {
                    callee: top.rule.index(),
                    state: top.state,
                    to: parent.state,
                };
                let view = self.view(parent.rule.index());
                let mut mask = classify_listed(view, start, &self.vocab, dependent);
                if !mask.dependent.is_empty() {
                    let below = crate::mask::classify_below(self, frames, &mask.dependent)?;
                    mask.accepted.extend(&below.accepted);
                    mask.dependent = below.dependent;
                }
                mask
            }
            _ => crate::mask::classify_below(self, frames, dependent)?,
        });
        let bytes = computed.memory() + std::mem::size_of::<([u32; 3], Arc<ParentMask>)>();
        if !self.reserve(bytes) {
            return Ok(None);
        }
        let mut cache = lock();
        if let Some(stored) = cache.get(&key) {
            // Another thread stored the same entry first: give the reservation back.
            self.cache_bytes.fetch_sub(bytes, Ordering::AcqRel);
            return Ok(Some(stored.clone()));
        }
        cache.insert(key, computed.clone());
        Ok(Some(computed))
    }

    /// Reserves `bytes` of the cache's memory bound; `false` when they do not fit.
    fn reserve(&self, bytes: usize) -> bool {
        let max = self.limits.max_mask_cache_bytes;
        self.cache_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= max)
            })
            .is_ok()
    }

    /// Whether masks use the token mask cache.
    pub(crate) fn has_mask_cache(&self) -> bool {
        !self.cache.is_empty()
    }

    /// Bytes held by the stored entries of the token mask cache (at most the limit
    /// `mask_cache_bytes`).
    pub fn mask_cache_memory(&self) -> usize {
        self.cache_bytes.load(Ordering::Acquire)
    }

    /// Fills every entry of the token mask cache now, in parallel, instead of on first
    /// use (a longer compile for no first-visit cost later). Fails with the limit
    /// `compile_time` (counted from this call) or `mask_cache_bytes` named; the entries
    /// filled before stay.
    pub fn precompute_mask_cache(&self) -> Result<(), CompileError> {
        self.precompute(&Deadline::new(self.limits.max_compile_time))
    }

    fn precompute(&self, deadline: &Deadline) -> Result<(), CompileError> {
        use rayon::prelude::*;
        if !self.has_mask_cache() {
            return Ok(());
        }
        let positions: Vec<Position> = self
            .automata
            .iter()
            .enumerate()
            .flat_map(|(r, dfa)| {
                (0..dfa.len())
                    .filter(move |&s| dfa.reads_input(StateId::new(s)))
                    .map(move |s| Position { rule: RuleId::new(r), state: StateId::new(s) })
            })
            .collect();
        positions.par_iter().try_for_each(|&p| {
            deadline.check("the mask cache's precompute")?;
            match self.position_mask(p) {
                Some(MaskEntry::Unstored(_)) => Err(CompileError::Limit {
                    name: "mask_cache_bytes",
                    message: format!(
                        "the token mask cache needs more than {} bytes ({} automaton \
                         positions to precompute)",
                        self.limits.max_mask_cache_bytes,
                        positions.len()
                    ),
                }),
                _ => Ok(()),
            }
        })
    }
}

/// Refuses a grammar with a rule that can never finish (a stack in it would never
/// complete).
fn check_productive(grammar: &Grammar) -> Result<(), CompileError> {
    // Over the IR after the passes (the language of each rule's automaton): linear in the
    // grammar, where a check over the automata revisits a caller whenever a callee
    // becomes productive.
    let productive = grammask_syntax::analysis::productive(grammar);
    refuse_unproductive(grammar, &productive)
}

/// The same check over automata, for loaded ones (whose grammar the bytes only claim).
/// Fixpoint: a rule is productive when an accepting state is reachable from its start
/// through bytes, tokens and calls of productive rules.
fn check_automata_productive(grammar: &Grammar, automata: &[Dfa]) -> Result<(), CompileError> {
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
            r,
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
fn refusal(grammar: &Grammar, rule: usize, message: String) -> CompileError {
    use grammask_syntax::{Category, Diagnostic, Diagnostics};
    match grammar.rules.get(rule).map(|r| r.span) {
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

/// Refuses left recursion: a rule that can call itself (directly, or through other rules,
/// or behind rules that match the empty string) before reading anything.
fn check_left_recursion(grammar: &Grammar, automata: &[Dfa]) -> Result<(), CompileError> {
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
                        w,
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
