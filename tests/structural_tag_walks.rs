//! Proves that structural tags give exact token masks on real vocabularies (Llama-3 and
//! Qwen3 `tokenizer.json`): the mask allows a token exactly when accepting that token on a
//! fork of the matcher succeeds (stop tokens: exactly when the text can end), however the
//! vocabulary splits a trigger.
//!
//! Four tags: (a) Hermes tool calls (`triggered_tags` on `<tool_call>`, two tools),
//! (b) reasoning then answer (`<think>` any_text `</think>`, then (a) with excludes),
//! (c) `tags_with_separator`, (d) `any_text` with `excludes`.
//!
//! - **Every split of a trigger.** For `<tool_call>` in (a) and in (b), and `</think>` in
//!   (b): the tokens that overlap the trigger (a substring of it, text then a prefix of
//!   it, a suffix of it then more text, or all of it with text around). Texts
//!   `lead + free text + trigger + what the tag expects next` (the free text taken from a
//!   few fixed strings and from the text before the trigger in every overlapping token)
//!   are spelled in vocabulary tokens: for every overlapping token at every position it
//!   takes, one segmentation that holds it, then more from a breadth-first enumeration
//!   over positions, de-duplicated, up to [`MAX_SEGMENTATIONS`] per trigger. Every token
//!   that is a substring of the trigger, or text then a prefix of it (with valid free
//!   text before), is in some segmentation. Each is driven token by token: the token is
//!   in the mask and `accept_token` succeeds, a byte-level matcher accepts its bytes, and
//!   at every state (once per token prefix) the mask equals the per-token check and a
//!   byte-level check on all overlapping tokens and the stop tokens (so the tokens that
//!   go on after the trigger otherwise than the tag expects are refused at every state);
//!   on all ids at every step of the first segmentation, and on a sample (below) at every
//!   step of the first [`CHECKED_SEGMENTATIONS`]. Wrong continuations are refused, by
//!   bytes and by every token that starts with them (`<tool_call>x`, `</think></think>`,
//!   `Hello <tool_call>` under excludes, ...).
//! - **Masked random walks** (seeded): [`WALKS_PER_TAG`] walks per tag and vocabulary,
//!   each following a planned output (free text, the trigger, the tag body, free text
//!   again; one plan ends inside a partial trigger) with random detours the grammar
//!   allows (short tokens, tokens with `<`/`>`, JSON whitespace; a detour keeps the
//!   number of triggers, so the walk does write the tags), ending with a stop token. At
//!   every step the mask is compared with the per-token check. That check costs about
//!   150 ms on a whole vocabulary in a debug build, so it covers all ids every
//!   [`FULL_EVERY`] steps and, at the other steps, [`SAMPLE`] random ids plus every token
//!   containing `<` or `>` plus the stop tokens. The mask is never empty, every token of
//!   the plan's remaining text is in it, the text so far is a prefix for a byte-level
//!   matcher, and the finished text (after the stop token) is accepted by a fresh
//!   byte-level matcher of the same tag.
//!
//! The vocabularies are read from `$GRAMMASK_TOKENIZERS/{llama3,qwen3}/tokenizer.json`
//! (`scripts/fetch-tokenizers.sh`); without them each test is skipped with a loud
//! `SKIPPED:` line on stderr.

use grammask::syntax::StructuralTagOptions;
use grammask::{bitmask_len, byte_vocabulary, get_bit, CompiledGrammar, Compiler, Matcher};
use grammask::{TokenKind, Vocabulary};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

const WALKS_PER_TAG: usize = 4;
const MAX_STEPS: usize = 64;
/// Walk steps at which the whole vocabulary is checked: every `FULL_EVERY`-th.
const FULL_EVERY: usize = 8;
/// Random ids checked at the other steps (besides `<`/`>` tokens and stop tokens).
const SAMPLE: usize = 5000;
/// Segmentations driven per trigger and vocabulary (beyond the ones every overlapping
/// token needs, if those are more).
const MAX_SEGMENTATIONS: usize = 400;
/// Segmentations checked on the sample at every step (the first also on all ids).
const CHECKED_SEGMENTATIONS: usize = 20;

/// (a) Hermes tool calls: free text in which `<tool_call>` starts one of two tools.
const TOOL_CALLS: &str = r#"{"type": "structural_tag", "format": {
  "type": "triggered_tags", "triggers": ["<tool_call>"],
  "tags": [
    {"type": "tag", "begin": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ",
     "content": {"type": "json_schema", "json_schema": {"type": "object",
       "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
       "required": ["city"]}},
     "end": "}\n</tool_call>"},
    {"type": "tag", "begin": "<tool_call>\n{\"name\": \"get_time\", \"arguments\": ",
     "content": {"type": "json_schema", "json_schema": {"type": "object",
       "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}},
     "end": "}\n</tool_call>"}
  ],
  "at_least_one": false, "stop_after_first": false}}"#;

