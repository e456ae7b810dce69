//! Proves that masked decoding stays inside the grammar: seeded random walks over every
//! llama.cpp grammar, on o200k and on the Llama-3 `tokenizer.json`, pick an allowed token
//! at every step (with a bias towards finishing), and
//! - the mask is never empty before the end (no dead ends);
//! - the text so far is accepted as a prefix by a fresh byte-level matcher at every step
//!   (what `grammask match --prefix` answers);
//! - whenever a stop token was allowed and taken, the whole text is accepted by the real
//!   `grammask match GRAMMAR FILE` (exit code 0).
//!
//! Prints, per grammar and vocabulary, how many walks reached the stop token. The Llama-3
//! vocabulary is read from `$GRAMMASK_TOKENIZERS/llama3/tokenizer.json`
//! (`scripts/fetch-tokenizers.sh`); without it that vocabulary is skipped with a loud
//! `SKIPPED:` line on stderr.

use grammask::{byte_vocabulary, CompiledGrammar, Compiler, GrammarFormat, Matcher, Vocabulary};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

const WALKS: u64 = 4;
const CONFIG: WalkConfig = WalkConfig { max_steps: 60, random_steps: 25, beam: true };

#[path = "support/walk.rs"]
mod walker;
use walker::{structural_tokens, walk, WalkConfig};

/// The vendored llama.cpp grammars.
fn grammar_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("grammar-syntax/tests/data/llama.cpp-grammars")
}

fn grammar_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(grammar_dir())
        .expect("the vendored llama.cpp grammars")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gbnf"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 8, "the 8 llama.cpp grammars: {files:?}");
    files
}

fn compile(path: &Path, vocab: &Arc<Vocabulary>) -> Arc<CompiledGrammar> {
    let text = std::fs::read_to_string(path).unwrap();
    let parsed = grammask::parse_grammar(&text, GrammarFormat::Gbnf, "root")
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Compiler::from_arc(vocab.clone())
        .compile_grammar(&parsed.grammar)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run_vocabulary(label: &str, vocab: Arc<Vocabulary>) {
    let bytes = Arc::new(byte_vocabulary());
    let bin = env!("CARGO_BIN_EXE_grammask");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let mut summary = Vec::new();
    let structural = structural_tokens(&vocab);
    for path in grammar_files() {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let start = Instant::now();
        let grammar = compile(&path, &vocab);
        let prefix_grammar = compile(&path, &bytes);
        let mut reached = 0;
        let mut steps = 0;
        for seed in 0..WALKS {
            let seed = seed * 7919 + name.len() as u64;
            // `match --prefix`: a fresh byte-level matcher accepts the text so far.
            let mut check_prefix = |text: &[u8]| {
                let mut prefix = Matcher::new(prefix_grammar.clone());
                if let Err(e) = prefix.accept_bytes(text) {
                    panic!(
                        "{name} seed {seed}: prefix {:?} refused: {e}",
                        String::from_utf8_lossy(text)
                    );
                }
            };
            let w = walk(&grammar, CONFIG, &structural, seed, &name, &mut check_prefix);
            steps += w.steps;
            if !w.reached_eos {
                eprintln!("{label}/{name}: no EOS: {:?}", String::from_utf8_lossy(&w.text));
                continue;
            }
            reached += 1;
            let file = tmp.join(format!("walk-{label}-{name}-{seed}.txt"));
            std::fs::write(&file, &w.text).unwrap();
            let out = Command::new(bin).arg("match").arg(&path).arg(&file).output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{label}/{name}: `grammask match` refuses a finished walk {:?}: {}",
                String::from_utf8_lossy(&w.text),
                String::from_utf8_lossy(&out.stdout)
            );
        }
        let line = format!(
            "{label:>6} {name:<10} reached EOS {reached}/{WALKS} ({steps} steps, {:.2} s)",
            start.elapsed().as_secs_f64()
        );
        eprintln!("{line}");
        summary.push(line);
    }
    eprintln!("walks on {label}:\n{}", summary.join("\n"));
}

#[test]
fn walks_on_o200k() {
    run_vocabulary("o200k", Arc::new(Vocabulary::load("o200k").unwrap()));
}

#[test]
fn walks_on_llama3() {
    let Some(dir) = std::env::var_os("GRAMMASK_TOKENIZERS") else {
        eprintln!("SKIPPED: walks on Llama-3: GRAMMASK_TOKENIZERS is not set (scripts/fetch-tokenizers.sh)");
        return;
    };
    let path = Path::new(&dir).join("llama3/tokenizer.json");
    if !path.is_file() {
        eprintln!(
            "SKIPPED: walks on Llama-3: {} is missing (scripts/fetch-tokenizers.sh)",
            path.display()
        );
        return;
    }
    let vocab = Vocabulary::from_tokenizer_json(&path).unwrap();
    assert!(!vocab.stop_tokens().is_empty(), "Llama-3 has stop tokens");
    run_vocabulary("llama3", Arc::new(vocab));
}
