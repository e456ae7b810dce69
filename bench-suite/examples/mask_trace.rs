//! The masks of every step of a walk, as raw words, so that another binding (the Python
//! package's tests) can check that it gives exactly the Rust API's masks on the same steps.
//!
//! `cargo run -p grammask-bench --example mask_trace -- GRAMMAR VOCAB DOCUMENT OUT`
//!
//! `GRAMMAR`: a `.gbnf`, `.ebnf`, `.regex` or JSON Schema `.json` file; `VOCAB`: as for
//! `grammask mask`; `DOCUMENT`: the text walked, tokenized by the vocabulary's real
//! tokenizer. Writes `OUT` (the masks: one row of `ceil(vocab_size / 32)` little-endian
//! u32 words per step, before each token and after the last one) and prints the token ids
//! as a JSON list.
use grammask::{bitmask_len, Compiler, GrammarFormat, Matcher, Vocabulary};
use grammask_bench::tokenize::TextTokenizer;
use std::io::Write;
use std::path::Path;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [grammar, vocab_spec, document, out] = args.as_slice() else {
        return Err("usage: mask_trace GRAMMAR VOCAB DOCUMENT OUT".into());
    };
    let vocab = Vocabulary::load(vocab_spec).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(grammar).map_err(|e| format!("{grammar}: {e}"))?;
    let format = GrammarFormat::from_path(Path::new(grammar))
        .ok_or_else(|| format!("{grammar}: unknown grammar extension"))?;
    let compiler = Compiler::new(&vocab);
    let compiled = match format {
        GrammarFormat::JsonSchema => {
            let file: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            // A MaskBench file holds the schema under "schema".
            let schema =
                file.get("schema").filter(|_| file.get("tests").is_some()).unwrap_or(&file);
            compiler.compile_json_schema_value(schema, &Default::default())
        }
        GrammarFormat::Gbnf => compiler.compile_gbnf(&text),
        GrammarFormat::Ebnf => compiler.compile_ebnf(&text),
        GrammarFormat::Regex => compiler.compile_regex(text.trim_end_matches('\n')),
        GrammarFormat::StructuralTag => {
            let tag: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            compiler.compile_structural_tag(&tag, &Default::default())
        }
    }
    .map_err(|e| e.to_string())?;
    let doc = std::fs::read_to_string(document).map_err(|e| format!("{document}: {e}"))?;
    let tokens = TextTokenizer::load(vocab_spec)?.encode(&doc)?;
    let mut matcher = Matcher::new(compiled);
    let mut mask = vec![0u32; bitmask_len(vocab.vocab_size())];
    let mut file = std::io::BufWriter::new(std::fs::File::create(out).map_err(|e| e.to_string())?);
    for step in 0..=tokens.len() {
        matcher.fill_next_token_bitmask(&mut mask).map_err(|e| e.to_string())?;
        for w in &mask {
            file.write_all(&w.to_le_bytes()).map_err(|e| e.to_string())?;
        }
        if let Some(&id) = tokens.get(step) {
            matcher.accept_token(id).map_err(|e| format!("token {step} ({id}): {e}"))?;
        }
    }
    file.flush().map_err(|e| e.to_string())?;
    println!("{}", serde_json::to_string(&tokens).map_err(|e| e.to_string())?);
    Ok(())
}