/// (b) Reasoning, then an answer with tool calls.
const REASONING: &str = r#"{"type": "structural_tag", "format": {"type": "sequence", "elements": [
  {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
  {"type": "triggered_tags", "triggers": ["<tool_call>"],
   "tags": [
    {"type": "tag", "begin": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ",
     "content": {"type": "json_schema", "json_schema": {"type": "object",
       "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
       "required": ["city"]}},
     "end": "}\n</tool_call>"},
    {"type": "tag", "begin": "<tool_call>\n{\"name\": \"get_time\", \"arguments\": ",
     "content": {"type": "json_schema", "json_schema": {"type": "object",
       "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}},
     "end": "}\n</tool_call>"}
   ],
   "at_least_one": false, "stop_after_first": false, "excludes": ["<think>", "</think>"]}
]}}"#;

/// (c) One or more calls separated by a line break, nothing else.
const SEPARATED: &str = r#"{"type": "structural_tag", "format": {
  "type": "tags_with_separator", "separator": "\n", "at_least_one": true,
  "stop_after_first": false,
  "tags": [
    {"type": "tag", "begin": "<function=get_weather>",
     "content": {"type": "json_schema", "json_schema": {"type": "object",
       "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
       "required": ["city"]}},
     "end": "</function>"},
    {"type": "tag", "begin": "<function=get_time>",
     "content": {"type": "json_schema", "json_schema": {"type": "object",
       "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}},
     "end": "</function>"}
  ]}}"#;

/// (d) Free text that never contains the excluded strings.
const EXCLUDES: &str = r#"{"type": "structural_tag", "format":
  {"type": "any_text", "excludes": ["<tool_call>", "</answer>", "BAD"]}}"#;

/// Per tag: its name, its JSON, the strings a detour must not break or make (the walk
/// keeps their count), and the outputs the walks head for (all complete).
type TagCase = (&'static str, &'static str, &'static [&'static str], &'static [&'static str]);
const TAGS: &[TagCase] = &[
    ("tool_calls", TOOL_CALLS, &["<tool_call>"], &[
        "Let me check. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>\nDone.",
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Europe/Oslo\"}}\n</tool_call>",
        "A <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>, <tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>",
        "Hmm, maybe <tool_ca",
    ]),
    ("reasoning", REASONING, &["<think>", "</think>", "<tool_call>"], &[
        "<think>The user wants the weather in Paris.</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "<think>a </thin x</think>Hi <tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>\nOK",
        "<think></think>No tools are needed for <b>this</b>.",
        "<think>plan</think>x <tool_call",
    ]),
    ("separated", SEPARATED, &[], &[
        "<function=get_weather>{\"city\": \"Paris\"}</function>",
        "<function=get_time>{\"timezone\": \"UTC\"}</function>\n<function=get_weather>{\"city\": \"Rome\", \"unit\": \"fahrenheit\"}</function>",
        "<function=get_weather>{\n  \"city\": \"Oslo\"\n}</function>\n<function=get_time>{\"timezone\":\"CET\"}</function>",
        "<function=get_time>{ \"timezone\" : \"Asia/Tokyo\" }</function>",
    ]),
    ("excludes", EXCLUDES, &[], &[
        "Hello world, this is free text with <tags> and </answer-ish> things.",
        "A <tool_call without its end, BA D and <tool_ x",
        "Just text.\n\nMore text with \"quotes\" and {braces} <tool_call",
        "<</answer</answe BABA",
    ]),
];

/// The triggers whose splits are enumerated: (tag, trigger, text before the free text,
/// what the tag expects after the trigger, strings the free text must not contain).
const TRIGGERS: &[(&str, &str, &str, &str, &[&str])] = &[
    ("tool_calls", "<tool_call>", "", "\n{\"name\": \"get_", &["<tool_call>"]),
    ("reasoning", "</think>", "<think>", "\n\nOK", &["</think>"]),
    (
        "reasoning",
        "<tool_call>",
        "<think>ok</think>",
        "\n{\"name\": \"get_",
        &["<tool_call>", "<think>", "</think>"],
    ),
];

