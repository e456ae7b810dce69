//! `$ref` resolution: every `$ref` of the document (and of the remote documents given in
//! the options) is rewritten, before conversion, into a canonical reference to a document
//! and a JSON pointer, following `$id`/`id` base URIs and `$anchor`s. Conversion then
//! never needs a base URI, so subschemas can be merged and moved freely. The canonical
//! form of a reference into the schema itself is `#` and the pointer, which most schemas
//! write (`#/definitions/...`): such a reference is left as it is, and a schema whose
//! references all are is read in place rather than copied.

use super::{limit_error, Dialect, JsonSchemaOptions};
use crate::diagnostic::{Category, Diagnostic};
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;
use std::borrow::Cow;

/// The scheme of rewritten references into a remote document:
/// `grammask-doc:INDEX#POINTER` (into the schema, document 0: `#POINTER`).
const CANONICAL: &str = "grammask-doc:";

/// The base URI of a document that declares none.
const DEFAULT_BASE: &str = "urn:grammask:schema";

/// Escapes one JSON pointer token.
pub(crate) fn escape_token(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    push_token(&mut out, token);
    out
}

/// `ptr` followed by `token` as one more of its tokens: the pointer of a member or item
/// (made for every subschema a conversion walks, so written without formatting).
pub(crate) fn child_pointer(ptr: &str, token: &str) -> String {
    let mut out = String::with_capacity(ptr.len() + token.len() + 1);
    out.push_str(ptr);
    out.push('/');
    push_token(&mut out, token);
    out
}

/// Appends `token` to `out`, escaped as a JSON pointer token (`~0`, `~1`).
fn push_token(out: &mut String, token: &str) {
    if !token.contains(['~', '/']) {
        out.push_str(token);
        return;
    }
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// A `$ref` found while walking, to be rewritten.
struct RefSite {
    doc: usize,
    ptr: String,
    base: String,
    target: String,
}

#[derive(Default)]
struct Registry {
    resources: HashMap<String, (usize, String)>,
    anchors: HashMap<String, (usize, String)>,
    refs: Vec<RefSite>,
}

/// The scheme of a `$ref` that could not be resolved: `grammask-error:INDEX` into the
/// errors returned by [`canonicalize`], reported when the reference is used.
const UNRESOLVED: &str = "grammask-error:";

/// The documents, their drafts, and the errors of unresolved references.
type Canonical<'s> = (Vec<Cow<'s, Value>>, Vec<Dialect>, Vec<Diagnostic>);

/// The documents with every `$ref` rewritten (index 0 is the schema, then the remotes),
/// the draft of each (a remote document naming none is read in the schema's), and the
/// errors of the references that could not be resolved. A document is copied only when
/// something in it is rewritten.
pub(crate) fn canonicalize<'s>(
    schema: &'s Value,
    opts: &'s JsonSchemaOptions,
    dialect: Dialect,
) -> Result<Canonical<'s>, Diagnostic> {
    let mut docs = vec![Cow::Borrowed(schema)];
    let mut bases = vec![opts.base_uri.as_deref().map_or(DEFAULT_BASE, strip_fragment).to_string()];
    for (uri, doc) in &opts.remote_documents {
        docs.push(Cow::Borrowed(doc));
        bases.push(strip_fragment(uri).to_string());
    }
    let mut dialects = vec![dialect];
    for doc in &docs[1..] {
        // A remote document of an unknown meta-schema is read in the schema's draft.
        dialects.push(Dialect::within(doc, dialect).unwrap_or(dialect));
    }
    let mut reg = Registry::default();
    for (i, doc) in docs.iter().enumerate() {
        reg.resources.insert(bases[i].clone(), (i, String::new()));
        let at = Walk { doc: i, dialect: dialects[i], max_depth: opts.max_depth };
        at.walk(&mut reg, doc, String::new(), &bases[i], 0)?;
    }
    let mut errors = Vec::new();
    for site in std::mem::take(&mut reg.refs) {
        let canonical = match resolve(&reg, &docs, &site) {
            Ok((0, ptr)) if site.doc == 0 && site.target.strip_prefix('#') == Some(&ptr) => {
                continue;
            }
            Ok((0, ptr)) => format!("#{ptr}"),
            Ok((doc, ptr)) => format!("{CANONICAL}{doc}#{ptr}"),
            Err(e) => {
                errors.push(e);
                format!("{UNRESOLVED}{}", errors.len() - 1)
            }
        };
        if let Some(Value::Object(obj)) = docs[site.doc].to_mut().pointer_mut(&site.ptr) {
            obj.insert("$ref".to_string(), Value::String(canonical));
        }
    }
    Ok((docs, dialects, errors))
}

