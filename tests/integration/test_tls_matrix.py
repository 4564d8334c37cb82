"""The TLS matrix against a real mosquitto: every listed profile negotiates what it claims, an
independent ``openssl s_client`` probe of the same broker configuration agrees with what
iotsecbench recorded, resumption cuts the handshake bytes, mutual TLS rejects a client
without a certificate, and an impossible combination stops the CLI before anything starts.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import duckdb
import pytest

from iotsecbench.bench.handshake import run_handshake_benchmark
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from iotsecbench.lab.pki import create_certificates
from iotsecbench.security.tls import (
    OPENSSL_GROUP_NAMES,
    TlsProfile,
    broker_openssl_config,
    client_context,
    mosquitto_listener_lines,
    parse_profile,
)
from tests.conftest import run_cli, run_cli_forked

pytestmark = pytest.mark.integration

# Every suite, group, certificate, chain length and option the issue lists, each at least once.
PROFILES = [
    "tls1.2/ECDHE-ECDSA-AES128-GCM-SHA256/ecdsa-p256",
    "tls1.2/ECDHE-RSA-AES128-GCM-SHA256/P-256/rsa2048",
    "tls1.2/DHE-RSA-AES256-GCM-SHA384/modp2048/rsa2048",
    "tls1.2/AES256-GCM-SHA384/rsa3072",
    "tls1.2/ECDHE-ECDSA-CHACHA20-POLY1305/x25519/ed25519",
    "tls1.3/TLS_AES_128_GCM_SHA256/x25519/ecdsa-p256",
    "tls1.3/TLS_AES_256_GCM_SHA384/P-384/rsa2048/chain3",
    "tls1.3/TLS_CHACHA20_POLY1305_SHA256/ffdhe2048/rsa2048",
    "tls1.3/P-256/ed25519/chain2/mutual",
    "tls1.3/x25519/rsa3072/resume",
]


@pytest.fixture(scope="module")
def measured(mosquitto: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """All profiles measured once by ``bench handshake``'s engine (two handshakes each)."""
    work = tmp_path_factory.mktemp("matrix")
    profiles = [parse_profile(name) for name in PROFILES]
    bench = run_handshake_benchmark(profiles, work, repetitions=2, warmup=0)
    return {r.name: {"profile": r.profile, "samples": r.samples} for r in bench.results}


@pytest.mark.parametrize("name", PROFILES)
def test_profile_negotiates_what_it_claims(measured: dict[str, dict], name: str) -> None:
    profile: TlsProfile = parse_profile(name)
    entry = measured[profile.name]
    for sample in entry["samples"]:
        negotiated = sample.negotiated
        assert negotiated["version"] == profile.version
        if profile.ciphers:
            assert negotiated["cipher"] == profile.ciphers
        if profile.group:
            assert negotiated["group"] == profile.group
        assert negotiated["resumed"] is profile.resumption
        if not profile.resumption:
            assert negotiated["certificate"] == profile.certificate
            assert negotiated["server_certificates_sent"] == profile.chain_length + 1
            assert negotiated["round_trips"] == (1 if profile.version == "1.3" else 2)
        assert negotiated["client_certificate_sent"] is (profile.mutual and not profile.resumption)
        tls = sample.tls
        assert 0 < tls.thread_cpu_ns <= tls.wall_ns + 1_000_000
        assert tls.tcp_bytes_sent > 0 and tls.tcp_bytes_received > 0
        assert tls.tcp_segments_out >= 1 and tls.tcp_retransmissions == 0


def _s_client(
    port: int, ca_file: Path, profile: TlsProfile, certs: object | None = None
) -> dict[str, str]:
    """What ``openssl s_client`` negotiates with the broker, parsed from its summary."""
    command = [
        "openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
        "-CAfile", str(ca_file), "-verify_return_error", "-brief",
        f"-tls1_{profile.version[-1]}",
    ]  # fmt: skip
    if profile.ciphers:
        option = "-cipher" if profile.version == "1.2" else "-ciphersuites"
        command += [option, profile.ciphers]
    if profile.group and profile.group in OPENSSL_GROUP_NAMES:
        groups = OPENSSL_GROUP_NAMES[profile.group]
        if profile.version == "1.2" and profile.certificate == "ecdsa-p256":
            groups += ":P-256"
        command += ["-groups", groups]
    if certs is not None:
        command += ["-cert", str(certs.client_cert), "-key", str(certs.client_key)]
    completed = subprocess.run(command, input="", capture_output=True, text=True, timeout=20)
    text = completed.stdout + completed.stderr
    fields = dict(re.findall(r"^([A-Za-z ]+): (.+)$", text, flags=re.MULTILINE))
    assert "Protocol version" in fields, text
    return fields


