//! Minimization of a [`Dfa`]: Hopcroft's partition refinement.

use crate::deadline::Deadline;
use crate::ids::{StateId, TokenSetId};
use grammask_syntax::ir::RuleId;
use rustc_hash::FxHashMap as HashMap;
use smallvec::SmallVec;

use super::{Dfa, DfaError, DEAD};
/// Merges equivalent states ([`refine`]), numbered breadth-first from the start (only
/// reachable blocks survive).
pub(super) fn minimize(dfa: Dfa, deadline: &Deadline) -> Result<Dfa, DfaError> {
    let n = dfa.len();
    let nc = dfa.n_classes;
    let block: Vec<u32> = {
        // States without calls or token edges (most) split by acceptance alone.
        type Key = (bool, SmallVec<[RuleId; 2]>, SmallVec<[TokenSetId; 2]>);
        let mut keys: HashMap<Key, u32> = HashMap::default();
        for accepting in [false, true] {
            keys.insert((accepting, SmallVec::new(), SmallVec::new()), accepting as u32);
        }
        (0..n)
            .map(|s| {
                let (calls, tokens) =
                    (dfa.calls(StateId::new(s)), dfa.token_edges(StateId::new(s)));
                if calls.is_empty() && tokens.is_empty() {
                    return dfa.accepting[s] as u32;
                }
                let key = (
                    dfa.accepting[s],
                    calls.iter().map(|c| c.0).collect(),
                    tokens.iter().map(|t| t.0).collect(),
                );
                let next = keys.len() as u32;
                *keys.entry(key).or_insert(next)
            })
            .collect()
    };
    let (block, n_blocks) = refine(&dfa, &block, deadline)?;
    // Renumber so the start state's block comes first.
    let mut order: Vec<u32> = vec![DEAD; n_blocks as usize];
    let mut representative: Vec<usize> = Vec::new();
    let mut queue = vec![dfa.start.index()];
    let mut seen = vec![false; n];
    seen[dfa.start.index()] = true;
    // Breadth-first from the start, so only reachable blocks survive.
    let mut qi = 0;
    while qi < queue.len() {
        let s = queue[qi];
        qi += 1;
        let b = block[s] as usize;
        if order[b] == DEAD {
            order[b] = representative.len() as u32;
            representative.push(s);
        }
        let succ = dfa
            .byte_targets(StateId::new(s))
            .chain(dfa.calls(StateId::new(s)).iter().map(|c| c.1))
            .chain(dfa.token_edges(StateId::new(s)).iter().map(|t| t.1))
            .map(StateId::index);
        for t in succ.collect::<SmallVec<[usize; 16]>>() {
            if !seen[t] {
                seen[t] = true;
                queue.push(t);
            }
        }
    }
    let map = |t: u32| if t == DEAD { DEAD } else { order[block[t as usize] as usize] };
    let mut out = Dfa::empty(dfa.class_of, nc);
    let mut row = Vec::with_capacity(nc);
    for &s in &representative {
        dfa.dense_row(s, &mut row);
        row.iter_mut().for_each(|t| *t = map(*t));
        let state = StateId::new(s);
        out.push_dense(
            &row,
            dfa.accepting[s],
            dfa.calls(state).iter().map(|&(r, t)| (r, StateId(map(t.0)))),
            dfa.token_edges(state).iter().map(|&(k, t)| (k, StateId(map(t.0)))),
        );
    }
    Ok(out)
}

