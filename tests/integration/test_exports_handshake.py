"""`export` of a real traced `bench handshake` store (scheduler traces of real TLS handshakes
against mosquitto; docs/exports.md): the CI formats carry each profile's network-invariant
CPU time and its interval as stored, and the timeline lays the stored iotst groups of every
connection end to end from its own TCP connect. (The counted store's exports are checked on
its real run in test_device_client.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from iotsecbench.measure.tracefs import tracing_problem
from iotsecbench.report.exporters import costs
from tests.conftest import REPO, query, run_cli, run_cli_forked

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PROBLEM = tracing_problem()
SCHEMAS = REPO / "tests" / "data" / "schemas"
PROFILE = "tls1.3/x25519/ecdsa-p256"


@pytest.mark.skipif(PROBLEM is not None, reason=f"no tracing here: {PROBLEM}")
def test_a_traced_store_exports_its_handshake_cost_and_groups(
    mosquitto: str, tmp_path: Path
) -> None:
    out = tmp_path / "traced"
    made = run_cli("bench", "handshake", "--trace", "--profiles", PROFILE, "--reps", "3",
                   "--quiet", "--out", str(out), timeout=600)  # fmt: skip
    assert made.returncode == 0, made.stderr + made.stdout
    [(details_json,)] = query(out, "SELECT details_json FROM runs")
    stored = json.loads(details_json)["network_invariant_cpu_s"]

    # export reads the stored runs: forks of the pre-imported CLI (tests/cli_server.py)
    exported = run_cli_forked(
        "export", str(out), "--format", "bencher", "--out", str(tmp_path / "ci")
    )
    assert exported.returncode == 0, exported.stderr
    document = json.loads((tmp_path / "ci" / "bencher.json").read_text())
    jsonschema.validate(document, json.loads((SCHEMAS / "bmf.json").read_text()))
    assert document == {
        PROFILE: {
            costs.TRACED.measure: {
                "value": stored["mean"] * 1e3,
                "lower_value": stored["ci_low"] * 1e3,
                "upper_value": stored["ci_high"] * 1e3,
            }
        }
    }

    exported = run_cli_forked("export", str(out), "--timeline", "--out", str(tmp_path / "ci"))
    assert exported.returncode == 0, exported.stderr
    events = json.loads((tmp_path / "ci" / "timeline.json").read_text())["traceEvents"]
    slices = [e for e in events if e.get("cat") == "iotst"]
    groups = query(
        out,
        "SELECT repetition, group_name, on_cpu_ns + network_wait_ns + runnable_ns + other_ns "
        "FROM handshake_groups ORDER BY repetition, position",
    )
    assert [(e["args"]["repetition"], e["name"]) for e in slices] == [g[:2] for g in groups]
    assert [round(e["dur"] * 1000) for e in slices] == [g[2] for g in groups]
    connects = dict(query(out, "SELECT repetition, t_start_ns FROM handshake_connections"))
    for repetition, start_ns in connects.items():
        first = next(e for e in slices if e["args"]["repetition"] == repetition)
        assert first["ts"] == start_ns / 1000  # each connection's groups from its own start
