//! grammask-fuzz: property tests (in tests/) that check the invariants of grammask, the
//! bodies of the cargo-fuzz targets ([`targets`]; the cargo-fuzz project is
//! `fuzz/targets/`), and the helpers they share: sources of choices (a seeded RNG, or a
//! fuzzer's bytes), random grammars and vocabularies, a reference matcher that interprets
//! the IR directly, and the per-step checks.

pub mod check;
pub mod gen;
pub mod reference;
pub mod rng;
pub mod targets;
