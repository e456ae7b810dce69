//! `grammask.Matcher`: the state of one generation, and the batch fill of many matchers'
//! bitmasks.

use crate::bitmask::BitmaskView;
use crate::compiler::CompiledGrammar;
use crate::errors::match_error;
use grammask::{bitmask_len, MatchError, Matcher as RustMatcher};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyList;

/// Matches one generation against a compiled grammar: fills the bitmask of the tokens
/// allowed next and accepts the token chosen.
///
/// Calls that refuse (a token not allowed) return False and change nothing. A stop
/// token is allowed exactly where the document can end; accepting one terminates the
/// matcher. `max_rollback` steps are kept for `rollback` (default: the compiler's
/// `max_rollback`).
#[pyclass(module = "grammask")]
pub struct Matcher {
    pub(crate) inner: RustMatcher,
}

/// Whether an error of a token or text step is a refusal (False) rather than an error.
fn refused(err: &MatchError) -> bool {
    matches!(
        err,
        MatchError::TokenRejected { .. }
            | MatchError::TokenOutOfRange { .. }
            | MatchError::BytesRejected { .. }
            | MatchError::Terminated
    )
}

/// Whether `row` forbids some token of the vocabulary (the first `vocab_size` bits).
fn forbids_some(row: &[u32], vocab_size: usize) -> bool {
    let full = vocab_size / 32;
    if row[..full].iter().any(|&w| w != u32::MAX) {
        return true;
    }
    let rest = vocab_size % 32;
    rest != 0 && row[full] != (1u32 << rest) - 1
}

#[pymethods]
impl Matcher {
    #[new]
    #[pyo3(signature = (compiled, max_rollback=None))]
    fn new(compiled: &Bound<'_, PyAny>, max_rollback: Option<usize>) -> PyResult<Matcher> {
        let compiled = compiled.cast::<CompiledGrammar>().map_err(|_| {
            PyTypeError::new_err("Matcher(compiled): expected a grammask.CompiledGrammar")
        })?;
        let grammar = compiled.get().inner.clone();
        let inner = match max_rollback {
            Some(n) => RustMatcher::with_max_rollback(grammar, n),
            None => RustMatcher::new(grammar),
        };
        Ok(Matcher { inner })
    }

    /// Fills row `index` of `bitmask` (a writable int32 numpy array or CPU torch tensor
    /// of shape `[batch, ceil(vocab_size / 32)]`, or 1-D) with the tokens allowed next:
    /// bit `i % 32` of word `i / 32` for token `i`. The GIL is released meanwhile.
    /// Returns whether some token is forbidden (False: the row allows every token).
    #[pyo3(signature = (bitmask, index=0))]
    fn fill_next_token_bitmask(
        &self,
        py: Python<'_>,
        bitmask: &Bound<'_, PyAny>,
        index: usize,
    ) -> PyResult<bool> {
        let vocab_size = self.inner.grammar().vocabulary().vocab_size();
        let mut view = BitmaskView::of(bitmask, bitmask_len(vocab_size))?;
        let row = view.row_mut(index)?;
        let matcher = &self.inner;
        py.detach(|| matcher.fill_next_token_bitmask(row).map(|()| forbids_some(row, vocab_size)))
            .map_err(|e| match_error(py, e))
    }

    /// Accepts token `id`; False (and no change) when the grammar does not allow it.
    fn accept_token(&mut self, py: Python<'_>, id: i64) -> PyResult<bool> {
        let Ok(id) = u32::try_from(id) else { return Ok(false) };
        match self.inner.accept_token(id) {
            Ok(()) => Ok(true),
            Err(e) if refused(&e) => Ok(false),
            Err(e) => Err(match_error(py, e)),
        }
    }

    /// Accepts the tokens in turn; when one is refused, those before it are rolled back
    /// too and False is returned (no change).
    fn accept_tokens(&mut self, py: Python<'_>, ids: Vec<i64>) -> PyResult<bool> {
        for (done, &id) in ids.iter().enumerate() {
            let step = match u32::try_from(id) {
                Ok(id) => self.inner.accept_token(id),
                Err(_) => Err(MatchError::TokenOutOfRange { id: u32::MAX, vocab_size: 0 }),
            };
            if let Err(e) = step {
                let undo = self.inner.rollback(done.min(self.inner.history_len()));
                debug_assert!(undo.is_ok());
                return if refused(&e) { Ok(false) } else { Err(match_error(py, e)) };
            }
        }
        Ok(true)
    }

    /// Accepts text (its UTF-8 bytes, as one step); False (and no change) when the
    /// grammar does not allow it.
    fn accept_string(&mut self, py: Python<'_>, text: &str) -> PyResult<bool> {
        match self.inner.accept_string(text) {
            Ok(()) => Ok(true),
            Err(e) if refused(&e) => Ok(false),
            Err(e) => Err(match_error(py, e)),
        }
    }

