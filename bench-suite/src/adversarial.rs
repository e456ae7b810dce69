//! The adversarial table: grammars and JSON Schemas built to hurt a grammar engine (deep
//! `$ref` chains, recursion, nested `oneOf`, huge enums, patterns that make backtracking
//! engines exponential, huge bounds, deep nesting, ambiguity), each with the outcome
//! grammask must give: compiled (then a valid instance matches and invalid ones are
//! rejected), or refused with a named limit or an `unsupported` diagnostic naming the
//! keyword and its JSON pointer.
//!
//! One table for two readers: the test `tests/adversarial_schemas.rs` (which includes
//! this file) checks every outcome, and `grammask-bench adversarial` measures compile
//! time and per-step mask times on a real vocabulary. The module depends only on
//! `grammask` and `serde_json`.

use grammask::{CompileError, Compiler, GrammarFormat, Matcher};
use serde_json::{json, Value};

/// What a row must give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Compiles; `valid` matches, every `invalid` is rejected.
    Compiled,
    /// Refused with this limit named (`limit: NAME`).
    Limit(&'static str),
    /// Refused as unsupported: the message names `keyword`, at JSON pointer `pointer`.
    Unsupported {
        /// The keyword the message names.
        keyword: &'static str,
        /// Its JSON pointer.
        pointer: &'static str,
    },
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct Case {
    /// A short name.
    pub name: String,
    /// The grammar's format.
    pub format: GrammarFormat,
    /// The grammar text (GBNF, a regex or a JSON Schema).
    pub grammar: String,
    /// A document in the language (for compiled rows).
    pub valid: String,
    /// Documents outside the language.
    pub invalid: Vec<String>,
    /// The outcome.
    pub expect: Expect,
}

fn case(
    name: impl Into<String>,
    format: GrammarFormat,
    grammar: impl Into<String>,
    valid: impl Into<String>,
    invalid: &[&str],
    expect: Expect,
) -> Case {
    Case {
        name: name.into(),
        format,
        grammar: grammar.into(),
        valid: valid.into(),
        invalid: invalid.iter().map(|s| s.to_string()).collect(),
        expect,
    }
}

fn schema(
    name: impl Into<String>,
    schema: Value,
    valid: impl Into<String>,
    invalid: &[&str],
    expect: Expect,
) -> Case {
    case(name, GrammarFormat::JsonSchema, schema.to_string(), valid, invalid, expect)
}

fn pattern(p: &str, valid: &str, invalid: &[&str]) -> Case {
    let valid = Value::String(valid.to_string()).to_string();
    let invalid: Vec<String> =
        invalid.iter().map(|s| Value::String(s.to_string()).to_string()).collect();
    let invalid: Vec<&str> = invalid.iter().map(String::as_str).collect();
    schema(
        format!("pattern {p}"),
        json!({"type": "string", "pattern": p}),
        valid,
        &invalid,
        Expect::Compiled,
    )
}

/// `$defs` d0 -> d1 -> ... -> d{n-1} -> integer, the root a `$ref` to d0.
fn ref_chain(n: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        let def = if i + 1 == n {
            json!({"type": "integer"})
        } else {
            json!({"$ref": format!("#/$defs/d{}", i + 1)})
        };
        defs.insert(format!("d{i}"), def);
    }
    json!({"$defs": defs, "$ref": "#/$defs/d0"})
}

/// `$defs` d0 .. d{n-1}, each `allOf: [$ref next]` with `minimum: 0` (so each is merged
/// into its referrer, not referenced), the last an integer; the root at most 9.
fn all_of_chain(n: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..n {
        let def = if i + 1 == n {
            json!({"type": "integer"})
        } else {
            json!({"allOf": [{"$ref": format!("#/$defs/d{}", i + 1)}], "minimum": 0})
        };
        defs.insert(format!("d{i}"), def);
    }
    json!({"$defs": defs, "allOf": [{"$ref": "#/$defs/d0"}], "maximum": 9})
}

