//! grammask-fuzz: property tests (in tests/) that check the invariants of grammask.
