//! grammask-ffi: the C ABI of grammask.
//!
//! A runtime written in C or C++ (llama.cpp-like) loads a vocabulary, compiles a grammar
//! once, creates a matcher per generation, and at every step asks the matcher for the
//! next-token bitmask (or lets it mask an array of logit candidates) and tells it which
//! token was sampled. The header `ffi/include/grammask.h` is generated from this crate by
//! cbindgen (see `cbindgen.toml`); its opening comment states the conventions: statuses,
//! the thread-local error message, handle checks, ownership and thread safety.
//!
//! Every entry point runs inside [`status::guard`], which catches panics; every handle is
//! checked by [`handle`] before use.

pub mod handle;
pub mod status;

use grammask::{CompiledGrammar, Compiler, GrammarFormat, Matcher, Vocabulary};
use handle::{borrow, borrow_mut, free, into_handle, HandleKind, Kind};
use status::{guard, Failure};
use std::ffi::{c_char, CStr};
use std::sync::Arc;

/// The allocator (see the workspace manifest's note on `tikv-jemallocator`).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

pub use status::GrammaskStatus;

/// A vocabulary: the tokens of a tokenizer as bytes, their kinds, the stop tokens and the
/// logits width (`vocab_size`). Opaque; immutable; shareable between threads.
pub struct GrammaskVocab {
    _opaque: [u8; 0],
}

/// A grammar compiled for one vocabulary. Opaque; immutable; shareable between threads;
/// any number of matchers may use it.
pub struct GrammaskGrammar {
    _opaque: [u8; 0],
}

/// The state of one generation against a compiled grammar. Opaque; one thread at a time.
pub struct GrammaskMatcher {
    _opaque: [u8; 0],
}

/// What kind of token an id is.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrammaskTokenKind {
    /// Ordinary text: the grammar matches its bytes.
    Normal = 0,
    /// A special or control token (BOS, EOS, chat markers): allowed only where the grammar
    /// names it (or, for stop tokens, where the document may end).
    Special = 1,
    /// A byte-fallback token: matched as one byte. Given either as that single byte or as
    /// its sentencepiece name `<0xNN>`.
    Byte = 2,
    /// An id below `vocab_size` that has no token (padding, or a gap); never allowed.
    Missing = 3,
}

/// One candidate of a llama.cpp-style candidate array (the layout of `llama_token_data`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GrammaskTokenData {
    /// The token id.
    pub id: i32,
    /// The logit; set to -INFINITY when the grammar forbids the token.
    pub logit: f32,
    /// The probability (left unchanged).
    pub p: f32,
}

struct VocabValue(Arc<Vocabulary>);
struct GrammarValue(Arc<CompiledGrammar>);
struct MatcherValue {
    matcher: Matcher,
    /// Reused bitmask for `grammask_matcher_apply_to_candidates`.
    scratch: Vec<u32>,
}

impl HandleKind for VocabValue {
    const KIND: Kind = Kind::Vocab;
}
impl HandleKind for GrammarValue {
    const KIND: Kind = Kind::Grammar;
}
impl HandleKind for MatcherValue {
    const KIND: Kind = Kind::Matcher;
}

impl MatcherValue {
    fn new(matcher: Matcher) -> MatcherValue {
        MatcherValue { matcher, scratch: Vec::new() }
    }
}

/// Writes `value` through an out-pointer that was checked for NULL.
///
/// # Safety
/// `out` is non-null and valid for a write of `T`.
unsafe fn write<T>(out: *mut T, value: T) {
    // SAFETY: guaranteed by the caller.
    unsafe { out.write(value) }
}

fn non_null<T>(ptr: *const T, name: &str) -> Result<(), Failure> {
    if ptr.is_null() {
        Err(Failure::null(name))
    } else {
        Ok(())
    }
}

/// A borrowed slice from a pointer and a length; NULL is allowed when the length is 0.
///
/// # Safety
/// When `len > 0`, `ptr` points to `len` readable, initialized `T`s for the call.
unsafe fn slice<'a, T>(ptr: *const T, len: usize, name: &str) -> Result<&'a [T], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    non_null(ptr, name)?;
    // SAFETY: non-null, and the caller guarantees `len` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// UTF-8 text from a pointer and a length.
///
/// # Safety
/// As for [`slice`].
unsafe fn text<'a>(ptr: *const c_char, len: usize, name: &str) -> Result<&'a str, Failure> {
    // SAFETY: forwarded from the caller.
    let bytes = unsafe { slice(ptr.cast::<u8>(), len, name)? };
    std::str::from_utf8(bytes)
        .map_err(|e| Failure::invalid(format!("`{name}` is not valid UTF-8: {e}")))
}

/// A NUL-terminated UTF-8 string.
///
/// # Safety
/// `ptr` is NULL or points to a NUL-terminated string.
unsafe fn c_str<'a>(ptr: *const c_char, name: &str) -> Result<&'a str, Failure> {
    non_null(ptr, name)?;
    // SAFETY: non-null and NUL-terminated (guaranteed by the caller).
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str().map_err(|e| Failure::invalid(format!("`{name}` is not valid UTF-8: {e}")))
}

fn token_id(id: i32) -> Result<u32, Failure> {
    u32::try_from(id).map_err(|_| {
        Failure::new(GrammaskStatus::TokenOutOfRange, format!("token id {id} is negative"))
    })
}

// ---------------------------------------------------------------------------------------
// Errors and versions
// ---------------------------------------------------------------------------------------

/// The message of the calling thread's last failed call ("" after a successful call).
/// Never NULL. The string is owned by the library and valid until the next grammask call
/// on the same thread; copy it to keep it. (Does not itself return a status.)
#[no_mangle]
pub extern "C" fn grammask_last_error() -> *const c_char {
    status::last_error_ptr()
}

