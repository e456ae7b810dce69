//! Structural tags (XGrammar's JSON format) → IR: tool calls, reasoning and other output
//! that mixes free text with constrained parts.
//!
//! A structural tag is `{"type": "structural_tag", "format": FORMAT}` (the wrapper may be
//! left out), where a format is one of: `const_string`, `json_schema`, `grammar` (EBNF),
//! `regex`, `any_text`, `sequence`, `or`, `optional`, `star`, `plus`, `repeat`, `tag`,
//! `triggered_tags`, `tags_with_separator`, `dispatch`, and the token-level `token`,
//! `exclude_token`, `any_tokens`, `token_triggered_tags`. The legacy form
//! `{"type": "structural_tag", "structures": [{"begin", "schema", "end"}], "triggers"}`
//! (the `type` may be left out, as vLLM passes it) is read as `triggered_tags`.
//!
//! Free text (`any_text`, the text around triggered tags and dispatched patterns) ends
//! at the first occurrence of the string that follows it: the enclosing tag's `end`,
//! the next element of a `sequence` when that starts with a fixed string, or a trigger.
//! It is [`FreeText`] in the IR, so `<tool_call>` written in free text always starts a
//! tag, and `</think>` always ends the thinking. With `at_least_one`, the output starts
//! with a tag; after a trigger, only the tags whose `begin` starts with it may follow.
//!
//! Every field is checked: an unknown `type` or field, a wrong value type, or an option
//! grammask does not implement is refused with its JSON pointer.

use crate::diagnostic::{Category, Diagnostic, Diagnostics};
use crate::ir::{Expr, FreeText, Grammar, GrammarBuilder, TokenSet};
use crate::json_schema::{json_schema_to_grammar, JsonSchemaOptions, PropertyOrder, Whitespace};
use crate::parse::parse_ebnf;
use crate::regex::{regex_to_ir, RegexOptions};
use serde_json::{Map, Value};

/// Options of [`structural_tag_to_grammar`].
#[derive(Clone, Debug)]
pub struct StructuralTagOptions {
    /// How the `json_schema` parts are converted (each part's `any_order` applies on top).
    /// The default is XGrammar's for structural tags: any run of whitespace between JSON
    /// tokens, and no properties beyond those a schema lists (`strict`).
    pub json: JsonSchemaOptions,
    /// The token budget of free text that sets none (an `any_text` without `max_tokens`,
    /// the text around triggered tags and dispatched patterns) and that a string or the
    /// end of the output ends; default `None`, no bound (XGrammar's default).
    pub max_free_text_tokens: Option<u32>,
}

impl Default for StructuralTagOptions {
    fn default() -> Self {
        let json = JsonSchemaOptions {
            whitespace: Whitespace::Any,
            strict: true,
            ..JsonSchemaOptions::default()
        };
        StructuralTagOptions { json, max_free_text_tokens: None }
    }
}

/// Converts a structural tag into a grammar whose root matches the whole output.
/// `token_id` resolves a token given by its text (`"token": "<tool_call>"`) to its id,
/// `None` when the vocabulary has no such token.
pub fn structural_tag_to_grammar(
    tag: &Value,
    opts: &StructuralTagOptions,
    token_id: &dyn Fn(&str) -> Option<u32>,
) -> Result<Grammar, Diagnostics> {
    let mut c = Converter { builder: GrammarBuilder::new(), opts, token_id, parts: 0 };
    let expr = match tag.get("type").and_then(Value::as_str) {
        _ if tag.get("structures").is_some() => {
            let format = legacy_format(tag)?;
            c.format(&format, "", &Follow::End)?.expr
        }
        Some("structural_tag") => {
            let obj = object(tag, "")?;
            allow_fields(obj, "", &["type", "format"])?;
            c.format(field(obj, "", "format")?, "/format", &Follow::End)?.expr
        }
        _ => c.format(tag, "", &Follow::End)?.expr,
    };
    let root = c.builder.declare(&c.builder.fresh_name("root"));
    c.builder.define(root, expr);
    c.builder.finish(root).map_err(|e| {
        Diagnostics::one(Diagnostic::global(format!("internal: rule `{}` is undefined", e.0)))
    })
}

