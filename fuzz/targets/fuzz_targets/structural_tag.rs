//! cargo-fuzz target `structural_tag`: see `grammask_fuzz::targets::structural_tag`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| grammask_fuzz::targets::structural_tag::run(data));
