//! GGUF vocabularies: the tokenizer stored in the metadata of a llama.cpp model file (or a
//! vocab-only GGUF), so a mask and the model that reads it agree on every token id.
//!
//! Only the metadata section is read (the tensors after it are not touched):
//! `tokenizer.ggml.model`, `tokenizer.ggml.tokens`, `tokenizer.ggml.token_type` and the
//! end-of-text ids (`tokenizer.ggml.eos_token_id`, `eot_token_id`, `eom_token_id`).
//!
//! * `gpt2` (byte-level BPE: SmolLM2, Llama-3, Qwen): token strings map to bytes through
//!   GPT-2's byte-to-unicode table, as in tokenizer.json.
//! * `llama` (sentencepiece: Llama-2, Mistral): `▁` is a space; byte tokens `<0xNN>` are
//!   the byte `NN`.
//!
//! Token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte. Unknown
//! and control tokens are [`TokenKind::Special`]; user-defined tokens are text written as
//! is; unused ids have no token. Stop tokens are the end-of-text ids above, plus special
//! tokens with a common end name ([`crate::COMMON_STOP_TOKENS`]).
//!
//! Every length is checked against explicit bounds, so a malformed file gives an error,
//! never a panic or a huge allocation.

use std::io::Read;
use std::path::Path;

use crate::error::VocabError;
use crate::vocab::{Entry, TokenKind, Vocabulary, COMMON_STOP_TOKENS, MAX_VOCAB_SIZE};

/// Longest metadata string accepted (bytes).
const MAX_STRING: u64 = 1 << 24;
/// Most metadata entries accepted.
const MAX_ENTRIES: u64 = 1 << 16;

impl Vocabulary {
    /// Loads the vocabulary of a GGUF file (see the module documentation of `gguf`).
    pub fn from_gguf(path: impl AsRef<Path>) -> Result<Self, VocabError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path)
            .map_err(|source| VocabError::Io { path: path.to_path_buf(), source })?;
        let origin = path.display().to_string();
        read_gguf(&origin, std::io::BufReader::new(file))
    }

    /// Like [`Vocabulary::from_gguf`], from the bytes of a GGUF file (at least its
    /// metadata section).
    pub fn from_gguf_bytes(data: &[u8]) -> Result<Self, VocabError> {
        read_gguf("GGUF bytes", data)
    }
}

/// A metadata value, as far as the vocabulary needs it.
enum Value {
    Int(i64),
    Str(Vec<u8>),
    Strings(Vec<Vec<u8>>),
    Ints(Vec<i64>),
    Other,
}

struct Reader<'a, R> {
    inner: R,
    origin: &'a str,
    key: String,
}

impl<R: Read> Reader<'_, R> {
    fn error(&self, message: impl Into<String>) -> VocabError {
        VocabError::Format {
            origin: self.origin.to_string(),
            pointer: if self.key.is_empty() { "header".into() } else { self.key.clone() },
            message: message.into(),
        }
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], VocabError> {
        let mut buf = [0u8; N];
        self.inner.read_exact(&mut buf).map_err(|e| self.error(format!("truncated: {e}")))?;
        Ok(buf)
    }

    fn u32(&mut self) -> Result<u32, VocabError> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn u64(&mut self) -> Result<u64, VocabError> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    fn string(&mut self) -> Result<Vec<u8>, VocabError> {
        let len = self.u64()?;
        if len > MAX_STRING {
            return Err(self.error(format!("string of {len} bytes")));
        }
        let mut buf = vec![0u8; len as usize];
        self.inner.read_exact(&mut buf).map_err(|e| self.error(format!("truncated: {e}")))?;
        Ok(buf)
    }

    /// A scalar of GGUF type `ty` as an integer when it is one; `None` for floats and
    /// booleans (read and dropped).
    fn scalar(&mut self, ty: u32) -> Result<Option<i64>, VocabError> {
        Ok(match ty {
            0 => Some(self.bytes::<1>()?[0] as i64),
            1 => Some(self.bytes::<1>()?[0] as i8 as i64),
            2 => Some(u16::from_le_bytes(self.bytes()?) as i64),
            3 => Some(i16::from_le_bytes(self.bytes()?) as i64),
            4 => Some(self.u32()? as i64),
            5 => Some(i32::from_le_bytes(self.bytes()?) as i64),
            6 => {
                self.bytes::<4>()?;
                None
            }
            7 => {
                self.bytes::<1>()?;
                None
            }
            10 => Some(self.u64()? as i64),
            11 => Some(i64::from_le_bytes(self.bytes()?)),
            12 => {
                self.bytes::<8>()?;
                None
            }
            t => return Err(self.error(format!("unknown value type {t}"))),
        })
    }

    fn value(&mut self, ty: u32) -> Result<Value, VocabError> {
        match ty {
            8 => Ok(Value::Str(self.string()?)),
            9 => {
                let elem = self.u32()?;
                let count = self.u64()?;
                if count > MAX_VOCAB_SIZE as u64 * 8 {
                    return Err(self.error(format!("array of {count} elements")));
                }
                match elem {
                    8 => {
                        let mut out = Vec::with_capacity(count.min(1 << 20) as usize);
                        for _ in 0..count {
                            out.push(self.string()?);
                        }
                        Ok(Value::Strings(out))
                    }
                    9 => Err(self.error("nested arrays are not expected in tokenizer metadata")),
                    _ => {
                        let mut out = Vec::with_capacity(count.min(1 << 20) as usize);
                        for _ in 0..count {
                            out.push(self.scalar(elem)?.unwrap_or(0));
                        }
                        Ok(Value::Ints(out))
                    }
                }
            }
            _ => Ok(self.scalar(ty)?.map_or(Value::Other, Value::Int)),
        }
    }
}

