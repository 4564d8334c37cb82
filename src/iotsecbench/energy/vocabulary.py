"""The primitive vocabulary the energy model prices (mirror of docs/internals.md).

Agents log operations with these names; a device profile must price every one of them.
``bulk`` primitives are logged with an amount in bytes, ``count`` primitives with a number of
operations. Keep this table and the one in docs/internals.md identical.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["BULK_PRIMITIVES", "COUNT_PRIMITIVES", "PRIMITIVE_KINDS", "PrimitiveKind"]

PrimitiveKind = Literal["bulk", "count"]

BULK_PRIMITIVES: tuple[str, ...] = (
    "aes-cbc",
    "aes-gcm",
    "aes-ctr",
    "chacha20-poly1305",
    "sha256",
    "hmac-sha256",
    # payload-schemes study (security/schemes): priced in energy/profiles with source/status
    "aes-ccm",
    "aes-eax",
    "aes-ctr-software",  # AES in software (tiny-AES-c), not the device's AES hardware
    "aes-ctr-tablefree",  # our table-free, constant-time AES (the *-tablefree schemes)
    "xchacha20-poly1305",
    "xsalsa20-poly1305",
    "salsa20",
    "blake2b",
    "ascon128",
    "ascon-aead128",  # NIST SP 800-232 (not the v1.2 submission's ascon128)
    "speck128",
    "simon128",
)

COUNT_PRIMITIVES: tuple[str, ...] = (
    "ecdh-p256-keygen",
    "ecdh-p256-derive",
    "x25519-keygen",
    "x25519-derive",
    "rsa2048-public",
    "rsa2048-private",
    "rsa3072-public",
    "rsa3072-private",
    "ecdsa-p256-sign",
    "ecdsa-p256-verify",
    "hkdf-sha256",
    "mqtt-packet",
    # key establishment (security/key_establishment.py)
    "ffdhe2048-keygen",
    "ffdhe2048-derive",
    "rsa2048-keygen",
    # post-quantum key establishment and signed exchanges (security/agreements.py,
    # security/signatures.py) and TLS 1.3's post-quantum groups and certificates
    *(
        f"mlkem{level}-{step}"
        for level in (512, 768, 1024)
        for step in ("keygen", "encaps", "decaps")
    ),
    *(f"mldsa{level}-{step}" for level in (44, 65) for step in ("sign", "verify")),
    "ed25519-sign",
    "ed25519-verify",
)

PRIMITIVE_KINDS: dict[str, PrimitiveKind] = {
    **dict.fromkeys(BULK_PRIMITIVES, "bulk"),
    **dict.fromkeys(COUNT_PRIMITIVES, "count"),
}