/// The index of the resolution error of an unresolved reference.
pub(crate) fn parse_unresolved(r: &str) -> Option<usize> {
    r.strip_prefix(UNRESOLVED)?.parse().ok()
}

/// The document index and pointer of a canonical reference: `#POINTER` into the schema
/// (document 0), `grammask-doc:INDEX#POINTER` into a remote document.
pub(crate) fn parse_canonical(r: &str) -> Option<(usize, &str)> {
    if let Some(ptr) = r.strip_prefix('#') {
        return Some((0, ptr));
    }
    let rest = r.strip_prefix(CANONICAL)?;
    let (doc, ptr) = rest.split_once('#')?;
    Some((doc.parse().ok()?, ptr))
}

/// Where the walk over one document is, and how its draft reads identifiers.
struct Walk {
    doc: usize,
    dialect: Dialect,
    max_depth: usize,
}

impl Walk {
    /// The keywords that set a base URI or an anchor in this draft.
    fn identifier_keys(&self) -> &'static [&'static str] {
        use super::Draft;
        match (self.dialect.named, self.dialect.draft) {
            (false, _) => &["$id", "id"],
            (true, Draft::Draft4) => &["id"],
            (true, _) => &["$id"],
        }
    }

    /// Registers the identifiers, anchors and references of `v` and its subschemas.
    fn walk(
        &self,
        reg: &mut Registry,
        v: &Value,
        ptr: String,
        base: &str,
        depth: usize,
    ) -> Result<(), Diagnostic> {
        if depth > self.max_depth {
            return Err(limit_error(&ptr, self.max_depth));
        }
        let Value::Object(obj) = v else { return Ok(()) };
        let doc = self.doc;
        let mut base = base.to_string();
        // In drafts 4 to 7 a `$ref` stands for its whole object: an identifier beside it
        // is ignored (the subschemas beside it stay reachable by JSON pointer).
        let ignored = self.dialect.ref_overrides_siblings() && obj.contains_key("$ref");
        let keys = if ignored { &[][..] } else { self.identifier_keys() };
        for key in keys {
            let Some(Value::String(id)) = obj.get(*key) else { continue };
            if *key == "id" && obj.contains_key("$id") {
                continue;
            }
            if let Some(anchor) = id.strip_prefix('#') {
                if !anchor.is_empty() && !anchor.starts_with('/') {
                    reg.anchors.insert(format!("{base}#{anchor}"), (doc, ptr.clone()));
                }
                continue;
            }
            base = strip_fragment(&join(&base, id)).to_string();
            reg.resources.insert(base.clone(), (doc, ptr.clone()));
        }
        for key in ["$anchor", "$dynamicAnchor"] {
            if ignored || !self.dialect.knows(key) {
                continue;
            }
            if let Some(Value::String(a)) = obj.get(key) {
                reg.anchors.entry(format!("{base}#{a}")).or_insert((doc, ptr.clone()));
            }
        }
        if let Some(Value::String(r)) = obj.get("$ref") {
            reg.refs.push(RefSite { doc, ptr: ptr.clone(), base: base.clone(), target: r.clone() });
        }
        for (key, child) in obj {
            let child_ptr = child_pointer(&ptr, key);
            match key.as_str() {
                "const" | "enum" | "examples" | "default" | "example" => {}
                "properties" | "patternProperties" | "$defs" | "definitions"
                | "dependentSchemas" | "dependencies" => {
                    if let Value::Object(map) = child {
                        for (name, s) in map {
                            let p = child_pointer(&child_ptr, name);
                            self.walk(reg, s, p, &base, depth + 1)?;
                        }
                    }
                }
                _ => match child {
                    Value::Array(items) => {
                        for (i, s) in items.iter().enumerate() {
                            let p = child_pointer(&child_ptr, &i.to_string());
                            self.walk(reg, s, p, &base, depth + 1)?;
                        }
                    }
                    Value::Object(_) => self.walk(reg, child, child_ptr, &base, depth + 1)?,
                    _ => {}
                },
            }
        }
        Ok(())
    }
}

