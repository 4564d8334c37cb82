"""A runner stopped at any moment of its start-up or of its analysis and report
(docs/reliability.md #22, #27; docs/exit-codes.md):

- killed (SIGKILL) at each moment of its start-up, then ``run --resume --out DIR`` alone
  either resumes the experiment that was asked for, or refuses in one line naming the
  options to give — it never runs the default experiment;
- interrupted (SIGINT) at five moments of the statistics and the report after the runs, it
  stops within a second with exit 130, names the command that finishes the job, and keeps
  every stored run.

The runs are simulated (the executor is not the point: the runner's start-up and its
post-processing are the same for every executor).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from iotsecbench.runner.experiment import KILL_AT_VARIABLE, STARTUP_MOMENTS
from tests.conftest import run_cli, run_cli_forked

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Not the default experiment in any field a resume could fall back on.
ASKED = ["--configs", "plain,tls1.2", "--payload", "64", "--duration", "1", "--reps", "1"]
SIMULATED = ["--simulate", "--quiet"]
# Runs long enough for the statistics (at least 10 samples per run).
LONGER = ["--configs", "plain,tls1.2", "--payload", "64", "--duration", "15", "--reps", "1"]


def _stored_spec(out: Path) -> dict:
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        (spec_json,) = db.execute("select spec_json from experiments").fetchone()
        runs = db.execute("select configuration, payload_bytes, status from runs").fetchall()
    return {"spec": json.loads(spec_json), "runs": sorted(runs)}


@pytest.mark.parametrize("moment", STARTUP_MOMENTS)
def test_a_kill_at_start_up_then_resume_alone_never_runs_a_default(
    tmp_path: Path, moment: str
) -> None:
    out = tmp_path / "out"
    killed = run_cli(
        "run", *ASKED, *SIMULATED, "--no-report", "--out", str(out),
        env={KILL_AT_VARIABLE: moment},
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = run_cli("run", "--resume", "--out", str(out), *SIMULATED, "--no-report")
    if not (out / "spec.json").exists():
        # Nothing of the experiment was stored: refused, saying what to give.
        assert resumed.returncode == 2, resumed.stdout + resumed.stderr
        lines = resumed.stderr.strip().splitlines()
        assert len(lines) == 1 and "nothing to resume" in lines[0], resumed.stderr
        assert "--preset" in lines[0] and "without --resume" in lines[0]
        assert not (out / "results.duckdb").exists()
        return
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    stored = _stored_spec(out)
    assert stored["spec"]["configurations"] == ["plain", "tls1.2"]
    assert stored["spec"]["payload_bytes"] == [64] and stored["spec"]["duration_s"] == 1
    assert stored["runs"] == [("plain", 64, "ok"), ("tls1.2", 64, "ok")]


def test_a_database_without_a_stored_spec_is_refused_naming_the_options(tmp_path: Path) -> None:
    """A directory an older iotsecbench left with a database but no spec (its runner killed
    between the two): --resume alone refuses, and resumes once the spec is given again."""
    out = tmp_path / "out"
    assert run_cli("run", *ASKED, *SIMULATED, "--no-report", "--out", str(out)).returncode == 0
    for name in ("spec.json", "experiment.json"):
        (out / name).unlink()
    refused = run_cli("run", "--resume", "--out", str(out), *SIMULATED, "--no-report")
    assert refused.returncode == 2
    line = refused.stderr.strip()
    assert "no stored experiment spec" in line and "--preset" in line and "\n" not in line
    spec = tmp_path / "asked.toml"
    spec.write_text(
        'configurations = ["plain", "tls1.2"]\npayload_bytes = [64]\nduration_s = 1.0\n'
        "repetitions = 1\n"
    )
    resumed = run_cli("run", str(spec), "--resume", "--out", str(out), *SIMULATED, "--no-report")
    assert resumed.returncode == 0, resumed.stderr
    assert "2 kept" in resumed.stdout


# Five moments of the statistics and the report, each told from the outside: the runner's
# first line on stdout says its runs are stored (the statistics begin; the summary tables,
# with the model's ranges, come after them), and
# analysis.json appears when the statistics are done and the report begins.
MOMENTS = (("summary", 0.0), ("summary", 0.3), ("summary", 1.0), ("analysis.json", 0.0),
           ("analysis.json", 0.5))  # fmt: skip


class Runner:
    """A simulated experiment with its report, its stdout lines timed as they come."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.process = subprocess.Popen(
            [sys.executable, "-m", "iotsecbench", "run", *LONGER, *SIMULATED, "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        self.seen: dict[str, float] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for _ in self.process.stdout:
            self.seen.setdefault("summary", time.monotonic())

    def wait_for(self, marker: str, after_s: float) -> bool:
        """True once ``after_s`` past the line ``marker``; False if the runner ended first."""
        while marker not in self.seen:
            if self.process.poll() is not None:
                return False
            if (self.out / marker).exists():
                self.seen[marker] = time.monotonic()
            time.sleep(0.002)
        while time.monotonic() < self.seen[marker] + after_s:
            time.sleep(0.002)
        return self.process.poll() is None


@pytest.mark.serial  # it times each stop (within 1 s): alone under parallel workers
def test_sigint_during_the_statistics_and_the_report_stops_within_a_second(
    tmp_path: Path,
) -> None:
    interrupted = 0
    for index, (marker, after_s) in enumerate(MOMENTS):
        out = tmp_path / f"interrupted-{index}"
        runner = Runner(out)
        if not runner.wait_for(marker, after_s):
            runner.process.communicate(timeout=60)
            continue  # finished before this moment (a fast machine)
        sent = time.monotonic()
        runner.process.send_signal(signal.SIGINT)
        _, stderr = runner.process.communicate(timeout=60)
        stopped_s = time.monotonic() - sent
        if runner.process.returncode == -signal.SIGINT and (out / "report/report.html").exists():
            continue  # the report was done: the signal met the interpreter's own exit
        interrupted += 1
        moment = f"{after_s} s after {marker!r}"
        assert runner.process.returncode == 130, f"{moment}: {stderr}"
        assert stopped_s <= 1.0, f"{moment}: stopped {stopped_s:.2f} s after the signal"
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in stderr, stderr
        # It names the command that finishes the job.
        assert f"iotsecbench report {out}" in lines[0], lines[0]
        # Every run is stored and nothing is half-written.
        assert run_cli_forked("db", "check", str(out)).returncode == 0
        assert not list(out.rglob("*.tmp")), list(out.rglob("*.tmp"))
    assert interrupted >= 4, f"only {interrupted} of 5 moments came before the end"
