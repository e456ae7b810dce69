//! cargo-fuzz target `vocab_load`: see `grammask_fuzz::targets::vocab_load`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| grammask_fuzz::targets::vocab_load::run(data));