fn resolve(
    reg: &Registry,
    docs: &[Cow<'_, Value>],
    site: &RefSite,
) -> Result<(usize, String), Diagnostic> {
    let at = format!("{}/$ref", site.ptr);
    let absolute = join(&site.base, &site.target);
    let (uri, fragment) = match absolute.split_once('#') {
        Some((u, f)) => (u.to_string(), percent_decode(f)),
        None => (absolute.clone(), String::new()),
    };
    let found = if fragment.is_empty() || fragment.starts_with('/') {
        reg.resources.get(&uri).map(|(d, p)| (*d, format!("{p}{fragment}")))
    } else {
        reg.anchors.get(&format!("{uri}#{fragment}")).cloned()
    };
    let Some((doc, ptr)) = found else {
        let remote =
            uri.starts_with("http:") || uri.starts_with("https:") || uri.starts_with("file:");
        let (category, what) = if remote && !reg.resources.contains_key(&uri) {
            (Category::Unsupported, "refers to a remote document that was not provided")
        } else {
            (Category::Invalid, "cannot be resolved")
        };
        return Err(Diagnostic::at_pointer(at, format!("$ref `{}` {what}", site.target))
            .with_category(category));
    };
    if docs[doc].pointer(&ptr).is_none() {
        return Err(Diagnostic::at_pointer(
            at,
            format!("$ref `{}` points to nothing in the document", site.target),
        ));
    }
    Ok((doc, ptr))
}

fn strip_fragment(uri: &str) -> &str {
    uri.split_once('#').map_or(uri, |(u, _)| u)
}

fn has_scheme(s: &str) -> bool {
    let Some(colon) = s.find(':') else { return false };
    let scheme = &s[..colon];
    !scheme.is_empty()
        && scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// Resolves `reference` against `base` (RFC 3986, enough for schema identifiers).
fn join(base: &str, reference: &str) -> String {
    if has_scheme(reference) {
        return reference.to_string();
    }
    let base = strip_fragment(base);
    if reference.is_empty() {
        return base.to_string();
    }
    if reference.starts_with('#') {
        return format!("{base}{reference}");
    }
    let scheme_end = base.find(':').map_or(0, |i| i + 1);
    if reference.starts_with("//") {
        return format!("{}{reference}", &base[..scheme_end]);
    }
    let after_scheme = &base[scheme_end..];
    // The authority ends at the first `/`, `?` or `#` (RFC 3986, 3.2).
    let authority_end = if let Some(rest) = after_scheme.strip_prefix("//") {
        scheme_end + 2 + rest.find(['/', '?', '#']).unwrap_or(rest.len())
    } else {
        scheme_end
    };
    let path_base = base.split(['?']).next().unwrap_or(base);
    let merged = if reference.starts_with('/') {
        format!("{}{reference}", &base[..authority_end])
    } else {
        let dir_end = path_base
            .rfind('/')
            .map_or(authority_end, |i| (i + 1).max(authority_end))
            .min(path_base.len());
        let mut dir = path_base[..dir_end].to_string();
        if dir.len() == authority_end && authority_end > scheme_end {
            dir.push('/');
        }
        format!("{dir}{reference}")
    };
    remove_dot_segments(&merged, authority_end.min(merged.len()))
}

fn remove_dot_segments(uri: &str, path_start: usize) -> String {
    let (head, path) = uri.split_at(path_start);
    let (path, tail) = match path.find(['?', '#']) {
        Some(i) => path.split_at(i),
        None => (path, ""),
    };
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {
                if i == segments.len() - 1 {
                    out.push("");
                }
            }
            ".." => {
                if out.len() > 1 {
                    out.pop();
                }
                if i == segments.len() - 1 {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("{head}{}{tail}", out.join("/"))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_uris() {
        assert_eq!(join("http://x.com/a/b.json", "c.json"), "http://x.com/a/c.json");
        assert_eq!(join("http://x.com/a/b.json", "/c.json"), "http://x.com/c.json");
        assert_eq!(join("http://x.com/a/b.json", "../c.json"), "http://x.com/c.json");
        assert_eq!(join("http://x.com/a/b.json", "#foo"), "http://x.com/a/b.json#foo");
        assert_eq!(join("http://x.com", "c.json"), "http://x.com/c.json");
        assert_eq!(join("urn:x:y", "#/a"), "urn:x:y#/a");
        // A query right after the host ends the authority (was a slice past the end).
        assert_eq!(join("http://x.com?q/a/b.json", "c.json"), "http://x.com/c.json");
        assert_eq!(join("http://x.com?:1234/a", "/c.json"), "http://x.com/c.json");
        assert_eq!(join("http://x.com#f", "c.json"), "http://x.com/c.json");
    }
}
