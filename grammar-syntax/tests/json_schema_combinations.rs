//! `not`, overlapping `oneOf` and `pattern`/`format` with lengths, checked against their
//! definitions: each combined schema must accept exactly the values its parts say.

use grammask_syntax::json_schema::matcher::ReferenceMatcher;
use grammask_syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions, PropertyOrder};
use serde_json::{json, Value};

/// Properties in any order, so that the answers do not depend on key order.
fn options() -> JsonSchemaOptions {
    JsonSchemaOptions { property_order: PropertyOrder::Any, ..JsonSchemaOptions::default() }
}

fn compile(schema: &Value) -> grammask_syntax::ir::Grammar {
    match json_schema_to_grammar(schema, &options()) {
        Ok(c) => c.grammar,
        Err(e) => panic!("{schema} refused: {e:?}"),
    }
}

fn accepts(g: &grammask_syntax::ir::Grammar, v: &Value) -> bool {
    ReferenceMatcher::new(g).matches(&serde_json::to_string(v).unwrap())
}

/// Values of every type, near the bounds the schemas below use.
fn values() -> Vec<Value> {
    let mut out = vec![
        json!(null),
        json!(true),
        json!(false),
        json!(-3),
        json!(-2),
        json!(0),
        json!(1),
        json!(2),
        json!(2.5),
        json!(3),
        json!(5),
        json!(5.5),
        json!(300),
        json!([]),
        json!([1]),
        json!([1, 2]),
        json!([1, "a", 3]),
        json!({}),
        json!({"a": 1}),
        json!({"a": "x"}),
        json!({"b": 1}),
        json!({"a": 1, "b": 2}),
        json!({"a": "x", "b": "y", "c": 3}),
        json!({"radius": 1}),
        json!({"length": 1, "width": 2}),
        json!({"radius": 1, "length": 1, "width": 2}),
        json!({"ab": 1, "B": true}),
        json!({"c": "x", "a": [1]}),
    ];
    for s in ["", "a", "ab", "abc", "abcd", "AB1", "x-y", "é", "ééé", "0123456789", "a\"b"] {
        out.push(json!(s));
    }
    out
}

#[test]
fn not_accepts_exactly_what_its_operand_rejects() {
    let operands = [
        json!({"type": "string"}),
        json!({"minLength": 2}),
        json!({"maxLength": 2}),
        json!({"type": "string", "minLength": 1, "maxLength": 3}),
        json!({"minimum": 2}),
        json!({"exclusiveMaximum": 3}),
        json!({"type": "integer", "minimum": -2, "maximum": 5}),
        json!({"required": ["a"]}),
        json!({"required": ["a", "b"]}),
        json!({"properties": {"a": {"type": "integer"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}),
        json!({"minProperties": 1}),
        json!({"maxProperties": 1}),
        json!({"minItems": 1}),
        json!({"maxItems": 1}),
        json!({"enum": ["a", "abc"]}),
        json!({"anyOf": [{"type": "integer"}, {"minLength": 3}]}),
        json!({"not": {"type": "array"}}),
        json!({"pattern": "^[a-z]+$"}),
        json!({"type": "string", "pattern": "^x-"}),
        json!({"pattern": "[0-9]"}),
        json!({"properties": {"a": {"not": {"type": "integer"}}}, "required": ["a"]}),
        json!({"patternProperties": {"^a": {"type": "integer"}}}),
        json!({"patternProperties": {"b": false}}),
        json!({"type": "object", "patternProperties": {"^[a-z]$": {"type": "string"}}, "additionalProperties": false}),
        json!({"properties": {"a": {}}, "patternProperties": {"^[cw]": {}}, "additionalProperties": false}),
        json!({"properties": {"b": {"not": {}}}, "patternProperties": {"^[a-z]*$": {}}, "additionalProperties": false}),
        json!({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}}),
        json!({"propertyNames": {"maxLength": 1}}),
        json!({"propertyNames": {"pattern": "^[a-z]+$"}}),
        json!({"oneOf": [{"type": "string"}, {"maxLength": 2}]}),
        json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}, {"maxProperties": 1}]}),
    ];
    let vals = values();
    for op in operands {
        let g = compile(&op);
        let n = compile(&json!({"not": op}));
        for v in &vals {
            assert_eq!(accepts(&n, v), !accepts(&g, v), "not {op} on {v}");
        }
    }
}

