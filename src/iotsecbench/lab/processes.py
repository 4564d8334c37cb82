"""Supervised child processes: every child runs in its own session (process group) so that
the terminal's Ctrl-C reaches the runner first, and so that stopping a child kills everything
it started. ``Supervised`` is a context manager: on any exit path the group is terminated,
then killed, then reaped — no orphans (docs/reliability.md #10, #22; pyperf's popen_killer).

A ``with`` block does not run when the runner itself is killed (SIGKILL, OOM killer), so
every child also asks the kernel to SIGKILL it when its parent dies (``PR_SET_PDEATHSIG``),
and, inside ``recording_pids(DIR)``, leaves a PID file naming its command line and start time:
``stop_leftovers(DIR)`` stops what a dead runner left, checking each PID against both so
that a reused PID or a process of the same name is never touched."""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import ctypes.util
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

from iotsecbench.files import storage_problem

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _load_prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None  # not Linux: children then rely on the with-blocks and stop_leftovers


# Resolved once in the parent: the forked child only calls a ready function pointer.
_PRCTL = _load_prctl()

# Where Supervised children leave their PID files (None: nowhere); set by recording_pids.
_PID_DIRECTORY: contextvars.ContextVar[Path | None] = contextvars.ContextVar(
    "pid_directory", default=None
)


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """preexec_fn: SIGKILL this child when the runner dies, however it dies."""

    def set_parent_death_signal() -> None:
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:
            os._exit(1)  # the runner died between fork and prctl: never start orphaned

    return set_parent_death_signal


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[19]


def _command_line(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0")[:-1]]


@contextlib.contextmanager
def recording_pids(directory: Path) -> Iterator[Path]:
    """Inside the block, every Supervised child leaves ``directory/<pid>.json`` while it runs."""
    directory.mkdir(parents=True, exist_ok=True)
    token = _PID_DIRECTORY.set(directory)
    try:
        yield directory
    finally:
        _PID_DIRECTORY.reset(token)


def pid_directory() -> Path | None:
    """The directory ``recording_pids`` is filling, if any (lab.network records its
    namespaces there too)."""
    return _PID_DIRECTORY.get()


def stop_leftovers(directory: Path) -> list[str]:
    """Stop the processes a dead runner left, from their PID files in ``directory``.

    A PID is stopped only if it still runs the recorded command line (or, for a command run
    through a wrapper that execs, such as ``ip netns exec``, its tail) and started at the
    recorded time. Call it only while holding the directory's writer lock: then no live
    runner owns these files. Returns one description per process stopped.
    """
    stopped = []
    for pid_file in sorted(Path(directory).glob("*.json")):
        if pid_file.name.startswith("netns-"):
            continue  # a namespace: lab.network.remove_recorded_namespaces
        try:
            entry = json.loads(pid_file.read_text())
            pid, argv, started = int(entry["pid"]), list(entry["argv"]), str(entry["started"])
        except (OSError, ValueError, KeyError, TypeError):
            pid_file.unlink(missing_ok=True)  # half-written by a runner killed mid-write
            continue
        running = _command_line(pid)
        if running and running == argv[len(argv) - len(running) :] and _start_time(pid) == started:
            _stop_group(pid)
            stopped.append(f"PID {pid} ({' '.join(running)[:100]})")
        pid_file.unlink(missing_ok=True)
    return stopped


def _stop_group(pid: int, timeout_s: float = 3.0) -> None:
    """SIGTERM the process (and its group when it leads one), then SIGKILL if it lingers."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        target = pid if os.getpgid(pid) == pid else None
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if target is not None:
                os.killpg(target, signum)
            else:
                os.kill(pid, signum)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and _start_time(pid) is not None:
                if _is_zombie(pid):
                    return  # dead; its parent (init) reaps it
                time.sleep(0.05)
            if _start_time(pid) is None:
                return


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2 :].startswith("Z")


class Supervised:
    """A child process in its own session, stopped and reaped when the ``with`` block ends."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdout: int | IO[bytes] | None = subprocess.DEVNULL,
        stdin: int | IO[bytes] | None = subprocess.DEVNULL,
        stderr_path: Path | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stop_timeout_s: float = 3.0,
    ) -> None:
        self.argv = list(argv)
        self._stdout = stdout
        self._stdin = stdin
        self._stderr_path = stderr_path
        self._env = env
        self._cwd = cwd
        self._stop_timeout_s = stop_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self._stderr_handle: IO[bytes] | None = None
        self._pid_file: Path | None = None

    def __enter__(self) -> Supervised:
        if self._stderr_path is not None:
            self._stderr_handle = open(self._stderr_path, "wb")
        self.process = subprocess.Popen(
            self.argv,
            stdin=self._stdin,
            stdout=self._stdout,
            stderr=self._stderr_handle if self._stderr_handle else subprocess.DEVNULL,
            env=self._env,
            cwd=self._cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent(os.getpid()),
        )
        try:
            self._pid_file = self._record_pid()
        except OSError as error:
            self.stop()  # a child nobody could find after a crash is not left running
            problem = storage_problem(error, f"recording the PID of {self.argv[0]}")
            raise (problem or error) from None
        return self

    def _record_pid(self) -> Path | None:
        directory = _PID_DIRECTORY.get()
        if directory is None or self.process is None:
            return None
        started = _start_time(self.process.pid)
        if started is None:
            return None  # already gone
        path = directory / f"{self.process.pid}.json"
        # No fsync: the page cache survives the runner's death, which is what this is for.
        try:
            path.write_text(
                json.dumps({"pid": self.process.pid, "argv": self.argv, "started": started})
            )
        except OSError:
            path.unlink(missing_ok=True)  # a full disk leaves no empty PID file behind
            raise
        return path

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
            self._signal_group(signal.SIGCONT)  # a stopped (hung) child handles TERM now
            if self.wait(self._stop_timeout_s) is None:
                self._signal_group(signal.SIGKILL)
                self.process.wait()
        # The leader may be gone while children of its group live on: sweep the group too.
        self._signal_group(signal.SIGKILL)
        if self._stderr_handle is not None:
            self._stderr_handle.close()
            self._stderr_handle = None
        if self._pid_file is not None:
            self._pid_file.unlink(missing_ok=True)
            self._pid_file = None
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
