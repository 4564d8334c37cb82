"""Payload schemes: round trips, tampering, truncation, wrong keys, replay window, vectors."""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from hypothesis import given, settings
from hypothesis import strategies as st

from iotsecbench.errors import SpecError
from iotsecbench.security.key_establishment import SessionKeys
from iotsecbench.security.schemes import (
    AuthenticationError,
    DirectionKeys,
    MalformedMessageError,
    NonceExhaustedError,
    ReplayError,
    describe_schemes,
    evp,
    get_scheme,
    scheme_names,
)
from iotsecbench.security.schemes.base import MAX_SEQ, ReplayWindow

GCM = "ecdh-p256-aes128-gcm"
CBC = "ecdh-p256-aes128-cbc"
SIZES = [0, 1, 15, 16, 17, 64, 255, 256, 1024, 4096, 65536]


def keys_for(name: str, gcm_keys: SessionKeys, cbc_keys: SessionKeys) -> SessionKeys | None:
    return {GCM: gcm_keys, CBC: cbc_keys}.get(name)


@pytest.mark.parametrize("name", [GCM, CBC, "none"])
@pytest.mark.parametrize("size", SIZES)
def test_round_trip_default_schemes(name, size, gcm_keys, cbc_keys):
    # Every other scheme: test_scheme_library.py (per cipher) and test_scheme_combinations.py.
    scheme = get_scheme(name)
    session = keys_for(name, gcm_keys, cbc_keys)
    keys = session.emitter_to_receiver if session else None
    plaintext = os.urandom(size)
    message = scheme.sealer(keys).seal(plaintext)
    assert len(message) - size == scheme.expected_overhead_bytes(size)
    opened = scheme.opener(keys).open(message)
    assert opened.plaintext == plaintext
    assert opened.seq == (0 if scheme.properties.replay_protection else None)
    if scheme.properties.confidentiality and size >= 16:
        assert plaintext not in message


def test_none_is_identity():
    scheme = get_scheme("none")
    assert scheme.sealer(None).seal(b"abc") == b"abc"
    assert scheme.expected_overhead_bytes(100) == 0
    assert scheme.seal_operations(100) == []
    properties = scheme.properties
    assert properties.authentication == "none" and properties.tag_bytes == 0
    assert not any(
        getattr(properties, flag)
        for flag in (
            "confidentiality",
            "integrity",
            "replay_protection",
            "end_to_end",
            "forward_secrecy",
        )
    )


def test_gcm_wire_layout(gcm_keys):
    keys = gcm_keys.emitter_to_receiver
    sealer = get_scheme(GCM).sealer(keys)
    sealer.seal(b"first")
    message = sealer.seal(b"x" * 64)
    assert message[0] == 1 and message[1] == 2
    assert int.from_bytes(message[2:10], "big") == 1
    assert len(message) == 10 + 64 + 16