#[test]
fn members_several_nots_require_may_be_one_member_or_several() {
    // Each `not` requires a member of its own kind; one member may fit several.
    let parts = [
        json!({"not": {"patternProperties": {"^a": {"type": "integer"}}}}),
        json!({"not": {"patternProperties": {"^[ab]": {"type": "string"}}}}),
        json!({"not": {"additionalProperties": false, "properties": {"a": {}}}}),
        json!({"not": {"patternProperties": {"c": false}}}),
    ];
    let names = json!({"not": {"propertyNames": {"maxLength": 1}}});
    let mut pairs: Vec<(&Value, &Value)> = vec![(&parts[2], &names)];
    for (i, x) in parts.iter().enumerate() {
        pairs.extend(parts[i + 1..].iter().map(|y| (x, y)));
    }
    let vals = values();
    for (x, y) in pairs {
        let (gx, gy) = (compile(x), compile(y));
        let both = compile(&json!({"allOf": [x, y]}));
        for v in &vals {
            let expected = accepts(&gx, v) && accepts(&gy, v);
            assert_eq!(accepts(&both, v), expected, "allOf [{x}, {y}] on {v}");
        }
    }
}

#[test]
fn pattern_properties_of_several_merged_schemas() {
    let pairs = [
        (
            json!({"patternProperties": {"^a": {"type": "integer"}}}),
            json!({"patternProperties": {"b": {"minimum": 2}}, "additionalProperties": {"type": "string"}}),
        ),
        (
            json!({"patternProperties": {"^[a-c]": {"type": ["integer", "array"]}}, "additionalProperties": false}),
            json!({"properties": {"a": {"type": "array"}}, "patternProperties": {"^c": {"type": "integer"}}}),
        ),
    ];
    let mut vals = values();
    vals.extend([
        json!({"ab": 5}),
        json!({"b": 3, "z": "s"}),
        json!({"a": [1], "b": true}),
        json!({"a": [1], "c": 2}),
        json!({"a": [1], "c": [2]}),
        json!({"a": [1], "b": [], "c": 2}),
    ]);
    let mut both_accept = 0;
    for (x, y) in &pairs {
        let (gx, gy) = (compile(x), compile(y));
        let both = compile(&json!({"allOf": [x, y]}));
        for v in &vals {
            let expected = accepts(&gx, v) && accepts(&gy, v);
            assert_eq!(accepts(&both, v), expected, "allOf [{x}, {y}] on {v}");
            both_accept += usize::from(expected && v.as_object().is_some_and(|o| !o.is_empty()));
        }
    }
    assert!(both_accept >= 4, "too few objects both accept to say much: {both_accept}");
}

#[test]
fn overlapping_one_of_accepts_values_of_exactly_one_branch() {
    let groups = [
        json!([{"required": ["radius"]}, {"required": ["length", "width"]}]),
        json!([{"maximum": 2}, {"maximum": 5}]),
        json!([{"type": ["integer", "string"]}, {"type": ["string", "null"]}]),
        json!([{"type": "string"}, {"maxLength": 2}]),
        json!([{"enum": ["a", 1]}, {"type": "string"}]),
        json!([
            {"type": "object", "properties": {"a": {}}, "additionalProperties": false},
            {"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": false}
        ]),
        json!([
            {"properties": {"radius": {"type": "number"}}, "required": ["radius"], "additionalProperties": false},
            {"properties": {"radius": {}, "length": {}, "width": {}}, "additionalProperties": false}
        ]),
        json!([{"required": ["a"]}, {"required": ["b"]}, {"properties": {"a": {"type": "string"}}}]),
        json!([{"oneOf": [{"required": ["a"]}, {"maxProperties": 1}]}, {"required": ["b"]}]),
        json!([
            {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}, "additionalProperties": false},
            {"required": ["a"]}
        ]),
        json!([
            {"patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": {"type": "string"}},
            {"properties": {"b": {}}, "additionalProperties": false}
        ]),
        json!([
            {"patternProperties": {"^a": {"type": "array"}, "b": {"type": "integer"}}},
            {"patternProperties": {"[bc]": {"type": "string"}}}
        ]),
    ];
    let vals = values();
    for branches in groups {
        let gs: Vec<_> = branches.as_array().unwrap().iter().map(compile).collect();
        let one_of = compile(&json!({"oneOf": branches}));
        for v in &vals {
            let n = gs.iter().filter(|g| accepts(g, v)).count();
            assert_eq!(accepts(&one_of, v), n == 1, "oneOf {branches} on {v}");
        }
    }
}

