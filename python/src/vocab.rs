//! `grammask.Vocabulary`: a tokenizer's tokens as exact bytes, with stop tokens and the
//! logits width, from the loaders of `grammask-tokenset`.

use crate::errors::vocab_error;
use grammask::tokenset::{TokenKind, Vocabulary as RustVocabulary};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::sync::Arc;

/// A tokenizer's vocabulary: the exact bytes of every token id, which ids are special
/// (never matched as text), the stop (EOS) tokens, and the logits width `vocab_size`.
///
/// Immutable and shareable across threads; picklable.
#[pyclass(module = "grammask", frozen)]
pub struct Vocabulary {
    pub(crate) inner: Arc<RustVocabulary>,
}

/// Applies the caller's `vocab_size` and `stop_token_ids` to a loaded vocabulary.
fn finish(
    mut v: RustVocabulary,
    vocab_size: Option<usize>,
    stop_token_ids: Option<Vec<u32>>,
) -> PyResult<Vocabulary> {
    if let Some(stop) = stop_token_ids {
        v.set_stop_tokens(&stop).map_err(vocab_error)?;
    }
    if let Some(n) = vocab_size {
        if n < v.id_bound() {
            // The model's logits are narrower than the tokenizer: the ids past them can
            // never be sampled, so they leave the vocabulary.
            v = truncated(&v, n)?;
        } else if n != v.vocab_size() {
            v.set_vocab_size(n).map_err(vocab_error)?;
        }
    }
    Ok(Vocabulary { inner: Arc::new(v) })
}

/// `v` without the ids at or past `n` (and with the logits width `n`).
fn truncated(v: &RustVocabulary, n: usize) -> PyResult<RustVocabulary> {
    let entries = v
        .iter()
        .filter(|&(id, _, _)| (id as usize) < n)
        .map(|(id, kind, bytes)| (id, bytes.to_vec(), kind))
        .collect();
    let stop: Vec<u32> = v.stop_tokens().iter().copied().filter(|&s| (s as usize) < n).collect();
    RustVocabulary::from_entries(v.origin(), entries, &stop, Some(n)).map_err(vocab_error)
}

fn kind_code(kind: Option<TokenKind>) -> u8 {
    match kind {
        None => 0,
        Some(TokenKind::Normal) => 1,
        Some(TokenKind::Special) => 2,
        Some(TokenKind::Byte) => 3,
    }
}

#[pymethods]
impl Vocabulary {
    /// Loads a Hugging Face `tokenizer.json` (stop tokens from common names and a sibling
    /// `tokenizer_config.json` / `generation_config.json`). `vocab_size` is the model's
    /// logits width: wider than the tokenizer (a padded embedding) adds ids that are
    /// never allowed, narrower leaves out the tokenizer's ids past it; `stop_token_ids`
    /// replaces the stop tokens.
    #[staticmethod]
    #[pyo3(signature = (path, vocab_size=None, stop_token_ids=None))]
    fn from_tokenizer_json(
        path: std::path::PathBuf,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<u32>>,
    ) -> PyResult<Vocabulary> {
        let v = RustVocabulary::from_tokenizer_json(&path).map_err(vocab_error)?;
        finish(v, vocab_size, stop_token_ids)
    }

    /// Reads the content of a `tokenizer.json` (a str or bytes); otherwise as
    /// `from_tokenizer_json`.
    #[staticmethod]
    #[pyo3(signature = (text, vocab_size=None, stop_token_ids=None))]
    fn from_tokenizer_json_text(
        text: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<u32>>,
    ) -> PyResult<Vocabulary> {
        let bytes: Vec<u8> = match text.extract::<String>() {
            Ok(s) => s.into_bytes(),
            Err(_) => text.extract::<Vec<u8>>()?,
        };
        let v = RustVocabulary::from_tokenizer_json_bytes(&bytes).map_err(vocab_error)?;
        finish(v, vocab_size, stop_token_ids)
    }

    /// Loads the tokenizer stored in a GGUF model file's metadata.
    #[staticmethod]
    #[pyo3(signature = (path, vocab_size=None, stop_token_ids=None))]
    fn from_gguf(
        path: std::path::PathBuf,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<u32>>,
    ) -> PyResult<Vocabulary> {
        let v = RustVocabulary::from_gguf(&path).map_err(vocab_error)?;
        finish(v, vocab_size, stop_token_ids)
    }

