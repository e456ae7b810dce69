//! `grammask.tools_system_prompt` and `grammask.parse_tool_calls`: the system message that
//! describes OpenAI-style tools in a call format's own way, and the calls read back from a
//! model's output, as `grammask generate --tools` does them.

use grammask::syntax::tools::{self, ToolCallFormat};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn format_of(format: &str) -> PyResult<ToolCallFormat> {
    ToolCallFormat::from_name(format).ok_or_else(|| {
        PyValueError::new_err(format!("format={format:?}: expected \"hermes\" or \"llama3\""))
    })
}

/// The system message describing `tools` (JSON text of OpenAI-style tools) for the call
/// format `format` (`"hermes"` or `"llama3"`). Raises `ValueError` for malformed tools,
/// naming the JSON pointer.
#[pyfunction]
#[pyo3(signature = (tools, format="hermes"))]
pub fn tools_system_prompt(tools: &str, format: &str) -> PyResult<String> {
    let value: serde_json::Value =
        serde_json::from_str(tools).map_err(|e| PyValueError::new_err(format!("tools: {e}")))?;
    let parsed =
        tools::parse_tools(&value).map_err(|d| PyValueError::new_err(format!("tools: {d}")))?;
    Ok(tools::tools_system_prompt(&parsed, format_of(format)?))
}

/// The calls in `text` written in `format`, in order, as `(name, arguments JSON text)`
/// pairs; a call that does not parse is left out.
#[pyfunction]
#[pyo3(signature = (text, format="hermes"))]
pub fn parse_tool_calls(text: &str, format: &str) -> PyResult<Vec<(String, String)>> {
    let calls = tools::parse_tool_calls(text, format_of(format)?);
    Ok(calls.into_iter().map(|c| (c.name, c.arguments.to_string())).collect())
}
