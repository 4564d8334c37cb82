"""Counter-nonce AEAD schemes: ECDH P-256 key establishment, then an AEAD per message.

Wire: ``version(1) | scheme_id(1) | seq(8) | ciphertext | tag``. The nonce is
``nonce_prefix(4, from HKDF, per direction) || seq(8, big-endian)``, never transmitted; the
associated data is ``header || session_id || direction`` (see ``Frame.aad``). The base class
guarantees seq never repeats for a sealer and keeps the receiver's replay window, so a new
AEAD is one small subclass naming its cipher class, key length, tag length and energy
primitive (e.g. ChaCha20-Poly1305: ``aead_class = ChaCha20Poly1305``, ``enc_key_bytes = 32``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from iotsecbench.security.properties import CRYPTOGRAPHY, SecurityProperties
from iotsecbench.security.schemes.base import DirectionKeys, Frame, PayloadScheme


class CounterNonceAead(PayloadScheme):
    """Any pyca-style AEAD (``cls(key).encrypt(nonce, data, aad)``) with counter nonces."""

    aead_class: ClassVar[Any]
    nonce_bytes: ClassVar[int] = 12
    key_establishment = "ecdh-p256"
    provenance = CRYPTOGRAPHY

    def _cipher_state(self, keys: DirectionKeys) -> Any:
        return self.aead_class(keys.enc_key)

    def _seal_body(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        return state.encrypt(frame.counter_nonce(self.nonce_bytes), plaintext, frame.aad)

    def _open_body(self, state: Any, frame: Frame, body: bytes) -> bytes:
        # InvalidTag propagates; the base maps it to AuthenticationError.
        return state.decrypt(frame.counter_nonce(self.nonce_bytes), body, frame.aad)


class EcdhAesGcmScheme(CounterNonceAead):
    """AES-128-GCM with 96-bit counter nonces and a replay window: the fix for the hybrid."""

    name = "ecdh-p256-aes128-gcm"
    scheme_id = 2
    bulk_primitive = "aes-gcm"
    aead_class = AESGCM
    enc_key_bytes = 16
    tag_bytes = 16
    properties = SecurityProperties(
        confidentiality=True,
        integrity=True,
        authentication="pre-shared trust",
        replay_protection=True,
        end_to_end=True,
        forward_secrecy=True,
        tag_bytes=16,
        nonce_rule="96-bit: 32-bit HKDF prefix || 64-bit counter per direction",
        warnings=(
            "unauthenticated key exchange: no certificates, peers are trusted by "
            "deployment (pre-shared trust)",
        ),
    )
