"""The stack factor's pure parts: what each device stack refuses, the offer in IANA numbers,
and the negotiated parameters read back from handshakes the native agent recorded on the wire
(tests/data/native: an mbedTLS TLS 1.2 and a wolfSSL TLS 1.3 connection to mosquitto, and a
post-quantum one of wolfSSL 5.9.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from iotsecbench.agents.config import AgentConfig, TlsClientFiles
from iotsecbench.agents.native import Footprint, translate
from iotsecbench.agents.records import read_records
from iotsecbench.security.key_establishment import EmitterKeyExchange, ReceiverKeyExchange
from iotsecbench.security.schemes import get_scheme
from iotsecbench.security.tls import parse_profile, verify_negotiated
from iotsecbench.security.tls.stacks import (
    group_ids,
    stack_problem,
    suite_bits,
    suite_ids,
    suite_name,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "native"


@pytest.mark.parametrize(
    ("stack", "profile", "scheme", "expected"),
    [
        ("openssl", "tls1.3/x25519/ed25519", "none", None),
        ("wolfssl", "tls1.3/x25519/ed25519", "none", None),
        ("mbedtls", "tls1.2/x25519/ecdsa-p256", "none", None),
        ("mbedtls", "tls1.3/x25519/ecdsa-p256", "none", "speaks TLS 1.2 only"),
        ("mbedtls", "tls1.2/ed25519", "none", "no Ed25519"),
        ("wolfssl", "tls1.2/rsa2048/resume", "none", None),
        ("wolfssl", None, "ecdh-p256-aes128-gcm", None),
        ("mbedtls", "tls1.2/x25519/ecdsa-p256", "psk-chacha20-poly1305", None),
        ("mbedtls", None, "x25519-aes128-cbc", None),
        ("wolfssl", None, "rsa-oaep-aes128-gcm", "not rsa-oaep-aes128-gcm"),
        ("mbedtls", None, "x25519-ascon128v12", "not x25519-ascon128v12"),
        ("mbedtls", None, "ecdh-p256", "not ecdh-p256"),
        ("mbedtls", None, "none", None),
        ("boringssl", None, "none", "unknown TLS stack"),
        # wolfSSL 5.9.4 built from source: the post-quantum profiles; Debian's builds point to it
        ("wolfssl-5.9", "tls1.3/x25519mlkem768/mldsa44", "none", None),
        ("wolfssl-5.9", "tls1.3/mlkem1024/mldsa65", "x25519-aes128-gcm", None),
        ("wolfssl-5.9", "tls1.2/x25519/ed25519", "psk-chacha20-poly1305", None),
        ("wolfssl", "tls1.3/x25519mlkem768/mldsa44", "none", "use stack wolfssl-5.9"),
        ("mbedtls", "tls1.3/x25519/mldsa44", "none", "no ML-KEM or ML-DSA"),
        ("wolfssl-5.9", None, "mlkem768-aes128-gcm", "not mlkem768-aes128-gcm"),
        # OpenSSL 3.5, the post-quantum stacks' broker, rates an 8-byte tag at 64 bits
        ("openssl-3.5", "tls1.3/TLS_AES_128_CCM_8_SHA256/ecdsa-p256", "none", "security level 0"),
        ("wolfssl-5.9", "tls1.2/ECDHE-ECDSA-AES128-CCM8/ecdsa-p256", "none", "security level 0"),
        ("wolfssl-5.9", "tls1.3/TLS_AES_128_CCM_8_SHA256/ecdsa-p256/seclevel0", "none", None),
        ("wolfssl", "tls1.3/TLS_AES_128_CCM_8_SHA256/ecdsa-p256", "none", None),
    ],
)
def test_each_stack_refuses_what_it_cannot_do(
    stack: str, profile: str | None, scheme: str, expected: str | None
) -> None:
    parsed = parse_profile(profile) if profile else None
    problem = stack_problem(stack, parsed, scheme=scheme)
    assert (problem is None) if expected is None else (expected in str(problem)), problem


def test_the_native_transports_and_qos() -> None:
    assert stack_problem("wolfssl", None, transport="tcp") is None
    assert "mqtt and tcp only" in str(stack_problem("wolfssl", None, transport="coap"))
    assert "QoS 0 and 1 only" in str(stack_problem("mbedtls", None, qos=2))
    assert stack_problem("mbedtls", None, qos=2, transport="tcp") is None  # no QoS over tcp
    assert stack_problem("openssl", None, qos=2) is None
    tls13 = parse_profile("tls1.3/x25519/ecdsa-p256")
    assert "secret callback" in str(stack_problem("wolfssl", tls13, key_log=True))
    assert stack_problem("wolfssl", tls13) is None
    assert stack_problem("mbedtls", parse_profile("tls1.2/ecdsa-p256"), key_log=True) is None
    # wolfssl-5.9 has the secret callbacks; a resumed TLS 1.2 session derives no master secret
    assert stack_problem("wolfssl-5.9", tls13, key_log=True) is None
    assert stack_problem("wolfssl-5.9", parse_profile("tls1.2/ecdsa-p256"), key_log=True) is None
    resumed = parse_profile("tls1.2/ecdsa-p256/resume")
    assert "resumed session" in str(stack_problem("wolfssl-5.9", resumed, key_log=True))


def test_the_offer_in_iana_numbers() -> None:
    tls12 = parse_profile("tls1.2/ECDHE-ECDSA-AES128-GCM-SHA256/x25519/ecdsa-p256")
    assert suite_ids(tls12) == [0xC02B]
    # RFC 8422 §5.1: an ECDSA P-256 server needs P-256 among the client's curves in TLS 1.2.
    assert group_ids(tls12) == [29, 23]
    tls13 = parse_profile("tls1.3/TLS_AES_128_GCM_SHA256+TLS_CHACHA20_POLY1305_SHA256/P-256")
    assert suite_ids(tls13) == [0x1301, 0x1303] and group_ids(tls13) == [23]
    assert suite_ids(parse_profile("tls1.2/rsa2048")) == []  # the stack's own default list
    assert group_ids(parse_profile("tls1.2/modp2048/rsa2048/DHE-RSA-AES256-GCM-SHA384")) == []


def test_the_post_quantum_offer_in_iana_numbers() -> None:
    """draft-ietf-tls-ecdhe-mlkem and draft-ietf-tls-mlkem, as OpenSSL 3.5 and wolfSSL 5.9
    number them."""
    expected = {
        "x25519mlkem768": 0x11EC, "secp256r1mlkem768": 0x11EB, "secp384r1mlkem1024": 0x11ED,
        "mlkem512": 0x0200, "mlkem768": 0x0201, "mlkem1024": 0x0202,
    }  # fmt: skip
    for group, code in expected.items():
        assert group_ids(parse_profile(f"tls1.3/{group}/mldsa44")) == [code], group


def test_suite_names_are_openssls() -> None:
    assert suite_name(0xC02B) == "ECDHE-ECDSA-AES128-GCM-SHA256"
    assert suite_name(0x1303) == "TLS_CHACHA20_POLY1305_SHA256"
    assert suite_name(0xFFFE) == "suite-0xfffe"


def test_suite_bits_for_a_stack_that_does_not_say() -> None:
    assert (suite_bits(0x1301), suite_bits(0x1302), suite_bits(0x1305)) == (128, 256, 128)
    assert suite_bits(0xC02B) == 128 and suite_bits(0x009D) == 256  # AES256-GCM-SHA384
    assert suite_bits(0xFFFE) == 0


def test_an_mbedtls_tls12_handshake_read_from_the_wire() -> None:
    negotiated = translate.negotiated(read_records(DATA / "mbedtls-tls12-ecdsa-p256.jsonl"))
    assert negotiated is not None
    assert (negotiated.version, negotiated.cipher, negotiated.group) == (
        "1.2",
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "x25519",
    )
    # The ServerKeyExchange's signature and the Certificate message, both in the clear.
    assert negotiated.signature_algorithm == "ecdsa_secp256r1_sha256"
    assert negotiated.certificate == "ecdsa-p256" and negotiated.server_certificates_sent == 2
    assert negotiated.round_trips == 2 and not negotiated.hello_retry
    verify_negotiated(parse_profile("tls1.2/x25519/ecdsa-p256"), negotiated)


def test_a_wolfssl_tls13_handshake_read_from_the_wire() -> None:
    negotiated = translate.negotiated(read_records(DATA / "wolfssl-tls13-ecdsa-p256.jsonl"))
    assert negotiated is not None
    assert (negotiated.version, negotiated.cipher, negotiated.group) == (
        "1.3",
        "TLS_AES_256_GCM_SHA384",
        "x25519",
    )
    # Offered no group, wolfSSL's default key share was not the server's choice: the
    # server asked again (HelloRetryRequest), one more round trip.
    assert negotiated.hello_retry and negotiated.round_trips == 2
    # After the ServerHello everything is protected: the chain comes from the stack, the
    # CertificateVerify's algorithm stays unknown.
    assert negotiated.certificate == "ecdsa-p256" and negotiated.server_certificates_sent == 2
    assert negotiated.signature_algorithm is None
    assert ("protected", 897) in negotiated.handshake_messages_received
    verify_negotiated(parse_profile("tls1.3/x25519/ecdsa-p256"), negotiated)


def test_a_wolfssl_59_post_quantum_handshake_read_from_the_wire() -> None:
    """The native agent on wolfSSL 5.9.4 against mosquitto on OpenSSL 3.5.5 (recorded with
    ``iotsecbench run --configs tls1.3/x25519mlkem768/mldsa44 --stack wolfssl-5.9``): the
    hybrid group from the ServerHello's key share, the ML-DSA-44 chain from the stack."""
    records = read_records(DATA / "wolfssl59-tls13-x25519mlkem768-mldsa44.jsonl")
    negotiated = translate.negotiated(records)
    assert negotiated is not None
    assert (negotiated.version, negotiated.cipher, negotiated.group) == (
        "1.3", "TLS_AES_256_GCM_SHA384", "X25519MLKEM768",
    )  # fmt: skip
    assert negotiated.cipher_bits == 256  # the build cannot say: the suite's (suite_bits)
    assert negotiated.certificate == "mldsa44" and negotiated.server_certificates_sent == 2
    assert not negotiated.hello_retry and negotiated.round_trips == 1
    # The ClientHello carries the 1,216-byte hybrid key share (ML-KEM-768 key + X25519), the
    # ServerHello the 1,120-byte answer (ciphertext + X25519), both in the clear.
    assert negotiated.handshake_messages_sent[0][0] == "client_hello"
    assert negotiated.handshake_messages_sent[0][1] > 1216 + 4
    assert negotiated.handshake_messages_received[0] == ("server_hello", 1178)
    verify_negotiated(parse_profile("tls1.3/x25519mlkem768/mldsa44"), negotiated)
    for other in ("tls1.3/mlkem768/mldsa44", "tls1.3/x25519mlkem768/mldsa65"):
        with pytest.raises(ValueError, match=r"MLKEM768|mldsa65"):
            verify_negotiated(parse_profile(other), negotiated)