/// A static name for a status value ("GRAMMASK_STATUS_OK", ...; "unknown" for values
/// outside the enum). Never NULL. (Does not itself return a status.)
#[no_mangle]
pub extern "C" fn grammask_status_name(status: i32) -> *const c_char {
    let name: &CStr = match status {
        0 => c"GRAMMASK_STATUS_OK",
        1 => c"GRAMMASK_STATUS_NULL_POINTER",
        2 => c"GRAMMASK_STATUS_INVALID_HANDLE",
        3 => c"GRAMMASK_STATUS_INVALID_ARGUMENT",
        4 => c"GRAMMASK_STATUS_VOCABULARY",
        5 => c"GRAMMASK_STATUS_GRAMMAR",
        6 => c"GRAMMASK_STATUS_LIMIT",
        7 => c"GRAMMASK_STATUS_UNSUPPORTED",
        8 => c"GRAMMASK_STATUS_TOKEN_OUT_OF_RANGE",
        9 => c"GRAMMASK_STATUS_REJECTED",
        10 => c"GRAMMASK_STATUS_TERMINATED",
        11 => c"GRAMMASK_STATUS_ROLLBACK_TOO_FAR",
        12 => c"GRAMMASK_STATUS_BUFFER_TOO_SMALL",
        13 => c"GRAMMASK_STATUS_PANIC",
        _ => c"unknown",
    };
    name.as_ptr()
}

/// The library's version ("0.1.0"). Never NULL; static. (Does not itself return a status.)
#[no_mangle]
pub extern "C" fn grammask_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

// ---------------------------------------------------------------------------------------
// Vocabularies
// ---------------------------------------------------------------------------------------

/// Loads a vocabulary from `spec` (NUL-terminated): a builtin tiktoken name
/// (`"o200k_base"`, `"cl100k_base"`, `"p50k_base"`, `"r50k_base"`, short forms such as
/// `"o200k"`), a path to a HF `tokenizer.json` (or a directory holding one), or a path to
/// a `.tiktoken` rank file. On success `*out` receives a new vocabulary (free it with
/// `grammask_vocab_free`).
///
/// # Safety
/// `spec` is NULL or a NUL-terminated string; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_vocab_load(
    spec: *const c_char,
    out: *mut *mut GrammaskVocab,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        // SAFETY: documented contract of this function.
        let spec = unsafe { c_str(spec, "spec")? };
        let vocab = Vocabulary::load(spec)
            .map_err(|e| Failure::new(GrammaskStatus::Vocabulary, e.to_string()))?;
        // SAFETY: `out` was checked for NULL; the caller guarantees it is writable.
        unsafe { write(out, into_handle(VocabValue(Arc::new(vocab)))) };
        Ok(())
    })
}

/// Builds a vocabulary from arrays: token `i` has the `token_lens[i]` bytes at `tokens[i]`
/// and the kind `kinds[i]` (a `GrammaskTokenKind` value: 0 normal, 1 special, 2 byte;
/// `kinds` may be NULL for all normal). A normal token with no bytes marks an id without a
/// token. `stop_ids` lists the stop (EOS) token ids, any number (NULL when `n_stop` is 0).
/// `vocab_size` is the logits width, at least `n_tokens`; 0 means `n_tokens`. Ids from
/// `n_tokens` to `vocab_size` are padding and never allowed. The bytes are copied.
///
/// # Safety
/// Each array holds at least `n_tokens` (`n_stop` for `stop_ids`) readable elements, and
/// each `tokens[i]` points to `token_lens[i]` readable bytes (or is NULL when that is 0).
#[no_mangle]
pub unsafe extern "C" fn grammask_vocab_from_tokens(
    tokens: *const *const u8,
    token_lens: *const usize,
    kinds: *const u8,
    n_tokens: usize,
    stop_ids: *const u32,
    n_stop: usize,
    vocab_size: usize,
    out: *mut *mut GrammaskVocab,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        // SAFETY: documented contract of this function (array lengths).
        let (tokens, lens, stop) = unsafe {
            (
                slice(tokens, n_tokens, "tokens")?,
                slice(token_lens, n_tokens, "token_lens")?,
                slice(stop_ids, n_stop, "stop_ids")?,
            )
        };
        let kinds = if kinds.is_null() {
            None
        } else {
            // SAFETY: non-null, `n_tokens` elements by contract.
            Some(unsafe { slice(kinds, n_tokens, "kinds")? })
        };
        let mut list = Vec::with_capacity(n_tokens);
        let mut special = Vec::new();
        for (i, (&ptr, &len)) in tokens.iter().zip(lens).enumerate() {
            // SAFETY: `tokens[i]` holds `token_lens[i]` readable bytes by contract.
            let bytes = unsafe { slice(ptr, len, &format!("tokens[{i}]"))? };
            let kind = kinds.map_or(0, |k| k[i]);
            let bytes = match kind {
                0 => bytes.to_vec(),
                1 => {
                    special.push(i as u32);
                    bytes.to_vec()
                }
                2 => vec![byte_token(bytes).ok_or_else(|| {
                    Failure::invalid(format!(
                        "tokens[{i}] is a byte token but is neither one byte nor `<0xNN>`"
                    ))
                })?],
                k => return Err(Failure::invalid(format!("kinds[{i}] = {k} is not a token kind"))),
            };
            list.push(bytes);
        }
        let size = if vocab_size == 0 { None } else { Some(vocab_size) };
        let vocab = Vocabulary::from_byte_tokens(list, &special, stop, size)
            .map_err(|e| Failure::new(GrammaskStatus::Vocabulary, e.to_string()))?;
        // SAFETY: `out` was checked for NULL; the caller guarantees it is writable.
        unsafe { write(out, into_handle(VocabValue(Arc::new(vocab)))) };
        Ok(())
    })
}

/// The byte of a byte-fallback token given as one byte or as `<0xNN>`.
fn byte_token(bytes: &[u8]) -> Option<u8> {
    match bytes {
        [b] => Some(*b),
        [b'<', b'0', b'x', hex @ .., b'>'] if hex.len() == 2 => {
            u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
        }
        _ => None,
    }
}

