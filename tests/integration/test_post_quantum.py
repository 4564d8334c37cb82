"""Post-quantum security end to end: ML-KEM and hybrid payload key establishments signed with
ML-DSA, and TLS 1.3 with an ML-KEM group and an ML-DSA certificate, through the real broker on
OpenSSL 3.5 (stack openssl-3.5); tampering with the signed exchange fails its run with the
reason; bench handshake gives the handshake's time and bytes per profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iotsecbench.security import pq_openssl, resolve_configuration
from tests.conftest import query, run_cli

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(pq_openssl.problem() is not None, reason=str(pq_openssl.problem())),
]
SIGNED = "x25519mlkem768-mldsa44-chacha20-poly1305"


def test_payload_and_tls_post_quantum_configurations_deliver_every_message(
    mosquitto: str, tmp_path: Path
) -> None:
    out = tmp_path / "pq"
    configurations = f"mlkem768-aes128-gcm,{SIGNED},tls1.3/x25519mlkem768/mldsa44"
    result = run_cli(
        "run", "--configs", configurations, "--duration", "3", "--reps", "1", "--out", str(out),
        "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "stack openssl-3.5 for every configuration" in result.stderr
    runs = query(out, "select configuration, status, stack, stack_version, tls_group, "
                      "tls_signature from runs")  # fmt: skip
    # Stored under their canonical names (the TLS profile's group as OpenSSL spells it).
    assert {r[0] for r in runs} == {
        resolve_configuration(name).name for name in configurations.split(",")
    }
    for configuration, status, stack, version, group, signature in runs:
        assert (status, stack) == ("ok", "openssl-3.5") and "3.5.5" in version
        if configuration.startswith("tls"):
            assert (group, signature) == ("X25519MLKEM768", "mldsa44")
    lost = query(out, "select count(*) from messages where t_arrived_ns is null")
    assert lost == [(0,)] and query(out, "select count(*) from messages")[0][0] == 3 * 30
    operations = {
        row[0]
        for row in query(out, "select distinct primitive from operations where agent = 'emitter'")
    }
    assert {"mlkem768-encaps", "mldsa44-sign", "mldsa44-verify", "mlkem768-decaps"} <= operations
    exchange = query(out, f"""select detail_json from handshakes where phase = 'key_exchange'
                              and agent = 'emitter' and run_id like '{SIGNED}%'""")  # fmt: skip
    assert json.loads(exchange[0][0])["bytes_out"] == 1 + 16 + 1120 + 2420
    wire = query(out, """select detail_json from events where kind = 'tls_wire'
                         and agent = 'emitter'""")  # fmt: skip
    assert json.loads(wire[0][0])["client_hello_segments"] == 1  # loopback's MSS is ~64 KiB
    assert not list(out.glob("runs/*/*.signing.json"))  # the pinned keys, removed after each run


def test_tampering_with_the_signed_exchange_fails_the_run_with_its_reason(
    mosquitto: str, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        f'configurations = ["{SIGNED}"]\nduration_s = 2\nrepetitions = 1\nconnect_timeout_s = 3\n'
    )
    out = tmp_path / "tampered"
    result = run_cli(
        "run", str(spec), "--out", str(out), "--quiet", "--no-report",
        env={"IOTSB_TEST_FAULT": f"emitter:tamper-kx@{SIGNED}"},
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    ((status, error),) = query(out, "select status, error from runs")
    assert status == "failed"
    assert "the emitter's reply is not signed by the peer's pinned mldsa44 key" in error


def test_bench_handshake_gives_time_and_bytes_per_post_quantum_profile(
    mosquitto: str, tmp_path: Path
) -> None:
    report = tmp_path / "out.json"
    profiles = "tls1.3/x25519/ecdsa-p256,tls1.3/x25519mlkem768/ecdsa-p256,tls1.3/mlkem768/mldsa44"
    result = run_cli(
        "bench", "handshake", "--profiles", profiles, "--reps", "3", "--json", str(report),
        "--out", str(tmp_path / "bench"), "--quiet",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    measured = {p["tls_profile_name"]: p for p in json.loads(report.read_text())["profiles"]}
    classical = measured["tls1.3/x25519/ecdsa-p256"]
    hybrid = measured["tls1.3/X25519MLKEM768/ecdsa-p256"]
    pure = measured["tls1.3/MLKEM768/mldsa44"]
    assert (hybrid["negotiated"]["group"], pure["negotiated"]["group"]) == (
        "X25519MLKEM768", "MLKEM768",
    )  # fmt: skip
    assert pure["negotiated"]["signature_algorithm"] == "mldsa44"
    for profile in (classical, hybrid, pure):
        assert profile["statistics"]["tls_wall_ns"]["mean"] > 0
    # The ML-KEM-768 key share (1,184 B) and ciphertext (1,088 B) are on the wire.
    extra = hybrid["median_wire"]["tcp_bytes_sent"] - classical["median_wire"]["tcp_bytes_sent"]
    assert extra > 1100
    assert hybrid["median_wire"]["client_hello_bytes"] > 1184 + 32
    # An ML-DSA-44 chain (two 1,312-B keys, two 2,420-B signatures, CertificateVerify) too.
    assert pure["median_wire"]["tcp_bytes_received"] > 2 * 2420 + 2 * 1312


def test_a_classical_profile_runs_on_both_openssl_libraries(mosquitto: str, tmp_path: Path) -> None:
    """What a reader needs to tell the library's effect from the algorithm's: the same
    classical configuration on Debian's OpenSSL 3.0 and on OpenSSL 3.5, stored with each."""
    out = tmp_path / "both"
    result = run_cli(
        "run", "--configs", "tls1.3", "--stack", "openssl,openssl-3.5", "--duration", "1",
        "--reps", "1", "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    versions = dict(query(out, "select stack, stack_version from runs"))
    assert "3.5.5" in versions["openssl-3.5"] and "3.0." in versions["openssl"]
