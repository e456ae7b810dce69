//! Per-rule byte automata.
//!
//! - [`nfa`]: Thompson construction from a lowered rule body.
//! - [`dfa`]: subset construction over byte classes, rule calls and token sets;
//!   Hopcroft minimization; NFA states that cannot finish are left out of every state set.
//!
//! A PDA position is a rule with a state of that rule's [`Dfa`]; the matcher keeps the
//! return positions on persistent stacks.

pub(crate) mod dfa;
pub(crate) mod nfa;

pub use dfa::Dfa;

/// Values grouped by key, each key's in their order in `items` (a counting sort): the
/// values of key `k` are `values[offsets[k]..offsets[k + 1]]`. Returns `(offsets, values)`.
/// Edges by source state, predecessors by target.
pub(crate) fn group_by_key<T: Copy>(n_keys: usize, items: &[(usize, T)]) -> (Vec<u32>, Vec<T>) {
    let mut offsets = vec![0u32; n_keys + 1];
    for &(k, _) in items {
        offsets[k + 1] += 1;
    }
    for i in 0..n_keys {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut values: Vec<T> = items.iter().map(|&(_, v)| v).collect();
    for &(k, v) in items {
        values[fill[k] as usize] = v;
        fill[k] += 1;
    }
    (offsets, values)
}
