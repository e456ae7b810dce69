//! Encoding text with the real tokenizer of a vocabulary.

use std::path::Path;

/// A tokenizer that produces the ids of the matching [`grammask::Vocabulary`].
pub enum TextTokenizer {
    /// A builtin OpenAI encoding.
    Tiktoken(tiktoken_rs::CoreBPE),
    /// A Hugging Face tokenizer.json.
    HuggingFace(Box<tokenizers::Tokenizer>),
}

impl TextTokenizer {
    /// The tokenizer for a vocabulary spec as `grammask::Vocabulary::load` reads it: a
    /// builtin name (`o200k`, `cl100k`) or a path to tokenizer.json.
    pub fn load(spec: &str) -> Result<TextTokenizer, String> {
        let bpe = match spec {
            "o200k" | "o200k_base" => Some(tiktoken_rs::o200k_base()),
            "cl100k" | "cl100k_base" => Some(tiktoken_rs::cl100k_base()),
            _ => None,
        };
        if let Some(bpe) = bpe {
            return bpe.map(TextTokenizer::Tiktoken).map_err(|e| e.to_string());
        }
        if Path::new(spec).extension().is_some_and(|e| e == "json") {
            return tokenizers::Tokenizer::from_file(spec)
                .map(|t| TextTokenizer::HuggingFace(Box::new(t)))
                .map_err(|e| format!("{spec}: {e}"));
        }
        Err(format!(
            "{spec}: no text tokenizer for this vocabulary (use o200k, cl100k or a tokenizer.json)"
        ))
    }

    /// The token ids of `text`, without special tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        match self {
            TextTokenizer::Tiktoken(bpe) => Ok(bpe.encode_ordinary(text)),
            TextTokenizer::HuggingFace(t) => {
                t.encode(text, false).map(|e| e.get_ids().to_vec()).map_err(|e| e.to_string())
            }
        }
    }
}

/// A MaskBench file's schema and its valid instances, each serialized compactly (keys in
/// file order) and encoded with `tokenizer`; a token id at or beyond `vocab_size` is an
/// error (the tokenizer and the vocabulary disagree).
pub fn valid_instances(
    path: &Path,
    tokenizer: &TextTokenizer,
    vocab_size: usize,
) -> Result<(serde_json::Value, Vec<Vec<u32>>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let file: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let schema = file.get("schema").cloned().ok_or("no schema")?;
    let mut instances = Vec::new();
    for test in file["tests"].as_array().into_iter().flatten() {
        if test["valid"].as_bool() != Some(true) {
            continue;
        }
        let Some(data) = test.get("data") else { continue };
        let compact = serde_json::to_string(data).map_err(|e| e.to_string())?;
        let ids = tokenizer.encode(&compact)?;
        if let Some(&bad) = ids.iter().find(|&&id| id as usize >= vocab_size) {
            return Err(format!("token {bad} beyond the vocabulary"));
        }
        instances.push(ids);
    }
    Ok((schema, instances))
}
