"""Writing files that hold secrets or must never be half-written, and building into a shared
cache once (a leaf every package may import, like ``errors``)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from iotsecbench.errors import DataError


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


def write_atomic(path: Path, data: bytes | str) -> Path:
    """Write so that ``path`` holds either the old or the complete new content.

    A temporary file in the same directory is written, fsynced and renamed over ``path``; the
    directory is fsynced too so the rename itself survives a power cut (a truncated Parquet
    or JSON file cannot be read at all: docs/reliability.md).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        # mkstemp creates the file 0600; results are not secret and others should read them.
        os.fchmod(descriptor, 0o644)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    fsync_directory(path.parent)
    return path


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (best effort where directories cannot be opened)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def read_json(path: Path) -> Any:
    """A JSON document iotsecbench wrote (analysis.json, findings.json); ``DataError`` (exit 4)
    naming the file when it is not valid UTF-8 JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None


@contextlib.contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``lock`` (created if missing) until the block ends.

    Builds into the shared cache (``~/.cache/iotsecbench``) take it around "is it there? if
    not, build it", so two processes that need the same build at once (parallel test
    workers, two runs) build it once: the second waits, then finds it. The kernel releases
    the lock if the holder dies, so a killed build blocks nobody.
    """
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
