//! `grammask.Compiler` and `grammask.CompiledGrammar`: grammars of every format compiled
//! for one vocabulary, with the engine's limits and grammar cache.

use crate::errors::{compile_error, Source};
use crate::vocab::{extract_vocab, Vocabulary};
use grammask::engine::GrammarCache;
use grammask::syntax::json_schema::{FormatMode, PropertyOrder, Whitespace};
use grammask::syntax::{Expr, GrammarBuilder, JsonSchemaOptions};
use grammask::{
    CompileError, CompiledGrammar as RustCompiled, Compiler as RustCompiler, CompilerConfig,
    GrammarFormat, Limits,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What pickling a compiled grammar gives: `CompiledGrammar.deserialize` and its arguments.
type Reduced<'py> = (Bound<'py, PyAny>, (Vocabulary, Bound<'py, PyBytes>));

/// A compiled grammar: immutable, shared by every matcher made from it (across threads),
/// picklable (with its vocabulary).
#[pyclass(module = "grammask", frozen)]
pub struct CompiledGrammar {
    pub(crate) inner: Arc<RustCompiled>,
}

#[pymethods]
impl CompiledGrammar {
    /// The vocabulary the grammar was compiled for.
    #[getter]
    fn vocabulary(&self) -> Vocabulary {
        Vocabulary { inner: self.inner.vocabulary().clone() }
    }

    /// The logits width of that vocabulary (the bitmask holds `ceil(vocab_size / 32)`
    /// int32 words per row).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.vocabulary().vocab_size()
    }

    /// Heap bytes the grammar holds, its token mask cache included (which grows as
    /// matchers visit new positions).
    #[getter]
    fn memory_size_bytes(&self) -> usize {
        self.inner.memory()
    }

    /// Automaton states of all rules.
    #[getter]
    fn num_states(&self) -> usize {
        self.inner.num_states()
    }

    /// The grammar as GBNF text, as the compiler sees it after its passes.
    fn __str__(&self) -> String {
        grammask::syntax::print::to_gbnf(self.inner.grammar())
    }

    fn __repr__(&self) -> String {
        format!(
            "CompiledGrammar(states={}, vocab_size={})",
            self.inner.num_states(),
            self.inner.vocabulary().vocab_size()
        )
    }

    /// The compiled grammar in grammask's versioned binary format, tied to the
    /// vocabulary (`CompiledGrammar.deserialize` checks it). Every automaton is built
    /// first; raises `LimitExceeded` when one runs into a limit.
    fn serialize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| self.inner.serialize());
        let bytes =
            bytes.map_err(|e| compile_error(py, e, &Source { name: "<compiled>", text: "" }))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Loads `serialize()`'s bytes for `vocab` (the vocabulary it was compiled for).
    #[staticmethod]
    fn deserialize(
        py: Python<'_>,
        vocab: &Bound<'_, PyAny>,
        data: Vec<u8>,
    ) -> PyResult<CompiledGrammar> {
        let vocab = extract_vocab(vocab)?;
        let made = py.detach(|| RustCompiler::from_arc(vocab).deserialize(&data));
        made.map(|inner| CompiledGrammar { inner })
            .map_err(|e| compile_error(py, e, &Source { name: "<serialized>", text: "" }))
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let py = slf.py();
        let ctor = py.get_type::<CompiledGrammar>().getattr("deserialize")?;
        let this = slf.get();
        Ok((ctor, (this.vocabulary(), this.serialize(py)?)))
    }
}

/// Compiles grammars (JSON Schema, GBNF, EBNF, regex, choices) for one vocabulary.
///
/// Compiled grammars are kept in a cache of `cache_bytes` (keyed by the grammar's source
/// and the settings), so compiling the same grammar again is a lookup; 0 keeps none.
/// The limits are keyword arguments with the engine's defaults; a limit that is hit
/// raises `LimitExceeded` naming it.
#[pyclass(module = "grammask", frozen)]
pub struct Compiler {
    inner: RustCompiler,
    cache: Option<Arc<GrammarCache>>,
}

fn whitespace_of(whitespace: &str, max_whitespace_run: u32) -> PyResult<Whitespace> {
    match whitespace {
        "flexible" => Ok(Whitespace::Flexible { max_run: max_whitespace_run }),
        "compact" => Ok(Whitespace::Compact),
        "any" => Ok(Whitespace::Any),
        other => Err(PyValueError::new_err(format!(
            "whitespace={other:?}: expected \"flexible\", \"compact\" or \"any\""
        ))),
    }
}

