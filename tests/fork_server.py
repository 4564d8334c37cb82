"""A fork server for command-line cases: one Python start-up, then a fork per case.

``python -m tests.fork_server`` imports iotsecbench's commands and the libraries they load
(pandas, DuckDB, matplotlib, …) once, says ``ready``, then reads one JSON request per line on
stdin and answers one JSON line per request on stdout. Each request is a whole
``iotsecbench ARGS`` invocation run in a forked child — its own process, working directory,
stdout and stderr, killed with its process group at the timeout — so a case costs a fork,
not a Python start-up (milliseconds, not a second).

A request may name *work points* (``module:attribute``): functions the child replaces with
one that ends it at once with ``WORK_EXIT`` and the point's name, so a case whose input is
accepted stops where the real work (measuring, fitting, drawing) would begin. The answer
says which point was reached; a case that reaches none and keeps working runs into its
timeout.

A line is a batch, ``{"requests": [...], "parallel": N}``, run ``N`` children at a time;
each request is ``{"id": ..., "argv": [...], "cwd": DIR, "stdout": FILE, "stderr": FILE,
"timeout_s": 10, "work_points": ["iotsecbench.runner.experiment:_execute_and_store", …]}``.
Each answer, as its child ends: ``{"id": ..., "exit": code | null, "seconds": wall time,
"timed_out": bool, "work_point": name | null}``; then ``{"done": true}``.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import select
import signal
import sys
import time
from dataclasses import dataclass

WORK_EXIT = 97  # the child reached a work point: its input was accepted
PRELOAD = (
    "iotsecbench.cli.app",
    "iotsecbench.runner.progress",
    "iotsecbench.runner.simulated",
    "iotsecbench.workflows.calibration",
    "iotsecbench.report.summary",
    "iotsecbench.report.terminal",
    "iotsecbench.store.csv_input",
    "iotsecbench.lab.capabilities",
    "iotsecbench.vmcu",
    "iotsecbench.runner.experiment",
    "iotsecbench.runner.local",
    "iotsecbench.workflows.postprocess",
    "iotsecbench.workflows.attach",
    "iotsecbench.workflows.doctor",
    "iotsecbench.report.build",
    "iotsecbench.store.export",
    "iotsecbench.store.rebuild",
    "iotsecbench.bench.crypto",
    "iotsecbench.bench.handshake",
    "iotsecbench.bench.device",  # bench handshake --target
    "iotsecbench.vmcu.client",
    "iotsecbench.report.exporters",  # export --format timeline|bencher|…
    "iotsecbench.energy.calibrate",
    "iotsecbench.meters",
)


class _WorkPoint:
    """Stands in for a function or class: calling it, or reaching for an attribute of it
    (``ResultsStore.open``), ends the child at once, naming the point."""

    def __init__(self, name: str, marker: str) -> None:
        self._name, self._marker = name, marker

    def _reached(self) -> None:
        with open(self._marker, "w") as handle:
            handle.write(self._name)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(WORK_EXIT)  # no unwinding: nothing after this point may run

    def __call__(self, *args: object, **kwargs: object) -> None:
        self._reached()

    def __getattr__(self, attribute: str) -> None:
        self._reached()


def _child(request: dict, marker: str) -> None:
    """Runs in the forked child; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)  # the case and whatever it starts: one group to kill at the timeout
        os.chdir(request["cwd"])
        for stream, path in ((1, request["stdout"]), (2, request["stderr"])):
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(descriptor, stream)
            os.close(descriptor)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for point in request.get("work_points", []):
            module_name, _, attribute = point.partition(":")
            module = importlib.import_module(module_name)
            if not hasattr(module, attribute):
                raise AttributeError(f"work point {point} does not exist")
            setattr(module, attribute, _WorkPoint(point, marker))
        from iotsecbench.cli.app import main

        sys.argv = ["iotsecbench", *request["argv"]]
        try:
            main(list(request["argv"]))
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


@dataclass
class _Running:
    request: dict
    pid: int
    pidfd: int
    started: float
    deadline: float


def _finish(running: _Running, timed_out: bool) -> dict:
    """Reap a child (killed with its group first when it ran out of time); its answer."""
    if timed_out:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.pid, signal.SIGKILL)
    _, status = os.waitpid(running.pid, 0)
    os.close(running.pidfd)
    marker = running.request["stderr"] + ".work-point"
    reached = None
    if os.path.exists(marker):
        with open(marker) as handle:
            reached = handle.read()
        os.unlink(marker)
    return {
        "id": running.request["id"],
        "exit": None if timed_out else os.waitstatus_to_exitcode(status),
        "seconds": time.monotonic() - running.started,
        "timed_out": timed_out,
        "work_point": reached,
    }


def run_batch(requests: list[dict], parallel: int, answer) -> None:  # type: ignore[no-untyped-def]
    """Every request in a child of its own, ``parallel`` at a time; ``answer`` is called
    with each answer as its child ends."""
    pending = list(requests)
    running: dict[int, _Running] = {}  # pidfd → child
    while pending or running:
        while pending and len(running) < parallel:
            request = pending.pop(0)
            marker = request["stderr"] + ".work-point"
            started = time.monotonic()
            pid = os.fork()
            if pid == 0:
                _child(request, marker)
            pidfd = os.pidfd_open(pid)
            deadline = started + float(request.get("timeout_s", 10))
            running[pidfd] = _Running(request, pid, pidfd, started, deadline)
        wait_s = max(0.0, min(r.deadline for r in running.values()) - time.monotonic())
        ready, _, _ = select.select(list(running), [], [], wait_s)
        now = time.monotonic()
        for pidfd in list(running):
            if pidfd in ready or running[pidfd].deadline <= now:
                answer(_finish(running.pop(pidfd), timed_out=pidfd not in ready))


def serve() -> None:
    os.environ.setdefault("COLUMNS", "200")
    for name in PRELOAD:
        importlib.import_module(name)
    from iotsecbench.cli.app import command

    command()  # every command module imported and its options read once, here
    # What is loaded now stays out of the collector's sweeps (gc.freeze): a collection in a
    # forked case would otherwise write to every object's header and copy the server's
    # hundreds of MB page by page into each case (copy-on-write).
    gc.freeze()
    answers = sys.stdout
    print("ready", file=answers, flush=True)
    for line in sys.stdin:
        batch = json.loads(line)
        run_batch(
            batch["requests"],
            int(batch.get("parallel", 1)),
            lambda answer: print(json.dumps(answer), file=answers, flush=True),
        )
        print(json.dumps({"done": True}), file=answers, flush=True)


if __name__ == "__main__":
    serve()