/// Continuations that must be refused: (tag, text, continuation).
const WRONG: &[(&str, &str, &str)] = &[
    ("tool_calls", "Hello <tool_call>", "x"),
    ("tool_calls", "<tool_call>", "\n{\"name\": \"get_x"),
    ("tool_calls", "Hi <tool_call>\n{\"name\": \"get_time\", \"arguments\": {", "\"city\""),
    ("reasoning", "<think>ok</think>", "</think>"),
    ("reasoning", "<think>ok</think>", "<think>"),
    ("reasoning", "<think>ok</think>Hi <tool_call>", "x"),
    ("reasoning", "", "Hi"),
    ("separated", "", "Hi"),
    ("separated", "<function=get_time>{\"timezone\": \"UTC\"}</function>\n", " "),
    ("separated", "<function=get_time>{\"timezone\": \"UTC\"}</function>", ","),
    ("excludes", "Hello <tool_call", ">"),
    ("excludes", "It is BA", "D"),
    ("excludes", "x</answer", ">"),
];

use grammask_fuzz::rng::XorShift as Rng;

/// A vocabulary with a lookup from bytes to the (smallest) text token id.
struct Tokens {
    vocab: Arc<Vocabulary>,
    by_bytes: HashMap<Vec<u8>, u32>,
    max_len: usize,
    /// Every id (of any kind) whose bytes contain `<` or `>`.
    angle: Vec<u32>,
}

impl Tokens {
    fn new(vocab: Vocabulary) -> Tokens {
        let vocab = Arc::new(vocab);
        let (mut by_bytes, mut max_len, mut angle) = (HashMap::new(), 0, Vec::new());
        for (id, kind, b) in vocab.iter() {
            if b.contains(&b'<') || b.contains(&b'>') {
                angle.push(id);
            }
            if kind.is_text() && !vocab.is_stop(id) && !b.is_empty() {
                by_bytes.entry(b.to_vec()).or_insert(id);
                max_len = max_len.max(b.len());
            }
        }
        Tokens { vocab, by_bytes, max_len, angle }
    }

    fn bytes(&self, id: u32) -> &[u8] {
        self.vocab.token_bytes(id).unwrap_or_default()
    }

    /// The text tokens that `s[pos..]` starts with, as (id, length), longest first.
    fn at(&self, s: &[u8], pos: usize) -> Vec<(u32, usize)> {
        let longest = self.max_len.min(s.len() - pos);
        (1..=longest)
            .rev()
            .filter_map(|k| self.by_bytes.get(&s[pos..pos + k]).map(|&id| (id, k)))
            .collect()
    }

    /// Greedy longest-match tokenization.
    fn greedy(&self, s: &[u8]) -> Vec<u32> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < s.len() {
            let (id, k) = self.at(s, pos)[0]; // every byte is a token of these vocabularies
            out.push(id);
            pos += k;
        }
        out
    }
}

/// A seed per vocabulary label.
fn seed_of(label: &str) -> u64 {
    label.bytes().fold(7919, |h, b| h.wrapping_mul(31).wrapping_add(b as u64))
}

fn show(b: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(b))
}

/// The vocabulary `name` from `$GRAMMASK_TOKENIZERS`, loaded once per process; `None`
/// (after a `SKIPPED:` line) when it is not there.
fn tokens(name: &str, what: &str) -> Option<Arc<Tokens>> {
    static LOADED: OnceLock<std::sync::Mutex<HashMap<String, Arc<Tokens>>>> = OnceLock::new();
    let Some(dir) = std::env::var_os("GRAMMASK_TOKENIZERS") else {
        eprintln!("SKIPPED: {what} on {name}: GRAMMASK_TOKENIZERS is not set (scripts/fetch-tokenizers.sh)");
        return None;
    };
    let path = Path::new(&dir).join(name).join("tokenizer.json");
    if !path.is_file() {
        eprintln!(
            "SKIPPED: {what} on {name}: {} is missing (scripts/fetch-tokenizers.sh)",
            path.display()
        );
        return None;
    }
    let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap();
    let entry = loaded.entry(name.to_string()).or_insert_with(|| {
        let vocab = Vocabulary::from_tokenizer_json(&path).unwrap();
        assert!(!vocab.stop_tokens().is_empty(), "{name} has stop tokens");
        Arc::new(Tokens::new(vocab))
    });
    Some(entry.clone())
}

/// A tag compiled for the vocabulary and for single bytes.
struct Tag {
    name: &'static str,
    grammar: Arc<CompiledGrammar>,
    bytes: Arc<CompiledGrammar>,
}

fn compile(tokens: &Tokens, name: &'static str) -> Tag {
    let json = TAGS.iter().find(|t| t.0 == name).expect("a tag of TAGS").1;
    let value: Value = serde_json::from_str(json).expect("tag JSON");
    let opts = StructuralTagOptions::default();
    let grammar = Compiler::from_arc(tokens.vocab.clone()).compile_structural_tag(&value, &opts);
    let bytes = Compiler::new(&byte_vocabulary()).compile_structural_tag(&value, &opts);
    Tag { name, grammar: grammar.unwrap(), bytes: bytes.unwrap() }
}