impl Compiler {
    fn compile(
        &self,
        py: Python<'_>,
        name: &str,
        text: &str,
        run: impl FnOnce(&RustCompiler) -> Result<Arc<RustCompiled>, CompileError> + Send,
    ) -> PyResult<CompiledGrammar> {
        let compiler = &self.inner;
        let made = py.detach(|| run(compiler));
        made.map(|inner| CompiledGrammar { inner })
            .map_err(|e| compile_error(py, e, &Source { name, text }))
    }

    /// A GBNF or EBNF grammar whose root rule is `root`.
    fn compile_bnf(
        &self,
        py: Python<'_>,
        text: &str,
        root: &str,
        format: GrammarFormat,
    ) -> PyResult<CompiledGrammar> {
        let name = if format == GrammarFormat::Gbnf { "<gbnf>" } else { "<ebnf>" };
        self.compile(py, name, text, |c| {
            if root == "root" {
                return if format == GrammarFormat::Gbnf {
                    c.compile_gbnf(text)
                } else {
                    c.compile_ebnf(text)
                };
            }
            let start = Instant::now();
            let parsed = grammask::parse_grammar_for(text, format, root, c.vocabulary())
                .map_err(CompileError::Grammar)?;
            c.compile_grammar_since(&parsed.grammar, start)
        })
    }
}

/// JSON text from a str (as it is), an object with `model_dump_json` (pydantic v2), or a
/// JSON-serializable value.
fn json_text(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if let Ok(s) = value.cast::<PyString>() {
        return s.extract();
    }
    if value.hasattr("model_dump_json")? && !value.is_instance_of::<pyo3::types::PyType>() {
        return value.call_method0("model_dump_json")?.extract();
    }
    let json = value.py().import("json")?;
    json.getattr("dumps")?.call1((value,))?.extract().map_err(|_| {
        PyTypeError::new_err(format!("{what}: expected JSON text or a JSON-serializable value"))
    })
}

/// The JSON text of a schema given as a str, a JSON-serializable value (dict, bool) or a
/// pydantic model class.
fn schema_text(schema: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = schema.cast::<PyString>() {
        return s.extract();
    }
    let py = schema.py();
    let value = if schema.hasattr("model_json_schema")? {
        schema.call_method0("model_json_schema")?
    } else if schema.hasattr("schema_json")? && schema.hasattr("__fields__")? {
        // pydantic v1 models.
        return schema.call_method0("schema_json")?.extract();
    } else {
        schema.clone()
    };
    let json = py.import("json")?;
    json.getattr("dumps")?.call1((value,))?.extract().map_err(|_| {
        PyTypeError::new_err("schema: expected a JSON Schema as str, dict or pydantic model class")
    })
}

