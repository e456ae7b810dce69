//! Loads a GGUF model, prints its tokenizer facts, and runs a short greedy generation.
//! `cargo run --release -p grammask-model --example probe [-- FILE.gguf [PROMPT]]`

use grammask_model::{model_path, GenerateOptions, Model};
use std::io::Write;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = model_path(args.first().map(PathBuf::from).as_deref())?;
    let mut model = Model::load(&path)?;
    let tok = &model.tokenizer;
    println!(
        "model {:?} pre {:?}: {} tokens, vocab_size {}, {} merges, stop {:?}, bos {:?} (add {}), specials {}",
        tok.model,
        tok.pre,
        tok.texts.len(),
        tok.vocab_size,
        tok.merges.len(),
        tok.stop.iter().map(|&i| (i, tok.texts[i as usize].clone())).collect::<Vec<_>>(),
        tok.bos,
        tok.add_bos,
        tok.special.len()
    );
    let prompt = args.get(1).cloned().unwrap_or_else(|| "What is the capital of France?".into());
    let ids = match prompt.strip_prefix("raw:") {
        Some(raw) => model.encode(raw)?,
        None => model.chat_prompt(None, &prompt)?,
    };
    println!("prompt: {} tokens {:?}", ids.len(), ids);
    let decoded = model.tokenizer.decode(&ids);
    println!("decoded: {:?}", String::from_utf8_lossy(&decoded));
    let options = GenerateOptions { max_tokens: 40, ..Default::default() };
    let g = model.generate(&ids, None, &options, &mut |b| {
        let _ = std::io::stdout().write_all(b);
        let _ = std::io::stdout().flush();
    })?;
    println!(
        "\n{} tokens, stop {}, prefill {:.0} ms, {:.1} ms/token",
        g.tokens.len(),
        g.stop.as_str(),
        g.prefill_ms,
        g.model_ms_per_token()
    );
    Ok(())
}
