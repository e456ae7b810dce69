//! `grammask check GRAMMAR`: is the grammar valid? Exit 0 when it is (warnings go to
//! stderr), 1 when it is not (every error is printed), 2 on usage errors.

use super::input::{load_grammar_args, GrammarArgs, LimitArgs};

/// Arguments of `grammask check`.
#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The grammar.
    #[command(flatten)]
    pub source: GrammarArgs,
    /// Resource limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Runs the command; returns the exit code.
pub fn run(args: &CheckArgs) -> i32 {
    match load_grammar_args(&args.source) {
        Ok(loaded) => {
            // The engine's own refusals (left recursion it cannot rewrite, limits) count too.
            let compiler = args.limits.compiler(&grammask::byte_vocabulary());
            if let Err(e) = loaded.compile(&compiler) {
                return super::input::report_refusal(&loaded, &e);
            }
            let rules = loaded.grammar.rules.len();
            let plural = if rules == 1 { "" } else { "s" };
            println!("{}: ok ({rules} rule{plural})", loaded.name);
            0
        }
        Err(code) => code,
    }
}
