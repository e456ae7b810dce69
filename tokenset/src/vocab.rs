//! [`Vocabulary`]: the exact bytes and kind of every token id, the stop tokens and the
//! logits width.
//!
//! A token's bytes are what the token contributes **in the middle of a text**: for a
//! byte-level BPE token `Ġthe` that is `b" the"`, for a sentencepiece token `▁the` it is
//! also `b" the"`, and for a byte-fallback token `<0x0A>` it is `b"\n"`. Sentencepiece
//! tokenizers drop the leading space of the first token of a text when decoding; stripping
//! it is the runtime's business, not the vocabulary's.
//!
//! Token ids are plain `u32` everywhere in the API (the same integers the model's logits
//! are indexed by, and what a C caller passes).
//!
//! Ids run from 0 to `vocab_size() - 1`, the model's logits width. Some ids have no
//! token: gaps in a tokenizer's numbering (cl100k has no token 100256) and the padding
//! range between the tokenizer's size and a larger logits width. Such ids have no bytes and
//! no kind, and a grammar never allows them.
//!
//! A vocabulary is immutable once built and shared (`Send + Sync`); the `set_*` methods are
//! for adjusting it before it is handed to a compiler.

use std::path::Path;

use crate::error::VocabError;
use crate::sorted::SortedVocab;

/// The largest accepted `vocab_size` (4,194,304 ids; the largest tokenizers today have about 260,000). Inputs that declare or imply a
/// larger vocabulary are refused with an error instead of allocating for it.
pub const MAX_VOCAB_SIZE: usize = 1 << 22;

/// Contents of special tokens that mark the end of a text or turn in common model
/// families. A special token with one of these contents is a stop token when a loader
/// guesses stop tokens (see [`Vocabulary::from_tokenizer_json`]).
pub const COMMON_STOP_TOKENS: &[&str] =
    &["</s>", "<|eot_id|>", "<|end_of_text|>", "<|endoftext|>", "<|im_end|>", "<eos>"];

/// What kind of token an id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// An ordinary token: its bytes are text the grammar matches.
    Normal,
    /// A special or control token (BOS, EOS, chat markers, `added_tokens` with
    /// `special: true`, tiktoken special tokens). Its bytes are its name, but a grammar
    /// never matches them as text: the engine allows it only where the grammar names it.
    Special,
    /// A byte-fallback token (`<0xNN>` in sentencepiece vocabularies). It is matched like
    /// a [`TokenKind::Normal`] token whose bytes are the single byte `NN`.
    Byte,
}

impl TokenKind {
    /// Whether a grammar matches this token by its bytes (`Normal` and `Byte`).
    #[inline]
    pub fn is_text(self) -> bool {
        !matches!(self, TokenKind::Special)
    }
}

/// The tokens of a tokenizer as exact bytes, with kinds, stop tokens and the logits width.
///
/// ```
/// use grammask_tokenset::{TokenKind, Vocabulary};
///
/// let v = Vocabulary::from_byte_tokens(
///     vec![b"a".to_vec(), b" the".to_vec(), b"<eos>".to_vec()],
///     &[2], &[2], Some(8),
/// ).unwrap();
/// assert_eq!(v.len(), 3);
/// assert_eq!(v.vocab_size(), 8);
/// assert_eq!(v.token_bytes(1), Some(&b" the"[..]));
/// assert_eq!(v.kind(2), Some(TokenKind::Special));
/// assert_eq!(v.token_bytes(5), None); // padding
/// assert_eq!(v.stop_tokens(), &[2]);
/// assert_eq!(v.token_id(b"<eos>"), Some(2));
/// ```
#[derive(Clone)]
pub struct Vocabulary {
    /// `bytes(id) = data[starts[id]..starts[id + 1]]` for `id < kinds.len()`.
    data: Vec<u8>,
    starts: Vec<u32>,
    /// Kind per id up to the last id that has a token; `None` for gaps.
    kinds: Vec<Option<TokenKind>>,
    num_tokens: usize,
    vocab_size: usize,
    stop: Vec<u32>,
    /// Special tokens sorted by bytes, then id, for name lookup.
    specials: Vec<(Box<[u8]>, u32)>,
    sorted: SortedVocab,
    origin: String,
    /// [`Vocabulary::fingerprint`], computed on first use (reset by the setters).
    fingerprint: std::sync::OnceLock<u64>,
}

