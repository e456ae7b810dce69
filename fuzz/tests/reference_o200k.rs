//! Proves, for random small grammars (see `reference_small_vocab.rs`) compiled for the
//! o200k vocabulary, along random masked walks: the mask agrees with the engine's own
//! `accept_token` on every allowed id and on ~2000 random ids per step, and with an
//! independent reference matcher over the IR on ~2000 random ids plus ~2000 allowed ones;
//! after sampled allowed tokens the grammar can still be completed; stop tokens exactly
//! when `can_terminate()`; ids past `vocab_size` refused; refused tokens change nothing;
//! rollback then re-accepting gives the same masks.

use grammask_fuzz::check::{o200k, run_case, CaseConfig, Coverage, Stats};
use grammask_fuzz::gen::GrammarConfig;
use proptest::prelude::*;

fn case(seed: u64) -> Result<Stats, String> {
    let vocab = o200k();
    let special = vocab.special_token_id(b"<|endofprompt|>").unwrap_or(0);
    let config = CaseConfig {
        grammar: GrammarConfig { max_rules: 3, max_depth: 3, token_ids: vec![special, 15] },
        max_steps: 10,
        coverage: Coverage::Sample { sample: 2000 },
    };
    run_case(seed, &vocab, &config)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]
    #[test]
    fn mask_equals_naive_check_on_o200k(seed in any::<u64>()) {
        let result = case(seed);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

#[test]
fn fixed_seeds_on_o200k() {
    let mut totals = Stats::default();
    for seed in 0..fixed_seeds(12) {
        match case(seed) {
            Ok(stats) => totals += stats,
            Err(e) => panic!("{e}"),
        }
    }
    eprintln!("o200k, fixed seeds: {totals:?}");
    assert!(totals.steps > 12 && totals.token_checks > 10_000, "{totals:?}");
}

/// `GRAMMASK_FUZZ_SEEDS=n` runs n fixed seeds instead of the default (for long runs).
fn fixed_seeds(default: u64) -> u64 {
    std::env::var("GRAMMASK_FUZZ_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}