# How `openssl s_client -brief` names each group in "Server Temp Key".
_S_CLIENT_GROUP = {"x25519": "X25519", "secp256r1": "prime256v1", "secp384r1": "secp384r1"}


@pytest.mark.parametrize("name", [p for p in PROFILES if "resume" not in p])
def test_openssl_s_client_probe_agrees(
    measured: dict[str, dict], mosquitto: str, tmp_path: Path, name: str
) -> None:
    """Checked by: an independent TLS client against the same broker configuration."""
    if not shutil.which("openssl"):
        pytest.skip("openssl command not installed")
    profile = parse_profile(name)
    recorded = measured[profile.name]["samples"][0].negotiated
    certs = create_certificates(tmp_path / "pki", profile.certificate, profile.chain_length)
    user = BrokerUser.random("probe", read=[], write=[])
    lines = mosquitto_listener_lines(profile, certs.ca_file, certs.server_cert, certs.server_key)
    with MosquittoBroker(
        tmp_path / "broker", [user], tls_lines=lines, openssl_config=broker_openssl_config(profile)
    ) as broker:
        assert broker.listener is not None
        fields = _s_client(
            broker.listener.port, certs.ca_file, profile, certs if profile.mutual else None
        )
    assert fields["Protocol version"] == f"TLSv{recorded['version']}"
    assert fields["Ciphersuite"] == recorded["cipher"]
    peer = fields.get("Peer signature type") or fields.get("Signature type", "")
    signature = recorded["signature_algorithm"] or ""
    if "ed25519" in signature:
        assert peer.lower() == "ed25519"
    elif "pss" in signature:
        assert peer == "RSA-PSS"
    elif "ecdsa" in signature:
        assert peer == "ECDSA"
    temp_key = fields.get("Server Temp Key", "")
    group = recorded["group"]
    if group in _S_CLIENT_GROUP:
        assert _S_CLIENT_GROUP[group] in temp_key.replace("P-256", "prime256v1"), temp_key
    elif group in ("ffdhe2048", "modp2048"):
        assert temp_key.startswith("DH") and "2048" in temp_key, temp_key
    else:
        assert group is None and not temp_key  # static RSA key transport
    if profile.ciphers is None and profile.version == "1.3":
        assert fields["Ciphersuite"].startswith("TLS_")


def test_resumption_cuts_the_handshake_bytes(measured: dict[str, dict]) -> None:
    resumed = measured[parse_profile("tls1.3/x25519/rsa3072/resume").name]["samples"]
    full = measured[parse_profile("tls1.3/TLS_AES_256_GCM_SHA384/P-384/rsa2048/chain3").name][
        "samples"
    ]
    assert all(s.negotiated["resumed"] for s in resumed)
    # No certificate chain: the server's flight shrinks from kilobytes to a few hundred bytes.
    assert max(s.tls.tcp_bytes_received for s in resumed) < 1000
    assert min(s.tls.tcp_bytes_received for s in full) > 3000


