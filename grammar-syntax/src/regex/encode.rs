//! How the characters a regex matches are written: as raw UTF-8, or as the content of a
//! JSON string (escaped where JSON requires it, in every form a serializer may use).

use super::CharEncoding;
use crate::ir::{CharClass, Expr};
use crate::unicode_escape::{has_unicode_escape, range_has_unicode_escape, unicode_escapes};

/// An expression that matches nothing: the empty character class.
pub fn never() -> Expr {
    Expr::Class(CharClass::new(false, []))
}

/// Whether `e` is [`never`] (the empty, non-negated class).
pub fn is_never(e: &Expr) -> bool {
    matches!(e, Expr::Class(c) if !c.negated && c.ranges.is_empty())
}

/// Any one character in `encoding`; in a JSON string this includes every escape form,
/// `\uXXXX` (surrogate pairs as one character) included.
pub fn any_char(encoding: CharEncoding) -> Expr {
    match encoding {
        CharEncoding::Raw => Expr::Class(CharClass::any()),
        CharEncoding::JsonString => json_any_char(),
    }
}

/// One character of a JSON string in any form JSON allows: unescaped, a short escape,
/// or `\uXXXX` (a surrogate pair written as two escapes is one character; lone surrogates
/// are refused).
pub fn json_any_char() -> Expr {
    Expr::choice(vec![json_unescaped_char(), json_escape()])
}

/// One character of a JSON string written as itself.
pub fn json_unescaped_char() -> Expr {
    Expr::Class(unescaped_class())
}

/// One character of a JSON string written as an escape: a short escape or `\uXXXX` (a
/// surrogate pair as two escapes).
pub fn json_escape() -> Expr {
    let hex = || Expr::class(false, [('0', '9'), ('a', 'f'), ('A', 'F')]);
    let hex_no_d = Expr::class(false, [('0', '9'), ('a', 'c'), ('e', 'f'), ('A', 'C'), ('E', 'F')]);
    let d = Expr::class(false, [('d', 'd'), ('D', 'D')]);
    let non_surrogate = Expr::choice(vec![
        Expr::Seq(vec![hex_no_d, hex(), hex(), hex()]),
        Expr::Seq(vec![d.clone(), Expr::class(false, [('0', '7')]), hex(), hex()]),
    ]);
    let high = Expr::Seq(vec![
        d.clone(),
        Expr::class(false, [('8', '9'), ('a', 'b'), ('A', 'B')]),
        hex(),
        hex(),
    ]);
    let low = Expr::Seq(vec![d, Expr::class(false, [('c', 'f'), ('C', 'F')]), hex(), hex()]);
    Expr::Seq(vec![
        Expr::literal("\\"),
        Expr::choice(vec![
            Expr::class(
                false,
                [
                    ('"', '"'),
                    ('\\', '\\'),
                    ('/', '/'),
                    ('b', 'b'),
                    ('f', 'f'),
                    ('n', 'n'),
                    ('r', 'r'),
                    ('t', 't'),
                ],
            ),
            Expr::Seq(vec![
                Expr::literal("u"),
                Expr::choice(vec![non_surrogate, Expr::Seq(vec![high, Expr::literal("\\u"), low])]),
            ]),
        ]),
    ])
}

/// The characters a JSON string may hold unescaped.
fn unescaped_class() -> CharClass {
    CharClass::new(true, JSON_MUST_ESCAPE)
}

/// The short escapes of `c` in a JSON string (`\"`, `\\`, `\n`...; `/` also as itself),
/// `None` when it has none. Its `\uXXXX` forms come from [`unicode_escapes`].
fn json_escapes(c: char) -> Option<Vec<String>> {
    let short = match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '\u{8}' => "\\b",
        '\u{c}' => "\\f",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        '/' => return Some(vec!["/".to_string(), "\\/".to_string()]),
        _ => return None,
    };
    Some(vec![short.to_string()])
}

/// The characters a JSON string may not hold as themselves: the controls, `"` and `\\`.
pub const JSON_MUST_ESCAPE: [(char, char); 3] = [('\0', '\u{1f}'), ('"', '"'), ('\\', '\\')];

/// Whether `c` must be escaped in a JSON string ([`JSON_MUST_ESCAPE`]).
fn must_escape(c: char) -> bool {
    c < '\u{20}' || c == '"' || c == '\\'
}

