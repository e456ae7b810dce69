#!/usr/bin/env python3
"""What XGrammar accepts under structural tags, as a fixture for grammask.

Writes tests/data/structural_tags/xgrammar.json: for every case below, the structural tag
(`{"type": "structural_tag", "format": {...}}`) and, for each string, what XGrammar says:

  - accepted:  the whole string is a complete output (accept_string succeeds and the
               matcher may end there, `is_terminated()` with terminate_without_stop_token);
  - prefix_ok: accept_string succeeds (the string is a prefix of some complete output).

Each case's tag is handed to `xgrammar.Grammar.from_structural_tag` as a JSON string and
compiled against an empty TokenizerInfo (string matching only, as xgrammar.testing's
`_is_grammar_accept_string` does). A fresh GrammarMatcher is used for every string.

Every string is listed with the answer expected from XGrammar's documentation and format
definitions. Where XGrammar answers otherwise, the string carries a `suspect` reason
(written below, next to the string) and the fixture records XGrammar's answer anyway.
A mismatch without a reason, or a reason without a mismatch, is reported on stderr and
makes the script exit with status 1 (after writing the file), so a different XGrammar
version shows up.

Cases in COMPILE_ERRORS are structural tags that XGrammar refuses at compile time; they
are not written to the fixture, only checked and printed.

Usage: python bench-suite/scripts/xgrammar_structural_tags.py [--out PATH]
(with xgrammar 0.2.9 installed).
"""
import argparse
import importlib.metadata
import json
import sys
from pathlib import Path

import xgrammar as xgr

XGRAMMAR_VERSION = "0.2.9"

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "tests" / "data" / "structural_tags" / "xgrammar.json"


# ---------------------------------------------------------------- format builders


def const(value):
    return {"type": "const_string", "value": value}


def any_text(excludes=None):
    f = {"type": "any_text"}
    if excludes is not None:
        f["excludes"] = excludes
    return f


def js(schema):
    return {"type": "json_schema", "json_schema": schema, "style": "json"}


def grammar(ebnf):
    return {"type": "grammar", "grammar": ebnf}


def regex(pattern):
    return {"type": "regex", "pattern": pattern}


def seq(*elements):
    return {"type": "sequence", "elements": list(elements)}


def or_(*elements):
    return {"type": "or", "elements": list(elements)}


def tag(begin, content, end):
    return {"type": "tag", "begin": begin, "content": content, "end": end}


def triggered(triggers, tags, at_least_one=False, stop_after_first=False, excludes=None):
    f = {
        "type": "triggered_tags",
        "triggers": triggers,
        "tags": tags,
        "at_least_one": at_least_one,
        "stop_after_first": stop_after_first,
    }
    if excludes is not None:
        f["excludes"] = excludes
    return f


def tws(tags, separator, at_least_one=False, stop_after_first=False):
    return {
        "type": "tags_with_separator",
        "tags": tags,
        "separator": separator,
        "at_least_one": at_least_one,
        "stop_after_first": stop_after_first,
    }


def dispatch(rules, loop=True, excludes=None):
    f = {"type": "dispatch", "rules": [list(r) for r in rules], "loop": loop}
    if excludes is not None:
        f["excludes"] = excludes
    return f


def st(fmt):
    return {"type": "structural_tag", "format": fmt}


# ---------------------------------------------------------------- schemas

INT = {"type": "integer"}
OBJ_A = {"type": "object", "properties": {"a": INT}, "required": ["a"]}
OBJ_AB = {
    "type": "object",
    "properties": {"a": INT, "b": {"type": "string"}},
    "required": ["a", "b"],
}
# The schema of XGrammar's docstring examples ({"name": "John", "age": 30}).
NAME_AGE = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
CITY_ARGS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
TZ_ARGS = {
    "type": "object",
    "properties": {"tz": {"type": "string", "enum": ["UTC", "CET"]}},
    "required": ["tz"],
}
# A Hermes/Qwen tool call as one JSON object: {"name": "get_weather", "arguments": {...}}.
HERMES_CALL = {
    "type": "object",
    "properties": {"name": {"const": "get_weather"}, "arguments": CITY_ARGS},
    "required": ["name", "arguments"],
}

# ---------------------------------------------------------------- cases
#
# Each string is (text, expected) or (text, expected, suspect): `expected` is the answer
# (complete output accepted?) that the documentation leads one to expect; `suspect` says
# why XGrammar's different answer looks wrong.

CASES = []


def case(name, source, note, fmt, strings):
    CASES.append({"name": name, "source": source, "note": note, "tag": st(fmt), "strings": strings})


# --- const_string

case("const-basic", "crafted", "const_string matches exactly its value",
     const("Hello, World!"),
     [("Hello, World!", True), ("", False), ("Hello", False), ("Hello, World!!", False),
      ("hello, world!", False), (" Hello, World!", False)])

case("const-empty", "crafted", "const_string with an empty value matches only the empty string",
     const(""),
     [("", True), ("a", False), (" ", False)])

# --- json_schema (style json)

case("json-object-required-whitespace", "crafted",
     "object with two required properties: whitespace inside the value is free (spaces, tabs,"
     " newlines, any amount), none before or after it; properties in schema order;"
     " no extra properties",
     js(OBJ_AB),
     [('{"a":1,"b":"x"}', True), ('{"a": 1, "b": "x"}', True),
      ('{ "a" : 1 , "b" : "x" }', True), ('{\n  "a": 1,\n  "b": "x"\n}', True),
      ('{\t"a":\t1,"b":"x"}', True), ('{"a":1 ,"b":"x"}', True),
      ('{                        "a":1,"b":"x"}', True),
      ('{\r\n"a":1,\r\n"b":"x"\r\n}', True),
      (' {"a":1,"b":"x"}', False), ('{"a":1,"b":"x"} ', False), ('{"a":1,"b":"x"}\n', False),
      ('{"b":"x","a":1}', False), ('{"a":1}', False), ('{"a":1,"b":"x","c":2}', False),
      ('{"a":"1","b":"x"}', False), ('{"a":1,"b":"x",}', False), ("", False),
      ('{"a":1,"b":"x\\ny \\u00e9 \\""}', True), ('{"a":1,"b":"x\ny"}', False),
      ('{"a":1,"b":"héllo ✓ 東京"}', True)])