fn read_gguf(origin: &str, inner: impl Read) -> Result<Vocabulary, VocabError> {
    let mut r = Reader { inner, origin, key: String::new() };
    if &r.bytes::<4>()? != b"GGUF" {
        return Err(r.error("not a GGUF file (bad magic number)"));
    }
    let version = r.u32()?;
    if !(2..=3).contains(&version) {
        return Err(r.error(format!("GGUF version {version} (2 and 3 are read)")));
    }
    let _tensors = r.u64()?;
    let entries = r.u64()?;
    if entries > MAX_ENTRIES {
        return Err(r.error(format!("{entries} metadata entries")));
    }
    let (mut model, mut tokens, mut types) = (None, None, None);
    let mut stop_ids: Vec<i64> = Vec::new();
    for _ in 0..entries {
        r.key = String::new();
        let key = r.string()?;
        r.key = String::from_utf8_lossy(&key).into_owned();
        let ty = r.u32()?;
        let value = r.value(ty)?;
        match (r.key.as_str(), value) {
            ("tokenizer.ggml.model", Value::Str(s)) => model = Some(s),
            ("tokenizer.ggml.tokens", Value::Strings(s)) => tokens = Some(s),
            ("tokenizer.ggml.token_type", Value::Ints(t)) => types = Some(t),
            (
                "tokenizer.ggml.eos_token_id"
                | "tokenizer.ggml.eot_token_id"
                | "tokenizer.ggml.eom_token_id",
                Value::Int(id),
            ) => stop_ids.push(id),
            _ => {}
        }
    }
    r.key = "tokenizer.ggml.model".into();
    let model = model.ok_or_else(|| r.error("missing"))?;
    let byte_level = match model.as_slice() {
        b"gpt2" => true,
        b"llama" => false,
        other => {
            return Err(VocabError::Unsupported {
                origin: origin.to_string(),
                message: format!(
                    "GGUF tokenizer model `{}` (gpt2 and llama are read)",
                    String::from_utf8_lossy(other)
                ),
            })
        }
    };
    r.key = "tokenizer.ggml.tokens".into();
    let tokens = tokens.ok_or_else(|| r.error("missing"))?;
    if tokens.len() > MAX_VOCAB_SIZE {
        return Err(r.error(format!("{} tokens", tokens.len())));
    }
    let types = types.unwrap_or_default();
    if !types.is_empty() && types.len() != tokens.len() {
        r.key = "tokenizer.ggml.token_type".into();
        return Err(r.error(format!("{} types for {} tokens", types.len(), tokens.len())));
    }
    let mut entries: Vec<Entry> = Vec::with_capacity(tokens.len());
    for (id, text) in tokens.into_iter().enumerate() {
        let ty = types.get(id).copied().unwrap_or(1);
        let as_text = || String::from_utf8_lossy(&text).into_owned();
        let entry = match ty {
            5 => None,
            2 | 3 => Some((text.clone(), TokenKind::Special)),
            6 => crate::hf::byte_fallback_value(&as_text())
                .map(|b| (vec![b], TokenKind::Byte))
                .or_else(|| Some((text.clone(), TokenKind::Special))),
            4 => Some((text.clone(), TokenKind::Normal)),
            _ if byte_level => {
                crate::hf::byte_level_decode(&as_text()).map(|b| (b, TokenKind::Normal))
            }
            _ => Some((as_text().replace('\u{2581}', " ").into_bytes(), TokenKind::Normal)),
        };
        if let Some((bytes, kind)) = entry {
            if !bytes.is_empty() || kind == TokenKind::Special {
                entries.push((id as u32, bytes, kind));
            }
        }
    }
    let n = entries.last().map_or(0, |e| e.0 as i64 + 1);
    let mut stop: Vec<u32> =
        stop_ids.into_iter().filter(|&id| (0..n).contains(&id)).map(|id| id as u32).collect();
    for (id, bytes, kind) in &entries {
        if *kind == TokenKind::Special && COMMON_STOP_TOKENS.iter().any(|s| s.as_bytes() == bytes) {
            stop.push(*id);
        }
    }
    stop.retain(|id| entries.binary_search_by_key(id, |e| e.0).is_ok());
    stop.sort_unstable();
    stop.dedup();
    Vocabulary::assemble(origin.to_string(), entries, stop, None)
}
