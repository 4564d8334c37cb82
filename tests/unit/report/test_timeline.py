"""`export DIR --timeline`: Chrome trace-event JSON checked against the format's schema and,
count for count and nanosecond for nanosecond, against the store it was made from."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import jsonschema
import pandas as pd
import pytest
from tests.conftest import REPO, golden_store_copy, query

from iotsecbench.cli.app import main
from iotsecbench.report.exporters import timeline

SCHEMA = json.loads((REPO / "tests" / "data" / "schemas" / "trace-event.json").read_text())


@pytest.fixture(scope="module")
def golden(golden_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden experiment's results directory, copied once for this module."""
    return golden_store_copy(golden_store, tmp_path_factory.mktemp("timeline"))


@pytest.fixture(scope="module")
def trace(golden: Path) -> dict:
    [(name, document)] = timeline.documents(golden).items()
    assert name == timeline.FILE_NAME
    # What the file holds: JSON without NaN, as the CLI writes it.
    return json.loads(json.dumps(document, allow_nan=False))


def _by_kind(trace: dict) -> Counter:
    return Counter(
        (event["pid"], event["ph"], event.get("cat") or event["name"])
        for event in trace["traceEvents"]
    )


def _pids(trace: dict) -> dict[str, int]:
    """run id → its process id."""
    return {
        event["args"]["name"].split(" ")[0]: event["pid"]
        for event in trace["traceEvents"]
        if event["ph"] == "M" and event["name"] == "process_name"
    }


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_the_timeline_is_trace_event_json(trace: dict) -> None:
    jsonschema.validate(trace, SCHEMA)
    assert trace["displayTimeUnit"] == "ms"
    assert "CLOCK_MONOTONIC" in trace["otherData"]["clock"]


def test_slices_and_counters_equal_the_store_count_for_count(trace: dict, golden: Path) -> None:
    counts, pids = _by_kind(trace), _pids(trace)
    assert set(pids) == {run for (run,) in query(golden, "select run_id from runs")}
    expected: Counter = Counter()
    for run_id, rows in query(golden, "select run_id, count(*) from handshakes group by 1"):
        expected[(pids[run_id], "X", "handshake")] = rows
    for name, _, start, end in timeline.MESSAGE_SLICES:
        for run_id, rows in query(
            golden,
            f"select run_id, count(*) from messages where {start} is not null and {end} is not "
            "null group by 1",
        ):
            expected[(pids[run_id], "b" if name == "transport" else "X", name)] = rows
            if name == "transport":
                expected[(pids[run_id], "e", name)] = rows
    for run_id, agent, rows in query(
        golden, "select run_id, agent, count(*) from samples group by 1, 2"
    ):
        expected[(pids[run_id], "C", f"{agent} samples")] = rows
    for run_id, rows in query(golden, "select run_id, count(*) from events group by 1"):
        expected[(pids[run_id], "i", "event")] = rows
    metadata = {key: value for key, value in counts.items() if key[1] == "M"}
    assert counts - Counter(metadata) == expected
    assert all(expected[(pid, "X", "seal")] > 0 for pid in pids.values())


def test_timestamps_are_the_stored_monotonic_clock(trace: dict, golden: Path) -> None:
    pids = _pids(trace)
    stored = {
        (pids[run_id], agent, phase): (start, end)
        for run_id, agent, phase, start, end in query(
            golden,
            "select run_id, agent, phase, t_start_ns, t_end_ns from handshakes "
            "where coalesce(device_index, 0) = 0",
        )
    }
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    seen = 0
    for event in trace["traceEvents"]:
        if event.get("cat") != "handshake":
            continue
        agent = names[(event["pid"], event["tid"])].split(" ")[0]
        start, end = stored[(event["pid"], agent, event["name"])]
        assert round(event["ts"] * 1000) == start
        assert round((event["ts"] + event["dur"]) * 1000) == end
        seen += 1
    assert seen == len(stored)


def test_timestamps_are_monotonic_per_track(trace: dict) -> None:
    last: dict[tuple, float] = defaultdict(lambda: float("-inf"))
    open_flights: dict[str, float] = {}
    for event in trace["traceEvents"]:
        if event["ph"] == "M":
            continue
        track = (event["pid"], event["name"] if event["ph"] == "C" else event["tid"])
        assert event["ts"] >= last[track], (track, event)
        last[track] = event["ts"]
        if event["ph"] == "b":
            open_flights[event["id2"]["local"]] = event["ts"]
        elif event["ph"] == "e":
            assert event["ts"] >= open_flights.pop(event["id2"]["local"])
    assert not open_flights  # every message's transport begins and ends


def test_one_run_alone(golden: Path, trace: dict) -> None:
    run_id = next(iter(_pids(trace)))
    [(name, document)] = timeline.documents(golden, run_id).items()
    assert name == f"timeline-{run_id}.json"
    jsonschema.validate(document, SCHEMA)
    assert set(_pids(document)) == {run_id}
    whole = {k[1:]: v for k, v in _by_kind(trace).items() if k[0] == _pids(trace)[run_id]}
    assert {k[1:]: v for k, v in _by_kind(document).items()} == whole


