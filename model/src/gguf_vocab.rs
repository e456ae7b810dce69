//! The tokenizer a GGUF file carries in its metadata (`tokenizer.ggml.*`), turned into
//! exact token bytes for grammask, so that the mask and the model agree on every id.
//!
//! Supported tokenizer models: `gpt2` (byte-level BPE: token texts are written with the
//! GPT-2 byte-to-unicode map and decode to exact bytes) and `llama` (sentencepiece: `▁`
//! is a space, `<0xNN>` byte tokens are the byte `NN`).

use crate::Error;
use candle_core::quantized::gguf_file::{Content, Value};
use grammask_tokenset::Vocabulary;
use std::collections::HashMap;

/// GGUF token types (`tokenizer.ggml.token_type`).
const TYPE_NORMAL: i32 = 1;
const TYPE_UNKNOWN: i32 = 2;
const TYPE_CONTROL: i32 = 3;
const TYPE_USER_DEFINED: i32 = 4;
const TYPE_UNUSED: i32 = 5;
const TYPE_BYTE: i32 = 6;

/// The tokenizer model of a GGUF file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenizerModel {
    /// Byte-level BPE (`gpt2`): SmolLM2, Llama 3, Qwen, ...
    Gpt2,
    /// Sentencepiece with byte fallback (`llama`): Llama 2, Mistral, ...
    Llama,
}

/// A GGUF file's tokenizer: token texts, bytes, kinds, merges and stop tokens.
#[derive(Clone, Debug)]
pub struct GgufTokenizer {
    /// The tokenizer model.
    pub model: TokenizerModel,
    /// `tokenizer.ggml.pre` (the pre-tokenizer name), when present.
    pub pre: Option<String>,
    /// Token texts as the GGUF stores them (byte-level encoded for `gpt2`).
    pub texts: Vec<String>,
    /// Exact bytes per id (for special tokens: their text).
    pub bytes: Vec<Vec<u8>>,
    /// Ids of special tokens (control, user-defined, unknown).
    pub special: Vec<u32>,
    /// Ids of unused tokens (never allowed, never produced).
    pub unused: Vec<u32>,
    /// BPE merges, in rank order, as pairs of token texts.
    pub merges: Vec<(String, String)>,
    /// Every token that ends generation: EOS, EOT, and the special tokens named like a
    /// common end-of-text or end-of-turn marker.
    pub stop: Vec<u32>,
    /// The BOS id, when the file names one.
    pub bos: Option<u32>,
    /// Whether the file asks for BOS at the start of a text (`add_bos_token`).
    pub add_bos: bool,
    /// The EOS id, when the file names one.
    pub eos: Option<u32>,
    /// The chat template (`tokenizer.chat_template`, Jinja), when the file has one.
    pub chat_template: Option<String>,
    /// The logits width (rows of the embedding matrix), at least the token count.
    pub vocab_size: usize,
}

fn meta<'a>(ct: &'a Content, key: &str) -> Option<&'a Value> {
    ct.metadata.get(key)
}

fn meta_u32(ct: &Content, key: &str) -> Option<u32> {
    let v = meta(ct, key)?;
    v.to_u32()
        .ok()
        .or_else(|| v.to_i32().ok().map(|x| x as u32))
        .or_else(|| v.to_u64().ok().map(|x| x as u32))
}

fn value_i32(v: &Value) -> Option<i32> {
    v.to_i32().ok().or_else(|| v.to_u32().ok().map(|x| x as i32))
}