/// Hopcroft's partition refinement of the states of `dfa`, starting from `initial` (a
/// block number per state): the coarsest partition, finer than `initial`, in which states
/// of one block step into one block on every byte class, call and token set. A state
/// without a transition steps into an extra sink state. Returns the block of each state
/// (numbered from 0) and the number of blocks.
///
/// A splitter is a block, taken for every symbol at once: its states' incoming edges,
/// sorted by symbol, split the blocks of their sources symbol by symbol. Each split
/// re-queues the smaller half only (the larger is implied by the two), so the work is
/// `O(m log n)` in the transitions `m` that exist, where rounds of Moore's refinement
/// cost one pass over every state per character of the longest chain of states that
/// differ only far ahead (the 32 states of a bounded whitespace run, in every inlined
/// copy), and a work list of (block, symbol) pairs visits every pair, most without an
/// edge (tens of byte classes, few of them read by any one state).
pub(super) fn refine(
    dfa: &Dfa,
    initial: &[u32],
    deadline: &Deadline,
) -> Result<(Vec<u32>, u32), DfaError> {
    let n = dfa.len();
    let nc = dfa.n_classes;
    let total = n + 1;
    // Symbols: byte classes, then each rule called, then each token set read.
    let mut called: Vec<RuleId> = dfa.calls.iter().map(|&(r, _)| r).collect();
    called.sort_unstable();
    called.dedup();
    let mut read: Vec<TokenSetId> = dfa.tokens.iter().map(|&(t, _)| t).collect();
    read.sort_unstable();
    read.dedup();
    // Incoming edges by target, each `symbol << 32 | source`. Missing transitions (into
    // the sink) are left out: the sink's block is never a splitter (below).
    let mut edges: Vec<(u32, u64)> = Vec::with_capacity(n * 4);
    for s in 0..n {
        let edge = |a: usize| (a as u64) << 32 | s as u64;
        let (lo, targets) = dfa.row(s);
        for (a, &t) in targets.iter().enumerate() {
            if t != DEAD {
                edges.push((t, edge(lo + a)));
            }
        }
        for &(rule, t) in dfa.calls(StateId::new(s)) {
            let a = nc + called.partition_point(|&r| r < rule);
            edges.push((t.0, edge(a)));
        }
        for &(set, t) in dfa.token_edges(StateId::new(s)) {
            let a = nc + called.len() + read.partition_point(|&r| r < set);
            edges.push((t.0, edge(a)));
        }
    }
    let (off, inv) = crate::automaton::group_by_key(n, &edges);
    drop(edges);
    // The refinable partition: `elems[start[b]..end[b]]` are the states of block `b`.
    let mut blk: Vec<u32> = initial.to_vec();
    let n_blocks = number_by_first_seen(&mut blk);
    blk.push(n_blocks); // the sink, a block of its own
    let n_initial = n_blocks as usize + 1;
    let mut elems: Vec<u32> = (0..total as u32).collect();
    elems.sort_by_key(|&s| blk[s as usize]);
    let mut loc = vec![0u32; total];
    for (i, &s) in elems.iter().enumerate() {
        loc[s as usize] = i as u32;
    }
    let (mut start, mut end) = (vec![0u32; n_initial], vec![0u32; n_initial]);
    for (i, &s) in elems.iter().enumerate().rev() {
        start[blk[s as usize] as usize] = i as u32;
    }
    for (i, &s) in elems.iter().enumerate() {
        end[blk[s as usize] as usize] = i as u32 + 1;
    }
    let mut marked = vec![0u32; n_initial];
    // Every initial block but one is a splitter (splitting by all blocks but one splits
    // by that one too). The one left out is the sink's, a block of its own forever, so
    // the many missing transitions into it are never walked.
    let sink_block = n_initial - 1;
    let mut queued: Vec<bool> = (0..n_initial).map(|b| b != sink_block).collect();
    let mut work: Vec<u32> = (0..n_initial as u32).filter(|&b| b as usize != sink_block).collect();
    let mut incoming: Vec<u64> = Vec::new();
    let mut touched: Vec<u32> = Vec::new();
    let mut rounds = 0usize;
    while let Some(splitter) = work.pop() {
        rounds += 1;
        if rounds % 4096 == 0 && deadline.exceeded() {
            return Err(DfaError::Timeout);
        }
        let splitter = splitter as usize;
        queued[splitter] = false;
        // The splitter's incoming edges are gathered before any split (splits reorder
        // blocks, the splitter's own included), then taken symbol by symbol.
        incoming.clear();
        for &t in &elems[start[splitter] as usize..end[splitter] as usize] {
            incoming
                .extend_from_slice(&inv[off[t as usize] as usize..off[t as usize + 1] as usize]);
        }
        incoming.sort_unstable();
        let mut i = 0;
        while i < incoming.len() {
            let symbol = incoming[i] >> 32;
            // Mark the predecessors through `symbol`, each moved to the front of its
            // block (a state has one target per symbol: each is marked once).
            touched.clear();
            while i < incoming.len() && incoming[i] >> 32 == symbol {
                let p = incoming[i] as u32;
                i += 1;
                let b = blk[p as usize] as usize;
                if marked[b] == 0 {
                    touched.push(b as u32);
                }
                let front = start[b] + marked[b];
                let here = loc[p as usize];
                let other = elems[front as usize];
                elems.swap(front as usize, here as usize);
                loc[other as usize] = here;
                loc[p as usize] = front;
                marked[b] += 1;
            }
            for &b in &touched {
                let b = b as usize;
                let m = marked[b];
                marked[b] = 0;
                if m == end[b] - start[b] {
                    continue;
                }
                // The marked front becomes a new block.
                let nb = start.len();
                start.push(start[b]);
                end.push(start[b] + m);
                marked.push(0);
                start[b] += m;
                for i in start[nb]..end[nb] {
                    blk[elems[i as usize] as usize] = nb as u32;
                }
                if queued[b] {
                    queued.push(true);
                    work.push(nb as u32);
                } else {
                    let smaller = if end[nb] - start[nb] <= end[b] - start[b] { nb } else { b };
                    queued.push(false);
                    queued[smaller] = true;
                    work.push(smaller as u32);
                }
            }
        }
    }
    blk.truncate(n);
    // Number the blocks of the real states from 0 (the sink's block holds only the sink:
    // no state is equivalent to it, each keeps a path to the end of its rule).
    let count = number_by_first_seen(&mut blk);
    Ok((blk, count))
}

/// Renumbers `ids` (small, dense) from 0 in the order each is first seen; returns how
/// many distinct ones there are.
fn number_by_first_seen(ids: &mut [u32]) -> u32 {
    let Some(&top) = ids.iter().max() else {
        return 0;
    };
    let mut number = vec![u32::MAX; top as usize + 1];
    let mut count = 0;
    for id in ids.iter_mut() {
        let n = &mut number[*id as usize];
        if *n == u32::MAX {
            *n = count;
            count += 1;
        }
        *id = *n;
    }
    count
}
