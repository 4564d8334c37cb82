"""Post-quantum TLS on a device stack: the native agent on wolfSSL 5.9.4 built from registry
source (stack wolfssl-5.9) against the lab's real mosquitto on OpenSSL 3.5. A hybrid
X25519MLKEM768 handshake with an ML-DSA-44 chain, a pure ML-KEM-768 one (carrying a payload
scheme on the same build's wolfCrypt) and a classical TLS 1.3 one, each negotiated as asked
(read from the wire and checked), every message delivered, the stack's heap and footprint
stored; bench handshake on the same stack; and what the stacks cannot do refused before
anything starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iotsecbench.security import resolve_configuration
from tests.conftest import query, run_cli, run_cli_forked
from tests.native_agents import needs_wolfssl_pq

pytestmark = pytest.mark.integration
HYBRID = "tls1.3/x25519mlkem768/mldsa44"
PURE = "tls1.3/mlkem768/ecdsa-p256+ecdh-p256-aes128-gcm"
CLASSICAL = "tls1.3/x25519/ecdsa-p256"
# Each is stored under its canonical name (the groups as OpenSSL spells them).
AS_WRITTEN = {resolve_configuration(name).name: name for name in (HYBRID, PURE, CLASSICAL)}


@pytest.mark.slow
@needs_wolfssl_pq
def test_post_quantum_and_classical_tls13_on_wolfssl_59(mosquitto: str, tmp_path: Path) -> None:
    out = tmp_path / "pq"
    result = run_cli(
        "run", "--configs", f"{HYBRID},{PURE},{CLASSICAL}", "--stack", "wolfssl-5.9",
        "--duration", "1", "--reps", "1", "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    rows = {
        AS_WRITTEN[row[0]]: row[1:]
        for row in query(
            out,
            "select configuration, status, error, messages_sent, messages_delivered, stack, "
            "stack_version, tls_version, tls_group, tls_heap_handshake_peak_bytes, "
            "tls_heap_steady_bytes, footprint_text_bytes from runs",
        )
    }
    groups = {HYBRID: "X25519MLKEM768", PURE: "MLKEM768", CLASSICAL: "x25519"}
    for name, (
        status,
        error,
        sent,
        delivered,
        stack,
        version,
        tls,
        group,
        peak,
        steady,
        text,
    ) in rows.items():
        # ok = the group, suite, version and the certificate family from the chain matched
        # the profile (a mismatch fails the run); every message crossed the broker
        assert (status, sent, delivered) == ("ok", 10, 10), (name, error)
        assert (stack, version, tls, group) == ("wolfssl-5.9", "5.9.4", "1.3", groups[name])
        assert peak > steady > 0 and text > 100_000, (name, peak, steady, text)
    # The same emitter's handshakes as they crossed the wire (TCP_INFO): the hybrid key share
    # adds exactly ML-KEM-768's 1,184-byte encapsulation key (FIPS 203) to what the client
    # sends; the ML-DSA-44 chain from the broker (two 1,312-byte keys, two 2,420-byte
    # signatures, and a 2,420-byte CertificateVerify).
    wire = {
        AS_WRITTEN[row[0]]: json.loads(row[1])
        for row in query(
            out,
            "select r.configuration, h.detail_json from handshakes h join runs r using (run_id) "
            "where h.phase = 'tls_handshake' and h.agent = 'emitter'",
        )
    }
    assert wire[HYBRID]["tcp_bytes_sent"] == wire[CLASSICAL]["tcp_bytes_sent"] + 1184
    assert wire[HYBRID]["tcp_bytes_received"] > 3 * 2420 + 2 * 1312
    assert wire[HYBRID]["tls_heap_peak_bytes"] == rows[HYBRID][8]
    # The payload scheme's key exchange ran on the same build's wolfCrypt.
    exchange = query(
        out, "select count(*) from handshakes where phase = 'key_exchange' and agent = 'emitter'"
    )
    assert exchange == [(1,)]


@pytest.mark.slow
@needs_wolfssl_pq
def test_bench_handshake_on_wolfssl_59_gives_heap_time_and_bytes(
    mosquitto: str, tmp_path: Path
) -> None:
    document = tmp_path / "bench.json"
    result = run_cli(
        "bench", "handshake", "--profiles", f"{HYBRID},{CLASSICAL}", "--stack", "wolfssl-5.9",
        "--reps", "2", "--out", str(tmp_path / "bench"), "--json", str(document), "--quiet",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    hybrid, classical = json.loads(document.read_text())["profiles"]
    assert hybrid["negotiated"]["group"] == "X25519MLKEM768"
    assert hybrid["negotiated"]["certificate"] == "mldsa44"
    for profile in (hybrid, classical):
        assert profile["statistics"]["tls_cpu_ns"]["mean"] > 0
        assert all(sample["tls_heap_peak_bytes"] > 0 for sample in profile["samples"])
    assert hybrid["median_wire"]["client_hello_bytes"] > 1184 + 32


def test_what_the_stacks_cannot_do_is_refused_before_anything_starts(tmp_path: Path) -> None:
    """(stack_problem's other refusals, tests/unit/security/test_tls_stacks.py, take the same
    path to exit 2.)"""
    out = tmp_path / "refused"
    # (a fork of the pre-imported CLI, tests/cli_server.py; the next one empties the cache
    # a fresh interpreter starts with, so it is one)
    debian = run_cli_forked("run", "--configs", HYBRID, "--stack", "wolfssl", "--out", str(out))
    assert debian.returncode == 2 and "use stack wolfssl-5.9" in debian.stderr
    # Without the build (an empty cache): one line naming the command that makes it, exit 3.
    # Only iotsecbench's cache is emptied: matplotlib (imported by arch before the refusal)
    # keeps its font cache, or its one-time "building the font cache" line joins stderr.
    import matplotlib
    import matplotlib.font_manager  # builds the font cache here, if it must

    empty = {"XDG_CACHE_HOME": str(tmp_path / "empty-cache")}

    missing = run_cli(
        "run", "--configs", CLASSICAL, "--stack", "wolfssl-5.9", "--out", str(out),
        env={**empty, "MPLCONFIGDIR": matplotlib.get_cachedir()},
    )  # fmt: skip
    assert missing.returncode == 3, missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    assert "python -m iotsecbench.agents.native.libraries" in missing.stderr
    assert not (out / "results.duckdb").exists()