/// Asserts that the mask `words` of `m` allows each of `ids` exactly when the per-token
/// check does: `accept_token` on a fork succeeds; for stop tokens, `can_terminate()`.
/// Returns how many ids were checked.
fn assert_exact(
    m: &Matcher,
    words: &[u32],
    ids: impl IntoIterator<Item = u32>,
    text: &[u8],
    what: &str,
) -> usize {
    let vocab = m.grammar().vocabulary();
    let can_end = m.can_terminate();
    let (mut checked, mut diffs) = (0, Vec::new());
    for id in ids {
        checked += 1;
        let by_fork = m.fork().accept_token(id).is_ok();
        let expected = if vocab.is_stop(id) {
            assert_eq!(
                by_fork,
                can_end,
                "{what}: stop token {id} vs can_terminate after {}",
                show(text)
            );
            can_end
        } else {
            by_fork
        };
        if get_bit(words, id) != expected {
            diffs.push(id);
        }
    }
    if !diffs.is_empty() {
        let first: Vec<String> = diffs
            .iter()
            .take(8)
            .map(|&id| {
                let b = vocab.token_bytes(id).unwrap_or_default();
                format!("{id} {} (mask {})", show(b), get_bit(words, id))
            })
            .collect();
        panic!(
            "{what}: after {} the mask differs from the per-token check on {} of {checked} ids: {}",
            show(text),
            diffs.len(),
            first.join(", ")
        );
    }
    checked
}

/// Asserts that the mask allows each text token of `ids` exactly when the byte-level
/// matcher `bm` (at the same text) accepts its bytes.
fn assert_bytes_agree(
    bm: &Matcher,
    words: &[u32],
    t: &Tokens,
    ids: &[u32],
    text: &[u8],
    what: &str,
) {
    for &id in ids {
        if t.vocab.kind(id) == Some(TokenKind::Special) || t.vocab.is_stop(id) {
            continue;
        }
        let by_bytes = bm.fork().accept_bytes(t.bytes(id)).is_ok();
        assert_eq!(
            get_bit(words, id),
            by_bytes,
            "{what}: after {} token {id} {}: mask vs the byte-level matcher",
            show(text),
            show(t.bytes(id))
        );
    }
}

/// `SAMPLE` random ids, the `<`/`>` tokens and the stop tokens.
fn sample(t: &Tokens, rng: &mut Rng) -> Vec<u32> {
    let size = t.vocab.vocab_size();
    let mut ids: Vec<u32> = (0..SAMPLE).map(|_| rng.below(size) as u32).collect();
    ids.extend(&t.angle);
    ids.extend(t.vocab.stop_tokens());
    ids
}

fn fill(m: &Matcher, words: &mut [u32]) {
    m.fill_next_token_bitmask(words).unwrap();
}

/// The tokens that overlap `trigger`, by how they overlap it.
#[derive(Default)]
struct Overlap {
    inside: Vec<u32>,
    before: Vec<u32>,
    after: Vec<u32>,
    across: Vec<u32>,
}

impl Overlap {
    fn find(t: &Tokens, trigger: &[u8]) -> Overlap {
        let mut o = Overlap::default();
        let n = trigger.len();
        for (id, kind, b) in t.vocab.iter() {
            if !kind.is_text() || t.vocab.is_stop(id) || b.is_empty() {
                continue;
            }
            if b.len() <= n && trigger.windows(b.len()).any(|w| w == b) {
                o.inside.push(id);
            }
            if (1..=n).any(|k| b.len() > k && b.ends_with(&trigger[..k])) {
                o.before.push(id);
            }
            if (1..n).any(|j| b.len() > n - j && b.starts_with(&trigger[j..])) {
                o.after.push(id);
            }
            if b.len() > n && b.windows(n).any(|w| w == trigger) {
                o.across.push(id);
            }
        }
        o
    }