case("json-object-optional-property", "crafted",
     "one required and one optional property",
     js({"type": "object", "properties": {"a": INT, "b": {"type": "string"}}, "required": ["a"]}),
     [('{"a":1}', True), ('{"a":1,"b":"x"}', True), ('{"b":"x"}', False), ("{}", False),
      ('{"a":1,}', False), ('{"a":1,"b":null}', False)])

case("json-enum", "crafted", "enum of mixed JSON values",
     js({"enum": ["red", "green", 3, None]}),
     [('"red"', True), ('"green"', True), ("3", True), ("null", True), ('"blue"', False),
      ("red", False), ('"red" ', False), ("3.0", False), ('"Red"', False)])

case("json-integer-range", "crafted", "integer with minimum and maximum",
     js({"type": "integer", "minimum": 0, "maximum": 10}),
     [("0", True), ("7", True), ("10", True), ("11", False), ("-1", False), ("007", False),
      ("5.0", False), ("1e1", False), ("", False)])

case("json-integer-any", "crafted", "unbounded integer: sign, leading zeros, fractions",
     js(INT),
     [("0", True), ("-42", True), ("123456789", True),
      ("-0", True, "-0 is a valid JSON number and an integer (JSON Schema counts it as 0);"
                   " XGrammar's integer grammar rejects it"), ("01", False),
      ("+1", False), ("1.5", False), ("-", False)])

case("json-array-items", "crafted", "array of integers with minItems 1, maxItems 3",
     js({"type": "array", "items": INT, "minItems": 1, "maxItems": 3}),
     [("[1]", True), ("[1,2,3]", True), ("[ 1 , 2 ]", True), ("[\n1,\n2\n]", True),
      ("[]", False), ("[1,2,3,4]", False), ("[1,]", False), ('[1.5]', False), ('["1"]', False)])

case("json-nested", "crafted", "object holding an object holding an array of strings",
     js({"type": "object",
         "properties": {"user": {"type": "object",
                                 "properties": {"id": INT,
                                                "tags": {"type": "array",
                                                         "items": {"type": "string"}}},
                                 "required": ["id", "tags"]}},
         "required": ["user"]}),
     [('{"user":{"id":1,"tags":[]}}', True), ('{"user": {"id": 1, "tags": ["a", "b"]}}', True),
      ('{"user":{"id":1}}', False), ('{"user":{"tags":[],"id":1}}', False),
      ('{"user":{"id":1,"tags":[1]}}', False), ('{"user":null}', False)])

case("json-true-schema", "crafted", "json_schema true: any JSON value, still no surrounding whitespace",
     js(True),
     [("{}", True), ('[1,"a",{"b":null}]', True), ("true", True), ('"s"', True),
      ('{"k": [1, 2.5e3, false]}', True), ("x", False), ("", False), ("{} ", False),
      ("{'a':1}", False)])

# --- grammar (EBNF)

case("grammar-ebnf-sum", "crafted", "EBNF grammar with a root rule and a helper rule",
     grammar('root ::= term ("+" term)*\nterm ::= [0-9]+'),
     [("1", True), ("12+3", True), ("1+2+30", True), ("", False), ("1+", False),
      ("+1", False), ("1 + 2", False), ("a", False)])

case("grammar-in-tag", "crafted", "grammar as the content of a tag",
     tag("<calc>", grammar('root ::= [0-9]+ ("*" [0-9]+)?'), "</calc>"),
     [("<calc>6*7</calc>", True), ("<calc>42</calc>", True), ("<calc></calc>", False),
      ("<calc>6*</calc>", False), ("<calc>6*7", False), ("<calc>6*7</calc>\n", False)])

# --- regex

case("regex-email", "crafted", "regex with classes and an escaped dot",
     regex("[a-z]+@[a-z]+\\.com"),
     [("bob@ex.com", True), ("a@b.com", True), ("bob@ex.org", False), ("@ex.com", False),
      ("", False), ("Bob@ex.com", False), ("bob@excom", False)])

case("regex-quantifiers", "crafted", "regex with alternation, {m,n} and ?",
     regex("(ab|cd){2,3}x?"),
     [("abab", True), ("abcdx", True), ("cdcdcd", True), ("ab", False), ("abababab", False),
      ("ababxx", False), ("x", False)])

case("regex-in-sequence", "crafted", "const_string then regex",
     seq(const("ID-"), regex("[0-9]{3}")),
     [("ID-123", True), ("ID-12", False), ("ID-1234", False), ("123", False), ("ID-abc", False)])

# --- any_text

case("any-text-top", "crafted", "any_text alone at top level accepts everything",
     any_text(),
     [("", True), ("hello", True), ("héllo 東京 🎉", True), ("<tool_call>", True),
      ("multi\nline\ttext", True), ("</end>", True)])

case("any-text-excludes-top", "crafted", "any_text with excludes at top level",
     any_text(["bad", "<x>"]),
     [("good", True), ("", True), ("ba", True), ("<x", True), ("b a d", True), ("bad", False),
      ("xbadx", False), ("<x>", False), ("a<x>b", False)])

case("any-text-empty-exclude", "crafted", "any_text whose excludes list holds the empty string",
     any_text([""]),
     [("", True),
      ("a", True, "an empty exclude string makes every non-empty text rejected while the empty"
                  " text is accepted; it would more plausibly be ignored or refused at compile"
                  " time")])

case("tag-any-text", "crafted", "tag whose content is any_text: the first occurrence of end stops it",
     tag("<a>", any_text(), "</a>"),
     [("<a>x</a>", True), ("<a></a>", True), ("<a>a</</a>", True), ("<a>a<</a>", True),
      ("<a><a></a>", True), ("<a>héllo 🎉\nok</a>", True), ("<a>x</a>y", False),
      ("<a>x</a></a>", False), ("<a>x", False), ("x<a></a>", False), ("<a>x</a", False),
      ("", False)])

case("tag-any-text-end-list", "crafted", "tag with a list of end strings; any one of them ends it",
     tag("<r>", any_text(), ["</r>", "</answer>"]),
     [("<r>x</r>", True), ("<r>x</answer>", True), ("<r></r>", True), ("<r>x</answer></r>", False),
      ("<r>x</b>", False), ("<r>x</r></answer>", False)])

