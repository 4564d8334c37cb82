"""Writing files that hold secrets or must never be half-written, checking where a command
will write before it starts, the one mapping of a storage failure to its exit code, and
building into a shared cache once (a leaf every package may import, like ``errors``)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from iotsecbench.errors import (
    DataError,
    EnvironmentProblem,
    NoPermissionError,
    SpecError,
    UserError,
)

# Records, lock files and run directories hold what a run did (and, in a lock file, the
# command line): like the rest of a run, for its owner only (docs/reliability.md).
PRIVATE_FILE_MODE = 0o600


def private_directory(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 for the last component."""
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def write_secret(path: Path, data: bytes) -> Path:
    """Write a new secret file with mode 0600 from the start (never world-readable, even briefly)
    and whole: it appears at ``path`` complete, so a reader never sees it empty or half-written
    (a watcher of a run's directory read an agent's config between its creation and its write).

    The content goes into a 0600 temporary file that is then hard-linked to ``path``: a link,
    like ``O_EXCL``, refuses to overwrite — a secret file that already exists is a bug or an
    attack. Where the file system has no hard links, ``O_EXCL`` on ``path`` itself.
    """
    path = Path(path)
    with _temporary_beside(path) as (descriptor, temporary):
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        try:
            os.link(temporary, path)
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
    return path


def write_atomic(path: Path, data: bytes | str, mode: int = 0o644) -> Path:
    """Write so that ``path`` holds either the old or the complete new content.

    A temporary file in the same directory is written, fsynced and renamed over ``path``; the
    directory is fsynced too so the rename itself survives a power cut (a truncated Parquet
    or JSON file cannot be read at all: docs/reliability.md).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with _temporary_beside(path) as (descriptor, temporary):
        # mkstemp creates the file 0600; results others may read are widened to ``mode``.
        os.fchmod(descriptor, mode)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    fsync_directory(path.parent)
    return path


@contextlib.contextmanager
def _temporary_beside(path: Path) -> Iterator[tuple[int, str]]:
    """A new 0600 temporary file in ``path``'s directory (its descriptor and name), gone
    afterwards unless renamed; an ``OSError`` inside that names no file names ``path`` (a full
    disk strikes in write(), which names none)."""
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        yield descriptor, temporary
    except OSError as error:
        if error.filename is None:
            raise OSError(error.errno, error.strerror, str(path)) from error
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


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


# A URL's user information (``scheme://user:password@host``): a broker password given on the
# command line must never reach a file, a record or a message (docs/reliability.md).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")


def without_credentials(text: str) -> str:
    """``text`` with the user information of every URL in it removed: what may be stored or
    printed of a command line or a broker address."""
    return _USERINFO.sub(r"\1", text)


# --- where a command writes, checked before it starts ----------------------------------------


def storage_problem(error: BaseException, what: str) -> UserError | None:
    """The one mapping of a storage failure to its exit code: a full disk or quota, a missing
    permission and a read-only file system are the environment's (exit 3), wherever they
    strike — never "corrupt data". None for anything else (the caller decides: corruption is
    exit 4, the rest a bug). ``error`` may be an OSError or a library's error carrying the
    system's message (DuckDB's IOException)."""
    number = getattr(error, "errno", None)
    text = str(error)
    if number in (errno.ENOSPC, errno.EDQUOT) or re.search(
        r"No space left on device|Disk quota exceeded", text
    ):
        return EnvironmentProblem(
            f"no space left on device while {what}; free some space and run the command "
            "again (what was stored before is intact)"
        )
    if (
        number in (errno.EACCES, errno.EPERM, errno.EROFS)
        or isinstance(error, PermissionError)
        or re.search(r"Permission denied|Read-only file system", text)
    ):
        reason = getattr(error, "strerror", None) or _first_line(text)
        return NoPermissionError(f"permission denied while {what} ({reason})")
    return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _not_writable(directory: Path, what: str) -> NoPermissionError | None:
    """Refusal when this process may not create files in ``directory`` (``access(2)`` says
    EROFS on a read-only mount even to root, whom modes do not stop)."""
    if os.access(directory, os.W_OK | os.X_OK):
        return None
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    reason = os.strerror(errno.EROFS if read_only else errno.EACCES)
    return NoPermissionError(f"{what} is not writable ({reason}); choose a writable directory")


def check_output_directory(path: Path, option: str) -> Path:
    """A directory a command will write into (created later, parents too), checked before
    any work: a regular file in the way, or above it, is a usage error (exit 2); a directory
    this process may not write, the environment's (exit 3). Creates nothing."""
    path = Path(path)
    what = f"{option} {path}"
    if path.exists() and not path.is_dir():
        raise SpecError(f"{what} is a file, not a directory; give a directory")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise SpecError(f"{what}: {existing} is a file, not a directory; give a directory")
    problem = _not_writable(existing, what)
    if problem is not None:
        raise problem
    return path


