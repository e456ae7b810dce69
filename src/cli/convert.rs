//! `grammask convert SCHEMA`: the GBNF of a JSON Schema on stdout (any file name, `-` for
//! stdin). Exit 0 when it converts (warnings on stderr), 1 when it is refused (every
//! error printed with its JSON pointer), 2 on usage errors.

use super::input::{load_schema, SchemaArgs};

/// Arguments of `grammask convert`.
#[derive(clap::Args, Debug)]
pub struct ConvertArgs {
    /// The JSON Schema file, or `-` for stdin.
    pub schema: String,
    /// Converter options.
    #[command(flatten)]
    pub options: SchemaArgs,
}

/// Runs the command; returns the exit code.
pub fn run(args: &ConvertArgs) -> i32 {
    match load_schema(&args.schema, &args.options) {
        Ok(loaded) => {
            print!("{}", grammask::syntax::print::to_gbnf(&loaded.grammar));
            0
        }
        Err(code) => code,
    }
}
