"""The tcp transport (the block-sizes study) with the real agents: every block sent arrives
once, echoes come back, and a hostile sender is counted as malformed while the run goes on."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from iotsecbench.agents import framing
from iotsecbench.agents.config import AgentConfig
from iotsecbench.lab.broker import free_port
from iotsecbench.lab.network import support_problem as network_support_problem
from tests.conftest import run_cli, run_cli_forked

pytestmark = pytest.mark.integration

FAMILIES = [
    "none",  # cleartext
    "dh-sha256-aes128-ctr-hmac",  # FFDH + encrypt-then-MAC (the study)
    "rsa-oaep-aes256-gcm",  # RSA key transport + AEAD (the study)
    "x25519-chacha20-poly1305",  # ECDH + AEAD
    "tls1.3",  # TLS directly on the socket
]


def test_every_family_delivers_every_block_once_both_methods(tmp_path: Path) -> None:
    spec = tmp_path / "tcp.toml"
    spec.write_text(
        f"name = 'tcp'\nconfigurations = {json.dumps(FAMILIES)}\npayload_bytes = [242]\n"
        "rate_hz = [40]\nduration_s = 0.5\nrepetitions = 1\ntransport = ['tcp']\n"
        "method = ['unidirectional', 'echo']\n"
    )
    out = tmp_path / "out"
    result = run_cli("run", str(spec), "--out", str(out), "--quiet", "--no-report")
    assert result.returncode == 0, result.stderr + result.stdout
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute(
            "select configuration, method, status, message_transport, messages_sent, "
            "messages_delivered, duplicates, malformed, auth_failures, echoes, "
            "echo_rtt_p50_ms, payload_bytes_delivered, energy_per_byte_emitter_uj, tls_version "
            "from runs"
        ).fetchall()
    assert len(rows) == 2 * len(FAMILIES)
    for (configuration, method, status, transport, sent, delivered, dup, bad, auth,
         echoes, rtt, payload, energy, tls) in rows:  # fmt: skip
        assert (status, transport) == ("ok", "tcp"), configuration
        assert sent == 20 and delivered == sent and dup == bad == auth == 0, configuration
        assert payload == 242 * sent and energy > 0
        if method == "echo":
            assert echoes == sent and rtt > 0
        else:
            assert echoes is None
        assert (tls == "1.3") == (configuration == "tls1.3")


def _agent_config(tmp_path: Path, role: str, port: int, **extra: object) -> Path:
    config = AgentConfig(
        role=role,
        run_id="hostile",
        configuration="x25519-chacha20-poly1305",
        host="127.0.0.1",
        port=port,
        username="",
        password="",
        payload_bytes=64,
        rate_hz=50,
        duration_s=0.4,
        output=str(tmp_path / f"{role}.jsonl"),
        transport="tcp",
        **extra,  # type: ignore[arg-type]
    )
    path = tmp_path / f"{role}.json"
    path.write_text(config.to_json())
    return path


def _hostile(port: int, payload: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(payload)
        # The receiver sends its hello, then closes on the bad frame (a reset when our
        # bytes are left unread) — possibly before we shut our side (ENOTCONN, seen in CI).
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
        sock.settimeout(5)
        with contextlib.suppress(ConnectionResetError):
            while sock.recv(4096):
                pass


def test_a_hostile_sender_is_counted_malformed_and_the_run_survives(tmp_path: Path) -> None:
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, "-m", "iotsecbench.agents.tcp", "--config",
         str(_agent_config(tmp_path, "receiver", port))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert receiver.stdout is not None and receiver.stdout.readline().strip() == "READY"
        time.sleep(0.1)
        oversize = framing.HEADER.pack(framing.MAX_FRAME_BYTES + 1, ord("K"))
        truncated = framing.HEADER.pack(1000, ord("K")) + b"only a part"
        garbage = b"\xff" * 64
        for payload in (oversize, truncated, garbage):
            _hostile(port, payload)
        emitter = subprocess.run(
            [sys.executable, "-m", "iotsecbench.agents.tcp", "--config",
             str(_agent_config(tmp_path, "emitter", port))],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert emitter.returncode == 0, emitter.stderr
        assert receiver.wait(30) == 0, receiver.stderr.read() if receiver.stderr else ""
    finally:
        if receiver.poll() is None:
            receiver.kill()
    records = [json.loads(line) for line in (tmp_path / "receiver.jsonl").read_text().splitlines()]
    counters = {r["name"]: r["value"] for r in records if r.get("type") == "counters"}
    sent = [r for r in (tmp_path / "emitter.jsonl").read_text().splitlines() if '"message"' in r]
    assert counters["malformed"] == 3
    assert counters["messages_delivered"] == len(sent) == 20
    assert counters["auth_failures"] == 0


def test_block_sizes_preset_runs_a_reduced_matrix(tmp_path: Path) -> None:
    out = tmp_path / "bs"
    result = run_cli(
        "run", "--preset", "block-sizes", "--configs", "none,rsa-oaep-aes256-gcm",
        "--payload", "51,1460", "--duration", "0.5", "--reps", "1", "--out", str(out),
        "--quiet",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute(
            "select status, pacing, energy_per_byte_emitter_uj, throughput_kib_s from runs"
        ).fetchall()
    assert len(rows) == 8 and all(r[0] == "ok" and r[1] == "saturating" for r in rows)
    assert all(r[2] > 0 and r[3] > 0 for r in rows)
    html = (out / "report" / "report.html").read_text()
    assert 'id="figure-energy-per-byte"' in html and 'id="figure-throughput-per-block"' in html


def test_bad_transport_inputs_end_in_one_line_exit_2(tmp_path: Path) -> None:
    cases = [
        ("--transport", "tcp", "--payload", str((1 << 20) + 1)),
        ("--method", "echo"),
        ("--transport", "udp"),
    ]
    for extra in cases:
        result = run_cli_forked("run", "--configs", "none", "--out", str(tmp_path / "x"), *extra)
        assert result.returncode == 2, (extra, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_agent_config_round_trips_the_transport_fields(tmp_path: Path) -> None:
    path = _agent_config(tmp_path, "emitter", 1, method="echo", saturating=True)
    config = AgentConfig.from_file(path)
    assert (config.transport, config.method, config.saturating) == ("tcp", "echo", True)
    assert dataclasses.asdict(config)["transport"] == "tcp"


NETWORK_PROBLEM = network_support_problem()


@pytest.mark.skipif(NETWORK_PROBLEM is not None, reason=f"network emulation: {NETWORK_PROBLEM}")
def test_tcp_runs_over_an_emulated_network_and_echoes_pay_its_delay(tmp_path: Path) -> None:
    out = tmp_path / "net"
    args = ["--configs", "none", "--transport", "tcp", "--payload", "242", "--rate", "20",
            "--duration", "0.5", "--reps", "1", "--out", str(out), "--quiet",
            "--no-report"]  # fmt: skip
    result = run_cli("run", *args, "--method", "echo", "--network", "loopback,ideal,wifi")
    assert result.returncode == 0, result.stderr + result.stdout
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rtt = dict(db.execute("select network, echo_rtt_p50_ms from runs").fetchall())
        delivered = db.execute("select min(messages_delivered), max(echoes) from runs").fetchone()
    assert delivered == (10, 10)
    # The wifi profile's one-way delays (docs/network.md) make its round trip the longest.
    assert rtt["wifi"] > rtt["ideal"] and rtt["wifi"] > rtt["loopback"]
