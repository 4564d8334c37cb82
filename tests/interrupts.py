"""Interrupting a real sweep at named moments, and tallying what that cost: the kill -9 tests
(tests/integration/test_failures.py) and the signal tally (benchmarks/signal_tally.py) share
it. A moment is recognised from the outside, by the files a sweep leaves as it goes, the way a
user's Ctrl-C or an OOM killer meets it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from tests.conftest import run_cli


def records(out: Path) -> list[Path]:
    return sorted((out / "runs").glob("*/record.json"))


def ok_records(out: Path) -> dict[str, str]:
    """Runs whose record.json says ``ok`` (finished, so never to be measured again), each
    with when it started: a run measured again gets a new start."""
    found = {}
    for path in records(out):
        try:
            run = json.loads(path.read_text())["run"]
        except (ValueError, KeyError):
            continue  # being written: not yet a finished run
        if run.get("status") == "ok":
            found[path.parent.name] = run["started_utc"]
    return found


def _mid_run(index: int) -> Callable[[Path, int], bool]:
    def moment(out: Path, total: int) -> bool:
        emitters = sorted((out / "runs").glob("*/emitter.jsonl"), key=os.path.getmtime)
        return (
            len(records(out)) == index
            and len(emitters) > index
            and ('"message"' in emitters[index].read_text(errors="replace"))
        )

    return moment


def _after_record(index: int) -> Callable[[Path, int], bool]:
    return lambda out, total: len(records(out)) > index


# name -> predicate(out, total runs): true once the sweep has reached that moment.
MOMENTS: dict[str, Callable[[Path, int], bool]] = {
    "start-up": lambda out, total: (out / "spec.json").exists(),
    "before the first handshake": lambda out, total: (
        any((out / ".processes").glob("*.json"))
        and not any((out / "runs").glob("*/receiver.jsonl"))
    ),
    "mid-run 1": _mid_run(0),
    "after record 1": _after_record(0),
    "mid-run 2": _mid_run(1),
    "after record 2": _after_record(1),
    "mid-run 3": _mid_run(2),
    "after record 3": _after_record(2),
    "mid-run 4": _mid_run(3),
    "after record 4": _after_record(3),
    # The statistics come first, then the report directory is made and filled.
    "during analysis": lambda out, total: (
        len(records(out)) == total and not (out / "report").exists()
    ),
    "during the report": lambda out, total: (
        (out / "report").exists() and not (out / "report" / "report.html").exists()
    ),
}


def processes_mentioning(text: str) -> list[int]:
    """Live (not zombie) PIDs whose command line mentions ``text``: the results directory is
    in every agent's and broker's arguments."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if text in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def lab_leftovers(runner_pid: int) -> list[str]:
    """Network namespaces the given (dead) runner made (``iotsb-<pid>-…``) that are still
    there: its leftovers, not those of another experiment or of an earlier, unrelated kill
    (a machine may hold such; they are doctor --cleanup's business, not this trial's)."""
    from iotsecbench.lab.network import leftover_namespaces

    return [name for name in leftover_namespaces() if name.startswith(f"iotsb-{runner_pid}-")]


@dataclass
class Trial:
    moment: str
    signum: int
    reached: bool  # the sweep got to the moment before it finished on its own
    exit_code: int
    stderr_lines: int
    traceback: bool
    left_after_signal: int  # processes still alive 5 s after the runner exited
    ok_before: int  # runs whose record.json said ok when the runner exited
    kept: int  # of those, how many --resume kept (the rest were measured again: lost)
    resume_exit: int
    left_after_resume: int
    namespaces_left: int

    @property
    def lost(self) -> int:
        return self.ok_before - self.kept


def interrupt(
    out: Path, args: list[str], total: int, moment: str, signum: int, report: bool = True
) -> Trial:
    """Start ``iotsecbench run ARGS --out OUT``, send ``signum`` at ``moment``, then resume
    with ``run --resume --out OUT`` alone (the experiment comes from OUT/spec.json).

    ``report=False`` gives both commands ``--no-report``: for a moment inside the runs, whose
    trial reads only the store and the processes, the statistics and the report after the
    resume (about half of a lab run's CPU) are the post-processing moments' own path."""
    no_report = [] if report else ["--no-report"]
    command = ["run", *args, "--out", str(out), "--quiet", *no_report]
    runner = subprocess.Popen(
        [sys.executable, "-m", "iotsecbench", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    reached, deadline = False, time.monotonic() + 300
    while runner.poll() is None and time.monotonic() < deadline:
        if MOMENTS[moment](out, total):
            reached = True
            runner.send_signal(signum)
            break
        time.sleep(0.02)
    _, stderr = runner.communicate(timeout=300)
    deadline = time.monotonic() + 5
    while processes_mentioning(str(out)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = len(processes_mentioning(str(out)))
    ok_before = ok_records(out)
    resumed = run_cli("run", "--resume", "--out", str(out), "--quiet", *no_report, timeout=600)
    kept = _kept(out, ok_before)
    return Trial(
        moment=moment,
        signum=signum,
        reached=reached,
        exit_code=runner.returncode,
        stderr_lines=len(stderr.strip().splitlines()),
        traceback="Traceback" in stderr,
        left_after_signal=left,
        ok_before=len(ok_before),
        kept=kept,
        resume_exit=resumed.returncode,
        left_after_resume=len(processes_mentioning(str(out))),
        namespaces_left=len(lab_leftovers(runner.pid)),
    )


def _kept(out: Path, ok_before: dict[str, str]) -> int:
    """How many of the runs that were ``ok`` before the resume are stored from that same
    measurement (one measured again would carry a later start)."""
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        stored = dict(db.execute("select run_id, started_utc from runs").fetchall())
    return sum(1 for run_id, started in ok_before.items() if stored.get(run_id) == started)


SIGNALS = {signal.SIGKILL: "SIGKILL", signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}
