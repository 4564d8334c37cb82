"""The fleet agent end to end on a real mosquitto with real TLS (small fleets: the machine is
shared): one process per core drives every device's own connection and writes the
per-device records; a reconnect storm resumes every session with a resume profile and none
without; a fleet process killed mid-run fails its run and leaves no process behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iotsecbench.agents.native import fleet
from iotsecbench.runner.cluster import dask_problem
from tests.conftest import query

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _storm(out: Path, configs: str, stacks: str, devices: int) -> Path:
    """A run of ``devices`` for 4 s at 2 Hz whose links are all cut at 2 s; its results."""
    result = subprocess.run(
        [sys.executable, "-m", "iotsecbench", "run", "--configs", configs, "--stack", stacks,
         "--devices", str(devices), "--duration", "4", "--rate", "2", "--storm-at", "2",
         "--reps", "1", "--seed", "3", "--out", str(out), "--quiet", "--no-report"],
        capture_output=True, text=True, check=False, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_a_storm_resumes_every_session_with_resumption_and_none_without(
    mosquitto: str, tmp_path: Path
) -> None:
    out = _storm(tmp_path / "storm", "tls1.2,tls1.2/resume", "openssl,mbedtls", devices=8)
    runs = query(
        out,
        "select run_id, configuration, stack, status, messages_sent, messages_delivered, "
        "fleet_size, tls_version from runs order by configuration, stack",
    )
    assert [r[1:] for r in runs] == [
        ("tls1.2", "mbedtls", "ok", 64, 64, 8, "1.2"),
        ("tls1.2", "openssl", "ok", 64, 64, 8, "1.2"),
        ("tls1.2/rsa2048/resume", "mbedtls", "ok", 64, 64, 8, "1.2"),
        ("tls1.2/rsa2048/resume", "openssl", "ok", 64, 64, 8, "1.2"),
    ]
    stacks = query(
        out,
        "select distinct r.stack, json_extract_string(h.detail_json, '$.stack') "
        "from handshakes h join runs r using (run_id) where h.phase = 'tls_handshake'",
    )
    assert sorted(stacks) == [("mbedtls", "mbedtls"), ("openssl", "openssl")]
    for run_id, *_ in runs:
        run_dir = next((out / "runs").glob(f"{run_id}*"))
        # one process per core, never more than the devices, each with its share
        processes = sorted(run_dir.glob("fleet-*.json"))
        assert len(processes) == fleet.processes(8)
        shares = [len(json.loads(p.read_text())["devices"]) for p in processes]
        assert sum(shares) == 8
    per_device = query(out, "select device_index, count(*) from messages group by 1 order by 1")
    assert per_device == [(index, 32) for index in range(8)]  # 8 per run, four runs
    # every device's own measured handshake, its transcript checked against the profile
    handshakes = query(
        out,
        "select count(distinct device_index) from handshakes "
        "where agent = 'emitter' and phase = 'tls_handshake'",
    )
    assert handshakes == [(8,)]
    storm = query(
        out,
        "select r.configuration, r.stack, sum(f.reconnections), sum(f.reconnect_resumed) "
        "from fleet_devices f join runs r using (run_id) group by 1, 2 order by 1, 2",
    )
    assert storm == [
        ("tls1.2", "mbedtls", 8, 0),
        ("tls1.2", "openssl", 8, 0),
        ("tls1.2/rsa2048/resume", "mbedtls", 8, 8),
        ("tls1.2/rsa2048/resume", "openssl", 8, 8),
    ]
    cuts = query(out, "select count(*) from events where kind = 'link_cut'")
    assert cuts == [(32,)]


def test_a_wolfssl_fleet_resumes_tls13_sessions_in_a_storm(mosquitto: str, tmp_path: Path) -> None:
    """The third stack: Debian's wolfSSL in the fleet agent, TLS 1.3 (its tickets arrive after
    the handshake; its Certificate message is encrypted, so the chain comes from the
    verification callback, and the transcript check against the profile needs it)."""
    out = _storm(tmp_path / "wolfssl", "tls1.3,tls1.3/resume", "wolfssl", devices=4)
    runs = query(
        out,
        "select run_id, configuration, status, messages_sent, messages_delivered, fleet_size, "
        "tls_version from runs order by configuration",
    )
    assert [r[1:] for r in runs] == [
        ("tls1.3", "ok", 32, 32, 4, "1.3"),
        ("tls1.3/rsa2048/resume", "ok", 32, 32, 4, "1.3"),
    ]
    for run_id, *_ in runs:  # the fleet agent drove them, not the per-device agents
        run_dir = next((out / "runs").glob(f"{run_id}*"))
        assert len(list(run_dir.glob("fleet-*.json"))) == fleet.processes(4)
    stacks = query(
        out,
        "select distinct json_extract_string(detail_json, '$.stack') from handshakes "
        "where phase = 'tls_handshake'",
    )
    assert stacks == [("wolfssl",)]
    storm = query(
        out,
        "select r.configuration, sum(f.reconnections), sum(f.reconnect_resumed) "
        "from fleet_devices f join runs r using (run_id) group by 1 order by 1",
    )
    assert storm == [("tls1.3", 4, 0), ("tls1.3/rsa2048/resume", 4, 4)]


def _processes_under(path: Path) -> list[int]:
    """Pids whose command line names ``path`` (this test's own run: nobody else's)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            argv = Path("/proc", name, "cmdline").read_bytes()
        except OSError:
            continue
        if str(path).encode() in argv:
            found.append(int(name))
    return found


