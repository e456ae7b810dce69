//! `grammask print GRAMMAR`: the grammar as normalized GBNF on stdout (lookahead
//! assertions in their EBNF form). Exit codes as for `grammask check`.

use super::input::load_grammar;

/// Arguments of `grammask print`.
#[derive(clap::Args, Debug)]
pub struct PrintArgs {
    /// The grammar file (`.gbnf`, `.ebnf`, `.json`, `.regex`), or `-` for stdin (GBNF
    /// unless `--format` says otherwise).
    pub grammar: String,
    /// The grammar's format, when the extension does not say.
    #[arg(long)]
    pub format: Option<String>,
    /// The root rule of a GBNF/EBNF grammar.
    #[arg(long, default_value = "root")]
    pub root: String,
}

/// Runs the command; returns the exit code.
pub fn run(args: &PrintArgs) -> i32 {
    match load_grammar(&args.grammar, args.format.as_deref(), &args.root) {
        Ok(loaded) => {
            print!("{}", grammask::syntax::print::to_gbnf(&loaded.grammar));
            0
        }
        Err(code) => code,
    }
}
