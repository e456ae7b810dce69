//! Converter behaviour: diagnostics with JSON pointers, limits, whitespace styles, and
//! bounded counts kept as counted repetitions.

use grammask_syntax::json_schema::matcher::ReferenceMatcher;
use grammask_syntax::json_schema::{
    builtin_json_grammar, json_schema_to_grammar, parse_json_schema, JsonSchemaOptions,
};
use grammask_syntax::{Category, Expr};
use serde_json::json;

fn accepts(schema: serde_json::Value, text: &str) -> bool {
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    ReferenceMatcher::new(&c.grammar).matches(text)
}

#[test]
fn errors_name_keyword_and_pointer() {
    let cases = [
        (json!({"properties": {"a": {"extends": {}}}}), "/properties/a/extends"),
        (json!({"items": {"uniqueItems": true, "type": "array"}}), "/items/uniqueItems"),
        (
            json!({"properties": {"a": {"type": "string", "pattern": "(?=x)"}}}),
            "/properties/a/pattern",
        ),
        (json!({"$ref": "#/$defs/missing"}), "/$ref"),
        (json!({"oneOf": [{"type": "string"}, {"pattern": "^a+b$"}]}), "/oneOf/1/pattern"),
        (json!({"not": {"pattern": "^a+b$"}}), "/not/pattern"),
    ];
    for (schema, pointer) in cases {
        let e = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap_err();
        let d = e.errors().next().unwrap();
        assert_eq!(d.pointer.as_deref(), Some(pointer), "{schema}: {d}");
    }
}

#[test]
fn lenient_turns_unsupported_into_warnings() {
    let opts = JsonSchemaOptions { lenient: true, ..JsonSchemaOptions::default() };
    let c = json_schema_to_grammar(&json!({"type": "array", "uniqueItems": true}), &opts).unwrap();
    assert_eq!(c.warnings.len(), 1);
    assert_eq!(c.warnings[0].pointer.as_deref(), Some("/uniqueItems"));
}

#[test]
fn invalid_json_has_a_position() {
    let e = parse_json_schema("{\n  \"type\": }", &JsonSchemaOptions::default()).unwrap_err();
    let span = e.0[0].span.unwrap();
    assert_eq!(grammask_syntax::LineCol::of("{\n  \"type\": }", span.start).line, 2);
}

#[test]
fn deep_nesting_is_a_limit() {
    let mut schema = json!({"type": "string"});
    for _ in 0..500 {
        schema = json!({"items": schema});
    }
    let e = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap_err();
    assert_eq!(e.0[0].category, Category::Limit("schema_depth"));
}

