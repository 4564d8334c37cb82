"""Published vectors through the key agreements' own code: Wycheproof X25519 (incl. the
low-order points whose shared secret is zero), ECDH P-256 (ecpoint encoding, incl. invalid-curve
points), RSA-OAEP-2048 SHA-256 (one uniform error for every failure), HKDF-SHA256; and the
RFC 7919 ffdhe2048 group recomputed from its definition.

Sources and licences: tests/data/vectors/README.md.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, x25519
from cryptography.hazmat.primitives.serialization import load_der_private_key

from iotsecbench.security.agreements import (
    AGREEMENTS,
    FFDHE2048_P,
    FFDHE2048_Q,
    X25519Agreement,
    _load_peer_public_key,
    validate_ffdh_public,
)
from iotsecbench.security.key_establishment import hkdf_sha256
from iotsecbench.security.schemes import AuthenticationError, MalformedMessageError

VECTORS = Path(__file__).resolve().parents[1] / "data" / "vectors" / "wycheproof"


def wycheproof(name: str) -> list[tuple[dict, dict]]:
    data = json.loads((VECTORS / f"{name}_test.json").read_text())
    return [(group, test) for group in data["testGroups"] for test in group["tests"]]


def test_x25519_wycheproof():
    checked = rejected = 0
    for _, test in wycheproof("x25519"):
        private = x25519.X25519PrivateKey.from_private_bytes(bytes.fromhex(test["private"]))
        public, shared = bytes.fromhex(test["public"]), bytes.fromhex(test["shared"])
        if "ZeroSharedSecret" in test["flags"] or not any(shared):
            # RFC 7748 §6.1: an all-zero result must be refused.
            with pytest.raises(MalformedMessageError):
                X25519Agreement._exchange(private, public)
            rejected += 1
        else:
            # 'valid' and the other 'acceptable' cases (twist, non-canonical) compute Z.
            assert X25519Agreement._exchange(private, public) == shared, test["tcId"]
        checked += 1
    assert checked > 500 and rejected > 0


def test_ecdh_p256_wycheproof_ecpoint():
    checked = refused = 0
    for _, test in wycheproof("ecdh_secp256r1_ecpoint"):
        public = bytes.fromhex(test["public"])
        private = ec.derive_private_key(int(test["private"], 16), ec.SECP256R1())
        if test["result"] == "valid" and public[:1] == b"\x04":
            peer = _load_peer_public_key(public)
            assert private.exchange(ec.ECDH(), peer) == bytes.fromhex(test["shared"]), test["tcId"]
            checked += 1
        elif test["result"] == "invalid" or public[:1] != b"\x04":
            # Invalid points (off-curve, wrong curve, bad encoding) and, by design, compressed
            # points (docs/wire-format.md) are refused before any scalar multiplication.
            with pytest.raises(MalformedMessageError):
                _load_peer_public_key(public)
            refused += 1
    assert checked > 300 and refused > 20


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_rsa_oaep_wycheproof_and_uniform_errors():
    agreement = AGREEMENTS["rsa-oaep"]
    messages = set()
    decrypted = 0
    for group, test in wycheproof("rsa_oaep_2048_sha256_mgf1sha256"):
        private = load_der_private_key(bytes.fromhex(group["privateKeyPkcs8"]), password=None)
        ciphertext, message = bytes.fromhex(test["ct"]), bytes.fromhex(test["msg"])
        if test["result"] == "valid" and not test["label"] and len(message) == 32:
            transported, _ = agreement.receiver_agree(None, private, ciphertext)
            assert transported == message
            decrypted += 1
        elif test["result"] == "valid" and not test["label"]:
            assert private.decrypt(ciphertext, _oaep()) == message  # other lengths: the library
            with pytest.raises(AuthenticationError) as error:  # but not a 256-bit key
                agreement.receiver_agree(None, private, ciphertext)
            messages.add(str(error.value))
        else:
            # Invalid padding, wrong label, bad ciphertext: all the same error (Manger).
            with pytest.raises(AuthenticationError) as error:
                agreement.receiver_agree(None, private, ciphertext)
            messages.add(str(error.value))
    assert messages == {"RSA-OAEP key transport failed"}
    assert len(messages) == 1


def _oaep():
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    return padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


def test_rsa_oaep_round_trip_through_both_sides():
    agreement = AGREEMENTS["rsa-oaep"]
    private, modulus, _ = agreement.receiver_start(None)
    ciphertext, sent, _ = agreement.emitter_agree(None, modulus)
    assert agreement.receiver_agree(None, private, ciphertext)[0] == sent
    with pytest.raises(MalformedMessageError):
        agreement.emitter_agree(None, (2**2047).to_bytes(256, "big"))  # even modulus


def test_hkdf_sha256_wycheproof():
    checked = 0
    for _, test in wycheproof("hkdf_sha256"):
        ikm, salt = bytes.fromhex(test["ikm"]), bytes.fromhex(test["salt"])
        info, size = bytes.fromhex(test["info"]), int(test["size"])
        if test["result"] == "valid":
            assert hkdf_sha256(ikm, salt, info, size).hex() == test["okm"], test["tcId"]
            checked += 1
        else:
            with pytest.raises(ValueError):
                hkdf_sha256(ikm, salt, info, size)
    assert checked > 80


def _probable_prime(n: int, rounds: int = 16) -> bool:
    """Miller-Rabin with a fixed seed (the test needs no secrecy, only reproducibility)."""
    rng = random.Random(7919)
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for _ in range(rounds):
        x = pow(rng.randrange(2, n - 2), d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_ffdhe2048_prime_from_rfc7919_definition():
    # RFC 7919 Appendix A.1: p = 2^2048 - 2^1984 + (floor(2^1918 * e) + 560316) * 2^64 - 1.
    # floor(2^1918 * e) from the series e = sum 1/k!, with 128 guard bits.
    scale, term, total = 1918 + 128, 1, 0
    for k in range(400):
        term = term * k if k else 1
        total += (1 << scale) // term
    floor_e = total >> 128
    p = (1 << 2048) - (1 << 1984) + (floor_e + 560316) * (1 << 64) - 1
    assert p == FFDHE2048_P
    assert _probable_prime(FFDHE2048_P) and _probable_prime(FFDHE2048_Q)  # a safe prime


@pytest.mark.parametrize("name", ["ffdhe2048", "dh-sha256"])
def test_ffdh_shared_secret_matches_independent_modexp(name):
    import hashlib

    agreement = AGREEMENTS[name]
    receiver_private, receiver_public, _ = agreement.receiver_start(None)
    emitter_public, emitter_shared, _ = agreement.emitter_agree(None, receiver_public)
    receiver_shared, _ = agreement.receiver_agree(None, receiver_private, emitter_public)
    assert emitter_shared == receiver_shared
    x = receiver_private.private_numbers().x
    z = pow(int.from_bytes(emitter_public, "big"), x, FFDHE2048_P).to_bytes(256, "big")
    assert receiver_shared == (z if name == "ffdhe2048" else hashlib.sha256(z).digest())


@pytest.mark.parametrize(
    "value",
    [0, 1, FFDHE2048_P - 1, FFDHE2048_P, FFDHE2048_P + 1, pow(2, 2048)],
    ids=["zero", "one", "p-1", "p", "p+1", "2^2048"],
)
def test_ffdh_public_value_bounds_are_refused(value):
    with pytest.raises(MalformedMessageError):
        validate_ffdh_public(value)


def test_ffdh_value_outside_the_subgroup_is_refused():
    # g = 2 generates the order-q subgroup (2 is a quadratic residue mod a safe prime
    # p = 7 mod 8); -2 = p - 2 is then a non-residue: order 2q, outside the subgroup.
    validate_ffdh_public(2)
    with pytest.raises(MalformedMessageError, match="subgroup"):
        validate_ffdh_public(FFDHE2048_P - 2)
