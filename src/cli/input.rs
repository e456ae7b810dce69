//! Reading a GRAMMAR argument: a file or `-` (stdin), its format from `--format` or the
//! extension, errors printed as `FILE:LINE:COL: error: MESSAGE` with the source line.

use grammask::syntax::json_schema::{
    Draft, FormatMode, JsonSchemaOptions, PropertyOrder, Whitespace,
};
use grammask::{Grammar, GrammarFormat};
use std::io::Read;
use std::path::{Path, PathBuf};

/// A grammar read from the command line.
pub struct LoadedGrammar {
    /// The IR.
    pub grammar: Grammar,
    /// The name used in messages.
    pub name: String,
    /// The format it was read in.
    pub format: GrammarFormat,
    /// The text it was read from (empty for a built-in grammar), for rendering the
    /// engine's refusals with line:col.
    pub source: String,
    /// The conversion of a JSON Schema file, compiled as the library compiles its own
    /// ([`LoadedGrammar::compile`]).
    pub converted: Option<grammask::syntax::Converted>,
}

impl LoadedGrammar {
    /// Compiles the grammar as the library compiles its format: a JSON Schema with the
    /// rules its conversion found rarely reached kept calls
    /// ([`grammask::Compiler::compile_converted_since`]), anything else as IR.
    pub fn compile(
        &self,
        compiler: &grammask::Compiler,
    ) -> Result<std::sync::Arc<grammask::CompiledGrammar>, grammask::CompileError> {
        match &self.converted {
            Some(converted) => {
                compiler.compile_converted_since(converted, std::time::Instant::now())
            }
            None => compiler.compile_grammar(&self.grammar),
        }
    }
}

/// Exit code for a refused input (invalid grammar, rejected text, limit).
pub const EXIT_REJECTED: i32 = 1;
/// Exit code for a usage error (bad arguments, unreadable file).
pub const EXIT_USAGE: i32 = 2;

/// Reads a whole file, or stdin for `-`.
pub fn read_text(path: &str) -> Result<String, i32> {
    let mut text = String::new();
    let result = if path == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read(path).and_then(|bytes| {
            String::from_utf8(bytes)
                .map(|s| text = s)
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"))
        })
    };
    result.map(|_| text).map_err(|e| {
        eprintln!("grammask: cannot read {path}: {e}");
        EXIT_USAGE
    })
}

/// Decides the format: `--format` when given, else the extension (stdin: GBNF).
pub fn format_of(path: &str, format: Option<&str>) -> Result<GrammarFormat, i32> {
    if let Some(name) = format {
        return GrammarFormat::from_name(name).ok_or_else(|| {
            eprintln!("grammask: unknown format `{name}` (expected gbnf, ebnf, json or regex)");
            EXIT_USAGE
        });
    }
    if path == "-" {
        return Ok(GrammarFormat::Gbnf);
    }
    GrammarFormat::from_path(Path::new(path)).ok_or_else(|| {
        eprintln!(
            "grammask: cannot tell the format of {path} from its extension; \
             use --format gbnf|ebnf|json|regex"
        );
        EXIT_USAGE
    })
}

/// Reads and parses a grammar; prints warnings, and errors with their source lines.
pub fn load_grammar(
    path: &str,
    format: Option<&str>,
    root: &str,
    vocab: Option<&grammask::Vocabulary>,
) -> Result<LoadedGrammar, i32> {
    let format = format_of(path, format)?;
    let text = read_text(path)?;
    let name = if path == "-" { "<stdin>".to_string() } else { path.to_string() };
    let parsed = match vocab {
        Some(vocab) => grammask::parse_grammar_for(&text, format, root, vocab),
        None => grammask::parse_grammar(&text, format, root),
    };
    match parsed {
        Ok(parsed) => {
            for w in &parsed.warnings {
                eprintln!("{}", w.render(&name, &text));
            }
            Ok(LoadedGrammar {
                grammar: parsed.grammar,
                name,
                format,
                source: text,
                converted: None,
            })
        }
        Err(diagnostics) => {
            eprintln!("{}", diagnostics.render(&name, &text));
            Err(EXIT_REJECTED)
        }
    }
}

/// Prints a compile error the way the CLI reports refusals, returns the exit code.
#[cfg_attr(not(feature = "generate"), allow(dead_code))]
pub fn report_compile_error(name: &str, err: &grammask::CompileError) -> i32 {
    match err {
        grammask::CompileError::Grammar(d) => eprintln!("{name}: {d}"),
        other => eprintln!("{name}: {other}"),
    }
    EXIT_REJECTED
}