/// Builds the vocabulary-level data masks use (the slices of JSON-string runs, 5-9 ms for
/// a 128k-token vocabulary) now, instead of in the first mask inside a string: call it
/// once per model at startup. Optional; answers are the same either way.
///
/// # Safety
/// `vocab` is NULL or a handle from this library.
#[no_mangle]
pub unsafe extern "C" fn grammask_vocab_prepare(vocab: *const GrammaskVocab) -> GrammaskStatus {
    guard(|| {
        // SAFETY: handle contract documented in the header.
        let v = unsafe { borrow::<VocabValue, _>(vocab, "vocab")? };
        grammask::prepare_vocabulary(&v.0);
        Ok(())
    })
}

/// The logits width of the vocabulary (the bitmask covers this many ids).
///
/// # Safety
/// `vocab` is NULL or a handle from this library; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_vocab_size(
    vocab: *const GrammaskVocab,
    out: *mut usize,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        // SAFETY: handle contract documented in the header.
        let v = unsafe { borrow::<VocabValue, _>(vocab, "vocab")? };
        // SAFETY: checked for NULL above.
        unsafe { write(out, v.0.vocab_size()) };
        Ok(())
    })
}

/// The bytes and kind of token `id`. `*bytes` points into the vocabulary (valid while the
/// vocabulary lives, not NUL-terminated); an id without a token gives length 0 and kind
/// `GRAMMASK_TOKEN_KIND_MISSING`. `kind` may be NULL. Byte-fallback tokens give their byte.
///
/// # Safety
/// `vocab` is NULL or a handle; `bytes`, `len` and `kind` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_vocab_token(
    vocab: *const GrammaskVocab,
    id: i32,
    bytes: *mut *const u8,
    len: *mut usize,
    kind: *mut GrammaskTokenKind,
) -> GrammaskStatus {
    guard(|| {
        non_null(bytes, "bytes")?;
        non_null(len, "len")?;
        // SAFETY: handle contract documented in the header.
        let v = unsafe { borrow::<VocabValue, _>(vocab, "vocab")? };
        let id = token_id(id)?;
        if id as usize >= v.0.vocab_size() {
            return Err(Failure::new(
                GrammaskStatus::TokenOutOfRange,
                format!("token id {id} is not below the vocabulary size {}", v.0.vocab_size()),
            ));
        }
        let data = v.0.token_bytes(id).unwrap_or_default();
        let k = match v.0.kind(id) {
            Some(grammask::TokenKind::Normal) => GrammaskTokenKind::Normal,
            Some(grammask::TokenKind::Special) => GrammaskTokenKind::Special,
            Some(grammask::TokenKind::Byte) => GrammaskTokenKind::Byte,
            None => GrammaskTokenKind::Missing,
        };
        // SAFETY: `bytes` and `len` checked for NULL; `kind` written only when non-null.
        unsafe {
            write(bytes, data.as_ptr());
            write(len, data.len());
            if !kind.is_null() {
                write(kind, k);
            }
        }
        Ok(())
    })
}

/// Copies the stop token ids into `ids` (capacity `capacity`) and their number into
/// `*count`. When `capacity` is too small, returns `GRAMMASK_STATUS_BUFFER_TOO_SMALL`
/// with `*count` set to the number needed (`ids` may be NULL when `capacity` is 0).
///
/// # Safety
/// `vocab` is NULL or a handle; `ids` holds `capacity` writable elements; `count` is NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_vocab_stop_tokens(
    vocab: *const GrammaskVocab,
    ids: *mut u32,
    capacity: usize,
    count: *mut usize,
) -> GrammaskStatus {
    guard(|| {
        non_null(count, "count")?;
        // SAFETY: handle contract documented in the header.
        let v = unsafe { borrow::<VocabValue, _>(vocab, "vocab")? };
        let stop = v.0.stop_tokens();
        // SAFETY: `count` checked for NULL.
        unsafe { write(count, stop.len()) };
        if capacity < stop.len() {
            return Err(Failure::new(
                GrammaskStatus::BufferTooSmall,
                format!("{} stop tokens, capacity {capacity}", stop.len()),
            ));
        }
        if !stop.is_empty() {
            non_null(ids, "ids")?;
            // SAFETY: `ids` is non-null with `capacity >= stop.len()` writable elements.
            unsafe { std::ptr::copy_nonoverlapping(stop.as_ptr(), ids, stop.len()) };
        }
        Ok(())
    })
}

/// Releases a vocabulary. NULL is a no-op. Grammars compiled from it stay valid.
///
/// # Safety
/// `vocab` is NULL or a handle not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn grammask_vocab_free(vocab: *mut GrammaskVocab) -> GrammaskStatus {
    // SAFETY: handle contract documented in the header.
    guard(|| unsafe { free::<VocabValue, _>(vocab, "vocab") })
}

// ---------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------

/// Resource limits of a compilation and of the matchers made from it
/// (`grammask_compile_*_with_limits`). `grammask_limits_default` fills the library's
/// defaults; change the fields you need. A limit that is hit gives
/// `GRAMMASK_STATUS_LIMIT` with a message `limit: NAME: ...` naming it (`grammar_size`,
/// `automaton_states`, `compile_time`, `mask_cache_bytes` when compiling; `live_stacks`,
/// `stack_depth` when matching).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GrammaskLimits {
    /// `grammar_size`: IR nodes after the passes (default 2,000,000).
    pub max_grammar_size: usize,
    /// `automaton_states`: NFA states of one rule, and DFA states of all rules together
    /// (default 2,000,000).
    pub max_automaton_states: usize,
    /// `live_stacks`: parallel stacks (ambiguous parses) alive at one step (default
    /// 10,000).
    pub max_live_stacks: usize,
    /// `stack_depth`: nesting depth of rule calls at run time (default 10,000).
    pub max_stack_depth: usize,
    /// `rollback_history`: steps a matcher keeps for `grammask_matcher_rollback`
    /// (default 10,000; older steps are dropped, and rolling back further is
    /// `GRAMMASK_STATUS_ROLLBACK_TOO_FAR`).
    pub max_rollback: usize,
    /// `compile_time`: milliseconds one compilation may take, parsing included (default
    /// 30,000). Checked cooperatively, so the call returns soon after the budget.
    pub max_compile_ms: u64,
    /// `mask_cache_bytes`: bytes the token mask cache may store (default 1 GiB). Past it,
    /// entries are computed for each mask without being stored: the same masks, slower.
    pub max_mask_cache_bytes: usize,
    /// Fill the whole token mask cache during compilation (default false: entries fill on
    /// first use). Counts against `max_compile_ms`; a cache that does not fit in
    /// `max_mask_cache_bytes` fails the compile with `limit: mask_cache_bytes`.
    pub precompute_mask_cache: bool,
}

