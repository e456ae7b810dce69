//! OpenAI-style tools → a structural tag for a model's tool-call format, the system
//! prompt that tells the model about the tools, and the calls read back from its output.
//!
//! Tools are `[{"type": "function", "function": {"name", "description", "parameters"}}]`
//! (the bare `{"name", ...}` objects are read too); `tool_choice` is `auto`, `required`,
//! `none`, or a named function (`{"type": "function", "function": {"name": ...}}` or the
//! name alone). Formats:
//!
//! - [`ToolCallFormat::Hermes`] (Hermes, Qwen 2.5/3, SmolLM2 and other ChatML models):
//!   `<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>`, calls separated by
//!   `\n`.
//! - [`ToolCallFormat::Llama3Json`] (Llama 3.1/3.2 JSON tool calls):
//!   `{"name": "f", "parameters": {...}}`, calls separated by `; `.
//!
//! With `auto`, the model writes free text and a call starts where it writes the call's
//! opening (`<tool_call>`, `{"name": `); with `required` or a named function, the output
//! is the call (or, with `parallel`, calls) and nothing else; `reasoning` puts a
//! `<think>…</think>` block first.

use crate::diagnostic::{Diagnostic, Diagnostics};
use serde_json::{json, Value};

/// How a model writes its tool calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ToolCallFormat {
    /// `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`.
    #[default]
    Hermes,
    /// `{"name": ..., "parameters": ...}`.
    Llama3Json,
}

impl ToolCallFormat {
    /// The format called `name` (`hermes`/`qwen`, `llama3`/`llama3-json`).
    pub fn from_name(name: &str) -> Option<ToolCallFormat> {
        match name {
            "hermes" | "qwen" | "chatml" => Some(ToolCallFormat::Hermes),
            "llama3" | "llama3-json" | "llama-3" => Some(ToolCallFormat::Llama3Json),
            _ => None,
        }
    }

    /// What a call starts with: the trigger of `auto`.
    pub fn trigger(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "<tool_call>",
            ToolCallFormat::Llama3Json => "{\"name\": ",
        }
    }

    fn arguments_key(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "arguments",
            ToolCallFormat::Llama3Json => "parameters",
        }
    }

    fn separator(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "\n",
            ToolCallFormat::Llama3Json => "; ",
        }
    }

    /// The text of one call before its arguments, and after them.
    fn call_parts(self, name: &str) -> (String, String) {
        let name = Value::String(name.to_string()).to_string();
        let key = self.arguments_key();
        match self {
            ToolCallFormat::Hermes => {
                (format!("<tool_call>\n{{\"name\": {name}, \"{key}\": "), "}\n</tool_call>".into())
            }
            ToolCallFormat::Llama3Json => (format!("{{\"name\": {name}, \"{key}\": "), "}".into()),
        }
    }
}

/// Which calls the output holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum ToolChoice {
    /// Free text, with calls where the model writes them.
    #[default]
    Auto,
    /// One call (or several, with `parallel`), nothing else.
    Required,
    /// A call of this function, nothing else.
    Function(String),
    /// No call: free text.
    None,
}

impl ToolChoice {
    /// `auto`, `required`, `none`, a function's name, or OpenAI's
    /// `{"type": "function", "function": {"name": ...}}`.
    pub fn from_value(v: &Value) -> Result<ToolChoice, Diagnostics> {
        match v {
            Value::String(s) => Ok(ToolChoice::from_name(s)),
            Value::Object(_) => match v.pointer("/function/name").and_then(Value::as_str) {
                Some(name) => Ok(ToolChoice::Function(name.to_string())),
                None => Err(Diagnostics::one(Diagnostic::at_pointer(
                    "/function/name",
                    "a named tool choice needs `function.name`",
                ))),
            },
            _ => Err(Diagnostics::one(Diagnostic::at_pointer(
                "/",
                "`tool_choice` must be a string or an object",
            ))),
        }
    }

    /// `auto`, `required`, `none`, or else a function's name.
    pub fn from_name(s: &str) -> ToolChoice {
        match s {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name => ToolChoice::Function(name.to_string()),
        }
    }
}

/// Options of [`tools_structural_tag`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ToolsOptions {
    /// The model's call format.
    pub format: ToolCallFormat,
    /// Which calls.
    pub choice: ToolChoice,
    /// Whether several calls may be made (`required`, a named function: one or more;
    /// `auto`: free text and calls after the first).
    pub parallel: bool,
    /// Whether the output starts with a `<think>…</think>` block.
    pub reasoning: bool,
    /// The token budget of the `<think>` block (`None`: no bound): once spent, the
    /// thinking must end.
    pub max_reasoning_tokens: Option<u32>,
    /// The token budget of the free text before and between calls (`auto`, `none`;
    /// `None`: no bound): once spent, the model must call a tool or end.
    pub max_text_tokens: Option<u32>,
}