case("tag-end-list-prefix", "crafted", "end strings where one is a prefix of the other",
     tag("<a>", any_text(), ["</a>", "</a>!"]),
     [("<a>1</a>", True), ("<a>1</a>!", True), ("<a>1</a>!!", False), ("<a>1</a>?", False)])

case("tag-any-text-excludes", "crafted", "any_text with excludes inside a tag",
     tag("<t>", any_text(["<tool_call>"]), "</t>"),
     [("<t>ok</t>", True), ("<t>a<tool_</t>", True), ("<t>a<tool_call>b</t>", False),
      ("<t><tool_call></t>", False)])

case("tag-overlapping-end", "crafted",
     "end string that overlaps itself: the content ends at the first place the end occurs",
     tag("[", any_text(), "aab"),
     [("[aab", True), ("[aaab", True), ("[aaaab", True), ("[abab", False), ("[ab", False),
      ("[aaabaab", False)])

case("tag-empty-begin", "crafted", "tag with an empty begin",
     tag("", any_text(), "</t>"),
     [("abc</t>", True), ("</t>", True), ("abc", False), ("</t>x", False)])

case("tag-json-content", "crafted", "json_schema inside a tag: no whitespace around the value",
     tag("<j>", js(INT), "</j>"),
     [("<j>1</j>", True), ("<j>-7</j>", True), ("<j> 1</j>", False), ("<j>1 </j>", False),
      ("<j>\n1\n</j>", False), ("<j></j>", False)])

case("tag-json-end-list", "crafted", "json_schema inside a tag with two end strings",
     tag("<r>", js(OBJ_A), ["</r>", "</a>"]),
     [('<r>{"a":1}</r>', True), ('<r>{"a":1}</a>', True), ('<r>{"a":1}</b>', False)])

case("tag-nested", "crafted", "a tag inside a tag; the inner any_text is stopped by the inner end",
     tag("<o>", tag("<i>", any_text(), "</i>"), "</o>"),
     [("<o><i>x</i></o>", True), ("<o><i></i></o>", True), ("<o><i></o></i></o>", True),
      ("<o><i>x</o>", False), ("<o><i>x</i>y</o>", False), ("<o>x</o>", False)])

case("tag-nested-same-end", "crafted", "inner tag ended by the outer tag's end string",
     tag("<o>", tag("<i>", any_text(), "</o>"), "</o>"),
     [("<o><i>x</o></o>", True), ("<o><i></o></o>", True), ("<o><i>x</o>", False)])

# --- sequence

case("sequence-any-text-in-tag", "crafted",
     "sequence ending in any_text inside a tag: the tag's end stops the any_text",
     tag("<t>", seq(const("Answer: "), any_text()), "</t>"),
     [("<t>Answer: 42</t>", True), ("<t>Answer: </t>", True), ("<t>Answer: a\nb</t>", True),
      ("<t>42</t>", False), ("<t>Answer: 4</t>2</t>", False), ("<t>Answer: 42", False)])

case("sequence-any-text-middle", "crafted",
     "any_text in the middle of a top-level sequence: it may contain the text that follows it",
     seq(const("A:"), any_text(), const("!")),
     [("A:x!", True), ("A:!", True), ("A:x!y!", True), ("A:!!", True), ("A:x", False),
      ("x!", False)])

case("sequence-any-text-then-tag", "crafted", "any_text then a tag at top level",
     seq(any_text(), tag("<a>", js(INT), "</a>")),
     [("hi<a>1</a>", True), ("<a>1</a>", True), ("hi<a>1</a><a>2</a>", True),
      ("hi<a>x</a>", False), ("hi", False)])

# --- or / optional / star / plus / repeat

case("or-basic", "crafted", "or of two const_strings and a json_schema",
     or_(const("yes"), const("no"), js(OBJ_A)),
     [("yes", True), ("no", True), ('{"a":1}', True), ("maybe", False), ("", False),
      ("yesno", False)])

case("or-tags", "crafted", "or of two tags with any_text content",
     or_(tag("<a>", any_text(), "</a>"), tag("<b>", any_text(), "</b>")),
     [("<a>x</a>", True), ("<b>x</b>", True), ("<a>x</b>", False), ("<a>x</a><b>y</b>", False)])

case("optional-prefix", "crafted", "optional const_string before a const_string",
     seq({"type": "optional", "content": const("Mr. ")}, const("Smith")),
     [("Smith", True), ("Mr. Smith", True), ("Mr. Mr. Smith", False), ("Mr. ", False),
      ("", False)])

case("star-const", "crafted", "star of a const_string",
     {"type": "star", "content": const("ab")},
     [("", True), ("ab", True), ("abab", True), ("aba", False), ("ba", False)])

case("plus-tag", "crafted", "plus of a tag with any_text content",
     {"type": "plus", "content": tag("<i>", any_text(), "</i>")},
     [("<i>x</i>", True), ("<i>x</i><i>y</i>", True), ("", False), ("<i>x</i> <i>y</i>", False)])

case("repeat-bounded", "crafted", "repeat min 2 max 3",
     {"type": "repeat", "min": 2, "max": 3, "content": const("x")},
     [("xx", True), ("xxx", True), ("", False), ("x", False), ("xxxx", False)])

case("repeat-unbounded", "crafted", "repeat min 1 max -1 (no upper bound)",
     {"type": "repeat", "min": 1, "max": -1, "content": seq(const("a"), regex("[0-9]"))},
     [("a1", True), ("a1a2a3a4a5", True), ("", False), ("a", False), ("a1a", False)])

case("repeat-zero", "crafted", "repeat min 0 max 0 matches only the empty string",
     {"type": "repeat", "min": 0, "max": 0, "content": const("x")},
     [("", True), ("x", False)])

# --- triggered_tags

