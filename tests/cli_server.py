"""Many short CLI processes, cheaply: a fork server with the CLI already imported.

``run_cli`` (tests/conftest.py) starts a fresh interpreter per call, as a user does; that costs
the interpreter's start and the CLI's imports (~0.2-0.5 s here) before the first line. A test
that runs the CLI dozens of times on inputs it must refuse (a matrix of bad options, fuzzed
files) spends most of its time there. ``run_cli_forked`` takes the same arguments and gives
the same ``CliResult``, but each call is a ``fork()`` of one server process per test process
(per xdist worker) that imported the whole package (and so pandas, scipy, matplotlib,
duckdb, pydantic) once: what is left per call is the command's own work.

What the child is: its own process (pid, session), with the call's argv, environment and
working directory, stdin from /dev/null, stdout and stderr to files, running ``python -m
iotsecbench`` through ``runpy`` as the interpreter does; its exit code is the CLI's, an
uncaught exception prints its traceback and exits 1, as the interpreter would. What differs
from a fresh interpreter: modules the server imported are not imported again (the CLI reads
its environment when commands run, never at import, so nothing is stale), and
``/proc/<pid>/cmdline`` names the server. So use it for what the CLI says and exits with,
not for lab runs (``lab.network`` knows a namespace's live owner by its command line, so
``doctor --cleanup`` would take a forked runner's namespaces for leftovers), nor for what
start-up imports (tests/unit/cli/test_startup_imports.py). Tests that use it start
processes: mark them ``integration`` (tests/lanes.py).
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import pkgutil
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import IO

_server: subprocess.Popen[str] | None = None
_lock = threading.Lock()


def run_cli_forked(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60, cwd: Path | None = None
):  # -> tests.conftest.CliResult
    """``run_cli``'s twin, forked from a pre-imported server (see the module docstring)."""
    from tests.conftest import CliResult

    environment = {**os.environ, "COLUMNS": "200", **(env or {})}
    with tempfile.TemporaryDirectory(prefix="iotsb-cli-") as scratch, _lock:
        request = {
            "args": list(args),
            "env": environment,
            "cwd": str(cwd or Path.cwd()),
            "timeout": timeout,
            "stdout": str(Path(scratch) / "stdout"),
            "stderr": str(Path(scratch) / "stderr"),
        }
        server = _started()
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
        if not line:
            raise RuntimeError(f"the CLI fork server died (exit {server.wait()})")
        reply = json.loads(line)
        stdout = Path(request["stdout"]).read_text(errors="replace")
        stderr = Path(request["stderr"]).read_text(errors="replace")
    if reply["timed_out"]:
        raise subprocess.TimeoutExpired(["iotsecbench", *args], timeout, stdout, stderr)
    return CliResult(reply["returncode"], stdout, stderr)


def _started() -> subprocess.Popen[str]:
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen(
            [sys.executable, "-m", "tests.cli_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        atexit.register(_stop, _server)
    return _server


def _stop(server: subprocess.Popen[str]) -> None:
    if server.poll() is None and server.stdin is not None:
        server.stdin.close()  # the server ends at end of input
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


# --- the server ------------------------------------------------------------------------------


def _child(request: dict, replies: IO[str]) -> None:
    """In the forked child: become ``python -m iotsecbench ARGS``; never returns."""
    code = 1
    try:
        os.close(replies.fileno())  # the server's alone
        os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, path, flags in (
            (0, os.devnull, os.O_RDONLY),
            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        ):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 (fd 0, kept for the process)
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        sys.argv = ["-m", *request["args"]]  # what `python -m` gives before runpy fills [0]
        try:
            runpy.run_module("iotsecbench", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else (1 if exited.code else 0)
            if exited.code is not None and not isinstance(exited.code, int):
                print(exited.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: nothing left to save
                stream.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> tuple[int, bool]:
    """The child's exit code (negative: killed by that signal), and whether it timed out."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), False
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # the child and whatever it started
            os.waitpid(pid, 0)
            return -signal.SIGKILL, True
        time.sleep(0.002)


def _preload() -> None:
    """Import every module of the package but ``__main__``: what a command imports when it
    runs (pydantic models, the runner, pandas, scipy, matplotlib, duckdb) is then inherited
    by each fork instead of loaded by it (seconds a call otherwise)."""
    import iotsecbench
    from iotsecbench.cli.app import command

    command()  # the click tree, every command's options read (~0.06 s a call otherwise)
    for module in pkgutil.walk_packages(iotsecbench.__path__, "iotsecbench."):
        if not module.name.endswith("__main__"):
            with contextlib.suppress(Exception):  # an optional part missing: loaded per call
                importlib.import_module(module.name)


def _serve(requests: IO[str], replies: IO[str]) -> None:
    _preload()
    gc.freeze()  # as tests/fork_server.py does: no collection in a fork copies the server
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, replies)
        returncode, timed_out = _wait(pid, request["timeout"])
        replies.write(json.dumps({"returncode": returncode, "timed_out": timed_out}) + "\n")
        replies.flush()


if __name__ == "__main__":
    # Replies go on a private copy of stdout; the server's own fd 1 becomes stderr, so nothing
    # it or a library prints can corrupt the reply stream.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    _serve(sys.stdin, replies)
