"""The scheme grammar: ``<key establishment>-<cipher>``, every combination a scheme.

A *cipher* is a wire format (one class per cipher construction and key size, with its own
``scheme_id``); a *key establishment* is how both ends get the session keys. Any key
establishment combines with any cipher, so the registry is their product, built here:

    x25519-chacha20-poly1305     psk-aes128-gcm     rsa-oaep-aes256-gcm
    ffdhe2048-aes128-ctr-hmac    dh-sha256-aes128-ctr-hmac (the block-sizes study's derivation)
    mlkem768-aes128-gcm          x25519mlkem768-mldsa44-chacha20-poly1305 (post-quantum)

A key establishment may carry a signature suite (``<agreement>-<signature>``): the ephemeral
agreements of ``SIGNABLE`` with each of ``SIGNATURES``, keys pinned per run.

The scheme's security properties are composed from the cipher's part (confidentiality,
integrity, replay protection, tag, nonce rule) and the key establishment's part
(authentication, forward secrecy). docs/schemes.md explains how to add either.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.backends.openssl import backend

from iotsecbench.security import pq_openssl
from iotsecbench.security.properties import CRYPTOGRAPHY, SecurityProperties
from iotsecbench.security.schemes import lightweight
from iotsecbench.security.schemes.aead import (
    Aes256Ccm8,
    Aes256Eax,
    Aes256Gcm,
    AesCcm8,
    AesEax,
    AesGcm,
    ChaCha20Poly1305Aead,
)
from iotsecbench.security.schemes.ascon import Ascon128v12, Ascon128v12PurePython, AsconAead128
from iotsecbench.security.schemes.base import PayloadScheme
from iotsecbench.security.schemes.ecdh_aes_cbc import AesCbcNoMac
from iotsecbench.security.schemes.etm import (
    Aes256CbcHmac,
    Aes256CtrHmac,
    AesCbcHmac,
    AesCtrHmac,
    Salsa20Blake2b,
    Salsa20k256Blake2b,
    Simon128CtrHmac,
    Simon128CtrHmacPurePython,
    Simon128k256CtrHmac,
    Simon128k256CtrHmacPurePython,
    Speck128CtrHmac,
    Speck128CtrHmacPurePython,
    Speck128k256CtrHmac,
    Speck128k256CtrHmacPurePython,
    TableFreeAes256CtrHmac,
    TableFreeAesCtrHmac,
    TinyAesCtrHmac,
)
from iotsecbench.security.schemes.sodium import XChaCha20Poly1305Aead, XSalsa20Poly1305Secretbox

UNAUTHENTICATED_WARNING = (
    "unauthenticated key exchange: no certificates, peers are trusted by deployment "
    "(pre-shared trust)"
)


@dataclass(frozen=True)
class KeyEstablishmentInfo:
    """What a key establishment contributes to a scheme's properties (no code: see
    ``security.key_establishment`` for the protocols)."""

    name: str  # the grammar token, e.g. "x25519"
    summary: str  # one line for listings
    authentication: str  # SecurityProperties.authentication
    forward_secrecy: bool
    warnings: tuple[str, ...] = ()
    post_quantum: bool = False  # the session keys resist a quantum computer (ML-KEM in it)


@dataclass(frozen=True)
class SignatureInfo:
    """A signature suite that can authenticate a key establishment (code: security.signatures)."""

    name: str  # the grammar token, e.g. "mldsa44"
    summary: str
    post_quantum: bool


KEY_ESTABLISHMENTS: dict[str, KeyEstablishmentInfo] = {
    info.name: info
    for info in (
        KeyEstablishmentInfo(
            "psk",
            "pre-shared 256-bit key (provisioned by the runner) + fresh nonces + HKDF-SHA256",
            "pre-shared trust",
            False,
            ("no forward secrecy: a leaked pre-shared key decrypts every recorded session",),
        ),
        KeyEstablishmentInfo(
            "ecdh-p256",
            "ephemeral ECDH on P-256 + HKDF-SHA256",
            "pre-shared trust",
            True,
            (UNAUTHENTICATED_WARNING,),
        ),
        KeyEstablishmentInfo(
            "x25519",
            "ephemeral X25519 (RFC 7748) + HKDF-SHA256",
            "pre-shared trust",
            True,
            (UNAUTHENTICATED_WARNING,),
        ),
        KeyEstablishmentInfo(
            "ffdhe2048",
            "ephemeral finite-field DH, RFC 7919 ffdhe2048 group + HKDF-SHA256",
            "pre-shared trust",
            True,
            (UNAUTHENTICATED_WARNING,),
        ),
        KeyEstablishmentInfo(
            "dh-sha256",
            "ffdhe2048 DH, SHA-256 of the shared secret (the block-sizes study) + HKDF-SHA256",
            "pre-shared trust",
            True,
            (UNAUTHENTICATED_WARNING,),
        ),
        KeyEstablishmentInfo(
            "rsa-oaep",
            "RSA-2048 OAEP-SHA256 key transport to a fresh receiver key + HKDF-SHA256",
            "pre-shared trust",
            True,  # the receiver's RSA key is generated per session and dropped afterwards
            (
                "unauthenticated RSA key transport: without a pinned receiver key an active "
                "man in the middle can substitute its own (as the block-sizes study notes)",
            ),
        ),
        *(
            KeyEstablishmentInfo(
                f"mlkem{level}",
                f"ML-KEM-{level} (FIPS 203) encapsulation to a fresh receiver key + HKDF-SHA256",
                "pre-shared trust",
                True,  # the receiver's decapsulation key is generated per session
                (UNAUTHENTICATED_WARNING,),
                True,
            )
            for level in (512, 768, 1024)
        ),
        KeyEstablishmentInfo(
            "x25519mlkem768",
            "hybrid X25519 + ML-KEM-768, both secrets into HKDF-SHA256 (the X25519MLKEM768 "
            "combiner of draft-ietf-tls-ecdhe-mlkem)",
            "pre-shared trust",
            True,
            (UNAUTHENTICATED_WARNING,),
            True,
        ),
    )
}

# The agreements a signature suite can authenticate: the ephemeral ones the `pq` study compares.
SIGNABLE = ("x25519", "mlkem512", "mlkem768", "mlkem1024", "x25519mlkem768")

SIGNATURES: dict[str, SignatureInfo] = {
    info.name: info
    for info in (
        SignatureInfo("mldsa44", "ML-DSA-44 (FIPS 204)", True),
        SignatureInfo("mldsa65", "ML-DSA-65 (FIPS 204)", True),
        SignatureInfo("ed25519", "Ed25519 (RFC 8032)", False),
        SignatureInfo("ecdsap256", "ECDSA P-256/SHA-256", False),
    )
}
PINNED_WARNING = (
    "signatures with keys pinned per run: both ends are authenticated, so an active man in "
    "the middle is refused, but the keys are provisioned by the runner, not certified"
)


def _signed(kx: KeyEstablishmentInfo, signature: SignatureInfo) -> KeyEstablishmentInfo:
    quantum_note = (
        ()
        if signature.post_quantum or not kx.post_quantum
        else (f"{signature.name} authentication is not post-quantum: a future quantum computer "
              "could impersonate a peer (but not decrypt recorded sessions)",)
    )  # fmt: skip
    return KeyEstablishmentInfo(
        f"{kx.name}-{signature.name}",
        f"{kx.summary}, both sides signing the exchange with {signature.summary}",
        "pinned signature keys",
        kx.forward_secrecy,
        (PINNED_WARNING, *quantum_note),
        kx.post_quantum,
    )


KEY_ESTABLISHMENTS.update(
    {
        f"{name}-{signature}": _signed(KEY_ESTABLISHMENTS[name], SIGNATURES[signature])
        for name in SIGNABLE
        for signature in SIGNATURES
    }
)

# Every cipher, in listing order. scheme_id values are fixed forever (wire format).
CIPHERS: tuple[type[PayloadScheme], ...] = (
    AesCbcNoMac,
    AesGcm,
    Aes256Gcm,
    AesCcm8,
    Aes256Ccm8,
    AesEax,
    Aes256Eax,
    AesCtrHmac,
    Aes256CtrHmac,
    AesCbcHmac,
    Aes256CbcHmac,
    TinyAesCtrHmac,
    ChaCha20Poly1305Aead,
    XChaCha20Poly1305Aead,
    XSalsa20Poly1305Secretbox,
    Salsa20Blake2b,
    Salsa20k256Blake2b,
    Ascon128v12,
    Ascon128v12PurePython,
    # only in our C (lightweight.py; doctor says when it was not built)
    *((AsconAead128, TableFreeAesCtrHmac, TableFreeAes256CtrHmac) if lightweight.AVAILABLE else ()),
    Speck128CtrHmac,
    Speck128k256CtrHmac,
    Simon128CtrHmac,
    Simon128k256CtrHmac,
    Speck128CtrHmacPurePython,
    Speck128k256CtrHmacPurePython,
    Simon128CtrHmacPurePython,
    Simon128k256CtrHmacPurePython,
)


def compose_properties(cipher: type[PayloadScheme], kx: KeyEstablishmentInfo) -> SecurityProperties:
    """A scheme's properties: the cipher's guarantees plus the key establishment's."""
    return SecurityProperties(
        confidentiality=True,
        integrity=cipher.tag_bytes > 0,
        authentication=kx.authentication,
        replay_protection=cipher.sequenced and cipher.tag_bytes > 0,
        end_to_end=True,
        forward_secrecy=kx.forward_secrecy,
        post_quantum=kx.post_quantum,
        tag_bytes=cipher.tag_bytes,
        nonce_rule=cipher.nonce_rule_text(),
        warnings=tuple(cipher.cipher_warnings) + kx.warnings,
    )