case("triggered-basic", "crafted",
     "one trigger, one tag: free text before, between and after tags; partial trigger at the"
     " end; trigger followed by a wrong body; trigger in free text after a completed tag",
     triggered(["<tool_call>"], [tag("<tool_call>", js(OBJ_A), "</tool_call>")]),
     [("", True), ("hi", True), ('<tool_call>{"a":1}</tool_call>', True),
      ('x<tool_call>{"a":1}</tool_call>y', True),
      ('a<tool_call>{"a":1}</tool_call>b<tool_call>{"a":2}</tool_call>c', True),
      ('<tool_call>{"a":1}</tool_call><tool_call>{"a":2}</tool_call>', True),
      ("hi <tool_ca", True), ("hi <tool_call", True), ("<", True), ("<tool_cal x", True),
      ('x<<tool_call>{"a":1}</tool_call>', True), ("unicode ünï 東京 🎉", True),
      ("hi <tool_call>", False), ("hi <tool_call>oops</tool_call>", False),
      ('<tool_call>{"a":1}', False), ('<tool_call> {"a":1}</tool_call>', False),
      ('<tool_call>{"a":1}</tool_call> then <tool_call>oops', False),
      ('<tool_call>{"a":1}</tool_call> then <tool_call>', False)])

case("triggered-at-least-one", "crafted",
     "at_least_one true, stop_after_first false: the output must start with a tag;"
     " free text is allowed after it",
     triggered(["<tool_call>"], [tag("<tool_call>", js(OBJ_A), "</tool_call>")],
               at_least_one=True),
     [('<tool_call>{"a":1}</tool_call>', True), ('<tool_call>{"a":1}</tool_call>y', True),
      ('<tool_call>{"a":1}</tool_call><tool_call>{"a":2}</tool_call>', True),
      ('<tool_call>{"a":1}</tool_call> x <tool_call>{"a":2}</tool_call> y', True),
      ("", False), ("hi", False), ('x<tool_call>{"a":1}</tool_call>', False),
      ("<tool_ca", False)])

case("triggered-stop-after-first", "crafted",
     "stop_after_first true, at_least_one false: text before the tag, nothing after the first tag",
     triggered(["<tool_call>"], [tag("<tool_call>", js(OBJ_A), "</tool_call>")],
               stop_after_first=True),
     [("", True), ("hi", True), ('<tool_call>{"a":1}</tool_call>', True),
      ('x<tool_call>{"a":1}</tool_call>', True), ("hi <tool_ca", True),
      ('<tool_call>{"a":1}</tool_call>y', False),
      ('<tool_call>{"a":1}</tool_call><tool_call>{"a":2}</tool_call>', False),
      ('<tool_call>{"a":1}</tool_call>\n', False)])

case("triggered-at-least-one-stop-after-first", "crafted",
     "at_least_one and stop_after_first: exactly one tag and nothing else",
     triggered(["<tool_call>"], [tag("<tool_call>", js(OBJ_A), "</tool_call>")],
               at_least_one=True, stop_after_first=True),
     [('<tool_call>{"a":1}</tool_call>', True), ('<tool_call>{ "a": 7 }</tool_call>', True),
      ("", False), ("hi", False), ('x<tool_call>{"a":1}</tool_call>', False),
      ('<tool_call>{"a":1}</tool_call>y', False),
      ('<tool_call>{"a":1}</tool_call><tool_call>{"a":2}</tool_call>', False)])

case("triggered-several-triggers", "crafted",
     "two triggers; after a trigger only the tags starting with that trigger may follow",
     triggered(["<f=", "<g>"],
               [tag("<f=a>", js(OBJ_A), "</f>"), tag("<f=b>", js(INT), "</f>"),
                tag("<g>", any_text(), "</g>")]),
     [('<f=a>{"a":1}</f>', True), ("<f=b>5</f>", True), ("<g>x</g>", True),
      ("<f=b>5</f> then <g>free</g> end", True), ("<g><f=a></g>", True),
      ("x <f", True), ('<f=a>{ "a" : 2 }</f>', True),
      ('<f=c>{"a":1}</f>', False), ("<f=a>5</f>", False), ("<f=b>{}</f>", False),
      ("<g>x", False), ("x <f=", False), ('<f=a>{"a":1}</f><f=', False),
      ("<f=b>5</f> text <f= more", False), ("<g=a>x</g>", True)])

case("triggered-excludes", "crafted",
     "triggered_tags excludes apply to the free text, not to tag contents",
     triggered(["<f>"], [tag("<f>", any_text(), "</f>")], excludes=["<think>", "BAD"]),
     [("ok", True), ("a<thin", True), ("a</think>", True), ("<f>BAD</f>", True),
      ("<f><think></f>", True), ("<f>ok</f>BA", True), ("a<think>b", False), ("BAD", False),
      ("<f>ok</f><think>", False), ("<f>ok</f>xBADx", False)])

case("triggered-any-text-tag", "crafted",
     "triggered tag whose content is any_text; the trigger inside the content is plain text",
     triggered(["<note>"], [tag("<note>", any_text(), "</note>")]),
     [("a<note>x</note>b", True), ("a<note>x<note>y</note>b", True),
      ("<note></note><note></note>", True), ("a<note>x", False), ("a<note>x</note", False)])

case("triggered-unicode-trigger", "crafted", "non-ASCII trigger and tag strings",
     triggered(["「"], [tag("「call」", js(INT), "「end」")]),
     [("héllo 「call」12「end」 ok", True), ("「call」-3「end」", True), ("「x", False),
      ("「call」x「end」", False)])

case("triggered-in-tag", "crafted",
     "triggered_tags as a tag's content: the tag's end ends its free text",
     tag("<a>", triggered(["<f>"], [tag("<f>", const("1"), "</f>")]), "</a>"),
     [("<a>x</a>", True), ("<a>x<f>1</f>y</a>", True), ("<a>x</a>y</a>", False),
      ("<a>x</a></a>", False), ("<a></a>", True), ("<a>x<f>2</f></a>", False)])

case("dispatch-in-tag-no-excludes", "crafted",
     "dispatch as a tag's content without the end among its excludes: the free text is not"
     " cut at the end",
     tag("<d>", dispatch([("@@", const("ok"))]), "</d>"),
     [("<d>x</d>", True), ("<d>x</d>y</d>", True), ("<d>x@@ok</d>", True), ("<d>x@@no</d>", False)])

case("triggered-then-const", "crafted",
     "triggered_tags followed by a const_string in a sequence: its free text is not cut there",
     seq(triggered(["<f>"], [tag("<f>", const("1"), "</f>")]), const("END")),
     [("xEND", True), ("xENDyEND", True), ("x<f>1</f>END", True), ("x<f>2</f>END", False)])