    fn all(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = [&self.inside, &self.before, &self.after, &self.across]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

/// One text `lead + pre + trigger + cont` to spell; the trigger is at `at`.
struct Spelling {
    text: Vec<u8>,
    lead: usize,
    at: usize,
    end: usize,
    /// Built from an overlapping token's text before the trigger.
    from_token: bool,
}

/// The free texts before the trigger: a few fixed ones, then the text before the
/// trigger (or its prefix) in each overlapping token, when it is valid free text; and
/// those tokens.
fn spellings(
    t: &Tokens,
    o: &Overlap,
    lead: &str,
    trigger: &str,
    cont: &str,
    avoid: &[&str],
) -> (Vec<Spelling>, Vec<u32>) {
    let tr = trigger.as_bytes();
    let mut pres: Vec<(Vec<u8>, Option<u32>)> = ["Hello ", "", "Hello", "Hi\n", "x<"]
        .iter()
        .map(|s| (s.as_bytes().to_vec(), None))
        .collect();
    pres.push((tr[..tr.len() - 1].to_vec(), None));
    pres.push(([&b"a "[..], &tr[..3]].concat(), None));
    for &id in o.before.iter().chain(&o.across) {
        let b = t.bytes(id);
        for k in 1..=tr.len() {
            if b.len() > k && b.ends_with(&tr[..k]) {
                pres.push((b[..b.len() - k].to_vec(), Some(id)));
            }
        }
        if let Some(p) = b.windows(tr.len()).position(|w| w == tr) {
            pres.push((b[..p].to_vec(), Some(id)));
        }
    }
    let (mut seen, mut out, mut sources) = (HashSet::new(), Vec::new(), Vec::new());
    for (pre, source) in pres {
        // Free text must not hold an avoided string; the trigger must first occur here.
        let body = [&pre[..], tr].concat();
        let clean = avoid.iter().all(|a| {
            let a = a.as_bytes();
            match body.windows(a.len()).position(|w| w == a) {
                None => true,
                Some(p) => a == tr && p == pre.len(),
            }
        });
        if !clean {
            continue;
        }
        sources.extend(source);
        if !seen.insert(pre.clone()) {
            continue;
        }
        let text = [lead.as_bytes(), &pre, tr, cont.as_bytes()].concat();
        let at = lead.len() + pre.len();
        let from_token = source.is_some();
        out.push(Spelling { text, lead: lead.len(), at, end: at + tr.len(), from_token });
    }
    (out, sources)
}

/// The lead tokenized greedily, then the free text up to `i` greedily.
fn left(t: &Tokens, s: &Spelling, i: usize) -> Vec<u32> {
    let mut v = t.greedy(&s.text[..s.lead]);
    v.extend(t.greedy(&s.text[s.lead..i]));
    v
}

/// The greedy segmentation of `s.text`, then for every token that overlaps the trigger
/// at any position (for a spelling built from a token: where the free text starts), one
/// segmentation with greedy tokens around it.
fn covering(t: &Tokens, s: &Spelling) -> Vec<Vec<u32>> {
    let mut out = vec![left(t, s, s.text.len())];
    for i in s.lead..s.end {
        if s.from_token && i != s.lead {
            break;
        }
        for (id, k) in t.at(&s.text, i) {
            if i + k > s.at {
                let mut seg = left(t, s, i);
                seg.push(id);
                seg.extend(t.greedy(&s.text[i + k..]));
                out.push(seg);
            }
        }
    }
    out
}

/// Every segmentation of `s.text` from the first token that can overlap the trigger on
/// (greedy before it), breadth-first over positions, at most `cap` paths per position.
fn enumerated(t: &Tokens, s: &Spelling, cap: usize) -> Vec<Vec<u32>> {
    let text = &s.text;
    let first = (s.lead..=s.at).find(|&i| t.at(text, i).iter().any(|&(_, k)| i + k > s.at));
    let first = first.unwrap_or(s.at);
    let mut paths: Vec<Vec<Vec<u32>>> = vec![Vec::new(); text.len() + 1];
    paths[first].push(left(t, s, first));
    for pos in first..text.len() {
        for path in std::mem::take(&mut paths[pos]) {
            for (id, k) in t.at(text, pos) {
                if paths[pos + k].len() < cap {
                    let mut next = path.clone();
                    next.push(id);
                    paths[pos + k].push(next);
                }
            }
        }
    }
    std::mem::take(&mut paths[text.len()])
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    /// All ids.
    Full,
    /// [`sample`].
    Sampled,
    /// Only the overlapping tokens and the stop tokens.
    Overlap,
}

#[derive(Default)]
struct Stats {
    segmentations: usize,
    steps: usize,
    states: usize,
    checked_ids: usize,
}

/// Drives one segmentation token by token (see the module docs); `checked` holds the
/// token prefixes whose state was already compared.
#[allow(clippy::too_many_arguments)]
fn drive(
    t: &Tokens,
    tag: &Tag,
    seg: &[u32],
    level: Level,
    overlap: &[u32],
    checked: &mut HashSet<Vec<u32>>,
    rng: &mut Rng,
    stats: &mut Stats,
) {
    let what = format!("{} on {}: segmentation {seg:?}", tag.name, t.vocab.origin());
    let mut m = Matcher::new(tag.grammar.clone());
    let mut bm = Matcher::new(tag.bytes.clone());
    let mut words = vec![0u32; bitmask_len(t.vocab.vocab_size())];
    let mut text = Vec::new();
    let mut check_ids: Vec<u32> = overlap.to_vec();
    check_ids.extend(t.vocab.stop_tokens());
    for i in 0..=seg.len() {
        fill(&m, &mut words);
        if checked.insert(seg[..i].to_vec()) {
            stats.states += 1;
            stats.checked_ids += assert_exact(&m, &words, check_ids.iter().copied(), &text, &what);
            assert_bytes_agree(&bm, &words, t, overlap, &text, &what);
            stats.checked_ids += match level {
                Level::Full => {
                    assert_exact(&m, &words, 0..t.vocab.vocab_size() as u32, &text, &what)
                }
                Level::Sampled => assert_exact(&m, &words, sample(t, rng), &text, &what),
                Level::Overlap => 0,
            };
        }
        let Some(&id) = seg.get(i) else { break };
        let b = t.bytes(id);
        assert!(
            get_bit(&words, id),
            "{what}: token {id} {} is not in the mask after {}",
            show(b),
            show(&text)
        );
        m.accept_token(id)
            .unwrap_or_else(|e| panic!("{what}: token {id} after {}: {e}", show(&text)));
        bm.accept_bytes(b)
            .unwrap_or_else(|e| panic!("{what}: bytes {} after {}: {e}", show(b), show(&text)));
        text.extend_from_slice(b);
        stats.steps += 1;
    }
}

/// Every split of every trigger of [`TRIGGERS`] on one vocabulary.
fn run_segmentations(label: &str, t: &Tokens) {
    let mut rng = Rng::new(seed_of(label));
    let mut tags: HashMap<&str, Tag> = HashMap::new();
    let mut summary = Vec::new();
    for &(tag_name, trigger, lead, cont, avoid) in TRIGGERS {
        let start = Instant::now();
        let tag = tags.entry(tag_name).or_insert_with(|| compile(t, tag_name));
        let o = Overlap::find(t, trigger.as_bytes());
        let overlap = o.all();
        let (spelled, sources) = spellings(t, &o, lead, trigger, cont, avoid);
        // Every overlapping token at every position it takes comes first, then more
        // splits of the first spelling, up to the cap.
        let mut segs: Vec<Vec<u32>> = spelled.iter().flat_map(|s| covering(t, s)).collect();
        let mut seen = HashSet::new();
        segs.retain(|s| seen.insert(s.clone()));
        let needed = segs.len();
        segs.extend(enumerated(t, &spelled[0], 64).into_iter().filter(|s| seen.insert(s.clone())));
        segs.truncate(MAX_SEGMENTATIONS.max(needed));
        let used: HashSet<u32> = segs.iter().flatten().copied().collect();
        let missing: Vec<String> = o
            .inside
            .iter()
            .chain(&sources)
            .filter(|id| !used.contains(id))
            .map(|&id| show(t.bytes(id)))
            .collect();
        assert!(
            missing.is_empty(),
            "{label} {trigger}: overlapping tokens in no segmentation: {missing:?}"
        );
        let count = |ids: &[u32]| {
            format!("{}/{}", ids.iter().filter(|id| used.contains(id)).count(), ids.len())
        };
        let mut stats = Stats { segmentations: segs.len(), ..Stats::default() };
        let mut checked = HashSet::new();
        for (n, seg) in segs.iter().enumerate() {
            let level = match n {
                0 => Level::Full,
                n if n < CHECKED_SEGMENTATIONS => Level::Sampled,
                _ => Level::Overlap,
            };
            drive(t, tag, seg, level, &overlap, &mut checked, &mut rng, &mut stats);
        }
        let line = format!(
            "{label:>6} {tag_name:<10} {:<12} overlapping tokens (in segmentations/all): {} inside, {} before, {} after, {} across; {} spellings, {} segmentations, {} steps, {} states, {} ids checked ({:.1} s)",
            format!("{trigger:?}"),
            count(&o.inside),
            count(&o.before),
            count(&o.after),
            count(&o.across),
            spelled.len(),
            stats.segmentations,
            stats.steps,
            stats.states,
            stats.checked_ids,
            start.elapsed().as_secs_f64()
        );
        eprintln!("{line}");
        summary.push(line);
    }
    for &(tag_name, prefix, wrong) in WRONG {
        let tag = tags.entry(tag_name).or_insert_with(|| compile(t, tag_name));
        let refused = assert_refused(t, tag, prefix.as_bytes(), wrong.as_bytes());
        summary.push(format!("{label:>6} {tag_name:<10} {prefix:?} + {wrong:?}: refused, {refused} tokens starting with it refused"));
    }
    eprintln!("segmentations on {label}:\n{}", summary.join("\n"));
}

/// After `prefix` (spelled greedily), the continuation `wrong` is refused by bytes, its
/// tokens are not all accepted, and every token starting with it is refused (mask and
/// `accept_token`). Returns how many tokens start with it.
fn assert_refused(t: &Tokens, tag: &Tag, prefix: &[u8], wrong: &[u8]) -> usize {
    let what =
        format!("{} on {}: {} then {}", tag.name, t.vocab.origin(), show(prefix), show(wrong));
    let mut bm = Matcher::new(tag.bytes.clone());
    bm.accept_bytes(prefix).unwrap_or_else(|e| panic!("{what}: the prefix is refused: {e}"));
    assert!(bm.fork().accept_bytes(wrong).is_err(), "{what}: accepted by bytes");
    let mut m = Matcher::new(tag.grammar.clone());
    for id in t.greedy(prefix) {
        m.accept_token(id).unwrap_or_else(|e| panic!("{what}: token {id}: {e}"));
    }
    let spelled = t.greedy(wrong);
    assert!(m.validate_tokens(&spelled) < spelled.len(), "{what}: accepted as tokens {spelled:?}");
    let mut words = vec![0u32; bitmask_len(t.vocab.vocab_size())];
    fill(&m, &mut words);
    let starting: Vec<u32> =
        t.by_bytes.iter().filter(|(b, _)| b.starts_with(wrong)).map(|(_, &id)| id).collect();
    for &id in &starting {
        assert!(!get_bit(&words, id), "{what}: token {id} {} is in the mask", show(t.bytes(id)));
        assert!(
            m.fork().accept_token(id).is_err(),
            "{what}: token {id} {} is accepted",
            show(t.bytes(id))
        );
    }
    if wrong.len() <= 2 {
        assert!(!starting.is_empty(), "{what}: no token starts with the continuation");
    }
    assert_exact(
        &m,
        &words,
        starting.iter().copied().chain(t.angle.iter().copied()),
        prefix,
        &what,
    );
    starting.len()
}

/// The mask's allowed ids.
fn allowed_ids(words: &[u32], size: usize) -> Vec<u32> {
    (0..size as u32).filter(|&id| get_bit(words, id)).collect()
}

fn occurrences(hay: &[u8], needle: &str) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle.as_bytes()).count()
}