/// Fills `*out` with the default limits.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_limits_default(out: *mut GrammaskLimits) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        let d = grammask::CompilerConfig::default();
        let limits = GrammaskLimits {
            max_grammar_size: d.limits.max_grammar_size,
            max_automaton_states: d.limits.max_automaton_states,
            max_live_stacks: d.limits.max_live_stacks,
            max_stack_depth: d.limits.max_stack_depth,
            max_rollback: d.limits.max_rollback,
            max_compile_ms: u64::try_from(d.limits.max_compile_time.as_millis())
                .unwrap_or(u64::MAX),
            max_mask_cache_bytes: d.limits.max_mask_cache_bytes,
            precompute_mask_cache: d.precompute_mask_cache,
        };
        // SAFETY: checked for NULL above.
        unsafe { write(out, limits) };
        Ok(())
    })
}

/// The compiler settings of `limits` (NULL: the defaults).
///
/// # Safety
/// `limits` is NULL or readable.
unsafe fn compiler_config(
    limits: *const GrammaskLimits,
) -> Result<grammask::CompilerConfig, Failure> {
    let mut config = grammask::CompilerConfig::default();
    if limits.is_null() {
        return Ok(config);
    }
    // SAFETY: non-NULL and readable by contract.
    let l = unsafe { *limits };
    config.limits = grammask::Limits {
        max_grammar_size: l.max_grammar_size,
        max_automaton_states: l.max_automaton_states,
        max_live_stacks: l.max_live_stacks,
        max_stack_depth: l.max_stack_depth,
        max_rollback: l.max_rollback,
        max_compile_time: std::time::Duration::from_millis(l.max_compile_ms),
        max_mask_cache_bytes: l.max_mask_cache_bytes,
    };
    config.precompute_mask_cache = l.precompute_mask_cache;
    Ok(config)
}

/// Parses and compiles `len` bytes of grammar text.
///
/// # Safety
/// As for the public compile functions.
unsafe fn compile(
    vocab: *const GrammaskVocab,
    text_ptr: *const c_char,
    len: usize,
    root: *const c_char,
    format: GrammarFormat,
    limits: *const GrammaskLimits,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract as the caller's.
    unsafe {
        compile_text(vocab, text_ptr, len, limits, out, |text, vocab| {
            // SAFETY: `root` is NULL or NUL-terminated by contract.
            let root = if root.is_null() { "root" } else { c_str(root, "root")? };
            let parsed = grammask::parse_grammar_for(text, format, root, vocab)
                .map_err(|d| Failure::diagnostics(&d, text))?;
            Ok(Source::Grammar(parsed.grammar))
        })
    }
}

/// What a source text turns into: a grammar, or a converted JSON Schema (compiled with
/// its rarely reached rules kept calls, as `Compiler::compile_json_schema` does).
enum Source {
    Grammar(grammask::Grammar),
    Schema(grammask::syntax::Converted),
}

/// Reads `len` bytes of grammar text, turns them into a [`Source`] with `to_source`,
/// compiles it for `vocab` within `limits` (NULL: the defaults) and writes the new handle
/// to `*out`.
///
/// # Safety
/// `vocab` is NULL or a handle; `text_ptr` holds `len` readable bytes; `limits` is NULL
/// or readable; `out` is NULL or writable.
unsafe fn compile_text(
    vocab: *const GrammaskVocab,
    text_ptr: *const c_char,
    len: usize,
    limits: *const GrammaskLimits,
    out: *mut *mut GrammaskGrammar,
    to_source: impl FnOnce(&str, &grammask::Vocabulary) -> Result<Source, Failure>,
) -> GrammaskStatus {
    guard(|| {
        let start = std::time::Instant::now();
        non_null(out, "out")?;
        // SAFETY: handle and buffer contracts documented in the header.
        let (v, text, config) = unsafe {
            (
                borrow::<VocabValue, _>(vocab, "vocab")?,
                text(text_ptr, len, "text")?,
                compiler_config(limits)?,
            )
        };
        let compiler = Compiler::from_arc(v.0.clone()).with_config(config);
        let compiled = match to_source(text, &v.0)? {
            Source::Grammar(grammar) => compiler.compile_grammar_since(&grammar, start),
            Source::Schema(converted) => compiler.compile_converted_since(&converted, start),
        }
        .map_err(|e| Failure::compile(&e, text))?;
        // SAFETY: `out` checked for NULL; writable by contract.
        unsafe { write(out, into_handle(GrammarValue(compiled))) };
        Ok(())
    })
}

/// Compiles a GBNF grammar (llama.cpp's dialect) of `len` bytes (UTF-8, need not be
/// NUL-terminated) for `vocab`. `root` names the root rule (NULL: `"root"`). On success
/// `*out` receives a new compiled grammar (free it with `grammask_grammar_free`); on
/// `GRAMMASK_STATUS_GRAMMAR`, `grammask_last_error()` lists every error with line:col.
///
/// # Safety
/// `vocab` is NULL or a handle; `text` holds `len` readable bytes; `root` is NULL or
/// NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_gbnf(
    vocab: *const GrammaskVocab,
    text: *const c_char,
    len: usize,
    root: *const c_char,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract.
    unsafe { compile(vocab, text, len, root, GrammarFormat::Gbnf, std::ptr::null(), out) }
}