#[pymethods]
impl Compiler {
    /// A compiler for `vocab`. Limits (`None`: the engine's default): `max_grammar_size`
    /// (IR nodes, 2,000,000), `max_automaton_states` (2,000,000), `max_live_stacks`
    /// (10,000), `max_stack_depth` (10,000), `max_rollback` (10,000 steps kept by each
    /// matcher unless the matcher says otherwise), `max_compile_ms` (30,000),
    /// `max_mask_cache_bytes` (1 GiB); `precompute_mask_cache` fills every token mask
    /// at compile time (a longer compile, no first visit in any mask); `lazy_automata`
    /// (default) builds each rule's automaton when a matcher first enters the rule, off
    /// all of them at compile time (a longer compile, no construction in any mask).
    #[new]
    #[pyo3(signature = (vocab, cache_bytes=1 << 30, *, max_grammar_size=None, max_automaton_states=None,
        max_live_stacks=None, max_stack_depth=None, max_rollback=None, max_compile_ms=None,
        max_mask_cache_bytes=None, precompute_mask_cache=false, lazy_automata=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        vocab: &Bound<'_, PyAny>,
        cache_bytes: usize,
        max_grammar_size: Option<usize>,
        max_automaton_states: Option<usize>,
        max_live_stacks: Option<usize>,
        max_stack_depth: Option<usize>,
        max_rollback: Option<usize>,
        max_compile_ms: Option<u64>,
        max_mask_cache_bytes: Option<usize>,
        precompute_mask_cache: bool,
        lazy_automata: bool,
    ) -> PyResult<Compiler> {
        let vocab = extract_vocab(vocab)?;
        let d = Limits::default();
        let limits = Limits {
            max_grammar_size: max_grammar_size.unwrap_or(d.max_grammar_size),
            max_automaton_states: max_automaton_states.unwrap_or(d.max_automaton_states),
            max_live_stacks: max_live_stacks.unwrap_or(d.max_live_stacks),
            max_stack_depth: max_stack_depth.unwrap_or(d.max_stack_depth),
            max_rollback: max_rollback.unwrap_or(d.max_rollback),
            max_compile_time: max_compile_ms.map_or(d.max_compile_time, Duration::from_millis),
            max_mask_cache_bytes: max_mask_cache_bytes.unwrap_or(d.max_mask_cache_bytes),
        };
        let config = CompilerConfig {
            limits,
            precompute_mask_cache,
            lazy_automata,
            ..CompilerConfig::default()
        };
        let mut inner = RustCompiler::from_arc(vocab).with_config(config);
        let cache = (cache_bytes > 0).then(|| Arc::new(GrammarCache::new(cache_bytes)));
        if let Some(cache) = &cache {
            inner = inner.with_grammar_cache(cache.clone());
        }
        Ok(Compiler { inner, cache })
    }

    /// The vocabulary.
    #[getter]
    fn vocabulary(&self) -> Vocabulary {
        Vocabulary { inner: self.inner.vocabulary().clone() }
    }

    /// Compiles a JSON Schema (a str, a dict or a pydantic model class).
    ///
    /// `any_order`: object properties in any order (default: the order of the schema's
    /// `properties`). `whitespace`: `"flexible"` (between tokens, at most one line break
    /// then at most `max_whitespace_run` spaces or tabs), `"compact"` (none) or `"any"`.
    /// `strict`: a missing `additionalProperties` means false. `format_mode`:
    /// `"assert"` enforces the known formats, `"annotation"` ignores them. `lenient`:
    /// unsupported keywords are left out instead of raising `SchemaUnsupported`.
    #[pyo3(signature = (schema, *, any_order=false, whitespace="flexible", strict=false,
        format_mode="assert", lenient=false, max_whitespace_run=32))]
    #[allow(clippy::too_many_arguments)]
    fn compile_json_schema(
        &self,
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        any_order: bool,
        whitespace: &str,
        strict: bool,
        format_mode: &str,
        lenient: bool,
        max_whitespace_run: u32,
    ) -> PyResult<CompiledGrammar> {
        let text = schema_text(schema)?;
        let options = JsonSchemaOptions {
            whitespace: whitespace_of(whitespace, max_whitespace_run)?,
            strict,
            lenient,
            format: match format_mode {
                "assert" => FormatMode::Assert,
                "annotation" => FormatMode::Annotation,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "format_mode={other:?}: expected \"assert\" or \"annotation\""
                    )))
                }
            },
            property_order: if any_order { PropertyOrder::Any } else { PropertyOrder::Schema },
            ..JsonSchemaOptions::default()
        };
        self.compile(py, "<schema>", &text, |c| c.compile_json_schema(&text, &options))
    }

    /// Compiles a structural tag (XGrammar's format: free text, tags, triggered tool
    /// calls), given as JSON text, a dict, or an object with `model_dump_json` (a
    /// pydantic model such as `xgrammar.StructuralTag`); the outer
    /// `{"type": "structural_tag", "format": ...}` may be left out.
    /// `max_free_text_tokens`: the token budget of free text that sets no `max_tokens`.
    #[pyo3(signature = (tag, *, max_free_text_tokens=None))]
    fn compile_structural_tag(
        &self,
        py: Python<'_>,
        tag: &Bound<'_, PyAny>,
        max_free_text_tokens: Option<u32>,
    ) -> PyResult<CompiledGrammar> {
        let text = json_text(tag, "tag")?;
        self.compile(py, "<structural tag>", &text, |c| {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                CompileError::Grammar(grammask::Diagnostics::one(grammask::Diagnostic::global(
                    format!("the structural tag is not valid JSON: {e}"),
                )))
            })?;
            let options = grammask::syntax::StructuralTagOptions {
                max_free_text_tokens,
                ..Default::default()
            };
            c.compile_structural_tag(&value, &options)
        })
    }

    /// Compiles the tool calls of OpenAI-style `tools` (a list of
    /// `{"type": "function", "function": {...}}`, as JSON text or Python values):
    /// `tool_choice` `"auto"`, `"required"`, `"none"`, a function's name or
    /// `{"type": "function", "function": {"name": ...}}`; `format` `"hermes"` (Qwen,
    /// ChatML models) or `"llama3"`; `parallel_tool_calls`; `reasoning`: a
    /// `<think>…</think>` block first; `max_reasoning_tokens`, `max_text_tokens`: token
    /// budgets of the thinking and of the text around calls (once spent, the text must
    /// end).
    #[pyo3(signature = (tools, tool_choice=None, *, format="hermes", parallel_tool_calls=false,
        reasoning=false, max_reasoning_tokens=None, max_text_tokens=None))]
    #[allow(clippy::too_many_arguments)]
    fn compile_tools(
        &self,
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        tool_choice: Option<&Bound<'_, PyAny>>,
        format: &str,
        parallel_tool_calls: bool,
        reasoning: bool,
        max_reasoning_tokens: Option<u32>,
        max_text_tokens: Option<u32>,
    ) -> PyResult<CompiledGrammar> {
        use grammask::syntax::{ToolCallFormat, ToolChoice, ToolsOptions};
        let text = json_text(tools, "tools")?;
        let choice = match tool_choice {
            None => ToolChoice::Auto,
            Some(c) if c.is_instance_of::<PyString>() => {
                ToolChoice::from_name(&c.extract::<String>()?)
            }
            Some(c) => {
                let value: serde_json::Value = serde_json::from_str(&json_text(c, "tool_choice")?)
                    .map_err(|e| PyValueError::new_err(format!("tool_choice: {e}")))?;
                ToolChoice::from_value(&value)
                    .map_err(|d| PyValueError::new_err(format!("tool_choice: {d}")))?
            }
        };
        let format = ToolCallFormat::from_name(format).ok_or_else(|| {
            PyValueError::new_err(format!("format={format:?}: expected \"hermes\" or \"llama3\""))
        })?;
        let options = ToolsOptions {
            format,
            choice,
            parallel: parallel_tool_calls,
            reasoning,
            max_reasoning_tokens,
            max_text_tokens,
        };
        self.compile(py, "<tools>", &text, |c| {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                CompileError::Grammar(grammask::Diagnostics::one(grammask::Diagnostic::global(
                    format!("the tools are not valid JSON: {e}"),
                )))
            })?;
            c.compile_tools(&value, &options)
        })
    }

    /// Compiles GBNF (llama.cpp's dialect) whose root rule is `root`.
    #[pyo3(signature = (text, root="root"))]
    fn compile_gbnf(&self, py: Python<'_>, text: &str, root: &str) -> PyResult<CompiledGrammar> {
        self.compile_bnf(py, text, root, GrammarFormat::Gbnf)
    }

    /// Compiles EBNF (XGrammar's dialect, a superset of GBNF) whose root rule is `root`.
    #[pyo3(signature = (text, root="root"))]
    fn compile_ebnf(&self, py: Python<'_>, text: &str, root: &str) -> PyResult<CompiledGrammar> {
        self.compile_bnf(py, text, root, GrammarFormat::Ebnf)
    }

    /// Compiles a regular expression (ECMA-262 syntax) that must match the whole text.
    fn compile_regex(&self, py: Python<'_>, pattern: &str) -> PyResult<CompiledGrammar> {
        self.compile(py, "<regex>", pattern, |c| c.compile_regex(pattern))
    }

    /// Compiles the grammar of any JSON value (as `json.gbnf`).
    #[pyo3(signature = (*, whitespace="flexible", max_whitespace_run=32))]
    fn compile_builtin_json(
        &self,
        py: Python<'_>,
        whitespace: &str,
        max_whitespace_run: u32,
    ) -> PyResult<CompiledGrammar> {
        let options = JsonSchemaOptions {
            whitespace: whitespace_of(whitespace, max_whitespace_run)?,
            ..JsonSchemaOptions::default()
        };
        let grammar = grammask::syntax::json_schema::builtin_json_grammar(&options);
        self.compile(py, "<builtin json>", "", |c| c.compile_grammar(&grammar))
    }

    /// Compiles a choice among literal strings: the output is exactly one of them.
    fn compile_choice(&self, py: Python<'_>, choices: Vec<String>) -> PyResult<CompiledGrammar> {
        if choices.is_empty() {
            return Err(PyValueError::new_err("compile_choice: at least one choice is needed"));
        }
        let mut g = GrammarBuilder::new();
        let root = g.declare("root");
        g.define(root, Expr::choice(choices.iter().map(|c| Expr::literal(c)).collect()));
        let grammar =
            g.finish(root).map_err(|e| PyValueError::new_err(format!("undefined rule {}", e.0)))?;
        self.compile(py, "<choice>", "", |c| c.compile_grammar(&grammar))
    }

    /// Compiled grammars in the cache, and their bytes.
    #[getter]
    fn cache_size(&self) -> (usize, usize) {
        self.cache.as_ref().map_or((0, 0), |c| (c.len(), c.memory()))
    }

    /// Empties the grammar cache.
    fn clear_cache(&self) {
        if let Some(cache) = &self.cache {
            cache.clear();
        }
    }
}
