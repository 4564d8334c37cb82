"""The native device agents (agents/native) against a real mosquitto: every message delivered
on each stack, each TLS profile negotiating what it claims (read from the live connection),
heap and footprint stored, refusals before anything starts, a crash leaving a failed run and
no process, and the native and Python agents reading each other's messages."""

from __future__ import annotations

import contextlib
import json
import statistics
import subprocess
from pathlib import Path

import pytest

from iotsecbench.agents import native
from iotsecbench.agents.config import AgentConfig, TlsClientFiles
from iotsecbench.agents.records import read_records
from iotsecbench.lab.pki import create_certificates
from iotsecbench.security.tls import parse_profile
from tests.conftest import run_cli, run_cli_forked
from tests.interrupts import processes_mentioning
from tests.native_agents import interoperate, needs_native, needs_wolfssl_pq, stored_runs

pytestmark = pytest.mark.integration


@needs_native
def test_every_stack_delivers_every_message_with_heap_and_footprint(
    mosquitto: str, tmp_path: Path
) -> None:
    """The issue's matrix (plain, TLS 1.2, a payload scheme × the three stacks), shorter."""
    out = tmp_path / "stacks"
    scheme = "ecdh-p256-aes128-gcm"
    result = run_cli(
        "run", "--configs", f"plain,tls1.2,{scheme}", "--stack", "mbedtls,wolfssl,openssl",
        "--duration", "1.5", "--reps", "1", "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    assert "heap TLS handshake" in result.stdout and "flash text+data" in result.stdout
    rows = stored_runs(
        out,
        "status, messages_sent, messages_delivered, stack, tls_version, "
        "tls_heap_handshake_peak_bytes, tls_heap_steady_bytes, footprint_text_bytes, "
        "achieved_rate_hz",
    )
    assert len(rows) == 9
    for run_id, (status, sent, delivered, stack, version, peak, steady, text, rate) in rows.items():
        assert status == "ok" and sent == delivered == 15, run_id
        assert 9.0 < rate < 11.0, (run_id, rate)
        if stack == "openssl":
            assert peak is None and text is None, run_id
            continue
        assert text is not None and text > 10_000, run_id
        if run_id.startswith("tls1.2"):
            assert version == "1.2", run_id
            # The handshake's peak holds at least the record buffers, and is the maximum.
            assert peak >= steady > 16_384, (run_id, peak, steady)
        elif run_id.startswith(scheme):
            # The session's two cipher contexts and what the stack keeps after its ECDH.
            assert version is None and peak is None and steady > 512, (run_id, steady)
        else:
            assert version is None and peak is None and steady is None, run_id
    # Each build links what its configuration needs: the MQTT client alone, then the
    # payload scheme on mbedTLS's crypto, then its whole TLS client.
    plain, tls, sealed = (
        rows[f"{name}_256B_10Hz_q1_mbedtls_r1"][7] for name in ("plain", "tls1.2", scheme)
    )
    assert plain * 5 < sealed < tls


@needs_native
def test_wolfssl_negotiates_each_tls13_profile_it_is_asked_for(
    mosquitto: str, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'configurations = ["tls1.3"]\nstack = ["wolfssl"]\nduration_s = 1.0\nrepetitions = 1\n'
        '[tls]\ngroup = "secp256r1"\ncertificate = "ecdsa-p256"\n'
        'ciphers = "TLS_CHACHA20_POLY1305_SHA256"\nmutual = true\n'
    )
    out = tmp_path / "tls13"
    result = run_cli("run", str(spec), "--out", str(out), "--quiet", "--no-report")
    assert result.returncode == 0, result.stderr + result.stdout
    (row,) = stored_runs(out, "status, tls_version, tls_cipher, tls_group").values()
    assert row == ("ok", "1.3", "TLS_CHACHA20_POLY1305_SHA256", "secp256r1")


@needs_native
def test_a_native_emitter_sends_blocks_over_the_tcp_transport(
    mosquitto: str, tmp_path: Path
) -> None:
    """The block-sizes transport: the native emitter straight to the Python receiver (the
    TLS server), frames in both directions with the echo method; every block delivered and
    every echo opened and checked by the emitter."""
    out = tmp_path / "tcp"
    result = run_cli(
        "run", "--configs", "plain,tls1.2+x25519-aes128-gcm", "--transport", "tcp",
        "--method", "unidirectional,echo", "--stack", "mbedtls,wolfssl", "--duration", "1",
        "--reps", "1", "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    rows = stored_runs(
        out, "status, error, messages_sent, messages_delivered, echoes, tls_version, "
        "footprint_text_bytes",
    )  # fmt: skip
    assert len(rows) == 8
    for run_id, (status, error, sent, delivered, echoes, version, text) in rows.items():
        assert status == "ok" and sent == delivered == 10, (run_id, error)
        assert echoes == (10 if "_echo_" in run_id else None), (run_id, echoes)
        assert version == ("1.2" if run_id.startswith("tls1.2") else None), run_id
        assert text is not None and text > 10_000, run_id
    # The receiver stayed the Python agent; the emitter was the native one.
    (agent_start,) = (
        r
        for r in read_records(next(out.glob("runs/*tls1.2*echo_mbedtls*/emitter.jsonl")))
        if r.get("type") == "event" and r.get("kind") == "agent_start"
    )
    assert agent_start["detail"]["stack"] == "mbedtls"


@needs_native
def test_native_agents_resume_their_sessions(mosquitto: str, tmp_path: Path) -> None:
    """A resumption profile: each agent's priming connection gives the session its measured
    connection offers; a run fails unless the server resumed it (translate's check), and
    the benchmark's resumed handshakes skip the certificate chain."""
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'configurations = ["tls1.2", "tls1.3"]\nstack = ["mbedtls", "wolfssl"]\n'
        'duration_s = 1.0\nrepetitions = 1\nexclude = [{ configuration = "tls1.3", '
        'stack = "mbedtls" }]\n[tls]\ncertificate = "ecdsa-p256"\nresumption = true\n'
    )
    out = tmp_path / "resumed"
    result = run_cli("run", str(spec), "--out", str(out), "--quiet", "--no-report")
    assert result.returncode == 0, result.stderr + result.stdout
    rows = stored_runs(out, "status, stack, tls_version")
    assert sorted(rows.values()) == [
        ("ok", "mbedtls", "1.2"), ("ok", "wolfssl", "1.2"), ("ok", "wolfssl", "1.3"),
    ]  # fmt: skip
    for stack, profile in (("mbedtls", "tls1.2/ecdsa-p256"), ("wolfssl", "tls1.3/ecdsa-p256")):
        document = tmp_path / f"{stack}.json"
        bench = run_cli(
            "bench", "handshake", "--profiles", f"{profile}/resume,{profile}", "--stack", stack,
            "--reps", "3", "--out", str(tmp_path / stack), "--json", str(document), "--quiet",
        )  # fmt: skip
        assert bench.returncode == 0, bench.stderr + bench.stdout
        resumed, full = json.loads(document.read_text())["profiles"]
        assert all(s["negotiated"]["resumed"] for s in resumed["samples"])
        assert not any(s["negotiated"]["resumed"] for s in full["samples"])
        received = [
            statistics.median(s["tls"]["tcp_bytes_received"] for s in entry["samples"])
            for entry in (resumed, full)
        ]
        assert received[0] * 2 < received[1], received  # no certificate chain