    /// A tiktoken encoding that ships with grammask: `o200k`, `cl100k`, `p50k`, `r50k`
    /// (`_base` suffixes accepted).
    #[staticmethod]
    #[pyo3(signature = (name, vocab_size=None, stop_token_ids=None))]
    fn builtin(
        name: &str,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<u32>>,
    ) -> PyResult<Vocabulary> {
        let v = RustVocabulary::builtin(name).map_err(vocab_error)?;
        finish(v, vocab_size, stop_token_ids)
    }

    /// A vocabulary from each id's bytes: `tokens[i]` is token `i` (`b""` for an id
    /// without a token). `special_token_ids` are never matched as text (allowed only
    /// where a grammar names them); `byte_token_ids` are byte-fallback tokens (their
    /// bytes one byte). `vocab_size` defaults to `len(tokens)`.
    #[staticmethod]
    #[pyo3(signature = (tokens, stop_token_ids, vocab_size=None, *, special_token_ids=None, byte_token_ids=None))]
    fn from_tokens(
        tokens: Vec<Vec<u8>>,
        stop_token_ids: Vec<u32>,
        vocab_size: Option<usize>,
        special_token_ids: Option<Vec<u32>>,
        byte_token_ids: Option<Vec<u32>>,
    ) -> PyResult<Vocabulary> {
        let n = tokens.len();
        let mut kinds: Vec<TokenKind> = vec![TokenKind::Normal; n];
        for (list, kind) in
            [(&special_token_ids, TokenKind::Special), (&byte_token_ids, TokenKind::Byte)]
        {
            for &id in list.iter().flatten() {
                let slot = kinds.get_mut(id as usize).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "token id {id} is not below the {n} tokens given"
                    ))
                })?;
                *slot = kind;
            }
        }
        let entries = tokens
            .into_iter()
            .zip(kinds)
            .enumerate()
            .filter(|(_, (bytes, kind))| !bytes.is_empty() || *kind == TokenKind::Special)
            .map(|(id, (bytes, kind))| (id as u32, bytes, kind))
            .collect();
        let v = RustVocabulary::from_entries("token list", entries, &stop_token_ids, vocab_size)
            .map_err(vocab_error)?;
        Ok(Vocabulary { inner: Arc::new(v) })
    }

    /// A vocabulary from a transformers tokenizer (`PreTrainedTokenizerBase`): a fast
    /// tokenizer through its `tokenizer.json`, a slow sentencepiece one through its
    /// pieces (`▁` for the space, `<0xNN>` byte fallback). `vocab_size`: the model's
    /// logits width when wider than the tokenizer (`model.config.vocab_size`);
    /// `stop_token_ids` default to the tokenizer's `eos_token_id` and the stop tokens the
    /// loader recognizes.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, vocab_size=None, stop_token_ids=None))]
    fn from_huggingface(
        py: Python<'_>,
        tokenizer: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
        stop_token_ids: Option<Vec<u32>>,
    ) -> PyResult<Vocabulary> {
        let helper = py.import("grammask._huggingface")?;
        let made = helper.getattr("vocabulary_parts")?.call1((tokenizer,))?;
        let (form, payload, eos): (String, Bound<'_, PyAny>, Vec<u32>) = made.extract()?;
        let loaded = match form.as_str() {
            "json" => {
                let text: String = payload.extract()?;
                RustVocabulary::from_tokenizer_json_bytes(text.as_bytes()).map_err(vocab_error)?
            }
            _ => {
                let tokens: Vec<(u32, Vec<u8>, u8)> = payload.extract()?;
                let entries = tokens
                    .into_iter()
                    .map(|(id, bytes, kind)| {
                        let kind = match kind {
                            2 => TokenKind::Special,
                            3 => TokenKind::Byte,
                            _ => TokenKind::Normal,
                        };
                        (id, bytes, kind)
                    })
                    .collect();
                RustVocabulary::from_entries("transformers tokenizer", entries, &[], None)
                    .map_err(vocab_error)?
            }
        };
        let stop = match stop_token_ids {
            Some(ids) => ids,
            None => {
                let mut ids = loaded.stop_tokens().to_vec();
                ids.extend(eos.into_iter().filter(|&id| loaded.kind(id).is_some()));
                ids
            }
        };
        finish(loaded, vocab_size, Some(stop))
    }

    /// The logits width: token ids are below it (ids past the tokenizer's are padding,
    /// never allowed).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    /// The stop (EOS) token ids, sorted: allowed exactly where the grammar can end.
    #[getter]
    fn stop_token_ids(&self) -> Vec<u32> {
        self.inner.stop_tokens().to_vec()
    }

    /// The special token ids (never matched as text).
    #[getter]
    fn special_token_ids(&self) -> Vec<u32> {
        self.inner.special_tokens().map(|(id, _)| id).collect()
    }

    /// The exact bytes of token `id` (`None` for an id without a token).
    fn token_bytes<'py>(&self, py: Python<'py>, id: u32) -> Option<Bound<'py, PyBytes>> {
        self.inner.token_bytes(id).map(|b| PyBytes::new(py, b))
    }

    /// The number of ids that have a token.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Vocabulary(tokens={}, vocab_size={}, stop_token_ids={:?})",
            self.inner.len(),
            self.inner.vocab_size(),
            self.inner.stop_tokens()
        )
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let ctor = py.get_type::<Vocabulary>().getattr("_from_pickle")?;
        Ok((ctor, (PyBytes::new(py, &encode(&slf.get().inner)),)))
    }

    #[staticmethod]
    fn _from_pickle(data: &[u8]) -> PyResult<Vocabulary> {
        decode(data).map(|v| Vocabulary { inner: Arc::new(v) })
    }
}