/// Compiles an EBNF grammar (XGrammar's dialect); otherwise as `grammask_compile_gbnf`.
///
/// # Safety
/// As for `grammask_compile_gbnf`.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_ebnf(
    vocab: *const GrammaskVocab,
    text: *const c_char,
    len: usize,
    root: *const c_char,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract.
    unsafe { compile(vocab, text, len, root, GrammarFormat::Ebnf, std::ptr::null(), out) }
}

/// Compiles a regular expression (ECMAScript syntax) that must match the whole output.
///
/// # Safety
/// `vocab` is NULL or a handle; `pattern` holds `len` readable bytes; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_regex(
    vocab: *const GrammaskVocab,
    pattern: *const c_char,
    len: usize,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract; the root is not used by regexes.
    unsafe {
        compile(vocab, pattern, len, std::ptr::null(), GrammarFormat::Regex, std::ptr::null(), out)
    }
}

/// Compiles a JSON Schema (`len` bytes of JSON text) with the library's default options.
/// When the library is built without JSON Schema support, returns
/// `GRAMMASK_STATUS_UNSUPPORTED`.
///
/// # Safety
/// `vocab` is NULL or a handle; `schema` holds `len` readable bytes; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_json_schema(
    vocab: *const GrammaskVocab,
    schema: *const c_char,
    len: usize,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract; the root is not used by schemas.
    unsafe {
        compile(
            vocab,
            schema,
            len,
            std::ptr::null(),
            GrammarFormat::JsonSchema,
            std::ptr::null(),
            out,
        )
    }
}

/// Options of JSON Schema compilation (`grammask_compile_json_schema_with_options`).
/// `grammask_json_schema_options_default` fills the library's defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GrammaskJsonSchemaOptions {
    /// Whitespace between tokens: 0 compact (none), 1 flexible (at most one line break
    /// then at most `max_whitespace_run` spaces or tabs; the default), 2 any.
    pub whitespace: u32,
    /// The cap of flexible whitespace (default 32).
    pub max_whitespace_run: u32,
    /// A missing `additionalProperties` means `false` (providers' strict modes).
    pub strict: bool,
    /// Unsupported keywords become warnings instead of errors.
    pub lenient: bool,
    /// Enforce `format` (default true); false treats formats as annotations.
    pub format_assert: bool,
    /// Object properties in any order (default false: the schema's order).
    pub any_order: bool,
}

/// Fills `*out` with the default JSON Schema options.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_json_schema_options_default(
    out: *mut GrammaskJsonSchemaOptions,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        let options = GrammaskJsonSchemaOptions {
            whitespace: 1,
            max_whitespace_run: 32,
            strict: false,
            lenient: false,
            format_assert: true,
            any_order: false,
        };
        // SAFETY: checked for NULL above.
        unsafe { write(out, options) };
        Ok(())
    })
}

/// Compiles a JSON Schema (`len` bytes of JSON text) with the given options (NULL: the
/// defaults). An unknown `whitespace` value is `GRAMMASK_STATUS_INVALID_ARGUMENT`.
///
/// # Safety
/// `vocab` is NULL or a handle; `schema` holds `len` readable bytes; `options` is NULL
/// or readable; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_json_schema_with_options(
    vocab: *const GrammaskVocab,
    schema: *const c_char,
    len: usize,
    options: *const GrammaskJsonSchemaOptions,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract as documented above.
    unsafe {
        grammask_compile_json_schema_with_limits(vocab, schema, len, options, std::ptr::null(), out)
    }
}

/// The converter options of `options` (NULL: the defaults).
///
/// # Safety
/// `options` is NULL or readable.
unsafe fn schema_options(
    options: *const GrammaskJsonSchemaOptions,
) -> Result<grammask::syntax::JsonSchemaOptions, Failure> {
    use grammask::syntax::json_schema::{FormatMode, PropertyOrder, Whitespace};
    let mut opts = grammask::syntax::JsonSchemaOptions::default();
    if options.is_null() {
        return Ok(opts);
    }
    // SAFETY: non-NULL and readable by contract.
    let o = unsafe { *options };
    opts.whitespace = match o.whitespace {
        0 => Whitespace::Compact,
        1 => Whitespace::Flexible { max_run: o.max_whitespace_run },
        2 => Whitespace::Any,
        w => {
            return Err(Failure::new(
                GrammaskStatus::InvalidArgument,
                format!("options.whitespace is {w}: 0 compact, 1 flexible, 2 any"),
            ))
        }
    };
    opts.strict = o.strict;
    opts.lenient = o.lenient;
    opts.format = if o.format_assert { FormatMode::Assert } else { FormatMode::Annotation };
    opts.property_order = if o.any_order { PropertyOrder::Any } else { PropertyOrder::Schema };
    Ok(opts)
}

/// Compiles a structural tag: `len` bytes of JSON in XGrammar's format (free text, tags,
/// triggered tool calls; with or without the outer `{"type": "structural_tag",
/// "format": ...}`), within `limits` (NULL: the defaults). Tokens named by their text
/// are looked up in `vocab`. A malformed or unsupported tag gives
/// `GRAMMASK_STATUS_GRAMMAR` with the JSON pointer of the offending field.
///
/// # Safety
/// `vocab` is NULL or a handle; `json` holds `len` readable bytes; `limits` is NULL or
/// readable; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_structural_tag(
    vocab: *const GrammaskVocab,
    json: *const c_char,
    len: usize,
    limits: *const GrammaskLimits,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract as documented above.
    unsafe {
        compile_text(vocab, json, len, limits, out, |text, v| {
            let options = grammask::syntax::StructuralTagOptions::default();
            let token_id = |t: &str| v.token_id(t.as_bytes());
            grammask::syntax::parse_structural_tag(text, &options, &token_id)
                .map(Source::Grammar)
                .map_err(|d| Failure::diagnostics(&d, text))
        })
    }
}