def test_traced_handshakes_show_their_iotst_groups_end_to_end() -> None:
    """A `bench handshake --trace` run: each connection's groups laid from its start, as long
    as the client thread's traced time in each."""
    handshakes = pd.DataFrame(
        {
            "run_id": "bench", "agent": "client", "device_index": 0,
            "phase": ["tcp_connect", "tls_handshake", "tcp_connect", "tls_handshake"],
            "t_start_ns": [1_000_000, 1_200_000, 9_000_000, 9_300_000],
            "t_end_ns": [1_200_000, 3_000_000, 9_300_000, 11_000_000],
            "wall_ns": [200_000, 1_800_000, 300_000, 1_700_000], "cpu_ns": 50_000,
            "detail_json": [json.dumps({"repetition": r}) for r in (0, 0, 1, 1)],
        }
    )  # fmt: skip
    groups = pd.DataFrame(
        {
            "run_id": "bench", "repetition": [0, 0, 1, 1, 1],
            "group_name": ["TCP_CONNECT", "CLIENT_HELLO", "TCP_CONNECT", "CLIENT_HELLO",
                           "FINISHED"],
            "position": [0, 1, 0, 1, 2], "on_cpu_ns": [10_000, 80_000, 12_000, 70_000, 5_000],
            "network_wait_ns": [150_000, 0, 200_000, 1_000, 0], "runnable_ns": 1_000,
            "other_ns": 0, "longest_run_ns": 5_000, "markers": 2,
        }
    )  # fmt: skip
    runs = pd.DataFrame({"run_id": ["bench"], "status": ["ok"], "run_order": [0]})
    data = timeline.TimelineInput(runs, {"handshakes": handshakes, "handshake_groups": groups})
    document = timeline.render(data)
    jsonschema.validate(document, SCHEMA)
    slices = [e for e in document["traceEvents"] if e.get("cat") == "iotst"]
    assert [e["name"] for e in slices] == list(groups["group_name"])
    first, second = slices[0], slices[1]
    assert first["ts"] == 1000.0 and first["dur"] == (10_000 + 150_000 + 1_000) / 1000
    assert second["ts"] == first["ts"] + first["dur"]  # end to end
    assert slices[2]["ts"] == 9000.0  # the second connection starts at its own TCP connect


def test_counted_handshakes_show_their_mean_groups_at_the_device_clock() -> None:
    """A `bench handshake --target` run (runs.cost_method 'counted'): its groups' mean client
    instructions at the profile's clock over CPI, end to end from runs.t0_ns, in the stored
    handshake order; a traced or timed run has no such track."""
    groups = {
        "WAIT_SERVER_FLIGHT": {"client": {"mean": 2_000_000.0}, "wait": 900.0, "io": 40.0},
        "CLIENT_HELLO": {"client": {"mean": 48_000_000.0}, "wait": 0.0, "io": 10.0},
    }
    details = {
        "method": "counted on rv32imc", "repetitions": 2, "groups": groups,
        "group_order": ["CLIENT_HELLO", "WAIT_SERVER_FLIGHT"],
        "device_time_s": {"clock_mhz": 160.0}, "device_model": {"cpi": 2.0},
    }  # fmt: skip
    runs = pd.DataFrame(
        {"run_id": ["counted", "timed"], "status": "ok", "run_order": [0, 1],
         "cost_method": ["counted", "timed"], "t0_ns": [5_000_000, 7_000_000],
         "details_json": [json.dumps(details), "{}"]}
    )  # fmt: skip
    document = timeline.render(timeline.TimelineInput(runs))
    jsonschema.validate(document, SCHEMA)
    slices = [e for e in document["traceEvents"] if e.get("cat") == "iotst"]
    assert [e["name"] for e in slices] == details["group_order"]
    assert {e["pid"] for e in slices} == {_pids(document)["counted"]}
    rate = 160e6 / 2.0  # instructions per second at 160 MHz, CPI 2
    assert slices[0]["ts"] == 5000.0 and slices[0]["dur"] == pytest.approx(48e6 / rate * 1e6)
    assert slices[1]["ts"] == slices[0]["ts"] + slices[0]["dur"]  # end to end
    assert slices[1]["args"]["network_wait_instructions_mean"] == 900.0
    names = [e["args"]["name"] for e in document["traceEvents"] if e["name"] == "thread_name"]
    assert names == ["device iotst groups (counted on rv32imc, at 160 MHz)"]


def test_the_cli_writes_the_timeline(
    golden: Path, trace: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["export", str(golden), "--timeline", "--out", str(tmp_path)])
        raise SystemExit(0)
    assert ended.value.code == 0, capsys.readouterr().err
    written = tmp_path / timeline.FILE_NAME
    assert capsys.readouterr().out.splitlines() == [str(written)]
    assert json.loads(written.read_text()) == trace
