"""Every cipher (wire format): round trips, tampering, truncation, wrong keys and directions,
replays, exception mapping, and a hypothesis property over payload sizes 0-64 KiB.

The key establishment does not change a cipher's wire format (only its keys), so each cipher
is tested once, under ``psk-``; test_scheme_combinations.py covers every combination.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.blocked_import import run_with_import_blocked

from iotsecbench.security.schemes import (
    AuthenticationError,
    DirectionKeys,
    MalformedMessageError,
    ReplayError,
    cipher_names,
    get_scheme,
)

CIPHER_SCHEMES = [f"psk-{cipher}" for cipher in cipher_names()]
AUTHENTICATED = [name for name in CIPHER_SCHEMES if get_scheme(name).properties.integrity]
SLOW = {name for name in CIPHER_SCHEMES if not get_scheme(name).provenance.native}


def keys_for(name: str, direction: str = "e2r", session: bytes = b"SESSION1") -> DirectionKeys:
    return get_scheme(name).random_keys(session, direction)


def test_every_study_cipher_is_registered():
    expected = {
        "salsa20-128-blake2b", "salsa20-256-blake2b", "xsalsa20-poly1305", "chacha20-poly1305",
        "xchacha20-poly1305", "aes128-gcm", "aes256-gcm", "aes128-ccm8", "aes256-ccm8",
        "aes128-eax", "aes256-eax", "aes128-ctr-hmac", "aes256-ctr-hmac", "aes128-cbc-hmac",
        "aes256-cbc-hmac", "tinyaes128-ctr-hmac", "ascon128v12", "speck128-128-ctr-hmac",
        "speck128-256-ctr-hmac", "simon128-128-ctr-hmac", "simon128-256-ctr-hmac",
    }  # fmt: skip
    assert expected <= set(cipher_names())
    ids = [get_scheme(name).scheme_id for name in CIPHER_SCHEMES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("name", CIPHER_SCHEMES)
@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 64, 1000, 4096])
def test_round_trip_and_overhead(name, size):
    scheme, keys = get_scheme(name), keys_for(name)
    plaintext = os.urandom(size)
    sealer, opener = scheme.sealer(keys), scheme.opener(keys)
    for seq in range(2):
        message = sealer.seal(plaintext)
        assert len(message) - size == scheme.expected_overhead_bytes(size)
        opened = opener.open(message)
        assert opened.plaintext == plaintext
        assert opened.seq == (seq if scheme.sequenced else None)
        if size >= 16:
            assert plaintext not in message


@pytest.mark.parametrize("name", AUTHENTICATED)
def test_every_single_bit_flip_of_a_64_byte_message_is_rejected(name):
    scheme, keys = get_scheme(name), keys_for(name)
    message = scheme.sealer(keys).seal(os.urandom(64))
    for bit in range(8 * len(message)):
        tampered = bytearray(message)
        tampered[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(AuthenticationError):
            scheme.opener(keys).open(bytes(tampered))


@pytest.mark.parametrize("name", CIPHER_SCHEMES)
def test_truncation_at_every_length_is_rejected(name):
    scheme, keys = get_scheme(name), keys_for(name)
    message = scheme.sealer(keys).seal(os.urandom(64))
    minimum = scheme.header_bytes + scheme.explicit_nonce_bytes + scheme.min_body_bytes
    for length in range(len(message)):
        opener = scheme.opener(keys)
        if length < minimum:
            # Cannot hold header, nonce and tag: malformed, never an IndexError.
            with pytest.raises(MalformedMessageError):
                opener.open(message[:length])
        elif scheme.properties.integrity:
            # Parses as a shorter message (no length field), whose tag then fails; CBC
            # bodies that are not whole blocks are malformed.
            with pytest.raises((AuthenticationError, MalformedMessageError)):
                opener.open(message[:length])


@pytest.mark.parametrize("name", AUTHENTICATED)
def test_wrong_key_direction_and_session_are_rejected(name):
    scheme = get_scheme(name)
    keys, other_direction = keys_for(name), keys_for(name, "r2e")
    message = scheme.sealer(keys).seal(b"payload " * 8)
    candidates = [
        # Wrong session keys (both come from one HKDF; in encrypt-then-MAC schemes the MAC
        # key is what authenticates, so a wrong cipher key alone would only garble).
        replace(keys, enc_key=os.urandom(scheme.enc_key_bytes), mac_key=os.urandom(32)),
        other_direction,  # the other direction's keys of the session
        replace(keys, direction="r2e"),  # same keys, labelled as the other direction
        replace(keys, session_id=b"\0" * 8),  # another session
    ]
    if scheme.tag_bytes == 32:  # encrypt-then-MAC: a wrong MAC key too
        candidates.append(replace(keys, mac_key=os.urandom(32)))
    for wrong in candidates:
        with pytest.raises(AuthenticationError):
            scheme.opener(wrong).open(message)


@pytest.mark.parametrize("name", AUTHENTICATED)
def test_replays_rejected_reordering_accepted_once(name):
    scheme, keys = get_scheme(name), keys_for(name)
    sealer, opener = scheme.sealer(keys), scheme.opener(keys)
    messages = [sealer.seal(b"%d" % i) for i in range(5)]
    opener.open(messages[4])
    assert opener.open(messages[2]).plaintext == b"2"  # reordered, inside the window
    for seen in (messages[4], messages[2]):
        with pytest.raises(ReplayError) as replay:
            opener.open(seen)
        assert replay.value.reason == "duplicate"


@pytest.mark.parametrize("name", CIPHER_SCHEMES)
def test_message_of_another_cipher_is_rejected(name):
    scheme, keys = get_scheme(name), keys_for(name)
    other = "psk-aes128-gcm" if name != "psk-aes128-gcm" else "psk-chacha20-poly1305"
    foreign = get_scheme(other).sealer(keys_for(other)).seal(os.urandom(48))
    with pytest.raises((AuthenticationError, MalformedMessageError)):
        scheme.opener(keys).open(foreign)


@pytest.mark.parametrize("name", CIPHER_SCHEMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(garbage=st.binary(max_size=200))
def test_random_bytes_only_raise_scheme_errors(name, garbage):
    opener = get_scheme(name).opener(_FIXED_KEYS[name])
    # Anything else (IndexError, ValueError, a backend exception) fails the test.
    with contextlib.suppress(MalformedMessageError, AuthenticationError, ReplayError):
        opener.open(garbage)


_FIXED_KEYS = {name: keys_for(name) for name in CIPHER_SCHEMES}  # hypothesis: no fixtures


@pytest.mark.parametrize("name", CIPHER_SCHEMES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_property_payloads_up_to_64_kib(name, data):
    # Pure-Python ciphers (SPECK, SIMON, pyascon) take ~0.1 s per 64 KiB: fewer large sizes.
    limit = 65536 if name not in SLOW else 8192
    size = data.draw(st.one_of(st.integers(0, 64), st.integers(0, limit)), label="size")
    payload = data.draw(st.binary(min_size=size, max_size=size), label="payload")
    scheme, keys = get_scheme(name), _FIXED_KEYS[name]
    message = scheme.sealer(keys).seal(payload)
    assert len(message) == size + scheme.expected_overhead_bytes(size)
    assert scheme.opener(keys).open(message).plaintext == payload


@pytest.mark.parametrize("name", sorted(SLOW))
@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_pure_python_ciphers_at_64_kib(name):
    # The property test draws pure-Python ciphers up to 8 KiB; one full-size message here.
    scheme, keys = get_scheme(name), _FIXED_KEYS[name]
    payload = os.urandom(65536)
    assert scheme.opener(keys).open(scheme.sealer(keys).seal(payload)).plaintext == payload


def test_provenance_names_every_library():
    natives = {name: get_scheme(name).provenance for name in CIPHER_SCHEMES}
    assert not natives["psk-speck128-128-ctr-hmac-purepy"].native
    assert natives["psk-speck128-128-ctr-hmac"].library == "iotsecbench + python-hashlib"
    assert natives["psk-simon128-256-ctr-hmac"].native
    assert not natives["psk-ascon128v12-purepy"].native
    assert natives["psk-ascon128v12"].native and natives["psk-ascon128v12"].library == "fast-ascon"
    assert natives["psk-tinyaes128-ctr-hmac"].library == "tinyaes + python-hashlib"
    assert natives["psk-salsa20-128-blake2b"].library == "iotsecbench"  # one call into our C
    for provenance in natives.values():
        assert provenance.version != "not installed", provenance


def test_ccm8_warns_about_its_short_tag():
    properties = get_scheme("psk-aes128-ccm8").properties
    assert properties.tag_bytes == 8
    assert any("64-bit tag" in warning for warning in properties.warnings)


@pytest.mark.integration
def test_without_the_lightweight_extension_the_schemes_say_pure_python():
    """What a machine without a C compiler gets: simulated by blocking the module's import.
    SPECK and SIMON still work (the pure-Python code) and say so; ascon-aead128 is not
    offered; doctor names the fix."""
    code = (
        "from iotsecbench.security.schemes import cipher_names, get_scheme\n"
        "from iotsecbench.lab.capabilities import check_lightweight_ciphers\n"
        "from tests.unit.security.test_scheme_library import keys_for\n"
        "scheme = get_scheme('psk-speck128-128-ctr-hmac')\n"
        "keys = keys_for('psk-speck128-128-ctr-hmac')\n"
        "sealed = scheme.sealer(keys).seal(b'hi' * 20)\n"
        "assert scheme.opener(keys).open(sealed).plaintext == b'hi' * 20\n"
        "assert 'ascon-aead128' not in cipher_names()\n"
        "salsa = get_scheme('psk-salsa20-128-blake2b')\n"
        "assert salsa.provenance.library == 'pycryptodome + python-hashlib'\n"
        "k = keys_for('psk-salsa20-128-blake2b')\n"
        "assert salsa.opener(k).open(salsa.sealer(k).seal(b'x' * 99)).plaintext == b'x' * 99\n"
        "check = check_lightweight_ciphers()\n"
        "print(scheme.provenance.native, check.ok, check.consequence)\n"
    )
    native, ok, consequence = run_with_import_blocked(
        "iotsecbench.security.schemes._lightweight", code
    ).split(" ", 2)
    assert (native, ok) == ("False", "False")
    assert "scripts/setup.sh" in consequence