/// One token as the loaders produce it: id, bytes, kind.
pub(crate) type Entry = (u32, Vec<u8>, TokenKind);

impl Vocabulary {
    /// A vocabulary from a plain list of byte strings: token `i` has bytes `tokens[i]`.
    ///
    /// * An empty byte string marks an id without a token (never allowed) unless the id
    ///   is listed in `special`.
    /// * `special`: ids that are [`TokenKind::Special`]; the rest are `Normal`.
    /// * `stop`: the stop (EOS) token ids, any number.
    /// * `vocab_size`: the logits width; `None` means `tokens.len()`.
    ///
    /// Errors when an id in `special` or `stop` is not below the vocabulary size, or when
    /// `vocab_size` is smaller than `tokens.len()` or above [`MAX_VOCAB_SIZE`].
    pub fn from_byte_tokens(
        tokens: Vec<Vec<u8>>,
        special: &[u32],
        stop: &[u32],
        vocab_size: Option<usize>,
    ) -> Result<Self, VocabError> {
        let origin = "byte token list";
        let n = tokens.len();
        check_size(origin, n)?;
        let mut kinds = vec![TokenKind::Normal; n];
        for &id in special {
            match kinds.get_mut(id as usize) {
                Some(kind) => *kind = TokenKind::Special,
                None => return Err(id_error(origin, id.into(), n)),
            }
        }
        let entries: Vec<Entry> = tokens
            .into_iter()
            .zip(kinds)
            .enumerate()
            .filter(|(_, (bytes, kind))| !bytes.is_empty() || *kind == TokenKind::Special)
            .map(|(id, (bytes, kind))| (id as u32, bytes, kind))
            .collect();
        let size = vocab_size.unwrap_or(n);
        if size < n {
            return Err(VocabError::BadVocabSize {
                origin: origin.to_string(),
                requested: size,
                reason: format!("the list has {n} tokens"),
            });
        }
        Self::assemble(origin.to_string(), entries, stop.to_vec(), Some(size))
    }

    /// Builds a vocabulary from tokens in any order; every loader ends here. Errors on
    /// duplicate ids, ids at or above [`MAX_VOCAB_SIZE`] and bad sizes or stop ids.
    /// A vocabulary from `(id, bytes, kind)` entries in any order (ids without an entry
    /// have no token), as a loader makes it: the inverse of [`Vocabulary::iter`], so a
    /// vocabulary rebuilt from its entries, stop tokens and `vocab_size` has the same
    /// [`Vocabulary::fingerprint`]. `origin` names where it came from in errors.
    ///
    /// Errors on a repeated id, an id or `vocab_size` above [`MAX_VOCAB_SIZE`], a
    /// `vocab_size` below the ids, or a stop id without a token.
    pub fn from_entries(
        origin: impl Into<String>,
        entries: Vec<(u32, Vec<u8>, TokenKind)>,
        stop: &[u32],
        vocab_size: Option<usize>,
    ) -> Result<Self, VocabError> {
        let mut vocab = Vocabulary::assemble(origin.into(), entries, Vec::new(), None)?;
        vocab.set_stop_tokens(stop)?;
        if let Some(n) = vocab_size {
            vocab.set_vocab_size(n)?;
        }
        Ok(vocab)
    }