/// Every string of up to `n` characters over `alphabet`.
fn strings_over(alphabet: &[&str], n: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut frontier = vec![String::new()];
    for _ in 0..n {
        let next: Vec<String> =
            frontier.iter().flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}"))).collect();
        out.extend(next.iter().cloned());
        frontier = next;
    }
    out
}

#[test]
fn anchors_inside_alternations_and_groups_match_as_a_search() {
    // Shapes of real schemas (`^$|^...$` becomes `^(?:$|...$)` once the common `^` is
    // factored out) and the corner cases of anchors between other items.
    let patterns = [
        r"^$|^\+?([0-9 ()-]){2,4}$",
        r"^([0-9]{3})$|^(default)$",
        r"(^[_$]?[a-z]\w+$)|(^\[.*\]$|^\$$)",
        "^(a$|b)",
        "(^a|b$)",
        "(^|a)b",
        "a(b|$)",
        "^ab|ba$|c",
        "a^b",
        "a$b",
        "a?^b",
        "b$a?",
        "(^a|^b)(c$|$)",
        "^(?:a|b$)c?",
        r"^(\/?((\.{2})|([a-z0-9\-]*))($|\/))*$",
        "(^a)*b",
        "(a($|b))*c?",
        "(^a|b)+c",
        "x(^a)?b",
    ];
    let mut strings = strings_over(&["a", "b", "c", "1", "(", "$", "[", "]", "_", "/", "."], 3);
    let more = ["default", "(12)", "+123", "[ab]", "_ab", "abc", "cab", "/a/../b", "a/b/", "..//"];
    strings.extend(more.map(String::from));
    for p in patterns {
        let judge = regex::Regex::new(p).unwrap();
        let g = compile(&json!({"type": "string", "pattern": p}));
        for s in &strings {
            assert_eq!(accepts(&g, &json!(s)), judge.is_match(s), "pattern {p:?} on {s:?}");
        }
    }
    // Anchors under a repetition bounded above one stay refused, with the pattern's pointer.
    let e = json_schema_to_grammar(&json!({"pattern": "(^a|b){2,3}"}), &options()).unwrap_err();
    assert_eq!(e.errors().next().unwrap().pointer.as_deref(), Some("/pattern"));
}

#[test]
fn several_pattern_properties_cut_keys_into_regions() {
    // Each schema as a check on a value, so the answer is computed apart from the converter.
    let integer = |v: &Value| v.is_i64();
    let at_least_5 = |v: &Value| v.as_f64().is_none_or(|n| n >= 5.0);
    let string = |v: &Value| v.is_string();
    let boolean = |v: &Value| v.is_boolean();
    type Check<'c> = &'c dyn Fn(&Value) -> bool;
    let patterns: [(&str, Value, Check); 3] = [
        ("^a", json!({"type": "integer"}), &integer),
        ("b$", json!({"minimum": 5}), &at_least_5),
        ("c", json!({"type": "string"}), &string),
    ];
    let additional: [(Option<Value>, Option<Check>); 3] = [
        (None, None),
        (Some(json!(false)), Some(&|_: &Value| false)),
        (Some(json!({"type": "boolean"})), Some(&boolean)),
    ];
    let keys = ["a", "b", "ab", "ac", "cb", "x", "abc", "bca"];
    let values = [json!(1), json!(7), json!("s"), json!(true)];
    for (extra, extra_check) in &additional {
        for listed in [false, true] {
            let mut schema = json!({"type": "object", "patternProperties": {}});
            for (p, s, _) in &patterns {
                schema["patternProperties"][*p] = s.clone();
            }
            if let Some(e) = extra {
                schema["additionalProperties"] = e.clone();
            }
            if listed {
                schema["properties"] = json!({"ab": {"type": "integer"}});
            }
            let g = compile(&schema);
            let member_ok = |key: &str, v: &Value| {
                let mut matched = false;
                let mut ok = true;
                for (p, _, check) in &patterns {
                    if regex::Regex::new(p).unwrap().is_match(key) {
                        matched = true;
                        ok &= check(v);
                    }
                }
                if listed && key == "ab" {
                    return ok && integer(v);
                }
                if !matched {
                    ok &= extra_check.is_none_or(|c| c(v));
                }
                ok
            };
            for k1 in keys {
                for v1 in &values {
                    let one = json!({ k1: v1 });
                    assert_eq!(accepts(&g, &one), member_ok(k1, v1), "{schema} on {one}");
                    for k2 in keys.iter().filter(|&&k2| k2 != k1) {
                        let two = json!({ k1: v1, *k2: 7 });
                        let want = member_ok(k1, v1) && member_ok(k2, &json!(7));
                        assert_eq!(accepts(&g, &two), want, "{schema} on {two}");
                    }
                }
            }
        }
    }
}