/// One function a model may call.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// The function's name.
    pub name: String,
    /// What it does, for the prompt.
    pub description: String,
    /// A JSON Schema of its arguments (an object schema).
    pub parameters: Value,
}

/// A call read back from a model's output.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The function called.
    pub name: String,
    /// Its arguments (a JSON object).
    pub arguments: Value,
}

fn at(ptr: String, message: impl Into<String>) -> Diagnostics {
    Diagnostics::one(Diagnostic::at_pointer(ptr, message))
}

/// Reads a list of tools (or `{"tools": [...]}`); every error carries its JSON pointer.
pub fn parse_tools(v: &Value) -> Result<Vec<Tool>, Diagnostics> {
    let (list, base) = match v {
        Value::Array(list) => (list, String::new()),
        Value::Object(o) if o.contains_key("tools") => match &o["tools"] {
            Value::Array(list) => (list, "/tools".to_string()),
            _ => return Err(at("/tools".into(), "`tools` must be an array")),
        },
        _ => {
            return Err(at(
                "/".into(),
                "tools must be an array of {\"type\": \"function\", \"function\": ...}",
            ))
        }
    };
    let mut tools: Vec<Tool> = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        let ptr = format!("{base}/{i}");
        let (f, fptr) = match t.get("type") {
            Some(Value::String(k)) if k == "function" => match t.get("function") {
                Some(f @ Value::Object(_)) => (f, format!("{ptr}/function")),
                _ => {
                    return Err(at(
                        format!("{ptr}/function"),
                        "a function tool needs a `function` object",
                    ))
                }
            },
            Some(other) => {
                return Err(at(
                    format!("{ptr}/type"),
                    format!("tool type {other} is not supported (only \"function\")"),
                ))
            }
            None if t.get("name").is_some() => (t, ptr.clone()),
            None => {
                return Err(at(ptr, "a tool must be {\"type\": \"function\", \"function\": {...}}"))
            }
        };
        let name = match f.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            _ => return Err(at(format!("{fptr}/name"), "a function needs a non-empty `name`")),
        };
        if tools.iter().any(|t| t.name == name) {
            return Err(at(format!("{fptr}/name"), format!("two tools are named `{name}`")));
        }
        let description = match f.get("description") {
            None => String::new(),
            Some(Value::String(d)) => d.clone(),
            Some(_) => {
                return Err(at(format!("{fptr}/description"), "`description` must be a string"))
            }
        };
        let parameters = match f.get("parameters") {
            None => json!({"type": "object", "properties": {}}),
            Some(p @ (Value::Object(_) | Value::Bool(_))) => p.clone(),
            Some(_) => {
                return Err(at(format!("{fptr}/parameters"), "`parameters` must be a JSON Schema"))
            }
        };
        tools.push(Tool { name, description, parameters });
    }
    Ok(tools)
}

/// The structural tag (with its `{"type": "structural_tag"}` wrapper) of the calls
/// `opts` asks for.
pub fn tools_structural_tag(tools: &[Tool], opts: &ToolsOptions) -> Result<Value, Diagnostics> {
    let chosen: Vec<&Tool> = match &opts.choice {
        ToolChoice::Function(name) => match tools.iter().find(|t| &t.name == name) {
            Some(t) => vec![t],
            None => {
                return Err(at(
                    "/".into(),
                    format!("tool_choice names `{name}`, which is not among the tools"),
                ))
            }
        },
        _ => tools.iter().collect(),
    };
    if chosen.is_empty() && opts.choice != ToolChoice::None {
        return Err(at("/".into(), "no tools are given"));
    }
    let format = opts.format;
    let tags: Vec<Value> = chosen
        .iter()
        .map(|t| {
            let (begin, end) = format.call_parts(&t.name);
            json!({
                "type": "tag",
                "begin": begin,
                "content": {"type": "json_schema", "json_schema": t.parameters},
                "end": end,
            })
        })
        .collect();
    let calls = match opts.choice {
        ToolChoice::None => json!({"type": "any_text", "max_tokens": opts.max_text_tokens}),
        ToolChoice::Auto => json!({
            "type": "triggered_tags",
            "triggers": [format.trigger()],
            "tags": tags,
            "at_least_one": false,
            "stop_after_first": !opts.parallel,
        }),
        ToolChoice::Required | ToolChoice::Function(_) => json!({
            "type": "tags_with_separator",
            "tags": tags,
            "separator": format.separator(),
            "at_least_one": true,
            "stop_after_first": !opts.parallel,
        }),
    };
    let format_value = if opts.reasoning {
        // Blank lines after the thinking belong to its end, so that a call can follow
        // at once.
        json!({"type": "sequence", "elements": [
            {"type": "tag", "begin": "<think>",
             "content": {"type": "any_text", "max_tokens": opts.max_reasoning_tokens},
             "end": ["</think>\n\n", "</think>\n", "</think>"]},
            calls,
        ]})
    } else {
        calls
    };
    Ok(json!({"type": "structural_tag", "format": format_value}))
}

