//! The `grammask` command-line tool.
//!
//! Exit codes everywhere: 0 success or accepted; 1 rejected, or the grammar is invalid or
//! unsupported, or a limit was hit (the message says which); 2 usage errors.

mod cli;

use clap::{Parser, Subcommand};

/// Grammar-constrained decoding: check grammars, match text, compute token masks.
#[derive(Parser, Debug)]
#[command(name = "grammask", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Whether a grammar is valid: exit 0 (warnings on stderr) or 1 (every error listed).
    Check(cli::check::CheckArgs),
    /// The grammar as normalized GBNF on stdout.
    Print(cli::print::PrintArgs),
    /// Whether the input is in the grammar's language (exit 0) or not (exit 1).
    Match(cli::grammar_match::MatchArgs),
    /// The tokens of a vocabulary the grammar allows after a prefix.
    Mask(cli::mask::MaskArgs),
    /// The GBNF of a JSON Schema on stdout.
    Convert(cli::convert::ConvertArgs),
    /// A real model (GGUF, on CPU) answers a prompt, constrained by a grammar or a schema.
    #[cfg(feature = "generate")]
    Generate(cli::generate::GenerateArgs),
}

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    restore_sigpipe();
    let cli = Cli::parse();
    let code = match &cli.command {
        Command::Check(args) => cli::check::run(args),
        Command::Print(args) => cli::print::run(args),
        Command::Match(args) => cli::grammar_match::run(args),
        Command::Mask(args) => cli::mask::run(args),
        Command::Convert(args) => cli::convert::run(args),
        #[cfg(feature = "generate")]
        Command::Generate(args) => cli::generate::run(args),
    };
    std::process::exit(code);
}

/// Output piped into a reader that stops early (`grammask convert s.json | head`) ends
/// the process quietly, as other command-line tools do, instead of failing to print.
#[cfg(unix)]
fn restore_sigpipe() {
    // SAFETY: called first thing in `main`, before any thread exists; setting a signal's
    // disposition to its default has no other effect on the program.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn restore_sigpipe() {}