def test_mutual_tls_rejects_a_client_without_certificate(mosquitto: str, tmp_path: Path) -> None:
    profile = parse_profile("tls1.3/ecdsa-p256/mutual")
    certs = create_certificates(tmp_path / "pki", "ecdsa-p256")
    user = BrokerUser.random("m", read=[], write=[])
    lines = mosquitto_listener_lines(profile, certs.ca_file, certs.server_cert, certs.server_key)
    with MosquittoBroker(tmp_path / "broker", [user], tls_lines=lines) as broker:
        assert broker.listener is not None
        anonymous = client_context(TlsProfile("1.3", None, "ecdsa-p256"), certs.ca_file)
        address = (broker.listener.host, broker.listener.port)
        with (
            socket.create_connection(address, 5) as raw,
            anonymous.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            # TLS 1.3: the server's verdict on the (absent) certificate arrives after the
            # client's Finished, as an alert on the first read.
            refused = pytest.raises((ssl.SSLError, ConnectionError))
            with refused:
                tls.sendall(b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00")
                assert tls.recv(4) == b""
        reason = str(refused.excinfo.value) if refused.excinfo else ""
        assert "certificate" in reason.lower() or "EOF" in reason, reason
        with_cert = client_context(profile, certs.ca_file, certs.client_cert, certs.client_key)
        with (
            socket.create_connection(address, 5) as raw,
            with_cert.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.sendall(b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00")
            assert tls.recv(4)[:1] == b"\x20"  # a CONNACK (refused: no credentials)


def test_impossible_combination_exits_2_before_anything_starts(tmp_path: Path) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(
        'name = "bad"\nconfigurations = ["tls1.2"]\n'
        '[tls]\nciphers = "ECDHE-ECDSA-AES128-GCM-SHA256"\ncertificate = "rsa2048"\n'
    )
    out = tmp_path / "out"
    result = run_cli_forked("run", str(spec), "--out", str(out))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "certificate = ecdsa-p256" in lines[0], result.stderr
    assert not out.exists()  # no store, no PKI, no broker
    bench = run_cli_forked(
        "bench", "handshake", "--profiles", "tls1.3/ECDHE-RSA-AES128-GCM-SHA256",
        "--out", str(tmp_path / "bench"),
    )  # fmt: skip
    assert bench.returncode == 2 and "TLS 1.3 profile with TLS 1.2" in bench.stderr
    assert not (tmp_path / "bench").exists()


def test_run_records_negotiated_tcp_counts_and_resumption(mosquitto: str, tmp_path: Path) -> None:
    spec = tmp_path / "resume.toml"
    spec.write_text(
        'name = "resume"\nconfigurations = ["tls1.3"]\npayload_bytes = [64]\n'
        "duration_s = 0.5\nrepetitions = 1\n"
        '[tls]\ncertificate = "ed25519"\ngroup = "P-256"\nresumption = true\nmutual = true\n'
    )
    out = tmp_path / "out"
    result = run_cli("run", str(spec), "--out", str(out), "--quiet", "--no-report")
    assert result.returncode == 0, result.stderr + result.stdout
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        status, group = db.execute("select status, tls_group from runs").fetchone()
        details = db.execute(
            "select detail_json from handshakes where phase = 'tls_handshake'"
        ).fetchall()
        priming = db.execute(
            "select count(*) from events where kind = 'tls_priming_connection'"
        ).fetchone()[0]
    assert status == "ok" and group == "secp256r1"
    assert priming == 2  # both agents primed a session, then resumed it
    for (detail,) in details:
        record = json.loads(detail)
        assert record["session_offered"] and record["tcp_bytes_received"] > 0


def test_bench_handshake_cli_target_ci_store_and_report(mosquitto: str, tmp_path: Path) -> None:
    out, document = tmp_path / "bench", tmp_path / "bench.json"
    result = run_cli(
        "bench", "handshake", "--profiles", "tls1.3/x25519/ecdsa-p256,tls1.2/AES256-GCM-SHA384",
        "--target-ci", "25%", "--max-reps", "40", "--json", str(document), "--out", str(out),
        "--quiet",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    profiles = json.loads(document.read_text())["profiles"]
    for profile in profiles:
        statistics = profile["statistics"]
        n = statistics["tls_wall_ns"]["n"]
        assert 5 <= n <= 40
        if n < 40:  # stopped by the target: both intervals narrower than 25 % of the mean
            for metric in ("tls_wall_ns", "tls_cpu_ns"):
                s = statistics[metric]
                assert (s["ci_high"] - s["ci_low"]) / 2 < 0.25 * s["mean"]
        assert statistics["tls_cpu_ns"]["mean"] < statistics["tls_wall_ns"]["mean"]
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute("select cell_label, tls_cipher from runs order by run_order").fetchall()
        # Every measured connection, its three phases in columns of its own row.
        connections = db.execute(
            "select count(*) from handshake_connections where tcp_connect_ns > 0 "
            "and tls_end_ns > tls_start_ns and t_connack_ns > t_ready_ns"
        ).fetchone()[0]
    assert [label for label, _ in rows] == [p["profile"] for p in profiles]
    assert connections == sum(p["repetitions"] for p in profiles)
    report = run_cli_forked("report", str(out), timeout=300)
    assert report.returncode == 0, report.stderr
    assert (out / "report" / "report.html").exists()
    assert "handshake" in (out / "report" / "report.html").read_text().lower()