/// The options the tag of `opts` is converted with: no properties beyond those a
/// function lists (`strict`, as providers' strict function calling), the converter's
/// default whitespace, and the budget of the text around calls.
pub fn structural_tag_options(opts: &ToolsOptions) -> crate::StructuralTagOptions {
    let json = crate::JsonSchemaOptions { strict: true, ..Default::default() };
    crate::StructuralTagOptions { json, max_free_text_tokens: opts.max_text_tokens }
}

/// The system message that describes the tools in the format's own way.
pub fn tools_system_prompt(tools: &[Tool], format: ToolCallFormat) -> String {
    let listed: Vec<String> = tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters,
            }})
            .to_string()
        })
        .collect();
    match format {
        ToolCallFormat::Hermes => format!(
            "You can call functions to answer the user. The functions are described inside \
             <tools></tools>:\n<tools>\n{}\n</tools>\n\nTo call a function, write a JSON object \
             with its name and arguments inside <tool_call></tool_call>:\n<tool_call>\n\
             {{\"name\": <function-name>, \"arguments\": <arguments-object>}}\n</tool_call>",
            listed.join("\n")
        ),
        ToolCallFormat::Llama3Json => format!(
            "You can call functions to answer the user. To call one, answer with only a JSON \
             object of the form {{\"name\": function name, \"parameters\": object of argument \
             names and values}}. The functions:\n\n{}",
            listed.join("\n\n")
        ),
    }
}

/// The calls in a model's output, in order; a call that does not parse is left out.
pub fn parse_tool_calls(text: &str, format: ToolCallFormat) -> Vec<ToolCall> {
    let key = format.arguments_key();
    let mut calls = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(format.trigger()) {
        let from = match format {
            ToolCallFormat::Hermes => start + format.trigger().len(),
            ToolCallFormat::Llama3Json => start,
        };
        let mut stream = serde_json::Deserializer::from_str(
            rest[from..].trim_start_matches(char::is_whitespace),
        )
        .into_iter::<Value>();
        let skipped =
            rest[from..].len() - rest[from..].trim_start_matches(char::is_whitespace).len();
        match stream.next() {
            Some(Ok(v)) => {
                let consumed = from + skipped + stream.byte_offset();
                if let (Some(Value::String(name)), Some(args)) = (v.get("name"), v.get(key)) {
                    calls.push(ToolCall { name: name.clone(), arguments: args.clone() });
                }
                rest = &rest[consumed..];
            }
            _ => rest = &rest[start + format.trigger().len()..],
        }
    }
    calls
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> Vec<Tool> {
        parse_tools(&json!([{"type": "function", "function": {
            "name": "get_weather", "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }}]))
        .unwrap()
    }

    #[test]
    fn calls_are_read_back() {
        let text = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"x\", \"arguments\": {}}\n</tool_call>";
        let calls = parse_tool_calls(text, ToolCallFormat::Hermes);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].arguments, json!({"city": "Oslo"}));
        let calls = parse_tool_calls(
            "{\"name\": \"f\", \"parameters\": {\"a\": 1}}; {\"name\": \"g\", \"parameters\": {}}",
            ToolCallFormat::Llama3Json,
        );
        assert_eq!(calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["f", "g"]);
    }

    #[test]
    fn bad_tools_are_refused_with_their_pointer() {
        let err =
            parse_tools(&json!([{"type": "function", "function": {"name": ""}}])).unwrap_err();
        assert_eq!(err.0[0].pointer.as_deref(), Some("/0/function/name"));
        let opts =
            ToolsOptions { choice: ToolChoice::Function("nope".into()), ..ToolsOptions::default() };
        assert!(tools_structural_tag(&weather(), &opts).is_err());
    }
}
