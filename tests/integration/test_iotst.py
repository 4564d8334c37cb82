"""The iotst method on real scheduler traces: a private tracefs instance around real
handshakes against mosquitto (docs/iotst.md). Root and tracefs are needed; without them
every test here skips with the reason (the CLI's own answer is tested in test_bad_inputs)."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from iotsecbench.analysis.iotst import classify_repetition
from iotsecbench.lab.cpu import quota_problem
from iotsecbench.measure.tracefs import SchedTracer, tracing_problem
from tests.conftest import run_cli, run_cli_forked
from tests.native_agents import needs_native

# Scheduler tracing measures on-CPU and runnable time: alone (tests/lanes.py).
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.serial]
PROBLEM = tracing_problem()
needs_tracing = pytest.mark.skipif(PROBLEM is not None, reason=f"no tracing here: {PROBLEM}")
FIELDS = (
    "network_invariant_cpu_s", "with_network_wait_s", "groups", "quantum_max_s",
    "idle_fraction_per_cpu", "tracing_overhead_s", "retransmission_runs_discarded",
    "device_model",
)  # fmt: skip


@needs_tracing
def test_a_cpu_bound_step_shows_in_its_group_and_a_plain_sleep_is_not_network_wait() -> None:
    tid = threading.get_native_id()
    with SchedTracer() as tracer:
        tracer.start()
        busy_from = time.monotonic_ns()  # the group lies inside [busy_from, busy_to]
        tracer.mark("iotsb grp BUSY")
        until = time.thread_time_ns() + 20_000_000
        while time.thread_time_ns() < until:
            pass
        tracer.mark("iotsb grp NAP")
        busy_to = time.monotonic_ns()
        time.sleep(0.02)
        tracer.mark("iotsb end")
        tracer.stop()
        events = tracer.events()
        result = classify_repetition(events, tid, version="1.3", cpus=tracer.cpus)
    busy, nap = result.groups["BUSY"], result.groups["NAP"]
    # Its 20 ms of CPU, plus whatever it waited in the run queue: on a busy machine other
    # processes take the CPU from it (once 96 ms in all, with other engineers'
    # suites running), so the bound is the time that elapsed around the group, measured
    # here, not a quiet machine's 20 ms; nothing outside the loop may be counted in.
    elapsed_ns = busy_to - busy_from
    assert 19e6 <= busy.on_cpu_ns + busy.runnable_ns <= elapsed_ns + 0.5e6
    assert busy.network_wait_ns == 0 and busy.other_ns == 0  # it never waited for anything
    # On a CPU for its 20 ms of thread CPU. Once in ~15 CI runs under load the trace showed
    # a switch-out at 7.8 ms and no switch-in, and 12.4 ms read as runnable: the lab VM's
    # kernel records no switch away from the idle task on one CPU, and the resume is now
    # placed from the scheduler's runtime account (analysis/iotst.py, _thread_segments).
    assert busy.on_cpu_ns >= 19e6, (busy.on_cpu_ns, busy.runnable_ns)
    assert nap.network_wait_ns == 0 and nap.other_ns >= 18e6
    assert nap.on_cpu_ns < 2e6


@needs_tracing
def test_a_dropped_segment_shows_as_a_retransmission_on_its_connection() -> None:
    """The server's first data segment is dropped once on arrival (nftables input hook,
    loopback, its own port; dropped on output it would never have been sent, so not
    retransmitted): the server retransmits it and the trace attributes that to the
    connection."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    table = f"iotsb_test_{port}"
    rules = [
        f"add table inet {table}",
        f"add chain inet {table} in {{ type filter hook input priority 0 ; }}",
        f"add rule inet {table} in tcp sport {port} tcp flags & psh == psh "
        "limit rate 1/hour burst 1 packets drop",
    ]
    if subprocess.run(["nft", "-f", "-"], input="\n".join(rules), text=True).returncode:
        pytest.skip("nftables cannot add a table here")
    try:
        with SchedTracer() as tracer:
            tracer.start()
            client = socket.create_connection(("127.0.0.1", port))
            local_port = client.getsockname()[1]
            peer, _ = server.accept()
            peer.sendall(b"x" * 200)
            client.settimeout(5)
            assert client.recv(200)
            tracer.stop()
            events = tracer.events()
        retransmits = [e for e in events if e.name == "tcp_retransmit_skb"]
        assert any(local_port in (e.fields["sport"], e.fields["dport"]) for e in retransmits)
        peer.close()
        client.close()
    finally:
        subprocess.run(["nft", "delete", "table", "inet", table], check=False)
        server.close()