#[test]
fn lengths_fold_into_patterns_and_formats() {
    let strings: Vec<String> = {
        let mut out = vec![String::new()];
        let alphabet = ["a", "Z", "0", "-", "é", " "];
        let mut frontier = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for s in &frontier {
                for c in alphabet {
                    next.push(format!("{s}{c}"));
                }
            }
            out.extend(next.iter().cloned());
            frontier = next;
        }
        out.extend(["a-b-c-d-e-f", "0000000000", "aaaaaaaaaaaaaaaaaaaa"].map(String::from));
        out
    };
    let patterns = [
        "^[a-z]+$",
        "^[a-z0-9-]*$",
        "[0-9]+",
        "^a",
        "Z$",
        "^(ab|cd)[0-9]{2}$",
        "^[a-zA-Z][a-zA-Z0-9-]{0,30}$",
        "^a|0$",
        "^(?:é)+$",
    ];
    let bounds = [(0, Some(0)), (1, None), (2, Some(3)), (0, Some(2)), (4, Some(4)), (3, Some(40))];
    let mut compiled = 0;
    for p in patterns {
        let plain = compile(&json!({"type": "string", "pattern": p}));
        for (min, max) in bounds {
            let mut schema = json!({"type": "string", "pattern": p, "minLength": min});
            if let Some(m) = max {
                schema["maxLength"] = json!(m);
            }
            let g = match json_schema_to_grammar(&schema, &options()) {
                Ok(c) => c.grammar,
                // Refused with an explanation: several variable parts (`[0-9]+`
                // unanchored), never a wrong answer.
                Err(_) => continue,
            };
            compiled += 1;
            for s in &strings {
                let v = json!(s);
                let n = s.chars().count() as u64;
                let want = accepts(&plain, &v) && n >= min && max.is_none_or(|m| n <= m);
                assert_eq!(accepts(&g, &v), want, "{schema} on {s:?}");
            }
        }
    }
    assert!(compiled >= 45, "only {compiled} of 54 pattern/length pairs compiled");
    // Shapes met in real schemas compile.
    for schema in [
        json!({"type": "string", "pattern": "^[0-9a-f]*$", "minLength": 32, "maxLength": 32}),
        json!({"type": "string", "format": "uuid", "minLength": 1}),
        json!({"type": "string", "pattern": "^[a-zA-Z]+$", "minLength": 2}),
        json!({"type": "string", "pattern": "[0-9]{10,10}", "minLength": 10, "maxLength": 10}),
    ] {
        compile(&schema);
    }
}

#[test]
fn if_then_else_is_a_choice_of_two_conditions() {
    let cases = [
        (json!({"required": ["a"]}), Some(json!({"required": ["b"]})), None),
        (
            json!({"type": "string"}),
            Some(json!({"minLength": 2})),
            Some(json!({"type": "integer"})),
        ),
        (
            json!({"properties": {"a": {"type": "integer"}}}),
            None,
            Some(json!({"maxProperties": 0})),
        ),
        (json!({"minimum": 2}), Some(json!({"maximum": 5})), Some(json!({"enum": [0, "a"]}))),
    ];
    let vals = values();
    for (cond, then, otherwise) in cases {
        let mut schema = json!({"if": cond});
        if let Some(t) = &then {
            schema["then"] = t.clone();
        }
        if let Some(e) = &otherwise {
            schema["else"] = e.clone();
        }
        let g = compile(&schema);
        let c = compile(&cond);
        let t = then.as_ref().map(compile);
        let e = otherwise.as_ref().map(compile);
        for v in &vals {
            let want = if accepts(&c, v) {
                t.as_ref().is_none_or(|t| accepts(t, v))
            } else {
                e.as_ref().is_none_or(|e| accepts(e, v))
            };
            assert_eq!(accepts(&g, v), want, "{schema} on {v}");
        }
    }
}

