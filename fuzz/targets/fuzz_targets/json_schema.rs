//! cargo-fuzz target `json_schema`: see `grammask_fuzz::targets::json_schema`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| grammask_fuzz::targets::json_schema::run(data));
