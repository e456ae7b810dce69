//! A byte-at-a-time reader of JSON text that knows the JSON pointer of the value it is in.
//!
//! It does not validate: the grammar already did. It follows the structure (objects,
//! arrays, keys, scalars) and reports where each scalar value starts and ends. Text that is
//! not JSON puts it in a lost state, where it reports nothing more.

/// What a byte did to the scalar values of the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CursorEvent {
    /// A scalar value starts with this byte.
    Start(ScalarKind),
    /// The scalar value ends with this byte (a string's closing quote, a literal's last
    /// letter).
    EndWith,
    /// The scalar value (a number) ended just before this byte.
    EndBefore,
}

/// The kind of a scalar JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// A string.
    String,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// `null`.
    Null,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A value (or, first in an array, its end).
    Value {
        first: bool,
    },
    /// A key (or, first in an object, its end).
    Key {
        first: bool,
    },
    Colon,
    /// A comma or the container's end.
    Next,
}

#[derive(Clone, Debug)]
enum Container {
    Object { key: String, expect: Expect },
    Array { index: usize, expect: Expect },
}

#[derive(Clone, Debug)]
enum Lex {
    Between,
    /// Inside a string; `key` for an object key (its raw bytes collect in `raw`).
    Str {
        key: bool,
        escaped: bool,
    },
    Number,
    Literal {
        rest: &'static [u8],
    },
}

/// Where a document's bytes stand: the containers open, the key or index in each, and the
/// scalar being read.
#[derive(Clone, Debug)]
pub struct JsonCursor {
    stack: Vec<Container>,
    /// The top level's state.
    root: Expect,
    lex: Lex,
    /// The raw bytes of the key being read.
    raw_key: Vec<u8>,
    lost: bool,
    done: bool,
}

impl Default for JsonCursor {
    fn default() -> Self {
        JsonCursor::new()
    }
}

impl JsonCursor {
    /// A cursor before a document's first byte.
    pub fn new() -> JsonCursor {
        JsonCursor {
            stack: Vec::new(),
            root: Expect::Value { first: false },
            lex: Lex::Between,
            raw_key: Vec::new(),
            lost: false,
            done: false,
        }
    }

    /// Whether the text stopped being JSON.
    pub fn is_lost(&self) -> bool {
        self.lost
    }

    /// Whether a scalar value is being read.
    pub fn in_scalar(&self) -> bool {
        !self.lost
            && matches!(self.lex, Lex::Number | Lex::Literal { .. } | Lex::Str { key: false, .. })
    }

    /// The JSON pointer (RFC 6901) of the value being read, or of the next value.
    pub fn pointer(&self) -> String {
        let mut out = String::new();
        for c in &self.stack {
            out.push('/');
            match c {
                Container::Object { key, .. } => {
                    out.push_str(&key.replace('~', "~0").replace('/', "~1"))
                }
                Container::Array { index, .. } => out.push_str(&index.to_string()),
            }
        }
        out
    }

