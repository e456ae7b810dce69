//! Hugging Face `tokenizer.json` files.
//!
//! How token strings become bytes depends on the tokenizer's encoding, detected from the
//! file:
//!
//! * **Byte-level BPE** (GPT-2, Llama-3, Qwen): `pre_tokenizer` or `decoder` contains a
//!   `ByteLevel` step. Every character of a token string stands for one byte through
//!   GPT-2's byte-to-unicode table (`Ġ` is the space, `Ċ` the newline).
//! * **Sentencepiece style** (Llama-2, Mistral, Unigram models): `pre_tokenizer` or
//!   `decoder` contains `Metaspace`, or the decoder replaces `▁` by a space, or the
//!   normalizer replaces spaces by `▁`, or the model is `Unigram`. `▁` is a space; the
//!   rest of the string is UTF-8.
//! * **Raw**: otherwise, the token string's UTF-8 bytes.
//!
//! With byte fallback (`model.byte_fallback: true`, or a `ByteFallback` decoder), tokens
//! `<0xNN>` are [`TokenKind::Byte`] tokens whose bytes are the single byte `NN`.
//!
//! Models: `BPE` and `WordLevel` (`vocab` maps token strings to ids) and `Unigram`
//! (`vocab` is a list of `[piece, score]`, the id is the position). `WordPiece` is refused:
//! its `##` continuation pieces have no fixed bytes in the middle of a text.
//!
//! `added_tokens` override the model's entry for their id. Their bytes are their `content`
//! as written (added tokens are matched before the model's encoding); those with
//! `special: true` are [`TokenKind::Special`], the others `Normal`. A token string that
//! decodes to no bytes gives an id without a token.
//!
//! **Stop tokens** are the union of:
//! 1. the special tokens named in [`crate::COMMON_STOP_TOKENS`];
//! 2. when loading from a path, `eos_token` of a sibling `tokenizer_config.json` (a string
//!    or `{"content": ...}`) and `eos_token_id` of a sibling `generation_config.json` (an id
//!    or a list). Names and ids there that are not in the vocabulary are ignored; a sibling
//!    that is not valid JSON is an error.
//!
//! A caller who knows better replaces them with [`Vocabulary::set_stop_tokens`].

use std::path::Path;

use serde_json::Value;

use crate::error::VocabError;
use crate::vocab::{Entry, TokenKind, Vocabulary, MAX_VOCAB_SIZE};

impl Vocabulary {
    /// Loads a Hugging Face `tokenizer.json` (see the rules above), with stop tokens also
    /// taken from a sibling `tokenizer_config.json` and `generation_config.json` if present.
    /// `vocab_size` is one more than the largest id; a larger logits width is set with
    /// [`Vocabulary::set_vocab_size`].
    pub fn from_tokenizer_json(path: impl AsRef<Path>) -> Result<Self, VocabError> {
        let path = path.as_ref();
        let data = crate::read_file(path)?;
        let origin = path.display().to_string();
        let (entries, mut stop) = parse(&origin, &data)?;
        if let Some(dir) = path.parent() {
            stop.extend(config_stop_ids(dir, &entries)?);
        }
        Vocabulary::assemble(origin, entries, stop, None)
    }

