"""Supervised child processes: every child runs in its own session (process group) so that
the terminal's Ctrl-C reaches the runner first, and so that stopping a child kills everything
it started. ``Supervised`` is a context manager: on any exit path the group is terminated,
then killed, then reaped — no orphans (docs/reliability.md #10, #22; pyperf's popen_killer)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO


class Supervised:
    """A child process in its own session, stopped and reaped when the ``with`` block ends."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdout: int | IO[bytes] | None = subprocess.DEVNULL,
        stderr_path: Path | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stop_timeout_s: float = 3.0,
    ) -> None:
        self.argv = list(argv)
        self._stdout = stdout
        self._stderr_path = stderr_path
        self._env = env
        self._cwd = cwd
        self._stop_timeout_s = stop_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self._stderr_handle: IO[bytes] | None = None

    def __enter__(self) -> Supervised:
        if self._stderr_path is not None:
            self._stderr_handle = open(self._stderr_path, "wb")
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._stdout,
            stderr=self._stderr_handle if self._stderr_handle else subprocess.DEVNULL,
            env=self._env,
            cwd=self._cwd,
            start_new_session=True,
        )
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def poll(self) -> int | None:
        assert self.process is not None
        return self.process.poll()

    def wait(self, timeout_s: float) -> int | None:
        """Wait for the child to exit; ``None`` if it is still running after ``timeout_s``."""
        assert self.process is not None
        try:
            return self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def _signal_group(self, signum: int) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

    def stop(self) -> int | None:
        """SIGTERM the group, wait, SIGKILL if needed, reap; returns the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self._signal_group(signal.SIGTERM)
            if self.wait(self._stop_timeout_s) is None:
                self._signal_group(signal.SIGKILL)
                self.process.wait()
        # The leader may be gone while children of its group live on: sweep the group too.
        self._signal_group(signal.SIGKILL)
        if self._stderr_handle is not None:
            self._stderr_handle.close()
            self._stderr_handle = None
        return self.process.returncode


def describe_exit(returncode: int | None) -> str:
    """'exit code 1' or 'signal 9 (SIGKILL)' for a finished process."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown"
        return f"signal {-returncode} ({name})"
    return f"exit code {returncode}"
