"""Children die with their runner (PR_SET_PDEATHSIG), and stop_leftovers stops what a dead
runner left — by PID file, command line and start time, never by name alone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iotsecbench.lab import processes
from iotsecbench.lab.processes import recording_pids, stop_leftovers

# Starts and kills processes (tests/lanes.py).
pytestmark = pytest.mark.integration

PARENT = """
import sys, time
from pathlib import Path
from iotsecbench.lab.processes import Supervised, recording_pids
with recording_pids(Path(sys.argv[1])):
    with Supervised(["sleep", "300"]) as child:
        print(child.pid, flush=True)
        time.sleep(300)
"""


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for init to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_until_dead(pid: int, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_child_dies_when_its_runner_is_killed(tmp_path: Path) -> None:
    if processes._PRCTL is None:
        pytest.skip("no prctl on this system")
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert alive(child)
        entry = json.loads((tmp_path / f"{child}.json").read_text())
        assert entry["argv"] == ["sleep", "300"]
        parent.kill()  # SIGKILL: no with-block runs
        parent.wait()
        assert wait_until_dead(child), "the child outlived its runner"
    finally:
        parent.kill()
        if alive(child):
            os.kill(child, signal.SIGKILL)


def test_stop_leftovers_checks_command_line_and_start_time(tmp_path: Path) -> None:
    def spawn(*argv: str) -> subprocess.Popen[bytes]:
        return subprocess.Popen(list(argv), start_new_session=True)

    def record(pid: int, argv: list[str], started: str | None = None) -> None:
        started = started or processes._start_time(pid)
        (tmp_path / f"{pid}.json").write_text(
            json.dumps({"pid": pid, "argv": argv, "started": started})
        )

    leftover = spawn("sleep", "301")
    wrapped = spawn("sleep", "302")  # recorded as run through a wrapper that execs
    other_command = spawn("sleep", "303")
    reused_pid = spawn("sleep", "304")
    try:
        record(leftover.pid, ["sleep", "301"])
        record(wrapped.pid, ["ip", "netns", "exec", "ns", "sleep", "302"])
        record(other_command.pid, ["sleep", "999"])  # same name, other command line
        record(reused_pid.pid, ["sleep", "304"], started="1")  # the PID of an older process
        (tmp_path / "garbage.json").write_text("{")

        stopped = stop_leftovers(tmp_path)

        assert len(stopped) == 2 and f"PID {leftover.pid}" in stopped[0] + stopped[1]
        assert leftover.wait(timeout=5) is not None and wrapped.wait(timeout=5) is not None
        assert other_command.poll() is None and reused_pid.poll() is None
        assert list(tmp_path.iterdir()) == []  # every PID file dealt with
    finally:
        for child in (leftover, wrapped, other_command, reused_pid):
            child.kill()
            child.wait()


def test_supervised_removes_its_pid_file_when_stopped(tmp_path: Path) -> None:
    with recording_pids(tmp_path), processes.Supervised(["sleep", "30"]) as child:
        assert (tmp_path / f"{child.pid}.json").exists()
    assert list(tmp_path.iterdir()) == []


def test_doctor_cleanup_stops_a_dead_runners_leftovers(cli, tmp_path: Path) -> None:
    out = tmp_path / "out"
    pid_directory = out / ".processes"
    pid_directory.mkdir(parents=True)
    leftover = subprocess.Popen(["sleep", "305"], start_new_session=True)
    try:
        (pid_directory / f"{leftover.pid}.json").write_text(
            json.dumps(
                {
                    "pid": leftover.pid,
                    "argv": ["sleep", "305"],
                    "started": processes._start_time(leftover.pid),
                }
            )
        )
        result = cli("doctor", "--cleanup", "--out", str(out))
        assert result.returncode in (0, 3), result.stderr  # 3: namespaces need root
        assert f"stopped PID {leftover.pid} (sleep 305)" in result.stdout
        assert leftover.wait(timeout=5) is not None
    finally:
        leftover.kill()
        leftover.wait()


@pytest.mark.integration
def test_a_full_disk_while_recording_a_pid_stops_the_child_and_leaves_no_empty_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills just as an agent starts: exit 3 in one line, the child stopped, and no
    0-byte PID file that stop_leftovers would stumble on later."""
    from iotsecbench.errors import EnvironmentProblem
    from iotsecbench.lab.processes import Supervised

    real_write_text = Path.write_text

    def full(path: Path, data: str, *args: object, **kwargs: object) -> int:
        if path.parent == tmp_path:
            real_write_text(path, "")  # created, then the write fails: what ENOSPC leaves
            raise OSError(28, "No space left on device")
        return real_write_text(path, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    child = Supervised(["sleep", "300"])
    with recording_pids(tmp_path), pytest.raises(EnvironmentProblem, match="no space left"):
        child.__enter__()
    assert child.process is not None and child.process.poll() is not None
    assert list(tmp_path.iterdir()) == []
