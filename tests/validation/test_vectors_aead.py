"""Published vectors through the exact AEAD step each payload scheme runs (``aead_seal`` /
``aead_open``): Wycheproof AES-GCM, AES-CCM (8-byte tags), AES-EAX, ChaCha20-Poly1305 (with
RFC 8439 §2.8.2), XChaCha20-Poly1305, Ascon-128 v1.2; the Ascon-128 v1.2 LWC KAT and the
NIST SP 800-232 Ascon-AEAD128 KAT.

Sources and licences: tests/data/vectors/README.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iotsecbench.security.schemes import AuthenticationError, DirectionKeys, get_scheme
from iotsecbench.security.schemes.base import Sealer, _is_authentication_failure

VECTORS = Path(__file__).resolve().parents[1] / "data" / "vectors"


def wycheproof(name: str) -> list[tuple[dict, dict]]:
    data = json.loads((VECTORS / "wycheproof" / f"{name}_test.json").read_text())
    return [(group, test) for group in data["testGroups"] for test in group["tests"]]


def state_for(scheme_name: str, key: bytes):
    scheme = get_scheme(scheme_name)
    keys = DirectionKeys(key, b"\0" * 32, b"\0" * scheme.nonce_prefix_bytes, b"s" * 8, "e2r")
    return scheme, scheme._cipher_state(keys)


def check_aead(scheme_name: str, group: dict, test: dict) -> None:
    """Valid vectors seal to ct || tag and open back; invalid ones never open."""
    key, nonce = bytes.fromhex(test["key"]), bytes.fromhex(test["iv"])
    aad, msg = bytes.fromhex(test["aad"]), bytes.fromhex(test["msg"])
    sealed = bytes.fromhex(test["ct"]) + bytes.fromhex(test["tag"])
    scheme, state = state_for(scheme_name, key)
    if test["result"] == "valid":
        assert scheme.aead_seal(state, nonce, aad, msg) == sealed, test["tcId"]
        assert scheme.aead_open(state, nonce, aad, sealed) == msg, test["tcId"]
    else:
        # Every invalid vector is a tag failure as the receiver classifies it (base mapping).
        with pytest.raises(Exception) as failure:
            scheme.aead_open(state, nonce, aad, sealed)
        error = failure.value
        assert isinstance(error, AuthenticationError) or _is_authentication_failure(error), error


def _groups(name: str, key_bits: int, **constraints: int) -> list:
    return [
        pytest.param(group, test, id=f"tc{test['tcId']}")
        for group, test in wycheproof(name)
        if group["keySize"] == key_bits and all(group[k] == v for k, v in constraints.items())
    ]


@pytest.mark.parametrize(("group", "test"), _groups("aes_gcm", 128, ivSize=96, tagSize=128))
def test_wycheproof_aes128_gcm(group, test):
    check_aead("psk-aes128-gcm", group, test)


@pytest.mark.parametrize(("group", "test"), _groups("aes_gcm", 256, ivSize=96, tagSize=128))
def test_wycheproof_aes256_gcm(group, test):
    check_aead("psk-aes256-gcm", group, test)


@pytest.mark.parametrize(("group", "test"), _groups("aes_ccm", 128, tagSize=64))
def test_wycheproof_aes128_ccm8(group, test):
    check_aead("psk-aes128-ccm8", group, test)


@pytest.mark.parametrize(("group", "test"), _groups("aes_ccm", 256, tagSize=64))
def test_wycheproof_aes256_ccm8(group, test):
    check_aead("psk-aes256-ccm8", group, test)


@pytest.mark.parametrize(("group", "test"), _groups("aes_eax", 128, ivSize=128, tagSize=128))
def test_wycheproof_aes128_eax(group, test):
    check_aead("psk-aes128-eax", group, test)


@pytest.mark.parametrize(("group", "test"), _groups("aes_eax", 256, ivSize=128, tagSize=128))
def test_wycheproof_aes256_eax(group, test):
    check_aead("psk-aes256-eax", group, test)


@pytest.mark.parametrize(("group", "test"), _groups("chacha20_poly1305", 256, ivSize=96))
def test_wycheproof_chacha20_poly1305(group, test):
    check_aead("psk-chacha20-poly1305", group, test)


@pytest.mark.parametrize(("group", "test"), _groups("xchacha20_poly1305", 256, ivSize=192))
def test_wycheproof_xchacha20_poly1305(group, test):
    check_aead("psk-xchacha20-poly1305", group, test)


@pytest.mark.parametrize("name", ["psk-ascon128v12", "psk-ascon128v12-purepy"])
def test_wycheproof_ascon128_v12(name):
    vectors = [(g, t) for g, t in wycheproof("ascon128") if g["ivSize"] == 128]
    assert len(vectors) > 150
    for group, test in vectors:
        check_aead(name, group, test)


def test_rfc8439_vector_is_among_the_chacha_vectors():
    # RFC 8439 §2.8.2 (= RFC 7539 §2.8.2): "Ladies and Gentlemen of the class of '99..."
    matches = [
        t
        for _, t in wycheproof("chacha20_poly1305")
        if "RFC 7539" in t["comment"] or "RFC 8439" in t["comment"]
    ]
    assert matches
    assert bytes.fromhex(matches[0]["msg"]).startswith(b"Ladies and Gentlemen of the class of '99")
    assert matches[0]["tag"] == "1ae10b594f09e26a7e902ecbd0600691"
    check_aead("psk-chacha20-poly1305", {}, {**matches[0]})


def _lwc_kat(file: str = "LWC_AEAD_KAT_128_128.txt") -> list[dict[str, str]]:
    entries, entry = [], {}
    for line in (VECTORS / "ascon" / file).read_text().splitlines():
        if not line.strip():
            if entry:
                entries.append(entry)
            entry = {}
            continue
        field, _, value = line.partition("=")
        entry[field.strip()] = value.strip()
    if entry:
        entries.append(entry)
    return entries


@pytest.mark.parametrize("name", ["psk-ascon128v12", "psk-ascon128v12-purepy"])
def test_ascon128_v12_lwc_kat(name):
    kat = _lwc_kat()
    assert len(kat) == 1089
    for entry in kat:
        key, nonce = bytes.fromhex(entry["Key"]), bytes.fromhex(entry["Nonce"])
        plaintext, aad = bytes.fromhex(entry["PT"]), bytes.fromhex(entry["AD"])
        expected = bytes.fromhex(entry["CT"])
        scheme, state = state_for(name, key)
        assert scheme.aead_seal(state, nonce, aad, plaintext) == expected, entry["Count"]
        assert scheme.aead_open(state, nonce, aad, expected) == plaintext, entry["Count"]


def test_ascon_aead128_sp800_232_kat():
    """The standard's Ascon-AEAD128 (our C): every known answer, sealed and opened; a flipped
    tag bit is refused. The v1.2 algorithm gives other answers for the same inputs."""
    kat = _lwc_kat("LWC_AEAD_KAT_128_128_SP800-232.txt")
    assert len(kat) == 1089
    for entry in kat:
        key, nonce = bytes.fromhex(entry["Key"]), bytes.fromhex(entry["Nonce"])
        plaintext, aad = bytes.fromhex(entry["PT"]), bytes.fromhex(entry["AD"])
        expected = bytes.fromhex(entry["CT"])
        scheme, state = state_for("psk-ascon-aead128", key)
        assert scheme.aead_seal(state, nonce, aad, plaintext) == expected, entry["Count"]
        assert scheme.aead_open(state, nonce, aad, expected) == plaintext, entry["Count"]
        forged = expected[:-1] + bytes([expected[-1] ^ 1])
        with pytest.raises(AuthenticationError):
            scheme.aead_open(state, nonce, aad, forged)
    v12 = _lwc_kat()[0]
    assert (v12["Key"], v12["Nonce"], v12["PT"]) == (kat[0]["Key"], kat[0]["Nonce"], kat[0]["PT"])
    assert v12["CT"] != kat[0]["CT"]


def test_sealer_framing_uses_the_tested_step():
    # The scheme's seal = header || aead_seal(counter nonce, documented AAD, plaintext).
    scheme = get_scheme("psk-chacha20-poly1305")
    keys = DirectionKeys(b"K" * 32, b"M" * 32, b"PRFX", b"SESSION1", "e2r")
    message = Sealer(scheme, keys, 7).seal(b"hello")
    header = bytes([1, scheme.scheme_id]) + (7).to_bytes(8, "big")
    nonce = b"PRFX" + (7).to_bytes(8, "big")
    state = scheme._cipher_state(keys)
    assert message == header + scheme.aead_seal(state, nonce, header + b"SESSION1e2r", b"hello")
