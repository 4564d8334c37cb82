"""The pure parts of fleets and Dask sweeps: a fleet's figures from its devices' records, the
broker's figures from its samples, blocks of runs, the cluster options, the machine's fleet
limit and the process probes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from iotsecbench.errors import EnvironmentProblem, SpecError
from iotsecbench.lab.limits import fleet_limit
from iotsecbench.measure.memory import process_rss_bytes
from iotsecbench.measure.process import process_cpu_ns
from iotsecbench.runner.broker_watch import broker_figures
from iotsecbench.runner.cluster import (
    ClusterOptions,
    blocks,
    connect,
    scheduler_address,
    worker_scratch,
)
from iotsecbench.runner.collect import collect_fleet, raw_sample
from iotsecbench.runner.experiment import validate
from iotsecbench.spec.matrix import plan_runs
from iotsecbench.spec.models import ExperimentSpec


def device_records(setup_start: int, setup_ms: float, latencies_ms: list[float]) -> dict:
    """One device's agent records: its connection phases, messages sent and delivered."""
    end = setup_start + int(setup_ms * 1e6)
    middle = setup_start + (end - setup_start) // 2
    emitter = [
        {"type": "handshake", "phase": "tcp_connect", "t_start_ns": setup_start,
         "t_end_ns": middle, "wall_ns": middle - setup_start, "cpu_ns": 1},
        {"type": "handshake", "phase": "mqtt_connect", "t_start_ns": middle, "t_end_ns": end,
         "wall_ns": end - middle, "cpu_ns": 1},
        {"type": "counters", "name": "messages_sent", "value": len(latencies_ms)},
    ]  # fmt: skip
    receiver = []
    for seq, latency in enumerate(latencies_ms):
        created = end + seq * 1_000_000
        emitter.append({"type": "message", "seq": seq, "payload_bytes": 64, "wire_bytes": 80,
                        "t_created_ns": created, "t_sealed_ns": created,
                        "t_published_ns": created, "seal_cpu_ns": 1})  # fmt: skip
        delivered = created + int(latency * 1e6)
        receiver.append({"type": "message", "seq": seq, "wire_bytes": 80,
                         "t_created_ns": created, "t_arrived_ns": delivered,
                         "t_delivered_ns": delivered, "open_cpu_ns": 1})  # fmt: skip
    return {"emitter": emitter, "receiver": receiver}


def test_fleet_figures_come_from_every_device() -> None:
    fleet = [
        device_records(0, 10.0, [1.0, 2.0]),
        device_records(500_000_000, 30.0, [3.0, 4.0]),
        device_records(1_000_000_000, 20.0, [5.0]),
    ]
    facts, tables = collect_fleet("r", fleet, 64, None)
    assert facts["fleet_size"] == 3
    assert facts["messages_sent"] == facts["messages_delivered"] == 5
    assert facts["messages_lost"] == 0
    # Set-up completions at 10 ms, 530 ms and 1020 ms: two intervals in 1.01 s.
    assert facts["connect_rate_hz"] == pytest.approx(2 / 1.010)
    assert facts["setup_p50_ms"] == pytest.approx(20.0)
    assert facts["latency_p50_ms"] == pytest.approx(3.0)
    assert facts["latency_p99_ms"] == pytest.approx(4.96)
    assert sorted({row["device_index"] for row in tables["messages"]}) == [0, 1, 2]
    assert {row["device_index"] for row in tables["handshakes"]} == {0, 1, 2}


def test_a_fleet_keeps_a_summary_per_device_and_the_raw_rows_of_its_sample() -> None:
    fleet = [device_records(i * 100_000_000, 10.0 + i, [1.0 + i, 2.0 + i]) for i in range(5)]
    facts, tables = collect_fleet("r", fleet, 64, None, raw_devices=2)
    assert raw_sample(5, 2) == {0, 2} and raw_sample(5, 5) == raw_sample(5, 9) == set(range(5))
    assert raw_sample(10_000, 100) == {i * 100 for i in range(100)}
    assert {row["device_index"] for row in tables["messages"]} == {0, 2}
    assert {row["device_index"] for row in tables["handshakes"]} == set(range(5))
    # The fleet's own figures still come from every device's messages.
    assert facts["messages_delivered"] == 10
    assert facts["latency_p50_ms"] == pytest.approx(3.5)  # of 1, 2, 2, 3, 3, 4, 4, 5, 5, 6
    summaries = {row["device_index"]: row for row in tables["fleet_devices"]}
    assert [summaries[i]["raw"] for i in range(5)] == [1, 0, 1, 0, 0]
    assert summaries[3]["messages_sent"] == summaries[3]["messages_delivered"] == 2
    assert summaries[3]["messages_lost"] == 0
    assert summaries[3]["setup_ms"] == pytest.approx(13.0)
    assert summaries[3]["setup_cpu_ns"] == 2 and summaries[3]["tls_handshake_ms"] is None
    assert summaries[3]["latency_p50_ms"] == pytest.approx(4.5)
    assert summaries[3]["latency_max_ms"] == pytest.approx(5.0)
    assert summaries[3]["reconnections"] == 0
    # One device is no fleet: no summary rows.
    assert "fleet_devices" not in collect_fleet("r", fleet[:1], 64, None, raw_devices=1)[1]