def check_output_file(path: Path, option: str) -> Path:
    """A file a command will write (replacing it if it exists), checked before any work: a
    directory, a device or a missing directory above it is a usage error (exit 2; the
    directory is never made: a typo in it would go unnoticed), a directory this process may
    not write the environment's (exit 3)."""
    path = Path(path)
    what = f"{option} {path}"
    if path.is_dir():
        raise SpecError(f"{what} is a directory; give the name of a file")
    if path.exists() and not path.is_file():
        raise SpecError(f"{what} is not a regular file; give the name of a file")
    if path.parent.exists() and not path.parent.is_dir():
        raise SpecError(f"{what}: {path.parent} is a file, not a directory")
    if not path.parent.is_dir():
        raise SpecError(
            f"{what}: the directory {path.parent} does not exist; create it or choose another"
        )
    problem = _not_writable(path.parent, what)
    if problem is not None:
        raise problem
    return path


# --- reading a configuration file a user names ---------------------------------------------

# A spec, device profile or CA file is a few kilobytes; a bound keeps /dev/zero or a
# multi-gigabyte file from being read until the kernel kills the machine's biggest process.
CONFIG_MAX_BYTES = 1 << 20


def read_config_text(path: Path, what: str, max_bytes: int = CONFIG_MAX_BYTES) -> str:
    """The UTF-8 text of a configuration file a user names (``what``: "spec file", "device
    profile"), refused in one line unless it is a regular file of at most ``max_bytes``:
    a usage error (exit 2), or the environment's (exit 3) when it may not be read."""
    data = read_user_file(path, what, max_bytes, "a .toml file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SpecError(
            f"{what} {path} is not UTF-8 text (byte {error.start}); save it as UTF-8"
        ) from None


def read_user_file(path: Path, what: str, max_bytes: int, expected: str = "a file") -> bytes:
    """The bytes of a file a user names (a configuration, or data to read: a CSV of timings,
    a benchmark's output), refused in one line unless it is a regular file of at most
    ``max_bytes``: a usage error (exit 2) when it is missing, a directory or too large, the
    environment's (exit 3) when it may not be read. What the bytes say is the caller's."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise SpecError(f"{what} {path} does not exist") from None
    except OSError as error:
        raise _read_problem(error, what, path) from None
    if stat.S_ISDIR(info.st_mode):
        raise SpecError(f"{what} {path} is a directory (give {expected})")
    if not stat.S_ISREG(info.st_mode):
        raise SpecError(f"{what} {path} is not a regular file (give {expected})")
    if info.st_size > max_bytes:
        raise SpecError(
            f"{what} {path} is {info.st_size:,} bytes; a {what} is at most {max_bytes:,}"
        )
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise _read_problem(error, what, path) from None
    if len(data) > max_bytes:  # grew since stat()
        raise SpecError(f"{what} {path} is larger than {max_bytes:,} bytes")
    return data


def _read_problem(error: OSError, what: str, path: Path) -> UserError:
    if isinstance(error, PermissionError):
        return NoPermissionError(f"cannot read {what} {path}: {error.strerror}")
    return EnvironmentProblem(f"cannot read {what} {path}: {error.strerror or error}")


def read_json(path: Path) -> Any:
    """A JSON document iotsecbench wrote (analysis.json, findings.json); ``DataError`` (exit 4)
    naming the file when it is not valid UTF-8 JSON."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataError(f"{path}: not valid JSON ({error.msg} at line {error.lineno})") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    except RecursionError:
        raise DataError(f"{path}: nested too deeply to be a document iotsecbench wrote") from None


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