#[test]
fn dependencies_of_optional_properties_split_on_presence() {
    let vals = values();
    let required = json!({"dependentRequired": {"a": ["b"], "radius": ["length"]}});
    let g = compile(&required);
    for v in &vals {
        let want = match v.as_object() {
            Some(o) => {
                (!o.contains_key("a") || o.contains_key("b"))
                    && (!o.contains_key("radius") || o.contains_key("length"))
            }
            None => true,
        };
        assert_eq!(accepts(&g, v), want, "{required} on {v}");
    }
    let dep = json!({"type": "string"});
    let schemas = json!({"dependentSchemas": {"a": {"properties": {"b": dep}, "required": ["b"]}}});
    let g = compile(&schemas);
    for v in &vals {
        let want = match v.as_object() {
            Some(o) => !o.contains_key("a") || o.get("b").is_some_and(Value::is_string),
            None => true,
        };
        assert_eq!(accepts(&g, v), want, "{schemas} on {v}");
    }
}

#[test]
fn pattern_properties_beside_any_other_key() {
    let keys = [
        "", "a", "ab", "a_b", "A", "a1", "x-", "x-y", "xy", "S_", "S_1", "S", "é", "é_", "0", "12",
        "a\nb", "\"q\"",
    ];
    let patterns =
        ["^[a-z_]+$", "^[a-z]{1,2}$", "\\d+", ".*", ".+", "^x-", "^S_", "^.*$", "[a-z_0-9]*", "a"];
    let mut compiled = 0;
    for p in patterns {
        let schema = json!({"type": "object", "patternProperties": {p: {"type": "integer"}}, "additionalProperties": {"type": "string"}});
        let g = match json_schema_to_grammar(&schema, &options()) {
            Ok(c) => c.grammar,
            Err(_) => continue,
        };
        compiled += 1;
        let key_matches = compile(&json!({"type": "string", "pattern": p}));
        for k in keys {
            for v in [json!(1), json!("s")] {
                let doc = json!({k: v.clone()});
                let want =
                    if accepts(&key_matches, &json!(k)) { v.is_i64() } else { v.is_string() };
                assert_eq!(accepts(&g, &doc), want, "{schema} on {doc}");
            }
        }
        // Two keys, one of each kind when the pattern leaves room for both.
        let doc = json!({"ab": 1, "Zz9": "s"});
        let want = accepts(&key_matches, &json!("ab")) && !accepts(&key_matches, &json!("Zz9"));
        if want {
            assert!(accepts(&g, &doc), "{schema} on {doc}");
        }
    }
    assert_eq!(compiled, patterns.len(), "every pattern's complement is small");
    // Beside listed properties: a listed key takes its own schema (and the pattern's when
    // it matches), another key the pattern's or the additional schema.
    for p in patterns {
        let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "é": {}},
                            "patternProperties": {p: {"type": "integer"}},
                            "additionalProperties": {"type": "string"}});
        let g = compile(&schema);
        let key_matches = compile(&json!({"type": "string", "pattern": p}));
        for k in keys {
            for v in [json!(1), json!("s")] {
                let doc = json!({k: v.clone()});
                let want = match k {
                    "a" => v.is_i64(),
                    "é" => !accepts(&key_matches, &json!(k)) || v.is_i64(),
                    _ if accepts(&key_matches, &json!(k)) => v.is_i64(),
                    _ => v.is_string(),
                };
                assert_eq!(accepts(&g, &doc), want, "{schema} on {doc}");
            }
        }
    }
}