    pub(crate) fn assemble(
        origin: String,
        mut entries: Vec<Entry>,
        stop: Vec<u32>,
        vocab_size: Option<usize>,
    ) -> Result<Self, VocabError> {
        entries.sort_unstable_by_key(|e| e.0);
        if let Some(w) = entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(VocabError::DuplicateId { origin, id: w[0].0 });
        }
        let bound = entries.last().map_or(0, |e| e.0 as usize + 1);
        if bound > MAX_VOCAB_SIZE {
            return Err(id_error(&origin, (bound - 1) as u64, MAX_VOCAB_SIZE));
        }
        let total: usize = entries.iter().map(|e| e.1.len()).sum();
        if total > u32::MAX as usize {
            return Err(VocabError::Format {
                origin,
                pointer: String::new(),
                message: format!("the tokens hold {total} bytes in all, more than 4 GiB"),
            });
        }
        let mut data = Vec::with_capacity(total);
        let mut starts = vec![0u32; bound + 1];
        let mut kinds = vec![None; bound];
        let mut next = 0;
        for (id, bytes, kind) in &entries {
            let id = *id as usize;
            starts[next..=id].fill(data.len() as u32);
            data.extend_from_slice(bytes);
            kinds[id] = Some(*kind);
            next = id + 1;
        }
        starts[next..].fill(data.len() as u32);
        drop(entries);
        let num_tokens = kinds.iter().filter(|k| k.is_some()).count();
        let mut vocab = Vocabulary {
            data,
            starts,
            kinds,
            num_tokens,
            vocab_size: 0,
            stop: Vec::new(),
            specials: Vec::new(),
            sorted: SortedVocab::default(),
            origin,
            fingerprint: std::sync::OnceLock::new(),
        };
        vocab.set_vocab_size(vocab_size.unwrap_or(bound))?;
        vocab.set_stop_tokens(&stop)?;
        let mut specials: Vec<(Box<[u8]>, u32)> = Vec::new();
        let mut text_tokens: Vec<(u32, &[u8])> = Vec::with_capacity(num_tokens);
        for (id, kind) in vocab.kinds.iter().enumerate() {
            let id = id as u32;
            match kind {
                Some(TokenKind::Special) => specials.push((vocab.bytes_of(id).into(), id)),
                Some(_) => text_tokens.push((id, vocab.bytes_of(id))),
                None => {}
            }
        }
        specials.sort();
        let sorted = SortedVocab::build(text_tokens);
        vocab.specials = specials;
        vocab.sorted = sorted;
        Ok(vocab)
    }

    fn bytes_of(&self, id: u32) -> &[u8] {
        let id = id as usize;
        &self.data[self.starts[id] as usize..self.starts[id + 1] as usize]
    }

    /// Loads a vocabulary from a specification string: a builtin name (see
    /// [`Vocabulary::builtin`]), a path to a `tokenizer.json`, a directory holding one, a
    /// GGUF model file (`*.gguf`, see [`Vocabulary::from_gguf`]), or a tiktoken rank file (`*.tiktoken`, or any file whose content does not start
    /// with `{`). A tiktoken file named after a builtin (`cl100k_base.tiktoken`, ...) gets
    /// that builtin's special tokens; any other gets none.
    pub fn load(spec: &str) -> Result<Self, VocabError> {
        if crate::tiktoken::is_builtin(spec) {
            return Self::builtin(spec);
        }
        let path = Path::new(spec);
        if path.is_dir() {
            return Self::from_tokenizer_json(path.join("tokenizer.json"));
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext.eq_ignore_ascii_case("gguf") {
            return Self::from_gguf(path);
        }
        if ext.eq_ignore_ascii_case("json") {
            return Self::from_tokenizer_json(path);
        }
        let bytes = crate::read_file(path)?;
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
        if first == Some(&b'{') && !ext.eq_ignore_ascii_case("tiktoken") {
            return Self::from_tokenizer_json(path);
        }
        crate::tiktoken::from_tiktoken_file_guess_specials(path, &bytes)
    }

    /// The number of ids that have a token (the tokenizer's size, without gaps or padding).
    #[inline]
    pub fn len(&self) -> usize {
        self.num_tokens
    }

    /// Whether no id has a token.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.num_tokens == 0
    }

    /// The logits width: masks cover ids `0..vocab_size()`. At least one more than the
    /// largest id with a token.
    #[inline]
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// One more than the largest id that has a token (0 for an empty vocabulary): the
    /// smallest valid `vocab_size`.
    #[inline]
    pub fn id_bound(&self) -> usize {
        self.kinds.len()
    }

    /// Sets the logits width. Errors when `n` is below [`Vocabulary::id_bound`], below
    /// one more than a stop token, or above [`MAX_VOCAB_SIZE`].
    pub fn set_vocab_size(&mut self, n: usize) -> Result<(), VocabError> {
        let bound =
            self.kinds.len().max(self.stop.iter().map(|&s| s as usize + 1).max().unwrap_or(0));
        if n < bound {
            return Err(VocabError::BadVocabSize {
                origin: self.origin.clone(),
                requested: n,
                reason: format!("the token ids need at least {bound}"),
            });
        }
        check_size(&self.origin, n)?;
        self.vocab_size = n;
        self.fingerprint = std::sync::OnceLock::new();
        Ok(())
    }

    /// The exact bytes of token `id` (see the module docs); `None` for ids without a token.
    #[inline]
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.kind(id).map(|_| self.bytes_of(id))
    }

    /// The kind of token `id`; `None` for ids without a token.
    #[inline]
    pub fn kind(&self, id: u32) -> Option<TokenKind> {
        self.kinds.get(id as usize).copied().flatten()
    }

    /// Whether `id` is a [`TokenKind::Special`] token.
    #[inline]
    pub fn is_special(&self, id: u32) -> bool {
        self.kind(id) == Some(TokenKind::Special)
    }

    /// The stop (EOS) token ids, sorted, without duplicates.
    #[inline]
    pub fn stop_tokens(&self) -> &[u32] {
        &self.stop
    }

    /// Whether `id` is a stop token.
    pub fn is_stop(&self, id: u32) -> bool {
        self.stop.binary_search(&id).is_ok()
    }

    /// Replaces the stop tokens. Every id must have a token (of any kind).
    pub fn set_stop_tokens(&mut self, ids: &[u32]) -> Result<(), VocabError> {
        for &id in ids {
            if self.kind(id).is_none() {
                return Err(id_error(&self.origin, id.into(), self.kinds.len()));
            }
        }
        let mut stop = ids.to_vec();
        stop.sort_unstable();
        stop.dedup();
        self.stop = stop;
        self.fingerprint = std::sync::OnceLock::new();
        Ok(())
    }

    /// A 64-bit hash of what a compiled grammar depends on: the logits width, the stop
    /// tokens, and every id's kind and bytes. Computed once (a pass over every token,
    /// milliseconds for a 128k vocabulary) and kept.
    pub fn fingerprint(&self) -> u64 {
        *self.fingerprint.get_or_init(|| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            self.vocab_size().hash(&mut h);
            self.stop_tokens().hash(&mut h);
            for id in 0..self.id_bound() as u32 {
                self.kind(id).map(|k| k as u8).hash(&mut h);
                self.token_bytes(id).hash(&mut h);
            }
            h.finish()
        })
    }

    /// The id of the token with exactly these bytes: a special token if one has them
    /// (the smallest such id), otherwise the smallest id of a normal or byte token.
    pub fn token_id(&self, bytes: &[u8]) -> Option<u32> {
        self.special_token_id(bytes)
            .or_else(|| self.sorted.find(bytes).map(|pos| self.sorted.token_id(pos)))
    }

    /// The id of the special token whose name (bytes) is `name`, if any.
    pub fn special_token_id(&self, name: &[u8]) -> Option<u32> {
        let pos = self.specials.partition_point(|(b, _)| &**b < name);
        self.specials.get(pos).filter(|(b, _)| &**b == name).map(|&(_, id)| id)
    }

    /// The special tokens as `(id, name)` pairs, sorted by name.
    pub fn special_tokens(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.specials.iter().map(|(b, id)| (*id, &**b))
    }

    /// The non-special tokens sorted by bytes, with the data to walk them as a trie.
    #[inline]
    pub fn sorted(&self) -> &SortedVocab {
        &self.sorted
    }

    /// Iterates `(id, kind, bytes)` over every id that has a token, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, TokenKind, &[u8])> + '_ {
        self.kinds
            .iter()
            .enumerate()
            .filter_map(|(id, k)| k.map(|k| (id as u32, k, self.bytes_of(id as u32))))
    }

    /// Where the vocabulary came from (a path or a builtin name), for messages.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The stop tokens guessed from [`COMMON_STOP_TOKENS`]: special tokens with one of
    /// those names.
    pub(crate) fn common_stop_ids(entries: &[Entry]) -> Vec<u32> {
        entries
            .iter()
            .filter(|(_, bytes, kind)| {
                *kind == TokenKind::Special
                    && COMMON_STOP_TOKENS.iter().any(|n| n.as_bytes() == bytes.as_slice())
            })
            .map(|e| e.0)
            .collect()
    }
}

