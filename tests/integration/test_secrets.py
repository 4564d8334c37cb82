"""No credential is ever stored or printed (docs/reliability.md, "Security hygiene").

A known password is planted everywhere a secret can enter a run — the external broker's URL
(the one place the runner needs it), the spec file (a comment) and the environment — and a
real run against a real mosquitto that demands it, with its report and its Parquet export,
then a resume, are searched: every file of the results directory, and everything printed.
"""

from __future__ import annotations

import secrets
import stat
from pathlib import Path

import pytest

from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from tests.conftest import run_cli, run_cli_forked

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_a_planted_password_is_found_nowhere(mosquitto: str, tmp_path: Path) -> None:
    password = f"Planted-{secrets.token_hex(8)}"
    account = BrokerUser("tester", password, ("iotsb/#",), ("iotsb/#",))
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f"# the broker's password is {password}\n"
        'name = "secrets"\nconfigurations = ["plain", "ecdh-p256-aes128-gcm"]\n'
        "duration_s = 1.0\nrepetitions = 1\n"
    )
    environment = {"MQTT_PASSWORD": password, "IOTSB_BROKER_PASSWORD": password}
    out = tmp_path / "out"
    printed = []
    with MosquittoBroker(tmp_path / "external", [account]) as broker:
        assert broker.listener is not None
        url = f"mqtt://tester:{password}@127.0.0.1:{broker.listener.port}"
        for args in (
            ["run", str(spec), "--broker", url, "--out", str(out), "--quiet"],
            # (its statistics and report would be the first run's again: searched there)
            ["run", "--resume", "--broker", url, "--out", str(out), "--quiet", "--no-report"],
            ["export", str(out)],
            # A refusal that names the URL names it without the password.
            ["run", "--broker", f"mqtt://tester:{password}@127.0.0.1:99999"],
        ):
            result = run_cli(*args, env=environment)
            printed += [result.stdout, result.stderr]
        assert "ok" in (run_cli_forked("db", "check", str(out)).stdout)
    assert "2 runs executed" in printed[0], printed[1]
    assert "port" in printed[7] and "tester" not in printed[7]
    searched = []
    for path in out.rglob("*"):
        if path.is_file():
            searched.append(path.relative_to(out).as_posix())
            assert password.encode() not in path.read_bytes(), f"{path} holds the password"
    for text in printed:
        assert password not in text
    # The database, the records, the Parquet export, the lock file, the report and the
    # agents' configs were all searched.
    for expected in (
        "results.duckdb",
        "experiment.json",
        ".writer.lock",
        "parquet/runs.parquet",
        "report/report.html",
        "runs/plain_256B_10Hz_q1_r1/record.json",
        "runs/plain_256B_10Hz_q1_r1/emitter.config.json",
    ):
        assert expected in searched, expected
    # Records and the lock file are for the run's owner only.
    for private in (out / ".writer.lock", out / "experiment.json", *out.glob("runs/*/record.json")):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
