//! The lines of `maskbench --vocab V --details FILE`: one JSON object per (schema,
//! engine) answer, read by the commands that summarize a run.

use serde_json::Value;

/// One answer of a details file.
pub struct Answer {
    /// Its line number, from 1, for error messages.
    pub line: usize,
    /// The MaskBench file's name.
    pub file: String,
    /// The engine that answered.
    pub engine: String,
    /// The whole line.
    pub value: Value,
}

/// The answers of `text`, blank lines skipped; an error names the first line that is
/// not JSON or lacks `file` or `engine`.
pub fn answers(text: &str) -> Result<Vec<Answer>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let (Some(file), Some(engine)) = (value["file"].as_str(), value["engine"].as_str()) else {
            return Err(format!("line {}: no `file` or `engine`", i + 1));
        };
        let (file, engine) = (file.to_string(), engine.to_string());
        out.push(Answer { line: i + 1, file, engine, value });
    }
    Ok(out)
}
