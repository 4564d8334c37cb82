"""The device client's host side without QEMU: the configuration file the firmware reads, the
firmware's output as the host reads it, and what the device builds refuse before anything
runs (exit 2)."""

from __future__ import annotations

import json
import struct

import pytest

from iotsecbench.errors import SpecError
from iotsecbench.security.tls import parse_profile
from iotsecbench.vmcu.client import (
    DEVICE_BUILDS,
    build_of,
    device_problem,
    require_device,
    wrapped_symbols,
)
from iotsecbench.vmcu.device import (
    RECORDS_FILE,
    SECRETS_FILE,
    DeviceConfig,
    explain,
    read_outcome,
    seed_for,
)


def entries(blob: bytes) -> dict[str, bytes]:
    """The configuration file parsed as client/config.c parses it."""
    assert blob.startswith(b"IOTSBDC1")
    at, found = 8, {}
    while blob[at]:
        key_len = blob[at]
        key = blob[at + 1 : at + 1 + key_len].decode()
        at += 1 + key_len
        (length,) = struct.unpack_from("<I", blob, at)
        at += 4
        found[key] = blob[at : at + length]
        assert blob[at + length] == 0  # every value NUL-terminated in place
        at += length + 1
    assert at == len(blob) - 1
    return found


def test_configuration_file_layout():
    config = DeviceConfig(
        seed=bytes(range(32)), client_id="dev", username="u", password="p",
        tls_version="1.3", suites=(0x1301, 0x1302), groups=(0x001D,), ca_pem=b"PEM",
    )  # fmt: skip
    found = entries(config.encode())
    assert found["seed"] == bytes(range(32))
    assert found["suites"] == bytes.fromhex("13011302")
    assert found["groups"] == bytes.fromhex("001d")
    assert found["keep_alive_s"] == struct.pack("<I", 60)
    assert found["ca"] == b"PEM" and found["tls_version"] == b"1.3"
    assert "client_cert" not in found  # no mutual TLS unless both parts are given


def test_seed_is_32_bytes_and_a_function_of_seed_and_repetition():
    with pytest.raises(ValueError, match="32 bytes"):
        DeviceConfig(seed=b"short", client_id="d")
    assert seed_for(1, 0) == seed_for(1, 0) != seed_for(1, 1) != seed_for(2, 1)
    assert len(seed_for(7, 3)) == 32


def test_output_keeps_whole_lines_and_drops_the_secrets(tmp_path):
    lines = [
        {"type": "event", "name": "agent_start"},
        {"type": "count_segment", "index": 0, "event": "m", "mark": "BOOT", "client": 3},
        {"type": "error", "message": "TLS handshake: mbedtls: handshake: error -0x7780"},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines) + '{"type": "even'
    (tmp_path / RECORDS_FILE).write_text(text)
    (tmp_path / SECRETS_FILE).write_text("SERVER_HANDSHAKE_TRAFFIC_SECRET 00ff\n")
    outcome = read_outcome(tmp_path)
    assert [r["type"] for r in outcome.records] == ["event", "error"]
    assert outcome.segments[0]["mark"] == "BOOT"
    assert outcome.secrets == {"SERVER_HANDSHAKE_TRAFFIC_SECRET": bytes.fromhex("00ff")}
    assert not (tmp_path / SECRETS_FILE).exists()  # read once, never kept
    assert "FATAL_ALERT" in outcome.error
    assert not outcome.finished
    assert outcome.last_segment() == "before its first segment"
    (tmp_path / "device-progress.txt").write_text("5 m CLIENT_HELLO\n6 w 185\n")
    assert read_outcome(tmp_path).last_segment() == "in segment 6, begun by wrote 185 B"


def test_explain_names_mbedtls_codes_it_knows():
    assert explain("x: error -0x2700").endswith("does not verify)")
    assert explain("x: error -0x1234") == "x: error -0x1234"


@pytest.mark.parametrize(
    ("stack", "profile", "fragment"),
    [
        ("mbedtls", "tls1.3/x25519mlkem768/ecdsa-p256", "offers the groups"),
        ("mbedtls", "tls1.3/x25519/mldsa44", "certificates, not mldsa44"),
        ("wolfssl", "tls1.3/x25519/ed25519", "certificates, not ed25519"),
        ("wolfssl", "tls1.3/x25519/ecdsa-p256/resume", "drop 'resume'"),
        ("wolfssl", "tls1.3/x25519/mldsa44/mutual", "drop 'mutual'"),
        ("mbedtls", "tls1.3/TLS_AES_128_CCM_SHA256/ecdsa-p256", "not TLS_AES_128_CCM_SHA256"),
        ("mbedtls", "tls1.2/ECDHE-ECDSA-AES128-SHA256/ecdsa-p256", "AES-GCM and ChaCha20"),
        ("mbedtls", "tls1.2/ffdhe2048/rsa2048", None),  # refused by the profile itself
        ("openssl", "tls1.3/x25519/ecdsa-p256", "runs on mbedtls or wolfssl"),
    ],
)
def test_what_the_device_builds_refuse(stack, profile, fragment):
    try:
        parsed = parse_profile(profile)
    except SpecError:
        assert fragment is None
        return
    problem = device_problem(stack, parsed)
    assert problem is not None and fragment in problem
    with pytest.raises(SpecError, match="device client"):
        require_device(stack, [parsed])


@pytest.mark.parametrize(
    "profile",
    ["tls1.2/rsa2048", "tls1.2/ecdsa-p256", "tls1.3/x25519/rsa3072", "tls1.3/P-256/ecdsa-p256",
     "tls1.3/x25519/ecdsa-p256/mutual", "tls1.2/ECDHE-RSA-CHACHA20-POLY1305/rsa2048"],
)  # fmt: skip
def test_what_both_device_builds_run(profile):
    for stack in ("mbedtls", "wolfssl"):
        assert device_problem(stack, parse_profile(profile)) is None


def test_builds_and_their_wrapped_primitives():
    assert build_of("mbedtls", None) == "plain"
    assert build_of("wolfssl", parse_profile("tls1.3/x25519/ecdsa-p256")) == "wolfssl"
    assert build_of("wolfssl", parse_profile("tls1.3/x25519mlkem768/mldsa44")) == "wolfssl-pq"
    assert wrapped_symbols(DEVICE_BUILDS["plain"]) == []
    mbedtls = wrapped_symbols(DEVICE_BUILDS["mbedtls"])
    assert "mbedtls_ecdsa_verify" in mbedtls and "mbedtls_sha256_update" in mbedtls
    wolfssl = wrapped_symbols(DEVICE_BUILDS["wolfssl-pq"])
    assert "wc_MlKemKey_Decapsulate" in wolfssl and "wc_MlDsaKey_VerifyCtx" in wolfssl
    assert len(set(mbedtls)) == len(mbedtls) and len(set(wolfssl)) == len(wolfssl)


def test_doctor_says_per_target_whether_the_client_can_run(monkeypatch):
    from iotsecbench.vmcu import build as vmcu_build
    from iotsecbench.workflows.doctor import check_device_client

    monkeypatch.setattr(vmcu_build.shutil, "which", lambda tool: None)
    checks = check_device_client()
    assert [c.name for c in checks] == ["Device client on rv32imc", "Device client on cortex-m4"]
    for check in checks:
        assert not check.ok and "apt-get install" in check.detail
        assert "bench handshake --target" in check.consequence
        assert "run --target" in check.consequence