def test_one_device_has_no_connect_rate() -> None:
    facts, tables = collect_fleet("r", [device_records(0, 5.0, [1.0])], 64, None)
    assert facts["fleet_size"] == 1 and facts["connect_rate_hz"] is None
    assert facts["setup_p99_ms"] == pytest.approx(5.0)
    assert {row["device_index"] for row in tables["messages"]} == {0}


def test_broker_figures_from_its_samples() -> None:
    samples = [
        {"t_ns": 0, "cpu_ns": 0, "rss_bytes": 10},
        {"t_ns": 100_000_000, "cpu_ns": 50_000_000, "rss_bytes": 30},  # 50 % of a core
        {"t_ns": 200_000_000, "cpu_ns": 60_000_000, "rss_bytes": 20},  # 10 %
    ]
    figures = broker_figures(samples)
    assert figures["broker_cpu_mean_percent"] == pytest.approx(30.0)
    assert figures["broker_cpu_peak_percent"] == pytest.approx(50.0)
    assert figures["broker_rss_peak_bytes"] == 30
    assert broker_figures(samples[:1]) == {}


def test_blocks_hold_one_repetition_each_in_run_order() -> None:
    spec = ExperimentSpec(configurations=["plain", "tls1.2", "tls1.3"], repetitions=3, seed=5)
    runs = plan_runs(spec)
    grouped = blocks(list(reversed(runs)))
    assert [len(block) for block in grouped] == [3, 3, 3]
    for block in grouped:
        assert len({run.repetition for run in block}) == 1
        assert [run.run_order for run in block] == sorted(run.run_order for run in block)
        assert {run.cell.configuration for run in block} == {"plain", "tls1.2", "tls1.3"}


def test_cluster_options_are_checked() -> None:
    with pytest.raises(SpecError, match="--dask-workers 0"):
        ClusterOptions(workers=0)
    with pytest.raises(SpecError, match="tcp://HOST:PORT"):
        ClusterOptions(scheduler="localhost:8786")
    assert "in sequence" in ClusterOptions().note
    assert "disturb" in ClusterOptions(workers=3).note


@pytest.mark.parametrize(
    "address", ["localhost:8786", "tcp://", "tcp://host", "tcp://host:port", "http://h:1"]
)
def test_a_scheduler_address_needs_a_scheme_host_and_port(address: str) -> None:
    with pytest.raises(SpecError, match="tcp://HOST:PORT"):
        scheduler_address(address)


def test_a_scheduler_address_gives_host_and_port() -> None:
    assert scheduler_address("tcp://10.0.0.5:8786") == ("10.0.0.5", 8786)
    assert scheduler_address("tls://[::1]:8786") == ("::1", 8786)


def test_nothing_listening_is_refused_at_once_not_after_the_clients_timeout() -> None:
    pytest.importorskip("distributed")
    import socket
    import time

    with socket.socket() as unused:  # a port that was free a moment ago
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(EnvironmentProblem, match=f"no Dask scheduler at tcp://127.0.0.1:{port}"):
        connect(f"tcp://127.0.0.1:{port}")
    assert time.monotonic() - started < 5  # Dask's own retries would take its 10 s timeout


def test_fleet_limit_names_a_positive_limit() -> None:
    python, native = fleet_limit(), fleet_limit(native=True)
    assert python.devices > 0 and python.reason
    assert native.devices >= python.devices  # the C agent is smaller


