"""``iotsecbench db check`` and ``db rebuild`` through the real CLI, on a damaged store."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import duckdb
import pytest
from tests.conftest import GOLDEN, run_cli_forked

# The CLI as a user runs it: a process per call (tests/lanes.py).
pytestmark = pytest.mark.integration


@pytest.fixture
def cli():  # -> run_cli's twin
    """Commands on a stored directory: forks of the pre-imported CLI (tests/cli_server.py),
    not a fresh interpreter importing pandas and matplotlib for each."""
    return run_cli_forked


def _golden_copy(tmp_path: Path) -> Path:
    target = tmp_path / "golden"
    shutil.copytree(GOLDEN, target, ignore=shutil.ignore_patterns("expected", "README.md"))
    return target


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_the_advised_rebuild_command_exists_and_restores_a_damaged_store(
    cli, tmp_path: Path
) -> None:
    results = _golden_copy(tmp_path)
    built = cli("db", "rebuild", str(results))
    assert built.returncode == 0, built.stderr
    assert "9 run(s) restored" in built.stdout and "kept as" not in built.stdout
    assert cli("db", "check", str(results)).returncode == 0

    # Damage the file in place (a torn write in the middle), as a crash or a bad disk would.
    database = results / "results.duckdb"
    damaged = bytearray(database.read_bytes())
    damaged[4096 : 4096 + 8192] = b"\xa5" * 8192
    damaged[:64] = b"\x00" * 64
    database.write_bytes(bytes(damaged))

    for command in (
        ["report", str(results)],
        ["analyze", str(results)],
        ["db", "check", str(results)],
    ):
        refused = cli(*command)
        assert refused.returncode == 4, (command, refused.stderr)
        line = _one_error_line(refused.stderr)
    advised = re.search(r"`iotsecbench (db rebuild [^`]+)`", line)
    assert advised is not None, line

    rebuilt = cli(*shlex.split(advised.group(1)))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "9 run(s) restored" in rebuilt.stdout
    aside = list(results.glob("results.duckdb.aside-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == bytes(damaged)  # set aside, not deleted
    assert aside[0].name in rebuilt.stdout
    checked = cli("db", "check", str(results))
    assert checked.returncode == 0 and "9 run(s) in the database, 9 run record(s)" in checked.stdout


def test_check_names_runs_the_database_lost(cli, tmp_path: Path) -> None:
    results = _golden_copy(tmp_path)
    assert cli("db", "rebuild", str(results)).returncode == 0
    with duckdb.connect(str(results / "results.duckdb")) as connection:
        connection.execute("DELETE FROM runs WHERE run_id = 'plain_256B_5Hz_q1_r2'")
    checked = cli("db", "check", str(results))
    assert checked.returncode == 4
    line = _one_error_line(checked.stderr)
    assert "plain_256B_5Hz_q1_r2" in line and f"iotsecbench db rebuild {results}" in line


def test_rebuild_of_a_directory_without_records_is_one_line(cli, tmp_path: Path) -> None:
    refused = cli("db", "rebuild", str(tmp_path))
    assert refused.returncode == 2
    assert "not a results directory" in _one_error_line(refused.stderr)
    (tmp_path / "runs").mkdir()
    without_experiment = cli("db", "rebuild", str(tmp_path))
    assert without_experiment.returncode == 4
    assert "experiment.json" in _one_error_line(without_experiment.stderr)
    missing = cli("db", "check", str(tmp_path / "nowhere"))
    assert missing.returncode == 2
    assert "not a directory" in _one_error_line(missing.stderr)
