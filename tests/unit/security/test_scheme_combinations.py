"""Every ``<key establishment>-<cipher>`` combination, and every key establishment end to end.

Combinations are checked with the key schedule fed a fixed secret (the asymmetric step is the
key establishment's, tested once per establishment below with real keys).
"""

from __future__ import annotations

import os

import pytest

from iotsecbench.errors import SpecError
from iotsecbench.security import resolve_configuration
from iotsecbench.security.key_establishment import (
    AGREEMENTS,
    EmitterKeyExchange,
    ReceiverKeyExchange,
    derive_session,
    message_sizes,
)
from iotsecbench.security.schemes import (
    AuthenticationError,
    MalformedMessageError,
    cipher_names,
    describe_schemes,
    evp,
    get_scheme,
    key_establishment_names,
    scheme_names,
)

ALL = [name for name in scheme_names() if name != "none"]
PSK = b"\x42" * 32


def test_grammar_is_the_product():
    assert len(ALL) == len(cipher_names()) * len(key_establishment_names())
    unsigned = {"psk", "ecdh-p256", "x25519", "ffdhe2048", "dh-sha256", "rsa-oaep",
                "mlkem512", "mlkem768", "mlkem1024", "x25519mlkem768"}  # fmt: skip
    signable = ("x25519", "mlkem512", "mlkem768", "mlkem1024", "x25519mlkem768")
    suites = ("mldsa44", "mldsa65", "ed25519", "ecdsap256")
    signed = {f"{kx}-{suite}" for kx in signable for suite in suites}
    assert set(key_establishment_names()) == unsigned | signed
    for name in ("x25519-chacha20-poly1305", "psk-aes128-gcm", "rsa-oaep-aes256-gcm",
                 "ffdhe2048-aes128-ctr-hmac", "dh-sha256-aes128-ctr-hmac"):  # fmt: skip
        assert name in ALL


@pytest.mark.parametrize("name", ALL)
def test_every_combination_round_trips_with_its_key_schedule(name):
    scheme = get_scheme(name)
    keys, _, _ = derive_session(scheme, b"Z" * 32, b"E" * 32, b"R" * 32, b"N" * 16)
    assert scheme.key_establishment == name.removesuffix("-" + scheme.cipher)
    for direction in (keys.emitter_to_receiver, keys.receiver_to_emitter):
        message = scheme.sealer(direction).seal(b"reading=21.5")
        assert scheme.opener(direction).open(message).plaintext == b"reading=21.5"
    for transport in ("tls1.2", "tls1.3"):
        configuration = resolve_configuration(f"{transport}+{name}")
        assert configuration.scheme.name == name and configuration.transport == transport


@pytest.mark.parametrize("name", ALL)
def test_properties_compose_cipher_and_key_establishment(name):
    properties = get_scheme(name).properties
    assert properties.end_to_end and properties.confidentiality
    assert properties.forward_secrecy == (not name.startswith("psk-"))
    assert properties.integrity == (properties.tag_bytes > 0)
    if not name.startswith("psk-"):
        assert any("man in the middle" in w or "unauthenticated" in w for w in properties.warnings)


def test_keys_differ_between_key_establishments_of_one_cipher():
    # The full scheme name is in every HKDF label: same secret, different schemes, other keys.
    enc_keys = {
        get_scheme(f"{kx}-aes128-gcm").name: derive_session(
            get_scheme(f"{kx}-aes128-gcm"), b"Z" * 32, b"E", b"R", b"N" * 16
        )[0].emitter_to_receiver.enc_key
        for kx in key_establishment_names()
    }
    assert len(set(enc_keys.values())) == len(enc_keys)


def test_describe_lists_every_scheme_with_provenance():
    described = {entry["name"]: entry for entry in describe_schemes()}
    assert set(described) == set(scheme_names())
    entry = described["x25519-chacha20-poly1305"]
    assert entry["cipher"] == "chacha20-poly1305" and entry["key_bits"] == 256
    assert entry["provenance"]["library"] == ("openssl" if evp.AVAILABLE else "cryptography")
    assert entry["wire_format_version"] == 1
    assert described["none"]["cipher"] is None