    /// Reads one byte.
    pub fn push(&mut self, b: u8) -> Option<CursorEvent> {
        if self.lost || self.done {
            return None;
        }
        match self.lex {
            Lex::Str { key, escaped } => {
                if escaped {
                    self.lex = Lex::Str { key, escaped: false };
                } else if b == b'\\' {
                    self.lex = Lex::Str { key, escaped: true };
                } else if b == b'"' {
                    self.lex = Lex::Between;
                    if key {
                        let mut quoted = Vec::with_capacity(self.raw_key.len() + 2);
                        quoted.push(b'"');
                        quoted.extend_from_slice(&self.raw_key);
                        quoted.push(b'"');
                        let name: String = serde_json::from_slice(&quoted).unwrap_or_default();
                        self.raw_key.clear();
                        if let Some(Container::Object { key, expect }) = self.stack.last_mut() {
                            *key = name;
                            *expect = Expect::Colon;
                        }
                        return None;
                    }
                    self.value_done();
                    return Some(CursorEvent::EndWith);
                }
                if key {
                    self.raw_key.push(b);
                }
                return None;
            }
            Lex::Literal { rest } => {
                if rest.first() != Some(&b) {
                    self.lost = true;
                    return None;
                }
                if rest.len() == 1 {
                    self.lex = Lex::Between;
                    self.value_done();
                    return Some(CursorEvent::EndWith);
                }
                self.lex = Lex::Literal { rest: &rest[1..] };
                return None;
            }
            Lex::Number => {
                if b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E') {
                    return None;
                }
                self.lex = Lex::Between;
                self.value_done();
                self.structural(b);
                return if self.lost { None } else { Some(CursorEvent::EndBefore) };
            }
            Lex::Between => {}
        }
        self.structural(b)
    }

    /// A byte between tokens of the structure.
    fn structural(&mut self, b: u8) -> Option<CursorEvent> {
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return None;
        }
        let expect = match self.stack.last() {
            Some(Container::Object { expect, .. } | Container::Array { expect, .. }) => *expect,
            None => self.root,
        };
        match expect {
            Expect::Value { first } => {
                if first && b == b']' {
                    self.stack.pop();
                    self.value_done();
                    return None;
                }
                self.value_start(b)
            }
            Expect::Key { first } => {
                if first && b == b'}' {
                    self.stack.pop();
                    self.value_done();
                } else if b == b'"' {
                    self.lex = Lex::Str { key: true, escaped: false };
                    self.raw_key.clear();
                } else {
                    self.lost = true;
                }
                None
            }
            Expect::Colon => {
                if b == b':' {
                    self.set_expect(Expect::Value { first: false });
                } else {
                    self.lost = true;
                }
                None
            }
            Expect::Next => {
                match (self.stack.last_mut(), b) {
                    (Some(Container::Object { expect, .. }), b',') => {
                        *expect = Expect::Key { first: false }
                    }
                    (Some(Container::Array { index, expect }), b',') => {
                        *index += 1;
                        *expect = Expect::Value { first: false };
                    }
                    (Some(Container::Object { .. }), b'}')
                    | (Some(Container::Array { .. }), b']') => {
                        self.stack.pop();
                        self.value_done();
                    }
                    _ => self.lost = true,
                }
                None
            }
        }
    }

    fn value_start(&mut self, b: u8) -> Option<CursorEvent> {
        let kind = match b {
            b'"' => {
                self.lex = Lex::Str { key: false, escaped: false };
                ScalarKind::String
            }
            b'-' | b'0'..=b'9' => {
                self.lex = Lex::Number;
                ScalarKind::Number
            }
            b't' | b'f' | b'n' => {
                self.lex = Lex::Literal {
                    rest: match b {
                        b't' => b"rue",
                        b'f' => b"alse",
                        _ => b"ull",
                    },
                };
                if b == b'n' {
                    ScalarKind::Null
                } else {
                    ScalarKind::Boolean
                }
            }
            b'{' => {
                self.stack.push(Container::Object {
                    key: String::new(),
                    expect: Expect::Key { first: true },
                });
                return None;
            }
            b'[' => {
                self.stack
                    .push(Container::Array { index: 0, expect: Expect::Value { first: true } });
                return None;
            }
            _ => {
                self.lost = true;
                return None;
            }
        };
        Some(CursorEvent::Start(kind))
    }

    /// A value (scalar or container) ended: its parent expects what follows a value.
    fn value_done(&mut self) {
        if self.stack.is_empty() {
            self.done = true;
        } else {
            self.set_expect(Expect::Next);
        }
    }

    fn set_expect(&mut self, next: Expect) {
        match self.stack.last_mut() {
            Some(Container::Object { expect, .. } | Container::Array { expect, .. }) => {
                *expect = next
            }
            None => self.root = next,
        }
    }

    /// Ends the text: a top-level number at the very end ends here (one inside a container
    /// was cut off).
    pub fn finish(&mut self) -> Option<CursorEvent> {
        if !self.lost && self.stack.is_empty() && matches!(self.lex, Lex::Number) {
            self.lex = Lex::Between;
            self.value_done();
            return Some(CursorEvent::EndBefore);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scalar of `text` as (pointer, raw text).
    fn scalars(text: &str) -> Vec<(String, String)> {
        let mut c = JsonCursor::new();
        let mut out = Vec::new();
        let mut open: Option<(String, usize)> = None;
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            match c.push(b) {
                Some(CursorEvent::Start(_)) => open = Some((c.pointer(), i)),
                Some(CursorEvent::EndWith) => {
                    let (p, s) = open.take().unwrap();
                    out.push((p, text[s..=i].to_string()));
                }
                Some(CursorEvent::EndBefore) => {
                    let (p, s) = open.take().unwrap();
                    out.push((p, text[s..i].to_string()));
                }
                None => {}
            }
        }
        if let Some(CursorEvent::EndBefore) = c.finish() {
            let (p, s) = open.take().unwrap();
            out.push((p, text[s..].to_string()));
        }
        out
    }

    #[test]
    fn pointers_of_scalars() {
        let got = scalars(
            r#" {"a": "x\"}", "b/c~": [1, -2.5e3, true, {"d": null}], "e": {}, "f": [], "g": 7}"#,
        );
        let want = [
            ("/a", r#""x\"}""#),
            ("/b~1c~0/0", "1"),
            ("/b~1c~0/1", "-2.5e3"),
            ("/b~1c~0/2", "true"),
            ("/b~1c~0/3/d", "null"),
            ("/g", "7"),
        ];
        assert_eq!(
            got,
            want.iter().map(|(p, v)| (p.to_string(), v.to_string())).collect::<Vec<_>>()
        );
        assert_eq!(scalars("42"), vec![(String::new(), "42".to_string())]);
        assert_eq!(scalars(r#"{"\u00e9":false}"#), vec![("/é".to_string(), "false".to_string())]);
    }

    #[test]
    fn text_that_is_not_json_is_lost_not_a_panic() {
        let mut c = JsonCursor::new();
        for &b in b"{\"a\" 1}" {
            c.push(b);
        }
        assert!(c.is_lost());
        let mut c = JsonCursor::new();
        for &b in b"[tru3]" {
            c.push(b);
        }
        assert!(c.is_lost());
    }
}