/// Whether a character of `lo..=hi` has an escape in JSON strings (controls, `"`, `\\`,
/// `/`: the characters of [`json_escapes`]).
fn has_json_escape_in(lo: char, hi: char) -> bool {
    lo < '\u{20}' || ['"', '\\', '/'].iter().any(|&c| lo <= c && c <= hi)
}

/// Whether `c` has an escaped form in a JSON string (a short escape or `\uXXXX`).
pub fn has_json_escape(c: char) -> bool {
    has_json_escape_in(c, c) || has_unicode_escape(c)
}

/// A literal string in `encoding`: in a JSON string each character as itself (unless it
/// must be escaped), its short escape, and for controls and non-ASCII characters its
/// `\uXXXX` form.
pub fn encode_literal(text: &str, encoding: CharEncoding) -> Expr {
    if encoding == CharEncoding::Raw || !text.chars().any(has_json_escape) {
        return Expr::literal(text);
    }
    let mut items = Vec::new();
    let mut plain = String::new();
    for c in text.chars() {
        if !has_json_escape(c) {
            plain.push(c);
            continue;
        }
        if !plain.is_empty() {
            items.push(Expr::literal(&plain));
            plain.clear();
        }
        let mut alts: Vec<Expr> = json_escapes(c)
            .unwrap_or_else(|| if must_escape(c) { vec![] } else { vec![c.to_string()] })
            .iter()
            .map(|f| Expr::literal(f))
            .collect();
        alts.extend(unicode_escapes(&[(c, c)]));
        items.push(Expr::choice(alts));
    }
    if !plain.is_empty() {
        items.push(Expr::literal(&plain));
    }
    Expr::seq(items)
}

/// One character of `class` in `encoding`.
pub fn encode_class(class: &CharClass, encoding: CharEncoding) -> Expr {
    if encoding == CharEncoding::Raw {
        return Expr::Class(class.clone());
    }
    // A class of characters that are all written as themselves is itself (the keys of
    // most objects).
    let escaped =
        |&(lo, hi): &(char, char)| has_json_escape_in(lo, hi) || range_has_unicode_escape(lo, hi);
    if !class.negated && !class.ranges.iter().any(escaped) {
        return if class.ranges.is_empty() { never() } else { Expr::Class(class.clone()) };
    }
    let ranges = class.positive_ranges();
    // The characters written as themselves: the class minus those that need escapes.
    let plain = CharClass::new(false, ranges.iter().copied());
    let plain_ranges = subtract(&plain.ranges, &JSON_MUST_ESCAPE);
    let mut alts = Vec::new();
    if !plain_ranges.is_empty() {
        alts.push(Expr::Class(CharClass::new(false, plain_ranges)));
    }
    // The escapes, one backslash and a choice of what follows it: the short ones, and the
    // `\uXXXX` forms as one alternative `u ...` (the shape the engine's
    // `outline_unicode_escapes` moves into a call). Both parts are kept split once per
    // thread, so a class costs one copy of each.
    let mut after = Vec::new();
    // The characters with escapes in the class, as bits (32 controls, `"`, `\`, `/`);
    // their escapes' trie is built once per set and thread.
    let special: Vec<char> = ('\0'..='\u{1f}').chain(['"', '\\', '/']).collect();
    let bits = special
        .iter()
        .enumerate()
        .filter(|&(_, &c)| plain.contains(c))
        .fold(0u64, |bits, (i, _)| bits | 1 << i);
    if bits != 0 {
        thread_local! {
            static TRIES: std::cell::RefCell<rustc_hash::FxHashMap<u64, Option<Expr>>> =
                std::cell::RefCell::default();
        }
        let rest = TRIES.with(|tries| {
            tries
                .borrow_mut()
                .entry(bits)
                .or_insert_with(|| {
                    let escapes: Vec<Vec<u8>> = special
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| bits & 1 << i != 0)
                        .filter_map(|(_, &c)| json_escapes(c))
                        .flatten()
                        .filter(|f| f != "/")
                        .map(String::into_bytes)
                        .collect();
                    // JSON's escapes all start with the backslash.
                    let rests: Vec<Vec<u8>> = escapes
                        .iter()
                        .filter_map(|e| e.strip_prefix(b"\\"))
                        .map(<[u8]>::to_vec)
                        .collect();
                    debug_assert_eq!(rests.len(), escapes.len());
                    (!rests.is_empty()).then(|| ascii_trie(rests))
                })
                .clone()
        });
        after.extend(rest);
    }
    // The `\uXXXX` forms after `\u`, built once per class and thread (the cache is emptied
    // past `UNICODE_CACHE` classes, so a long-running process does not grow it forever).
    type Cache = rustc_hash::FxHashMap<Vec<(char, char)>, Option<Result<Expr, Expr>>>;
    const UNICODE_CACHE: usize = 4_096;
    thread_local! {
        static UNICODE: std::cell::RefCell<Cache> = std::cell::RefCell::default();
    }
    let hex = UNICODE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= UNICODE_CACHE && !cache.contains_key(&ranges) {
            cache.clear();
        }
        cache
            .entry(ranges.clone())
            .or_insert_with(|| {
                // (Every form starts with `\u`; one that did not would stay whole.)
                unicode_escapes(&ranges).map(|e| without_prefix(&e, b"\\u").ok_or(e))
            })
            .clone()
    });
    let mut whole = None;
    match hex {
        Some(Ok(hex)) => after.push(Expr::Seq(vec![Expr::literal("u"), hex])),
        Some(Err(forms)) => whole = Some(forms),
        None => {}
    }
    if !after.is_empty() {
        alts.push(Expr::Seq(vec![Expr::literal("\\"), Expr::choice(after)]));
    }
    alts.extend(whole);
    if alts.is_empty() {
        never()
    } else {
        Expr::choice(alts)
    }
}