#[test]
fn enum_values_are_checked_against_object_and_array_keywords() {
    let cases = [
        (
            json!({"enum": [{"a": 1}, {"a": "x"}, {"b": 2}], "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
            vec![json!({"a": 1})],
        ),
        (
            json!({"enum": [[1, 2], [1, 1], [], ["a"]], "uniqueItems": true, "minItems": 1, "items": {"type": "integer"}}),
            vec![json!([1, 2])],
        ),
        (
            json!({"const": {"a": {"b": [1]}}, "properties": {"a": {"anyOf": [{"required": ["c"]}, {"properties": {"b": {"contains": {"const": 1}}}}]}}}),
            vec![json!({"a": {"b": [1]}})],
        ),
        (
            json!({"enum": [{"a": 1}, {"a": 2}], "not": {"properties": {"a": {"const": 2}}}}),
            vec![json!({"a": 1})],
        ),
        // Keywords whose failures a grammar cannot state, checked on each value.
        (json!({"enum": [7, 8, 9.5, "x"], "not": {"multipleOf": 2}}), vec![json!(7), json!(9.5)]),
        (
            json!({"enum": [4, 6, 9, 10, 15], "oneOf": [{"multipleOf": 2}, {"multipleOf": 3}], "not": {"multipleOf": 5}}),
            vec![json!(4), json!(9)],
        ),
        (
            json!({"enum": [1, 4, 9], "if": {"multipleOf": 3}, "then": {"minimum": 5}, "else": {"maximum": 2}}),
            vec![json!(1), json!(9)],
        ),
    ];
    for (schema, accepted) in cases {
        let g = compile(&schema);
        let listed: Vec<Value> = schema
            .get("enum")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_else(|| vec![schema["const"].clone()]);
        for v in &listed {
            assert_eq!(accepts(&g, v), accepted.contains(v), "{schema} on {v}");
        }
    }
}

#[test]
fn min_properties_one_beside_optional_properties() {
    let vals = values();
    for schema in [
        json!({"minProperties": 1, "properties": {"a": {"type": "integer"}, "b": {}}}),
        json!({"type": "object", "minProperties": 1, "properties": {"a": {}, "radius": {}}, "additionalProperties": false}),
        json!({"minProperties": 1, "maxProperties": 2, "properties": {"a": {}, "b": {"type": "integer"}}, "additionalProperties": false}),
    ] {
        let g = compile(&schema);
        let mut without = schema.clone();
        without.as_object_mut().unwrap().remove("minProperties");
        let plain = compile(&without);
        for v in &vals {
            let want = accepts(&plain, v) && v.as_object().is_none_or(|o| !o.is_empty());
            assert_eq!(accepts(&g, v), want, "{schema} on {v}");
        }
    }
}

#[test]
fn drafts_before_07_ignore_if_then_else() {
    let draft04 = json!({
        "$schema": "http://json-schema.org/draft-04/schema#",
        "if": {"type": "string"}, "then": {"minLength": 3}
    });
    let c = json_schema_to_grammar(&draft04, &options()).unwrap();
    assert!(ReferenceMatcher::new(&c.grammar).matches("\"a\""));
    assert!(c.warnings.iter().any(|w| w.pointer.as_deref() == Some("/if")), "{:?}", c.warnings);
    let draft07 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "if": {"type": "string"}, "then": {"minLength": 3}
    });
    let g = compile(&draft07);
    assert!(!accepts(&g, &json!("a")));
    assert!(accepts(&g, &json!("abc")));
}

/// The 12-member object of [`many_properties_in_any_order`]: integers `p0`..`p11`,
/// `p3`, `p7` and `p11` required, no other key.
fn twelve_members() -> Value {
    let props: serde_json::Map<String, Value> =
        (0..12).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
    json!({"type": "object", "properties": props, "required": ["p3", "p7", "p11"],
           "additionalProperties": false})
}

/// A document from `(key, value)` pairs, in that order (duplicates kept).
fn object_text(pairs: &[(String, Value)]) -> String {
    let members: Vec<String> = pairs.iter().map(|(k, v)| format!("{}:{v}", json!(k))).collect();
    format!("{{{}}}", members.join(","))
}

#[test]
fn many_properties_in_any_order() {
    let g = compile(&twelve_members());
    let m = ReferenceMatcher::new(&g);
    // Keys in many orders (a fixed pseudo-random sequence), with and without the
    // optional ones: accepted exactly when the required ones are there and each value is
    // an integer.
    let mut rng = grammask_fuzz::rng::XorShift::new(0x2545_f491);
    let mut next = move || rng.next_u64();
    for round in 0..300 {
        let mut keys: Vec<usize> = (0..12).filter(|_| next() % 3 != 0).collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        let bad_value = round % 7 == 0 && !keys.is_empty();
        let pairs: Vec<(String, Value)> = keys
            .iter()
            .enumerate()
            .map(|(j, &k)| {
                (format!("p{k}"), if bad_value && j == 0 { json!("x") } else { json!(k) })
            })
            .collect();
        let valid = [3, 7, 11].iter().all(|r| keys.contains(r)) && !bad_value;
        let text = object_text(&pairs);
        assert_eq!(m.matches(&text), valid, "{text}");
    }
    // Every member once, in reverse order; an unknown key is refused.
    let all: Vec<(String, Value)> = (0..12).rev().map(|i| (format!("p{i}"), json!(i))).collect();
    assert!(m.matches(&object_text(&all)));
    let mut unknown = all.clone();
    unknown.push(("q".into(), json!(1)));
    assert!(!m.matches(&object_text(&unknown)));
    // Tracked members (the required ones, then optional ones in schema order while
    // 2^tracked * 12 <= 1024: p0, p1, p2) cannot be written twice; the others may, each
    // occurrence's value checked.
    let with = |key: &str, value: Value| {
        let mut pairs = all.clone();
        pairs.push((key.to_string(), value));
        object_text(&pairs)
    };
    for tracked in ["p3", "p7", "p11", "p0", "p2"] {
        assert!(!m.matches(&with(tracked, json!(1))), "{tracked} twice");
    }
    assert!(m.matches(&with("p10", json!(1))));
    assert!(m.matches(&with("p5", json!(1))));
    assert!(!m.matches(&with("p10", json!("x"))));
}

