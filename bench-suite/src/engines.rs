//! The engines a benchmark can drive through one interface: grammask always, and with the
//! `peers` feature llguidance 1.9.1 and outlines-core 0.2.14 (pinned in Cargo.toml).
//!
//! Every engine is built from the same [`Vocabulary`]: the peers receive the exact token
//! bytes grammask uses (special tokens marked as such, padding ids empty), the same EOS
//! id, and the same vocabulary size, so one token id means the same bytes everywhere.
//!
//! An [`Engine`] compiles a [`Source`] into a [`Compiled`] grammar; a [`Compiled`] starts
//! any number of [`Walk`]s (one per document), and a walk is the per-step loop of a
//! runtime: compute the mask ([`Walk::fill_mask`], the timed call), look a token up in it,
//! accept the token. [`walk_tokens`] runs that loop over a token sequence and times each
//! mask.

use grammask::engine::GrammarCache;
use grammask::syntax::json_schema::{builtin_json_grammar, JsonSchemaOptions};
use grammask::{bitmask_len, get_bit, CompiledGrammar, Compiler, Matcher, Vocabulary};
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

/// What to compile.
#[derive(Clone, Debug)]
pub enum Source {
    /// A JSON Schema.
    JsonSchema(Value),
    /// A grammar text (root rule `root`) in a grammask format; the peers take GBNF only.
    Grammar {
        /// The text.
        text: String,
        /// Its format.
        format: grammask::GrammarFormat,
    },
    /// Any JSON value: each engine's own built-in JSON grammar.
    BuiltinJson,
}

/// The engines by name, in the order they are reported. `grammask-eager` is grammask
/// filling its whole token mask cache at compile time
/// (`CompilerConfig::precompute_mask_cache`), XGrammar's way: a longer TTFM, and no
/// mask ever pays a first visit.
pub const ENGINES: &[&str] = &["grammask", "grammask-eager", "llguidance", "outlines"];

/// Whether this build has the engine (the peers need the `peers` feature).
pub fn available(name: &str) -> bool {
    matches!(name, "grammask" | "grammask-eager")
        || (cfg!(feature = "peers") && matches!(name, "llguidance" | "outlines"))
}

/// One engine, set up for one vocabulary.
pub trait Engine {
    /// The engine's name (one of [`ENGINES`]).
    fn name(&self) -> &'static str;
    /// Compiles `source`. `warm`: keep and use whatever the engine caches across
    /// grammars (grammask: its compiled-grammar cache); otherwise start from empty caches.
    fn compile(&mut self, source: &Source, warm: bool) -> Result<Box<dyn Compiled>, String>;
    /// Whether [`Engine::compile`] with `warm` differs from a cold compile (an engine
    /// without caches across grammars reports its cold time for both).
    fn has_cross_grammar_cache(&self) -> bool {
        false
    }
}

/// A compiled grammar.
pub trait Compiled {
    /// A new walk from the grammar's start.
    fn start(&self) -> Result<Box<dyn Walk + '_>, String>;
    /// Bytes held by the engine's token mask cache for this grammar, when it tells.
    fn mask_cache_bytes(&self) -> Option<usize> {
        None
    }
}

/// One document's walk through a compiled grammar.
pub trait Walk {
    /// Computes the mask of the allowed next tokens (the call a runtime makes per step).
    fn fill_mask(&mut self) -> Result<(), String>;
    /// Whether the last computed mask allows `id`.
    fn allows(&self, id: u32) -> bool;
    /// Advances by `id`.
    fn accept(&mut self, id: u32) -> Result<(), String>;
}

/// Where a walk stopped on a token the engine refused.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// The step (index into the tokens; `tokens.len()` is the EOS step).
    pub step: usize,
    /// The refused token.
    pub token: u32,
    /// Why: not in the mask, or an error of the engine.
    pub reason: String,
}

/// The mask time of every step of one walk, and where it stopped if a token was refused.
#[derive(Clone, Debug, Default)]
pub struct WalkTimes {
    /// Microseconds per mask, in step order.
    pub steps_us: Vec<f64>,
    /// The refused token, if any (the walk stops there).
    pub refused: Option<Refusal>,
}