@pytest.mark.parametrize(
    ("stack", "version"),
    [
        pytest.param("mbedtls", "1.2", marks=needs_native),
        pytest.param("wolfssl", "1.2", marks=needs_native),
        pytest.param("wolfssl-5.9", "1.2", marks=needs_wolfssl_pq),
        pytest.param("wolfssl-5.9", "1.3", marks=needs_wolfssl_pq),  # the secret callbacks
    ],
)
def test_the_key_log_holds_the_secret_the_server_derived(
    tmp_path: Path, stack: str, version: str
) -> None:
    """Not a broker: a TLS server on Python's ssl (OpenSSL) that answers CONNECT with a
    CONNACK and logs its own secrets; the agent's --keylog lines must be the server's."""
    import socket
    import ssl
    import threading

    certs = create_certificates(tmp_path / "pki", "ecdsa-p256")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = context.maximum_version = ssl.TLSVersion[
        f"TLSv{version[0]}_{version[2]}"
    ]
    context.load_cert_chain(certs.server_cert, certs.server_key)
    context.keylog_filename = str(tmp_path / "server.keys")
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer() -> None:
        connection, _ = server.accept()
        with context.wrap_socket(connection, server_side=True) as tls:
            tls.recv(4096)  # the CONNECT
            tls.sendall(b"\x20\x02\x00\x00")  # CONNACK, accepted
            with contextlib.suppress(OSError):
                tls.recv(4096)  # the DISCONNECT, then the close

    threading.Thread(target=answer, daemon=True).start()
    profile = parse_profile(f"tls{version}/ecdsa-p256")
    keylog = tmp_path / "agent.keys"
    config = AgentConfig(
        role="connect", run_id="r", configuration=f"tls{version}", host="127.0.0.1", port=port,
        username="u", password="p", topic_prefix="iotsb/0123456789ab", connect_timeout_s=5,
        output=str(tmp_path / "connect.jsonl"), stack=stack, keylog=str(keylog),
        tls=TlsClientFiles(profile.to_dict(), str(certs.ca_file)),
    )  # fmt: skip
    path = tmp_path / "connect.json"
    path.write_text(config.to_json())
    program = native.binary(native.build_for(stack, tls=True, scheme=False))
    result = subprocess.run(
        [str(program), "--config", str(path)], input="go\n", capture_output=True, text=True,
        timeout=30, check=False,
    )  # fmt: skip
    server.close()
    assert result.returncode == 0 and "DONE" in result.stdout, result.stderr
    assert keylog.stat().st_mode & 0o777 == 0o600
    lines = keylog.read_text().splitlines()
    server = (tmp_path / "server.keys").read_text().splitlines()
    assert set(lines) <= set(server), (lines, server)
    if version == "1.2":
        (line,) = lines
        assert line.startswith("CLIENT_RANDOM ") and len(line.split()[2]) == 96
    else:  # the four traffic secrets (no exporter secret: the build has no exporter)
        assert {line.split()[0] for line in lines} == {
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
            "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0",
        }  # fmt: skip