def exchange(name: str, receiver_psk: bytes | None = PSK, emitter_psk: bytes | None = PSK):
    receiver = ReceiverKeyExchange(name, receiver_psk)
    emitter = EmitterKeyExchange(name, emitter_psk)
    hello = receiver.hello()
    reply = emitter.on_receiver_hello(hello)
    ready, receiver_keys = receiver.on_emitter_message(reply)
    return receiver, emitter, hello, reply, ready, receiver_keys


@pytest.mark.parametrize("kx", list(AGREEMENTS))
def test_each_key_establishment_end_to_end(kx):
    name = f"{kx}-aes128-gcm"
    receiver, emitter, hello, reply, ready, receiver_keys = exchange(name)
    assert emitter.on_ready(ready) == receiver_keys
    assert (len(hello), len(reply), len(ready)) == message_sizes(kx)
    scheme = get_scheme(name)
    e2r = receiver_keys.emitter_to_receiver
    assert scheme.opener(e2r).open(scheme.sealer(e2r).seal(b"x")).plaintext == b"x"
    primitives = {primitive for primitive, _ in receiver.operations() + emitter.operations()}
    assert "hkdf-sha256" in primitives and "hmac-sha256" in primitives


@pytest.mark.parametrize("kx", list(AGREEMENTS))
def test_tampered_emitter_message_fails_key_confirmation(kx):
    name = f"{kx}-chacha20-poly1305"
    receiver, emitter = ReceiverKeyExchange(name, PSK), EmitterKeyExchange(name, PSK)
    reply = bytearray(emitter.on_receiver_hello(receiver.hello()))
    reply[3] ^= 0x01  # inside the session nonce: both derive, but different keys
    ready, _ = receiver.on_emitter_message(bytes(reply))
    with pytest.raises(AuthenticationError):
        emitter.on_ready(ready)


@pytest.mark.parametrize("kx", list(AGREEMENTS))
def test_wrong_sizes_are_malformed(kx):
    name = f"{kx}-aes128-gcm"
    with pytest.raises(MalformedMessageError):
        EmitterKeyExchange(name, PSK).on_receiver_hello(b"\x01" + b"\x02" * 7)
    receiver = ReceiverKeyExchange(name, PSK)
    receiver.hello()
    with pytest.raises(MalformedMessageError):
        receiver.on_emitter_message(b"\x01" + b"\x02" * 7)


@pytest.mark.parametrize("kx", list(AGREEMENTS))
def test_reflected_receiver_value_is_rejected(kx):
    receiver = ReceiverKeyExchange(f"{kx}-aes128-gcm", PSK)
    hello = receiver.hello()
    # a KEM's ciphertext is not the length of its key: refused as malformed before that
    with pytest.raises((AuthenticationError, MalformedMessageError)):
        receiver.on_emitter_message(b"\x01" + os.urandom(16) + hello[1:])


def test_psk_mismatch_fails_key_confirmation():
    _, emitter, _, _, ready, _ = exchange("psk-aes128-gcm", PSK, b"\x43" * 32)
    with pytest.raises(AuthenticationError):
        emitter.on_ready(ready)


def test_psk_is_required_and_long_enough():
    with pytest.raises(SpecError, match="pre-shared key"):
        ReceiverKeyExchange("psk-aes128-gcm")
    with pytest.raises(SpecError, match="pre-shared key"):
        EmitterKeyExchange("psk-aes128-gcm", b"short")


def test_psk_sessions_have_fresh_keys():
    first = exchange("psk-aes128-gcm")[5]
    second = exchange("psk-aes128-gcm")[5]
    assert first.emitter_to_receiver.enc_key != second.emitter_to_receiver.enc_key


@pytest.mark.parametrize("kx", ["x25519", "ffdhe2048"])
def test_invalid_peer_values_are_refused(kx):
    bad = bytes(AGREEMENTS[kx].receiver_bytes)  # all zero: low-order point / y = 0
    with pytest.raises(MalformedMessageError):
        EmitterKeyExchange(f"{kx}-aes128-gcm").on_receiver_hello(b"\x01" + bad)


def test_rsa_oaep_bad_ciphertext_is_one_uniform_error():
    receiver = ReceiverKeyExchange("rsa-oaep-aes256-gcm")
    receiver.hello()
    with pytest.raises(AuthenticationError, match=r"^RSA-OAEP key transport failed$"):
        receiver.on_emitter_message(b"\x01" + os.urandom(16) + os.urandom(256))
