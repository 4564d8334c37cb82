"""Encrypt-then-MAC schemes: a cipher for confidentiality, a separate MAC for integrity.

Wire: ``version(1) | scheme_id(1) | seq(8) [| IV(16)] | ciphertext | tag``. The tag is the MAC,
under the direction's ``mac_key`` (never the cipher key, docs/reliability.md), of

    header || session_id (8) || direction (3) || IV (CBC only) || ciphertext

— every part but the ciphertext has a fixed length, so the input is unambiguous. The receiver
verifies the tag (constant-time comparison) *before* decrypting anything, so padding errors
are unreachable for forged messages (no padding oracle).

Ciphers, all with keys from the direction's ``enc_key``:

* CTR mode (AES via pyca or tiny-AES-c; SPECK and SIMON in our C, ``_lightweight.c``, or
  through simonspeckciphers in pure Python for the ``-purepy`` schemes): the initial
  128-bit counter block is ``nonce_prefix (4) || seq (8) || 0x00000000``, incremented as one
  128-bit big-endian integer per block (NIST SP 800-38A, the standard incrementing function),
  so messages of one direction use disjoint counter ranges (up to 2^32 blocks each).
* CBC (AES via pyca): a fresh random 16-byte IV per message, PKCS#7 padding.
* Salsa20/20 (pycryptodome): the 64-bit nonce is ``seq`` itself (counter only: random 64-bit
  nonces would collide after about 2^32 messages).

MACs: HMAC-SHA256 (CPython's hmac → OpenSSL) or keyed BLAKE2b with a 32-byte digest
(RFC 7693, CPython's hashlib), both with full 32-byte tags.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, ClassVar

import tinyaes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from simon import SimonCipher
from speck import SpeckCipher

from iotsecbench.security.properties import (
    CRYPTOGRAPHY,
    HASHLIB,
    IOTSECBENCH_C,
    PYCRYPTODOME,
    SIMON_SPECK,
    TINYAES,
    Provenance,
)
from iotsecbench.security.schemes.base import (
    AuthenticationError,
    DirectionKeys,
    Frame,
    PayloadScheme,
    pycryptodome,
)
from iotsecbench.security.schemes.ecdh_aes_cbc import cbc_pkcs7_decrypt, cbc_pkcs7_encrypt
from iotsecbench.security.schemes.lightweight import C as _lightweight

BLOCK_BYTES = 16
MAC_TAG_BYTES = 32


def hmac_sha256(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 (RFC 2104), one C call."""
    return hmac.digest(key, data, "sha256")


def blake2b_mac(key: bytes, data: bytes) -> bytes:
    """Keyed BLAKE2b with a 32-byte digest (RFC 7693 §2.5: the key is the first block)."""
    return hashlib.blake2b(data, key=key, digest_size=MAC_TAG_BYTES).digest()


def ctr_initial_block(frame: Frame) -> bytes:
    """``nonce_prefix (4) || seq (8) || 0 (4)``: the first counter block of one message."""
    return frame.counter_nonce(12) + b"\0\0\0\0"


