"""The real CLI end to end, with the simulated executor where a broker is not the point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from tests.conftest import run_cli_forked

# The CLI as a user runs it: a process per call (tests/lanes.py).
pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--payload", "-1"], "payload"),
        (["--configs", "nonsense"], "nonsense"),
        (["--configs", "tls1.2+aes-gmc"], "did you mean"),
        (["--qos", "7"], "QoS 7"),
        (["--payload", "abc"], "whole numbers"),
        (["--rate", "fast"], "numbers"),
        (["--preset", "nope"], "unknown preset"),
        (["--device", "esp8266-imaginary"], "esp8266-imaginary"),
        (["--broker", "http://x:1"], "mqtt://"),
        (["--broker", "mqtt://127.0.0.1:1", "--configs", "tls1.2"], "cannot carry"),
        (["--no-such-option"], "no-such-option"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], fragment: str) -> None:
    # A matrix of short refusals: each a fork of the pre-imported CLI (tests/cli_server.py).
    result = run_cli_forked("run", "--out", str(tmp_path / "out"), *args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert fragment in lines[0]
    assert "Traceback" not in result.stderr
    # Validated before anything was spawned or stored.
    assert not (tmp_path / "out" / "results.duckdb").exists()


def test_simulated_run_stores_every_table_and_prints_the_summary(tmp_path: Path) -> None:
    # The store and the summary tables (printed before the statistics): no report needed
    # (the resume test's runs draw theirs); a fork of the pre-imported CLI (tests/cli_server.py).
    out = tmp_path / "sim"
    result = run_cli_forked(
        *("run", "--simulate", "--duration", "3", "--reps", "2", "--out", str(out), "--quiet"),
        "--no-report",
    )
    assert result.returncode == 0, result.stderr
    for heading in ("Handshake and latency", "Cost per message", "Device energy (modelled"):
        assert heading in result.stdout
    assert "no integrity, no replay protection" in result.stdout
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        per_config = dict(
            db.execute(
                "select configuration, count(*) from runs where status='ok' group by 1"
            ).fetchall()
        )
        assert per_config == {
            "plain": 2,
            "tls1.2": 2,
            "ecdh-p256-aes128-cbc": 2,
            "ecdh-p256-aes128-gcm": 2,
        }
        assert db.execute("select count(*) from messages").fetchone()[0] == 8 * 30
        assert (
            db.execute("select count(*) from samples where current_ma is null").fetchone()[0] == 0
        )
        order = [
            r[0] for r in db.execute("select run_order from runs order by run_order").fetchall()
        ]
        assert order == list(range(8))
    spec = json.loads((out / "spec.json").read_text())
    assert spec["duration_s"] == 3.0


def test_resume_keeps_completed_runs_and_refuses_a_changed_spec(tmp_path: Path) -> None:
    # Five runs on one directory (three with their report): each a fork of the pre-imported
    # CLI (tests/cli_server.py), not a fresh interpreter importing pandas and matplotlib.
    def cli(*args: str):  # -> tests.conftest.CliResult
        return run_cli_forked(*args, timeout=300)

    out = tmp_path / "sim"
    args = ["run", "--simulate", "--duration", "2", "--reps", "1", "--out", str(out), "--quiet"]
    assert cli(*args).returncode == 0
    again = cli(*args)
    assert again.returncode == 2 and "--resume" in again.stderr
    extended = cli(
        "run",
        "--simulate",
        "--duration",
        "2",
        "--reps",
        "2",
        "--out",
        str(out),
        "--quiet",
        "--resume",
    )
    assert extended.returncode == 0, extended.stderr
    assert "4 kept" in extended.stdout
    changed = cli(
        "run",
        "--simulate",
        "--duration",
        "5",
        "--reps",
        "1",
        "--out",
        str(out),
        "--resume",
        "--quiet",
    )
    assert changed.returncode == 2 and "--duration" in changed.stderr
    fresh = cli(
        "run",
        "--simulate",
        "--duration",
        "5",
        "--reps",
        "1",
        "--out",
        str(out),
        "--force-new-run",
        "--quiet",
    )
    assert fresh.returncode == 0, fresh.stderr
    assert any(p.name.startswith("previous-") for p in out.iterdir())


def test_export_writes_parquet(tmp_path: Path) -> None:
    cli = run_cli_forked  # a simulated run and exports: forks (tests/cli_server.py)
    out = tmp_path / "sim"
    assert (
        cli(
            "run",
            "--simulate",
            "--duration",
            "1",
            "--reps",
            "1",
            "--configs",
            "plain",
            "--out",
            str(out),
            "--quiet",
            "--no-report",
        ).returncode
        == 0
    )
    result = cli("export", str(out))
    assert result.returncode == 0, result.stderr
    files = {Path(line).name for line in result.stdout.split()}
    assert {"runs.parquet", "messages.parquet", "samples.parquet"} <= files
    missing = cli("export", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "results.duckdb" in missing.stderr


def test_schemes_json_lists_properties() -> None:
    result = run_cli_forked("schemes", "--json")
    assert result.returncode == 0
    schemes = {entry["name"]: entry for entry in json.loads(result.stdout)}
    cbc = schemes["ecdh-p256-aes128-cbc"]["properties"]
    assert cbc["integrity"] is False and cbc["replay_protection"] is False
    assert any("no integrity, no replay protection" in w for w in cbc["warnings"])
    gcm = schemes["ecdh-p256-aes128-gcm"]["properties"]
    assert gcm["integrity"] and gcm["replay_protection"] and gcm["tag_bytes"] == 16


def test_doctor_reports_one_line_per_capability() -> None:
    cli = run_cli_forked  # doctor's checks run in the command: a fork does them all
    result = cli("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert {
        "mosquitto",
        "privileges",
        "network namespaces",
        "tracefs (scheduler traces)",
        "perf",
        "cgroups (CPU limits)",
    } <= set(checks)
    assert result.returncode == (3 if not checks["mosquitto"]["ok"] else 0)
    text = cli("doctor")
    assert len(text.stdout.strip().splitlines()) == len(checks)


def test_missing_mosquitto_is_exit_3_naming_the_package(cli, tmp_path: Path) -> None:
    result = cli(
        "run",
        "--duration",
        "1",
        "--reps",
        "1",
        "--out",
        str(tmp_path / "o"),
        env={"IOTSB_MOSQUITTO": "/nonexistent/mosquitto"},
    )
    assert result.returncode == 3
    assert len(result.stderr.strip().splitlines()) == 1
    assert "IOTSB_MOSQUITTO" in result.stderr


def test_tables_piped_to_a_file_keep_their_columns():
    # Without a terminal (and without COLUMNS) rich assumed 80 columns and squeezed the
    # implementation column of `schemes` to "imple…"; piped output now gets the full width.
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    completed = subprocess.run(
        [sys.executable, "-m", "iotsecbench", "schemes"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert completed.returncode == 0, completed.stderr
    assert "implementation" in completed.stdout and "imple…" not in completed.stdout
    assert "(native)" in completed.stdout and "(pure Py)" in completed.stdout