/// Walks `tokens` then EOS: at every step times [`Walk::fill_mask`], checks the next
/// token (EOS at the end) is allowed, and accepts it.
pub fn walk_tokens(compiled: &dyn Compiled, tokens: &[u32], eos: u32) -> WalkTimes {
    let mut out = WalkTimes::default();
    let mut walk = match compiled.start() {
        Ok(w) => w,
        Err(reason) => {
            out.refused = Some(Refusal { step: 0, token: eos, reason });
            return out;
        }
    };
    for step in 0..=tokens.len() {
        let id = tokens.get(step).copied().unwrap_or(eos);
        let t = Instant::now();
        let filled = walk.fill_mask();
        out.steps_us.push(t.elapsed().as_secs_f64() * 1e6);
        let refusal = match filled {
            Err(e) => Some(format!("mask: {e}")),
            Ok(()) if !walk.allows(id) => Some("not in the mask".to_string()),
            Ok(()) if step < tokens.len() => walk.accept(id).err().map(|e| format!("accept: {e}")),
            Ok(()) => None,
        };
        if let Some(reason) = refusal {
            out.refused = Some(Refusal { step, token: id, reason });
            break;
        }
    }
    out
}

/// The vocabulary's EOS: its first stop token.
pub fn eos_of(vocab: &Vocabulary) -> Result<u32, String> {
    vocab.stop_tokens().first().copied().ok_or_else(|| "the vocabulary has no stop token".into())
}

/// Default bound of grammask's compiled-grammar cache for warm compiles, bytes.
pub const GRAMMAR_CACHE_BYTES: usize = 1 << 30;

/// Builds an engine by name for `vocab`.
pub fn build(name: &str, vocab: &Arc<Vocabulary>) -> Result<Box<dyn Engine>, String> {
    build_with(name, vocab, GRAMMAR_CACHE_BYTES)
}

/// [`build`], with grammask's compiled-grammar cache bounded to `grammar_cache_bytes`
/// (0: warm compiles keep nothing).
pub fn build_with(
    name: &str,
    vocab: &Arc<Vocabulary>,
    grammar_cache_bytes: usize,
) -> Result<Box<dyn Engine>, String> {
    match name {
        "grammask" => Ok(Box::new(Grammask::with_cache(vocab.clone(), grammar_cache_bytes))),
        "grammask-eager" => {
            let mut engine = Grammask::with_cache(vocab.clone(), grammar_cache_bytes);
            engine.precompute = true;
            Ok(Box::new(engine))
        }
        #[cfg(feature = "peers")]
        "llguidance" => Ok(Box::new(peers::Llguidance::new(vocab)?)),
        #[cfg(feature = "peers")]
        "outlines" => Ok(Box::new(peers::Outlines::new(vocab)?)),
        #[cfg(not(feature = "peers"))]
        "llguidance" | "outlines" => {
            Err(format!("{name}: this build has no peer engines (build with `--features peers`)"))
        }
        _ => Err(format!("unknown engine `{name}` (engines: {})", ENGINES.join(", "))),
    }
}

/// grammask: default [`JsonSchemaOptions`], default compiler settings (with
/// `precompute`, the whole token mask cache filled at compile time).
pub struct Grammask {
    vocab: Arc<Vocabulary>,
    /// The compiled-grammar cache kept across grammars for warm compiles.
    cache: Arc<GrammarCache>,
    /// Whether compiles fill the whole token mask cache (`grammask-eager`).
    pub precompute: bool,
}

impl Grammask {
    /// Set up for `vocab`: the vocabulary-level data is built here, once per tokenizer,
    /// as a server does at startup (llguidance's slicer likewise, in its setup).
    pub fn new(vocab: Arc<Vocabulary>) -> Self {
        Grammask::with_cache(vocab, GRAMMAR_CACHE_BYTES)
    }

    /// [`Grammask::new`] with the compiled-grammar cache bounded to `bytes`.
    pub fn with_cache(vocab: Arc<Vocabulary>, bytes: usize) -> Self {
        grammask::prepare_vocabulary(&vocab);
        Grammask { vocab, cache: Arc::new(GrammarCache::new(bytes)), precompute: false }
    }
}

