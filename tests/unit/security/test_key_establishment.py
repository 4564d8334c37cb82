"""Key establishment: both state machines end to end, tampering, invalid keys, HKDF vector."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from iotsecbench.errors import SpecError
from iotsecbench.security.key_establishment import (
    EMITTER_MESSAGE_BYTES,
    READY_BYTES,
    RECEIVER_HELLO_BYTES,
    EmitterKeyExchange,
    ReceiverKeyExchange,
    derive_session,
    export_key_log_lines,
    hkdf_label,
    hkdf_sha256,
)
from iotsecbench.security.schemes import (
    AuthenticationError,
    MalformedMessageError,
    SchemeError,
    get_scheme,
)

GCM = "ecdh-p256-aes128-gcm"


def test_both_sides_derive_equal_separated_keys(key_exchange):
    receiver_keys, emitter_keys = key_exchange(GCM)
    assert receiver_keys == emitter_keys
    e2r, r2e = emitter_keys.emitter_to_receiver, emitter_keys.receiver_to_emitter
    assert (e2r.direction, r2e.direction) == ("e2r", "r2e")
    assert e2r.session_id == r2e.session_id and len(e2r.session_id) == 8
    secrets = [e2r.enc_key, e2r.mac_key, e2r.nonce_prefix, r2e.enc_key, r2e.mac_key]
    assert len(set(secrets)) == len(secrets)  # every purpose and direction has its own key
    assert (len(e2r.enc_key), len(e2r.mac_key), len(e2r.nonce_prefix)) == (16, 32, 4)
    # The derived keys work in both directions.
    scheme = get_scheme(GCM)
    for keys in (e2r, r2e):
        assert scheme.opener(keys).open(scheme.sealer(keys).seal(b"hi")).plaintext == b"hi"


def test_sessions_differ(key_exchange):
    first, _ = key_exchange(GCM)
    second, _ = key_exchange(GCM)
    assert first.emitter_to_receiver.enc_key != second.emitter_to_receiver.enc_key
    assert first.emitter_to_receiver.session_id != second.emitter_to_receiver.session_id


def test_message_sizes_and_operations():
    receiver, emitter = ReceiverKeyExchange(GCM), EmitterKeyExchange(GCM)
    hello = receiver.hello()
    assert hello == receiver.hello()  # republished retained: same bytes, one keygen
    emitter_message = emitter.on_receiver_hello(hello)
    ready, _ = receiver.on_emitter_message(emitter_message)
    emitter.on_ready(ready)
    assert (len(hello), len(emitter_message), len(ready)) == (
        RECEIVER_HELLO_BYTES,
        EMITTER_MESSAGE_BYTES,
        READY_BYTES,
    )
    assert hello[0] == emitter_message[0] == ready[0] == 1
    expected = [
        ("ecdh-p256-keygen", 1),
        ("ecdh-p256-derive", 1),
        ("hkdf-sha256", 8),
        ("hmac-sha256", RECEIVER_HELLO_BYTES + EMITTER_MESSAGE_BYTES),
    ]
    assert receiver.operations() == expected
    assert emitter.operations() == expected


@pytest.mark.parametrize("position", [0, 1, READY_BYTES - 1])
def test_tampered_ready_is_an_authentication_error(position):
    receiver, emitter = ReceiverKeyExchange(GCM), EmitterKeyExchange(GCM)
    ready, _ = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
    tampered = bytearray(ready)
    tampered[position] ^= 0x01
    expected = MalformedMessageError if position == 0 else AuthenticationError  # byte 0: version
    with pytest.raises(expected):
        emitter.on_ready(bytes(tampered))


def test_tampered_emitter_message_fails_confirmation():
    receiver, emitter = ReceiverKeyExchange(GCM), EmitterKeyExchange(GCM)
    message = bytearray(emitter.on_receiver_hello(receiver.hello()))
    message[5] ^= 0x01  # inside the session nonce: both derive, but different keys
    ready, _ = receiver.on_emitter_message(bytes(message))
    with pytest.raises(AuthenticationError):
        emitter.on_ready(ready)


def test_scheme_mismatch_fails_confirmation():
    receiver, emitter = ReceiverKeyExchange(GCM), EmitterKeyExchange("ecdh-p256-aes128-cbc")
    ready, _ = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
    with pytest.raises(AuthenticationError):
        emitter.on_ready(ready)


def _public_point(x: int, y: int) -> bytes:
    return b"\x04" + x.to_bytes(32, "big") + y.to_bytes(32, "big")


@pytest.mark.parametrize(
    "public_key",
    [
        _public_point(1, 1),  # not on the curve (invalid-curve attack)
        _public_point(0, 0),  # "point at infinity" encoding
        b"\x04" + b"\xff" * 64,  # coordinates >= p
        b"\x02" + b"\x11" * 32 + b"\x00" * 32,  # compressed prefix: not allowed
        b"\x04" + b"\x11" * 20,  # too short
    ],
)
def test_invalid_public_keys_are_rejected(public_key):
    emitter = EmitterKeyExchange(GCM)
    with pytest.raises(MalformedMessageError):
        emitter.on_receiver_hello(b"\x01" + public_key)
    receiver = ReceiverKeyExchange(GCM)
    receiver.hello()
    with pytest.raises(MalformedMessageError):
        receiver.on_emitter_message(b"\x01" + b"n" * 16 + public_key)


def test_reflected_public_key_is_rejected():
    receiver = ReceiverKeyExchange(GCM)
    hello = receiver.hello()
    with pytest.raises(AuthenticationError):
        receiver.on_emitter_message(b"\x01" + b"n" * 16 + hello[1:])


def test_valid_foreign_point_is_accepted():
    point = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    )
    assert len(EmitterKeyExchange(GCM).on_receiver_hello(b"\x01" + point)) == 82


def test_state_machine_order_is_enforced():
    emitter = EmitterKeyExchange(GCM)
    with pytest.raises(SchemeError):
        emitter.on_ready(b"\x01" + b"\0" * 32)
    receiver = ReceiverKeyExchange(GCM)
    with pytest.raises(SchemeError):
        receiver.on_emitter_message(b"\x01" + b"\0" * 81)  # before hello()


def test_schemes_without_key_establishment_are_refused():
    with pytest.raises(SpecError):
        ReceiverKeyExchange("none")
    with pytest.raises(SpecError, match="did you mean"):
        EmitterKeyExchange("ecdh-p256-aes128-gmc")


def test_secrets_never_in_repr():
    receiver, emitter = ReceiverKeyExchange(GCM), EmitterKeyExchange(GCM)
    _ready, keys = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
    text = " ".join([repr(receiver), repr(emitter), repr(keys), str(keys)])
    for direction_keys in (keys.emitter_to_receiver, keys.receiver_to_emitter):
        assert direction_keys.enc_key.hex() not in text
        assert direction_keys.mac_key.hex() not in text
    # The explicit key log is the one place key hex appears (opt-in, for decryption tools).
    log = "\n".join(export_key_log_lines(keys))
    assert keys.emitter_to_receiver.enc_key.hex() in log


def test_hkdf_rfc5869_test_case_1():
    # Source: RFC 5869, Appendix A.1 "Test Case 1" (Basic test case with SHA-256).
    ikm = bytes.fromhex("0b" * 22)
    salt = bytes.fromhex("000102030405060708090a0b0c")
    info = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")
    okm = bytes.fromhex(
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )
    assert hkdf_sha256(ikm, salt, info, 42) == okm


def test_hkdf_labels():
    assert hkdf_label(GCM, "e2r", "enc") == b"iotsb/v1/ecdh-p256-aes128-gcm/e2r/enc"


def test_key_schedule_matches_the_documented_labels():
    # Recompute with pyca's HKDF directly, as docs/wire-format.md tells an outside program to.
    shared, emitter_public, receiver_public, nonce = b"Z" * 32, b"E" * 65, b"R" * 65, b"N" * 16
    keys, confirm_key, invocations = derive_session(
        get_scheme(GCM), shared, emitter_public, receiver_public, nonce
    )

    def documented(label: str, length: int) -> bytes:
        return HKDF(
            algorithm=hashes.SHA256(),
            length=length,
            salt=emitter_public + receiver_public + nonce,
            info=f"iotsb/v1/{GCM}/{label}".encode(),
        ).derive(shared)

    assert invocations == 8
    assert keys.emitter_to_receiver.enc_key == documented("e2r/enc", 16)
    assert keys.receiver_to_emitter.mac_key == documented("r2e/mac", 32)
    assert keys.receiver_to_emitter.nonce_prefix == documented("r2e/nonce", 4)
    assert keys.emitter_to_receiver.session_id == documented("session/id", 8)
    assert confirm_key == documented("r2e/confirm", 32)
