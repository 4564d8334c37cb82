"""Payload schemes in the native agent (agents/native/scheme.c on mbedTLS's and wolfCrypt's
primitives) against a real mosquitto: every cipher it implements, sealed by one side and opened
by the other — native emitter to Python receiver and the other way round — so the bytes on the
wire are docs/wire-format.md's; forgeries rejected by a native receiver and counted exactly."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from iotsecbench.security.schemes import get_scheme
from tests.conftest import run_cli
from tests.integration.test_attacker import forged_by_kind, outcome
from tests.native_agents import interoperate, needs_native

pytestmark = pytest.mark.integration

# Every cipher of security/tls/stacks.py NATIVE_CIPHERS at least once, each key establishment
# on both stacks, each stack on both ends.
CASES = [
    ("ecdh-p256-aes128-gcm", "mbedtls", True),
    ("x25519-aes256-gcm", "wolfssl", False),
    ("psk-aes128-ccm8", "wolfssl", True),
    ("ecdh-p256-aes256-ccm8", "mbedtls", False),
    ("x25519-aes128-ctr-hmac", "mbedtls", True),
    ("psk-aes256-ctr-hmac", "wolfssl", False),
    ("ecdh-p256-aes128-cbc-hmac", "wolfssl", True),
    ("x25519-aes256-cbc-hmac", "mbedtls", False),
    ("ecdh-p256-aes128-cbc", "mbedtls", True),
    ("x25519-chacha20-poly1305", "wolfssl", True),
    ("psk-chacha20-poly1305", "mbedtls", False),
]


@needs_native
@pytest.mark.parametrize(
    ("scheme", "stack", "emitter_native"),
    CASES,
    ids=[f"{s}-{k}-{'native-to-python' if n else 'python-to-native'}" for s, k, n in CASES],
)
def test_native_and_python_agents_open_each_others_sealed_messages(
    mosquitto: str, tmp_path: Path, scheme: str, stack: str, emitter_native: bool
) -> None:
    records = interoperate(tmp_path, emitter_native, None, scheme, stack)
    sent = [r for r in records["emitter"] if r["type"] == "message"]
    got = [r for r in records["receiver"] if r["type"] == "message"]
    assert len(sent) == len(got) == 20
    assert sorted((m["seq"], m["t_created_ns"]) for m in sent) == sorted(
        (m["seq"], m["t_created_ns"]) for m in got
    )
    # The wire size is the scheme's: header, nonce, padding and tag exactly as documented.
    expected = 100 + get_scheme(scheme).expected_overhead_bytes(100)
    assert {m["wire_bytes"] for m in sent} == {m["wire_bytes"] for m in got} == {expected}
    counters = {r["name"]: r["value"] for r in records["receiver"] if r["type"] == "counters"}
    assert counters["messages_delivered"] == 20
    assert counters["auth_failures"] == counters["malformed"] == counters["replays_rejected"] == 0
    for role in ("emitter", "receiver"):  # both sides timed the exchange, as the Python ones
        phases = [r for r in records[role] if r.get("phase") == "key_exchange"]
        assert len(phases) == 1 and phases[0]["wall_ns"] > 0, role


@needs_native
def test_a_scheme_inside_tls_on_a_device_stack(mosquitto: str, tmp_path: Path) -> None:
    records = interoperate(
        tmp_path, True, "tls1.3/x25519/ecdsa-p256", "x25519-aes128-gcm", "wolfssl"
    )
    got = [r for r in records["receiver"] if r["type"] == "message"]
    assert len(got) == 20 and {m["wire_bytes"] for m in got} == {126}
    assert any(r["type"] == "tls_transcript" for r in records["emitter"])


@needs_native
def test_a_native_receiver_rejects_every_forgery_and_counts_each_exactly(
    mosquitto: str, tmp_path: Path
) -> None:
    """The attacker of test_attacker.py (tampered, replayed, reordered, truncated and
    wrong-key copies of the run's real messages) against the native receiver."""
    out = tmp_path / "attacked"
    scheme = "x25519-aes128-gcm"
    result = run_cli(
        *("run", "--configs", scheme, "--stack", "mbedtls", "--duration", "4", "--reps", "1"),
        *("--out", str(out), "--quiet", "--no-report"),
        env={"IOTSB_TEST_FAULT": "attacker:forge@mbedtls"},
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        run_id = f"{scheme}_256B_10Hz_q1_mbedtls_r1"
        sent = forged_by_kind(db, run_id)
        got = outcome(db, run_id)
    assert set(sent) == {"tampered", "replayed", "reordered", "truncated", "wrong-key"}, sent
    assert got["auth_failures"] == sent["tampered"] + sent["wrong-key"], (got, sent)
    assert got["replays_rejected"] == sent["replayed"] + sent["reordered"], (got, sent)
    assert got["malformed"] == sent["truncated"], (got, sent)
    assert got["messages_delivered"] == got["messages_sent"] == got["delivered"]
    assert "forged" not in got
