//! Grammars of the `format`s enforced in [`FormatMode::Assert`](super::FormatMode):
//! date-time, date, time (RFC 3339, seconds 00 to 59: a leap second, second 60, is
//! refused, since a generator never needs one and validators disagree on it; leap years
//! by the Gregorian rule), duration (ISO 8601 as in RFC 3339
//! appendix A), email (RFC 5321 mailbox: dot-atom or quoted local part; host name or
//! address literal), ipv4 (no
//! leading zeros), ipv6 (RFC 4291 text forms), uuid, uri and uri-reference (RFC 3986).
//!
//! Each grammar is the content of a JSON string and becomes a shared rule named
//! `format-NAME`. Email domains are RFC 1123 host names (labels of at most 63
//! characters; the total length is not enforced there). json-pointer and
//! relative-json-pointer are enforced too.

use super::Converter;
use crate::ir::{Expr, GrammarBuilder};
use crate::regex::{regex_to_ir, CharEncoding, RegexOptions};
use std::sync::OnceLock;

/// The formats with a grammar.
pub(crate) const KNOWN: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "ipv4",
    "ipv6",
    "uuid",
    "uri",
    "uri-reference",
    "json-pointer",
    "relative-json-pointer",
];

/// Formats of the specification that are not enforced: refused in assert mode.
/// `hostname`: the total length (253) and IDNA rules of `xn--` labels cannot be expressed
/// exactly.
pub(crate) const UNIMPLEMENTED: &[&str] =
    &["hostname", "idn-hostname", "idn-email", "iri", "iri-reference", "uri-template", "regex"];

const DATE: &str = "(?:[0-9]{4}-(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|[0-9]{4}-(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|[0-9]{4}-02-(?:0[1-9]|1[0-9]|2[0-8])|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)";
const PARTIAL_TIME: &str = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?";
const OFFSET: &str = "(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
const DURATION: &str = "P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?|T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)|[0-9]+W)";
const LABEL: &str = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const IPV4: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}";
const JSON_POINTER: &str = "(?:/(?:[^/~]|~[01])*)*";
const UUID: &str = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

fn hostname() -> String {
    format!("{LABEL}(?:\\.{LABEL})*")
}

fn ipv6() -> String {
    let h = "[0-9A-Fa-f]{1,4}";
    let ls32 = format!("(?:{h}:{h}|{IPV4})");
    let forms = [
        format!("(?:{h}:){{6}}{ls32}"),
        format!("::(?:{h}:){{5}}{ls32}"),
        format!("(?:{h})?::(?:{h}:){{4}}{ls32}"),
        format!("(?:(?:{h}:){{0,1}}{h})?::(?:{h}:){{3}}{ls32}"),
        format!("(?:(?:{h}:){{0,2}}{h})?::(?:{h}:){{2}}{ls32}"),
        format!("(?:(?:{h}:){{0,3}}{h})?::{h}:{ls32}"),
        format!("(?:(?:{h}:){{0,4}}{h})?::{ls32}"),
        format!("(?:(?:{h}:){{0,5}}{h})?::{h}"),
        format!("(?:(?:{h}:){{0,6}}{h})?::"),
    ];
    format!("(?:{})", forms.join("|"))
}

