//! The checked-in header `ffi/include/grammask.h` is what cbindgen generates from the
//! crate now. Refresh it with `GRAMMASK_UPDATE_HEADER=1 cargo test -p grammask-ffi --test header`.

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("UTF-8 header");
    let path = dir.join("include/grammask.h");
    if std::env::var_os("GRAMMASK_UPDATE_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "ffi/include/grammask.h is stale: the crate's C API changed. Refresh it with\n    \
         GRAMMASK_UPDATE_HEADER=1 cargo test -p grammask-ffi --test header\nand commit it."
    );
}
