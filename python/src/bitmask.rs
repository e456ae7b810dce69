//! Writable views of the caller's bitmask buffers: anything with the buffer protocol
//! (numpy arrays, `array.array`, `bytearray` viewed as int32) or with `__dlpack__` (CPU
//! torch tensors), holding 32-bit integers, one row of `ceil(vocab_size / 32)` words per
//! sequence (`[words]` or `[batch, words]`, rows contiguous).
//!
//! The buffer protocol is read through `PyObject_GetBuffer`, which every CPython has
//! exported since 3.0 but the limited API names only from 3.11: it is declared here so
//! that one abi3 wheel reads buffers on every CPython from 3.9.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::ffi::{c_char, c_int, c_void, CStr};

/// CPython's `Py_buffer` (stable layout since 3.0).
#[repr(C)]
struct RawBuffer {
    buf: *mut c_void,
    obj: *mut pyo3::ffi::PyObject,
    len: isize,
    itemsize: isize,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut isize,
    strides: *mut isize,
    suboffsets: *mut isize,
    internal: *mut c_void,
}

extern "C" {
    fn PyObject_GetBuffer(
        obj: *mut pyo3::ffi::PyObject,
        view: *mut RawBuffer,
        flags: c_int,
    ) -> c_int;
    fn PyBuffer_Release(view: *mut RawBuffer);
}

/// `PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_STRIDES` (`PyBUF_RECORDS`).
const PYBUF_RECORDS: c_int = 0x0001 | 0x0004 | 0x0008 | 0x0010;

/// DLPack's `DLTensor` (ABI-stable across DLPack 0.x and 1.x).
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device_type: i32,
    device_id: i32,
    ndim: i32,
    dtype_code: u8,
    dtype_bits: u8,
    dtype_lanes: u16,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