/// Whether `e` is what follows `\u` in a JSON escape as [`encode_class`] writes it (its
/// `\uXXXX` forms without the `\`): a sequence of the byte `u` and more.
pub fn is_unicode_tail(e: &Expr) -> bool {
    matches!(e, Expr::Seq(items) if items.len() > 1 && items[0].is_literal("u"))
}

/// `e` without the bytes `prefix` that each of its texts starts with; `None` when some
/// text may not start with them (or the shape hides it).
fn without_prefix(e: &Expr, prefix: &[u8]) -> Option<Expr> {
    if prefix.is_empty() {
        return Some(e.clone());
    }
    match e {
        Expr::Bytes(b) if b.starts_with(prefix) => Some(match &b[prefix.len()..] {
            [] => Expr::Empty,
            rest => Expr::Bytes(rest.to_vec()),
        }),
        Expr::Seq(items) => {
            let mut rest = prefix;
            let mut out = Vec::with_capacity(items.len());
            let mut items = items.iter();
            while !rest.is_empty() {
                match items.next()? {
                    Expr::Bytes(b) if rest.starts_with(b) => rest = &rest[b.len()..],
                    item => {
                        out.push(without_prefix(item, rest)?);
                        rest = &[];
                    }
                }
            }
            out.extend(items.cloned());
            Some(Expr::seq(out))
        }
        Expr::Choice(alts) => Some(Expr::choice(
            alts.iter().map(|a| without_prefix(a, prefix)).collect::<Option<_>>()?,
        )),
        _ => None,
    }
}

/// The choice of a set of ASCII strings as a trie, bytes with the same continuations
/// merged into one class: the escapes of all 32 control characters become
/// `\\ ([bfnrt] | u00 ([0-7BEFbef] | 1 [0-9A-Fa-f]))`-like expressions of a dozen nodes
/// instead of sixty literals, which keeps the automata of key complements small.
fn ascii_trie(mut strings: Vec<Vec<u8>>) -> Expr {
    strings.sort();
    strings.dedup();
    let ends = strings.first().is_some_and(Vec::is_empty);
    // (first byte, continuations), in byte order.
    let mut groups: Vec<(u8, Vec<Vec<u8>>)> = Vec::new();
    for s in strings.iter().filter(|s| !s.is_empty()) {
        match groups.last_mut() {
            Some((b, rest)) if *b == s[0] => rest.push(s[1..].to_vec()),
            _ => groups.push((s[0], vec![s[1..].to_vec()])),
        }
    }
    // Bytes with identical continuations share one class.
    let mut merged: Vec<(Vec<u8>, Vec<Vec<u8>>)> = Vec::new();
    for (b, rest) in groups {
        match merged.iter_mut().find(|(_, r)| *r == rest) {
            Some((bytes, _)) => bytes.push(b),
            None => merged.push((vec![b], rest)),
        }
    }
    let mut alts: Vec<Expr> = Vec::new();
    if ends {
        alts.push(Expr::Empty);
    }
    for (bytes, rest) in merged {
        let ranges = bytes.iter().map(|&b| (char::from(b), char::from(b)));
        let head = if bytes.len() == 1 {
            Expr::Bytes(bytes)
        } else {
            Expr::Class(CharClass::new(false, ranges))
        };
        let tail = ascii_trie(rest);
        alts.push(if tail == Expr::Empty { head } else { Expr::Seq(vec![head, tail]) });
    }
    Expr::choice(alts)
}

