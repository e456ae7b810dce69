//! Compilation: a grammar IR and a vocabulary to an immutable [`CompiledGrammar`].
//!
//! Steps: the pass pipeline ([`crate::passes::run`]), one byte automaton per remaining
//! rule ([`crate::automaton`]), then checks the matcher relies on: every rule can finish
//! (so every automaton state can be completed and the mask never leads into a dead end),
//! no left recursion (a top-down matcher would loop), token ids named by the grammar
//! exist. Every limit is explicit ([`Limits`]) and reported as [`CompileError::Limit`].

use crate::automaton::right_linear::RightLinear;
use crate::automaton::store::{Automata, BuildError, Recipe, When};
use crate::automaton::Dfa;
use crate::cache::GrammarCache;
use crate::checks;
use crate::deadline::Deadline;
use crate::error::{CompileError, MatchError};
use crate::follow::Summaries;
use crate::mask_cache::MaskCache;
use crate::passes::{self, PassConfig};
use crate::stack::{Position, Stack};
use grammask_syntax::ir::{Grammar, RuleId, TokenSet};
use grammask_tokenset::Vocabulary;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Resource limits, each with a documented default. A limit that is hit is an error that
/// names it (`limit: NAME: ...`), never a panic, a hang or a silent slowdown; the one
/// exception is `mask_cache_bytes` at run time, which only costs speed (see there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `grammar_size`: IR nodes after the passes. Default 2,000,000.
    pub max_grammar_size: usize,
    /// `automaton_states`: NFA states of one rule, and DFA states of all rules built
    /// together, whether at compile time or while matching (a rule built then past the
    /// limit is an error of the matcher call that enters it). Default 2,000,000.
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
    /// stops soon after with the limit named. A rule's automaton built while matching
    /// ([`CompilerConfig::lazy_automata`]) has this budget of its own. Default 30 s: real
    /// grammars (llama.cpp's, MaskBench's schemas) compile in milliseconds to a few
    /// hundred milliseconds.
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

/// The name of each limit of [`Limits`], as errors give it (`limit: NAME: ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitName {
    /// [`Limits::max_grammar_size`].
    GrammarSize,
    /// [`Limits::max_automaton_states`].
    AutomatonStates,
    /// [`Limits::max_live_stacks`].
    LiveStacks,
    /// [`Limits::max_stack_depth`].
    StackDepth,
    /// [`Limits::max_rollback`].
    RollbackHistory,
    /// [`Limits::max_compile_time`].
    CompileTime,
    /// [`Limits::max_mask_cache_bytes`].
    MaskCacheBytes,
}

impl LimitName {
    /// The name as errors and documentation write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            LimitName::GrammarSize => "grammar_size",
            LimitName::AutomatonStates => "automaton_states",
            LimitName::LiveStacks => "live_stacks",
            LimitName::StackDepth => "stack_depth",
            LimitName::RollbackHistory => "rollback_history",
            LimitName::CompileTime => "compile_time",
            LimitName::MaskCacheBytes => "mask_cache_bytes",
        }
    }
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
    /// leaves little to merge, for a fraction of the compile time (see BENCHMARKS.md).
    /// On, hand-written grammars with equivalent alternatives spelled differently get
    /// their smallest automata.
    pub minimize: bool,
    /// Whether compilation fills every entry of the token mask cache (in parallel), so
    /// no mask pays a first visit; default off (entries fill on first use). Counts
    /// against `compile_time`; entries that do not fit in `mask_cache_bytes` make the
    /// compile fail with that limit named.
    pub precompute_mask_cache: bool,
    /// Whether each rule's automaton is built when a matcher first enters the rule (or
    /// a mask's classification walks into it), default; compilation builds only the
    /// root's. Off, compilation builds every automaton reachable from the root: a
    /// longer compile for no construction in later masks, and a rule whose automaton
    /// blows up after inlining is compiled again with its calls kept rather than built
    /// without the work budget while matching.
    pub lazy_automata: bool,
}