/// What keeps the memory of a view alive until the view is dropped.
enum Keep {
    Buffer(Box<RawBuffer>),
    /// The `__dlpack__` capsule (its destructor, the producer's, frees the tensor), or the
    /// torch tensor itself.
    Object(#[allow(dead_code)] Py<PyAny>),
}

/// torch's `Tensor` type and its `int32` / `uint32` dtypes, once torch is imported.
struct Torch {
    tensor: Py<PyAny>,
    int32: Py<PyAny>,
    uint32: Option<Py<PyAny>>,
}

static TORCH: PyOnceLock<Torch> = PyOnceLock::new();

/// [`Torch`] when the process has imported torch (never imports it).
fn torch(py: Python<'_>) -> Option<&'static Torch> {
    if let Some(t) = TORCH.get(py) {
        return Some(t);
    }
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let torch = modules.get_item("torch").ok()?;
    let made = Torch {
        tensor: torch.getattr("Tensor").ok()?.unbind(),
        int32: torch.getattr("int32").ok()?.unbind(),
        uint32: torch.getattr("uint32").ok().map(Bound::unbind),
    };
    Some(TORCH.get_or_init(py, || made))
}

/// A writable `[rows, row_stride]` view of 32-bit words: row `i` starts `i * row_stride`
/// words after the first and holds `words` words.
pub struct BitmaskView {
    addr: usize,
    rows: usize,
    row_stride: usize,
    words: usize,
    keep: Keep,
}

// SAFETY: the view is only a pointer into memory that `keep` holds alive; rows are
// written by one thread each (`rows_mut` hands out disjoint slices).
unsafe impl Send for BitmaskView {}

impl Drop for BitmaskView {
    fn drop(&mut self) {
        if let Keep::Buffer(view) = &mut self.keep {
            // Views are dropped with the interpreter attached (they live in `#[pymethods]`
            // frames); releasing needs it.
            // SAFETY: `view` was filled by a successful `PyObject_GetBuffer`.
            unsafe { PyBuffer_Release(&mut **view) };
        }
    }
}

fn shape_error(what: String) -> PyErr {
    PyValueError::new_err(format!(
        "bitmask: {what}; expected a writable int32 array of shape [batch, ceil(vocab_size / 32)] \
         (grammask.allocate_token_bitmask makes one)"
    ))
}

impl BitmaskView {
    /// A view of `obj` whose rows hold at least `need` words.
    pub fn of(obj: &Bound<'_, PyAny>, need: usize) -> PyResult<BitmaskView> {
        let view = match Self::from_torch(obj)? {
            Some(view) => view,
            None => match Self::from_buffer(obj)? {
                Some(view) => view,
                None => Self::from_dlpack(obj)?,
            },
        };
        if view.words < need {
            return Err(shape_error(format!(
                "rows have {} words, {need} needed for this vocabulary",
                view.words
            )));
        }
        Ok(view)
    }

    /// A CPU torch tensor, read through its attributes (a few times cheaper than
    /// `__dlpack__`); `None` for anything else.
    fn from_torch(obj: &Bound<'_, PyAny>) -> PyResult<Option<BitmaskView>> {
        let py = obj.py();
        let Some(torch) = torch(py) else { return Ok(None) };
        if !obj.is_instance(torch.tensor.bind(py))? {
            return Ok(None);
        }
        if !obj.getattr(intern!(py, "is_cpu"))?.extract::<bool>()? {
            return Err(shape_error(
                "the tensor is not on the CPU (fill a CPU bitmask, then move it to the device)"
                    .into(),
            ));
        }
        let dtype = obj.getattr(intern!(py, "dtype"))?;
        let int32 = dtype.is(torch.int32.bind(py))
            || torch.uint32.as_ref().is_some_and(|u| dtype.is(u.bind(py)));
        if !int32 {
            return Err(shape_error(format!("a tensor of {}", dtype.str()?)));
        }
        let shape: Vec<i64> = obj.getattr(intern!(py, "shape"))?.extract()?;
        let strides: Vec<i64> = obj.call_method0(intern!(py, "stride"))?.extract()?;
        let addr: usize = obj.call_method0(intern!(py, "data_ptr"))?.extract()?;
        let view = BitmaskView {
            addr,
            rows: 0,
            row_stride: 0,
            words: 0,
            keep: Keep::Object(obj.clone().unbind()),
        };
        Self::shaped(view, &shape, Some(&strides), true).map(Some)
    }

    fn from_buffer(obj: &Bound<'_, PyAny>) -> PyResult<Option<BitmaskView>> {
        // SAFETY: an all-zero `Py_buffer` is the documented input state.
        let mut raw: Box<RawBuffer> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `obj` is a live object; `raw` is writable.
        if unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *raw, PYBUF_RECORDS) } != 0 {
            PyErr::take(obj.py());
            // A buffer that is only read-only is an error of its own; otherwise try DLPack.
            // SAFETY: as above, without asking for a writable buffer.
            if unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *raw, PYBUF_RECORDS & !0x0001) } == 0
            {
                // SAFETY: filled by the successful call just made.
                unsafe { PyBuffer_Release(&mut *raw) };
                return Err(shape_error("the buffer is read-only".into()));
            }
            PyErr::take(obj.py());
            return Ok(None);
        }
        let format = if raw.format.is_null() {
            "B".to_string()
        } else {
            // SAFETY: a NUL-terminated format string owned by the exporter.
            unsafe { CStr::from_ptr(raw.format) }.to_string_lossy().into_owned()
        };
        let ndim = raw.ndim as usize;
        // SAFETY: `shape` and `strides` hold `ndim` entries (PyBUF_STRIDES).
        let (shape, strides) = unsafe {
            if ndim == 0 || raw.shape.is_null() || raw.strides.is_null() {
                (Vec::new(), Vec::new())
            } else {
                (
                    std::slice::from_raw_parts(raw.shape, ndim).to_vec(),
                    std::slice::from_raw_parts(raw.strides, ndim).to_vec(),
                )
            }
        };
        let int32 = matches!(format.trim_start_matches(['@', '=', '<']), "i" | "I")
            || (matches!(format.trim_start_matches(['@', '=', '<']), "l" | "L")
                && raw.itemsize == 4);
        let addr = raw.buf as usize;
        let itemsize = raw.itemsize;
        let view = BitmaskView { addr, rows: 0, row_stride: 0, words: 0, keep: Keep::Buffer(raw) };
        if !int32 || itemsize != 4 {
            return Err(shape_error(format!("items of format {format:?} and size {itemsize}")));
        }
        Self::shaped(
            view,
            &shape.iter().map(|&s| s as i64).collect::<Vec<_>>(),
            Some(&strides.iter().map(|&s| s as i64 / 4).collect::<Vec<_>>()),
            strides.iter().all(|s| s % 4 == 0),
        )
        .map(Some)
    }

    fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<BitmaskView> {
        if !obj.hasattr("__dlpack__")? {
            return Err(PyTypeError::new_err(format!(
                "bitmask: a {} has neither the buffer protocol nor __dlpack__; pass a numpy \
                 array or a CPU torch tensor of dtype int32",
                obj.get_type().name()?
            )));
        }
        let capsule = obj.call_method0("__dlpack__")?;
        // SAFETY: `capsule` is live; a capsule not named "dltensor" gives NULL and an error.
        let managed =
            unsafe { pyo3::ffi::PyCapsule_GetPointer(capsule.as_ptr(), c"dltensor".as_ptr()) };
        if managed.is_null() {
            PyErr::take(obj.py());
            return Err(shape_error("__dlpack__ did not return a DLPack tensor capsule".into()));
        }
        // SAFETY: a "dltensor" capsule points to a DLManagedTensor, whose first member is
        // the DLTensor; it stays valid while the capsule lives.
        let t = unsafe { &*(managed as *const DlTensor) };
        if t.device_type != 1 {
            return Err(shape_error(
                "the tensor is not on the CPU (fill a CPU bitmask, then move it to the device)"
                    .into(),
            ));
        }
        if t.dtype_code > 1 || t.dtype_bits != 32 || t.dtype_lanes != 1 {
            return Err(shape_error(format!(
                "tensor items of DLPack type code {} and {} bits",
                t.dtype_code, t.dtype_bits
            )));
        }
        let ndim = t.ndim.max(0) as usize;
        // SAFETY: `shape` holds `ndim` entries; `strides` too, or is NULL (row-major).
        let shape = unsafe { std::slice::from_raw_parts(t.shape, ndim) }.to_vec();
        let strides = (!t.strides.is_null())
            .then(|| unsafe { std::slice::from_raw_parts(t.strides, ndim) }.to_vec());
        let addr = t.data as usize + t.byte_offset as usize;
        let view = BitmaskView {
            addr,
            rows: 0,
            row_stride: 0,
            words: 0,
            keep: Keep::Object(capsule.unbind()),
        };
        Self::shaped(view, &shape, strides.as_deref(), true)
    }

    /// Sets rows, row stride and words from a shape and strides in items (`None`:
    /// row-major).
    fn shaped(
        mut view: BitmaskView,
        shape: &[i64],
        strides: Option<&[i64]>,
        aligned: bool,
    ) -> PyResult<BitmaskView> {
        let (rows, words, row_stride, word_stride) = match shape {
            [words] => (1, *words, *words, strides.map_or(1, |s| s[0])),
            [rows, words] => {
                let s = strides.map_or((*words, 1), |s| (s[0], s[1]));
                (*rows, *words, s.0, s.1)
            }
            _ => return Err(shape_error(format!("shape {shape:?}"))),
        };
        if !aligned
            || (words > 1 && word_stride != 1)
            || row_stride < 0
            || (rows > 1 && row_stride < words)
        {
            return Err(shape_error("rows are not contiguous".into()));
        }
        if view.addr % 4 != 0 {
            return Err(shape_error("the data is not aligned to 4 bytes".into()));
        }
        view.rows = rows.max(0) as usize;
        view.words = words.max(0) as usize;
        view.row_stride = row_stride as usize;
        Ok(view)
    }

    /// Row `index`, or an error naming the batch size.
    pub fn row_mut(&mut self, index: usize) -> PyResult<&mut [u32]> {
        if index >= self.rows {
            return Err(PyValueError::new_err(format!(
                "bitmask: row {index} is out of range for a batch of {}",
                self.rows
            )));
        }
        // SAFETY: the exporter holds `rows` rows of `words` items, `row_stride` apart,
        // alive while `keep` lives; `&mut self` makes this the only slice handed out.
        Ok(unsafe {
            std::slice::from_raw_parts_mut(
                (self.addr as *mut u32).add(index * self.row_stride),
                self.words,
            )
        })
    }

    /// Disjoint mutable rows for `indices` (each at most once), in that order.
    pub fn rows_mut(&mut self, indices: &[usize]) -> PyResult<Vec<&mut [u32]>> {
        let mut seen = vec![false; self.rows];
        for &i in indices {
            if i >= self.rows {
                return Err(PyValueError::new_err(format!(
                    "bitmask: row {i} is out of range for a batch of {}",
                    self.rows
                )));
            }
            if std::mem::replace(&mut seen[i], true) {
                return Err(PyValueError::new_err(format!("bitmask: row {i} is given twice")));
            }
        }
        let base = self.addr as *mut u32;
        // SAFETY: as in `row_mut`; the indices are distinct and rows do not overlap
        // (`row_stride >= words` was checked when there is more than one row).
        Ok(indices
            .iter()
            .map(|&i| unsafe {
                std::slice::from_raw_parts_mut(base.add(i * self.row_stride), self.words)
            })
            .collect())
    }
}