/// Parses `text` as JSON and converts it with [`structural_tag_to_grammar`].
pub fn parse_structural_tag(
    text: &str,
    opts: &StructuralTagOptions,
    token_id: &dyn Fn(&str) -> Option<u32>,
) -> Result<Grammar, Diagnostics> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Diagnostics::one(Diagnostic::global(format!("the structural tag is not valid JSON: {e}")))
    })?;
    structural_tag_to_grammar(&value, opts, token_id)
}

/// What comes right after a format: the end of the output, one of a few fixed strings,
/// or something else.
#[derive(Clone, Debug)]
enum Follow {
    End,
    Strings(Vec<String>),
    Other,
}

/// A converted format; `absorbed`: the expression already reads the string that
/// follows it (one of [`Follow::Strings`]), as free text does to find its end.
struct Part {
    expr: Expr,
    absorbed: bool,
}

impl Part {
    fn plain(expr: Expr) -> Part {
        Part { expr, absorbed: false }
    }
}

struct Converter<'a> {
    builder: GrammarBuilder,
    opts: &'a StructuralTagOptions,
    token_id: &'a dyn Fn(&str) -> Option<u32>,
    /// Embedded grammars so far (for their rules' names).
    parts: usize,
}

fn error(ptr: &str, message: impl Into<String>) -> Diagnostics {
    Diagnostics::one(Diagnostic::at_pointer(pointer(ptr), message))
}

fn unsupported(ptr: &str, message: impl Into<String>) -> Diagnostics {
    Diagnostics::one(
        Diagnostic::at_pointer(pointer(ptr), message).with_category(Category::Unsupported),
    )
}

/// The root pointer is the empty string; diagnostics print it as `/`.
fn pointer(ptr: &str) -> String {
    if ptr.is_empty() {
        "/".to_string()
    } else {
        ptr.to_string()
    }
}

fn object<'v>(v: &'v Value, ptr: &str) -> Result<&'v Map<String, Value>, Diagnostics> {
    v.as_object().ok_or_else(|| error(ptr, "a format must be a JSON object"))
}

fn field<'v>(obj: &'v Map<String, Value>, ptr: &str, name: &str) -> Result<&'v Value, Diagnostics> {
    obj.get(name).ok_or_else(|| error(ptr, format!("missing field `{name}`")))
}

fn allow_fields(obj: &Map<String, Value>, ptr: &str, allowed: &[&str]) -> Result<(), Diagnostics> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(error(&format!("{ptr}/{}", escape(k)), format!("unknown field `{k}`"))),
        None => Ok(()),
    }
}

/// A key as a JSON pointer token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn string<'v>(obj: &'v Map<String, Value>, ptr: &str, name: &str) -> Result<&'v str, Diagnostics> {
    field(obj, ptr, name)?
        .as_str()
        .ok_or_else(|| error(&format!("{ptr}/{name}"), format!("`{name}` must be a string")))
}

fn boolean(obj: &Map<String, Value>, ptr: &str, name: &str) -> Result<bool, Diagnostics> {
    match obj.get(name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(error(&format!("{ptr}/{name}"), format!("`{name}` must be a boolean"))),
    }
}

fn array<'v>(
    obj: &'v Map<String, Value>,
    ptr: &str,
    name: &str,
) -> Result<&'v [Value], Diagnostics> {
    field(obj, ptr, name)?
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| error(&format!("{ptr}/{name}"), format!("`{name}` must be an array")))
}

/// A list of non-empty strings (absent: empty).
fn strings(obj: &Map<String, Value>, ptr: &str, name: &str) -> Result<Vec<String>, Diagnostics> {
    let Some(v) = obj.get(name) else { return Ok(Vec::new()) };
    let list = v
        .as_array()
        .ok_or_else(|| error(&format!("{ptr}/{name}"), format!("`{name}` must be an array")))?;
    list.iter()
        .enumerate()
        .map(|(i, s)| match s.as_str() {
            Some(s) if !s.is_empty() => Ok(s.to_string()),
            _ => Err(error(&format!("{ptr}/{name}/{i}"), "must be a non-empty string")),
        })
        .collect()
}

/// Refuses an option grammask does not implement when it is set (null counts as unset).
fn unsupported_if_set(obj: &Map<String, Value>, ptr: &str, name: &str) -> Result<(), Diagnostics> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(unsupported(&format!("{ptr}/{name}"), format!("`{name}` is not supported"))),
    }
}