impl Engine for Grammask {
    fn name(&self) -> &'static str {
        if self.precompute {
            "grammask-eager"
        } else {
            "grammask"
        }
    }

    fn compile(&mut self, source: &Source, warm: bool) -> Result<Box<dyn Compiled>, String> {
        let options = JsonSchemaOptions::default();
        let mut compiler = Compiler::from_arc(self.vocab.clone());
        if self.precompute {
            let config =
                grammask::CompilerConfig { precompute_mask_cache: true, ..Default::default() };
            compiler = compiler.with_config(config);
        }
        if warm {
            compiler = compiler.with_grammar_cache(self.cache.clone());
        }
        let compiled = match source {
            Source::JsonSchema(schema) => compiler.compile_json_schema_value(schema, &options),
            Source::Grammar { text, format } => {
                let grammar = grammask::parse_grammar(text, *format, "root")
                    .map_err(|d| d.to_string())?
                    .grammar;
                compiler.compile_grammar(&grammar)
            }
            Source::BuiltinJson => compiler.compile_grammar(&builtin_json_grammar(&options)),
        }
        .map_err(|e| e.to_string())?;
        Ok(Box::new(GrammaskCompiled { compiled }))
    }

    fn has_cross_grammar_cache(&self) -> bool {
        true
    }
}

struct GrammaskCompiled {
    compiled: Arc<CompiledGrammar>,
}

impl Compiled for GrammaskCompiled {
    fn start(&self) -> Result<Box<dyn Walk + '_>, String> {
        let words = bitmask_len(self.compiled.vocabulary().vocab_size());
        Ok(Box::new(GrammaskWalk {
            matcher: Matcher::new(self.compiled.clone()),
            mask: vec![0; words],
        }))
    }

    fn mask_cache_bytes(&self) -> Option<usize> {
        Some(self.compiled.mask_cache_memory())
    }
}

struct GrammaskWalk {
    matcher: Matcher,
    mask: Vec<u32>,
}

impl Walk for GrammaskWalk {
    fn fill_mask(&mut self) -> Result<(), String> {
        self.matcher.fill_next_token_bitmask(&mut self.mask).map_err(|e| e.to_string())
    }

    fn allows(&self, id: u32) -> bool {
        (id as usize) < self.mask.len() * 32 && get_bit(&self.mask, id)
    }

    fn accept(&mut self, id: u32) -> Result<(), String> {
        self.matcher.accept_token(id).map_err(|e| e.to_string())
    }
}

/// The token bytes of every id below `vocab_size` (empty for ids without a token), and
/// whether each id is special.
pub fn token_table(vocab: &Vocabulary) -> Vec<(Vec<u8>, bool)> {
    (0..vocab.vocab_size() as u32)
        .map(|id| {
            let bytes = vocab.token_bytes(id).map(<[u8]>::to_vec).unwrap_or_default();
            (bytes, vocab.is_special(id))
        })
        .collect()
}

#[cfg(feature = "peers")]
mod peers {
    use super::*;

    /// llguidance 1.9.1: a `ParserFactory` over a `TokTrie` of the same token bytes
    /// (special tokens 0xFF-prefixed, as toktrie marks them). The factory (its slicer, a
    /// per-vocabulary precomputation) is built once, like grammask's vocabulary data.
    pub struct Llguidance {
        factory: llguidance::ParserFactory,
        eos: u32,
    }