impl Default for CompilerConfig {
    fn default() -> Self {
        CompilerConfig {
            limits: Limits::default(),
            passes: PassConfig::default(),
            mask_cache: true,
            minimize: false,
            precompute_mask_cache: false,
            lazy_automata: true,
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
        let rarely = &converted.rarely_reached;
        self.compile_made_keeping(converted.grammar, &again, finish, rarely, start)
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

    /// Compiles a JSON Schema its caller converted (to read the warnings first), as
    /// [`Compiler::compile_json_schema`] compiles its own conversion: the rules the
    /// conversion found rarely reached stay calls
    /// ([`grammask_syntax::Converted::rarely_reached`]). `start`: when the conversion
    /// started (its time counts against the `compile_time` limit).
    pub fn compile_converted_since(
        &self,
        converted: &grammask_syntax::Converted,
        start: Instant,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let grammar = &converted.grammar;
        let key = || {
            let kept = converted.rarely_reached.join("\n").into_bytes();
            [b"converted".into(), crate::serialize::grammar_bytes(grammar).into(), kept.into()]
        };
        self.cached(key, || {
            let again = || Ok(grammar.clone());
            let finish = converted.all_rules_finish();
            let rarely = &converted.rarely_reached;
            self.compile_made_keeping(grammar.clone(), &again, finish, rarely, start)
        })
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
        self.compile_made_keeping(grammar, again, finish, &[], start)
    }

    /// [`Compiler::compile_made`] with the rules named in `never_inlined` kept calls
    /// ([`PassConfig::never_inlined`]).
    fn compile_made_keeping(
        &self,
        grammar: Grammar,
        again: &dyn Fn() -> Result<Grammar, CompileError>,
        finish: bool,
        never_inlined: &[String],
        start: Instant,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let deadline = Deadline::starting_at(start, self.config.limits.max_compile_time);
        deadline.check("parsing")?;
        let mut passes = self.config.passes.clone();
        passes.never_inlined.extend_from_slice(never_inlined);
        self.compile_uncached(grammar, again, finish, passes, &deadline)
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
        mut passes: PassConfig,
        deadline: &Deadline,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
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
        let (grammar, left_recursive) = passes::run_noting(grammar, passes, deadline)?;
        // Lowers each distinct class once, and counts the nodes and gathers the token sets
        // on the way.
        let mut classes = passes::ClassTable::of(&grammar);
        let size = classes.nodes;
        if size > limits.max_grammar_size {
            return Err(CompileError::Limit {
                name: LimitName::GrammarSize.as_str(),
                message: format!(
                    "the grammar has {size} IR nodes after inlining; the limit is {}",
                    limits.max_grammar_size
                ),
            });
        }
        let (token_sets, token_index) = classes.token_sets();
        checks::check_token_ids(&token_sets, self.vocab.vocab_size())?;
        if !all_productive {
            checks::check_productive(&grammar)?;
            deadline.check("the productivity check")?;
        }
        // A grammar that held no left recursion holds none after the passes (checked in
        // debug builds); one that did may hold what its elimination left.
        if left_recursive {
            checks::check_no_left_recursion(&grammar)?;
            deadline.check("the left-recursion check")?;
        } else {
            debug_assert!(checks::check_no_left_recursion(&grammar).is_ok());
        }
        // The call graph, read by both the summaries and the linear rules.
        let calls = passes::CallGraph::of(&grammar);
        let summaries = self.config.mask_cache.then(|| Summaries::with_calls(&grammar, &calls));
        let has_budgets = classes.has_text_budget();
        let n = grammar.rules.len();
        let recipe = Recipe {
            classes,
            linear: RightLinear::with_calls(&grammar, &calls, passes.inline_max_rule_size),
            spliced: passes::spliced_rules(&grammar.rules, grammar.root, &calls.stays),
            token_index,
            keep_calls: grammar
                .rules
                .iter()
                .map(|r| passes.keep_calls_in.contains(&r.name))
                .collect(),
            max_states: limits.max_automaton_states,
            max_time: limits.max_compile_time,
            minimize: self.config.minimize,
            work: (passes.inlined_work_factor, passes.inlined_work_floor),
        };
        let automata = Automata::new(recipe, n);
        // The root's automaton, which the first mask needs; every rule's reachable from
        // it when built eagerly (or for the precompute, which visits them all).
        let built = if self.config.lazy_automata && !self.config.precompute_mask_cache {
            automata
                .compile(&grammar, grammar.root, deadline)
                .map(|_| ())
                .map_err(|e| (grammar.root, e))
        } else {
            automata.build_reachable(&grammar, When::Compiling(deadline))
        };
        match built {
            Ok(()) => {}
            Err((rule, BuildError::Work)) => {
                return Ok(Attempt::KeepCallsIn(grammar.rules[rule.index()].name.clone()))
            }
            Err((rule, error)) => {
                return Err(automata.compile_error(&grammar, rule, &error, deadline))
            }
        }
        let compiled = CompiledGrammar::assemble(
            self.vocab.clone(),
            grammar,
            automata,
            token_sets,
            limits.clone(),
            summaries,
            has_budgets,
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
        checks::check_token_ids(&parts.token_sets, self.vocab.vocab_size())?;
        checks::check_automata_productive(&parts.grammar, &parts.automata)?;
        checks::check_left_recursion(&parts.grammar, &parts.automata)?;
        let summaries = self.config.mask_cache.then(|| Summaries::of(&parts.grammar));
        let has_budgets = parts.automata.iter().any(Dfa::has_text_budget);
        let automata = Automata::given(parts.automata, parts.grammar.root);
        Ok(Arc::new(CompiledGrammar::assemble(
            self.vocab.clone(),
            parts.grammar,
            automata,
            parts.token_sets,
            parts.limits,
            summaries,
            has_budgets,
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
    /// Every rule's automaton, built on first use.
    pub(crate) automata: Automata,
    pub(crate) token_sets: Vec<TokenSet>,
    pub(crate) limits: Limits,
    pub(crate) initial: Stack,
    /// Heap bytes of the IR (counted per node), counted when first asked for (a walk of
    /// the whole grammar, which no mask needs).
    ir_bytes: std::sync::OnceLock<usize>,
    /// The adaptive token mask cache; `None` when off.
    pub(crate) mask_cache: Option<MaskCache>,
    /// Whether some free text has a token budget ([`crate::Matcher`] then counts tokens
    /// in it).
    pub(crate) has_budgets: bool,
}

impl CompiledGrammar {
    /// The compiled grammar of `automata` (the root's built), with a token mask cache
    /// when given the rules' summaries; `has_budgets`: whether some free text has a
    /// token budget.
    fn assemble(
        vocab: Arc<Vocabulary>,
        grammar: Grammar,
        automata: Automata,
        token_sets: Vec<TokenSet>,
        limits: Limits,
        summaries: Option<Summaries>,
        has_budgets: bool,
    ) -> CompiledGrammar {
        let root = grammar.root;
        let start = automata.finished(root).start();
        let initial = Stack::root(Position { rule: root, state: start });
        let mask_cache = summaries.map(|summaries| {
            MaskCache::new(grammar.rules.len(), summaries, limits.max_mask_cache_bytes)
        });
        CompiledGrammar {
            has_budgets,
            vocab,
            grammar,
            automata,
            token_sets,
            limits,
            initial,
            ir_bytes: std::sync::OnceLock::new(),
            mask_cache,
        }
    }

    /// The grammar as bytes, for [`Compiler::deserialize`] with the same vocabulary, with
    /// every automaton built first. The token mask cache is not included; it refills on
    /// first use. Fails when an automaton not built yet runs into a limit.
    pub fn serialize(&self) -> Result<Vec<u8>, CompileError> {
        self.build_automata()?;
        Ok(crate::serialize::write(
            self.vocab.fingerprint(),
            &self.limits,
            &self.grammar,
            &self.token_sets,
            &self.automata.all(),
        ))
    }

    /// Builds every automaton some matcher may enter now, as
    /// [`CompilerConfig::lazy_automata`] off does at compile time (no mask then pays for
    /// building one). Fails with the limit a rule's construction ran into named.
    pub fn build_automata(&self) -> Result<(), CompileError> {
        self.automata.build_all(&self.grammar).map_err(|(rule, error)| {
            let deadline = Deadline::new(self.limits.max_compile_time);
            self.automata.compile_error(&self.grammar, rule, &error, &deadline)
        })
    }

    /// Heap bytes used: the automata built, the IR (counted per node), the per-state
    /// slots of the token mask cache and its filled entries.
    pub fn memory(&self) -> usize {
        self.automata.memory()
            + *self.ir_bytes.get_or_init(|| {
                self.grammar.size() * std::mem::size_of::<grammask_syntax::ir::Expr>()
            })
            + self.mask_cache.as_ref().map_or(0, MaskCache::fixed_memory)
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

    /// The automaton of `rule`, with every automaton built first
    /// ([`CompiledGrammar::build_automata`]); a rule no state calls (spliced, read in
    /// place, inlined everywhere) has the empty string's.
    pub fn automaton(&self, rule: RuleId) -> Result<&Dfa, CompileError> {
        self.build_automata()?;
        Ok(self.automata.finished(rule))
    }

    /// Number of automaton states built so far (all of them after
    /// [`CompiledGrammar::build_automata`]).
    pub fn num_states(&self) -> usize {
        self.automata.states()
    }

    /// The limits it was compiled with (the matcher enforces the run-time ones).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The automaton of `position`'s rule, one some stack stands in.
    #[inline]
    pub(crate) fn dfa(&self, position: Position) -> &Dfa {
        self.automata.dfa(&self.grammar, position.rule)
    }

    /// The automaton of `rule`, which a closure enters: built now if it is not, or the
    /// limit its construction ran into.
    #[inline]
    pub(crate) fn enter(&self, rule: RuleId) -> Result<&Dfa, MatchError> {
        self.automata.enter(&self.grammar, rule)
    }

    /// Bytes held by the stored entries of the token mask cache (at most the limit
    /// `mask_cache_bytes`).
    pub fn mask_cache_memory(&self) -> usize {
        self.mask_cache.as_ref().map_or(0, MaskCache::entry_memory)
    }

    /// Fills every entry of the token mask cache now, in parallel, instead of on first
    /// use (a longer compile for no first-visit cost later). Fails with the limit
    /// `compile_time` (counted from this call) or `mask_cache_bytes` named; the entries
    /// filled before stay.
    pub fn precompute_mask_cache(&self) -> Result<(), CompileError> {
        self.precompute(&Deadline::new(self.limits.max_compile_time))
    }

    fn precompute(&self, deadline: &Deadline) -> Result<(), CompileError> {
        self.build_automata()?;
        match &self.mask_cache {
            Some(cache) => cache.precompute(self, deadline),
            None => Ok(()),
        }
    }
}
