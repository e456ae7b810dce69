//! cargo-fuzz target `grammar_parse`: see `grammask_fuzz::targets::grammar_parse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| grammask_fuzz::targets::grammar_parse::run(data));