# --- tags_with_separator

case("tws-basic", "crafted",
     "tags_with_separator: zero or more tags separated by the separator, nothing else",
     tws([tag("<a>", js(OBJ_A), "</a>"), tag("<b>", any_text(), "</b>")], ","),
     [("", True), ('<a>{"a":1}</a>', True), ('<a>{"a":1}</a>,<b>x</b>', True),
      ("<b>x</b>,<b>y</b>,<b>z</b>", True), ("<b>,</b>,<b></b>", True),
      ('<a>{"a":1}</a>,', False), ('<a>{"a":1}</a><b>x</b>', False), (" <b>x</b>", False),
      ("<b>x</b>y", False), ("<b>x</b>, <b>y</b>", False), (",", False)])

case("tws-at-least-one", "crafted", "tags_with_separator with at_least_one: the empty string is rejected",
     tws([tag("<a>", js(OBJ_A), "</a>"), tag("<b>", any_text(), "</b>")], ",",
         at_least_one=True),
     [('<a>{"a":1}</a>', True), ("<b>x</b>,<b>y</b>", True), ("", False),
      ('<a>{"a":1}</a>,', False), ("x", False)])

case("tws-stop-after-first", "crafted", "tags_with_separator with stop_after_first: at most one tag",
     tws([tag("<a>", js(OBJ_A), "</a>"), tag("<b>", any_text(), "</b>")], ",",
         stop_after_first=True),
     [("", True), ('<a>{"a":1}</a>', True), ("<b>x</b>", True),
      ('<a>{"a":1}</a>,<b>x</b>', False), ('<a>{"a":1}</a>,', False)])

case("tws-at-least-one-stop-after-first", "crafted", "exactly one tag",
     tws([tag("<b>", any_text(), "</b>")], "\n", at_least_one=True, stop_after_first=True),
     [("<b>x</b>", True), ("", False), ("<b>x</b>\n<b>y</b>", False)])

case("tws-empty-separator", "crafted", "tags_with_separator with an empty separator",
     tws([tag("<b>", any_text(), "</b>")], ""),
     [("", True), ("<b>x</b><b>y</b>", True), ("<b>x</b> <b>y</b>", False)])

# --- dispatch

DISPATCH_RULES = [("<f>", tag("", js(INT), "</f>")), ("@@", const("ok"))]

case("dispatch-loop", "crafted",
     "dispatch with loop true: free text, and after each pattern its format, repeatedly",
     dispatch(DISPATCH_RULES, loop=True),
     [("", True), ("hello", True), ("<f>1</f>", True), ("x<f>1</f>y", True),
      ("x<f>1</f>y<f>2</f>", True), ("x@@ok", True), ("x@@ok tail @@ok", True),
      ("x<f", True), ("x@", True), ("x@@no", False), ("<f>x</f>", False), ("x<f>1", False)])

case("dispatch-no-loop", "crafted", "dispatch with loop false: the output ends after the first dispatched format",
     dispatch(DISPATCH_RULES, loop=False),
     [("", True), ("hello", True), ("<f>1</f>", True), ("x@@ok", True), ("x<f", True),
      ("x<f>1</f>y", False), ("x@@ok tail", False), ("x@@ok@@ok", False)])

case("dispatch-excludes", "crafted", "dispatch with excludes on the free text",
     dispatch(DISPATCH_RULES, loop=True, excludes=["STOP"]),
     [("abc", True), ("STO", True), ("<f>1</f>ST", True), ("abSTOP", False),
      ("<f>1</f>STOP", False)])

case("dispatch-in-tag", "crafted",
     "dispatch inside a tag, excluding the tag's end string so that the end stops the free text",
     tag("<d>", dispatch([("<f>", tag("", js(INT), "</f>"))], excludes=["</d>"]), "</d>"),
     [("<d>x</d>", True), ("<d>x<f>1</f>y</d>", True), ("<d></d>", True), ("<d>x</d>y", False),
      ("<d>x<f>y</d>", False)])

case("dispatch-json-direct", "crafted", "dispatch whose format is a bare json_schema",
     dispatch([("CALL:", js(OBJ_A))]),
     [('CALL:{"a":1}', True), ('x CALL:{"a":1} y', True), ("CALL:nope", False),
      ('CALL: {"a":1}', False)])

# --- typical tool-call shapes

case("hermes-qwen-tool-call", "crafted",
     "Hermes/Qwen tool call: trigger <tool_call>, the whole call object as one json_schema",
     triggered(["<tool_call>"], [tag("<tool_call>\n", js(HERMES_CALL), "\n</tool_call>")]),
     [('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>', True),
      ('Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\nDone.', True),
      ('<tool_call>\n{"name":"get_weather","arguments":{"city":"Oslo"}}\n</tool_call>', True),
      ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}\n</tool_call>', True),
      ("Let me check <tool_ca", True),
      ('<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>', False),
      ('<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call>', False),
      ('<tool_call>\n{"arguments": {"city": "Oslo"}, "name": "get_weather"}\n</tool_call>', False),
      ('<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>', False),
      ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}}\n</tool_call>', False),
      ("<tool_call>\n", False)])

case("llama31-json-tool-call", "crafted",
     "Llama-3.1 JSON tool call, shaped as XGrammar's built-in llama tag (end is the closing brace)",
     triggered(['{"name": '],
               [tag('{"name": "get_weather", "parameters": ', js(CITY_ARGS), "}"),
                tag('{"name": "get_time", "parameters": ', js(TZ_ARGS), "}")],
               excludes=["<think>", "</think>"]),
     [('{"name": "get_weather", "parameters": {"city": "Oslo"}}', True),
      ('{"name": "get_time", "parameters": {"tz": "UTC"}}', True),
      ('Calling: {"name": "get_time", "parameters": {"tz": "CET"}} done', True),
      ('{"name": "get_time", "parameters": {"tz": "PST"}}', False),
      ('{"name": "get_weather", "parameters": {"city": "Oslo"} }', False),
      ('{"name":"get_weather", "parameters": {"city": "Oslo"}}', True),
      ('{"name": "other", "parameters": {}}', False),
      ("<think>x</think>", False)])

