//! Rust errors as the package's exception classes (defined in `grammask/_errors.py`):
//! `GrammarError` with line, column and the rendered caret, `SchemaUnsupported` with the
//! keyword and JSON pointer, `LimitExceeded` with the limit's name.

use grammask::syntax::diagnostic::{Category, LineCol};
use grammask::{CompileError, Diagnostics, MatchError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};
use pyo3::IntoPyObjectExt;

/// Where a grammar came from, for the rendered diagnostics.
pub struct Source<'a> {
    /// The name diagnostics print before `:line:col` (`<gbnf>`, `<schema>`).
    pub name: &'a str,
    /// The text the spans point into (empty for sources that are not text).
    pub text: &'a str,
}

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// An instance of `grammask._errors.<class>` made with `message` and `attrs`.
fn raise(py: Python<'_>, class: &str, message: String, attrs: &[(&str, Py<PyAny>)]) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let module =
            ERRORS.get_or_try_init(py, || py.import("grammask._errors").map(|m| m.unbind()))?;
        let kwargs = PyDict::new(py);
        for (k, v) in attrs {
            kwargs.set_item(k, v)?;
        }
        let exc = module.bind(py).getattr(class)?.call((message,), Some(&kwargs))?;
        Ok(PyErr::from_value(exc))
    })();
    made.unwrap_or_else(|e| e)
}

fn opt<T: for<'py> IntoPyObject<'py>>(py: Python<'_>, v: Option<T>) -> Py<PyAny> {
    match v {
        Some(v) => v.into_py_any(py).unwrap_or_else(|_| py.None()),
        None => py.None(),
    }
}

fn obj<T: for<'py> IntoPyObject<'py>>(py: Python<'_>, v: T) -> Py<PyAny> {
    opt(py, Some(v))
}

/// The exception for a failed compilation.
pub fn compile_error(py: Python<'_>, err: CompileError, source: &Source<'_>) -> PyErr {
    match err {
        CompileError::Grammar(diags) => diagnostics_error(py, &diags, source),
        CompileError::Limit { name, message } => limit_error(py, name, message),
        CompileError::Unsupported(message) => raise(
            py,
            "GrammarError",
            format!("unsupported: {message}"),
            &[("unsupported", obj(py, true))],
        ),
        other => raise(py, "GrammarError", other.to_string(), &[]),
    }
}

/// `LimitExceeded` for the limit `name`.
pub fn limit_error(py: Python<'_>, name: &str, message: String) -> PyErr {
    raise(py, "LimitExceeded", format!("limit: {name}: {message}"), &[("limit", obj(py, name))])
}

/// The exception for a grammar's or schema's diagnostics: the first error decides the
/// class (`LimitExceeded`, `SchemaUnsupported` for an unsupported schema keyword,
/// otherwise `GrammarError`); the message renders every error.
fn diagnostics_error(py: Python<'_>, diags: &Diagnostics, source: &Source<'_>) -> PyErr {
    let rendered =
        diags.errors().map(|d| d.render(source.name, source.text)).collect::<Vec<_>>().join("\n");
    let Some(first) = diags.errors().next() else {
        return raise(py, "GrammarError", "error: the grammar was refused".into(), &[]);
    };
    if let Category::Limit(name) = first.category {
        return limit_error(py, name, first.message.clone());
    }
    let (line, column) = match first.span {
        Some(span) => {
            let at = LineCol::of(source.text, span.start);
            (Some(at.line), Some(at.column))
        }
        None => (None, None),
    };
    let pointer = first.pointer.clone();
    let unsupported = first.category == Category::Unsupported;
    if unsupported && first.span.is_none() {
        if let Some(pointer) = &pointer {
            let keyword = keyword_of(pointer);
            return raise(
                py,
                "SchemaUnsupported",
                rendered,
                &[
                    ("keyword", opt(py, keyword)),
                    ("pointer", obj(py, pointer.as_str())),
                    ("detail", obj(py, first.message.as_str())),
                ],
            );
        }
    }
    raise(
        py,
        "GrammarError",
        rendered.clone(),
        &[
            ("line", opt(py, line)),
            ("column", opt(py, column)),
            ("pointer", opt(py, pointer)),
            ("rendered", obj(py, rendered)),
            ("detail", obj(py, first.message.as_str())),
            ("unsupported", obj(py, unsupported)),
        ],
    )
}

/// The keyword a JSON pointer ends at (`/properties/a/patternProperties` →
/// `patternProperties`), unescaped; `None` for the whole document.
fn keyword_of(pointer: &str) -> Option<String> {
    let last = pointer.rsplit('/').next().filter(|s| !s.is_empty() && pointer.contains('/'))?;
    Some(last.replace("~1", "/").replace("~0", "~"))
}

/// The exception for a matcher call that is an error rather than a refusal.
pub fn match_error(py: Python<'_>, err: MatchError) -> PyErr {
    match err {
        MatchError::Limit { name, message } => limit_error(py, name, message),
        other => PyValueError::new_err(other.to_string()),
    }
}

/// A loader's error (tokenizer files, GGUF, tiktoken) as `ValueError` or `OSError`.
pub fn vocab_error(err: grammask::tokenset::VocabError) -> PyErr {
    use grammask::tokenset::VocabError;
    match err {
        VocabError::Io { .. } => pyo3::exceptions::PyOSError::new_err(err.to_string()),
        other => PyValueError::new_err(other.to_string()),
    }
}