/// Prints a compile error of `loaded`'s grammar: the engine's refusals of a rule parsed
/// from text as `FILE:LINE:COL: unsupported: ...` with the source line and a caret; returns
/// the exit code.
pub fn report_refusal(loaded: &LoadedGrammar, err: &grammask::CompileError) -> i32 {
    match err {
        grammask::CompileError::Grammar(d) if !loaded.source.is_empty() => {
            eprintln!("{}", d.render(&loaded.name, &loaded.source))
        }
        grammask::CompileError::Grammar(d) => eprintln!("{}: {d}", loaded.name),
        other => eprintln!("{}: {other}", loaded.name),
    }
    EXIT_REJECTED
}

/// The options of the JSON Schema converter, shared by the commands that read schemas.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SchemaArgs {
    /// JSON Schema: whitespace between tokens (`compact`, `flexible` (default: at most one
    /// line break and 32 spaces or tabs), `any`).
    #[arg(long, value_name = "MODE", value_parser = ["compact", "flexible", "any"])]
    pub whitespace: Option<String>,
    /// JSON Schema: a missing `additionalProperties` means `false`.
    #[arg(long)]
    pub strict: bool,
    /// JSON Schema: unsupported keywords become warnings (printed) instead of errors.
    #[arg(long)]
    pub lenient: bool,
    /// JSON Schema: `assert` (default) enforces known formats, `annotation` ignores them.
    #[arg(long, value_name = "MODE", value_parser = ["assert", "annotation"])]
    pub format_mode: Option<String>,
    /// JSON Schema: object properties in any order (instead of the schema's order).
    #[arg(long)]
    pub any_order: bool,
    /// JSON Schema: a document `$ref`s may point to, `URI=FILE` (repeatable): the JSON
    /// file FILE stands for the absolute URI URI.
    #[arg(long = "ref", value_name = "URI=FILE", value_parser = parse_ref)]
    pub refs: Vec<RemoteDocument>,
    /// JSON Schema: every `.json` file under DIR (repeatable), each at its `file://` URI
    /// (and its `$id`), so that a schema read from a file may `$ref` the files beside it
    /// by relative paths.
    #[arg(long, value_name = "DIR", value_parser = parse_ref_dir)]
    pub ref_dir: Vec<RemoteDirectory>,
    /// JSON Schema: the draft of a schema whose `$schema` names none (`4`, `6`, `7`,
    /// `2019-09`, `2020-12`). Without it: 2020-12, also reading the older drafts' forms.
    #[arg(long, value_name = "DRAFT", value_parser = parse_draft)]
    pub draft: Option<Draft>,
}

/// A draft's name, as `--draft` takes it.
fn parse_draft(arg: &str) -> Result<Draft, String> {
    Draft::from_name(arg)
        .ok_or_else(|| format!("`{arg}` is not a draft (4, 6, 7, 2019-09 or 2020-12)"))
}

/// A document for remote `$ref`s: its absolute URI and its JSON.
#[derive(Clone, Debug)]
pub struct RemoteDocument(pub String, pub serde_json::Value);

/// The documents of a `--ref-dir`.
#[derive(Clone, Debug)]
pub struct RemoteDirectory(pub Vec<RemoteDocument>);

fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))
}

/// `URI=FILE`.
fn parse_ref(arg: &str) -> Result<RemoteDocument, String> {
    let (uri, file) = arg.split_once('=').ok_or_else(|| format!("`{arg}` is not URI=FILE"))?;
    if !uri.contains(':') {
        return Err(format!("`{uri}` is not an absolute URI (it has no scheme)"));
    }
    Ok(RemoteDocument(uri.to_string(), read_json(Path::new(file))?))
}

/// Every `.json` file under a directory, at its `file://` URI.
fn parse_ref_dir(arg: &str) -> Result<RemoteDirectory, String> {
    let mut docs = Vec::new();
    let mut pending = vec![PathBuf::from(arg)];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for path in paths {
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == "json") {
                docs.push(RemoteDocument(file_uri(&path)?, read_json(&path)?));
            }
        }
    }
    Ok(RemoteDirectory(docs))
}

/// The `file://` URI of a file (its canonical absolute path, percent-encoded where a URI
/// path needs it).
pub fn file_uri(path: &Path) -> Result<String, String> {
    let absolute = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut uri = String::from("file://");
    for b in absolute.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                uri.push(b as char)
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    Ok(uri)
}

