//! `json_schema`: the JSON Schema converter on every combination of its options, fed
//! either with arbitrary bytes as schema text or with a JSON value built from the
//! fuzzer's bytes out of JSON Schema keywords (so that most inputs are schemas, not
//! syntax errors).
//!
//! The converter never panics; an error has an error diagnostic that renders; a schema
//! that converts validates and either compiles or is refused with an error (within the
//! fuzzing limits), and a short masked walk over a small vocabulary keeps the mask equal
//! to `accept_token`, free of dead ends, and rollback exact.

use super::{fuzz_limits, short_walk, text_vocab};
use crate::gen::names_tokens;
use crate::rng::{ByteSource, Choices};
use grammask::syntax::json_schema::{Draft, FormatMode, PropertyOrder, Whitespace};
use grammask::syntax::print::to_gbnf;
use grammask::syntax::{
    json_schema_to_grammar, parse_json_schema, validate, Converted, Diagnostics, JsonSchemaOptions,
};
use grammask::{Compiler, CompilerConfig, Matcher};
use serde_json::{Map, Number, Value};

const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "additionalProperties",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "$ref",
    "$defs",
    "definitions",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$schema",
    "default",
    "title",
    "nullable",
    "contentEncoding",
    "a",
    "b",
    "",
];

const STRINGS: &[&str] = &[
    "object",
    "array",
    "string",
    "number",
    "integer",
    "boolean",
    "null",
    "#",
    "#/$defs/a",
    "#/$defs/b",
    "#/definitions/a",
    "#/properties/a",
    "#/items",
    "#a",
    "a",
    "b",
    "",
    "^[a-z]+$",
    "a|b",
    "[0-9]{2,4}",
    "^(\\d+)?$",
    "\\p{L}",
    "(?=a)",
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
    "uri-reference",
    "unknown-format",
    "http://example.com/s",
    "s#/$defs/a",
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema#",
    "é日😀",
    "\u{0}",
];

/// A JSON value whose shape is chosen by `src`: objects keyed mostly by schema keywords,
/// strings mostly from schema vocabulary, numbers small, large, negative or fractional.
pub fn value(src: &mut ByteSource<'_>, depth: usize) -> Value {
    let kind = if depth == 0 { src.below(6) } else { src.below(10) };
    match kind {
        0 => Value::Null,
        1 => Value::Bool(src.chance(0.5)),
        2 => Value::Number(Number::from(src.below(12) as i64 - 2)),
        3 => {
            let n = match src.below(6) {
                0 => Number::from(i64::MAX),
                1 => Number::from(u64::MAX),
                2 => Number::from(-(src.below(1000) as i64)),
                3 => Number::from_f64(src.below(1000) as f64 / 8.0 - 10.0).expect("finite"),
                4 => Number::from_f64(1e300).expect("finite"),
                _ => Number::from(src.below(70_000) as u64),
            };
            Value::Number(n)
        }
        4 | 5 => {
            if src.chance(0.8) {
                Value::String(src.pick(STRINGS).to_string())
            } else {
                let n = src.below(6);
                let bytes = src.take(n);
                Value::String(String::from_utf8_lossy(bytes).into_owned())
            }
        }
        6 | 7 => {
            let n = src.range(1, 4);
            Value::Array((0..n).map(|_| value(src, depth - 1)).collect())
        }
        _ => {
            let n = src.range(1, 5);
            let mut map = Map::new();
            for _ in 0..n {
                let key = if src.chance(0.85) {
                    src.pick(KEYWORDS).to_string()
                } else {
                    src.pick(STRINGS).to_string()
                };
                map.insert(key, value(src, depth - 1));
            }
            Value::Object(map)
        }
    }
}

/// Options from two bytes: every combination of whitespace, strict, lenient, format,
/// property order, a small or the default depth limit, a remote document, a base URI, and
/// a draft for schemas that name none.
pub fn options(a: u8, b: u8) -> JsonSchemaOptions {
    let whitespace = match a % 4 {
        0 => Whitespace::default(),
        1 => Whitespace::Compact,
        2 => Whitespace::Flexible { max_run: (b % 5) as u32 },
        _ => Whitespace::Any,
    };
    let mut remote_documents = Vec::new();
    if b & 0x80 != 0 {
        remote_documents.push((
            "http://example.com/s".to_string(),
            serde_json::json!({"$defs": {"a": {"type": "integer"}}, "type": "string"}),
        ));
    }
    JsonSchemaOptions {
        whitespace,
        strict: a & 0x04 != 0,
        lenient: a & 0x08 != 0,
        format: if a & 0x10 != 0 { FormatMode::Annotation } else { FormatMode::Assert },
        property_order: if a & 0x20 != 0 { PropertyOrder::Any } else { PropertyOrder::Schema },
        max_depth: if a & 0x40 != 0 { (b as usize >> 3) % 8 } else { 128 },
        remote_documents,
        base_uri: (a & 0x80 != 0).then(|| "file:///schemas/root.json".to_string()),
        draft: match b % 7 {
            0 => Some(Draft::Draft4),
            1 => Some(Draft::Draft7),
            2 => Some(Draft::Draft2019_09),
            _ => None,
        },
    }
}

fn check(result: Result<Converted, Diagnostics>, text: &str, seed: &mut ByteSource<'_>) {
    let converted = match result {
        Ok(c) => c,
        Err(d) => {
            assert!(d.errors().next().is_some(), "an Err without an error diagnostic: {d:?}");
            let _ = d.render("schema.json", text);
            return;
        }
    };
    let g = &converted.grammar;
    let _ = validate(g);
    let config = CompilerConfig { limits: fuzz_limits(), ..CompilerConfig::default() };
    let Ok(compiled) = Compiler::from_arc(text_vocab()).with_config(config).compile_grammar(g)
    else {
        return;
    };
    let mut m = Matcher::new(compiled);
    if let Err(e) = short_walk(&mut m, 5, names_tokens(g), |n| seed.below(n)) {
        panic!("{e}\nschema: {text}\ngrammar:\n{}", to_gbnf(g));
    }
}

/// The target: byte 0 picks raw text (even) or a built value (odd), bytes 1-2 the options.
pub fn run(data: &[u8]) {
    let mut src = ByteSource::new(data);
    let mode = src.byte();
    let opts = options(src.byte(), src.byte());
    if mode % 2 == 0 {
        let text = String::from_utf8_lossy(src.rest()).into_owned();
        let result = parse_json_schema(&text, &opts);
        let mut walk = ByteSource::new(&[]);
        check(result, &text, &mut walk);
    } else {
        let v = value(&mut src, 5);
        let text = v.to_string();
        let result = json_schema_to_grammar(&v, &opts);
        check(result, &text, &mut src);
    }
}