    impl Llguidance {
        pub fn new(vocab: &Vocabulary) -> Result<Self, String> {
            use toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie};
            let eos = eos_of(vocab)?;
            let words: Vec<Vec<u8>> = token_table(vocab)
                .into_iter()
                .map(|(bytes, special)| {
                    if special {
                        let mut w = vec![0xFF];
                        w.extend_from_slice(&bytes);
                        w
                    } else {
                        bytes
                    }
                })
                .collect();
            let info = TokRxInfo::new(words.len() as u32, eos);
            let trie = TokTrie::from(&info, &words);
            let env: TokEnv = Arc::new(ApproximateTokEnv::new(trie));
            let mut factory =
                llguidance::ParserFactory::new_simple(&env).map_err(|e| e.to_string())?;
            factory.quiet();
            Ok(Llguidance { factory, eos })
        }
    }

    /// llama.cpp's GBNF written as llguidance's lark: comments dropped, each rule on one
    /// line as `name: body`, character classes `[...]` as lark regexes `/[...]/`, and the empty
    /// alternative (`ws ::= | " " | ...`, which lark has not) as an optional group.
    pub fn gbnf_for_llguidance(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    out.push(c);
                    while let Some(d) = chars.next() {
                        out.push(d);
                        if d == '\\' {
                            out.extend(chars.next());
                        } else if d == '"' {
                            break;
                        }
                    }
                }
                '[' => {
                    out.push_str("/[");
                    while let Some(d) = chars.next() {
                        match d {
                            '\\' => {
                                out.push(d);
                                out.extend(chars.next());
                            }
                            '/' => out.push_str("\\/"),
                            ']' => {
                                out.push_str("]/");
                                break;
                            }
                            _ => out.push(d),
                        }
                    }
                }
                '#' => {
                    while chars.peek().is_some_and(|&d| d != '\n') {
                        chars.next();
                    }
                }
                _ => out.push(c),
            }
        }
        let mut rules: Vec<String> = Vec::new();
        for line in out.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match rules.last_mut() {
                Some(rule) if !line.contains("::=") => {
                    rule.push(' ');
                    rule.push_str(line);
                }
                _ => rules.push(line.to_string()),
            }
        }
        // lark starts at `start`; GBNF at `root`.
        let start = std::iter::once("start: root".to_string());
        start
            .chain(rules.into_iter().map(|rule| match rule.split_once("::=") {
                Some((head, body)) if body.trim_start().starts_with('|') => {
                    format!("{}: ({})?", head.trim(), body.trim_start().trim_start_matches('|'))
                }
                Some((head, body)) => format!("{}: {}", head.trim(), body.trim()),
                None => rule,
            }))
            .collect::<Vec<_>>()
            .join("\n")
    }

    impl Engine for Llguidance {
        fn name(&self) -> &'static str {
            "llguidance"
        }

        fn compile(&mut self, source: &Source, _warm: bool) -> Result<Box<dyn Compiled>, String> {
            use llguidance::api::TopLevelGrammar;
            let grammar = match source {
                Source::JsonSchema(schema) => TopLevelGrammar::from_json_schema(schema.clone()),
                Source::Grammar { text, format: grammask::GrammarFormat::Gbnf } => {
                    TopLevelGrammar::from_lark(gbnf_for_llguidance(text))
                }
                Source::Grammar { .. } => {
                    return Err("llguidance is compared on GBNF grammars only".to_string())
                }
                Source::BuiltinJson => TopLevelGrammar::from_json_schema(serde_json::json!({})),
            };
            let parser = self.factory.create_parser(grammar).map_err(|e| e.to_string())?;
            let matcher = llguidance::Matcher::new(Ok(parser));
            if let Some(e) = matcher.get_error() {
                return Err(e);
            }
            Ok(Box::new(LlgCompiled { matcher, eos: self.eos }))
        }
    }

    struct LlgCompiled {
        matcher: llguidance::Matcher,
        eos: u32,
    }

    impl Compiled for LlgCompiled {
        fn start(&self) -> Result<Box<dyn Walk + '_>, String> {
            // A plain clone shares the grammar's lexer caches, as sequences of one
            // grammar in a server do (grammask's matchers share the mask cache).
            Ok(Box::new(LlgWalk { matcher: self.matcher.clone(), mask: None, eos: self.eos }))
        }
    }

    struct LlgWalk {
        matcher: llguidance::Matcher,
        mask: Option<toktrie::SimpleVob>,
        eos: u32,
    }

    impl Walk for LlgWalk {
        fn fill_mask(&mut self) -> Result<(), String> {
            // `compute_mask_or_eos`: once the grammar is complete and stopped, the mask is
            // EOS alone (plain `compute_mask` errs there).
            self.mask = Some(self.matcher.compute_mask_or_eos().map_err(|e| e.to_string())?);
            Ok(())
        }

        fn allows(&self, id: u32) -> bool {
            match &self.mask {
                Some(m) => (id as usize) < m.len() && m.is_allowed(id),
                None => false,
            }
        }

        fn accept(&mut self, id: u32) -> Result<(), String> {
            if id == self.eos {
                return Ok(());
            }
            self.matcher.consume_token(id).map_err(|e| e.to_string())
        }
    }

    /// outlines-core 0.2.14: JSON Schema → regex (`json_schema::regex_from_value`,
    /// default whitespace), then `Index::new` over a `Vocabulary` of the same non-special
    /// token bytes; the index holds, per DFA state, the allowed tokens and next states
    /// (built for the whole vocabulary at compile time). A mask is the Guide's
    /// `write_mask_into`: clear the bitmask, set the bits of `allowed_tokens_iter`.
    pub struct Outlines {
        vocabulary: outlines_core::prelude::Vocabulary,
        vocab_size: usize,
    }

    impl Outlines {
        pub fn new(vocab: &Vocabulary) -> Result<Self, String> {
            let eos = eos_of(vocab)?;
            let mut vocabulary = outlines_core::prelude::Vocabulary::new(eos);
            for (id, (bytes, special)) in token_table(vocab).into_iter().enumerate() {
                if special || bytes.is_empty() || id as u32 == eos {
                    continue;
                }
                vocabulary.try_insert(bytes, id as u32).map_err(|e| e.to_string())?;
            }
            Ok(Outlines { vocabulary, vocab_size: vocab.vocab_size() })
        }
    }

    impl Engine for Outlines {
        fn name(&self) -> &'static str {
            "outlines"
        }

        fn compile(&mut self, source: &Source, _warm: bool) -> Result<Box<dyn Compiled>, String> {
            let Source::JsonSchema(schema) = source else {
                return Err("outlines-core takes JSON Schemas and regexes only".to_string());
            };
            let regex = outlines_core::json_schema::regex_from_value(schema, None, None)
                .map_err(|e| e.to_string())?;
            let index = outlines_core::prelude::Index::new(&regex, &self.vocabulary)
                .map_err(|e| e.to_string())?;
            Ok(Box::new(OutlinesCompiled { index, words: bitmask_len(self.vocab_size) }))
        }
    }

    struct OutlinesCompiled {
        index: outlines_core::prelude::Index,
        words: usize,
    }

    impl Compiled for OutlinesCompiled {
        fn start(&self) -> Result<Box<dyn Walk + '_>, String> {
            Ok(Box::new(OutlinesWalk {
                index: &self.index,
                state: Some(self.index.initial_state()),
                mask: vec![0; self.words],
            }))
        }
    }

    struct OutlinesWalk<'a> {
        index: &'a outlines_core::prelude::Index,
        state: Option<outlines_core::prelude::StateId>,
        mask: Vec<u32>,
    }

    impl Walk for OutlinesWalk<'_> {
        fn fill_mask(&mut self) -> Result<(), String> {
            self.mask.iter_mut().for_each(|w| *w = 0);
            let state = self.state.ok_or("no state")?;
            let allowed = self.index.allowed_tokens_iter(&state).ok_or("state not in the index")?;
            for &id in allowed {
                if let Some(w) = self.mask.get_mut((id >> 5) as usize) {
                    *w |= 1 << (id & 31);
                }
            }
            Ok(())
        }

        fn allows(&self, id: u32) -> bool {
            (id as usize) < self.mask.len() * 32 && get_bit(&self.mask, id)
        }

        fn accept(&mut self, id: u32) -> Result<(), String> {
            let state = self.state.ok_or("no state")?;
            self.state = self.index.next_state(&state, &id);
            self.state.map(|_| ()).ok_or_else(|| format!("no transition for token {id}"))
        }
    }
}