impl SchemaArgs {
    /// The converter options these arguments ask for.
    pub fn options(&self) -> JsonSchemaOptions {
        JsonSchemaOptions {
            whitespace: match self.whitespace.as_deref() {
                Some("compact") => Whitespace::Compact,
                Some("any") => Whitespace::Any,
                _ => Whitespace::default(),
            },
            strict: self.strict,
            lenient: self.lenient,
            format: if self.format_mode.as_deref() == Some("annotation") {
                FormatMode::Annotation
            } else {
                FormatMode::Assert
            },
            property_order: if self.any_order { PropertyOrder::Any } else { PropertyOrder::Schema },
            remote_documents: self
                .refs
                .iter()
                .chain(self.ref_dir.iter().flat_map(|d| &d.0))
                .map(|RemoteDocument(uri, doc)| (uri.clone(), doc.clone()))
                .collect(),
            draft: self.draft,
            ..JsonSchemaOptions::default()
        }
    }
}

/// Where a command's grammar comes from: a file, or a built-in grammar.
#[derive(clap::Args, Debug, Clone)]
pub struct GrammarArgs {
    /// The grammar file (`.gbnf`, `.ebnf`, `.json` for a JSON Schema, `.regex`), or `-`
    /// for stdin (GBNF unless `--format` says otherwise). Not given with `--builtin` or
    /// `--structural-tag`.
    #[arg(required_unless_present_any = ["builtin", "structural_tag"])]
    pub grammar: Option<String>,
    /// A structural tag (XGrammar's JSON format, with or without the outer
    /// `{"type": "structural_tag", "format": ...}`) instead of a grammar file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["builtin", "format"])]
    pub structural_tag: Option<String>,
    /// The grammar's format, when the extension does not say.
    #[arg(long)]
    pub format: Option<String>,
    /// The root rule of a GBNF/EBNF grammar.
    #[arg(long, default_value = "root")]
    pub root: String,
    /// A built-in grammar instead of a file: `json` (any JSON value; the whitespace
    /// option applies).
    #[arg(long, value_name = "NAME", value_parser = ["json"])]
    pub builtin: Option<String>,
    /// JSON Schema options.
    #[command(flatten)]
    pub schema: SchemaArgs,
}

/// Reads the grammar `args` name: a built-in one, or a file parsed in its format (JSON
/// Schemas with the schema options); warnings and errors printed as by [`load_grammar`].
pub fn load_grammar_args(args: &GrammarArgs) -> Result<LoadedGrammar, i32> {
    load_grammar_args_for(args, None)
}

/// [`load_grammar_args`]; a structural tag's tokens named by their text are looked up in
/// `vocab` (with none, such a token is an error).
pub fn load_grammar_args_for(
    args: &GrammarArgs,
    vocab: Option<&grammask::Vocabulary>,
) -> Result<LoadedGrammar, i32> {
    if let Some(path) = &args.structural_tag {
        if let Some(grammar) = &args.grammar {
            eprintln!(
                "grammask: give either GRAMMAR ({grammar}) or --structural-tag {path}, not both"
            );
            return Err(EXIT_USAGE);
        }
        return load_structural_tag(path, vocab);
    }
    if let Some(name) = &args.builtin {
        if let Some(path) = &args.grammar {
            eprintln!("grammask: give either GRAMMAR ({path}) or --builtin {name}, not both");
            return Err(EXIT_USAGE);
        }
        let grammar = grammask::syntax::json_schema::builtin_json_grammar(&args.schema.options());
        return Ok(LoadedGrammar {
            grammar,
            name: format!("builtin:{name}"),
            format: GrammarFormat::JsonSchema,
            source: String::new(),
            converted: None,
        });
    }
    let path = args.grammar.as_deref().unwrap_or("-");
    let format = format_of(path, args.format.as_deref())?;
    if format == GrammarFormat::StructuralTag {
        return load_structural_tag(path, vocab);
    }
    if format != GrammarFormat::JsonSchema {
        return load_grammar(path, args.format.as_deref(), &args.root, vocab);
    }
    load_schema(path, &args.schema)
}