/// Compiles a GBNF grammar that applies from its first trigger on, as llama.cpp's lazy
/// grammars: free text until one of `n_words` trigger words (NUL-terminated), of
/// `n_patterns` trigger patterns (a literal, optionally written
/// `[\s\S]*?(LITERAL)[\s\S]*`; other regexes give `GRAMMASK_STATUS_UNSUPPORTED`) or of
/// `n_tokens` trigger token ids is written; from there the grammar, which must start with
/// the trigger (else `GRAMMASK_STATUS_GRAMMAR`), up to the end of the output. `root` as
/// for `grammask_compile_gbnf`; `limits` NULL: the defaults.
///
/// # Safety
/// `vocab` is NULL or a handle; `text` holds `len` readable bytes; `root` is NULL or
/// NUL-terminated; `words` and `patterns` hold that many NUL-terminated strings (NULL
/// when the count is 0); `tokens` holds `n_tokens` ids (NULL when 0); `limits` is NULL or
/// readable; `out` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn grammask_compile_lazy_gbnf(
    vocab: *const GrammaskVocab,
    text: *const c_char,
    len: usize,
    root: *const c_char,
    words: *const *const c_char,
    n_words: usize,
    patterns: *const *const c_char,
    n_patterns: usize,
    tokens: *const i32,
    n_tokens: usize,
    limits: *const GrammaskLimits,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract as documented above.
    unsafe {
        compile_text(vocab, text, len, limits, out, |text, v| {
            let strings =
                |ptr: *const *const c_char, n: usize, name: &str| -> Result<Vec<String>, Failure> {
                    // SAFETY: `ptr` holds `n` NUL-terminated strings by contract.
                    let list = slice(ptr, n, name)?;
                    list.iter().map(|&s| c_str(s, name).map(str::to_string)).collect()
                };
            let mut triggers = grammask::syntax::lazy::LazyTriggers {
                words: strings(words, n_words, "words")?,
                patterns: strings(patterns, n_patterns, "patterns")?,
                tokens: Vec::new(),
            };
            // SAFETY: `tokens` holds `n_tokens` ids by contract.
            for &id in slice(tokens, n_tokens, "tokens")? {
                let id = token_id(id)?;
                let bytes = v.token_bytes(id).map(<[u8]>::to_vec);
                let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
                    return Err(Failure::new(
                        GrammaskStatus::InvalidArgument,
                        format!("trigger token {id} is not a token of the vocabulary with text"),
                    ));
                };
                triggers.tokens.push((id, String::from_utf8_lossy(&bytes).into_owned()));
            }
            // SAFETY: `root` is NULL or NUL-terminated by contract.
            let root = if root.is_null() { "root" } else { c_str(root, "root")? };
            let parsed = grammask::parse_grammar_for(text, GrammarFormat::Gbnf, root, v)
                .map_err(|d| Failure::diagnostics(&d, text))?;
            grammask::syntax::lazy::lazy_grammar(parsed.grammar, &triggers)
                .map(Source::Grammar)
                .map_err(|d| Failure::diagnostics(&d, text))
        })
    }
}

/// Compiles a GBNF grammar within `limits` (NULL: the defaults); otherwise as
/// `grammask_compile_gbnf`. A limit that is hit gives `GRAMMASK_STATUS_LIMIT` and a
/// message `limit: NAME: ...`.
///
/// # Safety
/// As for `grammask_compile_gbnf`; `limits` is NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_gbnf_with_limits(
    vocab: *const GrammaskVocab,
    text: *const c_char,
    len: usize,
    root: *const c_char,
    limits: *const GrammaskLimits,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract.
    unsafe { compile(vocab, text, len, root, GrammarFormat::Gbnf, limits, out) }
}

/// Compiles an EBNF grammar within `limits` (NULL: the defaults); otherwise as
/// `grammask_compile_ebnf`.
///
/// # Safety
/// As for `grammask_compile_ebnf`; `limits` is NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_ebnf_with_limits(
    vocab: *const GrammaskVocab,
    text: *const c_char,
    len: usize,
    root: *const c_char,
    limits: *const GrammaskLimits,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract.
    unsafe { compile(vocab, text, len, root, GrammarFormat::Ebnf, limits, out) }
}

/// Compiles a regular expression within `limits` (NULL: the defaults); otherwise as
/// `grammask_compile_regex`.
///
/// # Safety
/// As for `grammask_compile_regex`; `limits` is NULL or readable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_regex_with_limits(
    vocab: *const GrammaskVocab,
    pattern: *const c_char,
    len: usize,
    limits: *const GrammaskLimits,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract; the root is not used by regexes.
    unsafe { compile(vocab, pattern, len, std::ptr::null(), GrammarFormat::Regex, limits, out) }
}

/// Compiles a JSON Schema with `options` (NULL: the defaults) within `limits` (NULL: the
/// defaults); otherwise as `grammask_compile_json_schema_with_options`.
///
/// # Safety
/// `vocab` is NULL or a handle; `schema` holds `len` readable bytes; `options` and
/// `limits` are NULL or readable; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_compile_json_schema_with_limits(
    vocab: *const GrammaskVocab,
    schema: *const c_char,
    len: usize,
    options: *const GrammaskJsonSchemaOptions,
    limits: *const GrammaskLimits,
    out: *mut *mut GrammaskGrammar,
) -> GrammaskStatus {
    // SAFETY: same contract as documented above.
    unsafe {
        compile_text(vocab, schema, len, limits, out, |text, _| {
            // `options` is NULL or readable by contract (the enclosing block is unsafe).
            let opts = schema_options(options)?;
            let converted = grammask::syntax::parse_json_schema(text, &opts)
                .map_err(|d| Failure::diagnostics(&d, text))?;
            Ok(Source::Schema(converted))
        })
    }
}

/// The number of `uint32_t` words of this grammar's bitmasks: ceil(vocab_size / 32).
///
/// # Safety
/// `grammar` is NULL or a handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_grammar_bitmask_words(
    grammar: *const GrammaskGrammar,
    out: *mut usize,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        // SAFETY: handle contract documented in the header.
        let g = unsafe { borrow::<GrammarValue, _>(grammar, "grammar")? };
        let words = grammask::bitmask_len(g.0.vocabulary().vocab_size());
        // SAFETY: checked for NULL above.
        unsafe { write(out, words) };
        Ok(())
    })
}

