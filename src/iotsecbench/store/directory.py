"""The results directory a writer works in: created and checked writable up front, with one
writer at a time (an exclusive ``flock`` on ``DIR/.writer.lock``).

DuckDB's own lock covers only ``results.duckdb`` while it is open; ``run --force-new-run``
moves files before it opens the database, and ``db rebuild`` renames it. The directory lock is
taken first by every writer and held until it is done. The kernel drops it when the holder
dies, even by SIGKILL, so a stale lock file never blocks anyone; the file itself records the
holder's PID and command line for the refusal message (and for ``doctor --cleanup``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile
from pathlib import Path
from types import TracebackType

from iotsecbench.errors import EnvironmentProblem, StoreBusyError
from iotsecbench.files import (
    PRIVATE_FILE_MODE,
    check_output_directory,
    storage_problem,
    without_credentials,
)

LOCK_FILENAME = ".writer.lock"


def prepare_results_dir(results_dir: Path) -> Path:
    """Create ``results_dir`` if needed and prove it writable, before anything is started.

    Each problem is one line: a regular file in the way is a usage error (exit 2); a
    read-only mount, missing permission or full disk is the environment's (exit 3), never
    "corrupt".
    """
    results_dir = check_output_directory(results_dir, "--out")
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=results_dir, prefix=".writable-"):
            pass
    except OSError as error:
        raise _problem(error, f"preparing --out {results_dir}") from None
    return results_dir


def _problem(error: OSError, what: str) -> EnvironmentProblem:
    return storage_problem(error, what) or EnvironmentProblem(f"{what}: {error.strerror or error}")


def holder_of(results_dir: Path) -> tuple[int, str] | None:
    """(PID, command line) written by the directory's last writer, or None."""
    try:
        first, _, rest = (Path(results_dir) / LOCK_FILENAME).read_text().partition("\n")
        return int(first), rest.strip()
    except (OSError, ValueError):
        return None


class DirectoryLock:
    """Held for the whole of a write to ``results_dir``; refused (exit 3) while another
    process holds it."""

    def __init__(self, results_dir: Path) -> None:
        self.path = Path(results_dir) / LOCK_FILENAME
        self._descriptor: int | None = None

    def __enter__(self) -> DirectoryLock:
        try:
            descriptor = os.open(
                self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE
            )
            os.fchmod(descriptor, PRIVATE_FILE_MODE)  # one an older version made 0644
        except OSError as error:
            raise _problem(error, f"locking {self.path.parent}") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            holder = holder_of(self.path.parent)
            who = f"PID {holder[0]} ({holder[1][:80]})" if holder else "another process"
            raise StoreBusyError(
                f"{self.path.parent} is being written by {who}; wait for it to finish or use "
                "another --out"
            ) from None
        # Who holds it, for the refusal message: never a password given in a broker URL.
        command = without_credentials(" ".join(sys.argv))
        try:
            os.ftruncate(descriptor, 0)
            os.write(descriptor, f"{os.getpid()}\n{command}\n".encode())
        except OSError as error:
            os.close(descriptor)
            raise _problem(error, f"locking {self.path.parent}") from None
        self._descriptor = descriptor
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._descriptor is not None:
            with contextlib.suppress(OSError):
                os.close(self._descriptor)  # closing releases the flock
            self._descriptor = None
