//! Proves that each of llama.cpp's example grammars (arithmetic, c, chess, english,
//! japanese, json, json_arr, list) accepts realistic text of its kind and rejects
//! near-misses one character off, through the library (a byte-level matcher, as
//! `grammask match` runs it) and, for a few, through the `grammask match` binary with its
//! exit codes and its `rejected at byte N (line L, column C)` message.

use grammask::{byte_vocabulary, CompiledGrammar, Compiler, GrammarFormat, MatchError, Matcher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

fn grammar_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("grammar-syntax/tests/data/llama.cpp-grammars")
        .join(format!("{name}.gbnf"))
}

fn compile(name: &str) -> Arc<CompiledGrammar> {
    let text = std::fs::read_to_string(grammar_path(name)).unwrap();
    let parsed = grammask::parse_grammar(&text, GrammarFormat::Gbnf, "root").unwrap();
    Compiler::new(&byte_vocabulary()).compile_grammar(&parsed.grammar).unwrap()
}

/// How a text fares: accepted, a valid prefix that cannot end, or rejected at a byte.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Accepted,
    Incomplete,
    RejectedAt(usize),
}

fn verdict(grammar: &Arc<CompiledGrammar>, text: &str) -> Verdict {
    let mut m = Matcher::new(grammar.clone());
    match m.accept_bytes(text.as_bytes()) {
        Ok(()) if m.can_terminate() => Verdict::Accepted,
        Ok(()) => Verdict::Incomplete,
        Err(MatchError::BytesRejected { offset }) => Verdict::RejectedAt(offset),
        Err(e) => panic!("unexpected error {e}"),
    }
}

/// Texts that must match.
fn ok_samples(name: &str) -> &'static [&'static str] {
    match name {
        "arithmetic" => &[
            "1+2=3\n",
            "x = 5\n",
            "(1+2)*3 = 9\n",
            "12*(3+4) = 84\n",
            "price*qty+tax = total\n",
            "(a+b)/2 = (avg)\n",
            "x_1 = 42\ny = (x_1*2)\nz = y\n",
            "radius*radius*pi = area\n",
        ],
        "c" => &[
            "int main(){return 0;}",
            "int add(int a){return a+1;}",
            "int main(){int x = 5;while(x>0){x = x-1;}return x;}",
            "float area(float r){return 3*r*r;}char first(){return c;}",
            "int sign(int v){if(v<0){return -1;}else{return 1;}}",
            "int main(){// entry point\nint n = 10;int s = 0;\
             for(i = 0; i<n; i = i+1){s = s+sq(i);}/* done: s holds the sum */\
             print (s, n);return s;}",
            // Parentheses need whitespace inside (`ws` is `[ \t\n]+` in c.gbnf).
            "int f(){}int g(){return f()*( 2+x )/y;}",
        ],
        "chess" => &[
            "1. e4 e5\n2. Nf3 Nc6\n",
            // The "Opera game", Morphy vs. Duke Karl / Count Isouard, Paris 1858.
            "1. e4 e5\n2. Nf3 d6\n3. d4 Bg4\n4. dxe5 Bxf3\n5. Qxf3 dxe5\n6. Bc4 Nf6\n\
             7. Qb3 Qe7\n8. Nc3 c6\n9. Bg5 b5\n10. Nxb5 cxb5\n11. Bxb5+ Nbd7\n\
             12. O-O-O Rd8\n13. Rxd7 Rxd7\n14. Rd1 Qe6\n15. Bxd7+ Nxd7\n16. Qb8+ Nxb8\n",
            // Underpromotion and castling on both sides.
            "1. e4 d5\n2. exd5 c6\n3. dxc6 Nf6\n4. cxb7 Nbd7\n5. bxa8=Q Qc7\n6. O-O O-O-O\n",
            // Scholar's mate.
            "1. e4 e5\n2. Qh5 Nc6\n3. Bc4 Nf6\n4. Qxf7# Ke7\n",
            "1. d4 Nf6\n2. c4 e6\n3. Nc3 Bb4\n4. Qc2 O-O\n5. a3 Bxc3+\n6. Qxc3 b6\n",
        ],
        "english" => &[
            "The quick brown fox jumps over the lazy dog.",
            "Hello, world! It's 2024: a test (with parens) & \"quotes\".",
            "First line.\nSecond line, with a tab\there.",
            "Email me at someone@example.com; or call +1-555-0100 #ext[42]~",
            "C:\\Users\\me_{1}|x^2 `code` <tag>",
        ],
        "japanese" => &[
            "日本語のテキストです。",
            "東京は日本の首都です。\n大阪は西にあります。",
            "コーヒーを飲みます",
            "今日は 良い 天気ですね",
            "「こんにちは」と言った。",
            "吾輩は猫である。名前はまだ無い。",
            "ゝゞ・ヽヾ〆〜",
        ],
        "json" => &[
            "{}",
            "{\"a\": {}}",
            "{\"list\": []}",
            r#"{"name": "Alice", "age": 30, "tags": ["a", "b"], "nested": {"x": [1, 2.5, -3e2, true, false, null]}}"#,
            "{\n  \"id\": 1,\n  \"items\": [\n    {\"sku\": \"A-1\", \"qty\": 2},\n    {\"sku\": \"B-2\", \"qty\": 10}\n  ]\n}\n",
            r#"{"greeting": "こんにちは", "emoji": "😀", "escaped": "line\nbreak \"quoted\" \u00e9 \\ tab\t/"}"#,
            r#"{"deep": [[[{"k": [0, -0.5, 1.25E+7]}]]], "empty": "", "z": -12345}"#,
        ],
        "json_arr" => &[
            "[\n]",
            "[\n1,\n2,\n3\n]",
            "[\n{\"name\": \"a\", \"score\": 1.5e3},\n{\"name\": \"b\", \"score\": 2}\n]",
            "[\n {\"a\": 1},\n {\"b\": [true, null]}\n]",
            "[\n\"x\",\n\"日本\"]",
        ],
        "list" => &[
            "- milk\n- eggs\n- bread\n",
            "- Buy **coffee** beans (2 kg)\n- Call Bob: 555-0100\n",
            "- café ☕\n- 日本\n",
            "- [ ] todo\n- [x] done\n-  indented text\n",
        ],
        _ => unreachable!(),
    }
}