    /// Like [`Vocabulary::from_tokenizer_json`], from the file's content (no sibling
    /// configuration files, so stop tokens come from common names only).
    pub fn from_tokenizer_json_bytes(data: &[u8]) -> Result<Self, VocabError> {
        let origin = "tokenizer.json bytes".to_string();
        let (entries, stop) = parse(&origin, data)?;
        Vocabulary::assemble(origin, entries, stop, None)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Encoding {
    ByteLevel,
    Metaspace,
    Raw,
}

fn format_error(
    origin: &str,
    pointer: impl Into<String>,
    message: impl Into<String>,
) -> VocabError {
    VocabError::Format {
        origin: origin.to_string(),
        pointer: pointer.into(),
        message: message.into(),
    }
}

/// Escapes a JSON object key for use in a JSON pointer.
fn pointer_key(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn parse_id(origin: &str, pointer: &str, value: &Value) -> Result<u32, VocabError> {
    let id = value
        .as_u64()
        .ok_or_else(|| format_error(origin, pointer, "the id is not a non-negative integer"))?;
    if id >= MAX_VOCAB_SIZE as u64 {
        return Err(VocabError::IdOutOfRange {
            origin: origin.to_string(),
            id,
            vocab_size: MAX_VOCAB_SIZE,
        });
    }
    Ok(id as u32)
}

/// The tokens and the common-name stop tokens of a `tokenizer.json`.
fn parse(origin: &str, data: &[u8]) -> Result<(Vec<Entry>, Vec<u32>), VocabError> {
    let root: Value = serde_json::from_slice(data)
        .map_err(|source| VocabError::Json { origin: origin.to_string(), source })?;
    let model = root
        .get("model")
        .filter(|m| m.is_object())
        .ok_or_else(|| format_error(origin, "/model", "missing, or not an object"))?;
    let model_type = match model.get("type") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(format_error(origin, "/model/type", "not a string")),
    };
    let byte_fallback = model.get("byte_fallback").and_then(Value::as_bool).unwrap_or(false)
        || has_type(root.get("decoder"), "ByteFallback");
    let encoding = detect_encoding(&root, model_type);
    let decode = |s: &str| -> Option<(Vec<u8>, TokenKind)> {
        if byte_fallback {
            if let Some(b) = byte_fallback_value(s) {
                return Some((vec![b], TokenKind::Byte));
            }
        }
        let bytes = match encoding {
            Encoding::ByteLevel => byte_level_decode(s)?,
            Encoding::Metaspace => s.replace('\u{2581}', " ").into_bytes(),
            Encoding::Raw => s.as_bytes().to_vec(),
        };
        Some((bytes, TokenKind::Normal))
    };

    let mut entries: Vec<Entry> = Vec::new();
    let vocab = model.get("vocab").unwrap_or(&Value::Null);
    match (model_type, vocab) {
        (Some("WordPiece"), _) => {
            return Err(VocabError::Unsupported {
                origin: origin.to_string(),
                message: "WordPiece models have no fixed token bytes".to_string(),
            })
        }
        (Some("BPE") | Some("WordLevel") | None, Value::Object(map)) => {
            for (token, id) in map {
                let pointer = format!("/model/vocab/{}", pointer_key(token));
                let id = parse_id(origin, &pointer, id)?;
                let (bytes, kind) = decode(token).ok_or_else(|| {
                    format_error(origin, &pointer, "not a byte-level token string")
                })?;
                if !bytes.is_empty() {
                    entries.push((id, bytes, kind));
                }
            }
        }
        (Some("Unigram") | None, Value::Array(pieces)) => {
            for (id, piece) in pieces.iter().enumerate() {
                let pointer = format!("/model/vocab/{id}");
                if id >= MAX_VOCAB_SIZE {
                    return Err(crate::vocab::id_error(origin, id as u64, MAX_VOCAB_SIZE));
                }
                let token = piece
                    .get(0)
                    .and_then(Value::as_str)
                    .ok_or_else(|| format_error(origin, &pointer, "expected [piece, score]"))?;
                let (bytes, kind) = decode(token).ok_or_else(|| {
                    format_error(origin, &pointer, "not a byte-level token string")
                })?;
                if !bytes.is_empty() {
                    entries.push((id as u32, bytes, kind));
                }
            }
        }
        (Some(t @ ("BPE" | "WordLevel" | "Unigram")), _) => {
            return Err(format_error(origin, "/model/vocab", format!("wrong type for a {t} model")))
        }
        (Some(other), _) => {
            return Err(VocabError::Unsupported {
                origin: origin.to_string(),
                message: format!("model type {other:?}"),
            })
        }
        (None, _) => {
            return Err(format_error(origin, "/model/vocab", "missing, or not an object or array"))
        }
    }

    let mut added: Vec<Entry> = Vec::new();
    match root.get("added_tokens") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, token) in list.iter().enumerate() {
                let pointer = format!("/added_tokens/{i}");
                let id = parse_id(
                    origin,
                    &format!("{pointer}/id"),
                    token.get("id").unwrap_or(&Value::Null),
                )?;
                let content = token.get("content").and_then(Value::as_str).ok_or_else(|| {
                    format_error(origin, format!("{pointer}/content"), "not a string")
                })?;
                let special = match token.get("special") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => {
                        return Err(format_error(
                            origin,
                            format!("{pointer}/special"),
                            "not a boolean",
                        ))
                    }
                };
                let kind = if special { TokenKind::Special } else { TokenKind::Normal };
                if !content.is_empty() || special {
                    added.push((id, content.as_bytes().to_vec(), kind));
                }
            }
        }
        Some(_) => return Err(format_error(origin, "/added_tokens", "not an array")),
    }
    added.sort_by_key(|e| e.0);
    if let Some(w) = added.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(VocabError::DuplicateId { origin: origin.to_string(), id: w[0].0 });
    }
    entries.retain(|e| added.binary_search_by_key(&e.0, |a| a.0).is_err());
    entries.extend(added);
    let stop = Vocabulary::common_stop_ids(&entries);
    Ok((entries, stop))
}

/// Whether `value` or anything nested in it is an object with `"type": ty`.
fn has_type(value: Option<&Value>, ty: &str) -> bool {
    find_objects(value, &mut |obj| obj.get("type").and_then(Value::as_str) == Some(ty))
}

/// Whether `pred` holds for `value` or any object nested in it.
fn find_objects(value: Option<&Value>, pred: &mut dyn FnMut(&Value) -> bool) -> bool {
    match value {
        Some(v @ Value::Object(map)) => {
            pred(v) || map.values().any(|c| find_objects(Some(c), pred))
        }
        Some(Value::Array(items)) => items.iter().any(|c| find_objects(Some(c), pred)),
        _ => false,
    }
}

