//! `grammask.FieldRecorder`: how sure the model was of each JSON value it wrote under a
//! grammar, from the logits of each step.

use crate::errors::match_error;
use crate::matcher::Matcher;
use grammask::bitmask_len;
use grammask::engine::fields::{Field, FieldRecorder as RustRecorder, StepDistribution};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// Follows a constrained generation and reports, for every JSON value written, its JSON
/// pointer, the value, `p_chosen` (the probability of its tokens under the masked,
/// renormalized distribution), the runner-up and its probability where the grammar left a
/// few values (an enum, a boolean), and `mass_removed` (the probability the mask took away
/// at the value's first token).
///
/// At each step, before `matcher.accept_token(token_id)`, call
/// `observe(matcher, logits, token_id)` with the step's raw logits (before masking: a
/// 1-D torch tensor, numpy array, float32 bytes or a list of floats).
#[pyclass(module = "grammask")]
pub struct FieldRecorder {
    inner: RustRecorder,
}

/// The logits of one step as f32, from a tensor, an array, bytes or a sequence.
fn logits_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<f32>> {
    let bytes = if let Ok(b) = obj.cast::<PyBytes>() {
        Some(b.as_bytes().to_vec())
    } else if obj.hasattr("detach")? {
        // torch: flattened float32 on the CPU.
        let t = obj.call_method0("detach")?.call_method0("float")?.call_method0("cpu")?;
        let t = t.call_method1("reshape", (-1,))?;
        Some(t.call_method0("numpy")?.call_method0("tobytes")?.extract::<Vec<u8>>()?)
    } else if obj.hasattr("astype")? {
        let a = obj.call_method1("astype", ("<f4",))?.call_method1("reshape", (-1,))?;
        Some(a.call_method0("tobytes")?.extract::<Vec<u8>>()?)
    } else {
        None
    };
    match bytes {
        Some(b) if b.len() % 4 == 0 => {
            Ok(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
        }
        Some(_) => Err(PyValueError::new_err("logits: bytes must hold float32 values")),
        None => obj.extract::<Vec<f32>>().map_err(|_| {
            PyTypeError::new_err("logits: expected a torch tensor, a numpy array, bytes or floats")
        }),
    }
}

fn field_dict<'py>(py: Python<'py>, f: &Field) -> PyResult<Bound<'py, PyDict>> {
    let json = py.import("json")?;
    let value = |text: &str| -> PyResult<Py<PyAny>> {
        Ok(json
            .call_method1("loads", (text,))
            .unwrap_or(text.into_pyobject(py)?.into_any())
            .unbind())
    };
    let d = PyDict::new(py);
    d.set_item("pointer", &f.pointer)?;
    d.set_item("value", value(&f.value)?)?;
    d.set_item("p_chosen", f.p_chosen)?;
    d.set_item("runner_up", f.runner_up.as_deref().map(value).transpose()?)?;
    d.set_item("p_runner_up", f.p_runner_up)?;
    d.set_item("mass_removed", f.mass_removed)?;
    Ok(d)
}

#[pymethods]
impl FieldRecorder {
    #[new]
    fn new() -> FieldRecorder {
        FieldRecorder { inner: RustRecorder::new() }
    }

    /// Records one step: `matcher` before it accepts `token_id`, the step's raw logits.
    fn observe(
        &mut self,
        py: Python<'_>,
        matcher: &Matcher,
        logits: &Bound<'_, PyAny>,
        token_id: i64,
    ) -> PyResult<()> {
        let logits = logits_of(logits)?;
        let vocab_size = matcher.inner.grammar().vocabulary().vocab_size();
        let id = u32::try_from(token_id)
            .ok()
            .filter(|&id| (id as usize) < vocab_size)
            .ok_or_else(|| PyValueError::new_err(format!("token id {token_id} is out of range")))?;
        let mut mask = vec![0u32; bitmask_len(vocab_size)];
        matcher.inner.fill_next_token_bitmask(&mut mask).map_err(|e| match_error(py, e))?;
        self.inner.observe(&matcher.inner, &StepDistribution::from_logits(&logits, &mask, id));
        Ok(())
    }

    /// The values completed so far: dicts with `pointer`, `value`, `p_chosen`,
    /// `runner_up`, `p_runner_up`, `mass_removed`. A value still being written (a number
    /// at the very end, before the stop token) is not among them.
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items =
            self.inner.fields().iter().map(|f| field_dict(py, f)).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// Ends the text (a number at the very end is complete) and returns every value.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.inner.end_text();
        self.fields(py)
    }
}