/// `ranges` minus `remove` (both sorted, merged, inclusive).
pub fn subtract(ranges: &[(char, char)], remove: &[(char, char)]) -> Vec<(char, char)> {
    let mut out = Vec::new();
    for &(lo, hi) in ranges {
        let mut pieces = vec![(lo as u32, hi as u32)];
        for &(rlo, rhi) in remove {
            let (rlo, rhi) = (rlo as u32, rhi as u32);
            let mut next = Vec::new();
            for (a, b) in pieces {
                if rhi < a || rlo > b {
                    next.push((a, b));
                    continue;
                }
                if rlo > a {
                    next.push((a, rlo - 1));
                }
                if rhi < b {
                    next.push((rhi + 1, b));
                }
            }
            pieces = next;
        }
        for (a, b) in pieces {
            if let (Some(a), Some(b)) = (scalar_at_or_after(a), scalar_at_or_before(b)) {
                if a <= b {
                    out.push((a, b));
                }
            }
        }
    }
    out
}

/// The first scalar value at or after `v` (past the surrogates).
fn scalar_at_or_after(v: u32) -> Option<char> {
    char::from_u32(v).or_else(|| char::from_u32(0xE000).filter(|_| (0xD800..0xE000).contains(&v)))
}

/// The last scalar value at or before `v` (before the surrogates).
fn scalar_at_or_before(v: u32) -> Option<char> {
    char::from_u32(v).or_else(|| char::from_u32(0xD7FF).filter(|_| (0xD800..0xE000).contains(&v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A class with short escapes and `\u` forms reads one backslash, then a choice of
    /// what follows it, the `\u` forms as one alternative starting with `u`.
    #[test]
    fn escapes_follow_one_backslash_with_the_unicode_forms_one_alternative() {
        let class = CharClass::new(true, [('a', 'a')]);
        let Expr::Choice(alts) = encode_class(&class, CharEncoding::JsonString) else {
            panic!("a choice")
        };
        let escapes: Vec<&Expr> = alts
            .iter()
            .filter(|a| matches!(a, Expr::Seq(items) if items[0].is_literal("\\")))
            .collect();
        assert_eq!(escapes.len(), 1, "{alts:?}");
        let Expr::Seq(items) = escapes[0] else { unreachable!() };
        let Expr::Choice(after) = &items[1] else { panic!("{:?}", items[1]) };
        let unicode: Vec<&Expr> =
            after.iter().filter(|a| matches!(a, Expr::Seq(s) if s[0].is_literal("u"))).collect();
        assert_eq!(unicode.len(), 1, "{after:?}");
        // Nothing else starts with `\u`.
        assert!(alts.iter().all(|a| without_prefix(a, b"\\u").is_none()));
    }

    #[test]
    fn a_prefix_is_taken_from_every_text_or_none() {
        let e = Expr::choice(vec![
            Expr::literal("\\u00"),
            Expr::Seq(vec![Expr::literal("\\"), Expr::literal("u"), Expr::literal("x")]),
        ]);
        assert_eq!(
            without_prefix(&e, b"\\u"),
            Some(Expr::choice(vec![Expr::literal("00"), Expr::literal("x")]))
        );
        let mixed = Expr::choice(vec![Expr::literal("\\u"), Expr::literal("\\n")]);
        assert_eq!(without_prefix(&mixed, b"\\u"), None);
        assert_eq!(without_prefix(&Expr::Class(CharClass::any()), b"\\"), None);
    }
}