impl GgufTokenizer {
    /// Reads the tokenizer from a GGUF file's metadata.
    pub fn from_content(ct: &Content) -> Result<Self, Error> {
        let model_name = meta(ct, "tokenizer.ggml.model")
            .and_then(|v| v.to_string().ok())
            .ok_or_else(|| Error::Gguf("no tokenizer.ggml.model in the metadata".into()))?;
        let model = match model_name.as_str() {
            "gpt2" => TokenizerModel::Gpt2,
            "llama" => TokenizerModel::Llama,
            other => {
                return Err(Error::Gguf(format!(
                    "tokenizer model `{other}` is not supported (gpt2 and llama are)"
                )))
            }
        };
        let pre = meta(ct, "tokenizer.ggml.pre").and_then(|v| v.to_string().ok()).cloned();
        let texts: Vec<String> = meta(ct, "tokenizer.ggml.tokens")
            .and_then(|v| v.to_vec().ok())
            .ok_or_else(|| Error::Gguf("no tokenizer.ggml.tokens in the metadata".into()))?
            .iter()
            .map(|v| v.to_string().cloned())
            .collect::<Result<_, _>>()
            .map_err(|e| Error::Gguf(format!("tokenizer.ggml.tokens: {e}")))?;
        let types: Vec<i32> =
            match meta(ct, "tokenizer.ggml.token_type").and_then(|v| v.to_vec().ok()) {
                Some(list) => list.iter().map(|v| value_i32(v).unwrap_or(TYPE_NORMAL)).collect(),
                None => vec![TYPE_NORMAL; texts.len()],
            };
        let merges: Vec<(String, String)> = meta(ct, "tokenizer.ggml.merges")
            .and_then(|v| v.to_vec().ok())
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.to_string().ok())
                    .filter_map(|m| m.split_once(' ').map(|(a, b)| (a.to_string(), b.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        if model == TokenizerModel::Gpt2 && merges.is_empty() {
            return Err(Error::Gguf("a gpt2 tokenizer without tokenizer.ggml.merges".into()));
        }
        let decoder = byte_decoder();
        let mut bytes = Vec::with_capacity(texts.len());
        let mut special = Vec::new();
        let mut unused = Vec::new();
        for (id, text) in texts.iter().enumerate() {
            let ty = types.get(id).copied().unwrap_or(TYPE_NORMAL);
            let b = match ty {
                TYPE_CONTROL | TYPE_USER_DEFINED | TYPE_UNKNOWN => {
                    special.push(id as u32);
                    text.as_bytes().to_vec()
                }
                TYPE_UNUSED => {
                    unused.push(id as u32);
                    Vec::new()
                }
                TYPE_BYTE => parse_byte_token(text)
                    .map(|b| vec![b])
                    .ok_or_else(|| Error::Gguf(format!("byte token {id} is `{text}`")))?,
                _ => match model {
                    TokenizerModel::Gpt2 => decode_byte_level(text, &decoder).ok_or_else(|| {
                        Error::Gguf(format!("token {id} `{text}` is not byte-level text"))
                    })?,
                    TokenizerModel::Llama => text.replace('\u{2581}', " ").into_bytes(),
                },
            };
            bytes.push(b);
        }
        let mut stop: Vec<u32> = Vec::new();
        for key in [
            "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.eot_token_id",
            "tokenizer.ggml.eom_token_id",
        ] {
            if let Some(id) = meta_u32(ct, key) {
                if (id as usize) < texts.len() {
                    stop.push(id);
                }
            }
        }
        for &id in &special {
            if grammask_tokenset::COMMON_STOP_TOKENS.contains(&texts[id as usize].as_str()) {
                stop.push(id);
            }
        }
        stop.sort_unstable();
        stop.dedup();
        if stop.is_empty() {
            return Err(Error::Gguf("the tokenizer names no end-of-text token".into()));
        }
        let bos = meta_u32(ct, "tokenizer.ggml.bos_token_id");
        let eos = meta_u32(ct, "tokenizer.ggml.eos_token_id");
        let chat_template =
            meta(ct, "tokenizer.chat_template").and_then(|v| v.to_string().ok()).cloned();
        let add_bos = meta(ct, "tokenizer.ggml.add_bos_token")
            .and_then(|v| v.to_bool().ok())
            .unwrap_or(model == TokenizerModel::Llama);
        let embedding_rows = ct
            .tensor_infos
            .get("token_embd.weight")
            .map(|info| info.shape.dims().iter().copied().max().unwrap_or(0))
            .unwrap_or(0);
        let vocab_size = embedding_rows.max(texts.len());
        Ok(GgufTokenizer {
            model,
            pre,
            texts,
            bytes,
            special,
            unused,
            merges,
            stop,
            bos,
            add_bos,
            eos,
            chat_template,
            vocab_size,
        })
    }

    /// The grammask vocabulary: same ids, exact bytes, special and stop tokens, logits
    /// width.
    pub fn vocabulary(&self) -> Result<Vocabulary, Error> {
        Vocabulary::from_byte_tokens(
            self.bytes.clone(),
            &self.special,
            &self.stop,
            Some(self.vocab_size),
        )
        .map_err(|e| Error::Gguf(format!("vocabulary: {e}")))
    }

    /// The id of a special token by its text.
    pub fn special_id(&self, text: &str) -> Option<u32> {
        self.special.iter().copied().find(|&id| self.texts[id as usize] == text)
    }

    /// The bytes of a sequence of ids (special tokens as their text).
    pub fn decode(&self, ids: &[u32]) -> Vec<u8> {
        ids.iter()
            .flat_map(|&id| self.bytes.get(id as usize).cloned().unwrap_or_default())
            .collect()
    }

    /// A lookup from token text to id (for the BPE encoder).
    pub fn text_ids(&self) -> HashMap<&str, u32> {
        self.texts.iter().enumerate().map(|(id, t)| (t.as_str(), id as u32)).collect()
    }
}

/// `<0xNN>` → `NN`.
fn parse_byte_token(text: &str) -> Option<u8> {
    let hex = text.strip_prefix("<0x")?.strip_suffix('>')?;
    u8::from_str_radix(hex, 16).ok()
}

/// GPT-2's byte-to-unicode map: printable Latin-1 bytes stand for themselves, the other
/// 68 bytes map to U+0100 onwards in byte order.
pub fn byte_encoder() -> [char; 256] {
    let mut map = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable =
            (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b);
        map[b as usize] = if printable {
            b as char
        } else {
            let c = char::from_u32(next).expect("U+0100..U+0143 are chars");
            next += 1;
            c
        };
    }
    map
}

/// The inverse of [`byte_encoder`].
pub fn byte_decoder() -> HashMap<char, u8> {
    byte_encoder().iter().enumerate().map(|(b, &c)| (c, b as u8)).collect()
}

/// A byte-level token text → its bytes; `None` when a char is outside the map.
pub fn decode_byte_level(text: &str, decoder: &HashMap<char, u8>) -> Option<Vec<u8>> {
    text.chars().map(|c| decoder.get(&c).copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_map_round_trips() {
        let enc = byte_encoder();
        let dec = byte_decoder();
        assert_eq!(dec.len(), 256);
        assert_eq!(enc[b' ' as usize], 'Ġ');
        assert_eq!(enc[b'\n' as usize], 'Ċ');
        assert_eq!(enc[b'a' as usize], 'a');
        assert_eq!(decode_byte_level("Ġhello", &dec), Some(b" hello".to_vec()));
        assert_eq!(parse_byte_token("<0x0A>"), Some(10));
    }
}
