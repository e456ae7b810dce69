//! Tests of minimization against Moore's refinement, and of trimmed rows.

use super::minimize::refine;
use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// Moore's refinement, the reference: blocks split by their targets' blocks on every
/// symbol until nothing changes.
fn moore(dfa: &Dfa, initial: &[u32]) -> Vec<u32> {
    let n = dfa.len();
    let nc = dfa.n_classes;
    let mut blk: Vec<u32> = initial.to_vec();
    loop {
        let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
        let next: Vec<u32> = (0..n)
            .map(|s| {
                let mut key = vec![blk[s]];
                let at = |t: u32| if t == DEAD { u32::MAX } else { blk[t as usize] };
                key.extend((0..nc).map(|c| at(dfa.class_target(s, c))));
                let state = StateId::new(s);
                key.extend(dfa.calls(state).iter().flat_map(|c| [c.0.index() as u32, at(c.1 .0)]));
                key.extend(dfa.token_edges(state).iter().flat_map(|c| [c.0 .0, at(c.1 .0)]));
                let fresh = ids.len() as u32;
                *ids.entry(key).or_insert(fresh)
            })
            .collect();
        if ids.len() == blk.iter().collect::<std::collections::HashSet<_>>().len() {
            return next;
        }
        blk = next;
    }
}

/// The equivalence of two block numberings: whether `a` and `b` put the same states
/// together.
fn same_partition(a: &[u32], b: &[u32]) -> bool {
    let mut ab: HashMap<u32, u32> = HashMap::new();
    let mut ba: HashMap<u32, u32> = HashMap::new();
    a.iter().zip(b).all(|(&x, &y)| *ab.entry(x).or_insert(y) == y && *ba.entry(y).or_insert(x) == x)
}

fn arbitrary_dfa() -> impl Strategy<Value = (Dfa, Vec<u32>)> {
    (1usize..40, 1usize..6).prop_flat_map(|(n, nc)| {
        let target = prop_oneof![Just(DEAD), 0..n as u32];
        (
            proptest::collection::vec(target.clone(), n * nc),
            proptest::collection::vec(any::<bool>(), n),
            proptest::collection::vec(proptest::option::of((0u32..2, 0..n as u32)), n),
        )
            .prop_map(move |(trans, accepting, calls)| {
                let initial = accepting.iter().map(|&a| a as u32).collect();
                let mut class_of = [0u8; 256];
                for (b, c) in class_of.iter_mut().enumerate() {
                    *c = (b * nc / 256) as u8;
                }
                let mut dfa = Dfa::empty(class_of, nc);
                for ((row, &accepting), call) in trans.chunks_exact(nc).zip(&accepting).zip(&calls)
                {
                    let call = call.map(|(r, t)| (RuleId::new(r as usize), StateId(t)));
                    dfa.push_dense(row, accepting, call, []);
                }
                (dfa, initial)
            })
    })
}

proptest! {
    /// Rows stored from their first to their last target give every byte's target,
    /// byte set and edge list of the full rows, and survive serialization.
    #[test]
    fn trimmed_rows_keep_every_target(
        (nc, rows) in (1usize..12).prop_flat_map(|nc| {
            let target = prop_oneof![3 => Just(DEAD), 1 => 0u32..6];
            (Just(nc), proptest::collection::vec(proptest::collection::vec(target, nc), 6))
        })
    ) {
        let mut class_of = [0u8; 256];
        for (b, c) in class_of.iter_mut().enumerate() {
            *c = (b * nc / 256) as u8;
        }
        let mut dfa = Dfa::empty(class_of, nc);
        for row in &rows {
            dfa.push_dense(row, false, [], []);
        }
        dfa.reads_input = vec![false; rows.len()];
        let mut w = crate::serialize::Writer::default();
        dfa.write(&mut w);
        let loaded = Dfa::read(&mut crate::serialize::Reader::new(&w.bytes), 0, 0).unwrap();
        for d in [&dfa, &loaded] {
            for (s, row) in rows.iter().enumerate() {
                let state = StateId::new(s);
                let mut set = [0u64; 4];
                for b in 0..=255u8 {
                    let t = row[class_of[b as usize] as usize];
                    prop_assert_eq!(d.next(state, b), (t != DEAD).then_some(StateId(t)));
                    if t != DEAD {
                        set[(b >> 6) as usize] |= 1 << (b & 63);
                    }
                }
                prop_assert_eq!(d.byte_set(state), set);
                prop_assert_eq!(d.has_byte_edges(state), row.iter().any(|&t| t != DEAD));
                let targets: Vec<u32> = d.byte_targets(state).map(|t| t.0).collect();
                let expected: Vec<u32> = row.iter().copied().filter(|&t| t != DEAD).collect();
                prop_assert_eq!(targets, expected);
            }
        }
    }

    #[test]
    fn refinement_agrees_with_moore((dfa, initial) in arbitrary_dfa()) {
        // Calls are symbols too: states with different calls start apart, as in
        // `minimize`.
        let initial: Vec<u32> = initial
            .iter()
            .enumerate()
            .map(|(s, &b)| {
                let c = dfa.calls(StateId::new(s));
                b * 3 + c.first().map_or(0, |c| 1 + c.0.index() as u32)
            })
            .collect();
        let (fast, count) = refine(&dfa, &initial, &Deadline::unlimited()).unwrap();
        let slow = moore(&dfa, &initial);
        prop_assert!(same_partition(&fast, &slow), "{fast:?} vs {slow:?}");
        prop_assert_eq!(count as usize, fast.iter().collect::<std::collections::HashSet<_>>().len());
    }
}
