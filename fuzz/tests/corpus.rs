//! Runs every cargo-fuzz target (`grammask_fuzz::targets`) over its checked-in corpus
//! (`fuzz/corpus/<target>/`: seeds, and the inputs of past findings, which stay as
//! regression tests). A target panics when an invariant breaks.

use grammask_fuzz::targets::TARGETS;
use std::path::PathBuf;

#[test]
fn every_target_passes_its_corpus() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (name, run) in TARGETS {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(name))
            .unwrap_or_else(|e| panic!("corpus of {name}: {e}"))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() >= 5, "corpus of {name}: {} files", files.len());
        for path in files {
            let data = std::fs::read(&path).unwrap();
            let result = std::panic::catch_unwind(|| run(&data));
            assert!(result.is_ok(), "{name} fails on {}", path.display());
        }
    }
}
