"""Scale end to end: a fleet of 50 devices over TLS 1.2 on the embedded broker (every device
connects, every message is accounted for, the broker's CPU and the fleet's percentiles are
stored), and a sweep on a local Dask cluster of two workers that gives the runs of the local
executor, fails the block of a worker killed mid-block and completes it with --resume."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from iotsecbench.files import private_directory
from iotsecbench.lab.broker import free_port
from iotsecbench.runner.cluster import dask_problem
from tests.conftest import query, run_cli

pytestmark = pytest.mark.integration


# Not serial: it measures no timing and inspects nothing the machine shares (its broker, its
# fleet processes and their accounts are its own): with both cores busy besides, it passed 3
# of 3 (17-19 s, 14 s alone).
def test_fleet_of_fifty_tls_devices_accounts_for_every_message(
    mosquitto: str, tmp_path: Path
) -> None:
    out = tmp_path / "fleet"
    result = run_cli(
        "run", "--configs", "tls1.2", "--devices", "50", "--duration", "10", "--rate", "1",
        "--reps", "1", "--out", str(out), "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Fleet (measured" in result.stdout and "Broker (measured" in result.stdout
    [run] = query(out, """select status, fleet_size, messages_sent, messages_delivered,
        messages_lost, connect_rate_hz, setup_p50_ms, setup_p99_ms, latency_p50_ms,
        latency_p99_ms, broker_cpu_mean_percent, broker_cpu_peak_percent,
        broker_rss_peak_bytes, tls_version from runs""")  # fmt: skip
    status, size, sent, delivered, lost, rate, *percentiles, cpu, peak, rss, tls = run
    assert (status, size, tls) == ("ok", 50, "1.2")
    assert sent == delivered == 50 * 10 and lost == 0
    assert rate > 0 and all(p is not None and p > 0 for p in percentiles)
    assert percentiles[0] <= percentiles[1] and percentiles[2] <= percentiles[3]
    assert 0 < cpu <= peak and rss > 1_000_000
    # Every device connected, with its own TLS handshake, and delivered its ten messages.
    per_device = query(out, """select device_index, count(*) filter (where status = 'delivered')
        from messages group by 1 order by 1""")  # fmt: skip
    assert per_device == [(index, 10) for index in range(50)]
    handshakes = query(out, """select count(distinct device_index) from handshakes
        where agent = 'emitter' and phase = 'tls_handshake'""")  # fmt: skip
    assert handshakes == [(50,)]
    broker = query(
        out, "select count(*), min(cpu_ns), max(cpu_ns) from samples where agent = 'broker'"
    )
    assert broker[0][0] >= 50 and broker[0][2] > broker[0][1]  # 10 Hz over more than 10 s
    counters = dict(query(out, "select name, value from host_counters where source = '$SYS'"))
    # The 50 receivers stay connected for the whole run and the emitters start together,
    # but on a busy machine the first emitters can end their 10 s before the last one has
    # connected (CI saw 97), so the broker's peak lies above the receivers alone and at
    # most every device's two clients and the $SYS reader.
    assert 50 < counters["clients/maximum"] <= 101
    assert counters["publish/messages/received"] >= 50 * 10
    # Each device its own client id and account: 50 distinct emitter users in the ACL.
    acl = next(out.glob("runs/*/broker/acl")).read_text()
    assert acl.count("user emitter-") == 50 and acl.count("user receiver-") == 50


def test_fleet_on_an_emulated_network_reads_the_brokers_counters_inside_its_namespace(
    mosquitto: str, tmp_path: Path
) -> None:
    from iotsecbench.lab import network

    problem = network.support_problem()
    if problem is not None:
        pytest.skip(f"network emulation: {problem}")
    out = tmp_path / "fleet-wifi"
    result = run_cli(
        "run", "--configs", "plain", "--devices", "3", "--network", "wifi", "--duration", "3",
        "--rate", "2", "--reps", "1", "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    [(sent, delivered)] = query(out, "select messages_sent, messages_delivered from runs")
    assert sent == delivered == 3 * 3 * 2
    counters = dict(query(out, "select name, value from host_counters where source = '$SYS'"))
    assert counters["clients/maximum"] >= 6  # 3 emitters and their receivers
    assert counters["publish/messages/received"] >= sent


def _with_descriptors(limit: int) -> Callable[[], None]:
    """A child's pre-exec hook: at most ``limit`` file descriptors (lowering is always allowed)."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def test_fleet_beyond_the_machine_is_refused_naming_the_limit(tmp_path: Path) -> None:
    # Two agent processes per device: memory sets the limit (about 190 here).
    result = run_cli(
        "run", "--configs", "plain", "--devices", "9000", "--fleet-agent", "processes",
        "--duration", "1", "--reps", "1", "--out", str(tmp_path / "big"), "--quiet",
        "--no-report",
    )  # fmt: skip
    assert result.returncode == 2
    assert "devices 9000: this machine allows" in result.stderr
    assert any(word in result.stderr for word in ("memory", "file descriptors", "ports"))
    assert not (tmp_path / "big" / "results.duckdb").exists()
    # The fleet agent under a hard limit of 1064 descriptors: the broker's two per device.
    result = subprocess.run(
        [sys.executable, "-m", "iotsecbench", "run", "--configs", "tls1.2", "--devices", "501",
         "--duration", "1", "--reps", "1", "--out", str(tmp_path / "fds"), "--quiet",
         "--no-report"],
        capture_output=True, text=True, check=False, timeout=120,
        preexec_fn=_with_descriptors(1064),
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "devices 501: this machine allows 500 at most, limited by file descriptors" in (
        result.stderr
    )
    assert "ulimit -Hn" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "fds" / "results.duckdb").exists()


