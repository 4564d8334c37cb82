"""Counter-nonce AEADs: AES-GCM, AES-CCM (8-byte tag), ChaCha20-Poly1305 (OpenSSL's EVP with
the framing in C, ``evp.py``; pyca ``cryptography`` where that extension is not built), AES-EAX
(pycryptodome).

Wire: ``version(1) | scheme_id(1) | seq(8) | ciphertext | tag``. The nonce is
``nonce_prefix (from HKDF, per direction) || seq`` (big-endian, padded to the nonce length),
never transmitted; the associated data is ``header || session_id || direction`` (see
``Frame.aad``). The base class guarantees seq never repeats for a sealer and keeps the
receiver's replay window, so a new AEAD is one small subclass naming its cipher class, key
length, tag length and energy primitive.
"""

from __future__ import annotations

from typing import Any, ClassVar

from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305

from iotsecbench.security.properties import CRYPTOGRAPHY, PYCRYPTODOME
from iotsecbench.security.schemes import evp
from iotsecbench.security.schemes.base import AeadScheme, DirectionKeys, pycryptodome


class CounterNonceAead(AeadScheme):
    """An AEAD OpenSSL implements, with counter nonces: EVP with the framing in C when the
    extension is built, else pyca's class (``cls(key).encrypt(nonce, data, aad)``)."""

    aead_class: ClassVar[Any]  # pyca's class: the fallback, and tests' independent reference
    evp_cipher: ClassVar[str]  # OpenSSL's name of the same cipher, e.g. "AES-128-GCM"
    nonce_bytes: ClassVar[int] = 12
    counter_nonce_bytes = 12
    aead_accepts_buffers = True  # both backends take any bytes-like object
    provenance = evp.PROVENANCE or CRYPTOGRAPHY
    tag_bytes = 16

    @classmethod
    def nonce_rule_text(cls) -> str:
        prefix = 8 * cls.nonce_prefix_bytes
        return (
            f"{8 * cls.nonce_bytes}-bit: {prefix}-bit HKDF prefix || "
            f"{8 * cls.nonce_bytes - prefix}-bit counter per direction"
        )

    def _cipher_state(self, keys: DirectionKeys) -> Any:
        if evp.ACTIVE:
            return evp.aead(self.evp_cipher, keys.enc_key, self.tag_bytes)
        return self.pyca_state(keys.enc_key)

    def pyca_state(self, key: bytes) -> Any:
        """pyca's object for ``key``: the backend without the C extension."""
        return self.aead_class(key)

    def native_framing(self, state: Any, keys: DirectionKeys, first_seq: int) -> Any | None:
        if not evp.is_aead(state):
            return None
        return evp.framing(
            state,
            keys,
            scheme_id=self.scheme_id,
            nonce_bytes=self.counter_nonce_bytes,
            first_seq=first_seq,
            label=self.name,
        )

    def aead_seal(self, state: Any, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        """The raw AEAD step (ciphertext || tag); published vectors test exactly this."""
        return state.encrypt(nonce, plaintext, aad)

    def aead_open(self, state: Any, nonce: bytes, aad: bytes, body: bytes) -> bytes:
        # InvalidTag propagates; the base maps it to AuthenticationError.
        return state.decrypt(nonce, body, aad)

    def aead_functions(self, state: Any) -> tuple[Any, Any]:
        return state.encrypt, state.decrypt  # pyca's own (nonce, data, aad) methods


class AesGcm(CounterNonceAead):
    """AES-GCM, 96-bit counter nonces (NIST SP 800-38D §8.2.1 deterministic construction)."""

    cipher = "aes128-gcm"
    scheme_id = 2
    bulk_primitive = "aes-gcm"
    aead_class = AESGCM
    evp_cipher = "AES-128-GCM"
    enc_key_bytes = 16


class Aes256Gcm(AesGcm):
    cipher = "aes256-gcm"
    scheme_id = 3
    evp_cipher = "AES-256-GCM"
    enc_key_bytes = 32


class AesCcm8(CounterNonceAead):
    """AES-CCM with an 8-byte tag (the study's CCM8), 88-bit nonces (messages up to 4 GiB)."""

    cipher = "aes128-ccm8"
    scheme_id = 4
    bulk_primitive = "aes-ccm"
    aead_class = AESCCM
    evp_cipher = "AES-128-CCM"
    enc_key_bytes = 16
    tag_bytes = 8
    nonce_bytes = 11  # L = 15 - 11 = 4 length bytes: messages up to 2**32 - 1 bytes
    counter_nonce_bytes = 11
    nonce_prefix_bytes = 3
    cipher_warnings = (
        "64-bit tag: forgery odds 2^-64 per attempt (Wycheproof flags short tags InsecureTagSize)",
    )

    def pyca_state(self, key: bytes) -> Any:
        return AESCCM(key, tag_length=self.tag_bytes)


class Aes256Ccm8(AesCcm8):
    cipher = "aes256-ccm8"
    scheme_id = 5
    evp_cipher = "AES-256-CCM"
    enc_key_bytes = 32


class AesEax(AeadScheme):
    """AES-EAX (pycryptodome; AES core in C, the EAX composition in Python), 128-bit nonces."""

    cipher = "aes128-eax"
    scheme_id = 6
    bulk_primitive = "aes-eax"
    provenance = PYCRYPTODOME.with_detail("AES core in C; EAX (CTR + OMAC) composed in Python")
    enc_key_bytes = 16
    tag_bytes = 16
    nonce_bytes: ClassVar[int] = 16
    counter_nonce_bytes = 16

    @classmethod
    def nonce_rule_text(cls) -> str:
        return "128-bit: 32-bit HKDF prefix || 96-bit counter per direction"

    def _cipher_state(self, keys: DirectionKeys) -> bytes:
        return keys.enc_key  # an EAX object serves one message: keep the key

    def aead_seal(self, state: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        """The raw AEAD step (ciphertext || tag); published vectors test exactly this."""
        aes = pycryptodome().AES
        cipher = aes.new(state, aes.MODE_EAX, nonce=nonce, mac_len=16)
        cipher.update(aad)
        ciphertext, tag = cipher.encrypt_and_digest(plaintext)
        return ciphertext + tag

    def aead_open(self, state: bytes, nonce: bytes, aad: bytes, body: bytes) -> bytes:
        aes = pycryptodome().AES
        cipher = aes.new(state, aes.MODE_EAX, nonce=nonce, mac_len=16)
        cipher.update(aad)
        # ValueError("MAC check failed") propagates; the base maps it to AuthenticationError.
        return cipher.decrypt_and_verify(body[: -self.tag_bytes], body[-self.tag_bytes :])


class Aes256Eax(AesEax):
    cipher = "aes256-eax"
    scheme_id = 7
    enc_key_bytes = 32


class ChaCha20Poly1305Aead(CounterNonceAead):
    """ChaCha20-Poly1305 (RFC 8439), 96-bit counter nonces."""

    cipher = "chacha20-poly1305"
    scheme_id = 13
    bulk_primitive = "chacha20-poly1305"
    aead_class = ChaCha20Poly1305
    evp_cipher = "ChaCha20-Poly1305"
    enc_key_bytes = 32