/// `Seq(expr, one of strings)`.
fn then_one_of(expr: Expr, strings: &[String]) -> Expr {
    let ends = strings.iter().map(|s| Expr::literal(s)).collect();
    Expr::seq(vec![expr, Expr::choice(ends)])
}

/// Alternatives, some of which may have absorbed the follow string: those that did not
/// read it after themselves, so that all of them do.
fn alternatives(parts: Vec<Part>, follow: &Follow) -> Part {
    let absorbed = parts.iter().any(|p| p.absorbed);
    let exprs = parts
        .into_iter()
        .map(|p| match follow {
            Follow::Strings(ends) if absorbed && !p.absorbed => then_one_of(p.expr, ends),
            _ => p.expr,
        })
        .collect();
    Part { expr: Expr::choice(exprs), absorbed }
}

impl Converter<'_> {
    /// Converts the format `v` at `ptr`, followed by `follow`.
    fn format(&mut self, v: &Value, ptr: &str, follow: &Follow) -> Result<Part, Diagnostics> {
        let obj = object(v, ptr)?;
        let kind = string(obj, ptr, "type")?;
        let sub = |name: &str| format!("{ptr}/{name}");
        Ok(match kind {
            "const_string" => {
                allow_fields(obj, ptr, &["type", "value"])?;
                let value = string(obj, ptr, "value")?;
                Part::plain(Expr::literal(value))
            }
            "json_schema" => {
                allow_fields(
                    obj,
                    ptr,
                    &[
                        "type",
                        "json_schema",
                        "style",
                        "any_order",
                        "max_whitespace_cnt",
                        "excludes",
                    ],
                )?;
                if let Some(style) = obj.get("style") {
                    if style.as_str() != Some("json") {
                        return Err(unsupported(
                            &sub("style"),
                            format!("style {style} is not supported (only \"json\")"),
                        ));
                    }
                }
                if !strings(obj, ptr, "excludes")?.is_empty() {
                    return Err(unsupported(
                        &sub("excludes"),
                        "`excludes` in JSON is not supported",
                    ));
                }
                unsupported_if_set(obj, ptr, "max_whitespace_cnt")?;
                let mut opts = self.opts.json.clone();
                if boolean(obj, ptr, "any_order")? {
                    opts.property_order = PropertyOrder::Any;
                }
                let schema = field(obj, ptr, "json_schema")?;
                let converted = json_schema_to_grammar(schema, &opts).map_err(|d| {
                    Diagnostics(
                        d.0.into_iter()
                            .map(|mut d| {
                                let inner = d.pointer.take().unwrap_or_default();
                                d.pointer = Some(format!(
                                    "{ptr}/json_schema{}",
                                    inner.trim_end_matches('/')
                                ));
                                d
                            })
                            .collect(),
                    )
                })?;
                Part::plain(Expr::Rule(self.embed(&converted.grammar, "json")))
            }
            "grammar" => {
                allow_fields(obj, ptr, &["type", "grammar", "syntax"])?;
                if let Some(syntax) = obj.get("syntax") {
                    if syntax.as_str() != Some("ebnf") {
                        return Err(unsupported(
                            &sub("syntax"),
                            format!("syntax {syntax} is not supported (only \"ebnf\")"),
                        ));
                    }
                }
                let text = string(obj, ptr, "grammar")?;
                let parsed = parse_ebnf(text).map_err(|d| {
                    error(
                        &sub("grammar"),
                        format!("the grammar is not valid:\n{}", d.render("grammar", text)),
                    )
                })?;
                Part::plain(Expr::Rule(self.embed(&parsed.grammar, "grammar")))
            }
            "regex" => {
                allow_fields(obj, ptr, &["type", "pattern"])?;
                let pattern = string(obj, ptr, "pattern")?;
                let expr = regex_to_ir(pattern, &mut self.builder, RegexOptions::default())
                    .map_err(|d| error(&sub("pattern"), d.message))?;
                Part::plain(expr)
            }
            "any_text" => {
                allow_fields(obj, ptr, &["type", "excludes", "max_tokens", "max_chars"])?;
                unsupported_if_set(obj, ptr, "max_chars")?;
                let excludes = strings(obj, ptr, "excludes")?;
                let own = self.max_tokens(obj, ptr)?;
                if own.is_some() && matches!(follow, Follow::Other) {
                    return Err(unsupported(
                        &sub("max_tokens"),
                        "`max_tokens` needs free text that a string (a tag's end) or the end of the output ends",
                    ));
                }
                free_text(Vec::new(), excludes, follow, own.or(self.opts.max_free_text_tokens))
            }
            "sequence" => {
                allow_fields(obj, ptr, &["type", "elements"])?;
                let elements = array(obj, ptr, "elements")?;
                self.sequence(elements, &sub("elements"), follow)?
            }
            "or" => {
                allow_fields(obj, ptr, &["type", "elements"])?;
                let elements = array(obj, ptr, "elements")?;
                if elements.is_empty() {
                    return Err(error(&sub("elements"), "`or` needs at least one element"));
                }
                let parts = elements
                    .iter()
                    .enumerate()
                    .map(|(i, e)| self.format(e, &format!("{ptr}/elements/{i}"), follow))
                    .collect::<Result<Vec<_>, _>>()?;
                alternatives(parts, follow)
            }
            "optional" | "star" | "plus" => {
                allow_fields(obj, ptr, &["type", "content"])?;
                let content = field(obj, ptr, "content")?;
                if kind == "optional" {
                    let part = self.format(content, &sub("content"), follow)?;
                    alternatives(vec![part, Part::plain(Expr::Empty)], follow)
                } else {
                    let inner = self.format(content, &sub("content"), &Follow::Other)?.expr;
                    let min = u32::from(kind == "plus");
                    Part::plain(Expr::repeat(inner, min, None))
                }
            }
            "repeat" => {
                allow_fields(obj, ptr, &["type", "content", "min", "max"])?;
                let count = |name: &str| {
                    field(obj, ptr, name)?
                        .as_i64()
                        .ok_or_else(|| error(&sub(name), format!("`{name}` must be an integer")))
                };
                let (min, max) = (count("min")?, count("max")?);
                let min = u32::try_from(min)
                    .map_err(|_| error(&sub("min"), "`min` must be between 0 and 2^32-1"))?;
                let max = match max {
                    -1 => None,
                    m => Some(u32::try_from(m).ok().filter(|&m| m >= min).ok_or_else(|| {
                        error(&sub("max"), "`max` must be -1 (unbounded) or at least `min`")
                    })?),
                };
                let content = field(obj, ptr, "content")?;
                let inner = self.format(content, &sub("content"), &Follow::Other)?.expr;
                Part::plain(Expr::repeat(inner, min, max))
            }
            "tag" => {
                allow_fields(obj, ptr, &["type", "begin", "content", "end"])?;
                Part::plain(self.tag(obj, ptr)?)
            }
            "triggered_tags" => {
                allow_fields(
                    obj,
                    ptr,
                    &["type", "triggers", "tags", "at_least_one", "stop_after_first", "excludes"],
                )?;
                self.triggered_tags(obj, ptr, follow)?
            }
            "tags_with_separator" => {
                allow_fields(
                    obj,
                    ptr,
                    &["type", "tags", "separator", "at_least_one", "stop_after_first"],
                )?;
                let separator = string(obj, ptr, "separator")?;
                let tags = self.tags(obj, ptr)?;
                let any = Expr::choice(tags.into_iter().map(|(_, _, e)| e).collect());
                let at_least_one = boolean(obj, ptr, "at_least_one")?;
                let list = if boolean(obj, ptr, "stop_after_first")? {
                    any
                } else {
                    let next = Expr::seq(vec![Expr::literal(separator), any.clone()]);
                    Expr::seq(vec![any, Expr::star(next)])
                };
                Part::plain(if at_least_one { list } else { Expr::optional(list) })
            }
            "dispatch" => {
                allow_fields(obj, ptr, &["type", "rules", "loop", "excludes"])?;
                self.dispatch(obj, ptr, follow)?
            }
            "token" => {
                allow_fields(obj, ptr, &["type", "token"])?;
                let id = self.token(field(obj, ptr, "token")?, &sub("token"))?;
                Part::plain(Expr::Tokens(TokenSet { negated: false, ids: vec![id].into() }))
            }
            "exclude_token" | "any_tokens" => {
                let allowed: &[&str] = if kind == "any_tokens" {
                    &["type", "exclude_tokens", "max_tokens"]
                } else {
                    &["type", "exclude_tokens"]
                };
                allow_fields(obj, ptr, allowed)?;
                let set = Expr::Tokens(self.token_set(obj, ptr, "exclude_tokens", true)?);
                Part::plain(match (kind, self.max_tokens(obj, ptr)?) {
                    ("any_tokens", Some(max)) => Expr::repeat(set, 0, Some(max)),
                    ("any_tokens", None) => Expr::star(set),
                    _ => set,
                })
            }
            "token_triggered_tags" => {
                allow_fields(
                    obj,
                    ptr,
                    &[
                        "type",
                        "trigger_tokens",
                        "tags",
                        "exclude_tokens",
                        "at_least_one",
                        "stop_after_first",
                    ],
                )?;
                self.token_triggered_tags(obj, ptr)?
            }
            "qwen_xml_parameter" | "token_dispatch" => {
                return Err(unsupported(&sub("type"), format!("format `{kind}` is not supported")))
            }
            other => return Err(error(&sub("type"), format!("unknown format type `{other}`"))),
        })
    }

    /// A format's `max_tokens` (absent or null: none).
    fn max_tokens(&self, obj: &Map<String, Value>, ptr: &str) -> Result<Option<u32>, Diagnostics> {
        match obj.get("max_tokens") {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().and_then(|n| u32::try_from(n).ok()).map(Some).ok_or_else(|| {
                error(
                    &format!("{ptr}/max_tokens"),
                    "`max_tokens` must be an integer from 0 to 2^32-1",
                )
            }),
        }
    }

    /// Embeds a converted grammar; returns its root's copy.
    fn embed(&mut self, grammar: &Grammar, prefix: &str) -> crate::ir::RuleId {
        self.parts += 1;
        let prefix = format!("{prefix}{}", self.parts);
        self.builder.embed(grammar, &prefix)
    }

    /// A sequence: only its last element is followed by what follows the sequence; the
    /// others by something else (free text inside a sequence does not stop at the next
    /// element's string, as in XGrammar).
    fn sequence(
        &mut self,
        elements: &[Value],
        ptr: &str,
        follow: &Follow,
    ) -> Result<Part, Diagnostics> {
        if elements.is_empty() {
            return Err(error(ptr, "a sequence needs at least one element"));
        }
        let mut items = Vec::with_capacity(elements.len());
        let mut absorbed = false;
        for (i, element) in elements.iter().enumerate() {
            let last = i + 1 == elements.len();
            let after = if last { follow.clone() } else { Follow::Other };
            let part = self.format(element, &format!("{ptr}/{i}"), &after)?;
            items.push(part.expr);
            absorbed = part.absorbed;
        }
        Ok(Part { expr: Expr::seq(items), absorbed })
    }

    /// A tag: `begin`, the content (whose free text ends at `end`), `end`.
    fn tag(&mut self, obj: &Map<String, Value>, ptr: &str) -> Result<Expr, Diagnostics> {
        let begin = match field(obj, ptr, "begin")? {
            Value::String(s) => Expr::literal(s),
            other => self.token_format(other, &format!("{ptr}/begin"))?,
        };
        let end_ptr = format!("{ptr}/end");
        let (follow, end) = match field(obj, ptr, "end")? {
            Value::String(s) if s.is_empty() => (Follow::Other, Expr::Empty),
            Value::String(s) => (Follow::Strings(vec![s.clone()]), Expr::literal(s)),
            Value::Array(list) => {
                let ends = list
                    .iter()
                    .enumerate()
                    .map(|(i, e)| match e.as_str() {
                        Some(s) if !s.is_empty() => Ok(s.to_string()),
                        _ => Err(error(
                            &format!("{end_ptr}/{i}"),
                            "an end must be a non-empty string",
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if ends.is_empty() {
                    return Err(error(&end_ptr, "`end` lists no string"));
                }
                let expr = Expr::choice(ends.iter().map(|s| Expr::literal(s)).collect());
                (Follow::Strings(ends), expr)
            }
            other => (Follow::Other, self.token_format(other, &end_ptr)?),
        };
        let content =
            self.format(field(obj, ptr, "content")?, &format!("{ptr}/content"), &follow)?;
        Ok(if content.absorbed {
            Expr::seq(vec![begin, content.expr])
        } else {
            Expr::seq(vec![begin, content.expr, end])
        })
    }

    /// A token given as `{"type": "token", "token": ...}` (a tag's `begin` or `end`).
    fn token_format(&mut self, v: &Value, ptr: &str) -> Result<Expr, Diagnostics> {
        let obj = object(v, ptr)?;
        if obj.get("type").and_then(Value::as_str) != Some("token") {
            return Err(error(ptr, "must be a string or a `token` format"));
        }
        allow_fields(obj, ptr, &["type", "token"])?;
        let id = self.token(field(obj, ptr, "token")?, &format!("{ptr}/token"))?;
        Ok(Expr::Tokens(TokenSet { negated: false, ids: vec![id].into() }))
    }

    /// A token id, given as a number or by the token's text.
    fn token(&self, v: &Value, ptr: &str) -> Result<u32, Diagnostics> {
        match v {
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| error(ptr, "a token id must be a non-negative 32-bit integer")),
            Value::String(s) => (self.token_id)(s)
                .ok_or_else(|| error(ptr, format!("the vocabulary has no token `{s}`"))),
            _ => Err(error(ptr, "a token must be an id or a token's text")),
        }
    }

    /// The tokens listed under `name` as a set (`negated`: every other token).
    fn token_set(
        &self,
        obj: &Map<String, Value>,
        ptr: &str,
        name: &str,
        negated: bool,
    ) -> Result<TokenSet, Diagnostics> {
        let mut ids = match obj.get(name) {
            None => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .enumerate()
                .map(|(i, t)| self.token(t, &format!("{ptr}/{name}/{i}")))
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => {
                return Err(error(&format!("{ptr}/{name}"), format!("`{name}` must be an array")))
            }
        };
        ids.sort_unstable();
        ids.dedup();
        Ok(TokenSet { negated, ids: ids.into() })
    }

    /// The `tags` of a format (none is an error; `type` may be left out): each tag's
    /// pointer, its `begin` as written, and its whole expression.
    fn tags<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        ptr: &str,
    ) -> Result<Vec<(String, &'v Value, Expr)>, Diagnostics> {
        let list = array(obj, ptr, "tags")?;
        if list.is_empty() {
            return Err(error(&format!("{ptr}/tags"), "`tags` lists no tag"));
        }
        list.iter()
            .enumerate()
            .map(|(i, t)| {
                let tptr = format!("{ptr}/tags/{i}");
                let tobj = object(t, &tptr)?;
                if tobj.get("type").and_then(Value::as_str).is_some_and(|k| k != "tag") {
                    return Err(error(&format!("{tptr}/type"), "must be a `tag`"));
                }
                allow_fields(tobj, &tptr, &["type", "begin", "content", "end"])?;
                let body = self.tag(tobj, &tptr)?;
                let begin = field(tobj, &tptr, "begin")?;
                Ok((tptr, begin, body))
            })
            .collect()
    }

    fn triggered_tags(
        &mut self,
        obj: &Map<String, Value>,
        ptr: &str,
        follow: &Follow,
    ) -> Result<Part, Diagnostics> {
        let triggers = strings(obj, ptr, "triggers")?;
        if triggers.is_empty() {
            return Err(error(&format!("{ptr}/triggers"), "`triggers` lists no trigger"));
        }
        // Each tag after its trigger, grouped by trigger.
        let mut arms: Vec<Vec<Expr>> = vec![Vec::new(); triggers.len()];
        let mut whole = Vec::new();
        for (tptr, begin, body) in self.tags(obj, ptr)? {
            let Some(begin) = begin.as_str() else {
                return Err(error(
                    &format!("{tptr}/begin"),
                    "a triggered tag's `begin` must be a string",
                ));
            };
            let matching: Vec<usize> =
                (0..triggers.len()).filter(|&k| begin.starts_with(&triggers[k])).collect();
            let [k] = matching[..] else {
                return Err(error(
                    &format!("{tptr}/begin"),
                    format!(
                        "`{begin}` must start with exactly one trigger (it starts with {})",
                        matching.len()
                    ),
                ));
            };
            // The same tag after its trigger: `begin` without the trigger's characters.
            let after = match &body {
                Expr::Seq(items) => {
                    let mut items = items.clone();
                    items[0] = Expr::literal(&begin[triggers[k].len()..]);
                    Expr::seq(items)
                }
                _ => Expr::literal(&begin[triggers[k].len()..]),
            };
            arms[k].push(after);
            whole.push(body);
        }
        let excludes = strings(obj, ptr, "excludes")?;
        let at_least_one = boolean(obj, ptr, "at_least_one")?;
        let stop_after_first = boolean(obj, ptr, "stop_after_first")?;
        let arms: Vec<(String, Expr)> = triggers
            .into_iter()
            .zip(arms)
            .filter(|(_, a)| !a.is_empty())
            .map(|(t, a)| (t, Expr::choice(a)))
            .collect();
        let first = Expr::choice(whole);
        Ok(match (at_least_one, stop_after_first) {
            (true, true) => Part::plain(first),
            (true, false) => {
                let rest = dispatched(arms, excludes, true, follow, self.opts.max_free_text_tokens);
                Part { expr: Expr::seq(vec![first, rest.expr]), absorbed: rest.absorbed }
            }
            (false, stop) => {
                dispatched(arms, excludes, !stop, follow, self.opts.max_free_text_tokens)
            }
        })
    }

    fn dispatch(
        &mut self,
        obj: &Map<String, Value>,
        ptr: &str,
        follow: &Follow,
    ) -> Result<Part, Diagnostics> {
        let rules = array(obj, ptr, "rules")?;
        if rules.is_empty() {
            return Err(error(&format!("{ptr}/rules"), "`rules` lists no rule"));
        }
        let repeat = match obj.get("loop") {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(error(&format!("{ptr}/loop"), "`loop` must be a boolean")),
        };
        let mut arms = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let rptr = format!("{ptr}/rules/{i}");
            let pair = rule
                .as_array()
                .filter(|p| p.len() == 2)
                .ok_or_else(|| error(&rptr, "a rule must be a [pattern, format] pair"))?;
            let pattern = match pair[0].as_str() {
                Some(p) if !p.is_empty() => p.to_string(),
                _ => {
                    return Err(error(&format!("{rptr}/0"), "a pattern must be a non-empty string"))
                }
            };
            let part = self.format(&pair[1], &format!("{rptr}/1"), &Follow::Other)?;
            arms.push((pattern, part.expr));
        }
        let excludes = strings(obj, ptr, "excludes")?;
        // The free text stops at what follows the dispatch only when that is excluded
        // from it (XGrammar's way of ending a dispatch inside a tag).
        let follow = match follow {
            Follow::Strings(ends) if ends.iter().all(|e| excludes.contains(e)) => follow.clone(),
            Follow::End => Follow::End,
            _ => Follow::Other,
        };
        Ok(dispatched(arms, excludes, repeat, &follow, self.opts.max_free_text_tokens))
    }

    fn token_triggered_tags(
        &mut self,
        obj: &Map<String, Value>,
        ptr: &str,
    ) -> Result<Part, Diagnostics> {
        let triggers = self.token_set(obj, ptr, "trigger_tokens", false)?;
        let excluded = self.token_set(obj, ptr, "exclude_tokens", false)?;
        let mut whole = Vec::new();
        for (tptr, _, body) in self.tags(obj, ptr)? {
            let begin = match &body {
                Expr::Seq(items) => items.first(),
                other => Some(other),
            };
            let is_trigger = matches!(begin, Some(Expr::Tokens(s)) if s.ids.iter().all(|id| triggers.ids.contains(id)));
            if !is_trigger {
                return Err(error(
                    &format!("{tptr}/begin"),
                    "a token-triggered tag must begin with one of `trigger_tokens`",
                ));
            }
            whole.push(body);
        }
        let mut ids: Vec<u32> = triggers.ids.iter().chain(&excluded.ids).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        let free = Expr::star(Expr::Tokens(TokenSet { negated: true, ids: ids.into() }));
        let tag = Expr::choice(whole);
        let at_least_one = boolean(obj, ptr, "at_least_one")?;
        let stop_after_first = boolean(obj, ptr, "stop_after_first")?;
        let expr = match (at_least_one, stop_after_first) {
            (true, true) => tag,
            (true, false) => {
                Expr::seq(vec![tag.clone(), Expr::star(Expr::seq(vec![free.clone(), tag])), free])
            }
            (false, true) => Expr::seq(vec![free.clone(), Expr::optional(tag)]),
            (false, false) => Expr::seq(vec![Expr::star(Expr::seq(vec![free.clone(), tag])), free]),
        };
        Ok(Part::plain(expr))
    }
}

