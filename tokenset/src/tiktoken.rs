//! tiktoken rank files and the builtin OpenAI encodings.
//!
//! A rank file has one token per line: the token's bytes in standard base64, a space, and
//! its rank, which is its id. Special tokens are not in the file; the caller names them
//! with their ids.
//!
//! The builtin encodings come from the files bundled in the `tiktoken-rs` crate, read
//! through its public API (no download): every id is decoded with the crate's own
//! decoder, and the special tokens and their ids are the ones the crate registers.
//!
//! | name (aliases) | tokens | special tokens | vocab_size |
//! |---|---|---|---|
//! | `cl100k_base` (`cl100k`) | 100,256 + 5 | `<\|endoftext\|>` 100257, `<\|fim_prefix\|>` 100258, `<\|fim_middle\|>` 100259, `<\|fim_suffix\|>` 100260, `<\|endofprompt\|>` 100276 | 100,277 |
//! | `o200k_base` (`o200k`) | 199,998 + 2 | `<\|endoftext\|>` 199999, `<\|endofprompt\|>` 200018 | 200,019 |
//! | `p50k_base` (`p50k`) | 50,280 + 1 | `<\|endoftext\|>` 50256 | 50,281 |
//! | `r50k_base` (`r50k`, `gpt2`) | 50,256 + 1 | `<\|endoftext\|>` 50256 | 50,257 |
//!
//! Stop tokens: special tokens named in [`crate::COMMON_STOP_TOKENS`] (here
//! `<|endoftext|>`).

use std::path::Path;

use base64::Engine as _;

use crate::error::VocabError;
use crate::vocab::{check_size, id_error, Entry, TokenKind, Vocabulary, MAX_VOCAB_SIZE};

/// The canonical names of the builtin vocabularies, for [`Vocabulary::builtin`].
pub const BUILTIN_NAMES: &[&str] = &["cl100k_base", "o200k_base", "p50k_base", "r50k_base"];

/// The canonical builtin name for `name` (case-insensitive, aliases resolved).
fn canonical(name: &str) -> Option<&'static str> {
    let lower = name.trim().to_ascii_lowercase();
    Some(match lower.as_str() {
        "cl100k" | "cl100k_base" => "cl100k_base",
        "o200k" | "o200k_base" => "o200k_base",
        "p50k" | "p50k_base" => "p50k_base",
        "r50k" | "r50k_base" | "gpt2" => "r50k_base",
        _ => return None,
    })
}

/// Whether `name` names a builtin vocabulary.
pub(crate) fn is_builtin(name: &str) -> bool {
    canonical(name).is_some()
}

impl Vocabulary {
    /// A builtin vocabulary: `"cl100k_base"`, `"o200k_base"`, `"p50k_base"` or
    /// `"r50k_base"` (also `"cl100k"`, `"o200k"`, `"p50k"`, `"r50k"`, `"gpt2"`; any case).
    /// Read from the files `tiktoken-rs` bundles; nothing is downloaded. `vocab_size` is
    /// one more than the largest id; stop token `<|endoftext|>`.
    pub fn builtin(name: &str) -> Result<Self, VocabError> {
        let Some(canon) = canonical(name) else {
            return Err(VocabError::UnknownBuiltin {
                name: name.to_string(),
                known: "cl100k_base, o200k_base, p50k_base, r50k_base (and cl100k, o200k, \
                        p50k, r50k, gpt2)"
                    .to_string(),
            });
        };
        let origin = format!("builtin {canon}");
        let bpe = match canon {
            "cl100k_base" => tiktoken_rs::cl100k_base(),
            "o200k_base" => tiktoken_rs::o200k_base(),
            "p50k_base" => tiktoken_rs::p50k_base(),
            _ => tiktoken_rs::r50k_base(),
        }
        .map_err(|e| VocabError::Unsupported { origin: origin.clone(), message: e.to_string() })?;

        let allowed = bpe.special_tokens();
        let mut special_ids = Vec::new();
        for name in &allowed {
            match bpe.encode(name, &allowed) {
                Ok((ids, _)) if ids.len() == 1 => special_ids.push(ids[0]),
                _ => {
                    return Err(VocabError::Unsupported {
                        origin,
                        message: format!("special token {name} does not encode to one id"),
                    })
                }
            }
        }
        special_ids.sort_unstable();
        // Ordinary ranks are dense from 0; the special ids follow them.
        let last_special = special_ids.last().copied().unwrap_or(0);
        let mut entries: Vec<Entry> = Vec::new();
        let mut id: u32 = 0;
        loop {
            match bpe.decode_bytes(&[id]) {
                Ok(bytes) => {
                    let kind = if special_ids.binary_search(&id).is_ok() {
                        TokenKind::Special
                    } else {
                        TokenKind::Normal
                    };
                    entries.push((id, bytes, kind));
                }
                Err(_) if id > last_special => break,
                Err(_) => {}
            }
            id += 1;
            if id as usize >= MAX_VOCAB_SIZE {
                break;
            }
        }
        let stop = Vocabulary::common_stop_ids(&entries);
        Vocabulary::assemble(origin, entries, stop, None)
    }