/// What a walk heads for: the planned output, and the strings whose count in it a
/// detour keeps (so that splitting a trigger does not turn a tag into free text).
struct Plan<'a> {
    text: &'a [u8],
    markers: &'a [&'a str],
}

/// A detour the grammar allows: an allowed text token (short, with `<`/`>`, or any)
/// after which `rest` of the plan still completes the output, with as many markers.
#[allow(clippy::too_many_arguments)]
fn detour(
    t: &Tokens,
    m: &Matcher,
    allowed: &[u32],
    words: &[u32],
    text: &[u8],
    rest: &[u8],
    plan: &Plan,
    rng: &mut Rng,
) -> Option<u32> {
    let angle: Vec<u32> = t.angle.iter().copied().filter(|&id| get_bit(words, id)).collect();
    for _ in 0..12 {
        let id = match rng.below(4) {
            0 if !angle.is_empty() => angle[rng.below(angle.len())],
            1 | 2 => {
                let mut id = allowed[rng.below(allowed.len())];
                for _ in 0..40 {
                    if t.bytes(id).len() <= 2 {
                        break;
                    }
                    id = allowed[rng.below(allowed.len())];
                }
                id
            }
            _ => allowed[rng.below(allowed.len())],
        };
        let after = [text, t.bytes(id), rest].concat();
        if t.vocab.is_stop(id)
            || plan.markers.iter().any(|k| occurrences(&after, k) != occurrences(plan.text, k))
        {
            continue;
        }
        let mut probe = m.fork();
        if probe.accept_token(id).is_ok()
            && probe.accept_bytes(rest).is_ok()
            && probe.can_terminate()
        {
            return Some(id);
        }
    }
    None
}