#[test]
fn bounded_counts_stay_counted() {
    let schema = json!({"type": "array", "maxItems": 1000,
                        "items": {"type": "string", "maxLength": 5000}});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    // Chunks of 32 items are written out; the size does not depend on the bounds.
    assert!(c.grammar.size() < 4000, "grammar size {}", c.grammar.size());
    let mut maxima = Vec::new();
    fn walk(e: &Expr, out: &mut Vec<u32>) {
        match e {
            Expr::Repeat { expr, max, .. } => {
                out.extend(*max);
                walk(expr, out);
            }
            Expr::Seq(items) | Expr::Choice(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    for r in &c.grammar.rules {
        walk(&r.body, &mut maxima);
    }
    // Large bounds are written as chunks of `counts::CHUNK` items, the first in place:
    // 999 = 31·32 + 7 and 5000 = 156·32 + 8.
    assert!(maxima.contains(&29) && maxima.contains(&154), "{maxima:?}");
}

#[test]
fn chunked_lengths_are_exact() {
    for (min, max) in [(0usize, 65usize), (0, 100), (0, 255), (3, 130), (70, 300), (100, 164)] {
        let schema = json!({"type": "string", "minLength": min, "maxLength": max});
        // Around every multiple of the chunk size and both bounds.
        let edges = (0..=max / 32 + 1).map(|k| 32 * k).chain([min, max]);
        let lengths: std::collections::BTreeSet<usize> =
            edges.flat_map(|e| [e.saturating_sub(1), e, e + 1]).collect();
        for n in lengths {
            let text = format!("\"{}\"", "a".repeat(n));
            assert_eq!(accepts(schema.clone(), &text), (min..=max).contains(&n), "{min} {max} {n}");
        }
        // An escape and a multi-byte character count one each.
        let text = format!("\"{}\"", "\\n\u{e9}".repeat(max / 2));
        assert_eq!(accepts(schema.clone(), &text), max / 2 * 2 >= min, "{min} {max}");
    }
}

#[test]
fn whitespace_styles() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "object",
        "properties": {"b": {"type": "integer"}}}}});
    assert!(accepts(schema.clone(), r#"{"a":{"b":1}}"#));
    assert!(accepts(schema.clone(), r#"{"a": {"b": 1}}"#));
    assert!(accepts(schema.clone(), "{\n  \"a\": {\n    \"b\": 1\n  }\n}"));
    assert!(!accepts(schema, "{\n\n\n\"a\": {}}"));
}

#[test]
fn patterns_apply_to_decoded_strings() {
    let schema = json!({"type": "string", "pattern": "^a\"b\\\\c$"});
    assert!(accepts(schema.clone(), r#""a\"b\\c""#));
    assert!(!accepts(schema, r#""a"b\c""#));
    let unanchored = json!({"type": "string", "pattern": "[0-9]{3}"});
    assert!(accepts(unanchored.clone(), r#""ab123cd""#));
    assert!(!accepts(unanchored, r#""ab12cd""#));
}

#[test]
fn lengths_count_code_points() {
    let schema = json!({"type": "string", "minLength": 2, "maxLength": 2});
    assert!(accepts(schema.clone(), r#""\ud83d\ude00x""#));
    assert!(accepts(schema.clone(), "\"\u{1F600}x\""));
    assert!(!accepts(schema, r#""x""#));
}

#[test]
fn recursive_refs_become_recursive_rules() {
    let schema = json!({"$defs": {"node": {"type": "object", "properties": {
        "next": {"$ref": "#/$defs/node"}}, "additionalProperties": false}},
        "$ref": "#/$defs/node"});
    assert!(accepts(schema.clone(), r#"{"next":{"next":{}}}"#));
    assert!(!accepts(schema, r#"{"next":{"other":1}}"#));
}

#[test]
fn builtin_json_accepts_any_value() {
    let g = builtin_json_grammar(&JsonSchemaOptions::default());
    let m = ReferenceMatcher::new(&g);
    assert!(m.matches(r#"{"a": [1, 2.5e3, "x", null, true]}"#));
    assert!(!m.matches(r#"{"a": }"#));
}

/// Keys outside `properties` go to `additionalProperties`, the listed ones to their own
/// schemas: every key of up to three characters over an alphabet with a multi-byte
/// character and an escaped one, against names that are prefixes of each other.
#[test]
fn free_keys_are_exactly_the_unlisted_ones() {
    let names = ["", "a", "ab", "b\u{e9}", "a\"b", "\u{e9}\u{e9}a"];
    let mut properties = serde_json::Map::new();
    for n in names {
        properties.insert(n.to_string(), json!({"const": "P"}));
    }
    let schema = json!({"properties": properties, "additionalProperties": {"const": 1}});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let m = ReferenceMatcher::new(&c.grammar);
    let alphabet = ['a', 'b', '\u{e9}', '"', 'x'];
    let mut keys = vec![String::new()];
    for len in 1..=3 {
        let shorter: Vec<String> =
            keys.iter().filter(|k| k.chars().count() == len - 1).cloned().collect();
        for k in shorter {
            for c in alphabet {
                keys.push(format!("{k}{c}"));
            }
        }
    }
    for key in &keys {
        let quoted = serde_json::to_string(key).unwrap();
        let listed = names.contains(&key.as_str());
        assert_eq!(m.matches(&format!("{{{quoted}: 1}}")), !listed, "{quoted}: 1");
        assert_eq!(m.matches(&format!("{{{quoted}: \"P\"}}")), listed, "{quoted}: \"P\"");
    }
}
