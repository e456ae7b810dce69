//! Converter behaviour: diagnostics with JSON pointers, limits, whitespace styles, and
//! bounded counts kept as counted repetitions.

use grammask_syntax::json_schema::matcher::ReferenceMatcher;
use grammask_syntax::json_schema::{
    builtin_json_grammar, json_schema_to_grammar, parse_json_schema, JsonSchemaOptions,
    PropertyOrder,
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
        // Complements past 2,000 automaton states: the 13th character from the end.
        (json!({"oneOf": [{"type": "string"}, {"pattern": "a[ab]{12}$"}]}), "/oneOf/1/pattern"),
        (json!({"not": {"pattern": "a[ab]{12}$"}}), "/not/pattern"),
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
    // Past 256 chunk calls they are counted in chunks of 32 chunks: a `maxLength` of
    // 20,000 = 625·32 is 623 chunk calls after the first chunk, 623 = 19·32 + 15.
    let schema = json!({"type": "string", "maxLength": 20_000});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let mut maxima = Vec::new();
    for r in &c.grammar.rules {
        walk(&r.body, &mut maxima);
    }
    assert!(!maxima.contains(&623) && maxima.contains(&17) && maxima.contains(&15), "{maxima:?}");
}

/// Items too large to copy are a rule, and each chunk of them (the one written in place
/// and the chunk rule) repeats its call rather than writing 32 references to it, which
/// the engine's inlining would copy into one automaton (32 copies of the item, each a
/// `{1,255}` run of states here). The counts stay exact around the chunks' edges.
#[test]
fn chunks_of_large_items_repeat_their_call() {
    let item = json!({"type": "object", "required": ["key"], "additionalProperties": false,
        "properties": {"key": {"type": "string", "pattern": "^[a-z]{1,255}$"}}});
    let schema = json!({"type": "array", "maxItems": 100, "items": item});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let mut chunks = 0;
    fn walk(e: &Expr, chunks: &mut usize) {
        match e {
            Expr::Repeat { expr, min: 32, max: Some(32) } if matches!(**expr, Expr::Rule(_)) => {
                *chunks += 1;
            }
            Expr::Seq(items) => {
                assert!(items.len() < 32 || items.iter().any(|i| *i != items[0]), "{items:?}");
                items.iter().for_each(|i| walk(i, chunks));
            }
            Expr::Choice(items) => items.iter().for_each(|i| walk(i, chunks)),
            Expr::Repeat { expr, .. } => walk(expr, chunks),
            _ => {}
        }
    }
    for r in &c.grammar.rules {
        walk(&r.body, &mut chunks);
    }
    // The chunk rule and the chunk in place (a conversion tried first may leave a dead
    // copy of the rules).
    assert!(chunks >= 2, "{chunks} chunks of calls");
    for n in [0usize, 1, 31, 32, 33, 63, 64, 65, 66, 95, 96, 97, 99, 100, 101] {
        let text = format!("[{}]", vec![r#"{"key":"ab"}"#; n].join(","));
        assert_eq!(accepts(schema.clone(), &text), n <= 100, "{n} items");
    }
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

/// A format under a pattern that says how the text starts is a few states of the pattern
/// and then the format's own expression: the grammar stays small, and texts are judged
/// by both, escapes decoded (`\/` is `/`).
#[test]
fn formats_under_a_prefix_pattern_stay_small_and_exact() {
    let schema = json!({"type": "string", "format": "uri", "pattern": "^https?://"});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let size: usize = c.grammar.rules.iter().map(|r| r.body.size()).sum();
    assert!(c.grammar.rules.len() < 40, "{} rules", c.grammar.rules.len());
    assert!(size < 2_000, "{size} IR nodes");
    let m = ReferenceMatcher::new(&c.grammar);
    for ok in [r#""https://a.example/b?c#d""#, r#""http:\/\/[::1]:8080/""#, r#""https://""#] {
        assert!(m.matches(ok), "{ok}");
    }
    for bad in [r#""ftp://a""#, r#""https://a b""#, r#""https://[1:2:3]/""#, r#""https:/""#] {
        assert!(!m.matches(bad), "{bad}");
    }
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

/// A value under both `properties` and `patternProperties` merges both schemas; when
/// each holds the same recursive `$ref` in an `anyOf` beside a `type`, the reference is
/// merged once and the recursion becomes a rule, instead of the merged parts doubling
/// at every level until the depth limit.
#[test]
fn a_recursive_ref_reached_twice_is_merged_once() {
    let by = json!({"type": "array",
        "items": {"type": "object", "anyOf": [{"$ref": "#/$defs/author"}]}});
    let schema = json!({"$defs": {
        "credits": {"type": "object", "properties": {"by": by},
            "patternProperties": {"^b": by}},
        "author": {"type": "object", "additionalProperties": false, "properties": {
            "name": {"type": "string"}, "credits": {"$ref": "#/$defs/credits"}}}},
        "$ref": "#/$defs/credits"});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let m = ReferenceMatcher::new(&c.grammar);
    assert!(m.matches(r#"{"by":[{"name":"x","credits":{"by":[{"name":"y"}],"bz":[]}}]}"#));
    assert!(m.matches(r#"{"bb":[{"credits":{"by":[{"credits":{}}]}}]}"#));
    assert!(!m.matches(r#"{"by":[{"name":"x","credits":{"by":[{"nam":"y"}]}}]}"#));
    assert!(!m.matches(r#"{"by":[{"credits":{"bq":[1]}}]}"#));
}

/// `not` of `additionalProperties: false` on an object that may hold other keys, of
/// `items`, and of `dependentRequired`/`dependentSchemas`: each is the documents with
/// one way to fail the negated schema. Each case: the schema, documents it accepts,
/// documents it rejects, and documents it accepts with properties in any order (their
/// keys are not in the schema's order).
#[test]
fn negations_of_closed_objects_items_and_dependencies() {
    let cases = [
        // A key besides "a", whether "a" is there or not.
        (
            json!({"type": "object", "not": {"additionalProperties": false,
                "properties": {"a": {}}}}),
            vec![r#"{"b":1}"#, r#"{"a":1,"b":2}"#, r#"{"b":1,"a":2}"#],
            vec![r#"{"a":1}"#, "{}", "[]"],
            vec![],
        ),
        // The same beside listed properties of the object itself.
        (
            json!({"properties": {"a": {"type": "integer"}, "c": {"type": "string"}},
                "not": {"additionalProperties": false, "properties": {"a": {}}}}),
            vec![r#"{"c":"x"}"#, r#"{"a":1,"z":null}"#, r#"{"z":1}"#],
            vec![r#"{"a":1}"#, "{}", r#"{"c":1}"#, "1"],
            vec![r#"{"z":1,"a":2}"#],
        ),
        // An item that is not a string.
        (
            json!({"type": "array", "not": {"items": {"type": "string"}}}),
            vec!["[1]", r#"["a",2]"#, r#"[null,"b"]"#],
            vec![r#"["a"]"#, "[]", r#"["a","b"]"#],
            vec![],
        ),
        // "a" without "b".
        (
            json!({"not": {"dependentRequired": {"a": ["b"]}}}),
            vec![r#"{"a":1}"#, r#"{"a":1,"c":1}"#],
            vec![r#"{"a":1,"b":2}"#, "{}", r#"{"b":1}"#, "1"],
            vec![r#"{"c":1,"a":1}"#],
        ),
        // "a", and the object fails the dependent schema: no "c".
        (
            json!({"not": {"dependentSchemas": {"a": {"required": ["c"]}}}}),
            vec![r#"{"a":1}"#, r#"{"a":1,"b":2}"#],
            vec![r#"{"a":1,"c":2}"#, "{}", r#"{"c":1}"#, "[]"],
            vec![r#"{"b":2,"a":1}"#],
        ),
        // oneOf made exclusive: an open object and a closed one with the same keys.
        (
            json!({"oneOf": [
                {"type": "object", "required": ["type"],
                    "properties": {"type": {"type": "string"}}},
                {"type": "object", "additionalProperties": false, "required": ["type"],
                    "properties": {"type": {"const": "ref"}, "id": {"type": "string"}}}]}),
            vec![r#"{"type":"x"}"#, r#"{"type":"ref","id":"1","more":2}"#],
            vec![r#"{"type":"ref"}"#, r#"{"type":"ref","id":"1"}"#, "{}"],
            vec![r#"{"more":2,"type":"ref"}"#],
        ),
    ];
    for order in [PropertyOrder::Schema, PropertyOrder::Any] {
        let opts = JsonSchemaOptions { property_order: order, ..JsonSchemaOptions::default() };
        for (schema, valid, invalid, any_order) in &cases {
            let c =
                json_schema_to_grammar(schema, &opts).unwrap_or_else(|e| panic!("{schema}: {e:?}"));
            let m = ReferenceMatcher::new(&c.grammar);
            for text in valid {
                assert!(m.matches(text), "{order:?}: {schema} must accept {text}");
            }
            for text in invalid {
                assert!(!m.matches(text), "{order:?}: {schema} must reject {text}");
            }
            for text in any_order {
                let accepted = m.matches(text);
                assert_eq!(accepted, order == PropertyOrder::Any, "{order:?}: {schema}, {text}");
            }
        }
    }
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

/// The escapes a free key may diverge with are one rule, which the divergences of every
/// object's free keys call (engines keep a rule of escapes a call rather than copying
/// it), and a free key may still start with or hold any of them.
#[test]
fn free_keys_of_objects_call_one_rule_of_escapes() {
    let schema = json!({
        "properties": {
            "ab": {
                "properties": {"cd": {"const": 1}},
                "additionalProperties": {"const": 2}
            }
        },
        "additionalProperties": {"const": 3}
    });
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let rules = &c.grammar.rules;
    let escapes: Vec<usize> =
        (0..rules.len()).filter(|&r| rules[r].name.starts_with("json-escape-foreign")).collect();
    assert_eq!(escapes.len(), 1, "{rules:?}");
    let callers: Vec<&str> = rules
        .iter()
        .filter(|rule| {
            let mut calls = false;
            rule.body.for_each_rule_ref(&mut |r| calls |= r.index() == escapes[0]);
            calls
        })
        .map(|rule| rule.name.as_str())
        .collect();
    assert!(!callers.is_empty(), "{rules:?}");
    assert!(callers.iter().all(|name| name.starts_with("diverge")), "{callers:?}");
    let m = ReferenceMatcher::new(&c.grammar);
    for (text, ok) in [
        (r#"{"ab": {"cd": 1, "\u00fc": 2, "\n": 2, "c\td": 2}, "\t": 3, "a\u00fcb": 3}"#, true),
        (r#"{"ab": {"\ud83d\ude00": 2}, "a\"": 3}"#, true),
        (r#"{"ab": {"\u00fc": 3}}"#, false),
        (r#"{"ab": {}, "\u00fc": 2}"#, false),
        (r#"{"ab": {"cd": 2}}"#, false),
    ] {
        assert_eq!(m.matches(text), ok, "{text}");
    }
}

/// What a free key beside listed properties reads once it diverges from every name (a
/// character continuing none, then anything) is a rule per set of continuing
/// characters, listed as rarely reached (compilers keep it a call), and shared by every
/// object; objects without free keys, or with nothing but free keys, list none. A
/// free-key member past a few nodes is a rarely reached rule too.
#[test]
fn free_key_members_beside_listed_ones_are_rarely_reached() {
    let listed = json!({"properties": {"ab": {}, "cd": {"type": "integer"}}, "required": ["ab"]});
    let closed = json!({"properties": {"ab": {}}, "additionalProperties": false});
    let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
    let any_order = json!({"properties": {"ab": {}, "cd": {}}, "required": ["cd", "ab"]});
    // Keys other than `ab` and `cd`: divergences where `a` or `c` continue, where `b`
    // does, where `d` does and where nothing does; with a large value (an object of 40
    // listed integers), the member too.
    let wide: serde_json::Map<String, serde_json::Value> =
        (0..40).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
    let large = json!({"properties": {"ab": {}},
        "additionalProperties": {"properties": wide, "additionalProperties": false}});
    let divergences = |c: &grammask_syntax::Converted| {
        c.rarely_reached.iter().filter(|n| n.starts_with("diverge")).count()
    };
    for (schema, options, diverging, rare) in [
        (&listed, JsonSchemaOptions::default(), 4, 4),
        (&closed, JsonSchemaOptions::default(), 0, 0),
        (&map, JsonSchemaOptions::default(), 0, 0),
        (
            &any_order,
            JsonSchemaOptions { property_order: PropertyOrder::Any, ..Default::default() },
            4,
            5,
        ),
        (&large, JsonSchemaOptions::default(), 3, 4),
    ] {
        let c = json_schema_to_grammar(schema, &options).unwrap();
        assert_eq!(divergences(&c), diverging, "{schema}: {:?}", c.rarely_reached);
        assert_eq!(c.rarely_reached.len(), rare, "{schema}: {:?}", c.rarely_reached);
        for name in &c.rarely_reached {
            let r = c.grammar.rules.iter().position(|r| r.name == *name);
            let r = r.unwrap_or_else(|| panic!("{schema}: no rule `{name}`"));
            let mut called = false;
            for rule in &c.grammar.rules {
                rule.body.for_each_rule_ref(&mut |x| called |= x.index() == r);
            }
            assert!(called, "{schema}: `{name}` is called");
        }
    }
}

/// How many references to the rule named `name` the grammar's rules hold.
fn calls_of(c: &grammask_syntax::json_schema::Converted, name: &str) -> usize {
    let r = c.grammar.rules.iter().position(|r| r.name == *name).unwrap();
    let mut calls = 0;
    for rule in &c.grammar.rules {
        rule.body.for_each_rule_ref(&mut |x| calls += usize::from(x.index() == r));
    }
    calls
}

/// An object of many optional members (an event of 89 optional strings of at most 32
/// characters) holds their large values as rules of their own, rarely reached, so that
/// a compiler builds only the value a generation writes, and so does an object of two
/// or more optional members writing one value; the required member's value, small values
/// and an optional value no other member writes stay in place.
#[test]
fn large_values_of_many_optional_members_are_rarely_reached() {
    let object = |optional: usize| {
        let mut properties = serde_json::Map::new();
        properties.insert("id".into(), json!({"type": "string", "maxLength": 32}));
        properties.insert("n".into(), json!({"type": "integer"}));
        for i in 0..optional {
            properties.insert(format!("field_{i}"), json!({"type": "string", "maxLength": 32}));
        }
        json!({"type": "object", "properties": properties, "required": ["id"],
               "additionalProperties": false})
    };
    let options = JsonSchemaOptions::default();
    // One optional string besides the integer: it stays inline.
    let one = json_schema_to_grammar(&object(1), &options).unwrap();
    assert!(one.rarely_reached.is_empty(), "{:?}", one.rarely_reached);
    // Two or more optional members writing one string: one rule, called by each; the
    // integer and the required string stay inline. So past many optional members, by
    // weight.
    for optional in [2, 4, 40] {
        let c = json_schema_to_grammar(&object(optional), &options).unwrap();
        assert_eq!(c.rarely_reached.len(), 1, "{:?}", c.rarely_reached);
        let name = &c.rarely_reached[0];
        assert!(name.starts_with("value"), "{name}");
        assert!(calls_of(&c, name) >= optional, "`{name}` is called by every member");
    }
}

/// Objects alike as the values of several optional members (each with its free members,
/// its values referring to definitions, so light in weight): one rule of the value,
/// called by every member, holding one rule of the free members.
#[test]
fn values_written_alike_by_several_optional_members_are_one_rule() {
    let keys = json!({"type": "array", "items": {"type": "string", "maxLength": 40}});
    let role = json!({"type": "object", "properties": {
        "allowed": {"$ref": "#/definitions/keys"}, "denied": {"$ref": "#/definitions/keys"}}});
    let mut properties = serde_json::Map::new();
    for name in ["ais", "crew", "friend", "guests", "public"] {
        properties.insert(name.into(), role.clone());
    }
    let schema = json!({"type": "object", "properties": properties,
                        "definitions": {"keys": keys}});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let values: Vec<&String> = c.rarely_reached.iter().filter(|n| n.starts_with("value")).collect();
    assert_eq!(values.len(), 1, "{:?}", c.rarely_reached);
    let calls = calls_of(&c, values[0]);
    assert!(calls >= 5, "{calls} calls: {:?}", c.rarely_reached);
    let free: Vec<&String> =
        c.rarely_reached.iter().filter(|n| n.starts_with("additional")).collect();
    assert_eq!(free.len(), 2, "the root's free members and the roles': {:?}", c.rarely_reached);
    for text in [
        r#"{}"#,
        r#"{"ais":{"allowed":["a","b"]},"crew":{"denied":[]},"public":{"x":1}}"#,
        r#"{"guests":{"allowed":["a"],"denied":["b"],"other":[1]},"more":true}"#,
    ] {
        assert!(ReferenceMatcher::new(&c.grammar).matches(text), "{text}");
    }
    for text in [r#"{"ais":{"allowed":[1]}}"#, r#"{"crew":{"denied":"x"}}"#] {
        assert!(!ReferenceMatcher::new(&c.grammar).matches(text), "{text}");
    }
}

/// Two optional members writing one large value alike (two lists of ids), beside a
/// required one: one rule of the value, called by both, so that the step entering the
/// members builds their keys, not two copies of the value.
#[test]
fn a_value_two_optional_members_write_alike_is_one_rule() {
    let ids = json!({"type": "array", "maxItems": 1000,
                     "items": {"type": "string", "pattern": "^[A-Fa-f\\d]{24}$"}});
    let schema = json!({"type": "object", "required": ["version"],
                        "additionalProperties": false, "properties": {
        "version": {"type": "string", "minLength": 1, "maxLength": 255},
        "domainIds": ids, "slugIds": ids}});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let values: Vec<&String> = c.rarely_reached.iter().filter(|n| n.starts_with("value")).collect();
    assert_eq!(values.len(), 1, "{:?}", c.rarely_reached);
    let calls = calls_of(&c, values[0]);
    assert!(calls >= 2, "{calls} calls: {:?}", c.rarely_reached);
    let id = "0123456789abcdefABCDEF01";
    for text in [
        r#"{"version":"1"}"#.to_string(),
        format!(r#"{{"version":"1","domainIds":["{id}"],"slugIds":[]}}"#),
        format!(r#"{{"version":"2","slugIds":["{id}","{id}"]}}"#),
    ] {
        assert!(ReferenceMatcher::new(&c.grammar).matches(&text), "{text}");
    }
    for text in [r#"{"version":"1","slugIds":["x"]}"#, r#"{"domainIds":[]}"#] {
        assert!(!ReferenceMatcher::new(&c.grammar).matches(text), "{text}");
    }
}

/// Strings of one large bound, chunked, are equal expressions: their chunks are one rule,
/// and under several optional members of one object they are one value rule (built once,
/// when first written), not a copy of a few hundred automaton states in every member.
#[test]
fn strings_of_one_large_bound_under_several_optional_members_are_one_rule() {
    let text = json!({"maxLength": 255, "type": ["string", "null"]});
    let mut properties = serde_json::Map::new();
    for name in ["id", "name", "permalink", "subject", "tags"] {
        properties.insert(name.into(), text.clone());
    }
    let schema = json!({"type": "object", "properties": properties,
                        "additionalProperties": false});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    let chunks = c.grammar.rules.iter().filter(|r| r.name.starts_with("chunk")).count();
    assert_eq!(chunks, 1, "{:?}", c.grammar.rules.iter().map(|r| &r.name).collect::<Vec<_>>());
    let values: Vec<&String> = c.rarely_reached.iter().filter(|n| n.starts_with("value")).collect();
    assert_eq!(values.len(), 1, "{:?}", c.rarely_reached);
    let long = "x".repeat(255);
    for text in [
        r#"{}"#.to_string(),
        r#"{"id":null,"name":"b","tags":"a"}"#.to_string(),
        format!(r#"{{"permalink":"{}","subject":"{long}"}}"#, &long[..40]),
    ] {
        assert!(ReferenceMatcher::new(&c.grammar).matches(&text), "{text}");
    }
    for text in [format!(r#"{{"subject":"{long}x"}}"#), r#"{"id":1}"#.to_string()] {
        assert!(!ReferenceMatcher::new(&c.grammar).matches(&text), "{text}");
    }
}

/// A pattern's free end under a large length bound (`^https?://.+$`, `maxLength: 1024`) is
/// a counted repetition, chunked as plain strings of that bound are: a rule per count
/// would be a thousand rules of the string's characters. Lengths and the pattern stay
/// exact: the count starts where the pattern's fixed part ends, whichever way it went.
#[test]
fn a_patterns_free_end_under_a_length_bound_is_counted() {
    let schema = json!({"type": "string", "pattern": "^https?://.+$", "maxLength": 1024});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    assert!(c.grammar.rules.len() < 40, "{} rules", c.grammar.rules.len());
    let quoted = |s: &str| format!("\"{s}\"");
    let within = |prefix: &str| quoted(&format!("{prefix}{}", "a".repeat(1024 - prefix.len())));
    let over = |prefix: &str| quoted(&format!("{prefix}{}", "a".repeat(1025 - prefix.len())));
    for text in [quoted("http://a"), quoted("https://x\\/y"), within("http://"), within("https://")]
    {
        assert!(ReferenceMatcher::new(&c.grammar).matches(&text), "{}", &text[..20]);
    }
    for text in [
        quoted("http://"),
        quoted("ftp://a"),
        quoted("http://a\\nb"),
        over("http://"),
        over("https://"),
    ] {
        assert!(!ReferenceMatcher::new(&c.grammar).matches(&text), "{}", &text[..20]);
    }
}

/// An anchored alternation under a length bound (`^([\w/-]|[\w-][\w/-]*[\w-])$`, a slug,
/// `maxLength: 255`) bounds each branch on its own: the second's one variable part, the
/// middle run, takes the count the bound leaves (253), where the pattern's product with
/// the bound was a rule per state and count (some 500). Lengths and the pattern stay
/// exact.
#[test]
fn an_anchored_alternation_under_a_length_bound_bounds_each_branch() {
    let slug = "^([\\w\\/-]|[\\w-][\\w\\/-]*[\\w-])$";
    let schema = json!({"type": "string", "pattern": slug, "minLength": 2, "maxLength": 255});
    let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
    assert!(c.grammar.rules.len() < 20, "{} rules", c.grammar.rules.len());
    let quoted = |s: &str| format!("\"{s}\"");
    let run = |n: usize| format!("a{}b", "/".repeat(n - 2));
    for text in ["ab", "a/b", "a\\/b", "web-1", &run(255)] {
        assert!(ReferenceMatcher::new(&c.grammar).matches(&quoted(text)), "{text:.20}");
    }
    for text in ["a", "/", "a/", "/a", "a b", &run(256)] {
        assert!(!ReferenceMatcher::new(&c.grammar).matches(&quoted(text)), "{text:.20}");
    }
}

/// The additional members after the listed ones are written once, whichever listed
/// member comes first (the key complement is hundreds of nodes, and every copy is
/// inlined and determinized again), and the object reads the same: listed members in
/// order, any of them left out unless required, additional ones after them.
#[test]
fn additional_members_are_written_once() {
    let names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"];
    for required in [None, Some("delta")] {
        let mut properties = serde_json::Map::new();
        for n in names {
            properties.insert(n.to_string(), json!({"type": "integer"}));
        }
        let mut schema = json!({"properties": properties});
        if let Some(r) = required {
            schema["required"] = json!([r]);
        }
        let c = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
        let additional: Vec<bool> =
            c.grammar.rules.iter().map(|r| r.name.starts_with("additional")).collect();
        assert!(additional.iter().any(|&a| a), "{:?}", c.grammar.rules);
        let mut references = 0;
        for rule in &c.grammar.rules {
            rule.body.for_each_rule_ref(&mut |r| references += usize::from(additional[r.index()]));
        }
        assert!(references <= 2, "{references} references to the additional member");
        let m = ReferenceMatcher::new(&c.grammar);
        // The first four listed members in every subset and order of two, then extra keys.
        for (i, a) in names[..4].iter().enumerate() {
            for (j, b) in names[..4].iter().enumerate() {
                for extra in 0..3 {
                    let mut members = vec![format!("\"{a}\": 1")];
                    if i != j {
                        members.push(format!("\"{b}\": 2"));
                    }
                    let free = (0..extra).map(|k| format!("\"x{k}\": {k}"));
                    let has_required = required.is_none_or(|r| r == *a || r == *b);
                    let text = format!(
                        "{{{}}}",
                        members.into_iter().chain(free).collect::<Vec<_>>().join(", ")
                    );
                    assert_eq!(m.matches(&text), i <= j && has_required, "{schema}: {text}");
                }
            }
        }
        let only_free = r#"{"x": 1, "y": 2}"#;
        assert_eq!(m.matches(only_free), required.is_none(), "{only_free}");
        assert_eq!(m.matches("{}"), required.is_none());
        assert!(!m.matches(r#"{"x": 1, "alpha": 1}"#), "a listed key after a free one");
    }
}

/// In schema order, properties come in order of appearance: a `properties` written before
/// an `allOf`, a `$ref` or an `anyOf` lists its properties first, and parts merged from
/// them stand where their keyword stands.
#[test]
fn properties_follow_order_of_appearance() {
    let int = json!({"type": "integer"});
    let cases = [
        (
            json!({"properties": {"a": int}, "allOf": [{"properties": {"b": int}}], "required": ["a", "b"]}),
            r#"{"a": 1, "b": 2}"#,
            r#"{"b": 2, "a": 1}"#,
        ),
        (
            json!({"allOf": [{"properties": {"b": int}}], "properties": {"a": int}, "required": ["a", "b"]}),
            r#"{"b": 2, "a": 1}"#,
            r#"{"a": 1, "b": 2}"#,
        ),
        (
            json!({"$defs": {"B": {"properties": {"b": int}}}, "properties": {"a": int},
                   "$ref": "#/$defs/B", "required": ["a", "b"]}),
            r#"{"a": 1, "b": 2}"#,
            r#"{"b": 2, "a": 1}"#,
        ),
        (
            json!({"properties": {"a": int}, "anyOf": [{"properties": {"b": int}, "required": ["b"]}],
                   "allOf": [{"properties": {"c": int}}], "required": ["a", "c"]}),
            r#"{"a": 1, "b": 2, "c": 3}"#,
            r#"{"a": 1, "c": 3, "b": 2}"#,
        ),
        (
            json!({"anyOf": [{"properties": {"b": int}, "required": ["b"]}], "properties": {"a": int},
                   "required": ["a"]}),
            r#"{"b": 2, "a": 1}"#,
            r#"{"a": 1, "b": 2}"#,
        ),
    ];
    for (schema, in_order, out_of_order) in cases {
        assert!(accepts(schema.clone(), in_order), "{schema}: {in_order}");
        assert!(!accepts(schema.clone(), out_of_order), "{schema}: {out_of_order}");
    }
}

/// `not` of any pattern whose automaton stays small is its complement, exactly.
#[test]
fn not_pattern_is_the_complement() {
    let s = json!({"type": "string", "not": {"pattern": "^[a-z0-9-]+:[a-z0-9.-]+:[a-z0-9-]*:[a-z0-9-]+$"}});
    for (text, matches) in
        [("a:b::c", true), ("a:b:x:c", true), ("a:b", false), ("A:b::c", false), ("", false)]
    {
        assert_eq!(accepts(s.clone(), &format!("\"{text}\"")), !matches, "{text}");
    }
    let s = json!({"type": "string", "not": {"pattern": "^a+b$"}});
    for (text, ok) in
        [("ab", false), ("aab", false), ("b", true), ("abb", true), ("\\u0061b", false)]
    {
        assert_eq!(accepts(s.clone(), &format!("\"{text}\"")), ok, "{text}");
    }
}

/// `not` of a format with a regular grammar is the complement of that grammar.
#[test]
fn not_format_is_the_complement() {
    let s = json!({"not": {"format": "date"}});
    for (text, ok) in
        [(r#""2020-01-31""#, false), (r#""2020-13-01""#, true), (r#""x""#, true), ("5", false)]
    {
        assert_eq!(accepts(s.clone(), text), ok, "{text}");
    }
}

/// Several patterns, lengths over several variable parts and `not` patterns on one string
/// compile to the automaton of them all, exactly.
#[test]
fn string_keywords_combine() {
    let urn = "^([a-z0-9-]+):([a-z0-9.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$";
    let cases = [
        (json!({"type": "string", "pattern": urn, "maxLength": 9}), "ab:c.d::e", true),
        (json!({"type": "string", "pattern": urn, "maxLength": 9}), "ab:c.d::ef", false),
        (json!({"type": "string", "pattern": urn, "minLength": 8}), "a:b::c", false),
        (json!({"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "z$"}]}), "abcz", true),
        (json!({"type": "string", "allOf": [{"pattern": "^a"}, {"pattern": "z$"}]}), "abc", false),
        (json!({"type": "string", "pattern": "^[a-z]+$", "not": {"pattern": "^ab"}}), "abc", false),
        (json!({"type": "string", "pattern": "^[a-z]+$", "not": {"pattern": "^ab"}}), "bac", true),
        (json!({"type": "string", "format": "ipv4", "maxLength": 9}), "1.2.3.45", true),
        (json!({"type": "string", "format": "ipv4", "maxLength": 9}), "10.20.30.4", false),
        (json!({"type": "string", "format": "ipv4", "maxLength": 9}), "10.20.3.4", true),
    ];
    for (schema, text, expected) in cases {
        assert_eq!(accepts(schema.clone(), &format!("\"{text}\"")), expected, "{schema}: {text}");
    }
}

/// A draft named by `$schema` or by the options is read as its specification writes it.
#[test]
fn each_draft_reads_its_own_keywords() {
    let draft = |d: &str| format!("http://json-schema.org/{d}/schema#");
    // Draft 4: `const` is not a keyword; `exclusiveMinimum` is a boolean; 1.0 is no integer.
    let s = json!({"$schema": draft("draft-04"), "const": 1});
    assert!(accepts(s, "2"));
    let s = json!({"$schema": draft("draft-04"), "minimum": 1, "exclusiveMinimum": true});
    assert!(!accepts(s.clone(), "1") && accepts(s, "2"));
    assert!(!accepts(json!({"$schema": draft("draft-04"), "type": "integer"}), "1.0"));
    // Drafts 4 to 7: `$ref` stands for its whole object.
    let s = json!({"$schema": draft("draft-07"), "$defs": {"i": {"type": "integer"}},
                   "$ref": "#/$defs/i", "maximum": 3});
    assert!(accepts(s, "5"));
    // Draft 6: no `if`.
    let s = json!({"$schema": draft("draft-06"), "if": true, "then": false});
    assert!(accepts(s, "1"));
    // 2020-12 (and a schema naming no draft): `$ref` beside other keywords applies both.
    let s = json!({"$defs": {"i": {"type": "integer"}}, "$ref": "#/$defs/i", "maximum": 3});
    assert!(!accepts(s, "5"));
    // The options name the draft of a schema without `$schema`.
    let opts = JsonSchemaOptions {
        draft: Some(grammask_syntax::json_schema::Draft::Draft4),
        ..JsonSchemaOptions::default()
    };
    let c = json_schema_to_grammar(&json!({"const": 1}), &opts).unwrap();
    assert!(ReferenceMatcher::new(&c.grammar).matches("2"));
    // Draft 3 is refused at `$schema`.
    let e = json_schema_to_grammar(
        &json!({"$schema": draft("draft-03")}),
        &JsonSchemaOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.errors().next().unwrap().pointer.as_deref(), Some("/$schema"));
}

/// Where a control or non-ASCII character is allowed as itself, its `\uXXXX` escape is
/// too (a surrogate pair past U+FFFF), in either case; where it is not, neither is its
/// escape.
#[test]
fn escaped_characters_mean_their_characters() {
    let cases = [
        (json!({"const": "é"}), r#""\u00e9""#, true),
        (json!({"const": "é"}), r#""\u00E9""#, true),
        (json!({"const": "é"}), r#""\u00e8""#, false),
        (json!({"enum": ["a😀"]}), r#""a\ud83d\ude00""#, true),
        (json!({"enum": ["a😀"]}), r#""a\ud83d\ude01""#, false),
        (json!({"pattern": "^\\t$"}), r#""\u0009""#, true),
        (json!({"pattern": "^\\t$"}), r#""\t""#, true),
        (json!({"pattern": "^[a-z]+$"}), r#""\u00e9""#, false),
        (json!({"pattern": "^[^a]$"}), r#""\u00e9""#, true),
        (json!({"pattern": "^\\p{L}$"}), r#""\u00e9""#, true),
        (json!({"pattern": "^\\p{L}$"}), r#""\u0031""#, false),
        (
            json!({"properties": {"café": {"type": "integer"}}, "required": ["café"], "additionalProperties": false}),
            r#"{"caf\u00e9": 1}"#,
            true,
        ),
        (json!({"not": {"const": "é"}, "type": "string"}), r#""\u00e9""#, false),
        (json!({"type": "string", "maxLength": 1}), r#""\ud83d\ude00""#, true),
    ];
    for (schema, text, expected) in cases {
        assert_eq!(accepts(schema.clone(), text), expected, "{schema}: {text}");
    }
}

/// The zeros that end a number without meaning are bounded, so a model cannot write them
/// forever: an integer's zero fraction and a constant's trailing zeros.
#[test]
fn meaningless_trailing_zeros_are_bounded() {
    use grammask_syntax::json_schema::numbers::MAX_TRAILING_ZEROS;
    let n = MAX_TRAILING_ZEROS as usize;
    for schema in
        [json!({"type": "integer"}), json!({"type": "integer", "minimum": 0}), json!({"const": 5})]
    {
        assert!(accepts(schema.clone(), &format!("5.{}", "0".repeat(n))), "{schema}");
        assert!(!accepts(schema.clone(), &format!("5.{}", "0".repeat(n + 1))), "{schema}");
    }
    assert!(accepts(json!({"const": 5.5}), &format!("5.5{}", "0".repeat(n))));
    assert!(!accepts(json!({"const": 5.5}), &format!("5.5{}", "0".repeat(n + 1))));
}

/// Every ordering of some of `keys`, each at most once.
fn arrangements<'k>(keys: &[&'k str]) -> Vec<Vec<&'k str>> {
    let mut out = vec![Vec::new()];
    for (i, k) in keys.iter().enumerate() {
        let mut rest = keys.to_vec();
        rest.remove(i);
        for mut tail in arrangements(&rest) {
            tail.insert(0, k);
            out.push(tail);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `minProperties` and `maxProperties` together with listed properties: an object text
/// is accepted exactly when it is valid (in schema order, when its listed members also
/// come in the listed order, before additional ones).
#[test]
fn property_counts_with_listed_properties() {
    let listed = ["a", "b", "c"];
    // (required, additional properties allowed, minProperties, maxProperties): counts
    // up to four.
    let mut cases = Vec::new();
    for required in [vec![], vec!["b"], vec!["a", "c"]] {
        for open in [false, true] {
            let top = if open { 4 } else { 3 };
            for min in 0..=top {
                for max in (0..=top).map(Some).chain([None]) {
                    cases.push((required.clone(), open, min, max));
                }
            }
        }
    }
    for order in [PropertyOrder::Schema, PropertyOrder::Any] {
        let opts = JsonSchemaOptions { property_order: order, ..JsonSchemaOptions::default() };
        for (required, open, min, max) in &cases {
            let mut schema = json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                    "c": {"type": "integer"}},
                "required": required,
                "minProperties": min,
            });
            if let Some(max) = max {
                schema["maxProperties"] = json!(max);
            }
            if !open {
                schema["additionalProperties"] = json!(false);
            }
            let c = json_schema_to_grammar(&schema, &opts)
                .unwrap_or_else(|e| panic!("{order:?}: {schema}: {e:?}"));
            let m = ReferenceMatcher::new(&c.grammar);
            let keys = if *open { vec!["a", "b", "c", "x", "y"] } else { listed.to_vec() };
            for text in arrangements(&keys).into_iter().filter(|t| t.len() <= 4) {
                let n = text.len() as u64;
                let valid = required.iter().all(|r| text.contains(r))
                    && n >= *min
                    && max.is_none_or(|max| n <= max);
                // Listed members in their order, additional ones after them.
                let ranks: Vec<usize> =
                    text.iter().map(|k| listed.iter().position(|l| l == k).unwrap_or(3)).collect();
                let in_order = ranks.windows(2).all(|p| p[0] < p[1] || p == [3, 3]);
                let expected = valid && (order == PropertyOrder::Any || in_order);
                let members: Vec<String> = text.iter().map(|k| format!("\"{k}\":1")).collect();
                let json = format!("{{{}}}", members.join(","));
                assert_eq!(m.matches(&json), expected, "{order:?}: {schema}, {json}");
            }
        }
    }
}

/// Counts over more listed properties than are tracked one by one in any order: a
/// property written twice counts twice.
#[test]
fn property_counts_with_many_listed_properties() {
    let names: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
    let properties: serde_json::Map<String, serde_json::Value> =
        names.iter().map(|n| (n.clone(), json!({"type": "integer"}))).collect();
    let text = |keys: &[usize]| {
        let members: Vec<String> = keys.iter().map(|&k| format!("\"p{k}\":1")).collect();
        format!("{{{}}}", members.join(","))
    };
    for order in [PropertyOrder::Schema, PropertyOrder::Any] {
        let opts = JsonSchemaOptions { property_order: order, ..JsonSchemaOptions::default() };
        for (min, max) in [(1, Some(1)), (0, Some(1)), (2, Some(5)), (1, None), (3, Some(3))] {
            let mut schema = json!({"type": "object", "properties": properties,
                "additionalProperties": false, "minProperties": min});
            if let Some(max) = max {
                schema["maxProperties"] = json!(max);
            }
            let c = json_schema_to_grammar(&schema, &opts)
                .unwrap_or_else(|e| panic!("{order:?}: {schema}: {e:?}"));
            let m = ReferenceMatcher::new(&c.grammar);
            let within = |n: usize| n as u64 >= min && max.is_none_or(|max| n as u64 <= max);
            for n in 0..=10 {
                let ascending: Vec<usize> = (0..n).collect();
                assert_eq!(m.matches(&text(&ascending)), within(n), "{order:?}: {schema}, {n}");
                let descending: Vec<usize> = (0..n).rev().collect();
                let expected = within(n) && (order == PropertyOrder::Any || n < 2);
                assert_eq!(m.matches(&text(&descending)), expected, "{order:?}: {schema}, {n}");
            }
            // Written twice: two members as the count goes (with `minProperties: 1` and
            // nothing required, the first property present is required instead).
            if order == PropertyOrder::Any && min != 1 {
                assert_eq!(m.matches(&text(&[9, 9])), within(2), "{schema}");
            }
        }
    }
}

#[test]
fn identifiers_under_unknown_keywords_matter_only_to_references_by_uri() {
    // Examples holding `id` values, and only `#/...` references: the keyword is ignored.
    let schema = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/n"}},
        "$defs": {"n": {"type": "integer"}},
        "docs": {"examples": [{"id": "7312"}]}
    });
    assert!(accepts(schema.clone(), r#"{"a": 1}"#));
    assert!(!accepts(schema, r#"{"a": "x"}"#));
    // A reference by URI could resolve into the ignored keyword: refused, with its pointer.
    let schema = json!({
        "$id": "https://example.com/root.json",
        "properties": {"a": {"$ref": "https://example.com/inner.json"}},
        "docs": {"$id": "https://example.com/inner.json", "type": "integer"}
    });
    let e = json_schema_to_grammar(&schema, &JsonSchemaOptions::default()).unwrap_err();
    let d = e.errors().next().unwrap();
    assert_eq!(d.pointer.as_deref(), Some("/docs"), "{d}");
}