class EncryptThenMac(PayloadScheme):
    """Template for cipher + MAC: variants implement ``_encrypt``/``_decrypt`` and pick a MAC."""

    tag_bytes = MAC_TAG_BYTES
    mac_key_bytes = 32
    mac_primitive: ClassVar[str] = "hmac-sha256"
    mac_function: ClassVar[Any] = staticmethod(hmac_sha256)

    @classmethod
    def nonce_rule_text(cls) -> str:
        return "128-bit CTR block: 32-bit HKDF prefix || 64-bit seq || 32-bit block counter"

    def _cipher_state(self, keys: DirectionKeys) -> tuple[Any, bytes]:
        return self._key_schedule(keys.enc_key), keys.mac_key

    def _seal_body(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        cipher_state, mac_key = state
        ciphertext = self._encrypt(cipher_state, frame, plaintext)
        tag = self.mac_function(mac_key, frame.aad + frame.explicit_nonce + ciphertext)
        return ciphertext + tag

    def _open_body(self, state: Any, frame: Frame, body: bytes) -> bytes:
        cipher_state, mac_key = state
        ciphertext, tag = body[: -self.tag_bytes], body[-self.tag_bytes :]
        expected = self.mac_function(mac_key, frame.aad + frame.explicit_nonce + ciphertext)
        if not hmac.compare_digest(tag, expected):
            raise AuthenticationError(f"{self.name}: MAC check failed")
        return self._decrypt(cipher_state, frame, ciphertext)

    def seal_operations(self, plaintext_bytes: int) -> list[tuple[str, int]]:
        ciphertext = self._bulk_bytes(plaintext_bytes)
        mac_input = self.header_bytes + 8 + 3 + self.explicit_nonce_bytes + ciphertext
        return [(self.bulk_primitive, ciphertext), (self.mac_primitive, mac_input)]

    # --- variant hooks ------------------------------------------------------------------

    def _key_schedule(self, enc_key: bytes) -> Any:
        return enc_key

    def _encrypt(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        raise NotImplementedError

    def _decrypt(self, state: Any, frame: Frame, ciphertext: bytes) -> bytes:
        return self._encrypt(state, frame, ciphertext)  # stream ciphers: the same XOR


class AesCtrHmac(EncryptThenMac):
    """AES-CTR + HMAC-SHA256 (pyca + hashlib): the `block-sizes` study's bulk cipher."""

    cipher = "aes128-ctr-hmac"
    scheme_id = 8
    bulk_primitive = "aes-ctr"
    enc_key_bytes = 16
    provenance = Provenance.combined(
        CRYPTOGRAPHY, HASHLIB, detail="AES-CTR: cryptography (OpenSSL); HMAC-SHA256: hashlib"
    )

    def _key_schedule(self, enc_key: bytes) -> algorithms.AES:
        return algorithms.AES(enc_key)

    def _encrypt(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        encryptor = Cipher(state, modes.CTR(ctr_initial_block(frame))).encryptor()
        return encryptor.update(plaintext) + encryptor.finalize()


class Aes256CtrHmac(AesCtrHmac):
    cipher = "aes256-ctr-hmac"
    scheme_id = 9
    enc_key_bytes = 32


class TableFreeAesCtrHmac(EncryptThenMac):
    """AES-128-CTR + HMAC-SHA256 with our table-free, branch-free software AES
    (``_lightweight.c``): the "no AES instructions" case, as a core without them runs it
    when cache timing matters. Offered only where the extension was built (catalog.py)."""

    cipher = "aes128-ctr-hmac-tablefree"
    scheme_id = 29
    # Its own price: on a 32-bit core it costs ~20x the table AES that aes-ctr-software
    # (tiny-AES-c) stands for (docs/virtual-mcu.md).
    bulk_primitive = "aes-ctr-tablefree"
    enc_key_bytes = 16
    provenance = IOTSECBENCH_C.with_detail(
        "AES-CTR: iotsecbench's table-free C (the S-box by GF(2^8) inversion, bitsliced over "
        "four blocks; ~11x tiny-AES-c's tables on this host; security/schemes/lwc/aes.c); "
        "HMAC-SHA256: hashlib"
    )

    def _key_schedule(self, enc_key: bytes) -> bytes:
        return _lightweight.aes_schedule(enc_key)

    def _encrypt(self, state: bytes, frame: Frame, plaintext: bytes) -> bytes:
        return _lightweight.aes_ctr(state, ctr_initial_block(frame), plaintext)


class TableFreeAes256CtrHmac(TableFreeAesCtrHmac):
    cipher = "aes256-ctr-hmac-tablefree"
    scheme_id = 30
    enc_key_bytes = 32


class AesCbcHmac(EncryptThenMac):
    """AES-CBC (random IV, PKCS#7) + HMAC-SHA256 over IV and ciphertext."""

    cipher = "aes128-cbc-hmac"
    scheme_id = 10
    bulk_primitive = "aes-cbc"
    enc_key_bytes = 16
    explicit_nonce_bytes = BLOCK_BYTES
    provenance = Provenance.combined(
        CRYPTOGRAPHY, HASHLIB, detail="AES-CBC: cryptography (OpenSSL); HMAC-SHA256: hashlib"
    )

    @classmethod
    def nonce_rule_text(cls) -> str:
        return "random 128-bit IV per message (sent, and covered by the MAC)"

    @property
    def min_body_bytes(self) -> int:
        return BLOCK_BYTES + self.tag_bytes

    def _body_length_problem(self, body_bytes: int) -> str | None:
        if (body_bytes - self.tag_bytes) % BLOCK_BYTES:
            return "CBC ciphertext is not a whole number of blocks"
        return None

    def _body_expansion_bytes(self, plaintext_bytes: int) -> int:
        return BLOCK_BYTES - plaintext_bytes % BLOCK_BYTES + self.tag_bytes

    def _bulk_bytes(self, plaintext_bytes: int) -> int:
        return plaintext_bytes + BLOCK_BYTES - plaintext_bytes % BLOCK_BYTES

    def _key_schedule(self, enc_key: bytes) -> algorithms.AES:
        return algorithms.AES(enc_key)

    def _encrypt(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        return cbc_pkcs7_encrypt(state, frame.explicit_nonce, plaintext)

    def _decrypt(self, state: Any, frame: Frame, ciphertext: bytes) -> bytes:
        # A padding error is only reachable with a valid MAC: a sender bug.
        return cbc_pkcs7_decrypt(state, frame.explicit_nonce, ciphertext, self.name)


class Aes256CbcHmac(AesCbcHmac):
    cipher = "aes256-cbc-hmac"
    scheme_id = 11
    enc_key_bytes = 32


class TinyAesCtrHmac(EncryptThenMac):
    """tiny-AES-c (C, through the ``tinyaes`` Cython binding) in CTR mode + HMAC-SHA256.

    The binding is built for AES-128 only (tiny-AES-c fixes the key size at compile time),
    so there is no 256-bit variant. Its CTR mode increments the whole 16-byte block
    big-endian, the same function as pyca's CTR: the two interoperate (tested).
    """

    cipher = "tinyaes128-ctr-hmac"
    scheme_id = 12
    bulk_primitive = "aes-ctr-software"
    enc_key_bytes = 16
    provenance = Provenance.combined(
        TINYAES, HASHLIB, detail="AES-128-CTR: tiny-AES-c (C, via Cython); HMAC-SHA256: hashlib"
    )

    def _encrypt(self, state: bytes, frame: Frame, plaintext: bytes) -> bytes:
        return bytes(tinyaes.AES(state, ctr_initial_block(frame)).CTR_xcrypt_buffer(plaintext))


class Salsa20Blake2b(EncryptThenMac):
    """Salsa20/20 + keyed BLAKE2b (encrypt-then-MAC): the `payload-schemes` study's proposal,
    one call into our C per seal and per open (``_lightweight.c``); where the extension was
    not built, pycryptodome's Salsa20 and hashlib's BLAKE2b (the same bytes, tested)."""

    cipher = "salsa20-128-blake2b"
    scheme_id = 16
    bulk_primitive = "salsa20"
    mac_primitive = "blake2b"
    mac_function = staticmethod(blake2b_mac)
    enc_key_bytes = 16
    provenance = (
        IOTSECBENCH_C.with_detail(
            "Salsa20/20 + keyed BLAKE2b: iotsecbench's C, one call per message "
            "(security/schemes/lwc/salsa20_blake2b.c)"
        )
        if _lightweight is not None
        else Provenance.combined(
            PYCRYPTODOME, HASHLIB, detail="Salsa20/20: pycryptodome (C); keyed BLAKE2b: hashlib (C)"
        )
    )

    @classmethod
    def nonce_rule_text(cls) -> str:
        return "64-bit nonce = seq (counter only, per-direction key)"

    @staticmethod
    def _nonce(frame: Frame) -> bytes:
        assert frame.seq is not None
        return frame.seq.to_bytes(8, "big")

    def _seal_body(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        if _lightweight is None:
            return super()._seal_body(state, frame, plaintext)
        enc_key, mac_key = state
        prefix = frame.aad + frame.explicit_nonce
        return _lightweight.salsa20_blake2b_seal(
            enc_key, mac_key, self._nonce(frame), prefix, plaintext
        )

    def _open_body(self, state: Any, frame: Frame, body: bytes) -> bytes:
        if _lightweight is None:
            return super()._open_body(state, frame, body)
        enc_key, mac_key = state
        prefix = frame.aad + frame.explicit_nonce
        nonce = self._nonce(frame)
        plaintext = _lightweight.salsa20_blake2b_open(enc_key, mac_key, nonce, prefix, body)
        if plaintext is None:
            raise AuthenticationError(f"{self.name}: MAC check failed")
        return plaintext

    def _encrypt(self, state: bytes, frame: Frame, plaintext: bytes) -> bytes:
        if _lightweight is not None:
            return _lightweight.salsa20_xor(state, self._nonce(frame), plaintext)
        return pycryptodome().Salsa20.new(key=state, nonce=self._nonce(frame)).encrypt(plaintext)


class Salsa20k256Blake2b(Salsa20Blake2b):
    cipher = "salsa20-256-blake2b"
    scheme_id = 17
    enc_key_bytes = 32


class _PurePythonBlockCtr(EncryptThenMac):
    """CTR mode over a pure-Python 128-bit block cipher object with ``encrypt(int) -> int``.

    A 16-byte block maps to the library's 128-bit integer big-endian, i.e. the word order in
    which the designers print their test vectors (Beaulieu et al. 2013, Appendix B).
    """

    block_cipher_class: ClassVar[Any]

    def _key_schedule(self, enc_key: bytes) -> Any:
        return self.block_cipher_class(
            int.from_bytes(enc_key, "big"), key_size=8 * len(enc_key), block_size=128, mode="ECB"
        )

    def _encrypt(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        if not plaintext:
            return b""
        counter = int.from_bytes(ctr_initial_block(frame), "big")
        blocks = -(-len(plaintext) // BLOCK_BYTES)
        mask = (1 << 128) - 1
        keystream = b"".join(
            state.encrypt((counter + i) & mask).to_bytes(BLOCK_BYTES, "big") for i in range(blocks)
        )
        size = len(plaintext)
        mixed = int.from_bytes(plaintext, "big") ^ int.from_bytes(keystream[:size], "big")
        return mixed.to_bytes(size, "big")


class _NativeBlockCtr(_PurePythonBlockCtr):
    """CTR mode over our C SPECK128 / SIMON128 (``_lightweight.c``), the whole message in one
    call; the same bytes as the pure-Python path (checked in tests), which it falls back to,
    provenance included, where the extension was not built."""

    lightweight_cipher: ClassVar[str]  # "SPECK" or "SIMON"

    def _key_schedule(self, enc_key: bytes) -> Any:
        if _lightweight is None:
            return super()._key_schedule(enc_key)
        cipher = getattr(_lightweight, self.lightweight_cipher)
        return cipher, _lightweight.schedule(cipher, enc_key)

    def _encrypt(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        if _lightweight is None:
            return super()._encrypt(state, frame, plaintext)
        cipher, round_keys = state
        return _lightweight.ctr(cipher, round_keys, ctr_initial_block(frame), plaintext)


def _pure_provenance(name: str, why: str = "") -> Provenance:
    return Provenance.combined(
        SIMON_SPECK,
        HASHLIB,
        detail=f"{name} + CTR: simonspeckciphers (pure Python{why}); HMAC-SHA256: hashlib (C)",
    )


def _native_provenance(name: str) -> Provenance:
    if _lightweight is None:
        return _pure_provenance(name, ": the C extension was not built")
    return Provenance.combined(
        IOTSECBENCH_C,
        HASHLIB,
        detail=f"{name} + CTR: iotsecbench's C (security/schemes/lwc/speck_simon.c); "
        "HMAC-SHA256: hashlib (C)",
    )


class Speck128CtrHmac(_NativeBlockCtr):
    """SPECK128/128 in CTR mode + HMAC-SHA256 (SPECK in our C)."""

    cipher = "speck128-128-ctr-hmac"
    scheme_id = 20
    bulk_primitive = "speck128"
    block_cipher_class = SpeckCipher
    lightweight_cipher = "SPECK"
    enc_key_bytes = 16
    provenance = _native_provenance("SPECK128")


class Speck128k256CtrHmac(Speck128CtrHmac):
    cipher = "speck128-256-ctr-hmac"
    scheme_id = 21
    enc_key_bytes = 32


class Simon128CtrHmac(_NativeBlockCtr):
    """SIMON128/128 in CTR mode + HMAC-SHA256 (SIMON in our C)."""

    cipher = "simon128-128-ctr-hmac"
    scheme_id = 22
    bulk_primitive = "simon128"
    block_cipher_class = SimonCipher
    lightweight_cipher = "SIMON"
    enc_key_bytes = 16
    provenance = _native_provenance("SIMON128")


class Simon128k256CtrHmac(Simon128CtrHmac):
    cipher = "simon128-256-ctr-hmac"
    scheme_id = 23
    enc_key_bytes = 32


# The pure-Python builds of the same algorithms (the only kind on PyPI), kept for the
# `payload-schemes` study's reproduction and so the language's cost stays visible.


class Speck128CtrHmacPurePython(_PurePythonBlockCtr):
    """SPECK128/128 in CTR mode + HMAC-SHA256, SPECK in pure Python (simonspeckciphers)."""

    cipher = "speck128-128-ctr-hmac-purepy"
    scheme_id = 24
    bulk_primitive = "speck128"
    block_cipher_class = SpeckCipher
    enc_key_bytes = 16
    provenance = _pure_provenance("SPECK128")


class Speck128k256CtrHmacPurePython(Speck128CtrHmacPurePython):
    cipher = "speck128-256-ctr-hmac-purepy"
    scheme_id = 25
    enc_key_bytes = 32


class Simon128CtrHmacPurePython(_PurePythonBlockCtr):
    """SIMON128/128 in CTR mode + HMAC-SHA256, SIMON in pure Python (simonspeckciphers)."""

    cipher = "simon128-128-ctr-hmac-purepy"
    scheme_id = 26
    bulk_primitive = "simon128"
    block_cipher_class = SimonCipher
    enc_key_bytes = 16
    provenance = _pure_provenance("SIMON128")


class Simon128k256CtrHmacPurePython(Simon128CtrHmacPurePython):
    cipher = "simon128-256-ctr-hmac-purepy"
    scheme_id = 27
    enc_key_bytes = 32