def test_a_fleet_of_virtual_devices_is_limited_by_the_cores_that_emulate_it(monkeypatch):
    """run --target --devices N: the target's devices per core x this process's cores, and
    QEMU's memory beside each device's agents."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    limit = fleet_limit(emulated=("rv32imc", 6))
    assert limit.devices == 12
    assert limit.reason.startswith("emulation: 6 virtual rv32imc devices per core")
    assert fleet_limit(emulated=("rv32imc", 10_000)).devices < fleet_limit().devices  # memory
    spec = ExperimentSpec(target="rv32imc", devices=13)  # the spec allows it; the machine not
    with pytest.raises(SpecError, match="devices 13: this machine allows 12 at most, limited "
                       "by emulation"):  # fmt: skip
        validate(spec, None)


def test_process_probes_read_this_process_and_none_for_a_gone_one() -> None:
    before = process_cpu_ns(os.getpid())
    sum(i * i for i in range(200_000))
    assert before is not None and process_cpu_ns(os.getpid()) > before
    assert process_rss_bytes(os.getpid()) > 1_000_000
    gone = max(int(name) for name in os.listdir("/proc") if name.isdigit()) + 10_000_000
    assert process_cpu_ns(gone) is None and process_rss_bytes(gone) is None


def test_spec_refuses_a_fleet_on_the_tcp_transport() -> None:
    with pytest.raises(ValueError, match="transport mqtt"):
        ExperimentSpec(configurations=["plain"], devices=2, transport=["tcp"])
    # Left at one device, the fleet fields leave the configuration hash (and so the resume
    # of experiments made before fleets) as it was.
    one = ExperimentSpec()
    assert one.config_hash() == ExperimentSpec(devices=1, connect_ramp_hz=None).config_hash()
    assert one.config_hash() != ExperimentSpec(devices=2).config_hash()


@pytest.mark.integration
def test_cli_refuses_dask_options_without_dask(tmp_path: Path) -> None:
    from tests.conftest import run_cli_forked as run_cli  # refusals: forks of the CLI server

    result = run_cli("run", "--simulate", "--dask-workers", "2", "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and "need --executor dask" in result.stderr
    keylog = tmp_path / "keys"
    result = run_cli("run", "--simulate", "--executor", "dask", "--keylog", str(keylog),
                     "--out", str(tmp_path / "y"))  # fmt: skip
    assert result.returncode == 2 and "--executor local" in result.stderr


def test_runs_at_once_count_every_thread_of_every_worker_on_a_machine() -> None:
    from iotsecbench.runner.cluster import runs_at_once_per_host

    workers = {
        "tcp://10.0.0.5:40123": {"nthreads": 1},
        "tcp://10.0.0.5:40999": {"nthreads": 2},
        "tcp://10.0.0.6:41000": {"nthreads": 1},
        "tls://[::1]:5000": {},
    }
    assert runs_at_once_per_host(workers) == {"10.0.0.5": 3, "10.0.0.6": 1, "[::1]": 1}


def test_blocks_side_by_side_in_one_worker_get_a_scratch_slot_each(tmp_path: Path) -> None:
    """A worker with two threads runs two blocks at once: the second must not take (and stop
    the processes of) the first's scratch; each slot is removed, keys and all, when its block
    ends."""
    base = tmp_path / "iotsb-worker-e-w"
    with worker_scratch(base) as first:
        (first / "pki").mkdir()
        (first / "pki" / "client.key").write_text("secret")
        with worker_scratch(base) as second, worker_scratch(base) as third:
            assert (first, second, third) == (
                base, tmp_path / "iotsb-worker-e-w-2", tmp_path / "iotsb-worker-e-w-3"
            )  # fmt: skip
        assert not second.exists() and not third.exists()
        assert (first / "pki" / "client.key").exists()  # the first block's files untouched
        with worker_scratch(base) as again:
            assert again == second  # a freed slot is taken again
    assert sorted(tmp_path.iterdir()) == []


def test_a_dead_blocks_scratch_is_taken_over_and_emptied(tmp_path: Path) -> None:
    """No live block holds the slot a killed worker left: the next block of that worker name
    takes it (and stops what the records there name), then removes it."""
    base = tmp_path / "iotsb-worker-e-w"
    (base / ".processes").mkdir(parents=True)
    (base / ".processes" / "123.json").write_text("{half-written")  # a record cut by the kill
    (base / ".lock").write_text("")
    (base / "runs" / "r1").mkdir(parents=True)
    with worker_scratch(base) as scratch:
        assert scratch == base
        assert not (base / ".processes" / "123.json").exists()  # stop_leftovers read it
    assert not base.exists()