struct Walk {
    text: Vec<u8>,
    steps: usize,
    detours: usize,
    checked_ids: usize,
}

/// One seeded walk towards `plan` (see the module docs); ends with a stop token.
fn walk(t: &Tokens, tag: &Tag, plan: &Plan, seed: u64) -> Walk {
    let what = format!("{} on {}: walk {seed} to {}", tag.name, t.vocab.origin(), show(plan.text));
    let size = t.vocab.vocab_size();
    let mut rng = Rng::new(seed);
    let mut m = Matcher::new(tag.grammar.clone());
    let mut bm = Matcher::new(tag.bytes.clone());
    let mut words = vec![0u32; bitmask_len(size)];
    let (mut text, mut done, mut detours, mut checked_ids) = (Vec::new(), 0, 0, 0);
    for step in 0..MAX_STEPS {
        fill(&m, &mut words);
        let allowed = allowed_ids(&words, size);
        assert!(!allowed.is_empty(), "{what}: empty mask after {}", show(&text));
        checked_ids += if step % FULL_EVERY == 0 {
            assert_exact(&m, &words, 0..size as u32, &text, &what)
        } else {
            assert_exact(&m, &words, sample(t, &mut rng), &text, &what)
        };
        let rest = &plan.text[done..];
        // Every token of the remaining planned text is allowed.
        let on_plan: Vec<(u32, usize)> = if rest.is_empty() { Vec::new() } else { t.at(rest, 0) };
        for &(id, _) in &on_plan {
            assert!(
                get_bit(&words, id),
                "{what}: planned token {id} {} refused after {}",
                show(t.bytes(id)),
                show(&text)
            );
        }
        if rest.is_empty() {
            assert!(m.can_terminate(), "{what}: the plan is done but cannot end: {}", show(&text));
            let stops = t.vocab.stop_tokens();
            let stop = stops[rng.below(stops.len())];
            assert!(get_bit(&words, stop), "{what}: stop token not in the mask");
            m.accept_token(stop).unwrap();
            assert!(m.is_terminated());
            let mut fresh = Matcher::new(tag.bytes.clone());
            fresh
                .accept_bytes(&text)
                .unwrap_or_else(|e| panic!("{what}: finished text refused: {e}"));
            assert!(fresh.can_terminate(), "{what}: finished text {} cannot end", show(&text));
            return Walk { text, steps: step + 1, detours, checked_ids };
        }
        // Detours and short planned tokens early on, then straight to the end.
        let (off, longest) = if step < 24 { (0.3, 0.7) } else { (0.0, 1.0) };
        let picked = if rng.chance(off) {
            detour(t, &m, &allowed, &words, &text, rest, plan, &mut rng)
        } else {
            None
        };
        let id = match picked {
            Some(id) => {
                detours += 1;
                id
            }
            None => {
                let (id, k) = if rng.chance(longest) {
                    on_plan[0]
                } else {
                    on_plan[rng.below(on_plan.len())]
                };
                done += k;
                id
            }
        };
        let b = t.bytes(id);
        m.accept_token(id).unwrap_or_else(|e| panic!("{what}: token {id} {}: {e}", show(b)));
        bm.accept_bytes(b)
            .unwrap_or_else(|e| panic!("{what}: bytes {} after {}: {e}", show(b), show(&text)));
        text.extend_from_slice(b);
    }
    panic!("{what}: no stop token after {MAX_STEPS} steps: {}", show(&text));
}

