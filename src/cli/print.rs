//! `grammask print GRAMMAR`: the grammar as normalized GBNF on stdout (lookahead
//! assertions in their EBNF form). Exit codes as for `grammask check`.

use super::input::{load_grammar_args, GrammarArgs};

/// Arguments of `grammask print`.
#[derive(clap::Args, Debug)]
pub struct PrintArgs {
    /// The grammar.
    #[command(flatten)]
    pub source: GrammarArgs,
}

/// Runs the command; returns the exit code.
pub fn run(args: &PrintArgs) -> i32 {
    match load_grammar_args(&args.source) {
        Ok(loaded) => {
            print!("{}", grammask::syntax::print::to_gbnf(&loaded.grammar));
            0
        }
        Err(code) => code,
    }
}