# Which library runs a key establishment's public-key work (and its HKDF), recorded in each
# scheme's provenance so a result says which OpenSSL computed its ML-KEM: read once.
_BUNDLED = f"cryptography {CRYPTOGRAPHY.version} ({backend.openssl_version_text()})"
_MLKEM512 = f"{pq_openssl.ARCHIVE.library} via ctypes, HKDF and signatures: {_BUNDLED}"


def key_establishment_library(kx_name: str) -> str:
    """The library of a key establishment's public-key operations (and its HKDF)."""
    return _MLKEM512 if kx_name.split("-")[0] == "mlkem512" else _BUNDLED


def compose(cipher: type[PayloadScheme], kx_name: str) -> type[PayloadScheme]:
    """The scheme class ``<kx_name>-<cipher>``: the cipher's class with the key establishment."""
    kx = KEY_ESTABLISHMENTS[kx_name]
    name = f"{kx.name}-{cipher.cipher}"
    detail = "; ".join(
        part
        for part in (
            cipher.provenance.detail,
            f"key establishment: {key_establishment_library(kx_name)}",
        )
        if part
    )
    attributes = {
        "name": name,
        "key_establishment": kx.name,
        "provenance": cipher.provenance.with_detail(detail),
        "properties": compose_properties(cipher, kx),
        "__doc__": f"{cipher.__doc__ or cipher.cipher} Keys: {kx.summary}.",
        "__module__": cipher.__module__,
    }
    class_name = "".join(part.capitalize() for part in name.replace(".", "-").split("-"))
    return type(class_name, (cipher,), attributes)