@pytest.mark.skipif(dask_problem() is not None, reason=str(dask_problem()))
def test_dask_sweep_matches_the_local_executor_and_resumes_a_killed_block(
    mosquitto: str, tmp_path: Path
) -> None:
    common = ("--configs", "plain,tls1.2", "--duration", "1", "--reps", "2", "--seed", "7",
              "--quiet", "--no-report")  # fmt: skip
    local = tmp_path / "local"
    assert run_cli("run", *common, "--out", str(local)).returncode == 0
    planned = query(local, "select run_id, cell_id, run_order from runs order by run_order")
    # Repetition 2's block dies after its first run: that run is kept, the rest fails.
    second_block = [run_id for run_id, *_ in planned if run_id.endswith("_r2")]
    swept = tmp_path / "dask"
    killed = run_cli(
        "run", *common, "--executor", "dask", "--dask-workers", "2", "--out", str(swept),
        env={"IOTSB_TEST_FAULT": f"worker:die-after@{second_block[0]}"},
    )  # fmt: skip
    assert killed.returncode == 1, killed.stderr
    assert "2 workers" in killed.stderr  # the isolation note
    status = dict(query(swept, "select run_id, status from runs"))
    assert status[second_block[0]] == "ok" and status[second_block[1]] == "failed"
    assert "Dask worker died" in killed.stdout
    resumed = run_cli("run", *common, "--executor", "dask", "--resume", "--out", str(swept))
    assert resumed.returncode == 0, resumed.stderr
    assert "1 runs executed, 3 kept" in resumed.stdout
    rows = query(swept, """select run_id, cell_id, run_order, status, worker, parallel_runs,
        worker_host_json from runs order by run_order""")  # fmt: skip
    assert [row[:3] for row in rows] == planned  # same ids, cells and order as run locally
    assert all(row[3] == "ok" and row[4].startswith("tcp://") for row in rows)
    assert {row[5] for row in rows} == {1, 2} and all('"hostname"' in row[6] for row in rows)
    # One block, one worker: both configurations of repetition 1 ran on the same machine.
    assert len({row[4] for row in rows if row[0].endswith("_r1")}) == 1
    assert query(swept, "select count(*) from messages where status = 'delivered'") == [(40,)]


@pytest.mark.skipif(dask_problem() is not None, reason=str(dask_problem()))
def test_a_cluster_started_by_hand_is_checked_by_doctor_and_runs_a_sweep(
    mosquitto: str, tmp_path: Path
) -> None:
    """docs/scale.md's way: `dask scheduler`, then `dask worker ADDRESS` (no --name: the
    worker is named by its address), `doctor --scheduler`, `run --scheduler`."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "dask"]
    scheduler = subprocess.Popen(
        [*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
    )  # fmt: skip
    worker_tmp = private_directory(tmp_path / "worker-tmp")  # where its blocks' scratch goes
    worker = subprocess.Popen(
        [*dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(worker_tmp)},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:  # the worker joins a few seconds after both have started
            doctor = run_cli("doctor", "--scheduler", address)
            if doctor.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert doctor.returncode == 0, doctor.stdout + doctor.stderr
        lines = [line for line in doctor.stdout.splitlines() if line.startswith("ok   worker")]
        assert len(lines) == 1 and "iotsecbench" in lines[0]
        out = tmp_path / "sweep"
        result = run_cli(
            "run", "--configs", "plain,tls1.2", "--duration", "1", "--rate", "5", "--reps", "1",
            "--executor", "dask", "--scheduler", address, "--out", str(out), "--quiet",
            "--no-report",
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        rows = query(out, "select status, worker, parallel_runs from runs")
        assert len(rows) == 2 and all(
            status == "ok" and worker.startswith("tcp://127.0.0.1:") and parallel == 1
            for status, worker, parallel in rows
        ), rows
        # The block's scratch (its keys, its runs' files) is gone with the block.
        assert not list(worker_tmp.glob("iotsb-worker-*")), list(worker_tmp.iterdir())
    finally:
        for process in (worker, scheduler):
            process.terminate()
            process.wait(30)
    missing = run_cli("doctor", "--scheduler", "tcp://127.0.0.1:9")
    assert missing.returncode == 3 and "no Dask scheduler at tcp://127.0.0.1:9" in missing.stderr