#[test]
fn any_order_up_to_eight_members_writes_each_once() {
    let props: serde_json::Map<String, Value> =
        (0..8).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
    let g = compile(&json!({"type": "object", "properties": props}));
    let m = ReferenceMatcher::new(&g);
    for i in 0..8 {
        let key = format!("p{i}");
        assert!(
            m.matches(&object_text(&[(key.clone(), json!(1)), ("p7".into(), json!(2))]))
                == (i != 7)
        );
        assert!(!m.matches(&object_text(&[(key.clone(), json!(1)), (key, json!(1))])));
    }
}

#[test]
fn any_order_sequences_many_required_members_in_required_order() {
    // 13 required members (2^13 * 14 is past the bound): written in the order of
    // `required` (p12 first) or of `properties` (p0 first), the optional `q` anywhere
    // between them, at most once.
    let mut props: serde_json::Map<String, Value> =
        (0..13).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
    props.insert("q".into(), json!({"type": "string"}));
    let required: Vec<String> = (0..13).rev().map(|i| format!("p{i}")).collect();
    let g = compile(&json!({"type": "object", "properties": props, "required": required,
                            "additionalProperties": false}));
    let m = ReferenceMatcher::new(&g);
    let in_order: Vec<(String, Value)> =
        (0..13).rev().map(|i| (format!("p{i}"), json!(i))).collect();
    assert!(m.matches(&object_text(&in_order)));
    for at in [0, 5, 13] {
        let mut pairs = in_order.clone();
        pairs.insert(at, ("q".into(), json!("x")));
        assert!(m.matches(&object_text(&pairs)), "q at {at}");
        pairs.insert(at, ("q".into(), json!("y")));
        assert!(!m.matches(&object_text(&pairs)), "q twice at {at}");
    }
    let schema_order: Vec<(String, Value)> = (0..13).map(|i| (format!("p{i}"), json!(i))).collect();
    assert!(m.matches(&object_text(&schema_order)));
    let mut swapped = in_order.clone();
    swapped.swap(3, 4);
    assert!(!m.matches(&object_text(&swapped)));
    assert!(!m.matches(&object_text(&in_order[1..])));
    let mut twice = in_order.clone();
    twice.push(("p0".into(), json!(0)));
    assert!(!m.matches(&object_text(&twice)));
}

#[test]
fn any_order_refuses_too_many_required_members_with_their_pointer() {
    // 130 required members: 131 states of 130 member copies is past four times the bound.
    let props: serde_json::Map<String, Value> =
        (0..130).map(|i| (format!("p{i}"), json!({"type": "integer"}))).collect();
    let required: Vec<String> = (0..130).map(|i| format!("p{i}")).collect();
    let schema = json!({"properties": {"inner": {"type": "object", "properties": props,
                                                  "required": required}}});
    let err = json_schema_to_grammar(&schema, &options()).expect_err("130 required in any order");
    let text = format!("{err:?}");
    assert!(text.contains("/properties/inner"), "{text}");
    assert!(text.contains("130 required properties among 130 in any order"), "{text}");
    // With `lenient`, that object keeps the schema's order, with a warning.
    let lenient = JsonSchemaOptions { lenient: true, ..options() };
    let converted = json_schema_to_grammar(&schema, &lenient).expect("lenient");
    assert!(!converted.warnings.is_empty());
    let m = ReferenceMatcher::new(&converted.grammar);
    let inner: Vec<(String, Value)> = (0..130).map(|i| (format!("p{i}"), json!(i))).collect();
    assert!(m.matches(&format!("{{\"inner\":{}}}", object_text(&inner))));
    let reversed: Vec<(String, Value)> = inner.into_iter().rev().collect();
    assert!(!m.matches(&format!("{{\"inner\":{}}}", object_text(&reversed))));
}

