"""``aes128-cbc`` (e.g. ``ecdh-p256-aes128-cbc``): the `stability` study's hybrid, flaws included.

ECDH P-256 key establishment, AES-128-CBC with a fresh random 16-byte IV per message,
PKCS#7 padding and **no MAC** (docs/studies.md §1, configuration 3). Without a MAC the ciphertext
is malleable: a flipped bit garbles one block and flips the same bit of the next, and
nothing detects it. There is no sequence number, so replays are accepted too. The scheme is
run so its cost can be measured, and flagged wherever it is listed.

Padding errors are reported as ``MalformedMessageError``. Note that *distinguishing* a padding
error from other outcomes is itself a padding-oracle (Vaudenay 2002): an attacker who can
see the receiver's ``malformed`` counter, or time it, can decrypt messages. That is inherent
to unauthenticated CBC and another reason the scheme carries its warning.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from iotsecbench.security.properties import CRYPTOGRAPHY
from iotsecbench.security.schemes.base import (
    DirectionKeys,
    Frame,
    MalformedMessageError,
    PayloadScheme,
)

BLOCK_BYTES = 16


def cbc_pkcs7_encrypt(key_schedule: algorithms.AES, iv: bytes, plaintext: bytes) -> bytes:
    """AES-CBC of PKCS#7-padded ``plaintext`` (no integrity of its own)."""
    padder = padding.PKCS7(8 * BLOCK_BYTES).padder()
    padded = padder.update(plaintext) + padder.finalize()
    encryptor = Cipher(key_schedule, modes.CBC(iv)).encryptor()
    return encryptor.update(padded) + encryptor.finalize()


def cbc_pkcs7_decrypt(
    key_schedule: algorithms.AES, iv: bytes, ciphertext: bytes, scheme_name: str
) -> bytes:
    """Inverse of ``cbc_pkcs7_encrypt``; bad padding is ``MalformedMessageError``."""
    decryptor = Cipher(key_schedule, modes.CBC(iv)).decryptor()
    padded = decryptor.update(ciphertext) + decryptor.finalize()
    unpadder = padding.PKCS7(8 * BLOCK_BYTES).unpadder()
    try:
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError as error:
        raise MalformedMessageError(f"{scheme_name}: invalid PKCS#7 padding") from error


class AesCbcNoMac(PayloadScheme):
    """AES-128-CBC, random IV, PKCS#7, no MAC. Wire: version | scheme_id | IV(16) | ciphertext."""

    cipher = "aes128-cbc"
    scheme_id = 1
    bulk_primitive = "aes-cbc"
    provenance = CRYPTOGRAPHY
    sequenced = False  # the study's message carries no counter
    explicit_nonce_bytes = BLOCK_BYTES  # the IV
    enc_key_bytes = 16
    cipher_warnings = (
        "no integrity, no replay protection: ciphertext is malleable and replays are "
        "accepted (faithful to the stability study); padding errors are a padding oracle",
    )

    @classmethod
    def nonce_rule_text(cls) -> str:
        return "random 128-bit IV per message"

    @property
    def min_body_bytes(self) -> int:
        return BLOCK_BYTES  # PKCS#7 always adds at least one byte, so at least one block

    def _body_length_problem(self, body_bytes: int) -> str | None:
        if body_bytes % BLOCK_BYTES:
            return f"CBC ciphertext of {body_bytes} bytes is not a multiple of {BLOCK_BYTES}"
        return None

    def _body_expansion_bytes(self, plaintext_bytes: int) -> int:
        return BLOCK_BYTES - plaintext_bytes % BLOCK_BYTES

    def _bulk_bytes(self, plaintext_bytes: int) -> int:
        return plaintext_bytes + self._body_expansion_bytes(plaintext_bytes)

    def _cipher_state(self, keys: DirectionKeys) -> algorithms.AES:
        return algorithms.AES(keys.enc_key)

    def _seal_body(self, state: Any, frame: Frame, plaintext: bytes) -> bytes:
        return cbc_pkcs7_encrypt(state, frame.explicit_nonce, plaintext)

    def _open_body(self, state: Any, frame: Frame, body: bytes) -> bytes:
        return cbc_pkcs7_decrypt(state, frame.explicit_nonce, body, self.name)