/// Releases the caller's reference to a compiled grammar. NULL is a no-op. Matchers
/// created from it stay valid.
///
/// # Safety
/// `grammar` is NULL or a handle not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn grammask_grammar_free(grammar: *mut GrammaskGrammar) -> GrammaskStatus {
    // SAFETY: handle contract documented in the header.
    guard(|| unsafe { free::<GrammarValue, _>(grammar, "grammar") })
}

// ---------------------------------------------------------------------------------------
// Matchers
// ---------------------------------------------------------------------------------------

/// A new matcher at the start of `grammar`. Cheap (no copy of the grammar).
///
/// # Safety
/// `grammar` is NULL or a handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_new(
    grammar: *const GrammaskGrammar,
    out: *mut *mut GrammaskMatcher,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        // SAFETY: handle contract documented in the header.
        let g = unsafe { borrow::<GrammarValue, _>(grammar, "grammar")? };
        let m = MatcherValue::new(Matcher::new(g.0.clone()));
        // SAFETY: checked for NULL above.
        unsafe { write(out, into_handle(m)) };
        Ok(())
    })
}

/// Releases a matcher. NULL is a no-op.
///
/// # Safety
/// `matcher` is NULL or a handle not in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_free(matcher: *mut GrammaskMatcher) -> GrammaskStatus {
    // SAFETY: handle contract documented in the header.
    guard(|| unsafe { free::<MatcherValue, _>(matcher, "matcher") })
}

/// An independent copy of `matcher` in its current state (history included); O(1).
///
/// # Safety
/// `matcher` is NULL or a handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_fork(
    matcher: *const GrammaskMatcher,
    out: *mut *mut GrammaskMatcher,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow::<MatcherValue, _>(matcher, "matcher")? };
        let forked = MatcherValue::new(m.matcher.fork());
        // SAFETY: checked for NULL above.
        unsafe { write(out, into_handle(forked)) };
        Ok(())
    })
}

/// Fills `bitmask` (`n_words` words, at least `grammask_grammar_bitmask_words`) with the
/// tokens allowed next: bit (i % 32) of word (i / 32) set when token i is allowed. Stop
/// tokens are set exactly when the document may end. Words past the needed length are
/// zeroed.
///
/// # Safety
/// `matcher` is NULL or a handle used by this thread only; `bitmask` holds `n_words`
/// writable words.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_fill_next_token_bitmask(
    matcher: *mut GrammaskMatcher,
    bitmask: *mut u32,
    n_words: usize,
) -> GrammaskStatus {
    guard(|| {
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow_mut::<MatcherValue, _>(matcher, "matcher")? };
        non_null(bitmask, "bitmask")?;
        // SAFETY: non-null with `n_words` writable words by contract.
        let words = unsafe { std::slice::from_raw_parts_mut(bitmask, n_words) };
        m.matcher.fill_next_token_bitmask(words)?;
        Ok(())
    })
}

/// Accepts token `id`. A token the grammar does not allow here is refused with
/// `GRAMMASK_STATUS_REJECTED` (or `GRAMMASK_STATUS_TOKEN_OUT_OF_RANGE`) and the matcher
/// does not change. Accepting a stop token terminates the matcher.
///
/// # Safety
/// `matcher` is NULL or a handle used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_accept_token(
    matcher: *mut GrammaskMatcher,
    id: i32,
) -> GrammaskStatus {
    guard(|| {
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow_mut::<MatcherValue, _>(matcher, "matcher")? };
        m.matcher.accept_token(token_id(id)?)?;
        Ok(())
    })
}

/// Accepts `len` raw bytes (text that was not sampled as tokens, such as jump-forward
/// bytes); counts as one step for rollback. Refused bytes leave the matcher unchanged.
///
/// # Safety
/// `matcher` is NULL or a handle used by this thread only; `bytes` holds `len` readable
/// bytes (NULL allowed when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_accept_bytes(
    matcher: *mut GrammaskMatcher,
    bytes: *const u8,
    len: usize,
) -> GrammaskStatus {
    guard(|| {
        // SAFETY: handle and buffer contracts documented in the header.
        let (m, bytes) = unsafe {
            (borrow_mut::<MatcherValue, _>(matcher, "matcher")?, slice(bytes, len, "bytes")?)
        };
        m.matcher.accept_bytes(bytes)?;
        Ok(())
    })
}

/// Undoes the last `n` accepted steps (tokens or byte strings).
///
/// # Safety
/// `matcher` is NULL or a handle used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_rollback(
    matcher: *mut GrammaskMatcher,
    n: usize,
) -> GrammaskStatus {
    guard(|| {
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow_mut::<MatcherValue, _>(matcher, "matcher")? };
        m.matcher.rollback(n)?;
        Ok(())
    })
}

/// Returns the matcher to the start of its grammar.
///
/// # Safety
/// `matcher` is NULL or a handle used by this thread only.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_reset(matcher: *mut GrammaskMatcher) -> GrammaskStatus {
    guard(|| {
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow_mut::<MatcherValue, _>(matcher, "matcher")? };
        m.matcher.reset();
        Ok(())
    })
}

/// Whether a stop token was accepted.
///
/// # Safety
/// `matcher` is NULL or a handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_is_terminated(
    matcher: *const GrammaskMatcher,
    out: *mut bool,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow::<MatcherValue, _>(matcher, "matcher")? };
        // SAFETY: checked for NULL above.
        unsafe { write(out, m.matcher.is_terminated()) };
        Ok(())
    })
}

