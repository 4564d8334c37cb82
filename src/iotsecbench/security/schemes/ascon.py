"""Ascon: the **v1.2** submission (Ascon-128) and the standard, NIST SP 800-232 Ascon-AEAD128.

The two are different algorithms and do not interoperate (SP 800-232 changed the IV, the
byte order, the rate and the padding). PyPI has only Ascon-128 v1.2 as an AEAD:

* ``ascon128v12``: ``fast-ascon`` (RustCrypto's ascon-aead crate, native);
* ``ascon128v12-purepy``: ``ascon`` (the designers' pyascon reference, pure Python), kept as a
  separate scheme so the cost of the implementation language is visible next to the native
  build of the very same algorithm (the `payload-schemes` study's flaw);
* ``ascon-aead128``: SP 800-232 Ascon-AEAD128 in iotsecbench's C (``_lightweight.c``), checked
  against the standard's 1,089 known answers (tests/data/vectors/ascon/).

Wire (all): ``header (10) | ciphertext | tag (16)``; nonce ``nonce_prefix (4) || seq`` as
128 bits, never sent; AAD ``header || session_id || direction``.
"""

from __future__ import annotations

from typing import Any

import ascon as pyascon
import fast_ascon

from iotsecbench.security.properties import ASCON_PURE, FAST_ASCON, IOTSECBENCH_C
from iotsecbench.security.schemes.base import (
    AeadScheme,
    AuthenticationError,
    DirectionKeys,
)
from iotsecbench.security.schemes.lightweight import C as _lightweight

VARIANT = "Ascon-128"  # both libraries' name for Ascon-128 v1.2
NONCE_BYTES = 16


class Ascon128v12(AeadScheme):
    """Ascon-128 v1.2 (native, fast-ascon)."""

    cipher = "ascon128v12"
    scheme_id = 18
    bulk_primitive = "ascon128"
    provenance = FAST_ASCON.with_detail("RustCrypto ascon-aead 0.4 (Rust), Ascon-128 v1.2")
    enc_key_bytes = 16
    tag_bytes = 16
    counter_nonce_bytes = NONCE_BYTES

    @classmethod
    def nonce_rule_text(cls) -> str:
        return "128-bit: 32-bit HKDF prefix || 96-bit counter per direction"

    def _cipher_state(self, keys: DirectionKeys) -> bytes:
        # fast-ascon panics (a BaseException) on a wrong key length; the base class has
        # already checked it is 16 bytes.
        return keys.enc_key

    def aead_seal(self, state: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        """The raw AEAD step (ciphertext || tag); published vectors test exactly this."""
        return fast_ascon.encrypt(state, nonce, aad, plaintext, VARIANT)

    def aead_open(self, state: bytes, nonce: bytes, aad: bytes, body: bytes) -> bytes:
        try:
            return fast_ascon.decrypt(state, nonce, aad, body, VARIANT)
        except Exception as error:  # fast-ascon reports a bad tag as a bare Exception
            raise AuthenticationError(f"{self.name}: authentication failed") from error


class Ascon128v12PurePython(Ascon128v12):
    """Ascon-128 v1.2 (pure Python, the pyascon reference)."""

    cipher = "ascon128v12-purepy"
    scheme_id = 19
    provenance = ASCON_PURE.with_detail("pyascon reference implementation, Ascon-128 v1.2")

    def aead_seal(self, state: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        return pyascon.encrypt(state, nonce, aad, plaintext, VARIANT)

    def aead_open(self, state: Any, nonce: bytes, aad: bytes, body: bytes) -> bytes:
        plaintext = pyascon.decrypt(state, nonce, aad, body, VARIANT)
        if plaintext is None:  # pyascon returns None when the tag does not verify
            raise AuthenticationError(f"{self.name}: authentication failed")
        return plaintext


class AsconAead128(Ascon128v12):
    """NIST SP 800-232 Ascon-AEAD128 (iotsecbench's C)."""

    cipher = "ascon-aead128"
    scheme_id = 28
    bulk_primitive = "ascon-aead128"
    provenance = IOTSECBENCH_C.with_detail(
        "Ascon-AEAD128 (NIST SP 800-232): iotsecbench's C, security/schemes/lwc/ascon.c"
    )

    def aead_seal(self, state: bytes, nonce: bytes, aad: bytes, plaintext: bytes) -> bytes:
        return _lightweight.ascon_aead128_encrypt(state, nonce, aad, plaintext)

    def aead_open(self, state: bytes, nonce: bytes, aad: bytes, body: bytes) -> bytes:
        plaintext = _lightweight.ascon_aead128_decrypt(state, nonce, aad, body)
        if plaintext is None:
            raise AuthenticationError(f"{self.name}: authentication failed")
        return plaintext