fn uri_parts() -> (String, String, String, String) {
    let unreserved = "A-Za-z0-9._~\\-";
    let sub = "!$&'()*+,;=";
    let pct = "%[0-9A-Fa-f]{2}";
    let pchar = format!("(?:[{unreserved}{sub}:@]|{pct})");
    let userinfo = format!("(?:[{unreserved}{sub}:]|{pct})*");
    let reg_name = format!("(?:[{unreserved}{sub}]|{pct})*");
    let host = format!("(?:\\[{}\\]|{IPV4}|{reg_name})", ipv6());
    let authority = format!("(?:{userinfo}@)?{host}(?::[0-9]*)?");
    let abempty = format!("(?:/{pchar}*)*");
    let absolute = format!("/(?:{pchar}+(?:/{pchar}*)*)?");
    let rootless = format!("{pchar}+(?:/{pchar}*)*");
    let query = format!("(?:\\?(?:{pchar}|[/?])*)?(?:#(?:{pchar}|[/?])*)?");
    let hier = format!("(?://{authority}{abempty}|{absolute}|{rootless}|)");
    let noscheme = format!("(?:[{unreserved}{sub}@]|{pct})+(?:/{pchar}*)*");
    let relative = format!("(?://{authority}{abempty}|{absolute}|{noscheme}|)");
    (hier, relative, query, "[A-Za-z][A-Za-z0-9+.\\-]*".to_string())
}

pub(crate) fn regex_for(name: &str) -> Option<String> {
    Some(match name {
        "date" => DATE.to_string(),
        "duration" => DURATION.to_string(),
        "hostname" => hostname(),
        "ipv4" => IPV4.to_string(),
        "ipv6" => ipv6(),
        "uuid" => UUID.to_string(),
        "json-pointer" => JSON_POINTER.to_string(),
        "relative-json-pointer" => format!("(?:0|[1-9][0-9]*)(?:#|{JSON_POINTER})"),
        "email" => {
            let atom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\-]+";
            let quoted = "\"(?:[^\"\\\\\\x00-\\x1f]|\\\\[\\x20-\\x7e])*\"";
            format!(
                "(?:{atom}(?:\\.{atom})*|{quoted})@(?:{}|\\[{IPV4}\\]|\\[IPv6:{}\\])",
                hostname(),
                ipv6()
            )
        }
        "uri" => {
            let (hier, _, query, scheme) = uri_parts();
            format!("{scheme}:{hier}{query}")
        }
        "uri-reference" => {
            let (hier, relative, query, scheme) = uri_parts();
            format!("(?:{scheme}:{hier}{query}|{relative}{query})")
        }
        _ => return None,
    })
}

/// The grammar of format `name` (but date-time, made of its two rules), built once per
/// process: the same for every schema, and a regex to parse and lower for most.
fn format_body(name: &str) -> Option<Expr> {
    static BODIES: [OnceLock<Option<Expr>>; KNOWN.len()] = [const { OnceLock::new() }; KNOWN.len()];
    let i = KNOWN.iter().position(|&k| k == name)?;
    BODIES[i]
        .get_or_init(|| match name {
            "time" => time_expr(),
            _ => {
                let opts = RegexOptions { whole_match: true, encoding: CharEncoding::JsonString };
                regex_to_ir(&regex_for(name)?, &mut GrammarBuilder::new(), opts).ok()
            }
        })
        .clone()
}

/// RFC 3339 `full-time` without leap seconds (seconds 00 to 59).
pub(crate) fn time_expr() -> Option<Expr> {
    let opts = RegexOptions { whole_match: true, encoding: CharEncoding::JsonString };
    regex_to_ir(&format!("{PARTIAL_TIME}{OFFSET}"), &mut GrammarBuilder::new(), opts).ok()
}

impl Converter<'_> {
    /// The content grammar of a known format, as a shared rule; `None` for unknown names.
    pub(crate) fn format_expr(&mut self, name: &str) -> Option<Expr> {
        if !KNOWN.contains(&name) {
            return None;
        }
        let rule_name = format!("format-{name}");
        if let Some(id) = self.b.lookup(&rule_name) {
            return Some(Expr::Rule(id));
        }
        let body = match name {
            "time" => format_body(name)?,
            "date-time" => {
                let time = self.format_expr("time")?;
                let date = self.format_expr("date")?;
                Expr::Seq(vec![date, Expr::class(false, [('T', 'T'), ('t', 't')]), time])
            }
            _ => format_body(name)?,
        };
        let id = self.b.declare(&rule_name);
        self.b.define(id, body);
        Some(Expr::Rule(id))
    }
}
