//! Reading a GRAMMAR argument: a file or `-` (stdin), its format from `--format` or the
//! extension, errors printed as `FILE:LINE:COL: error: MESSAGE` with the source line.

use grammask::{Grammar, GrammarFormat};
use std::io::Read;
use std::path::Path;

/// A grammar read from the command line.
pub struct LoadedGrammar {
    /// The IR.
    pub grammar: Grammar,
    /// The name used in messages.
    pub name: String,
    /// The format it was read in.
    pub format: GrammarFormat,
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
pub fn load_grammar(path: &str, format: Option<&str>, root: &str) -> Result<LoadedGrammar, i32> {
    let format = format_of(path, format)?;
    let text = read_text(path)?;
    let name = if path == "-" { "<stdin>".to_string() } else { path.to_string() };
    match grammask::parse_grammar(&text, format, root) {
        Ok(parsed) => {
            for w in &parsed.warnings {
                eprintln!("{}", w.render(&name, &text));
            }
            Ok(LoadedGrammar { grammar: parsed.grammar, name, format })
        }
        Err(diagnostics) => {
            eprintln!("{}", diagnostics.render(&name, &text));
            Err(EXIT_REJECTED)
        }
    }
}

/// Prints a compile error the way the CLI reports refusals, returns the exit code.
pub fn report_compile_error(name: &str, err: &grammask::CompileError) -> i32 {
    match err {
        grammask::CompileError::Grammar(d) => eprintln!("{name}: {d}"),
        other => eprintln!("{name}: {other}"),
    }
    EXIT_REJECTED
}