/// Arrays nested `n` deep around integers.
fn nested_arrays(n: usize) -> Value {
    (0..n).fold(json!({"type": "integer"}), |inner, _| json!({"type": "array", "items": inner}))
}

/// `oneOf` nested `n` deep; each level also offers an overlapping alternative (a string
/// of at most `level + 1` characters, which the deeper levels' strings overlap).
fn nested_one_of(n: usize) -> Value {
    (0..n).fold(json!({"type": "integer"}), |inner, level| {
        json!({"oneOf": [inner, {"type": "string", "maxLength": level + 1}, {"type": "null"}]})
    })
}

/// `anyOf` nested `n` deep, each level overlapping the deeper ones (strings).
fn nested_any_of(n: usize) -> Value {
    (0..n).fold(json!({"type": "integer"}), |inner, level| {
        json!({"anyOf": [inner, {"type": "string", "maxLength": level + 1}, {"type": "null"}]})
    })
}

/// Every row.
pub fn cases() -> Vec<Case> {
    use Expect::*;
    use GrammarFormat::{Gbnf, Regex};
    let words: Vec<String> = (0..10_000).map(|i| format!("w{i}")).collect();
    let ints: Vec<i64> = (0..10_000).map(|i| i * 7 - 20_000).collect();
    let list = (0..200)
        .fold("null".to_string(), |tail, i| format!("{{\"head\": \"n{i}\", \"tail\": {tail}}}"));
    let deep_array = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    let alternatives: Vec<String> = (0..10_000).map(|i| format!("\"w{i}x\"")).collect();
    let item = "(\"{\" [a-z]+ \":\" [0-9]{1,3} \"}\" | \"[\" [0-9]+ \"]\" | \"x\" [a-f0-9]{8})";
    vec![
        // $ref chains and recursion.
        schema("$ref chain of 500", ref_chain(500), "42", &["\"x\"", "4.5"], Compiled),
        schema("$ref chain of 5000", ref_chain(5000), "42", &["\"x\"", "[]"], Compiled),
        schema("allOf $ref chain of 500", all_of_chain(500), "", &[], Limit("schema_depth")),
        schema("allOf $ref chain of 40", all_of_chain(40), "7", &["-1", "10", "2.5"], Compiled),
        schema(
            "recursive tree",
            json!({
                "$defs": {"node": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "integer"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
                    },
                    "required": ["value", "children"],
                    "additionalProperties": false
                }},
                "$ref": "#/$defs/node"
            }),
            r#"{"value": 1, "children": [{"value": 2, "children": [{"value": 3, "children": []}]}, {"value": 4, "children": []}]}"#,
            &[
                r#"{"children": []}"#,
                r#"{"value": 1, "children": [{"value": "x", "children": []}]}"#,
            ],
            Compiled,
        ),
        schema(
            "linked list, 200 nodes",
            json!({
                "$defs": {"list": {
                    "type": "object",
                    "properties": {
                        "head": {"type": "string"},
                        "tail": {"anyOf": [{"$ref": "#/$defs/list"}, {"type": "null"}]}
                    },
                    "required": ["head", "tail"],
                    "additionalProperties": false
                }},
                "$ref": "#/$defs/list"
            }),
            list,
            &[r#"{"head": "a"}"#, r#"{"head": "a", "tail": {"head": 1, "tail": null}}"#],
            Compiled,
        ),
        schema(
            "mutual recursion",
            json!({
                "$defs": {
                    "a": {"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}},
                          "additionalProperties": false},
                    "b": {"type": "array", "items": {"$ref": "#/$defs/a"}}
                },
                "$ref": "#/$defs/a"
            }),
            r#"{"b": [{"b": []}, {}, {"b": [{"b": [{}]}]}]}"#,
            &[r#"{"b": {}}"#, r#"{"b": [[]]}"#],
            Compiled,
        ),
        // anyOf/oneOf nested. A oneOf whose branches may overlap is made exclusive: each
        // branch and `not` the others (a nested oneOf fails with none or two of its
        // branches); nested deep, those alternatives pass the branch limit.
        schema(
            "anyOf of anyOf of anyOf",
            json!({"anyOf": [
                {"anyOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"type": "boolean"}]},
                {"type": "null"}
            ]}),
            "true",
            &["[]", "{}"],
            Compiled,
        ),
        schema(
            "anyOf nested 40 deep, overlapping",
            nested_any_of(40),
            "\"abc\"",
            &["[]", "1.5"],
            Compiled,
        ),
        schema(
            "oneOf of disjoint oneOf",
            json!({"oneOf": [
                {"type": "integer"},
                {"type": "object", "properties": {"k": {"const": "a"}, "v": {"oneOf": [
                    {"type": "string"}, {"type": "array", "items": {"type": "integer"}}
                ]}}, "required": ["k", "v"], "additionalProperties": false},
                {"type": "object", "properties": {"k": {"const": "b"}}, "required": ["k"],
                 "additionalProperties": false}
            ]}),
            r#"{"k": "a", "v": [1, 2]}"#,
            &[r#"{"k": "b", "v": 1}"#, r#"{"k": "a", "v": 1}"#],
            Compiled,
        ),
        schema(
            "oneOf of oneOf of oneOf",
            json!({"oneOf": [
                {"oneOf": [{"oneOf": [{"type": "integer"}, {"type": "string"}]}, {"type": "boolean"}]},
                {"type": "null"}
            ]}),
            "true",
            &["[]", "{}"],
            Compiled,
        ),
        schema(
            "oneOf nested 6 deep, overlapping",
            nested_one_of(6),
            "\"ab\"",
            // Whether a level holds alternates with the levels below it: the outermost
            // holds for "ab", not for "a" or null.
            &["\"a\"", "null", "[]", "1.5"],
            Compiled,
        ),
        schema(
            "oneOf nested 40 deep, overlapping",
            nested_one_of(40),
            "",
            &[],
            Limit("schema_branches"),
        ),
        schema(
            "oneOf with overlap (integer, number)",
            json!({"oneOf": [{"type": "integer"}, {"type": "number"}, {"type": "boolean"}]}),
            "-1.5",
            // Exactly one branch: an integer is a number too.
            &["\"x\"", "null", "1", "-20"],
            Compiled,
        ),
        schema(
            "oneOf with overlap that cannot be negated",
            json!({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}),
            "",
            &[],
            Unsupported { keyword: "non-integer numbers with bounds", pointer: "" },
        ),
        // Huge enums.
        schema(
            "enum of 10,000 strings",
            json!({"enum": words}),
            "\"w9999\"",
            &["\"w10000\"", "\"w\"", "9999"],
            Compiled,
        ),
        schema(
            "enum of 10,000 integers",
            json!({"enum": ints}),
            "-20000",
            &["-19999", "49994", "1.0"],
            Compiled,
        ),
        // Patterns that are exponential for backtracking engines: linear automata here.
        pattern(
            "^(a+)+$",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            &["aaaaaaaaaaaaaaaaaaaaaaaaaaaab", ""],
        ),
        pattern("^(a|a)*b$", "aaaaaaaaaaaaaaaaaaaaaaaab", &["aaaaaaaaaaaaaaaaaaaaaaaa"]),
        pattern("^(a|aa)+$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &["aaaab", ""]),
        pattern(
            "^(.*a){20}$",
            &"xa".repeat(20),
            &[&"xa".repeat(19), &format!("{}b", "a".repeat(30))],
        ),
        pattern("^(\\w+\\s?)*$", "hello world foo bar", &["hello  world", "hello world!"]),
        // Huge bounds.
        schema(
            "maxItems 100000",
            json!({"type": "array", "items": {"type": "integer"}, "maxItems": 100_000}),
            format!("[{}]", vec!["7"; 1000].join(",")),
            &["[1,\"a\"]", "[1,]"],
            Compiled,
        ),
        schema(
            "maxLength 100000",
            json!({"type": "string", "maxLength": 100_000}),
            format!("\"{}\"", "ab".repeat(2000)),
            &[&format!("\"{}\"", "a".repeat(100_001)), "\"a"],
            Compiled,
        ),
        schema(
            "minItems 1000 maxItems 100000 of objects",
            json!({"type": "array", "minItems": 1000, "maxItems": 100_000, "items": {
                "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "required": ["a"], "additionalProperties": false
            }}),
            format!("[{}]", vec![r#"{"a": 1, "b": "x"}"#; 1000].join(", ")),
            &[&format!("[{}]", vec![r#"{"a": 1}"#; 999].join(", "))],
            Compiled,
        ),
        // Deep nesting.
        schema(
            "arrays nested 60 deep",
            nested_arrays(60),
            deep_array(60),
            &[&deep_array(59), &deep_array(61)],
            Compiled,
        ),
        schema("arrays nested 1000 deep", nested_arrays(1000), "", &[], Limit("schema_depth")),
        // What the converter cannot express is refused with the keyword and its pointer.
        schema(
            "if/then/else with a conditional schema",
            json!({"type": "object", "properties": {"a": {
                "if": {"type": "integer"}, "then": {"minimum": 1}, "else": {"type": "string"}
            }}, "required": ["a"], "additionalProperties": false}),
            r#"{"a": 5}"#,
            &[r#"{"a": 0}"#, r#"{"a": true}"#, r#"{"a": 1.5}"#],
            Compiled,
        ),
        schema(
            "draft-03 divisibleBy",
            json!({"type": "object", "properties": {"a": {"type": "integer", "divisibleBy": 3}}}),
            "",
            &[],
            Unsupported { keyword: "divisibleBy", pointer: "/properties/a/divisibleBy" },
        ),
        schema(
            "$dynamicRef",
            json!({"$defs": {"t": {"$dynamicAnchor": "t", "type": "integer"}},
                   "type": "array", "items": {"$dynamicRef": "#t"}}),
            "",
            &[],
            Unsupported { keyword: "$dynamicRef", pointer: "/items/$dynamicRef" },
        ),
        // Grammars (shared with engine/tests/adversarial.rs).
        case(
            "llama.cpp stack blow-up",
            Gbnf,
            "root ::= [0-9] (a? a? a? a? a? [0-9])*\na ::= \"a\"",
            format!("0{}", "aa0".repeat(100)),
            &["0aaaaaa0", "a"],
            Compiled,
        ),
        case(
            "exponentially ambiguous",
            Gbnf,
            "root ::= e\ne ::= e e | \"a\" | e \"+\" e",
            "a+aa+a".repeat(10),
            &["a++a", "+a"],
            Compiled,
        ),
        case(
            "10,000 alternatives",
            Gbnf,
            format!("root ::= {}", alternatives.join(" | ")),
            "w9999x",
            &["w10000x", "w1"],
            Compiled,
        ),
        case(
            "literal of 100,000 bytes",
            Gbnf,
            format!("root ::= \"{}\"", "ab".repeat(50_000)),
            "ab".repeat(50_000),
            &[&"ab".repeat(49_999), "b"],
            Compiled,
        ),
        case(
            "a{0,100000}",
            Gbnf,
            "root ::= \"a\"{0,100000}",
            "a".repeat(5000),
            &[&"a".repeat(100_001), "b"],
            Compiled,
        ),
        case(
            "nested counted repetitions",
            Gbnf,
            "root ::= ((\"a\" \"b\"?){0,10}){0,10}",
            "ab".repeat(60),
            &[&"a".repeat(101)],
            Compiled,
        ),
        case(
            "large body repeated 5,000 times",
            Gbnf,
            format!("root ::= {item}{{0,5000}}"),
            "{ab:12}[7]xdeadbeef".repeat(50),
            &["{ab:1234}", "xdeadbee"],
            Compiled,
        ),
        case(
            "parentheses nested 999 deep",
            Gbnf,
            format!("root ::= {}\"a\"{}", "(".repeat(999), ")".repeat(999)),
            "a",
            &["aa", ""],
            Compiled,
        ),
        case(
            "parentheses nested 5000 deep",
            Gbnf,
            format!("root ::= {}\"a\"{}", "(".repeat(5000), ")".repeat(5000)),
            "",
            &[],
            Limit("max_nesting"),
        ),
        case(
            "alternatives nested 999 deep",
            Gbnf,
            format!("root ::= {}\"b\"{}", "(\"a\" | ".repeat(999), ")".repeat(999)),
            "b",
            &["ab", "c"],
            Compiled,
        ),
        case(
            "stars nested 400 deep",
            Gbnf,
            format!("root ::= {}\"b\"{}", "(\"a\" ".repeat(400), ")*".repeat(400)),
            // A "b" only after 400 "a"s (each level may also stop early).
            format!("{}baaa", "a".repeat(400)),
            &["b", "ab", "aaab"],
            Compiled,
        ),
        // A regex whose DFA is exponential in its count (2^n states).
        case(
            "[ab]*a[ab]{12} (DFA of 2^13 states)",
            Regex,
            "[ab]*a[ab]{12}",
            format!("bb{}", "a".repeat(13)),
            &[&"b".repeat(13), "abab"],
            Compiled,
        ),
        case(
            "[ab]*a[ab]{24} (DFA of 2^25 states)",
            Regex,
            "[ab]*a[ab]{24}",
            "",
            &[],
            Limit("automaton_states"),
        ),
    ]
}

/// Compiles a row: the compiled grammar, or the refusal as a message.
pub fn compile(
    compiler: &Compiler,
    case: &Case,
) -> Result<std::sync::Arc<grammask::CompiledGrammar>, CompileError> {
    match case.format {
        GrammarFormat::JsonSchema => {
            compiler.compile_json_schema(&case.grammar, &Default::default())
        }
        GrammarFormat::Regex => compiler.compile_regex(&case.grammar),
        GrammarFormat::Ebnf => compiler.compile_ebnf(&case.grammar),
        GrammarFormat::Gbnf => compiler.compile_gbnf(&case.grammar),
        GrammarFormat::StructuralTag => {
            let options = Default::default();
            let parse = grammask::syntax::parse_structural_tag(&case.grammar, &options, &|_| None);
            compiler.compile_grammar(&parse.map_err(CompileError::Grammar)?)
        }
    }
}

/// Whether a compile error is the refusal `expect` asks for.
pub fn refusal_matches(error: &CompileError, expect: &Expect) -> bool {
    use grammask::syntax::Category;
    match (error, expect) {
        (CompileError::Limit { name, .. }, Expect::Limit(want)) => name == want,
        (CompileError::Grammar(d), Expect::Limit(want)) => {
            d.errors().any(|e| e.category == Category::Limit(want))
        }
        (CompileError::Grammar(d), Expect::Unsupported { keyword, pointer }) => {
            d.errors().any(|e| {
                e.category == Category::Unsupported
                    && e.pointer.as_deref() == Some(*pointer)
                    && e.message.contains(keyword)
            })
        }
        _ => false,
    }
}

/// Checks a compiled row: the valid document matches, each invalid one is rejected.
/// The first disagreement, as a message.
pub fn check_documents(
    grammar: &std::sync::Arc<grammask::CompiledGrammar>,
    case: &Case,
) -> Result<(), String> {
    let matches = |text: &str| {
        let mut m = Matcher::new(grammar.clone());
        m.accept_bytes(text.as_bytes()).is_ok() && m.can_terminate()
    };
    if !matches(&case.valid) {
        return Err(format!("{}: the valid document is rejected", case.name));
    }
    for bad in &case.invalid {
        if matches(bad) {
            let shown: String = bad.chars().take(80).collect();
            return Err(format!("{}: the invalid document {shown:?} is accepted", case.name));
        }
    }
    Ok(())
}