case("function-tag-tool-call", "crafted", "<function=name>{...}</function> calls, two functions",
     triggered(["<function="],
               [tag("<function=get_weather>", js(CITY_ARGS), "</function>"),
                tag("<function=get_time>", js(TZ_ARGS), "</function>")]),
     [('<function=get_weather>{"city": "Oslo"}</function>', True),
      ('a<function=get_time>{"tz":"UTC"}</function>b<function=get_weather>{"city":"x"}</function>', True),
      ('<function=get_weather>{"tz": "UTC"}</function>', False),
      ('<function=get_news>{}</function>', False),
      ('<function=get_weather>{"city": "Oslo"}', False),
      ("<function=get_wea", False)])

case("reasoning-then-tool-calls", "crafted",
     "reasoning prefix: tag <think> any_text </think>, then triggered_tags",
     seq(tag("<think>", any_text(), "</think>"),
         triggered(["<tool_call>"], [tag("<tool_call>", js(INT), "</tool_call>")])),
     [("<think>hmm</think>", True), ("<think>hmm</think>answer", True),
      ("<think></think><tool_call>1</tool_call>", True),
      ("<think>a<tool_call>x</think>ok", True), ("<think>hmm</think><think>", True),
      ("<think>多语言</think>答案<tool_call>2</tool_call>。", True),
      ("answer", False), ("<think>hmm", False), ("<think>hmm</think>x<tool_call>", False),
      ("<think>hmm</think><tool_call>x</tool_call>", False), ("", False)])

