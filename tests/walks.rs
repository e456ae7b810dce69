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

use grammask::{
    bitmask_len, byte_vocabulary, get_bit, CompiledGrammar, Compiler, GrammarFormat, Matcher,
    Vocabulary,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

const WALKS: u64 = 4;
const MAX_STEPS: usize = 60;
/// Steps that take a uniformly random allowed token before the walk heads for the end.
const RANDOM_STEPS: usize = 25;
const BEAM_DEPTH: usize = 6;
const BEAM_WIDTH: usize = 8;

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

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

fn allowed_ids(m: &Matcher, words: &mut [u32], size: usize) -> Vec<u32> {
    m.fill_next_token_bitmask(words).unwrap();
    let mut out = Vec::new();
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let id = w * 32 + bits.trailing_zeros() as usize;
            if id < size {
                out.push(id as u32);
            }
            bits &= bits - 1;
        }
    }
    out
}

/// Short tokens of ASCII punctuation and whitespace, with at most one letter or digit:
/// the tokens that close structures.
fn structural_tokens(vocab: &Vocabulary) -> Vec<u32> {
    (0..vocab.vocab_size() as u32)
        .filter(|&t| {
            let Some(b) = vocab.token_bytes(t) else { return false };
            !vocab.is_special(t)
                && (1..=3).contains(&b.len())
                && b.iter().all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace())
                && b.iter().filter(|c| c.is_ascii_alphanumeric()).count() <= 1
        })
        .collect()
}

fn ends_after(m: &Matcher, tokens: &[u32]) -> bool {
    let mut probe = m.fork();
    tokens.iter().all(|&t| probe.accept_token(t).is_ok()) && probe.can_terminate()
}

/// A token that brings the end near: one after which the text can end, else one after
/// which a structural token ends it, else a short one that closes brackets.
fn finishing_token(
    m: &Matcher,
    words: &[u32],
    texts: &[u32],
    structural: &[u32],
    rng: &mut Rng,
) -> u32 {
    let vocab = m.grammar().vocabulary();
    let mut cands: Vec<u32> = structural.iter().copied().filter(|&t| get_bit(words, t)).collect();
    cands.extend((0..16).map(|_| texts[rng.below(texts.len())]));
    let ending: Vec<u32> = cands.iter().copied().filter(|&t| ends_after(m, &[t])).collect();
    if !ending.is_empty() {
        return ending[rng.below(ending.len())];
    }
    // Beam search over structural tokens for a short way to the end.
    let score = |t: u32| closing_score(vocab.token_bytes(t).unwrap_or_default());
    let mut beam: Vec<(Matcher, Option<u32>, i64)> = vec![(m.fork(), None, 0)];
    for _ in 0..BEAM_DEPTH {
        let mut next: Vec<(Matcher, Option<u32>, i64)> = Vec::new();
        for (node, first, total) in &beam {
            let Ok(bytes) = node.next_bytes() else { continue };
            for &t in structural {
                let b = vocab.token_bytes(t).unwrap_or_default();
                if !bytes[b[0] as usize] {
                    continue;
                }
                let mut child = node.fork();
                if child.accept_token(t).is_err() {
                    continue;
                }
                let first = first.unwrap_or(t);
                if child.can_terminate() {
                    return first;
                }
                next.push((child, Some(first), total + score(t)));
            }
        }
        // Keep the best node of each kind of state (told apart by the bytes that may
        // follow), so that the beam does not fill with one kind of token.
        next.sort_by_key(|n| std::cmp::Reverse(n.2));
        let mut kinds = std::collections::HashSet::new();
        next.retain(|n| n.0.next_bytes().is_ok_and(|b| kinds.insert(b)));
        next.truncate(BEAM_WIDTH);
        beam = next;
    }
    cands.sort_by_key(|&t| std::cmp::Reverse(score(t)));
    cands[rng.below(cands.len().min(3))]
}

/// How much a token's bytes help to finish: closing brackets and line ends count,
/// opening brackets count against, long tokens a little against.
fn closing_score(bytes: &[u8]) -> i64 {
    let mut s = 0i64;
    for &b in bytes {
        match b {
            b']' | b'}' | b')' | b'\n' | b'"' | b';' => s += 3,
            b'[' | b'{' => s -= 4,
            b'(' => s -= 1,
            _ => {}
        }
    }
    s - bytes.len() as i64
}

struct Walk {
    text: Vec<u8>,
    reached_eos: bool,
    steps: usize,
}

/// One seeded walk. The first [`RANDOM_STEPS`] steps take a uniformly random allowed
/// token (rarely the stop token); later steps take the stop token when allowed (with a
/// probability growing with the step count), else mostly a token that brings the end
/// near ([`finishing_token`]).
fn walk(
    grammar: &Arc<CompiledGrammar>,
    prefix_grammar: &Arc<CompiledGrammar>,
    structural: &[u32],
    seed: u64,
    name: &str,
) -> Walk {
    let vocab = grammar.vocabulary().clone();
    let size = vocab.vocab_size();
    let mut words = vec![0u32; bitmask_len(size)];
    let mut rng = Rng::new(seed);
    let mut m = Matcher::new(grammar.clone());
    let mut text = Vec::new();
    for step in 0..MAX_STEPS {
        let allowed = allowed_ids(&m, &mut words, size);
        assert!(
            !allowed.is_empty(),
            "{name} seed {seed}: empty mask after {:?}",
            String::from_utf8_lossy(&text)
        );
        let stops: Vec<u32> = allowed.iter().copied().filter(|&t| vocab.is_stop(t)).collect();
        let texts: Vec<u32> = allowed.iter().copied().filter(|&t| !vocab.is_stop(t)).collect();
        assert_eq!(!stops.is_empty(), m.can_terminate(), "{name}: stop tokens vs can_terminate");
        let progress = step as f64 / MAX_STEPS as f64;
        let take_stop = !stops.is_empty()
            && (texts.is_empty()
                || (step >= RANDOM_STEPS && rng.chance(0.5 + progress))
                || rng.chance(0.03));
        if take_stop {
            m.accept_token(stops[0]).unwrap();
            assert!(m.is_terminated());
            return Walk { text, reached_eos: true, steps: step + 1 };
        }
        let pick = if step < RANDOM_STEPS || rng.chance(0.2) {
            texts[rng.below(texts.len())]
        } else {
            finishing_token(&m, &words, &texts, structural, &mut rng)
        };
        assert!(get_bit(&words, pick));
        m.accept_token(pick).unwrap_or_else(|e| panic!("{name}: allowed token {pick}: {e}"));
        text.extend_from_slice(vocab.token_bytes(pick).unwrap());
        // `match --prefix`: a fresh byte-level matcher accepts the text so far.
        let mut prefix = Matcher::new(prefix_grammar.clone());
        if let Err(e) = prefix.accept_bytes(&text) {
            panic!("{name} seed {seed}: prefix {:?} refused: {e}", String::from_utf8_lossy(&text));
        }
    }
    Walk { text, reached_eos: false, steps: MAX_STEPS }
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
            let w = walk(
                &grammar,
                &prefix_grammar,
                &structural,
                seed * 7919 + name.len() as u64,
                &name,
            );
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
