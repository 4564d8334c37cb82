"""Published vectors for the encrypt-then-MAC schemes' parts, through the schemes' own code:
Salsa20/20 (eSTREAM), keyed BLAKE2b (BLAKE2 KAT, RFC 7693), HMAC-SHA256 (Wycheproof), SPECK and
SIMON (the designers' Appendix B), AES-CTR (NIST SP 800-38A), tiny-AES-c vs pyca AES-CTR.

Sources and licences: tests/data/vectors/README.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import tinyaes
from cryptography.hazmat.primitives.ciphers import Cipher, modes

from iotsecbench.security.schemes import DirectionKeys, _lightweight, get_scheme
from iotsecbench.security.schemes.base import Frame
from iotsecbench.security.schemes.etm import blake2b_mac, hmac_sha256

VECTORS = Path(__file__).resolve().parents[1] / "data" / "vectors"


def load(path: str) -> dict:
    return json.loads((VECTORS / path).read_text())


def frame(seq: int, nonce_prefix: bytes = b"\0" * 4) -> Frame:
    keys = DirectionKeys(b"\0" * 16, b"\0" * 32, nonce_prefix, b"s" * 8, "e2r")
    return Frame(keys, b"", seq, b"")


@pytest.mark.parametrize("file", ["salsa20/ecrypt_256bit.json", "salsa20/estream_128bit.json"])
def test_salsa20_estream_keystream(file):
    data = load(file)["vectors"]
    assert len(data) >= 3
    for vector in data:
        key = bytes.fromhex(vector["key"])
        scheme = get_scheme(
            "psk-salsa20-128-blake2b" if len(key) == 16 else "psk-salsa20-256-blake2b"
        )
        position = vector.get("position", 0)
        expected = bytes.fromhex(vector["keystream"])
        # The scheme's nonce is seq (8 bytes big-endian): use the vector's IV as seq.
        seq = int.from_bytes(bytes.fromhex(vector["iv"]), "big")
        stream = scheme._encrypt(key, frame(seq), bytes(position + len(expected)))
        assert stream[position:] == expected


@pytest.mark.parametrize("key_bytes", [16, 32])
@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 127, 128, 129, 4097])
def test_salsa20_blake2b_in_one_c_call_equals_pycryptodome_and_hashlib(key_bytes, size):
    """The one-call seal (our Salsa20 and BLAKE2b) against the two libraries it replaced, byte
    for byte; a flipped bit anywhere is refused before anything is decrypted."""
    from Crypto.Cipher import Salsa20

    enc_key, mac_key, nonce = os.urandom(key_bytes), os.urandom(32), os.urandom(8)
    prefix, plaintext = os.urandom(21 + size % 7), os.urandom(size)
    ciphertext = Salsa20.new(key=enc_key, nonce=nonce).encrypt(plaintext)
    tag = hashlib.blake2b(prefix + ciphertext, key=mac_key, digest_size=32).digest()
    sealed = _lightweight.salsa20_blake2b_seal(enc_key, mac_key, nonce, prefix, plaintext)
    assert sealed == ciphertext + tag
    assert _lightweight.salsa20_blake2b_open(enc_key, mac_key, nonce, prefix, sealed) == plaintext
    for position in (0, len(sealed) - 1, len(sealed) // 2):
        forged = bytearray(sealed)
        forged[position] ^= 0x40
        assert (
            _lightweight.salsa20_blake2b_open(enc_key, mac_key, nonce, prefix, bytes(forged))
            is None
        )
    assert _lightweight.salsa20_blake2b_open(enc_key, mac_key, nonce, prefix, sealed[:31]) is None


def test_blake2b_keyed_reference_kat():
    vectors = load("blake2b/blake2b_keyed_kat.json")["vectors"]
    assert len(vectors) == 257
    for vector in vectors:
        key, data = bytes.fromhex(vector["key"]), bytes.fromhex(vector["input"])
        # The KAT is BLAKE2b-512; the scheme's MAC is the same function with a 32-byte
        # digest (a parameter-block field), so the KAT checks the implementation it calls.
        digest = hashlib.blake2b(data, key=key, digest_size=64).digest()
        assert digest == bytes.fromhex(vector["digest"])
        assert _lightweight.blake2b(key, data, 64) == digest  # our C, the scheme's MAC
    # And the scheme's MAC is that implementation with digest_size 32 (RFC 7693 §2.5).
    assert (
        blake2b_mac(b"k" * 32, b"m")
        == hashlib.blake2b(b"m", key=b"k" * 32, digest_size=32).digest()
    )


def test_blake2b_rfc7693_appendix_a():
    # RFC 7693 Appendix A: BLAKE2b-512("abc").
    expected = (
        "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
        "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
    )
    assert hashlib.blake2b(b"abc").hexdigest() == expected
    assert _lightweight.blake2b(b"", b"abc", 64).hex() == expected


def test_hmac_sha256_wycheproof():
    data = load("wycheproof/hmac_sha256_test.json")
    checked = 0
    for group in data["testGroups"]:
        if group["tagSize"] != 256:
            continue  # the schemes use untruncated 32-byte tags
        for test in group["tests"]:
            tag = hmac_sha256(bytes.fromhex(test["key"]), bytes.fromhex(test["msg"]))
            assert (tag == bytes.fromhex(test["tag"])) == (test["result"] == "valid"), test["tcId"]
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("build", ["", "-purepy"])
@pytest.mark.parametrize(
    "vector", load("simon-speck/designers_appendix_b.json")["vectors"], ids=lambda v: v["cipher"]
)
def test_simon_speck_designers_vectors(vector, build):
    """Both builds — our C (``_lightweight.c``) and simonspeckciphers — through the scheme's
    own key schedule and byte order."""
    family, sizes = vector["cipher"].split("128/")
    key = bytes.fromhex(vector["key"])
    scheme = get_scheme(f"psk-{family.lower()}128-{sizes}-ctr-hmac{build}")
    state = scheme._key_schedule(key)
    plaintext, ciphertext = (bytes.fromhex(vector[k]) for k in ("plaintext", "ciphertext"))
    if build:
        assert state.encrypt(int.from_bytes(plaintext, "big")) == int.from_bytes(ciphertext, "big")
    else:
        assert scheme.provenance.library.startswith("iotsecbench"), scheme.provenance
        cipher, round_keys = state
        assert _lightweight.encrypt_block(cipher, round_keys, plaintext) == ciphertext
        rounds = {"Simon": {"128": 68, "256": 72}, "Speck": {"128": 32, "256": 34}}
        assert len(round_keys) // 8 == rounds[family][sizes]


@pytest.mark.parametrize("cipher", ["speck128-128", "speck128-256", "simon128-128", "simon128-256"])
@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 1024, 4097])
@pytest.mark.parametrize("seq", [5, 2**64 - 1])  # the last: the counter carries across words
def test_c_ctr_equals_the_pure_python_ctr(cipher, size, seq):
    native = get_scheme(f"psk-{cipher}-ctr-hmac")
    pure = get_scheme(f"psk-{cipher}-ctr-hmac-purepy")
    key, data = os.urandom(native.enc_key_bytes), os.urandom(size)
    f = frame(seq, nonce_prefix=b"\xff\xff\xff\xff")
    expected = pure._encrypt(pure._key_schedule(key), f, data)
    assert native._encrypt(native._key_schedule(key), f, data) == expected


def test_aes_ctr_sp800_38a():
    # NIST SP 800-38A F.5.1 CTR-AES128.Encrypt, blocks 1-2, with the vector's initial
    # counter block (ours always ends in four zero bytes, which this one does not).
    key = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")
    counter = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
    plaintext = bytes.fromhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51")
    expected = bytes.fromhex("874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff")
    scheme = get_scheme("psk-aes128-ctr-hmac")
    state = scheme._key_schedule(key)
    encryptor = Cipher(state, modes.CTR(counter)).encryptor()
    assert encryptor.update(plaintext) + encryptor.finalize() == expected
    # tiny-AES-c through its binding gives the same (it increments the whole block too,
    # and the vector's second block crosses a carry into byte 14).
    assert bytes(tinyaes.AES(key, counter).CTR_xcrypt_buffer(plaintext)) == expected


@pytest.mark.parametrize(
    ("key", "ciphertext"),
    [  # FIPS 197 Appendix C.1 (AES-128) and C.3 (AES-256), plaintext 00112233…ff
        ("000102030405060708090a0b0c0d0e0f", "69c4e0d86a7b0430d8cdb78070b4c55a"),
        (
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "8ea2b7ca516745bfeafc49904b496089",
        ),
    ],
)
def test_table_free_aes_fips197_appendix_c(key, ciphertext):
    size = len(key) // 2 * 8
    scheme = get_scheme(f"psk-aes{size}-ctr-hmac-tablefree")
    round_keys = scheme._key_schedule(bytes.fromhex(key))
    block = bytes.fromhex("00112233445566778899aabbccddeeff")
    assert _lightweight.aes_encrypt_block(round_keys, block).hex() == ciphertext


def test_table_free_aes_ctr_sp800_38a():
    # NIST SP 800-38A F.5.1 CTR-AES128.Encrypt, blocks 1-2 (a carry into byte 14 between them).
    key = bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c")
    counter = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")
    plaintext = bytes.fromhex("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51")
    expected = bytes.fromhex("874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff")
    assert _lightweight.aes_ctr(_lightweight.aes_schedule(key), counter, plaintext) == expected


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 4097])
@pytest.mark.parametrize("bits", [128, 256])
def test_table_free_aes_ctr_equals_pyca_ctr(size, bits):
    key, data = os.urandom(bits // 8), os.urandom(size)
    seq_frame = frame(2**64 - 1, nonce_prefix=b"\xff\xff\xff\xff")  # carries into the prefix
    ours = get_scheme(f"psk-aes{bits}-ctr-hmac-tablefree")
    pyca = get_scheme(f"psk-aes{bits}-ctr-hmac")
    expected = pyca._encrypt(pyca._key_schedule(key), seq_frame, data)
    assert ours._encrypt(ours._key_schedule(key), seq_frame, data) == expected


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 4096, 4097])
def test_tinyaes_ctr_equals_pyca_ctr(size):
    key, data = os.urandom(16), os.urandom(size)
    seq_frame = frame(2**64 - 1, nonce_prefix=b"\xff\xff\xff\xff")  # carries into the prefix
    tiny = get_scheme("psk-tinyaes128-ctr-hmac")._encrypt(key, seq_frame, data)
    pyca_scheme = get_scheme("psk-aes128-ctr-hmac")
    assert tiny == pyca_scheme._encrypt(pyca_scheme._key_schedule(key), seq_frame, data)


@pytest.mark.parametrize(
    "name", ["psk-speck128-128-ctr-hmac-purepy", "psk-simon128-256-ctr-hmac-purepy"]
)
def test_pure_python_ctr_matches_the_block_cipher(name):
    # CTR by hand from the designers'-vector-checked block cipher: E(counter + i) XOR data.
    scheme = get_scheme(name)
    key = os.urandom(scheme.enc_key_bytes)
    block_cipher = scheme._key_schedule(key)
    data = os.urandom(40)
    f = frame(5, b"ABCD")
    counter = int.from_bytes(b"ABCD" + (5).to_bytes(8, "big") + b"\0" * 4, "big")
    stream = b"".join(block_cipher.encrypt(counter + i).to_bytes(16, "big") for i in range(3))
    assert scheme._encrypt(block_cipher, f, data) == bytes(
        a ^ b for a, b in zip(data, stream, strict=False)
    )
