//! The Python extension module `grammask._grammask`: vocabularies, the compiler, compiled
//! grammars and matchers over grammask's Rust API. The package `grammask` (python/grammask)
//! re-exports it with the numpy/torch helpers and the integrations.

mod bitmask;
mod compiler;
mod errors;
mod fields;
mod matcher;
mod tools;
mod vocab;

use pyo3::prelude::*;

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[pymodule]
fn _grammask(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<vocab::Vocabulary>()?;
    m.add_class::<compiler::Compiler>()?;
    m.add_class::<compiler::CompiledGrammar>()?;
    m.add_class::<matcher::Matcher>()?;
    m.add_class::<fields::FieldRecorder>()?;
    m.add_function(wrap_pyfunction!(matcher::fill_next_token_bitmasks, m)?)?;
    m.add_function(wrap_pyfunction!(tools::tools_system_prompt, m)?)?;
    m.add_function(wrap_pyfunction!(tools::parse_tool_calls, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