/// The strings free text avoids: the stops (`patterns`), then what follows it, then the
/// excluded; returns them and the range of the follow strings among them.
fn avoid_list(
    patterns: &[String],
    excludes: &[String],
    follow: &Follow,
) -> (Vec<String>, std::ops::Range<usize>) {
    let mut avoid = patterns.to_vec();
    let start = avoid.len();
    if let Follow::Strings(ends) = follow {
        avoid.extend(ends.iter().cloned());
    }
    let ends = start..avoid.len();
    avoid.extend(excludes.iter().cloned());
    (avoid, ends)
}

/// The free text that ends a format: up to the follow string (absorbed), or to the end.
fn text_end(
    avoid: &[String],
    ends: std::ops::Range<usize>,
    follow: &Follow,
    budget: Option<u32>,
) -> Part {
    match follow {
        Follow::Strings(_) => {
            let text = |i| FreeText::until(avoid.to_vec(), i).with_max_tokens(budget);
            let texts = ends.map(|i| Expr::Text(Box::new(text(i)))).collect();
            Part { expr: Expr::choice(texts), absorbed: true }
        }
        Follow::End => {
            let text = FreeText::avoiding(avoid.to_vec()).with_max_tokens(budget);
            Part::plain(Expr::Text(Box::new(text)))
        }
        // Text that something other than a string follows may end anywhere: no token
        // could be told to end it, so it has no budget.
        Follow::Other => Part::plain(Expr::Text(Box::new(FreeText::avoiding(avoid.to_vec())))),
    }
}

