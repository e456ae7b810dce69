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

/// The ids of `text` by longest match over the token bytes of `vocab` (text tokens only,
/// the smallest id among equal bytes), from the left: the tokenization of
/// `../shared/peers`' harness, so that grammask walks the very token ids the peers'
/// scripts walk. Any sequence of tokens spelling the document serves to time masks.
pub fn greedy_encode(vocab: &grammask::Vocabulary, text: &str) -> Result<Vec<u32>, String> {
    use grammask::TokenKind;
    let mut by_bytes: std::collections::HashMap<&[u8], u32> = std::collections::HashMap::new();
    let mut longest = 0;
    for id in 0..vocab.id_bound() as u32 {
        if vocab.kind(id) == Some(TokenKind::Special) {
            continue;
        }
        if let Some(bytes) = vocab.token_bytes(id).filter(|b| !b.is_empty()) {
            by_bytes.entry(bytes).or_insert(id);
            longest = longest.max(bytes.len());
        }
    }
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let id = (1..=longest.min(bytes.len() - at))
            .rev()
            .find_map(|n| by_bytes.get(&bytes[at..at + n]).map(|&id| (id, n)));
        let Some((id, n)) = id else {
            return Err(format!("no token spells the byte at {at}"));
        };
        out.push(id);
        at += n;
    }
    Ok(out)
}

#[cfg(test)]
mod greedy_tests {
    use super::greedy_encode;
    use grammask::Vocabulary;

    #[test]
    fn longest_match_from_the_left_and_never_special_tokens() {
        let tokens = ["a", "ab", "abc", "b", "c", "abcab"].map(|t| t.as_bytes().to_vec());
        let mut all = tokens.to_vec();
        all.push(b"abcabc".to_vec()); // special: never matched as text
        let v = Vocabulary::from_byte_tokens(all, &[6], &[6], None).unwrap();
        assert_eq!(greedy_encode(&v, "abcabc").unwrap(), vec![5, 4]);
        assert_eq!(greedy_encode(&v, "bca").unwrap(), vec![3, 4, 0]);
        assert!(greedy_encode(&v, "abd").is_err());
    }
}
