"""The fork server (tests/cli_server.py) gives what a fresh interpreter gives: the same exit
code, stdout and stderr for help, a usage error, a bad file and a command that runs."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import run_cli, run_cli_forked

pytestmark = pytest.mark.integration  # both start processes (tests/lanes.py)

CASES = {
    "help": ("--help",),
    "unknown option": ("run", "--bogus"),
    "bad value": ("run", "--rate", "-1", "--simulate"),
    "missing results": ("report", "/nonexistent/results"),
    "schemes": ("schemes", "--json"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_forked_call_says_what_a_fresh_interpreter_says(name: str, tmp_path: Path) -> None:
    fresh = run_cli(*CASES[name], cwd=tmp_path)
    forked = run_cli_forked(*CASES[name], cwd=tmp_path)
    assert forked == fresh


def test_environment_and_working_directory_are_the_calls(tmp_path: Path) -> None:
    out = tmp_path / "relative"
    result = run_cli_forked("run", "--rate", "-1", "--out", "relative", cwd=tmp_path,
                            env={"COLUMNS": "90"})  # fmt: skip
    assert result.returncode == 2 and not out.exists()
    assert run_cli_forked("report", "relative", cwd=tmp_path).returncode != 0


def test_a_call_past_its_timeout_is_killed_like_subprocess_run(tmp_path: Path) -> None:
    started = time.monotonic()
    out = str(tmp_path / "never")  # a fixed path would meet another run's writer lock
    with pytest.raises(subprocess.TimeoutExpired):
        run_cli_forked("run", "--simulate", "--duration", "60", "--out", out, timeout=1)
    assert time.monotonic() - started < 30
    assert run_cli_forked("--help").returncode == 0  # the server goes on
