//! The compiled-grammar cache: the same grammar (by its source) compiled with the same
//! settings is compiled once and shared.
//!
//! Keys are the grammar's source (GBNF, EBNF or regex text; a JSON Schema's text or its
//! compact serialization, with the conversion options; for IR, its serialized bytes),
//! hashed, then compared in full, so a hash collision can never return another grammar,
//! and the compiler settings. A hit skips parsing and conversion, and a kept key is the
//! source's bytes, a fraction of the IR it makes. The cache holds at most `max_bytes` of
//! compiled grammars (their automata and IR and their keys, plus their token mask caches,
//! which fill as matchers use them: counted again at every insertion) and evicts the
//! least recently used first. Between insertions each kept grammar's mask cache may grow
//! up to its own bound (`Limits::max_mask_cache_bytes`). A grammar larger than the whole
//! bound is compiled and returned but not kept. Compilation runs outside the lock, so two
//! threads asking for the same new grammar at once may both compile it; later requests
//! hit.

use crate::compiler::{CompiledGrammar, CompilerConfig};
use crate::error::CompileError;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

/// A memory-bounded cache of compiled grammars, shared by `Arc` among compilers and
/// threads. See [`crate::Compiler::with_grammar_cache`].
///
/// ```
/// use grammask_engine::{Compiler, GrammarCache};
/// use grammask_tokenset::Vocabulary;
/// use std::sync::Arc;
///
/// let vocab = Vocabulary::from_byte_tokens(vec![b"a".to_vec()], &[], &[], None).unwrap();
/// let cache = Arc::new(GrammarCache::new(64 << 20));
/// let compiler = Compiler::new(&vocab).with_grammar_cache(cache.clone());
/// let first = compiler.compile_gbnf("root ::= \"a\"+").unwrap();
/// let second = compiler.compile_gbnf("root ::= \"a\"+").unwrap();
/// assert!(Arc::ptr_eq(&first, &second));
/// assert_eq!((cache.hits(), cache.misses()), (1, 1));
/// ```
#[derive(Debug)]
pub struct GrammarCache {
    max_bytes: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<u64, Vec<Entry>>,
    tick: u64,
    hits: u64,
    misses: u64,
}

#[derive(Debug)]
struct Entry {
    key: Box<[u8]>,
    settings: String,
    compiled: Arc<CompiledGrammar>,
    /// The key and the settings (the compiled grammar is read as it is: its automata and
    /// mask cache grow as matchers use it).
    bytes: usize,
    last_used: u64,
}

impl Entry {
    /// Bytes held now: the key, the IR, the automata built and the mask cache filled so
    /// far.
    fn memory(&self) -> usize {
        self.bytes + self.compiled.memory()
    }
}

impl GrammarCache {
    /// A cache holding at most `max_bytes` of compiled grammars.
    pub fn new(max_bytes: usize) -> Self {
        GrammarCache { max_bytes, inner: Mutex::new(Inner::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every update is a single
        // step), so a poisoned lock is used as is.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached compilation of the grammar `key` stands for, with `config`, or
    /// `compile()`'s result (kept when it succeeds and fits).
    pub(crate) fn get_or_compile(
        &self,
        key: Vec<u8>,
        config: &CompilerConfig,
        compile: impl FnOnce() -> Result<Arc<CompiledGrammar>, CompileError>,
    ) -> Result<Arc<CompiledGrammar>, CompileError> {
        let settings = format!("{config:?}");
        let hash = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            key.hash(&mut h);
            settings.hash(&mut h);
            h.finish()
        };
        {
            let mut inner = self.lock();
            inner.tick += 1;
            let tick = inner.tick;
            let found = inner.entries.get_mut(&hash).and_then(|bucket| {
                bucket.iter_mut().find(|e| e.settings == settings && *e.key == *key)
            });
            if let Some(entry) = found {
                entry.last_used = tick;
                let compiled = entry.compiled.clone();
                inner.hits += 1;
                return Ok(compiled);
            }
            inner.misses += 1;
        }
        let compiled = compile()?;
        let bytes = key.len() + settings.len();
        let size = bytes + compiled.memory();
        if size <= self.max_bytes {
            let mut inner = self.lock();
            let mut used = inner.used();
            while used + size > self.max_bytes {
                match inner.evict_oldest() {
                    Some(freed) => used -= freed,
                    None => break,
                }
            }
            inner.tick += 1;
            let last_used = inner.tick;
            inner.entries.entry(hash).or_default().push(Entry {
                key: key.into_boxed_slice(),
                settings,
                compiled: compiled.clone(),
                bytes,
                last_used,
            });
        }
        Ok(compiled)
    }

    /// Lookups answered from the cache.
    pub fn hits(&self) -> u64 {
        self.lock().hits
    }

    /// Lookups that compiled.
    pub fn misses(&self) -> u64 {
        self.lock().misses
    }

    /// Number of grammars kept.
    pub fn len(&self) -> usize {
        self.lock().entries.values().map(Vec::len).sum()
    }

    /// Whether no grammar is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held by the grammars kept: their automata and IR, and their mask caches as
    /// filled so far.
    pub fn memory(&self) -> usize {
        self.lock().used()
    }

    /// Drops every grammar (matchers holding one keep it alive).
    pub fn clear(&self) {
        self.lock().entries.clear();
    }
}

impl Inner {
    /// Bytes held by the entries now.
    fn used(&self) -> usize {
        self.entries.values().flatten().map(Entry::memory).sum()
    }

    /// Removes the least recently used entry: the bytes it held, `None` when empty.
    fn evict_oldest(&mut self) -> Option<usize> {
        let oldest = self
            .entries
            .iter()
            .flat_map(|(k, bucket)| {
                bucket.iter().enumerate().map(move |(i, e)| (e.last_used, *k, i))
            })
            .min();
        let (_, key, index) = oldest?;
        let bucket = self.entries.get_mut(&key)?;
        let freed = bucket.swap_remove(index).memory();
        if bucket.is_empty() {
            self.entries.remove(&key);
        }
        Some(freed)
    }
}