fn run_walks(label: &str, t: &Tokens) {
    let mut summary = Vec::new();
    for (n, &(name, _, markers, plans)) in TAGS.iter().enumerate() {
        let start = Instant::now();
        let tag = compile(t, name);
        let (mut steps, mut detours, mut checked) = (0, 0, 0);
        for (w, plan) in plans.iter().enumerate().take(WALKS_PER_TAG) {
            let mut fresh = Matcher::new(tag.bytes.clone());
            assert!(
                fresh.accept_string(plan).is_ok() && fresh.can_terminate(),
                "{name}: plan {plan:?} is not an output"
            );
            let plan = Plan { text: plan.as_bytes(), markers };
            let walk = walk(t, &tag, &plan, seed_of(label) + (n * 100 + w) as u64);
            assert!(walk.text.len() >= plan.text.len());
            steps += walk.steps;
            detours += walk.detours;
            checked += walk.checked_ids;
        }
        let line = format!(
            "{label:>6} {name:<10} {} walks reached the stop token: {steps} steps, {detours} detours, {checked} ids checked ({:.1} s)",
            plans.len().min(WALKS_PER_TAG),
            start.elapsed().as_secs_f64()
        );
        eprintln!("{line}");
        summary.push(line);
    }
    eprintln!("walks on {label}:\n{}", summary.join("\n"));
}

#[test]
fn trigger_splits_on_llama3() {
    if let Some(t) = tokens("llama3", "structural-tag trigger splits") {
        run_segmentations("llama3", &t);
    }
}

#[test]
fn trigger_splits_on_qwen3() {
    if let Some(t) = tokens("qwen3", "structural-tag trigger splits") {
        run_segmentations("qwen3", &t);
    }
}

#[test]
fn masked_walks_on_llama3() {
    if let Some(t) = tokens("llama3", "structural-tag walks") {
        run_walks("llama3", &t);
    }
}

#[test]
fn masked_walks_on_qwen3() {
    if let Some(t) = tokens("qwen3", "structural-tag walks") {
        run_walks("qwen3", &t);
    }
}