/// Whether `value` contains a `Replace` step from `from` to `to`.
fn has_replace(value: Option<&Value>, from: &str, to: &str) -> bool {
    find_objects(value, &mut |obj| {
        obj.get("type").and_then(Value::as_str) == Some("Replace")
            && obj.get("pattern").and_then(|p| p.get("String")).and_then(Value::as_str)
                == Some(from)
            && obj.get("content").and_then(Value::as_str) == Some(to)
    })
}

fn detect_encoding(root: &Value, model_type: Option<&str>) -> Encoding {
    let pre = root.get("pre_tokenizer");
    let decoder = root.get("decoder");
    if has_type(pre, "ByteLevel") || has_type(decoder, "ByteLevel") {
        Encoding::ByteLevel
    } else if has_type(pre, "Metaspace")
        || has_type(decoder, "Metaspace")
        || has_replace(decoder, "\u{2581}", " ")
        || has_replace(root.get("normalizer"), " ", "\u{2581}")
        || model_type == Some("Unigram")
    {
        Encoding::Metaspace
    } else {
        Encoding::Raw
    }
}

/// `<0xNN>` (two hex digits, either case) as the byte `NN`.
pub(crate) fn byte_fallback_value(s: &str) -> Option<u8> {
    let hex = s.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// GPT-2's byte-to-unicode table, inverted: the byte a character stands for.
///
/// Printable bytes (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`) stand for themselves; the other 68
/// bytes map, in increasing order, to U+0100 onwards.
fn byte_level_char_to_byte(c: char) -> Option<u8> {
    static TABLE: std::sync::OnceLock<[Option<u8>; 324]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let printable = |b: u8| matches!(b, 0x21..=0x7e | 0xa1..=0xac | 0xae..=0xff);
        let mut table = [None; 324];
        let mut next = 256;
        for b in 0..=255u8 {
            if printable(b) {
                table[b as usize] = Some(b);
            } else {
                table[next] = Some(b);
                next += 1;
            }
        }
        table
    });
    table.get(c as usize).copied().flatten()
}

pub(crate) fn byte_level_decode(s: &str) -> Option<Vec<u8>> {
    s.chars().map(byte_level_char_to_byte).collect()
}

/// Stop token ids named by sibling `tokenizer_config.json` / `generation_config.json`.
fn config_stop_ids(dir: &Path, entries: &[Entry]) -> Result<Vec<u32>, VocabError> {
    let mut ids = Vec::new();
    let read_json = |name: &str| -> Result<Option<Value>, VocabError> {
        let path = dir.join(name);
        if !path.is_file() {
            return Ok(None);
        }
        let data = crate::read_file(&path)?;
        serde_json::from_slice(&data)
            .map(Some)
            .map_err(|source| VocabError::Json { origin: path.display().to_string(), source })
    };
    if let Some(config) = read_json("tokenizer_config.json")? {
        let name = match config.get("eos_token") {
            Some(Value::String(s)) => Some(s.as_str()),
            Some(obj @ Value::Object(_)) => obj.get("content").and_then(Value::as_str),
            _ => None,
        };
        if let Some(name) = name {
            let mut matching: Vec<&Entry> =
                entries.iter().filter(|e| e.1 == name.as_bytes()).collect();
            matching.sort_by_key(|e| (e.2 != TokenKind::Special, e.0));
            ids.extend(matching.first().map(|e| e.0));
        }
    }
    if let Some(config) = read_json("generation_config.json")? {
        let values: Vec<&Value> = match config.get("eos_token_id") {
            Some(Value::Array(list)) => list.iter().collect(),
            Some(v) => vec![v],
            None => Vec::new(),
        };
        for v in values {
            if let Some(id) = v.as_u64() {
                if entries.iter().any(|e| u64::from(e.0) == id) {
                    ids.push(id as u32);
                }
            }
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_table() {
        assert_eq!(byte_level_decode("Ġthe"), Some(b" the".to_vec()));
        assert_eq!(byte_level_decode("Ċ"), Some(b"\n".to_vec()));
        assert_eq!(byte_level_decode("Ā"), Some(vec![0]));
        assert_eq!(byte_level_decode("ÃŃ"), Some(vec![0xc3, 0xad]));
        assert_eq!(byte_level_decode("ġ"), Some(vec![0x7f]));
        assert_eq!(byte_level_decode("Ń"), Some(vec![0xad]));
        assert_eq!(byte_level_decode(" "), None);
        assert_eq!(byte_level_decode("Ņ"), None);
        let all: Vec<u8> = (0..256u32)
            .filter_map(|c| char::from_u32(c).and_then(byte_level_char_to_byte))
            .chain(
                (256..324u32).filter_map(|c| char::from_u32(c).and_then(byte_level_char_to_byte)),
            )
            .collect();
        let mut sorted = all.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 256);
    }

    #[test]
    fn byte_fallback_names() {
        assert_eq!(byte_fallback_value("<0x0A>"), Some(10));
        assert_eq!(byte_fallback_value("<0xff>"), Some(255));
        assert_eq!(byte_fallback_value("<0x0A"), None);
        assert_eq!(byte_fallback_value("<0x>"), None);
        assert_eq!(byte_fallback_value("<0x+A>"), None);
    }
}
