//! `SortedVocab` against a brute force over random small vocabularies.

use grammask_tokenset::Vocabulary;
use proptest::prelude::*;

/// Tokens over a 3-letter alphabet, so prefixes are shared often.
fn tokens() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(
        prop::collection::vec(prop::sample::select(vec![b'a', b'b', 0xff]), 0..5),
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn matches_brute_force(tokens in tokens(), specials in prop::collection::vec(0u32..40, 0..4)) {
        let n = tokens.len() as u32;
        let specials: Vec<u32> = specials.into_iter().filter(|&s| s < n).collect();
        let v = Vocabulary::from_byte_tokens(tokens.clone(), &specials, &[], None).unwrap();
        let s = v.sorted();

        // The non-special, non-empty tokens, sorted by (bytes, id).
        let mut expected: Vec<(Vec<u8>, u32)> = tokens
            .iter()
            .enumerate()
            .filter(|(id, b)| !b.is_empty() && !specials.contains(&(*id as u32)))
            .map(|(id, b)| (b.clone(), id as u32))
            .collect();
        expected.sort();
        prop_assert_eq!(s.len(), expected.len());
        for (pos, (bytes, id)) in expected.iter().enumerate() {
            prop_assert_eq!(s.bytes(pos), &bytes[..]);
            prop_assert_eq!(s.token_id(pos), *id);
            let lcp = if pos == 0 {
                0
            } else {
                expected[pos - 1].0.iter().zip(bytes).take_while(|(a, b)| a == b).count()
            };
            prop_assert_eq!(s.lcp(pos), lcp);
            let subtree_end = (pos + 1..expected.len())
                .find(|&j| !expected[j].0.starts_with(bytes))
                .unwrap_or(expected.len());
            prop_assert_eq!(s.subtree_end(pos), subtree_end);
            for depth in 0..=bytes.len() {
                let next = (pos + 1..expected.len())
                    .find(|&j| !expected[j].0.starts_with(&bytes[..depth]))
                    .unwrap_or(expected.len());
                prop_assert_eq!(s.next_without_prefix(pos, depth), next, "pos {} depth {}", pos, depth);
            }
        }
        // Lookups.
        for probe in [&b""[..], b"a", b"ab", b"b\xff", b"\xff\xff\xff"] {
            let first = expected.iter().position(|(b, _)| b.as_slice() == probe);
            prop_assert_eq!(s.find(probe), first);
            let range: Vec<usize> =
                (0..expected.len()).filter(|&j| expected[j].0.starts_with(probe)).collect();
            let got: Vec<usize> = s.prefix_range(probe).collect();
            prop_assert_eq!(got, range);
        }
    }
}
