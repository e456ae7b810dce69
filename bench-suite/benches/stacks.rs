//! Persistent stacks: the engine's hand-built `Arc` list against `im::Vector`, on the
//! operations a matcher step performs (replace the top, push a frame, pop, compare).
//!
//! `cargo bench -p grammask-bench --bench stacks`

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use grammask::engine::{Position, Stack, StateId};
use grammask::syntax::RuleId;

fn pos(rule: usize, state: usize) -> Position {
    Position { rule: RuleId::new(rule), state: StateId::new(state) }
}

/// One "step" on a stack of depth 8: replace the top 4 times (bytes inside a rule), push
/// (a call), replace the top, pop (a return), then compare with a copy (deduplication).
fn arc_step(base: &Stack) -> bool {
    let mut s = base.clone();
    for i in 0..4 {
        s = s.with_top(pos(1, i));
    }
    let called = s.push(pos(1, 9), pos(2, 0)).with_top(pos(2, 1));
    let back = called.pop().unwrap_or_else(|| s.clone());
    let copy = back.clone();
    back == copy && back.depth() == s.depth()
}

fn im_step(base: &im::Vector<Position>) -> bool {
    let mut s = base.clone();
    for i in 0..4 {
        let last = s.len() - 1;
        s.set(last, pos(1, i));
    }
    let mut called = s.clone();
    let last = called.len() - 1;
    called.set(last, pos(1, 9));
    called.push_back(pos(2, 0));
    let last = called.len() - 1;
    called.set(last, pos(2, 1));
    let mut back = called.clone();
    back.pop_back();
    let copy = back.clone();
    back == copy && back.len() == s.len()
}

fn stacks(c: &mut Criterion) {
    let mut arc = Stack::root(pos(0, 0));
    let mut vector = im::Vector::new();
    vector.push_back(pos(0, 0));
    for d in 1..8 {
        arc = arc.push(pos(0, d), pos(0, 0));
        vector.push_back(pos(0, 0));
    }
    c.bench_function("stack step: Arc list", |b| b.iter(|| arc_step(black_box(&arc))));
    c.bench_function("stack step: im::Vector", |b| b.iter(|| im_step(black_box(&vector))));
}

criterion_group!(benches, stacks);
criterion_main!(benches);