    /// How many of `ids`, from the first, would be accepted in turn (speculative
    /// decoding's draft check). Changes nothing.
    fn validate_tokens(&self, ids: Vec<i64>) -> usize {
        let valid: Vec<u32> = ids.iter().map_while(|&id| u32::try_from(id).ok()).collect();
        self.inner.validate_tokens(&valid)
    }

    /// Undoes the last `n` accepted steps (tokens, strings, a stop token).
    fn rollback(&mut self, py: Python<'_>, n: usize) -> PyResult<()> {
        self.inner.rollback(n).map_err(|e| match_error(py, e))
    }

    /// Returns to the start of the grammar.
    fn reset(&mut self) {
        self.inner.reset();
    }

    /// An independent copy (O(1): the state and history are shared until they change).
    fn fork(&self) -> Matcher {
        Matcher { inner: self.inner.fork() }
    }

    /// Whether a stop token was accepted.
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// Whether the text so far is a whole document (a stop token would be accepted).
    fn can_terminate(&self) -> bool {
        self.inner.can_terminate()
    }

    /// The text the grammar forces next (as long as exactly one byte can follow), which a
    /// runtime may append without sampling; cut at a whole character.
    fn find_jump_forward_string(&self) -> String {
        let bytes = self.inner.find_jump_forward_bytes();
        match std::str::from_utf8(&bytes) {
            Ok(s) => s.to_owned(),
            Err(e) => String::from_utf8_lossy(&bytes[..e.valid_up_to()]).into_owned(),
        }
    }

    /// Steps `rollback` can undo now.
    #[getter]
    fn rollback_steps(&self) -> usize {
        self.inner.history_len()
    }

    /// Steps kept for `rollback`.
    #[getter]
    fn max_rollback(&self) -> usize {
        self.inner.max_rollback()
    }

    /// The compiled grammar.
    #[getter]
    fn compiled(&self) -> CompiledGrammar {
        CompiledGrammar { inner: self.inner.grammar().clone() }
    }

    fn __repr__(&self) -> String {
        format!(
            "Matcher(terminated={}, can_terminate={}, steps={})",
            self.inner.is_terminated(),
            self.inner.can_terminate(),
            self.inner.history_len()
        )
    }
}

/// Fills the rows of many matchers at once, in parallel (rayon's pool, sized by
/// `RAYON_NUM_THREADS`) without the GIL: matcher `k` fills row `indices[k]` (default
/// `k`) of `bitmask`. Every matcher must belong to the same vocabulary width.
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices=None))]
pub fn fill_next_token_bitmasks(
    py: Python<'_>,
    matchers: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<Vec<usize>>,
) -> PyResult<()> {
    use rayon::prelude::*;
    let list: Vec<Bound<'_, PyAny>> = match matchers.cast::<PyList>() {
        Ok(l) => l.iter().collect(),
        Err(_) => matchers.try_iter()?.collect::<PyResult<_>>()?,
    };
    let mut inner: Vec<RustMatcher> = Vec::with_capacity(list.len());
    for m in &list {
        let m = m.cast::<Matcher>().map_err(|_| {
            PyTypeError::new_err("fill_next_token_bitmasks: expected a list of grammask.Matcher")
        })?;
        inner.push(m.borrow().inner.fork());
    }
    let Some(first) = inner.first() else { return Ok(()) };
    let vocab_size = first.grammar().vocabulary().vocab_size();
    if let Some(m) = inner.iter().find(|m| m.grammar().vocabulary().vocab_size() != vocab_size) {
        return Err(PyTypeError::new_err(format!(
            "fill_next_token_bitmasks: matchers of vocabularies of {} and {} tokens in one batch",
            vocab_size,
            m.grammar().vocabulary().vocab_size()
        )));
    }
    let indices = indices.unwrap_or_else(|| (0..inner.len()).collect());
    if indices.len() != inner.len() {
        return Err(PyTypeError::new_err(format!(
            "fill_next_token_bitmasks: {} matchers and {} indices",
            inner.len(),
            indices.len()
        )));
    }
    let mut view = BitmaskView::of(bitmask, bitmask_len(vocab_size))?;
    let rows = view.rows_mut(&indices)?;
    let results: Vec<Result<(), MatchError>> = py.detach(|| {
        if inner.len() == 1 || rayon::current_num_threads() == 1 {
            inner.iter().zip(rows).map(|(m, row)| m.fill_next_token_bitmask(row)).collect()
        } else {
            inner
                .par_iter()
                .zip(rows.into_par_iter())
                .map(|(m, row)| m.fill_next_token_bitmask(row))
                .collect()
        }
    });
    results.into_iter().try_for_each(|r| r.map_err(|e| match_error(py, e)))
}