/// Reads and converts a structural tag; prints its errors (each with its JSON pointer).
pub fn load_structural_tag(
    path: &str,
    vocab: Option<&grammask::Vocabulary>,
) -> Result<LoadedGrammar, i32> {
    let text = read_text(path)?;
    let name = if path == "-" { "<stdin>".to_string() } else { path.to_string() };
    let options = grammask::syntax::StructuralTagOptions::default();
    let token_id = |t: &str| vocab.and_then(|v| v.token_id(t.as_bytes()));
    match grammask::syntax::parse_structural_tag(&text, &options, &token_id) {
        Ok(grammar) => {
            let format = GrammarFormat::StructuralTag;
            Ok(LoadedGrammar { grammar, name, format, source: text, converted: None })
        }
        Err(diagnostics) => {
            eprintln!("{}", diagnostics.render(&name, &text));
            Err(EXIT_REJECTED)
        }
    }
}

/// Reads and converts a JSON Schema with the given options; prints warnings, and errors.
pub fn load_schema(path: &str, schema: &SchemaArgs) -> Result<LoadedGrammar, i32> {
    let text = read_text(path)?;
    let name = if path == "-" { "<stdin>".to_string() } else { path.to_string() };
    let mut options = schema.options();
    if path != "-" {
        // Relative `$ref`s resolve against the file's own URI (`--ref-dir` lists its
        // neighbours under theirs).
        options.base_uri = file_uri(Path::new(path)).ok();
    }
    match grammask::syntax::json_schema::parse_json_schema(&text, &options) {
        Ok(converted) => {
            for w in &converted.warnings {
                eprintln!("{}", w.render(&name, &text));
            }
            Ok(LoadedGrammar {
                grammar: converted.grammar.clone(),
                name,
                format: GrammarFormat::JsonSchema,
                source: text,
                converted: Some(converted),
            })
        }
        Err(diagnostics) => {
            eprintln!("{}", diagnostics.render(&name, &text));
            Err(EXIT_REJECTED)
        }
    }
}

/// Resource limits on the command line (each overrides one default of
/// [`grammask::Limits`]); a limit that is hit ends the command with exit 1 and
/// `limit: NAME: ...`.
#[derive(clap::Args, Debug, Default)]
pub struct LimitArgs {
    /// Limit `grammar_size`: IR nodes after the passes (default 2,000,000).
    #[arg(long, value_name = "N")]
    pub max_grammar_size: Option<usize>,
    /// Limit `automaton_states`: NFA states of a rule and DFA states in all (default
    /// 2,000,000).
    #[arg(long, value_name = "N")]
    pub max_automaton_states: Option<usize>,
    /// Limit `live_stacks`: parallel parses alive at one step (default 10,000).
    #[arg(long, value_name = "N")]
    pub max_live_stacks: Option<usize>,
    /// Limit `stack_depth`: nesting of rule calls at run time (default 10,000).
    #[arg(long, value_name = "N")]
    pub max_stack_depth: Option<usize>,
    /// Limit `rollback_history`: steps kept for rollback (default 10,000).
    #[arg(long, value_name = "N")]
    pub max_rollback: Option<usize>,
    /// Limit `compile_time`: milliseconds one compilation may take (default 30,000).
    #[arg(long, value_name = "MS")]
    pub max_compile_ms: Option<u64>,
    /// Limit `mask_cache_bytes`: bytes the token mask cache may store (default 1 GiB);
    /// past it entries are computed without being stored (slower, same masks), and an
    /// eager precompute that does not fit is refused.
    #[arg(long, value_name = "BYTES")]
    pub max_mask_cache_bytes: Option<usize>,
}

impl LimitArgs {
    /// A compiler for `vocab` with these limits.
    pub fn compiler(&self, vocab: &grammask::Vocabulary) -> grammask::Compiler {
        let defaults = grammask::Limits::default();
        let limits = grammask::Limits {
            max_grammar_size: self.max_grammar_size.unwrap_or(defaults.max_grammar_size),
            max_automaton_states: self
                .max_automaton_states
                .unwrap_or(defaults.max_automaton_states),
            max_live_stacks: self.max_live_stacks.unwrap_or(defaults.max_live_stacks),
            max_stack_depth: self.max_stack_depth.unwrap_or(defaults.max_stack_depth),
            max_rollback: self.max_rollback.unwrap_or(defaults.max_rollback),
            max_compile_time: self
                .max_compile_ms
                .map_or(defaults.max_compile_time, std::time::Duration::from_millis),
            max_mask_cache_bytes: self
                .max_mask_cache_bytes
                .unwrap_or(defaults.max_mask_cache_bytes),
        };
        let config = grammask::CompilerConfig { limits, ..grammask::CompilerConfig::default() };
        grammask::Compiler::new(vocab).with_config(config)
    }
}
