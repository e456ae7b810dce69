//! A byte-level BPE encoder built from a GGUF tokenizer's tokens and merges, for prompts.
//!
//! Text is pre-tokenized as the model's tokenizer does (`tokenizer.ggml.pre`): GPT-2's
//! regex split, with every digit a piece of its own first for `smollm`, or Llama 3's
//! regex; each piece's bytes are written with the GPT-2 byte-to-unicode map and merged
//! pair by pair, lowest merge rank first.

use crate::gguf_vocab::{byte_encoder, GgufTokenizer, TokenizerModel};
use crate::Error;
use fancy_regex::Regex;
use std::collections::HashMap;

const GPT2_PATTERN: &str =
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";
const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A byte-level BPE encoder.
pub struct BpeEncoder {
    pattern: Regex,
    /// Split every digit into a piece of its own before the regex.
    isolate_digits: bool,
    ranks: HashMap<(String, String), usize>,
    ids: HashMap<String, u32>,
    byte_chars: [char; 256],
}

impl BpeEncoder {
    /// The encoder of a GGUF `gpt2` tokenizer.
    pub fn new(tok: &GgufTokenizer) -> Result<Self, Error> {
        if tok.model != TokenizerModel::Gpt2 {
            return Err(Error::Gguf(
                "prompt encoding supports byte-level BPE (gpt2) tokenizers only".into(),
            ));
        }
        let (pattern, isolate_digits) = match tok.pre.as_deref() {
            Some("llama-bpe") | Some("llama3") => (LLAMA3_PATTERN, false),
            Some("smollm") => (GPT2_PATTERN, true),
            _ => (GPT2_PATTERN, false),
        };
        let pattern = Regex::new(pattern).map_err(|e| Error::Gguf(format!("regex: {e}")))?;
        let ranks =
            tok.merges.iter().cloned().enumerate().map(|(rank, pair)| (pair, rank)).collect();
        let ids = tok
            .texts
            .iter()
            .enumerate()
            .filter(|(id, _)| !tok.special.contains(&(*id as u32)))
            .map(|(id, t)| (t.clone(), id as u32))
            .collect();
        Ok(BpeEncoder { pattern, isolate_digits, ranks, ids, byte_chars: byte_encoder() })
    }

    /// The token ids of `text` (special token names in it are plain text).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, Error> {
        let mut out = Vec::new();
        for chunk in self.digit_chunks(text) {
            for m in self.pattern.find_iter(chunk) {
                let m = m.map_err(|e| Error::Gguf(format!("regex: {e}")))?;
                self.encode_piece(m.as_str(), &mut out)?;
            }
        }
        Ok(out)
    }

    fn digit_chunks<'a>(&self, text: &'a str) -> Vec<&'a str> {
        if !self.isolate_digits {
            return vec![text];
        }
        let mut chunks = Vec::new();
        let mut start = 0;
        for (i, c) in text.char_indices() {
            if c.is_numeric() {
                if start < i {
                    chunks.push(&text[start..i]);
                }
                chunks.push(&text[i..i + c.len_utf8()]);
                start = i + c.len_utf8();
            }
        }
        if start < text.len() {
            chunks.push(&text[start..]);
        }
        chunks
    }

    fn encode_piece(&self, piece: &str, out: &mut Vec<u32>) -> Result<(), Error> {
        let mut symbols: Vec<String> =
            piece.bytes().map(|b| self.byte_chars[b as usize].to_string()).collect();
        loop {
            let mut best: Option<(usize, usize)> = None;
            for i in 0..symbols.len().saturating_sub(1) {
                if let Some(&rank) = self.ranks.get(&(symbols[i].clone(), symbols[i + 1].clone())) {
                    if best.is_none_or(|(r, _)| rank < r) {
                        best = Some((rank, i));
                    }
                }
            }
            let Some((_, i)) = best else { break };
            let right = symbols.remove(i + 1);
            symbols[i].push_str(&right);
        }
        for s in symbols {
            let id = self
                .ids
                .get(&s)
                .ok_or_else(|| Error::Gguf(format!("BPE symbol `{s}` is not a token")))?;
            out.push(*id);
        }
        Ok(())
    }
}