#[cfg(feature = "peers")]
pub use peers::gbnf_for_llguidance;

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes `a`, `b`, `ab`, EOS (id 3, special), `"`.
    fn vocab() -> Arc<Vocabulary> {
        let tokens = [&b"a"[..], b"b", b"ab", b"</s>", b"\""].map(<[u8]>::to_vec).to_vec();
        Arc::new(Vocabulary::from_byte_tokens(tokens, &[3], &[3], None).expect("vocabulary"))
    }

    fn gbnf(text: &str) -> Source {
        Source::Grammar { text: text.to_string(), format: grammask::GrammarFormat::Gbnf }
    }

    #[test]
    fn grammask_walk_times_every_step_and_records_a_refused_token() {
        let vocab = vocab();
        let eos = eos_of(&vocab).expect("eos");
        let mut engine = build("grammask", &vocab).expect("engine");
        let compiled = engine.compile(&gbnf("root ::= \"ab\" \"a\"*"), false).expect("compiles");
        let ok = walk_tokens(compiled.as_ref(), &[2, 0], eos);
        assert_eq!((ok.steps_us.len(), ok.refused), (3, None));
        let bad = walk_tokens(compiled.as_ref(), &[0, 0], eos);
        assert_eq!(bad.steps_us.len(), 2);
        let refused = bad.refused.expect("refused");
        assert_eq!((refused.step, refused.token), (1, 0));
        // EOS before the grammar can end is refused too.
        let early = walk_tokens(compiled.as_ref(), &[0], eos);
        assert_eq!(early.refused.map(|r| (r.step, r.token)), Some((1, eos)));
        assert!(compiled.mask_cache_bytes().is_some());
        assert!(engine.compile(&gbnf("root ::= ("), true).is_err());
    }

    /// `grammask-eager` fills its mask cache at compile time and walks like grammask.
    #[test]
    fn eager_grammask_fills_its_cache_at_compile_time() {
        let vocab = vocab();
        let eos = eos_of(&vocab).expect("eos");
        let source = gbnf("root ::= \"ab\" \"a\"*");
        let lazy = build("grammask", &vocab).expect("engine").compile(&source, false).unwrap();
        let mut eager_engine = build("grammask-eager", &vocab).expect("engine");
        assert_eq!(eager_engine.name(), "grammask-eager");
        let eager = eager_engine.compile(&source, false).unwrap();
        assert_eq!(lazy.mask_cache_bytes(), Some(0));
        assert!(eager.mask_cache_bytes().is_some_and(|b| b > 0));
        for tokens in [&[2, 0][..], &[0, 0], &[0]] {
            let (a, b) =
                (walk_tokens(lazy.as_ref(), tokens, eos), walk_tokens(eager.as_ref(), tokens, eos));
            assert_eq!(a.steps_us.len(), b.steps_us.len());
            assert_eq!(a.refused.map(|r| (r.step, r.token)), b.refused.map(|r| (r.step, r.token)));
        }
    }

    #[test]
    fn unknown_engines_are_refused() {
        assert!(available("grammask"));
        assert!(build("nonesuch", &vocab()).is_err());
    }

    #[cfg(feature = "peers")]
    #[test]
    fn peers_walk_the_same_tokens() {
        let vocab = vocab();
        let eos = eos_of(&vocab).expect("eos");
        let schema = serde_json::json!({"type": "string", "enum": ["ab", "aa"]});
        for name in ["llguidance", "outlines"] {
            let mut engine = build(name, &vocab).expect("engine");
            let compiled = engine.compile(&Source::JsonSchema(schema.clone()), false).unwrap();
            let ok = walk_tokens(compiled.as_ref(), &[4, 2, 4], eos);
            assert_eq!((ok.steps_us.len(), ok.refused), (4, None), "{name}");
            let bad = walk_tokens(compiled.as_ref(), &[4, 1, 4], eos);
            assert_eq!(bad.refused.map(|r| (r.step, r.token)), Some((1, 1)), "{name}");
        }
        let lark = gbnf_for_llguidance("root ::= x # c\nx ::=\n  | [a-b]\n");
        assert_eq!(lark, "start: root\nroot: x\nx: ( /[a-b]/)?");
    }
}