def test_a_killed_fleet_process_fails_its_run_and_leaves_no_process(
    mosquitto: str, tmp_path: Path
) -> None:
    out = tmp_path / "killed"
    runner = subprocess.Popen(
        [sys.executable, "-m", "iotsecbench", "run", "--configs", "plain", "--devices", "6",
         "--duration", "20", "--rate", "2", "--reps", "1", "--out", str(out), "--quiet",
         "--no-report"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        victim = None
        while victim is None and time.monotonic() < deadline:
            configs = list((out / "runs").glob("*/fleet-0.json")) if out.exists() else []
            pids = _processes_under(configs[0]) if configs else []
            records = configs[0].with_suffix(".jsonl") if configs else None
            # three process samples: its devices are publishing by now
            if pids and records and records.exists() and records.read_bytes().count(b"sample") >= 3:
                victim = pids[0]
            time.sleep(0.2)
        assert victim is not None, "the fleet agent did not start"
        os.kill(victim, signal.SIGKILL)
        _stdout, stderr = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert runner.returncode == 1, stderr
    ((status, error),) = query(out, "select status, error from runs")
    assert status == "failed"
    assert error.startswith("fleet process 0 failed (signal 9 (SIGKILL))"), error
    time.sleep(0.5)
    assert _processes_under(out) == []  # every fleet process and the broker are gone


@pytest.mark.skipif(dask_problem() is not None, reason=str(dask_problem()))
def test_a_fleet_split_over_two_dask_workers_gives_the_local_fleets_records(
    mosquitto: str, tmp_path: Path
) -> None:
    common = ["--configs", "tls1.2", "--devices", "4", "--duration", "2", "--rate", "2",
              "--reps", "1", "--seed", "5", "--quiet", "--no-report"]  # fmt: skip
    outs = {"local": tmp_path / "local", "split": tmp_path / "split"}
    for name, extra in (
        ("local", []),
        ("split", ["--executor", "dask", "--dask-workers", "2", "--split-fleet"]),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "iotsecbench", "run", *common, *extra, "--out",
             str(outs[name])],
            capture_output=True, text=True, check=False, timeout=240,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-2000:]
    records = {}
    for name, out in outs.items():
        records[name] = (
            query(out, "select status, messages_sent, messages_delivered, fleet_size from runs"),
            query(out, "select device_index, seq from messages order by 1, 2"),
            query(
                out,
                "select device_index, agent, phase from handshakes order by 1, 2, 3",
            ),
            query(
                out,
                "select device_index, messages_sent, messages_delivered, messages_lost, raw "
                "from fleet_devices order by 1",
            ),
        )
    assert records["split"] == records["local"]
    assert records["local"][0] == [("ok", 16, 16, 4)]
    workers = dict(query(outs["split"], "select device_index, worker from fleet_devices"))
    assert len(set(workers.values())) == 2 and all(w.startswith("tcp://") for w in workers.values())
    assert set(
        dict(query(outs["local"], "select device_index, worker from fleet_devices")).values()
    ) == {"local"}
    # the broker was sampled where it ran: here
    assert query(outs["split"], "select count(*) > 10 from samples where agent = 'broker'") == [
        (True,)
    ]
