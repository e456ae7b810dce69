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