@needs_native
def test_a_stack_limit_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out = tmp_path / "refused"
    # Refusals before anything starts: forks of the pre-imported CLI (tests/cli_server.py).
    result = run_cli_forked(
        "run", "--configs", "tls1.3", "--stack", "mbedtls", "--out", str(out), "--quiet",
    )  # fmt: skip
    assert result.returncode == 2
    assert "mbedtls (Debian 12) speaks TLS 1.2 only" in result.stderr
    scheme = run_cli_forked(
        "run", "--configs", "rsa-oaep-ascon128v12", "--stack", "wolfssl", "--out", str(out),
    )  # fmt: skip
    assert scheme.returncode == 2 and "not rsa-oaep-ascon128v12" in scheme.stderr
    keylog = run_cli_forked(
        "run", "--configs", "tls1.3", "--stack", "wolfssl", "--keylog", str(tmp_path / "k"),
        "--out", str(out),
    )  # fmt: skip
    assert keylog.returncode == 2 and "TLS 1.3 secret callback" in keylog.stderr
    assert not (out / "results.duckdb").exists()


@needs_native
def test_a_crashing_native_agent_fails_its_run_and_leaves_no_process(
    mosquitto: str, tmp_path: Path
) -> None:
    out = tmp_path / "crash"
    result = run_cli(
        "run", "--configs", "tls1.2", "--stack", "mbedtls", "--duration", "1.5", "--reps", "1",
        "--out", str(out), "--quiet", "--no-report",
        env={"IOTSB_TEST_FAULT": "emitter:crash-after=5@mbedtls"},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    ((status, error),) = stored_runs(out, "status, error").values()
    assert status == "failed" and "emitter failed (exit code 17)" in error
    assert processes_mentioning(str(out)) == []


@needs_native
def test_a_negotiation_other_than_requested_fails_the_run(mosquitto: str, tmp_path: Path) -> None:
    out = tmp_path / "mismatch"
    result = run_cli(
        "run", "--configs", "tls1.2", "--stack", "wolfssl", "--duration", "1", "--reps", "1",
        "--out", str(out), "--quiet", "--no-report",
        env={"IOTSB_TEST_FAULT": "emitter:expect-group=secp384r1@wolfssl"},
    )  # fmt: skip
    assert result.returncode == 1
    ((status, error),) = stored_runs(out, "status, error").values()
    assert status == "failed"
    assert "TLS negotiated something else than requested" in error and "secp384r1" in error


@needs_native
@pytest.mark.parametrize(
    "emitter_native", [True, False], ids=["native-to-python", "python-to-native"]
)
def test_native_and_python_agents_read_each_other(
    mosquitto: str, tmp_path: Path, emitter_native: bool
) -> None:
    records = interoperate(tmp_path, emitter_native, "tls1.2/x25519/ecdsa-p256")
    sent = [r for r in records["emitter"] if r["type"] == "message"]
    got = [r for r in records["receiver"] if r["type"] == "message"]
    assert len(sent) == len(got) == 20
    # The same plaintext on both sides: sequence numbers and creation times travel intact.
    assert sorted((m["seq"], m["t_created_ns"]) for m in sent) == sorted(
        (m["seq"], m["t_created_ns"]) for m in got
    )
    counters = {r["name"]: r["value"] for r in records["receiver"] if r["type"] == "counters"}
    assert counters["messages_delivered"] == 20 and counters["malformed"] == 0


def test_the_agent_config_round_trips_the_native_offer(tmp_path: Path) -> None:
    profile = parse_profile("tls1.2/ECDHE-ECDSA-AES128-GCM-SHA256/x25519/ecdsa-p256")
    files = TlsClientFiles(profile.to_dict(), "ca.pem", suite_ids=(0xC02B,), group_ids=(29, 23))
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(AgentConfig(
        role="emitter", run_id="r", configuration="tls1.2", host="h", port=1, username="u",
        password="p", tls=files, stack="mbedtls",
    ).to_json())}))  # fmt: skip
    config = AgentConfig.from_file(path)
    assert config.tls == files and config.stack == "mbedtls"


