//! `grammask match GRAMMAR [INPUT]`: is the input in the grammar's language?

use super::input::{
    load_grammar_args, read_text, report_refusal, GrammarArgs, LimitArgs, EXIT_REJECTED,
};
use grammask::{byte_vocabulary, GrammarFormat, MatchError, Matcher};

/// Arguments of `grammask match`.
#[derive(clap::Args, Debug)]
pub struct MatchArgs {
    /// The grammar.
    #[command(flatten)]
    pub source: GrammarArgs,
    /// Resource limits.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// The text to match; stdin when absent.
    pub input: Option<String>,
    /// Only ask whether the input can be continued to a match.
    #[arg(long)]
    pub prefix: bool,
}

/// Runs the command; returns the exit code.
pub fn run(args: &MatchArgs) -> i32 {
    // With `--builtin`, a single positional argument is the input.
    let mut source = args.source.clone();
    let mut input_path = args.input.clone();
    if (source.builtin.is_some() || source.structural_tag.is_some()) && input_path.is_none() {
        input_path = source.grammar.take();
    }
    let loaded = match load_grammar_args(&source) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let mut input = match read_text(input_path.as_deref().unwrap_or("-")) {
        Ok(t) => t,
        Err(code) => return code,
    };
    // A JSON document's trailing whitespace (a file's final newline) is not part of the
    // value, as JSON parsers read it.
    if loaded.format == GrammarFormat::JsonSchema {
        input.truncate(input.trim_end_matches([' ', '\t', '\n', '\r']).len());
    }
    let compiled = match loaded.compile(&args.limits.compiler(&byte_vocabulary())) {
        Ok(c) => c,
        Err(e) => return report_refusal(&loaded, &e),
    };
    let mut matcher = Matcher::new(compiled);
    match matcher.accept_bytes(input.as_bytes()) {
        Ok(()) => {}
        Err(MatchError::BytesRejected { offset }) => {
            let (line, column) = line_column(&input, offset);
            let mut probe = matcher.fork();
            let expected = match probe.accept_bytes(&input.as_bytes()[..offset]) {
                Ok(()) => describe_expected(&probe),
                Err(_) => String::new(),
            };
            let found = describe_found(&input.as_bytes()[offset..]);
            println!("rejected at byte {offset} (line {line}, column {column}): {expected}, found {found}");
            return EXIT_REJECTED;
        }
        Err(e) => {
            println!("{e}");
            return EXIT_REJECTED;
        }
    }
    if args.prefix {
        println!("accepted as a prefix");
        0
    } else if matcher.can_terminate() {
        println!("accepted");
        0
    } else {
        let expected = describe_expected(&matcher);
        println!("incomplete: the input is a valid prefix but cannot end here ({expected})");
        EXIT_REJECTED
    }
}

/// 1-based line and column (in characters) of byte `offset`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let loc = grammask::syntax::LineCol::of(text, offset);
    (loc.line, loc.column)
}

fn show_byte(b: u8) -> String {
    match b {
        b'\n' => "'\\n'".to_string(),
        b'\r' => "'\\r'".to_string(),
        b'\t' => "'\\t'".to_string(),
        b'\'' => "'\\''".to_string(),
        0x20..=0x7E => format!("'{}'", b as char),
        _ => format!("'\\x{b:02X}'"),
    }
}

/// What may come next, as byte ranges: `expected one of '"', '0'-'9', '['`.
pub fn describe_expected(matcher: &Matcher) -> String {
    let Ok(allowed) = matcher.next_bytes() else { return "expected nothing".to_string() };
    let mut parts = Vec::new();
    let mut b = 0usize;
    while b < 256 {
        if allowed[b] {
            let start = b;
            while b + 1 < 256 && allowed[b + 1] {
                b += 1;
            }
            parts.push(if start == b {
                show_byte(start as u8)
            } else {
                format!("{}-{}", show_byte(start as u8), show_byte(b as u8))
            });
        }
        b += 1;
    }
    let end = if matcher.can_terminate() { vec!["end of input".to_string()] } else { vec![] };
    parts.extend(end);
    match parts.len() {
        0 => "expected nothing more".to_string(),
        1 => format!("expected {}", parts[0]),
        _ if parts.len() > 12 => {
            format!("expected one of {}, ... ({} ranges)", parts[..12].join(", "), parts.len())
        }
        _ => format!("expected one of {}", parts.join(", ")),
    }
}

fn describe_found(rest: &[u8]) -> String {
    match std::str::from_utf8(rest)
        .ok()
        .and_then(|s| s.chars().next())
        .or_else(|| String::from_utf8_lossy(&rest[..rest.len().min(4)]).chars().next())
    {
        Some(c) if !c.is_control() && c != char::REPLACEMENT_CHARACTER => format!("'{c}'"),
        _ => rest.first().map_or("end of input".to_string(), |&b| show_byte(b)),
    }
}
