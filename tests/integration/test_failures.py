"""Faults during an experiment: a crashing agent, a killed broker, Ctrl-C. Each leaves a
failed (or interrupted) run with its error, keeps every completed run, and leaves no process
behind (docs/reliability.md #9, #10, #22)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.integration


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line mentions ``text`` (the results directory is in every agent's
    and broker's arguments)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def runs(out: Path) -> dict[str, tuple[str, str | None]]:
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        return {
            row[0]: (row[1], row[2])
            for row in db.execute("select run_id, status, error from runs").fetchall()
        }


def test_crashing_agent_fails_its_run_only(mosquitto: str, tmp_path: Path) -> None:
    out = tmp_path / "crash"
    args = (
        "run",
        "--configs",
        "plain,ecdh-p256-aes128-gcm",
        "--duration",
        "1.5",
        "--reps",
        "1",
        "--out",
        str(out),
        "--quiet",
    )
    result = run_cli(
        *args,
        env={"IOTSB_TEST_FAULT": "emitter:crash-after=5@ecdh-p256-aes128-gcm"},
    )
    assert result.returncode == 1, result.stderr
    stored = runs(out)
    assert stored["plain_256B_10Hz_q1_r1"] == ("ok", None)
    status, error = stored["ecdh-p256-aes128-gcm_256B_10Hz_q1_r1"]
    assert status == "failed" and "emitter failed (exit code 17)" in error
    # Partial data of the failed run is kept: the messages before the crash.
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        partial = db.execute("select count(*) from messages where run_id like 'ecdh%'").fetchone()
    assert partial[0] >= 1
    assert (out / "runs" / "ecdh-p256-aes128-gcm_256B_10Hz_q1_r1" / "emitter.jsonl").exists()
    assert processes_mentioning(str(out)) == []
    # --resume re-runs only the failed run.
    again = run_cli(*args, "--resume")
    assert again.returncode == 0, again.stderr
    assert "1 runs executed, 1 kept" in again.stdout
    assert {status for status, _ in runs(out).values()} == {"ok"}


def test_killed_broker_fails_the_run_with_the_signal(mosquitto: str, tmp_path: Path) -> None:
    out = tmp_path / "broker"
    result = run_cli(
        "run",
        "--configs",
        "plain",
        "--duration",
        "3",
        "--reps",
        "1",
        "--out",
        str(out),
        "--quiet",
        env={"IOTSB_TEST_FAULT": "broker:kill-after=1.0@plain"},
    )
    assert result.returncode == 1
    status, error = runs(out)["plain_256B_10Hz_q1_r1"]
    assert status == "failed"
    assert "broker exited (signal 9 (SIGKILL))" in error or "lost the broker" in error, error
    assert processes_mentioning(str(out)) == []


def test_ctrl_c_stores_the_interrupted_run_and_exits_130(mosquitto: str, tmp_path: Path) -> None:
    out = tmp_path / "sigint"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "iotsecbench",
            "run",
            "--configs",
            "plain",
            "--duration",
            "30",
            "--reps",
            "1",
            "--out",
            str(out),
            "--quiet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    run_dir = out / "runs" / "plain_256B_10Hz_q1_r1"
    while time.monotonic() < deadline:  # wait until the emitter is publishing
        emitter = run_dir / "emitter.jsonl"
        if emitter.exists() and '"message"' in emitter.read_text():
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert len(stderr.strip().splitlines()) == 1 and "--resume" in stderr
    status, _error = runs(out)["plain_256B_10Hz_q1_r1"]
    assert status == "interrupted"
    assert processes_mentioning(str(out)) == []


@pytest.mark.slow
def test_kill_9_of_the_runner_leaves_no_broker_and_resume_completes(
    mosquitto: str, tmp_path: Path
) -> None:
    out = tmp_path / "killed"
    args = ["run", "--configs", "plain,tls1.2", "--duration", "4", "--reps", "1", "--out", str(out)]
    runner = subprocess.Popen(
        [sys.executable, "-m", "iotsecbench", *args, "--quiet", "--no-report"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    pid_files = out / ".processes"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # mid-run: broker, receiver and emitter all up
        if len(list(pid_files.glob("*.json"))) == 3:
            break
        time.sleep(0.1)
    time.sleep(1.0)
    children = processes_mentioning(str(out))
    assert any("mosquitto" in Path(f"/proc/{pid}/cmdline").read_text() for pid in children)
    runner.kill()
    runner.wait()

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and live(processes_mentioning(str(out))):
        time.sleep(0.1)
    assert live(processes_mentioning(str(out))) == [], "a broker or agent outlived its runner"

    resumed = run_cli(*args, "--resume", "--quiet", "--no-report", timeout=180)
    assert resumed.returncode == 0, resumed.stderr
    assert {status for status, _ in runs(out).values()} == {"ok"} and len(runs(out)) == 2
    assert live(processes_mentioning(str(out))) == []
    assert list(pid_files.iterdir()) == []


def live(pids: list[int]) -> list[int]:
    """The PIDs that are running, not zombies waiting for init to reap them."""
    running = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            running.append(pid)
    return running


def test_hung_agent_is_killed_by_the_silence_watchdog_and_the_sweep_goes_on(
    mosquitto: str, tmp_path: Path
) -> None:
    """An emitter that freezes (alive, writing nothing) is found within AGENT_SILENCE_S,
    long before the run's duration is up; its run fails, the next one runs."""
    from iotsecbench.runner.local import AGENT_SILENCE_S

    out = tmp_path / "hung"
    duration_s = AGENT_SILENCE_S + 8
    started = time.monotonic()
    result = run_cli(
        *("run", "--configs", "plain,ecdh-p256-aes128-gcm", "--duration", str(duration_s)),
        *("--reps", "1", "--out", str(out), "--quiet", "--no-report"),
        env={"IOTSB_TEST_FAULT": "emitter:hang-after=3@plain"},
        timeout=240,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    stored = runs(out)
    status, error = stored["plain_256B_10Hz_q1_r1"]
    assert status == "failed" and "emitter wrote nothing" in error and "hung" in error, error
    assert stored["ecdh-p256-aes128-gcm_256B_10Hz_q1_r1"] == ("ok", None)
    # The hung run ended by the silence watchdog, not by the whole-run budget: the sweep
    # took one full run plus the silence limit and start-up, not two full runs.
    assert elapsed < 2 * duration_s + 15, elapsed
    assert live(processes_mentioning(str(out))) == []


def test_negotiated_mismatch_fails_the_run_and_the_sweep_goes_on(
    mosquitto: str, tmp_path: Path
) -> None:
    """A live TLS connection whose group differs from the one the agent checks for: the
    agent's check fails the run with the difference named; the sweep continues."""
    out = tmp_path / "mismatch"
    result = run_cli(
        *("run", "--configs", "tls1.3,plain", "--duration", "1.5", "--reps", "1"),
        *("--out", str(out), "--quiet", "--no-report"),
        env={"IOTSB_TEST_FAULT": "emitter:expect-group=x448@tls1.3"},
    )
    assert result.returncode == 1, result.stderr
    stored = runs(out)
    status, error = stored["tls1.3_256B_10Hz_q1_r1"]
    assert status == "failed", error
    assert "negotiated something else" in error and "x448" in error, error
    assert stored["plain_256B_10Hz_q1_r1"] == ("ok", None)
    assert live(processes_mentioning(str(out))) == []
