//! `grammask mask GRAMMAR --vocab VOCAB`: the tokens allowed after a prefix.

use super::input::{
    load_grammar_args_for, report_refusal, GrammarArgs, LimitArgs, EXIT_REJECTED, EXIT_USAGE,
};
use grammask::{bitmask_len, get_bit, Matcher, Vocabulary};
use std::time::Instant;

/// Arguments of `grammask mask`.
#[derive(clap::Args, Debug)]
pub struct MaskArgs {
    /// The grammar.
    #[command(flatten)]
    pub source: GrammarArgs,
    /// Resource limits.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// The vocabulary: `o200k`, `cl100k`, or a path to tokenizer.json / *.tiktoken.
    #[arg(long)]
    pub vocab: String,
    /// Text already generated (matched as bytes).
    #[arg(long, conflicts_with = "prefix_tokens")]
    pub prefix: Option<String>,
    /// Token ids already generated, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub prefix_tokens: Option<Vec<u32>>,
    /// How many allowed tokens to list.
    #[arg(long, default_value_t = 20)]
    pub show: usize,
    /// Print `{"count", "allowed", "eos_allowed", "elapsed_us"}` instead.
    #[arg(long)]
    pub json: bool,
    /// Fill the whole token mask cache at compile time (counts against
    /// `--max-compile-ms`; refused when it exceeds `--max-mask-cache-bytes`).
    #[arg(long)]
    pub precompute_mask_cache: bool,
}

/// Runs the command; returns the exit code.
pub fn run(args: &MaskArgs) -> i32 {
    let vocab = match Vocabulary::load(&args.vocab) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("grammask: {e}");
            return EXIT_USAGE;
        }
    };
    let loaded = match load_grammar_args_for(&args.source, Some(&vocab)) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let compiler = args.limits.compiler(&vocab);
    let config = grammask::CompilerConfig {
        precompute_mask_cache: args.precompute_mask_cache,
        ..compiler.config().clone()
    };
    let compiled = match loaded.compile(&compiler.with_config(config)) {
        Ok(c) => c,
        Err(e) => return report_refusal(&loaded, &e),
    };
    let mut matcher = Matcher::new(compiled);
    if let Some(text) = &args.prefix {
        if let Err(e) = matcher.accept_bytes(text.as_bytes()) {
            eprintln!("prefix refused: {e}");
            return EXIT_REJECTED;
        }
    }
    for &id in args.prefix_tokens.iter().flatten() {
        if let Err(e) = matcher.accept_token(id) {
            eprintln!("prefix refused: {e}");
            return EXIT_REJECTED;
        }
    }
    let mut mask = vec![0u32; bitmask_len(vocab.vocab_size())];
    let start = Instant::now();
    if let Err(e) = matcher.fill_next_token_bitmask(&mut mask) {
        eprintln!("{e}");
        return EXIT_REJECTED;
    }
    let elapsed_us = start.elapsed().as_secs_f64() * 1e6;
    let allowed: Vec<u32> =
        (0..vocab.vocab_size() as u32).filter(|&id| get_bit(&mask, id)).collect();
    let eos_allowed = vocab.stop_tokens().iter().any(|&id| get_bit(&mask, id));
    if args.json {
        let out = serde_json::json!({
            "count": allowed.len(),
            "allowed": allowed,
            "eos_allowed": eos_allowed,
            "elapsed_us": (elapsed_us * 10.0).round() / 10.0,
        });
        println!("{out}");
    } else {
        println!("allowed: {} of {} tokens", allowed.len(), vocab.vocab_size());
        println!("eos allowed: {}", if eos_allowed { "yes" } else { "no" });
        for &id in allowed.iter().take(args.show) {
            let bytes = vocab.token_bytes(id).unwrap_or_default();
            println!("  {id:>7}  {}", escape(bytes));
        }
        if allowed.len() > args.show {
            println!("  ... {} more", allowed.len() - args.show);
        }
        println!("mask time: {elapsed_us:.1} µs");
    }
    0
}

/// A token's bytes as a quoted, escaped string.
fn escape(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02X}"));
        }
    }
    out.push('"');
    out
}