@needs_native
@pytest.mark.parametrize(
    "reply",
    [b"\x20\x03\x00\x00\x00", b"\x30\x02\x00\x05", b"\x20\xff\xff\xff\xff\x7f"],
    ids=["connack-too-long", "publish-topic-past-end", "length-of-five-bytes"],
)
def test_a_malformed_packet_from_the_broker_ends_the_agent_with_its_reason(
    tmp_path: Path, reply: bytes
) -> None:
    """Not a broker: a socket that answers CONNECT with bytes no broker may send (mosquitto
    never would), to see the agent close with a recorded reason instead of crashing."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def answer() -> None:
        connection, _ = server.accept()
        with connection:
            connection.recv(4096)  # the CONNECT
            connection.sendall(reply)
            connection.recv(4096)  # until the agent closes

    threading.Thread(target=answer, daemon=True).start()
    config = AgentConfig(
        role="emitter", run_id="r", configuration="plain", host="127.0.0.1", port=port,
        username="u", password="p", topic_prefix="iotsb/0123456789ab", connect_timeout_s=3,
        output=str(tmp_path / "emitter.jsonl"),
    )  # fmt: skip
    path = tmp_path / "emitter.json"
    path.write_text(config.to_json())
    result = subprocess.run(
        [str(native.binary("plain")), "--config", str(path)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    server.close()
    assert result.returncode == 1, result.stderr
    errors = [
        r["message"] for r in read_records(tmp_path / "emitter.jsonl") if r["type"] == "error"
    ]
    assert errors and errors[0].startswith("malformed packet from the broker"), errors


@needs_native
def test_the_handshake_benchmark_runs_on_a_device_stack(mosquitto: str, tmp_path: Path) -> None:
    out, document = tmp_path / "bench", tmp_path / "bench.json"
    profiles = "tls1.2/x25519/ecdsa-p256,tls1.2/ECDHE-RSA-AES128-GCM-SHA256/rsa2048"
    result = run_cli(
        "bench", "handshake", "--profiles", profiles, "--stack", "mbedtls", "--reps", "3",
        "--out", str(out), "--json", str(document), "--quiet",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    bench = json.loads(document.read_text())
    assert bench["settings"]["stack"] == "mbedtls"
    ecdsa, rsa = bench["profiles"]
    assert ecdsa["samples"][0]["negotiated"]["group"] == "x25519"
    assert rsa["samples"][0]["negotiated"]["cipher"] == "ECDHE-RSA-AES128-GCM-SHA256"
    for entry in (ecdsa, rsa):
        assert len(entry["samples"]) == 3
        assert all(s["tls"]["thread_cpu_ns"] > 0 for s in entry["samples"])
