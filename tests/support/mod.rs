//! Helpers shared by the CLI tests: run the `grammask` binary, write input files.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Runs `grammask ARGS`, feeding `stdin` (or nothing) to it.
pub fn grammask(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_grammask"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("grammask runs");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        // The binary may exit (a usage error, say) before it reads its input.
        match input.write_all(text.as_bytes()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            Err(e) => panic!("write stdin: {e}"),
        }
    }
    drop(input);
    child.wait_with_output().expect("grammask finishes")
}

/// A file `name` holding `text`, in a temporary folder of this test process named after
/// `folder`.
pub fn temp_file(folder: &str, name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("grammask-{folder}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path
}