case("builtin-qwen3-shape", "crafted",
     "the shape of XGrammar's built-in qwen_3 tag (reasoning auto): optional think block with"
     " excludes and a \\n\\n suffix, then tool calls whose begin includes the name",
     seq({"type": "optional",
          "content": seq(tag("<think>", any_text(["<think>", "</think>"]), "</think>"),
                         const("\n\n"))},
         triggered(["<tool_call>"],
                   [tag('<tool_call>\n{"name": "get_weather", "arguments": ', js(CITY_ARGS),
                        "}\n</tool_call>")],
                   excludes=["<think>", "</think>"])),
     [("Hello", True), ("", True), ("<think>plan</think>\n\nHello", True),
      ('<think>x</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>', True),
      ("<think>plan</think>Hello", False), ("<think>a<think>b</think>\n\n", False),
      ("Hello</think>", False),
      ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>', False)])

# --- XGrammar's documented examples (tags reproduced from docs/tutorials/structural_tag.md,
# the docstrings of structural_tag.py and docs/tutorials/advanced_structural_tag.md). Tags
# inside triggered_tags / tags_with_separator are written without "type", as in the docs.


def dtag(begin, content, end):
    return {"begin": begin, "content": content, "end": end}


DOC_FUNC_TAGS = [dtag("<function=func1>", js(NAME_AGE), "</function>"),
                 dtag("<function=func2>", js(NAME_AGE), "</function>")]
JOHN = '{"name": "John", "age": 30}'
JANE = '{"name": "Jane", "age": 25}'

case("docs-triggered-tags", "xgrammar-docs",
     "TriggeredTagsFormat docstring / tutorial example with its three documented outputs",
     triggered(["<function="], DOC_FUNC_TAGS),
     [(f"<function=func1>{JOHN}</function>", True), (f"<function=func2>{JANE}</function>", True),
      (f"any_text<function=func1>{JOHN}</function>any_text1<function=func2>{JANE}</function>any_text2", True),
      (f"<function=func3>{JOHN}</function>", False),
      ('<function=func1>{"name": "John"}</function>', False),
      ('<function=func1>{"age": 30, "name": "John"}</function>', False)])

case("docs-tags-with-separator", "xgrammar-docs",
     "TagsWithSeparatorFormat docstring example: empty string and the documented outputs",
     tws(DOC_FUNC_TAGS, ","),
     [("", True), (f"<function=func1>{JOHN}</function>", True),
      (f"<function=func1>{JOHN}</function>,<function=func2>{JANE}</function>", True),
      (f"<function=func1>{JOHN}</function>,<function=func2>{JANE}</function>,<function=func1>{JOHN}</function>", True),
      (f"x<function=func1>{JOHN}</function>", False),
      (f"<function=func1>{JOHN}</function>,", False)])

case("docs-llama-json", "xgrammar-docs",
     "tutorial example 1, Llama JSON-based tool calling",
     triggered(['{"name":'],
               [dtag('{"name": "func1", "parameters": ', js(NAME_AGE), "}"),
                dtag('{"name": "func2", "parameters": ', js(NAME_AGE), "}")]),
     [(f'{{"name": "func1", "parameters": {JOHN}}}', True),
      (f'ok {{"name": "func2", "parameters": {JANE}}} ok', True),
      (f'{{"name": "func3", "parameters": {JOHN}}}', False),
      ('{"name" : "func1"}', True)])

case("docs-llama-custom", "xgrammar-docs",
     "tutorial example 1, Llama user-defined custom tool calling <function=...>",
     triggered(["<function="], DOC_FUNC_TAGS),
     [(f"<function=func1>{JOHN}</function>", True), ("<function=", False),
      (f"<function=func1>{JOHN}</function>\n<function=func2>{JANE}</function>", True)])

case("docs-qwen-hermes", "xgrammar-docs", "tutorial example 1, Qwen 2.5/3 and Hermes",
     triggered(["<tool_call>"],
               [dtag('<tool_call>\n{"name": "func1", "arguments": ', js(NAME_AGE), "}\n</tool_call>"),
                dtag('<tool_call>\n{"name": "func2", "arguments": ', js(NAME_AGE), "}\n</tool_call>")]),
     [(f'<tool_call>\n{{"name": "func1", "arguments": {JOHN}}}\n</tool_call>', True),
      (f'Hi.\n<tool_call>\n{{"name": "func2", "arguments": {JANE}}}\n</tool_call>\n', True),
      (f'<tool_call>{{"name": "func1", "arguments": {JOHN}}}</tool_call>', False),
      (f'<tool_call>\n{{"name": "func1", "arguments": {JOHN} }}\n</tool_call>', False)])

DS_BEGIN, DS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL1 = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f1\n```jsonc\n"
DS_CALL2 = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f2\n```jsonc\n"
DS_CALL_END = "\n```<｜tool▁call▁end｜>"
DS_TAG = dtag(DS_BEGIN,
              {"type": "tags_with_separator", "separator": "\n",
               "tags": [dtag(DS_CALL1, js(OBJ_A), DS_CALL_END),
                        dtag(DS_CALL2, js(OBJ_A), DS_CALL_END)]},
              DS_END)

case("docs-deepseek", "xgrammar-docs",
     "tutorial example 1, DeepSeek: calls wrapped in special markers, separated by newlines"
     " (function names shortened to f1, f2)",
     {"type": "triggered_tags", "triggers": [DS_BEGIN], "tags": [DS_TAG], "stop_after_first": True},
     [(f'{DS_BEGIN}{DS_CALL1}{{"a":1}}{DS_CALL_END}{DS_END}', True),
      (f'{DS_BEGIN}{DS_CALL1}{{"a":1}}{DS_CALL_END}\n{DS_CALL2}{{"a":2}}{DS_CALL_END}{DS_END}', True),
      (f'Let me call.{DS_BEGIN}{DS_CALL2}{{"a":2}}{DS_CALL_END}{DS_END}', True),
      (f"{DS_BEGIN}{DS_END}", True),
      (f'{DS_BEGIN}{DS_CALL1}{{"a":1}}{DS_CALL_END}{DS_END} more', False),
      (f'{DS_BEGIN}{DS_CALL1}{{"a":1}}{DS_CALL_END}{DS_CALL2}{{"a":2}}{DS_CALL_END}{DS_END}', False)])

PHI_TAG = dtag("<|tool_call|>[",
               {"type": "tags_with_separator", "separator": ", ",
                "tags": [dtag('{"name": "function_name_1", "arguments": ', js(OBJ_A), "}"),
                         dtag('{"name": "function_name_2", "arguments": ', js(OBJ_A), "}")]},
               "]<|/tool_call|>")

case("docs-phi4-mini", "xgrammar-docs", "tutorial example 1, Phi-4-mini list of calls",
     {"type": "triggered_tags", "triggers": ["<|tool_call|>"], "tags": [PHI_TAG],
      "stop_after_first": True},
     [('<|tool_call|>[{"name": "function_name_1", "arguments": {"a":1}}]<|/tool_call|>', True),
      ('<|tool_call|>[{"name": "function_name_1", "arguments": {"a":1}}, {"name": "function_name_2", "arguments": {"a":2}}]<|/tool_call|>', True),
      ('<|tool_call|>[]<|/tool_call|>', True),
      ('<|tool_call|>[{"name": "function_name_1", "arguments": {"a":1}},{"name": "function_name_2", "arguments": {"a":2}}]<|/tool_call|>', False)])

case("docs-force-think", "xgrammar-docs",
     "tutorial example 2: <think> any_text </think>, then text mixed with tool calls",
     seq(tag("<think>", any_text(), "</think>"), triggered(["<function="], DOC_FUNC_TAGS)),
     [(f"<think>Let me see.</think>Sure <function=func1>{JOHN}</function> done", True),
      ("<think></think>", True), (f"<function=func1>{JOHN}</function>", False),
      ("<think>no end", False)])

case("docs-think-force-tool", "xgrammar-docs",
     "tutorial example 3: reasoning then exactly one tool call (at_least_one + stop_after_first)",
     seq(tag("<think>", any_text(), "</think>"),
         {"type": "triggered_tags", "triggers": ["<function="], "tags": DOC_FUNC_TAGS,
          "stop_after_first": True, "at_least_one": True}),
     [(f"<think>x</think><function=func2>{JANE}</function>", True),
      ("<think>x</think>", False), (f"<think>x</think> <function=func2>{JANE}</function>", False),
      (f"<think>x</think><function=func2>{JANE}</function><function=func1>{JOHN}</function>", False)])

case("docs-non-thinking", "xgrammar-docs",
     "tutorial example 5 (force non-thinking). The tutorial writes the const_string with a"
     " \"text\" key, which XGrammar refuses; the key is \"value\" here",
     seq(const("<think></think>"),
         triggered(["<tool_call>"],
                   [dtag('<tool_call>\n{"name": "func1", "arguments": ', js(NAME_AGE), "}\n</tool_call>"),
                    dtag('<tool_call>\n{"name": "func2", "arguments": ', js(NAME_AGE), "}\n</tool_call>")])),
     [("<think></think>Hello", True),
      (f'<think></think><tool_call>\n{{"name": "func1", "arguments": {JOHN}}}\n</tool_call>', True),
      ("Hello", False), ("<think>x</think>Hello", False)])

case("docs-forced-tool-choice", "xgrammar-docs", "tutorial: forced tool choice as a single tag",
     tag("<function=func1>", js(NAME_AGE), "</function>"),
     [(f"<function=func1>{JOHN}</function>", True), (f"x<function=func1>{JOHN}</function>", False),
      (f"<function=func2>{JOHN}</function>", False), ("", False)])

case("docs-required-tool-choice", "xgrammar-docs",
     "tutorial: required tool choice (at_least_one true)",
     {"type": "triggered_tags", "triggers": ["<function="], "tags": DOC_FUNC_TAGS,
      "at_least_one": True},
     [(f"<function=func1>{JOHN}</function>", True),
      (f"<function=func1>{JOHN}</function> and text", True), ("just text", False), ("", False)])

case("docs-any-text-excluded-str", "xgrammar-docs",
     "tutorial's any_text in a tag with the field \"excluded_str\"; XGrammar 0.2.9 reads"
     " \"excludes\" and ignores unknown fields, so nothing is excluded",
     tag("<a>", {"type": "any_text", "excluded_str": ["X"]}, "</a>"),
     [("<a>ok</a>", True),
      ("<a>X</a>", False, "the tutorial says any_text accepts any text except excluded_str;"
                          " XGrammar ignores the excluded_str field and accepts the excluded"
                          " string")])

case("docs-legacy-tags-triggers", "xgrammar-docs",
     "advanced tutorial's deprecated from_structural_tag(tags, triggers) example, in the form"
     " StructuralTag.from_legacy_structural_tag produces (schemas of Schema1/Schema2 written"
     " by hand)",
     triggered(["<function="],
               [tag("<function=f>", js({"type": "object",
                                         "properties": {"arg1": {"type": "string"},
                                                        "arg2": {"type": "integer"}},
                                         "required": ["arg1", "arg2"]}), "</function>"),
                tag("<function=g>", js({"type": "object",
                                         "properties": {"arg3": {"type": "number"},
                                                        "arg4": {"type": "array",
                                                                 "items": {"type": "string"}}},
                                         "required": ["arg3", "arg4"]}), "</function>")]),
     [('<function=f>{"arg1": "x", "arg2": 2}</function>', True),
      ('text <function=g>{"arg3": 1.5, "arg4": ["a"]}</function> text', True),
      ('<function=g>{"arg3": -2e3, "arg4": []}</function>', True),
      ('<function=f>{"arg1": "x", "arg2": 2.5}</function>', False),
      ('<function=g>{"arg3": "1", "arg4": []}</function>', False)])


# ---------------------------------------------------------------- compile-time errors

COMPILE_ERRORS = [
    ("triggered tag matching no trigger",
     triggered(["<x>"], [tag("<f>", js(INT), "</f>")])),
    ("triggered tag matching two triggers",
     triggered(["<f", "<f="], [tag("<f=a>", js(INT), "</f>")])),
    ("triggered_tags with empty triggers", triggered([], [tag("<f>", js(INT), "</f>")])),
    ("triggered_tags with an empty trigger string", triggered([""], [tag("", js(INT), "</f>")])),
    ("triggered_tags with empty tags", triggered(["<f>"], [])),
    ("tags_with_separator with empty tags", tws([], ",")),
    ("dispatch with empty rules", dispatch([])),
    ("tag with any_text content and an empty end", tag("<a>", any_text(), "")),
    ("empty sequence", seq()),
    ("empty or", or_()),
    ("repeat with min > max", {"type": "repeat", "min": 3, "max": 1, "content": const("x")}),
    ("grammar without a root rule", grammar('foo ::= "a"')),
    ("grammar with an empty rule body", grammar("root ::= ")),
    ("regex with an unclosed parenthesis", regex("(ab")),
    ("tutorial example 5 as written: const_string with \"text\" instead of \"value\"",
     {"type": "const_string", "text": "<think></think>"}),
    ("tutorial example 4 as written: format type \"tag_and_text\"",
     {"type": "tag_and_text", "triggers": ["<x>"],
      "tags": [dtag("<x>", any_text(), "</x>")]}),
]


# ---------------------------------------------------------------- running


def compile_tag(tag_obj, compiler):
    g = xgr.Grammar.from_structural_tag(json.dumps(tag_obj, ensure_ascii=False))
    return compiler.compile_grammar(g)


def run_string(compiled, text):
    matcher = xgr.GrammarMatcher(compiled, terminate_without_stop_token=True)
    prefix_ok = bool(matcher.accept_string(text))
    accepted = prefix_ok and bool(matcher.is_terminated())
    return accepted, prefix_ok


def dump_fixture(version, cases):
    """The fixture as JSON, one line per case header and per string."""
    d = lambda v: json.dumps(v, ensure_ascii=False)
    out = ['{"xgrammar_version": %s, "cases": [' % d(version)]
    for i, c in enumerate(cases):
        out.append('{"name": %s, "source": %s, "note": %s,'
                   % (d(c["name"]), d(c["source"]), d(c["note"])))
        out.append(' "tag": %s,' % d(c["tag"]))
        out.append(' "strings": [')
        for j, s in enumerate(c["strings"]):
            out.append("  " + d(s) + ("," if j + 1 < len(c["strings"]) else ""))
        out.append("]}" + ("," if i + 1 < len(cases) else ""))
    out.append("]}")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()

    version = importlib.metadata.version("xgrammar")
    if version != XGRAMMAR_VERSION:
        print(f"warning: xgrammar {version}, the fixture is for {XGRAMMAR_VERSION}", file=sys.stderr)

    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([]), cache_enabled=False)
    problems = []
    names = set()
    out_cases = []
    for c in CASES:
        if c["name"] in names:
            problems.append(f"duplicate case name {c['name']}")
        names.add(c["name"])
        try:
            compiled = compile_tag(c["tag"], compiler)
        except Exception as e:  # dropped, see NOTES.md
            problems.append(f"{c['name']}: compile error {type(e).__name__}: {e}")
            continue
        strings = []
        seen = set()
        for entry in c["strings"]:
            text, expected = entry[0], entry[1]
            suspect = entry[2] if len(entry) > 2 else None
            if text in seen:
                problems.append(f"{c['name']}: duplicate string {text!r}")
            seen.add(text)
            accepted, prefix_ok = run_string(compiled, text)
            if accepted != expected and suspect is None:
                problems.append(f"{c['name']}: {text!r}: XGrammar says accepted={accepted},"
                                f" expected {expected}, no suspect reason")
            if accepted == expected and suspect is not None:
                problems.append(f"{c['name']}: {text!r}: suspect reason given but XGrammar"
                                f" agrees with the expectation")
            s = {"text": text, "accepted": accepted, "prefix_ok": prefix_ok}
            if suspect is not None and accepted != expected:
                s["suspect"] = suspect
            strings.append(s)
        out_cases.append({"name": c["name"], "source": c["source"], "note": c["note"],
                          "tag": c["tag"], "strings": strings})

    print("compile-time errors (not in the fixture):")
    for label, fmt in COMPILE_ERRORS:
        try:
            compile_tag(st(fmt), compiler)
        except Exception as e:
            msg = str(e).strip().splitlines()[-1] if str(e).strip() else ""
            print(f"  {label}: {type(e).__name__}: {msg}")
        else:
            problems.append(f"expected a compile error, none: {label}")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(dump_fixture(version, out_cases))

    n_strings = sum(len(c["strings"]) for c in out_cases)
    n_acc = sum(s["accepted"] for c in out_cases for s in c["strings"])
    n_sus = sum("suspect" in s for c in out_cases for s in c["strings"])
    print(f"wrote {args.out}: {len(out_cases)} cases, {n_strings} strings"
          f" ({n_acc} accepted, {n_sus} suspect)")
    for p in problems:
        print("problem: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