def test_completed_records_carry_what_the_python_agents_log() -> None:
    records = read_records(DATA / "mbedtls-tls12-ecdsa-p256.jsonl")
    records += [
        {"type": "handshake", "phase": "mqtt_connect", "t_start_ns": 10, "t_end_ns": 20},
        {"type": "message", "seq": 0, "wire_bytes": 256, "t_sealed_ns": 30},
    ]
    profile = parse_profile("tls1.2/x25519/ecdsa-p256")
    config = AgentConfig(
        role="emitter", run_id="r", configuration="tls1.2", host="h", port=1, username="u",
        password="p", topic_prefix="iotsb/0123456789ab", qos=1,
        tls=TlsClientFiles(profile.to_dict(), "ca.pem"),
    )  # fmt: skip
    completed, problem = translate.complete(records, config, Footprint(1000, 20, 30))
    assert problem is None
    kinds = [r for r in completed if r["type"] in ("negotiated", "operation", "counters")]
    primitives = {(r.get("primitive"), r.get("amount")) for r in kinds if r["type"] == "operation"}
    assert ("mqtt-packet", 2) in primitives  # CONNECT + CONNACK; PUBLISH + PUBACK
    assert ("x25519-keygen", 1) in primitives and ("ecdsa-p256-verify", 1) in primitives
    assert any(p == "aes-gcm" for p, _ in primitives)  # the record protecting the PUBLISH
    counters = {r["name"]: r["value"] for r in kinds if r["type"] == "counters"}
    assert counters["footprint_text_bytes"] == 1000
    # The profile asks for P-256: the check fails the run, naming the difference.
    wrong = AgentConfig(**{**config.__dict__, "fault": "expect-group=secp256r1"})
    assert "secp256r1" in str(translate.complete(records, wrong, Footprint(1, 1, 1))[1])