/// A vocabulary as bytes for pickling: `vocab_size`, stop ids, then per id kind, length
/// and bytes (little-endian u32s).
fn encode(v: &RustVocabulary) -> Vec<u8> {
    let mut out = Vec::new();
    let put = |out: &mut Vec<u8>, x: usize| out.extend_from_slice(&(x as u32).to_le_bytes());
    put(&mut out, v.vocab_size());
    put(&mut out, v.stop_tokens().len());
    for &s in v.stop_tokens() {
        put(&mut out, s as usize);
    }
    put(&mut out, v.id_bound());
    for id in 0..v.id_bound() as u32 {
        let kind = v.kind(id);
        out.push(kind_code(kind));
        let bytes = v.token_bytes(id).unwrap_or_default();
        put(&mut out, bytes.len());
        out.extend_from_slice(bytes);
    }
    out
}

/// Reads `encode`'s output.
fn decode(data: &[u8]) -> PyResult<RustVocabulary> {
    struct Reader<'a>(&'a [u8]);
    impl<'a> Reader<'a> {
        fn take(&mut self, n: usize) -> PyResult<&'a [u8]> {
            if self.0.len() < n {
                return Err(PyValueError::new_err(
                    "cannot unpickle the vocabulary: truncated or corrupt data",
                ));
            }
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            Ok(head)
        }
        fn u32(&mut self) -> PyResult<usize> {
            let b = self.take(4)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        }
    }
    let mut r = Reader(data);
    let vocab_size = r.u32()?;
    let n_stop = r.u32()?;
    let stop = (0..n_stop).map(|_| r.u32().map(|s| s as u32)).collect::<PyResult<Vec<_>>>()?;
    let bound = r.u32()?;
    let mut entries = Vec::new();
    for id in 0..bound as u32 {
        let kind = r.take(1)?[0];
        let len = r.u32()?;
        let bytes = r.take(len)?.to_vec();
        let kind = match kind {
            0 => continue,
            1 => TokenKind::Normal,
            2 => TokenKind::Special,
            3 => TokenKind::Byte,
            _ => return Err(PyValueError::new_err("cannot unpickle the vocabulary: corrupt data")),
        };
        entries.push((id, bytes, kind));
    }
    RustVocabulary::from_entries("unpickled vocabulary", entries, &stop, Some(vocab_size))
        .map_err(vocab_error)
}

/// The vocabulary inside a `grammask.Vocabulary` argument.
pub fn extract_vocab(obj: &Bound<'_, PyAny>) -> PyResult<Arc<RustVocabulary>> {
    let v = obj.cast::<Vocabulary>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "expected a grammask.Vocabulary, got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    Ok(v.get().inner.clone())
}