/// Near-misses and how they fail.
fn bad_samples(name: &str) -> &'static [(&'static str, Verdict)] {
    use Verdict::*;
    match name {
        "arithmetic" => &[
            ("1+2=3", Incomplete),
            ("1++2=3\n", RejectedAt(2)),
            ("X = 1\n", RejectedAt(0)),
            ("(1+2 = 3\n", RejectedAt(5)),
            ("x = 5 + 1\n", RejectedAt(6)),
            ("1+2 =3 =4\n", RejectedAt(7)),
        ],
        "c" => &[
            ("int main(){return 0}", RejectedAt(19)),
            ("int main(){x=1;}", RejectedAt(12)),
            ("int main({}", RejectedAt(9)),
            ("int main(){if(x=1){}}", RejectedAt(16)),
            ("int main(){return 0;", Incomplete),
            ("void main(){}", RejectedAt(0)),
            ("int main() {}", RejectedAt(10)),
        ],
        "chess" => &[
            ("1. e4 e5\n2. Nf3 Nc9\n", RejectedAt(18)),
            ("1. e4 e5\n", Incomplete),
            ("1.e4 e5\n2. d4 d5\n", RejectedAt(2)),
            ("1. e4 e5\n2. Pe4 d6\n", RejectedAt(12)),
            ("1. e4 e5\n2. i4 d6\n", RejectedAt(12)),
            ("1. e4 e5\n2. O-O-O-O d6\n", RejectedAt(17)),
            ("1. e4 e5\n0. d4 d5\n", RejectedAt(9)),
            ("1. e4 e5\n2. Nf3\n", RejectedAt(15)),
        ],
        "english" => &[
            ("Hello  world", RejectedAt(6)),
            ("Hello world ", Incomplete),
            ("café", RejectedAt(3)),
            ("", Incomplete),
            ("Hello\r\nworld", RejectedAt(5)),
            (" leading", RejectedAt(0)),
        ],
        "japanese" => &[
            ("日本語です!", RejectedAt(15)),
            // U+3000 (E3 80 80) is refused at its last byte: E3 80 starts 、-〾.
            ("日本語\u{3000}です", RejectedAt(11)),
            ("東京タワー2024年", RejectedAt(15)),
            ("漢字！", RejectedAt(6)),
            ("日本語 ", Incomplete),
        ],
        "json" => &[
            (r#"{"a": 1,}"#, RejectedAt(8)),
            (r#"{"a": [1, 2}"#, RejectedAt(11)),
            ("{'a': 1}", RejectedAt(1)),
            (r#"{"a": 01}"#, RejectedAt(7)),
            ("[1, 2]", RejectedAt(0)),
            (r#"{"a": tru}"#, RejectedAt(9)),
            (r#"{"a": "x}"#, Incomplete),
            (r#"{"a" 1}"#, RejectedAt(5)),
            ("{\"a\": \"tab\there\"}", RejectedAt(10)),
            (r#"{"a": "\x41"}"#, RejectedAt(8)),
            (r#"{"a": 1e10}"#, RejectedAt(9)),
            (r#"{"a": 1}}"#, RejectedAt(8)),
        ],
        "json_arr" => &[
            ("[1, 2]", RejectedAt(1)),
            ("[\n1,\n2,\n]", RejectedAt(8)),
            ("[\n1\n] ", RejectedAt(5)),
            ("[\n1e0\n]", RejectedAt(4)),
            ("[\n1,\n  2\n]", RejectedAt(6)),
        ],
        "list" => &[
            ("- milk\n-eggs\n", RejectedAt(8)),
            ("- milk", Incomplete),
            ("* milk\n", RejectedAt(0)),
            ("- \n", RejectedAt(2)),
            ("- a\r\n", RejectedAt(3)),
            // U+0085 is C2 85, U+2028 is E2 80 A8: refused at their last byte.
            ("- a\u{85}b\n", RejectedAt(4)),
            ("- a\u{2028}b\n", RejectedAt(5)),
        ],
        _ => unreachable!(),
    }
}

const NAMES: [&str; 8] =
    ["arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"];

#[test]
fn realistic_samples_match() {
    let mut failures = Vec::new();
    for name in NAMES {
        let g = compile(name);
        for text in ok_samples(name) {
            let v = verdict(&g, text);
            if v != Verdict::Accepted {
                failures.push(format!("{name}: {text:?}: {v:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn near_misses_are_rejected() {
    let mut failures = Vec::new();
    for name in NAMES {
        let g = compile(name);
        for (text, expected) in bad_samples(name) {
            let v = verdict(&g, text);
            if &v != expected {
                failures.push(format!("{name}: {text:?}: {v:?}, expected {expected:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn run_cli(args: &[&str], input: &str) -> (Option<i32>, String) {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let file = tmp.join(format!("llama-sample-{:x}.txt", fxhash(input)));
    std::fs::write(&file, input).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_grammask")).args(args).arg(&file).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn cli_agrees() {
    for name in ["chess", "json", "c", "list"] {
        let path = grammar_path(name);
        let path = path.to_str().unwrap();
        for text in ok_samples(name).iter().take(2) {
            let (code, out) = run_cli(&["match", path], text);
            assert_eq!(code, Some(0), "{name} {text:?}: {out}");
            let (code, out) = run_cli(&["match", "--prefix", path], text);
            assert_eq!(code, Some(0), "{name} {text:?} --prefix: {out}");
        }
        for (text, expected) in bad_samples(name).iter().take(3) {
            let (code, out) = run_cli(&["match", path], text);
            assert_eq!(code, Some(1), "{name} {text:?}: {out}");
            if *expected == Verdict::Incomplete {
                assert!(out.contains("incomplete"), "{name} {text:?}: {out}");
                let (code, out) = run_cli(&["match", "--prefix", path], text);
                assert_eq!(code, Some(0), "{name} {text:?} --prefix: {out}");
            }
        }
    }
    // The position of a bad move on the second line: byte 18, line 2, column 10.
    let chess = grammar_path("chess");
    let (code, out) = run_cli(&["match", chess.to_str().unwrap()], "1. e4 e5\n2. Nf3 Nc9\n");
    assert_eq!(code, Some(1));
    assert!(out.contains("rejected at byte 18 (line 2, column 10)"), "{out}");
    assert!(out.contains("found '9'"), "{out}");
    // Columns count characters, not bytes: `！` is the third character, bytes 6-8.
    let japanese = grammar_path("japanese");
    let (code, out) = run_cli(&["match", japanese.to_str().unwrap()], "漢字！");
    assert_eq!(code, Some(1));
    assert!(out.contains("rejected at byte 6 (line 1, column 3)"), "{out}");
    let (code, out) = run_cli(&["match", "--prefix", japanese.to_str().unwrap()], "漢字！");
    assert_eq!(code, Some(1), "{out}");
}