    /// A vocabulary from a tiktoken rank file, with the given special tokens
    /// (`(name, id)`; their bytes are their names) and logits width (`None`: one more than
    /// the largest id). Stop tokens: the special tokens named in
    /// [`crate::COMMON_STOP_TOKENS`]; change them with [`Vocabulary::set_stop_tokens`].
    pub fn from_tiktoken(
        path: impl AsRef<Path>,
        special: &[(&str, u32)],
        vocab_size: Option<usize>,
    ) -> Result<Self, VocabError> {
        let path = path.as_ref();
        let data = crate::read_file(path)?;
        parse(path.display().to_string(), &data, special, vocab_size)
    }

    /// Like [`Vocabulary::from_tiktoken`], from the file's content.
    pub fn from_tiktoken_bytes(
        data: &[u8],
        special: &[(&str, u32)],
        vocab_size: Option<usize>,
    ) -> Result<Self, VocabError> {
        parse("tiktoken bytes".to_string(), data, special, vocab_size)
    }
}

/// Loads a rank file whose special tokens are those of the builtin it is named after
/// (`cl100k_base.tiktoken` gets cl100k's), or none.
pub(crate) fn from_tiktoken_file_guess_specials(
    path: &Path,
    data: &[u8],
) -> Result<Vocabulary, VocabError> {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let special: Vec<(String, u32)> = match canonical(stem) {
        Some(canon) => {
            let builtin = Vocabulary::builtin(canon)?;
            builtin
                .special_tokens()
                .map(|(id, name)| (String::from_utf8_lossy(name).into_owned(), id))
                .collect()
        }
        None => Vec::new(),
    };
    let special: Vec<(&str, u32)> = special.iter().map(|(n, id)| (n.as_str(), *id)).collect();
    parse(path.display().to_string(), data, &special, None)
}

fn parse(
    origin: String,
    data: &[u8],
    special: &[(&str, u32)],
    vocab_size: Option<usize>,
) -> Result<Vocabulary, VocabError> {
    let format_error = |line: usize, message: String| VocabError::Format {
        origin: origin.clone(),
        pointer: format!("line {line}"),
        message,
    };
    let mut entries: Vec<Entry> = Vec::new();
    for (index, line) in data.split(|&b| b == b'\n').enumerate() {
        let line_no = index + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
        let (Some(token), Some(rank), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(format_error(line_no, "expected `<base64 token> <rank>`".to_string()));
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(token)
            .map_err(|e| format_error(line_no, format!("bad base64 token: {e}")))?;
        if bytes.is_empty() {
            return Err(format_error(line_no, "empty token".to_string()));
        }
        let rank: u64 =
            std::str::from_utf8(rank).ok().and_then(|r| r.parse().ok()).ok_or_else(|| {
                format_error(line_no, "the rank is not a non-negative integer".into())
            })?;
        if rank >= MAX_VOCAB_SIZE as u64 {
            return Err(id_error(&origin, rank, MAX_VOCAB_SIZE));
        }
        entries.push((rank as u32, bytes, TokenKind::Normal));
    }
    for &(name, id) in special {
        if id as usize >= MAX_VOCAB_SIZE {
            return Err(id_error(&origin, id.into(), MAX_VOCAB_SIZE));
        }
        entries.push((id, name.as_bytes().to_vec(), TokenKind::Special));
    }
    if let Some(n) = vocab_size {
        check_size(&origin, n)?;
    }
    let stop = Vocabulary::common_stop_ids(&entries);
    Vocabulary::assemble(origin, entries, stop, vocab_size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rank_lines() {
        let v = Vocabulary::from_tiktoken_bytes(
            b"YQ== 0\r\nYWI= 1\n\nIHRoZQ== 3\n",
            &[("<|endoftext|>", 4)],
            None,
        )
        .unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v.vocab_size(), 5);
        assert_eq!(v.token_bytes(3), Some(&b" the"[..]));
        assert_eq!(v.token_bytes(2), None);
        assert!(v.is_special(4));
        assert_eq!(v.stop_tokens(), &[4]);
    }

    #[test]
    fn rejects_malformed_lines() {
        for bad in
            [&b"YQ==\n"[..], b"YQ== x\n", b"!!! 0\n", b"YQ== 0\nYQ== 0\n", b"YQ== 99999999\n"]
        {
            assert!(Vocabulary::from_tiktoken_bytes(bad, &[], None).is_err(), "{bad:?}");
        }
        assert!(Vocabulary::from_tiktoken_bytes(b"YQ== 0\n", &[("<x>", 0)], None).is_err());
        assert!(Vocabulary::from_tiktoken_bytes(b"YQ== 0\n", &[], Some(1 << 30)).is_err());
    }
}