def test_every_bit_flip_of_gcm_message_is_rejected(gcm_keys):
    keys = gcm_keys.emitter_to_receiver
    scheme = get_scheme(GCM)
    message = scheme.sealer(keys).seal(os.urandom(64))
    assert len(message) == 90
    for bit in range(8 * len(message)):
        tampered = bytearray(message)
        tampered[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(AuthenticationError):
            scheme.opener(keys).open(bytes(tampered))


def test_gcm_seq_header_flip_after_traffic_is_rejected(gcm_keys):
    # With a window in use, a flipped seq is refused either as a replay or as forged.
    keys = gcm_keys.emitter_to_receiver
    scheme = get_scheme(GCM)
    sealer, opener = scheme.sealer(keys), scheme.opener(keys)
    messages = [sealer.seal(b"m%d" % i) for i in range(10)]
    for message in messages[:9]:
        opener.open(message)
    for bit in range(64):
        tampered = bytearray(messages[9])
        tampered[2 + bit // 8] ^= 1 << (bit % 8)
        with pytest.raises((AuthenticationError, ReplayError)):
            opener.open(bytes(tampered))
    assert opener.open(messages[9]).seq == 9  # the window did not move on forgeries


def test_gcm_truncation_at_every_length(gcm_keys):
    keys = gcm_keys.emitter_to_receiver
    scheme = get_scheme(GCM)
    message = scheme.sealer(keys).seal(os.urandom(64))
    minimum = scheme.header_bytes + scheme.tag_bytes
    for length in range(len(message)):
        truncated = message[:length]
        # Shorter than header + tag cannot be parsed; anything longer parses as a shorter
        # message whose tag then fails (there is no length field to contradict).
        expected = MalformedMessageError if length < minimum else AuthenticationError
        with pytest.raises(expected):
            scheme.opener(keys).open(truncated)


def test_cbc_impossible_lengths_are_malformed(cbc_keys):
    keys = cbc_keys.emitter_to_receiver
    scheme = get_scheme(CBC)
    message = scheme.sealer(keys).seal(os.urandom(64))
    assert len(message) == 2 + 16 + 80
    for length in range(len(message)):
        body = length - 18
        if body >= 16 and body % 16 == 0:
            continue  # whole blocks: may decrypt to garbage (no MAC), see the CBC tests below
        with pytest.raises(MalformedMessageError):
            scheme.opener(keys).open(message[:length])


def test_cbc_is_malleable_and_replayable(cbc_keys):
    # The stability study's hybrid, faithfully: tampering and replays go undetected.
    keys = cbc_keys.emitter_to_receiver
    scheme = get_scheme(CBC)
    plaintext = b"temperature=21.5;" + b"." * 31
    message = bytearray(scheme.sealer(keys).seal(plaintext))
    message[2] ^= 0x01  # first IV byte flips the first plaintext byte
    opener = scheme.opener(keys)
    assert opener.open(bytes(message)).plaintext == b"uemperature=21.5;" + b"." * 31
    assert opener.open(bytes(message)).plaintext.startswith(b"u")  # replay accepted
    assert "no integrity, no replay protection" in " ".join(scheme.properties.warnings)


def test_cbc_padding_error_is_malformed(cbc_keys):
    keys = cbc_keys.emitter_to_receiver
    scheme = get_scheme(CBC)
    message = bytearray(scheme.sealer(keys).seal(b"x" * 15))  # one block, pad byte 0x01
    message[2 + 15] ^= 0x80  # the IV's last byte flips the pad byte to 0x81: invalid
    with pytest.raises(MalformedMessageError):
        scheme.opener(keys).open(bytes(message))


@pytest.mark.parametrize("name", [GCM])
def test_wrong_keys_are_rejected(name, gcm_keys):
    scheme = get_scheme(name)
    other = replace(gcm_keys.emitter_to_receiver, enc_key=os.urandom(16))
    message = scheme.sealer(gcm_keys.emitter_to_receiver).seal(b"payload")
    with pytest.raises(AuthenticationError):
        scheme.opener(other).open(message)
    # The other direction's keys of the same session.
    with pytest.raises(AuthenticationError):
        scheme.opener(gcm_keys.receiver_to_emitter).open(message)
    # Same key, but labelled as the other direction: the label is in the AAD.
    relabelled = replace(gcm_keys.emitter_to_receiver, direction="r2e")
    with pytest.raises(AuthenticationError):
        scheme.opener(relabelled).open(message)
    # Same keys, other session id.
    other_session = replace(gcm_keys.emitter_to_receiver, session_id=b"\0" * 8)
    with pytest.raises(AuthenticationError):
        scheme.opener(other_session).open(message)


def test_cbc_message_is_not_a_gcm_message(cbc_keys, gcm_keys):
    cbc_message = get_scheme(CBC).sealer(cbc_keys.emitter_to_receiver).seal(b"x" * 40)
    with pytest.raises(AuthenticationError):
        get_scheme(GCM).opener(gcm_keys.emitter_to_receiver).open(cbc_message)


@pytest.mark.parametrize("garbage", [b"", b"\x01", b"\x00" * 25, b"\xff" * 200, "text", None])
def test_garbage_never_leaks_builtin_exceptions(garbage, gcm_keys, cbc_keys):
    for name, session in ((GCM, gcm_keys), (CBC, cbc_keys)):
        with pytest.raises((MalformedMessageError, AuthenticationError)):
            get_scheme(name).opener(session.emitter_to_receiver).open(garbage)


def test_replay_rejected_and_reorder_within_window_accepted_once(gcm_keys):
    keys = gcm_keys.emitter_to_receiver
    scheme = get_scheme(GCM)
    sealer, opener = scheme.sealer(keys), scheme.opener(keys)
    messages = [sealer.seal(b"%d" % i) for i in range(200)]
    opener.open(messages[0])
    with pytest.raises(ReplayError) as duplicate:
        opener.open(messages[0])
    assert duplicate.value.reason == "duplicate"
    opener.open(messages[100])
    # Reordered inside the window (100 - 63 .. 99): accepted exactly once.
    assert opener.open(messages[40]).seq == 40
    with pytest.raises(ReplayError):
        opener.open(messages[40])
    # 100 - 64 = 36 is just outside the 64-entry window.
    with pytest.raises(ReplayError) as too_old:
        opener.open(messages[36])
    assert too_old.value.reason == "too-old"
    assert opener.open(messages[37]).seq == 37
    # A jump beyond the window clears the bitmap but not the history below it.
    opener.open(messages[199])
    with pytest.raises(ReplayError):
        opener.open(messages[100])


def test_replay_window_bitmap_edges():
    window = ReplayWindow()
    window.accept(5)
    window.accept(5 + 63)
    window.accept(5 + 63 + 1)  # 5 falls out of the window
    with pytest.raises(ReplayError):
        window.check(5)
    window.check(6)
    window.accept(6)
    with pytest.raises(ReplayError):
        window.check(6)


def test_sender_refuses_to_reuse_a_nonce(gcm_keys):
    sealer = get_scheme(GCM).sealer(gcm_keys.emitter_to_receiver, first_seq=MAX_SEQ)
    message = sealer.seal(b"last")
    assert int.from_bytes(message[2:10], "big") == MAX_SEQ
    with pytest.raises(NonceExhaustedError):
        sealer.seal(b"one too many")


def test_sealer_rejects_wrong_key_sizes():
    scheme = get_scheme(GCM)
    with pytest.raises(ValueError):
        scheme.sealer(DirectionKeys(b"k" * 32, b"m" * 32, b"npfx", b"s" * 8, "e2r"))
    with pytest.raises(TypeError):
        scheme.sealer(None)


def test_aes_gcm_known_answer_through_the_scheme():
    # Source: McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", revised 2005,
    # Appendix B, Test Case 3 (AES-128, 96-bit IV) — the vector NIST's GCM validation
    # (gcmEncryptExtIV128.rsp) also carries. K, IV, P, C below; T is for empty AAD.
    key = bytes.fromhex("feffe9928665731c6d6a8f9467308308")
    iv = bytes.fromhex("cafebabefacedbaddecaf888")
    plaintext = bytes.fromhex(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
        "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
    )
    ciphertext = bytes.fromhex(
        "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
        "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985"
    )
    tag = bytes.fromhex("4d5c2af327cd64a62cf35abd2ba6fab4")
    assert AESGCM(key).encrypt(iv, plaintext, b"") == ciphertext + tag
    # Our nonce is prefix(4) || seq(8): choose them so the nonce is the vector's IV. GCM
    # ciphertext does not depend on the AAD, so the scheme must reproduce C exactly; the
    # tag covers our documented AAD (header || session_id || direction).
    keys = DirectionKeys(key, b"\0" * 32, iv[:4], b"SESSION1", "e2r")
    seq = int.from_bytes(iv[4:], "big")
    message = get_scheme(GCM).sealer(keys, first_seq=seq).seal(plaintext)
    header = bytes([1, 2]) + iv[4:]
    assert message[:10] == header
    assert message[10:-16] == ciphertext
    expected = AESGCM(key).encrypt(iv, plaintext, header + b"SESSION1" + b"e2r")
    assert message[10:] == expected


def test_operations_use_the_energy_vocabulary():
    assert get_scheme(GCM).seal_operations(100) == [("aes-gcm", 100)]
    assert get_scheme(GCM).open_operations(100) == [("aes-gcm", 100)]
    assert get_scheme(CBC).seal_operations(100) == [("aes-cbc", 112)]
    assert get_scheme(CBC).seal_operations(16) == [("aes-cbc", 32)]
    assert get_scheme(CBC).expected_overhead_bytes(16) == 2 + 16 + 16
    assert get_scheme(GCM).expected_overhead_bytes(256) == 26


def test_direction_keys_repr_hides_key_material(gcm_keys):
    for keys in (gcm_keys.emitter_to_receiver, gcm_keys.receiver_to_emitter):
        text = repr(keys) + str(keys) + repr(gcm_keys)
        for secret in (keys.enc_key, keys.mac_key, keys.nonce_prefix):
            assert secret.hex() not in text
            assert repr(secret) not in text


def test_registry_and_misspellings():
    assert scheme_names()[0] == "none"
    assert {GCM, CBC} <= set(scheme_names())
    with pytest.raises(SpecError, match=r"unknown scheme 'aes-gmc' \(did you mean .*gcm\?\)"):
        get_scheme("aes-gmc")
    with pytest.raises(SpecError, match="schemes --all"):
        get_scheme("rot13")
    described = {d["name"]: d for d in describe_schemes()}
    assert described[GCM]["overhead_bytes"] == 26
    assert described[CBC]["properties"]["integrity"] is False
    assert described[GCM]["provenance"]["library"] == (
        "openssl" if evp.AVAILABLE else "cryptography"
    )


def test_independent_decryption_from_the_key_log(gcm_keys):
    # What docs/wire-format.md tells an outside program to do, with only the key log line.
    from iotsecbench.security.key_establishment import export_key_log_lines

    sealer = get_scheme(GCM).sealer(gcm_keys.emitter_to_receiver)
    sealer.seal(b"skip one")
    captured = sealer.seal(b"captured payload")
    line = next(x for x in export_key_log_lines(gcm_keys, GCM) if " e2r " in x)
    assert line.endswith(f" scheme={GCM}")
    _, session_hex, direction, enc, _mac, prefix = line.split()[:6]
    key = bytes.fromhex(enc.removeprefix("enc="))
    nonce_prefix = bytes.fromhex(prefix.removeprefix("nonce_prefix="))
    header = captured[:10]
    nonce = nonce_prefix + captured[2:10]
    aad = header + bytes.fromhex(session_hex) + direction.encode()
    assert AESGCM(key).decrypt(nonce, captured[10:], aad) == b"captured payload"


@pytest.mark.parametrize("name", [GCM, CBC])
@settings(max_examples=200, deadline=None)
@given(garbage=st.binary(max_size=120))
def test_random_bytes_only_raise_scheme_errors(name, garbage):
    keys = DirectionKeys(b"k" * 16, b"m" * 32, b"npfx", b"session!", "e2r")
    opener = get_scheme(name).opener(keys)
    # Anything else (IndexError, ValueError, ...) escapes suppress() and fails the test.
    with contextlib.suppress(MalformedMessageError, AuthenticationError, ReplayError):
        opener.open(garbage)
    # CBC without a MAC may "open" garbage of a valid length: that is the documented flaw.


def test_replay_error_pickles():
    import pickle

    error = pickle.loads(pickle.dumps(ReplayError("seen", reason="too-old")))
    assert isinstance(error, ReplayError) and error.reason == "too-old"
