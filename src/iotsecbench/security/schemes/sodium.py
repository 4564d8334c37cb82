"""libsodium schemes through PyNaCl: XChaCha20-Poly1305 (IETF) and XSalsa20-Poly1305 (NaCl
``crypto_secretbox``).

* ``xchacha20-poly1305``: a fresh **random** 192-bit nonce per message, sent after the header
  (draft-irtf-cfrg-xchacha: random nonces are safe at this size, the scheme for senders that
  keep no state); AAD as every AEAD here (``header || session_id || direction``). Wire:
  ``header (10) | nonce (24) | ciphertext | tag (16)``.
* ``xsalsa20-poly1305``: secretbox takes no associated data, so the 192-bit nonce carries
  what the AAD carries elsewhere: ``nonce = header (10) || session_id (8) || direction (3) ||
  nonce_prefix (3)``. It is never sent (both ends know every part) and never repeats for a key
  (it contains seq). A message from another session or direction, or with a modified header,
  is opened with another nonce and fails the Poly1305 tag. Wire: ``header (10) | tag (16) |
  ciphertext`` (NaCl's layout: the tag comes first).
"""

from __future__ import annotations

from typing import Any

from nacl import bindings

from iotsecbench.security.properties import PYNACL
from iotsecbench.security.schemes.base import (
    AeadScheme,
    DirectionKeys,
    Frame,
    PayloadScheme,
    SchemeError,
)

NONCE_BYTES = 24


class XChaCha20Poly1305Aead(AeadScheme):
    """XChaCha20-Poly1305 with random 192-bit nonces (libsodium)."""

    cipher = "xchacha20-poly1305"
    scheme_id = 14
    bulk_primitive = "xchacha20-poly1305"
    provenance = PYNACL.with_detail("libsodium crypto_aead_xchacha20poly1305_ietf (C)")
    enc_key_bytes = 32
    tag_bytes = 16
    explicit_nonce_bytes = NONCE_BYTES

    @classmethod
    def nonce_rule_text(cls) -> str:
        return "random 192-bit nonce per message (sent); seq still authenticated for replay"

    def _cipher_state(self, keys: DirectionKeys) -> bytes:
        return keys.enc_key

    def aead_seal(self, state: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        """The raw AEAD step (ciphertext || tag); published vectors test exactly this."""
        return bindings.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, aad, nonce, state)

    def aead_open(self, state: bytes, nonce: bytes, aad: bytes, body: bytes) -> bytes:
        # CryptoError propagates; the base maps it to AuthenticationError.
        return bindings.crypto_aead_xchacha20poly1305_ietf_decrypt(body, aad, nonce, state)


class XSalsa20Poly1305Secretbox(PayloadScheme):
    """NaCl secretbox (XSalsa20 + Poly1305) with a nonce built from the header (no AAD)."""

    cipher = "xsalsa20-poly1305"
    scheme_id = 15
    bulk_primitive = "xsalsa20-poly1305"
    provenance = PYNACL.with_detail("libsodium crypto_secretbox (C)")
    enc_key_bytes = 32
    tag_bytes = 16
    nonce_prefix_bytes = 3

    @classmethod
    def nonce_rule_text(cls) -> str:
        return "192-bit: header (incl. 64-bit seq) || session id || direction || 24-bit prefix"

    def _cipher_state(self, keys: DirectionKeys) -> bytes:
        return keys.enc_key

    @staticmethod
    def _nonce(frame: Frame) -> bytes:
        if frame.keys is None:
            raise SchemeError("secretbox nonces need keys")
        nonce = frame.aad + frame.keys.nonce_prefix
        if len(nonce) != NONCE_BYTES:
            raise SchemeError("secretbox nonce must be 24 bytes")
        return nonce

    def _seal_body(self, state: bytes, frame: Frame, plaintext: bytes) -> bytes:
        return bindings.crypto_secretbox_easy(plaintext, self._nonce(frame), state)

    def _open_body(self, state: Any, frame: Frame, body: bytes) -> bytes:
        return bindings.crypto_secretbox_open_easy(body, self._nonce(frame), state)
