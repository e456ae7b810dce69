//! grammask-fuzz: property tests (in tests/) that check the invariants of grammask, and
//! the helpers they share: a seeded RNG, random grammars and vocabularies, a reference
//! matcher that interprets the IR directly, and the per-step checks.

pub mod check;
pub mod gen;
pub mod reference;
pub mod rng;
