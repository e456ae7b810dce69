//! Heap bytes a compiled grammar keeps, per MaskBench schema: what a server's grammar
//! cache holds for it, and what a compile next to such a cache takes as fresh pages.
//!
//! `cargo run --release -p grammask-bench --example retained -- DIR EVERY TOKENIZER_JSON`
//!
//! Every Nth schema is compiled (conversion included) and its first mask filled, through
//! a [`GrammarCache`] (`NOCACHE=1`: without one), everything but the compiled grammar and
//! the cache is dropped, and a counting allocator reports the bytes still held (the
//! grammar, its filled mask cache entries, and with a cache the entry's key) and the
//! peak during the compile. Prints p50, p90 and the mean of both, and of
//! `CompiledGrammar::memory` (the engine's own count, which the cache's bound uses).
use grammask::engine::GrammarCache;
use grammask::syntax::json_schema::{json_schema_to_grammar, JsonSchemaOptions};
use grammask::{bitmask_len, Compiler, Matcher, Vocabulary};
use grammask_bench::maskbench::sampled_schemas;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The system allocator, counting the bytes held and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged; the counters have no effect on
// the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        if size > layout.size() {
            grew(size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - size, Relaxed);
        }
        System.realloc(ptr, layout, size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, every, tokenizer] = args.as_slice() else {
        return Err("usage: retained DIR EVERY TOKENIZER_JSON".into());
    };
    let every: usize = every.parse().map_err(|e| format!("EVERY: {e}"))?;
    let vocab = Arc::new(
        Vocabulary::from_tokenizer_json(tokenizer).map_err(|e| format!("{tokenizer}: {e}"))?,
    );
    let options = JsonSchemaOptions::default();
    let with_cache = std::env::var_os("NOCACHE").is_none();
    let cache = Arc::new(GrammarCache::new(1 << 30));
    let mut kept = Vec::new();
    let (mut held, mut peaks, mut counted) = (Vec::new(), Vec::new(), Vec::new());
    for (_, schema) in sampled_schemas(Path::new(dir), every)? {
        let schema = &schema;
        if json_schema_to_grammar(schema, &options).is_err() {
            continue;
        }
        let before = LIVE.load(Relaxed);
        PEAK.store(before, Relaxed);
        let mut compiler = Compiler::from_arc(vocab.clone());
        if with_cache {
            compiler = compiler.with_grammar_cache(cache.clone());
        }
        let Ok(compiled) = compiler.compile_json_schema_value(schema, &options) else {
            continue;
        };
        let matcher = Matcher::new(compiled.clone());
        let mut mask = vec![0u32; bitmask_len(vocab.vocab_size())];
        matcher.fill_next_token_bitmask(&mut mask).map_err(|e| e.to_string())?;
        drop((matcher, mask, compiler));
        held.push(LIVE.load(Relaxed) - before);
        peaks.push(PEAK.load(Relaxed) - before);
        counted.push(compiled.memory());
        kept.push(compiled);
    }
    if held.is_empty() {
        return Err("no schema compiled".into());
    }
    println!("{} schemas, {}", held.len(), if with_cache { "grammar cache" } else { "no cache" });
    for (name, mut v) in [("held", held), ("peak", peaks), ("memory()", counted)] {
        v.sort_unstable();
        let mean = v.iter().sum::<usize>() / v.len();
        let (p50, p90) = (v[v.len() / 2], v[v.len() * 9 / 10]);
        println!("{name}: p50 {p50} B, p90 {p90} B, mean {mean} B");
    }
    Ok(())
}
