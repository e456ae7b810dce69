//! cargo-fuzz target `matcher`: see `grammask_fuzz::targets::matcher`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| grammask_fuzz::targets::matcher::run(data));