def test_a_native_schemes_operations_are_the_python_agents() -> None:
    """The native agent times its key exchange and seals; the operations the energy model
    prices are the protocol's, the very lists the Python agents log."""
    scheme = "x25519-aes128-gcm"
    config = AgentConfig(
        role="emitter", run_id="r", configuration=scheme, host="h", port=1, username="u",
        password="p", topic_prefix="iotsb/r", payload_bytes=256, qos=1, stack="mbedtls",
    )  # fmt: skip
    records = [
        {"type": "handshake", "phase": "key_exchange", "t_start_ns": 5, "t_end_ns": 9},
        {"type": "message", "seq": 0, "payload_bytes": 256, "wire_bytes": 282,
         "t_created_ns": 10, "t_sealed_ns": 11, "t_published_ns": 12},
    ]  # fmt: skip
    completed, problem = translate.complete(records, config, Footprint(1, 2, 3))
    operations = [(r["t_ns"], r["primitive"], r["amount"]) for r in completed[2:]
                  if r["type"] == "operation"]  # fmt: skip
    exchange, receiver = EmitterKeyExchange(scheme, None), ReceiverKeyExchange(scheme, None)
    ready, _ = receiver.on_emitter_message(exchange.on_receiver_hello(receiver.hello()))
    exchange.on_ready(ready)
    assert problem is None
    assert [(5, p, a) for p, a in exchange.operations()] == [
        o for o in operations if o[0] == 5 and o[1] != "mqtt-packet"
    ]
    assert [(10, p, a) for p, a in get_scheme(scheme).seal_operations(256)] == [
        o for o in operations if o[0] == 10
    ]
