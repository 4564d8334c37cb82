"""Creating files that hold secrets or must never be half-written."""

from __future__ import annotations

import os
from pathlib import Path


def private_directory(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 for the last component."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def write_secret(path: Path, data: bytes) -> Path:
    """Write a new secret file with mode 0600 from the start (never world-readable, even briefly).

    ``O_EXCL`` refuses to overwrite: a secret file that already exists is a bug or an attack.
    """
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    return path


def write_atomic(path: Path, data: bytes) -> Path:
    """Write via a temporary name in the same directory, then rename: readers see all or nothing."""
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return path