/// Whether the text so far is a complete document (a stop token would be accepted now).
///
/// # Safety
/// `matcher` is NULL or a handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_can_terminate(
    matcher: *const GrammaskMatcher,
    out: *mut bool,
) -> GrammaskStatus {
    guard(|| {
        non_null(out, "out")?;
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow::<MatcherValue, _>(matcher, "matcher")? };
        // SAFETY: checked for NULL above.
        unsafe { write(out, m.matcher.can_terminate()) };
        Ok(())
    })
}

/// The bytes the grammar forces next (possibly none), copied into `buf` (capacity
/// `capacity`), their number into `*len`. The matcher does not change; accept them with
/// `grammask_matcher_accept_bytes`. When `capacity` is too small, returns
/// `GRAMMASK_STATUS_BUFFER_TOO_SMALL` with `*len` set to the size needed (at most 4096).
///
/// # Safety
/// `matcher` is NULL or a handle; `buf` holds `capacity` writable bytes (NULL allowed when
/// `capacity` is 0); `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_jump_forward_bytes(
    matcher: *const GrammaskMatcher,
    buf: *mut u8,
    capacity: usize,
    len: *mut usize,
) -> GrammaskStatus {
    guard(|| {
        non_null(len, "len")?;
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow::<MatcherValue, _>(matcher, "matcher")? };
        let bytes = m.matcher.find_jump_forward_bytes();
        // SAFETY: checked for NULL above.
        unsafe { write(len, bytes.len()) };
        if bytes.len() > capacity {
            return Err(Failure::new(
                GrammaskStatus::BufferTooSmall,
                format!("{} jump-forward bytes, capacity {capacity}", bytes.len()),
            ));
        }
        if !bytes.is_empty() {
            non_null(buf, "buf")?;
            // SAFETY: `buf` is non-null with `capacity >= bytes.len()` writable bytes.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, bytes.len()) };
        }
        Ok(())
    })
}

/// How many of the `n` tokens in `ids`, from the first, the matcher would accept in turn
/// (for speculative decoding), into `*accepted`. The matcher does not change.
///
/// # Safety
/// `matcher` is NULL or a handle; `ids` holds `n` readable ids; `accepted` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_validate_tokens(
    matcher: *const GrammaskMatcher,
    ids: *const i32,
    n: usize,
    accepted: *mut usize,
) -> GrammaskStatus {
    guard(|| {
        non_null(accepted, "accepted")?;
        // SAFETY: handle and buffer contracts documented in the header.
        let (m, ids) =
            unsafe { (borrow::<MatcherValue, _>(matcher, "matcher")?, slice(ids, n, "ids")?) };
        // A negative id stops the prefix like any other refused token.
        let prefix: Vec<u32> = ids.iter().map_while(|&id| u32::try_from(id).ok()).collect();
        let count = m.matcher.validate_tokens(&prefix);
        // SAFETY: checked for NULL above.
        unsafe { write(accepted, count) };
        Ok(())
    })
}

/// Up to this many candidates are each tried as `accept_token` would; more are masked
/// with the next-token bitmask.
const FEW_CANDIDATES: usize = 8;

/// llama.cpp-style masking: sets the logit of every candidate the grammar forbids next to
/// -INFINITY (ids, order and `p` unchanged). Every id must be in `[0, vocab_size)`;
/// otherwise nothing changes and `GRAMMASK_STATUS_TOKEN_OUT_OF_RANGE` is returned. A few
/// candidates (llama.cpp's check of its sampled token) are each tried without computing
/// the whole mask.
///
/// # Safety
/// `matcher` is NULL or a handle used by this thread only; `candidates` holds `n` readable
/// and writable elements (NULL allowed when `n` is 0).
#[no_mangle]
pub unsafe extern "C" fn grammask_matcher_apply_to_candidates(
    matcher: *mut GrammaskMatcher,
    candidates: *mut GrammaskTokenData,
    n: usize,
) -> GrammaskStatus {
    guard(|| {
        // SAFETY: handle contract documented in the header.
        let m = unsafe { borrow_mut::<MatcherValue, _>(matcher, "matcher")? };
        if n == 0 {
            return Ok(());
        }
        non_null(candidates, "candidates")?;
        // SAFETY: non-null with `n` readable and writable elements by contract.
        let candidates = unsafe { std::slice::from_raw_parts_mut(candidates, n) };
        let vocab_size = m.matcher.grammar().vocabulary().vocab_size();
        // One pass checks every id and whether the array is the whole vocabulary prefix in
        // id order (llama.cpp's array before any sampler sorts it), which is then masked a
        // bitmask word (32 candidates) at a time.
        let mut in_order = true;
        for (i, c) in candidates.iter().enumerate() {
            if c.id as u32 as usize >= vocab_size {
                return Err(Failure::new(
                    GrammaskStatus::TokenOutOfRange,
                    format!("candidate id {} is not in [0, {vocab_size})", c.id),
                ));
            }
            in_order &= c.id as u32 as usize == i;
        }
        if n <= FEW_CANDIDATES {
            // A few candidates (llama.cpp checks its sampled token alone first): each is
            // tried as accept_token would, without computing the mask.
            for c in candidates.iter_mut() {
                if m.matcher.validate_tokens(&[c.id as u32]) == 0 {
                    c.logit = f32::NEG_INFINITY;
                }
            }
            return Ok(());
        }
        m.scratch.resize(grammask::bitmask_len(vocab_size), 0);
        m.matcher.fill_next_token_bitmask(&mut m.scratch)?;
        if in_order {
            for (chunk, &word) in candidates.chunks_mut(32).zip(m.scratch.iter()) {
                match word {
                    u32::MAX => {}
                    0 => chunk.iter_mut().for_each(|c| c.logit = f32::NEG_INFINITY),
                    _ => {
                        for (bit, c) in chunk.iter_mut().enumerate() {
                            if word >> bit & 1 == 0 {
                                c.logit = f32::NEG_INFINITY;
                            }
                        }
                    }
                }
            }
        } else {
            for c in candidates.iter_mut() {
                if !grammask::get_bit(&m.scratch, c.id as u32) {
                    c.logit = f32::NEG_INFINITY;
                }
            }
        }
        Ok(())
    })
}