impl std::fmt::Debug for Vocabulary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vocabulary")
            .field("origin", &self.origin)
            .field("len", &self.num_tokens)
            .field("vocab_size", &self.vocab_size)
            .field("specials", &self.specials.len())
            .field("stop", &self.stop)
            .finish()
    }
}

pub(crate) fn check_size(origin: &str, n: usize) -> Result<(), VocabError> {
    if n > MAX_VOCAB_SIZE {
        return Err(VocabError::BadVocabSize {
            origin: origin.to_string(),
            requested: n,
            reason: format!("above the limit of {MAX_VOCAB_SIZE} ids"),
        });
    }
    Ok(())
}

pub(crate) fn id_error(origin: &str, id: u64, bound: usize) -> VocabError {
    VocabError::IdOutOfRange { origin: origin.to_string(), id, vocab_size: bound }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_sync() {
        fn check<T: Send + Sync>() {}
        check::<Vocabulary>();
    }

    /// The fingerprint is kept once computed, and follows every change a compiled
    /// grammar depends on: what the setters change resets it.
    #[test]
    fn fingerprint_follows_the_content() {
        let tokens = || vec![b"a".to_vec(), b"b".to_vec(), b"</s>".to_vec()];
        let mut v = Vocabulary::from_byte_tokens(tokens(), &[2], &[2], None).unwrap();
        let first = v.fingerprint();
        assert_eq!(v.fingerprint(), first);
        assert_eq!(v.clone().fingerprint(), first);
        let same = Vocabulary::from_byte_tokens(tokens(), &[2], &[2], None).unwrap();
        assert_eq!(same.fingerprint(), first);
        v.set_stop_tokens(&[1]).unwrap();
        let stop_b = v.fingerprint();
        assert_ne!(stop_b, first);
        v.set_vocab_size(8).unwrap();
        assert_ne!(v.fingerprint(), stop_b);
        let other = Vocabulary::from_byte_tokens(
            vec![b"a".to_vec(), b"c".to_vec(), b"</s>".to_vec()],
            &[2],
            &[2],
            None,
        )
        .unwrap();
        assert_ne!(other.fingerprint(), first);
    }

    #[test]
    fn gaps_padding_and_checks() {
        let mut v = Vocabulary::from_byte_tokens(
            vec![b"x".to_vec(), vec![], b"<s>".to_vec(), b"y".to_vec(), vec![]],
            &[2],
            &[],
            None,
        )
        .unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v.id_bound(), 4);
        assert_eq!(v.vocab_size(), 5);
        assert_eq!(v.kind(1), None);
        assert_eq!(v.sorted().ids(), &[0, 3]);
        assert!(v.set_vocab_size(3).is_err());
        v.set_vocab_size(64).unwrap();
        assert!(v.set_vocab_size(MAX_VOCAB_SIZE + 1).is_err());
        assert!(v.set_stop_tokens(&[1]).is_err());
        assert!(v.set_stop_tokens(&[40]).is_err());
        v.set_stop_tokens(&[2, 0, 2]).unwrap();
        assert_eq!(v.stop_tokens(), &[0, 2]);
        assert_eq!(v.special_token_id(b"<s>"), Some(2));
        assert_eq!(v.token_id(b"y"), Some(3));
        assert!(Vocabulary::from_byte_tokens(vec![b"a".to_vec()], &[3], &[], None).is_err());
        assert!(Vocabulary::from_byte_tokens(vec![b"a".to_vec()], &[], &[0], Some(0)).is_err());
    }
}