#[test]
fn rules_no_value_satisfies_are_dropped_so_the_rest_compiles() {
    // `oneOf` of identical objects: no value matches exactly one, so `spec` is
    // unsatisfiable and so is every object requiring it; the schema (no `type`) still
    // accepts every other value. In any order the members become rules of their own.
    let object = json!({"type": "object", "properties": {"t": {"type": "string"}}});
    let schema = json!({
        "definitions": {"spec": {"oneOf": [object.clone(), object.clone()]}},
        "properties": {"spec": {"$ref": "#/definitions/spec"}, "other": {"type": "integer"}},
        "required": ["spec", "other"]
    });
    for opts in [options(), JsonSchemaOptions::default()] {
        let g = json_schema_to_grammar(&schema, &opts).expect("converts").grammar;
        let productive = grammask_syntax::analysis::productive(&g);
        assert!(productive.iter().all(|&p| p), "a rule that can never finish is left");
        assert!(grammask_syntax::validate::validate(&g).iter().all(|d| !d.is_error()));
        let m = ReferenceMatcher::new(&g);
        for v in [json!(1), json!("x"), json!(null), json!([1])] {
            assert!(m.matches(&v.to_string()), "{v}");
        }
        assert!(!m.matches(r#"{"other":1,"spec":{"t":"a"}}"#));
        assert!(!m.matches(r#"{"spec":{"t":"a"},"other":1}"#));
        assert!(!m.matches(r#"{"other":1}"#));
    }
}

/// `uniqueItems` over items of few listed values (enum, const, boolean, null, a oneOf of
/// consts): every array of those values, of every length up to 4 and in every order, is
/// accepted exactly when its items are distinct and the counts allow it.
#[test]
fn unique_items_over_few_listed_values() {
    let schemas = [
        json!({"type": "array", "uniqueItems": true, "items": {"enum": ["a", "b", "c", 1]}}),
        json!({"type": "array", "uniqueItems": true, "minItems": 2, "maxItems": 3,
               "items": {"enum": ["a", "b", "c", 1]}}),
        json!({"type": "array", "uniqueItems": true, "items": {"type": ["boolean", "null"]}}),
        json!({"type": "array", "uniqueItems": true,
               "items": {"oneOf": [{"const": "a"}, {"const": "b"}, {"const": 1.0}]}}),
        json!({"type": "array", "uniqueItems": true, "items": {"enum": ["a", "b", 1], "type": "string"}}),
    ];
    let pool =
        [json!("a"), json!("b"), json!("c"), json!(1), json!(true), json!(false), json!(null)];
    let mut arrays: Vec<Vec<Value>> = vec![vec![]];
    for _ in 0..4 {
        let longer: Vec<Vec<Value>> = arrays
            .iter()
            .filter(|a| a.len() == arrays.last().map_or(0, Vec::len))
            .flat_map(|a| pool.iter().map(move |v| [a.clone(), vec![v.clone()]].concat()))
            .collect();
        arrays.extend(longer);
    }
    for schema in &schemas {
        let g = compile(schema);
        let item_ok = |v: &Value| -> bool {
            let items = &schema["items"];
            if let Some(e) = items.get("enum") {
                let typed = items.get("type").is_none_or(|t| t == "string") || !v.is_string();
                return e.as_array().unwrap().contains(v)
                    && (items.get("type").is_none() || (typed && v.is_string()));
            }
            if let Some(branches) = items.get("oneOf") {
                return branches.as_array().unwrap().iter().any(|b| {
                    let c = &b["const"];
                    c == v || (c.is_f64() && v.as_f64() == c.as_f64() && v.is_number())
                });
            }
            v.is_boolean() || v.is_null()
        };
        let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = schema.get("maxItems").and_then(Value::as_u64).unwrap_or(99) as usize;
        for a in &arrays {
            let distinct = a.iter().enumerate().all(|(i, x)| !a[i + 1..].contains(x));
            let expected = distinct && a.iter().all(item_ok) && (min..=max).contains(&a.len());
            assert_eq!(accepts(&g, &json!(a)), expected, "{schema}: {}", json!(a));
        }
    }
    // Items that are not few listed values stay refused, with the keyword's pointer.
    let open = json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}});
    let e = json_schema_to_grammar(&open, &options()).unwrap_err();
    assert_eq!(e.errors().next().unwrap().pointer.as_deref(), Some("/uniqueItems"));
}