/// `any_text`: free text avoiding `excludes`, ended by what follows it, within `budget`
/// tokens.
fn free_text(
    patterns: Vec<String>,
    excludes: Vec<String>,
    follow: &Follow,
    budget: Option<u32>,
) -> Part {
    let (avoid, ends) = avoid_list(&patterns, &excludes, follow);
    text_end(&avoid, ends, follow, budget)
}

/// Free text in which each pattern is followed by its expression. With `repeat`, free
/// text goes on after each, and the whole ends as [`text_end`] says; without, the whole
/// ends right after the first pattern's expression (or is text holding no pattern).
fn dispatched(
    arms: Vec<(String, Expr)>,
    excludes: Vec<String>,
    repeat: bool,
    follow: &Follow,
    budget: Option<u32>,
) -> Part {
    let patterns: Vec<String> = arms.iter().map(|(p, _)| p.clone()).collect();
    let (avoid, ends) = avoid_list(&patterns, &excludes, follow);
    let text = |i| FreeText::until(avoid.clone(), i).with_max_tokens(budget);
    let step = Expr::choice(
        arms.into_iter()
            .enumerate()
            .map(|(i, (_, e))| Expr::seq(vec![Expr::Text(Box::new(text(i))), e]))
            .collect(),
    );
    let end = text_end(&avoid, ends, follow, budget);
    if repeat {
        Part { expr: Expr::seq(vec![Expr::star(step), end.expr]), absorbed: end.absorbed }
    } else {
        alternatives(vec![Part::plain(step), end], follow)
    }
}

/// The legacy `{"structures": [{"begin", "schema", "end"}], "triggers"}` as `triggered_tags`.
fn legacy_format(tag: &Value) -> Result<Value, Diagnostics> {
    let obj = object(tag, "")?;
    allow_fields(obj, "", &["type", "structures", "triggers"])?;
    let structures = array(obj, "", "structures")?;
    let tags = structures
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let ptr = format!("/structures/{i}");
            let sobj = object(s, &ptr)?;
            allow_fields(sobj, &ptr, &["begin", "schema", "end"])?;
            Ok(serde_json::json!({
                "type": "tag",
                "begin": string(sobj, &ptr, "begin")?,
                "content": {"type": "json_schema", "json_schema": field(sobj, &ptr, "schema")?},
                "end": string(sobj, &ptr, "end")?,
            }))
        })
        .collect::<Result<Vec<_>, Diagnostics>>()?;
    Ok(serde_json::json!({
        "type": "triggered_tags",
        "triggers": field(obj, "", "triggers")?,
        "tags": tags,
    }))
}