def _bench(tmp_path: Path, name: str, *args: str) -> dict:
    out = tmp_path / name
    result = run_cli(
        "bench", "handshake", "--trace", "--quiet", "--out", str(out),
        "--json", str(out.with_suffix(".json")), *args, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    return json.loads(out.with_suffix(".json").read_text())


@needs_tracing
@pytest.mark.xfail(
    reason="measured on the lab VM: over wifi the same CPU-bound groups (CERT_CHAIN) take "
    "~1.5-1.8x the on-CPU time they take over ideal, in thread CPU time too, so the intervals "
    "do not overlap: on this VM work after an idle gap is dearer, so longer network waits "
    "make the next computation dearer (benchmarks/bench_trace_reset.py; docs/iotst.md, "
    "'What this host shows'); the test stays to show when that is solved",
    strict=False,
)
def test_network_invariant_cost_does_not_depend_on_the_network(
    mosquitto: str, tmp_path: Path
) -> None:
    """Over ideal and over wifi (3 ms each way per hop) the traced on-CPU cost agrees while
    the wall time grows by more than the injected delay."""
    profile = "tls1.3/x25519/ecdsa-p256"
    ideal = _bench(tmp_path, "ideal", "--profiles", profile, "--reps", "25", "--network", "ideal")
    wifi = _bench(tmp_path, "wifi", "--profiles", profile, "--reps", "25", "--network", "wifi")
    a, b = ideal["profiles"][0], wifi["profiles"][0]
    for entry in (a, b):
        assert all(field in entry for field in FIELDS), sorted(entry)
    ci_a, ci_b = a["network_invariant_cpu_s"], b["network_invariant_cpu_s"]
    assert ci_a["ci_low"] <= ci_b["ci_high"] and ci_b["ci_low"] <= ci_a["ci_high"], (ci_a, ci_b)
    # Two round trips (TCP, TLS) at >= 2 x 3 ms per direction pair: well over 6 ms more.
    assert b["with_network_wait_s"]["mean"] - a["with_network_wait_s"]["mean"] > 0.006
    assert b["off_cpu_s"]["network_wait"]["mean"] > 0.006
    assert set(a["groups"]) >= {"TCP_CONNECT", "CLIENT_HELLO", "WAIT_SERVER_FLIGHT", "CERT_CHAIN"}


@needs_tracing
def test_the_iotst_preset_reports_every_field_for_every_configuration(
    mosquitto: str, tmp_path: Path
) -> None:
    """The study's matrix (4 configurations x 2 core counts x 3 clocks) with a few repetitions;
    the CPU quota keeps CPU time while the wall time grows."""
    document = _bench(tmp_path, "iotst", "--preset", "iotst", "--reps", "4")
    entries = document["profiles"]
    assert len(entries) == 4 * 2 * 3
    for entry in entries:
        assert all(field in entry for field in FIELDS), (entry["profile"], sorted(entry))
        model = entry["device_model"]
        assert model["label"].startswith("modelled")
        assert set(model["by_clock_and_cores"]) == {
            f"{mhz}MHz x{cores}" for mhz in (80, 160, 240) for cores in (1, 2)
        }
        for priced in model["by_clock_and_cores"].values():  # predict handshake's code
            assert priced["model_range"]["low"] < priced["model_range"]["high"]
    by_name = {(e["tls_profile_name"], e["cores"], e["cpu_share"]): e for e in entries}
    for profile in ("tls1.3/x25519/ecdsa-p256", "tls1.3/secp256r1/rsa3072"):
        full, third = by_name[(profile, 1, "1")], by_name[(profile, 1, "1/3")]
        cpu_full = full["network_invariant_cpu_s"]["mean"]
        cpu_third = third["network_invariant_cpu_s"]["mean"]
        assert 0.5 < cpu_third / cpu_full < 2.0  # CPU time stays (noisy machine: loose)
        assert full["quota_throttled_s"] == 0
        if "rsa3072" in profile:
            continue  # waits for the server's RSA signature refill the quota: little throttling
        # The quota bites: the kernel held the client back (cgroup cpu.stat), never at share 1.
        # (That its wall time then grows — 1.19-1.4x measured here — is a benchmark figure,
        # benchmarks/bench_iotst.py: on this VM the wall ratio of 4 repetitions fell to 1.00
        # once, in a CI run with another process busy on the other CPU.)
        assert third["quota_throttled_s"] > 0, third["quota_throttled_s"]
    # The report draws the study's four views from the stored benchmark.
    report = run_cli_forked("report", str(tmp_path / "iotst"), "--format", "html", timeout=300)
    assert report.returncode == 0, report.stderr
    figures = tmp_path / "iotst" / "report" / "figures"
    for key in ("iotst-cost", "iotst-ci-width", "iotst-groups", "iotst-quantum"):
        assert (figures / f"{key}.png").stat().st_size > 10_000, key
    page = (tmp_path / "iotst" / "report" / "report.html").read_text(encoding="utf-8")
    assert "modelled: esp32-wroom-32" in page or "Hollow diamonds are modelled" in page


@pytest.mark.serial
@needs_tracing
@needs_native
@pytest.mark.skipif(quota_problem() is not None, reason=str(quota_problem()))
def test_a_native_agent_is_traced_in_its_own_thread_and_placed(
    mosquitto: str, tmp_path: Path
) -> None:
    """--stack mbedtls: the trace follows the agent's connecting thread (the Python process
    only waits on a pipe), the agent's own markers name every TLS 1.2 message, and a half CPU
    share throttles the agent, not the benchmark."""
    document = _bench(
        tmp_path, "mbedtls", "--profiles", "tls1.2/x25519/ecdsa-p256", "--stack", "mbedtls",
        "--reps", "4", "--cores", "1", "--clock", "1/2,1",
    )  # fmt: skip
    by_share = {e["cpu_share"]: e for e in document["profiles"]}
    for entry in by_share.values():
        assert set(entry["groups"]) >= {
            "TCP_CONNECT", "CLIENT_HELLO", "SERVER_HELLO", "CERT_CHAIN", "CERT_VERIFY",
            "KEY_DERIVE", "CLIENT_FINISHED", "FINISHED", "MQTT_CONNECT",
        }, sorted(entry["groups"])  # fmt: skip
        # mbedTLS verifies the chain's and the key exchange's ECDSA signatures: each ~1 ms here
        assert entry["groups"]["CERT_CHAIN"] > 1e-4 and entry["groups"]["CERT_VERIFY"] > 1e-4
        assert entry["marker_cost_s"] > 0
        agent_cpu = sum(s["total_cpu_ns"] for s in entry["samples"]) / len(entry["samples"])
        traced = entry["network_invariant_cpu_s"]["mean"] * 1e9
        # The agent's thread, as its own clock counts it: at half a CPU too, where the quota's
        # throttling made the trace lose the resumes until they were placed from the
        # scheduler's runtime account (0.51-0.82 of the agent's CPU before, 1.004-1.006 after)
        assert 0.9 < traced / agent_cpu < 1.1, (traced, agent_cpu)
        assert all(s["local_port"] > 0 for s in entry["samples"])
    # The quota bites the agent: the kernel held back the cgroup the agent was placed in at
    # half a CPU (cgroup cpu.stat), never at a whole one. That its wall time then grows
    # (1.9x measured on a quiet machine) is a benchmark figure, as in the preset's test
    # above: with other work on the machine the whole share's wall time grows too, and the
    # ratio fell to 1.07 while other engineers' suites ran.
    half, full = by_share["1/2"], by_share["1"]
    assert half["quota_throttled_s"] > 0 and full["quota_throttled_s"] == 0


@needs_tracing
@needs_native
def test_a_native_tls13_handshake_is_traced_by_its_protected_records(
    mosquitto: str, tmp_path: Path
) -> None:
    """wolfSSL's I/O sees TLS 1.3's protected records, not the messages inside: their
    processing lands in a group named for the record (analysis/iotst.py)."""
    document = _bench(
        tmp_path, "wolfssl", "--profiles", "tls1.3/x25519/ecdsa-p256", "--stack", "wolfssl",
        "--reps", "3", "--warmup", "3",
    )  # fmt: skip
    groups = document["profiles"][0]["groups"]
    assert {"CLIENT_HELLO", "PROTECTED_SERVER_RECORD", "MQTT_CONNECT"} <= set(groups), groups
    assert groups["PROTECTED_SERVER_RECORD"] > 1e-4  # the chain and CertificateVerify
