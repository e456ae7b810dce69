//! Proves, for random small grammars (literals, classes with non-ASCII ranges, choice,
//! sequence, bounded and unbounded repeats, recursion without left recursion, tokens
//! named by id) over random small vocabularies (tokens cut inside multi-byte characters,
//! two stop tokens, a special token spelled like text, padding ids), along random masked
//! walks:
//! - the mask equals the naive answer of every id: `fork().accept_token(id)` and
//!   `validate_tokens`, and an independent reference matcher over the IR;
//! - after each allowed token the grammar can still be completed (bounded byte search);
//! - stop tokens are allowed exactly when `can_terminate()`; after one, only stop tokens;
//! - ids at or past `vocab_size` are refused and never set in the mask;
//! - a token outside the mask is refused and changes nothing;
//! - rollback by n, then re-accepting the same tokens, gives the same masks.

use grammask_fuzz::check::{run_case, CaseConfig, Coverage, Stats};
use grammask_fuzz::gen::{random_vocab, GrammarConfig};
use grammask_fuzz::rng::XorShift;
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

static TOTALS: Mutex<Stats> = Mutex::new(Stats {
    refused: 0,
    too_big: 0,
    steps: 0,
    token_checks: 0,
    completions_found: 0,
    completions_unknown: 0,
    terminated: 0,
});

fn case(seed: u64) -> Result<(), String> {
    let mut rng = XorShift::new(seed ^ 0x5EED);
    let rv = random_vocab(&mut rng);
    let config = CaseConfig {
        grammar: GrammarConfig { max_rules: 4, max_depth: 3, token_ids: vec![rv.special_a, 0] },
        max_steps: 12,
        coverage: Coverage::All,
    };
    let stats = run_case(seed, &Arc::new(rv.vocab), &config)?;
    *TOTALS.lock().unwrap() += stats;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]
    #[test]
    fn mask_equals_naive_check_on_small_vocab(seed in any::<u64>()) {
        let result = case(seed);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

#[test]
fn fixed_seeds_on_small_vocab() {
    for seed in 0..fixed_seeds(200) {
        if let Err(e) = case(seed) {
            panic!("{e}");
        }
    }
    let totals = *TOTALS.lock().unwrap();
    eprintln!("small vocabulary totals so far: {totals:?}");
    assert!(totals.steps > 500 && totals.terminated > 20, "{totals:?}");
}

/// `GRAMMASK_FUZZ_SEEDS=n` runs n fixed seeds instead of the default (for long runs).
fn fixed_seeds(default: u64) -> u64 {
    std::env::var("GRAMMASK_FUZZ_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}
