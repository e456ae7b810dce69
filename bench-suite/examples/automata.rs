//! What the compiler builds for every Nth MaskBench schema: the number compiled and
//! refused, the automaton states (without the automata of spliced rules, which no state
//! calls: [`grammask::engine::passes::is_spliced`]), the IR nodes after the passes, and a
//! hash of every first mask and error message. Two builds that print the same states and
//! hash build the same automata and masks: the check for a change meant to make
//! compilation cheaper without changing what it builds.
//!
//! `cargo run --release -p grammask-bench --example automata -- DIR EVERY TOKENIZER_JSON`
//! (`PER_FILE=1`: each schema's states and a hash of its first mask or error too).
use grammask::engine::passes::is_spliced;
use grammask::syntax::ir::RuleId;
use grammask::syntax::json_schema::JsonSchemaOptions;
use grammask::{bitmask_len, Compiler, Matcher, Vocabulary};
use grammask_bench::maskbench::sampled_schemas;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, every, tokenizer] = args.as_slice() else {
        return Err("usage: automata DIR EVERY TOKENIZER_JSON".into());
    };
    let every: usize = every.parse().map_err(|e| format!("EVERY: {e}"))?;
    let vocab = Arc::new(
        Vocabulary::from_tokenizer_json(tokenizer).map_err(|e| format!("{tokenizer}: {e}"))?,
    );
    let per_file = std::env::var_os("PER_FILE").is_some_and(|v| v == "1");
    let options = JsonSchemaOptions::default();
    let (mut compiled, mut refused, mut states, mut nodes) = (0usize, 0usize, 0usize, 0usize);
    let mut hash = std::collections::hash_map::DefaultHasher::new();
    for (f, schema) in sampled_schemas(Path::new(dir), every)? {
        match Compiler::from_arc(vocab.clone()).compile_json_schema_value(&schema, &options) {
            Ok(c) => {
                let g = c.grammar();
                let mut own = 0;
                for r in (0..g.rules.len()).filter(|&r| !is_spliced(&g.rules, r, g.root)) {
                    own += c.automaton(RuleId::new(r)).map_err(|e| e.to_string())?.len();
                }
                states += own;
                nodes += g.size();
                compiled += 1;
                let matcher = Matcher::new(c);
                let mut mask = vec![0u32; bitmask_len(vocab.vocab_size())];
                matcher.fill_next_token_bitmask(&mut mask).map_err(|e| e.to_string())?;
                mask.hash(&mut hash);
                if per_file {
                    println!("{} {own} {:016x}", f.display(), fingerprint(&mask));
                }
            }
            Err(e) => {
                refused += 1;
                e.to_string().hash(&mut hash);
                if per_file {
                    println!("{} refused {:016x}", f.display(), fingerprint(&e.to_string()));
                }
            }
        }
    }
    println!(
        "{compiled} compiled, {refused} refused, {states} automaton states, {nodes} IR nodes, \
         masks and errors hash {:016x}",
        hash.finish()
    );
    Ok(())
}

/// A hash of one first mask or error message.
fn fingerprint(x: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    x.hash(&mut h);
    h.finish()
}
