"""Signatures that authenticate a payload key exchange: four suites, keys pinned per run.

A signed key establishment (``x25519mlkem768-mldsa44``, ``x25519-ecdsap256`` …) adds one
signature to the receiver's hello and one to the emitter's reply (docs/wire-format.md). Each
side holds its own private key and the peer's public key, both made fresh for the run by the
runner and handed over in a 0600 file (``PinnedKeys``): an active man in the middle no longer
goes unnoticed, at the price of a provisioning step and the signatures' bytes on the wire.

=============  ===================================  =========  ==========  ===============
token          algorithm                            public     signature   library
=============  ===================================  =========  ==========  ===============
``mldsa44``    ML-DSA-44 (FIPS 204), context below  1,312 B    2,420 B     cryptography
``mldsa65``    ML-DSA-65 (FIPS 204), context below  1,952 B    3,309 B     cryptography
``ed25519``    Ed25519 (RFC 8032)                   32 B       64 B        cryptography
``ecdsap256``  ECDSA P-256 / SHA-256, r‖s raw       65 B       64 B        cryptography
=============  ===================================  =========  ==========  ===============

ML-DSA signs with the FIPS 204 context string ``CONTEXT`` (hedged: OpenSSL's default
randomised signing); every suite signs ``label || transcript`` so a signature made for one
scheme or one message never verifies for another. Private keys never appear in ``repr``.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from iotsecbench.errors import SpecError
from iotsecbench.security.schemes.base import AuthenticationError, MalformedMessageError
from iotsecbench.security.schemes.catalog import SIGNATURES

CONTEXT = b"iotsb/v1"  # FIPS 204 context string of every ML-DSA signature here
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


class SignatureSuite(ABC):
    """One signature algorithm: fresh key pairs, signing and verification on raw bytes."""

    name: str  # the grammar token (catalog.SIGNATURES)
    primitive: str  # the energy model's prefix: "<primitive>-sign", "<primitive>-verify"
    public_bytes: int
    signature_bytes: int

    @abstractmethod
    def generate(self) -> tuple[bytes, bytes]:
        """A fresh (private key, public key), both raw bytes."""

    @abstractmethod
    def load_private(self, private: bytes) -> Any:
        """The library's key object for raw private bytes (loaded once per agent)."""

    @abstractmethod
    def sign(self, key: Any, message: bytes) -> bytes:
        """A ``signature_bytes``-long signature of ``message``."""

    @abstractmethod
    def _verify(self, public: bytes, signature: bytes, message: bytes) -> None:
        """Raise InvalidSignature or ValueError unless ``signature`` is valid."""

    def verify(self, public: bytes, signature: bytes, message: bytes, what: str) -> None:
        """Accept a valid signature; else AuthenticationError naming ``what`` was not signed."""
        if len(signature) != self.signature_bytes:
            raise MalformedMessageError(f"{what}: signature of {len(signature)} bytes")
        try:
            self._verify(public, signature, message)
        except (InvalidSignature, ValueError):
            raise AuthenticationError(
                f"{what} is not signed by the peer's pinned {self.name} key"
            ) from None


class MlDsaSuite(SignatureSuite):
    def __init__(self, name: str, private_class: Any, public_class: Any, sizes: tuple[int, int]):
        self.name = self.primitive = name
        self._private, self._public = private_class, public_class
        self.public_bytes, self.signature_bytes = sizes

    def generate(self) -> tuple[bytes, bytes]:
        key = self._private.generate()
        return key.private_bytes_raw(), key.public_key().public_bytes_raw()  # the 32-byte seed

    def load_private(self, private: bytes) -> Any:
        return self._private.from_seed_bytes(private)

    def sign(self, key: Any, message: bytes) -> bytes:
        return key.sign(message, CONTEXT)

    def _verify(self, public: bytes, signature: bytes, message: bytes) -> None:
        self._public.from_public_bytes(public).verify(signature, message, CONTEXT)


class Ed25519Suite(SignatureSuite):
    name = primitive = "ed25519"
    public_bytes = 32
    signature_bytes = 64

    def generate(self) -> tuple[bytes, bytes]:
        key = ed25519.Ed25519PrivateKey.generate()
        return key.private_bytes_raw(), key.public_key().public_bytes_raw()

    def load_private(self, private: bytes) -> Any:
        return ed25519.Ed25519PrivateKey.from_private_bytes(private)

    def sign(self, key: Any, message: bytes) -> bytes:
        return key.sign(message)

    def _verify(self, public: bytes, signature: bytes, message: bytes) -> None:
        ed25519.Ed25519PublicKey.from_public_bytes(public).verify(signature, message)


class EcdsaP256Suite(SignatureSuite):
    """ECDSA on P-256 with SHA-256; the signature travels as r‖s (32 + 32 bytes), not DER, so
    the message length is fixed."""

    name = "ecdsap256"
    primitive = "ecdsa-p256"
    public_bytes = 65
    signature_bytes = 64

    def generate(self) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        private = key.private_numbers().private_value.to_bytes(32, "big")
        return private, key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)

    def load_private(self, private: bytes) -> Any:
        return ec.derive_private_key(int.from_bytes(private, "big"), ec.SECP256R1())

    def sign(self, key: Any, message: bytes) -> bytes:
        r, s = decode_dss_signature(key.sign(message, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    def _verify(self, public: bytes, signature: bytes, message: bytes) -> None:
        r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
        if not (0 < r < P256_ORDER and 0 < s < P256_ORDER):
            raise InvalidSignature
        peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), public)
        peer.verify(encode_dss_signature(r, s), message, ec.ECDSA(hashes.SHA256()))


SUITES: dict[str, SignatureSuite] = {
    suite.name: suite
    for suite in (
        MlDsaSuite("mldsa44", mldsa.MLDSA44PrivateKey, mldsa.MLDSA44PublicKey, (1312, 2420)),
        MlDsaSuite("mldsa65", mldsa.MLDSA65PrivateKey, mldsa.MLDSA65PublicKey, (1952, 3309)),
        Ed25519Suite(),
        EcdsaP256Suite(),
    )
}
if set(SUITES) != set(SIGNATURES):  # the catalogue names them, this module runs them
    raise RuntimeError(f"signature suites {sorted(SUITES)} != catalogue {sorted(SIGNATURES)}")


@dataclass(frozen=True)
class PinnedKeys:
    """One side's signing key and the peer's pinned public key (secrets hidden in repr)."""

    suite: SignatureSuite
    own_private: Any = field(repr=False)  # the library's key object
    peer_public: bytes = field(repr=False)

    def sign(self, message: bytes) -> bytes:
        return self.suite.sign(self.own_private, message)

    def verify(self, signature: bytes, message: bytes, what: str) -> None:
        self.suite.verify(self.peer_public, signature, message, what)


def provision(suite_name: str) -> dict[str, dict[str, str]]:
    """Fresh key pairs for one run: ``{role: {"suite", "private", "peer_public"}}`` (hex), what
    the runner writes to each agent's 0600 file."""
    suite = SUITES[suite_name]
    (emitter_private, emitter_public), (receiver_private, receiver_public) = (
        suite.generate(),
        suite.generate(),
    )
    return {
        "emitter": {"suite": suite.name, "private": emitter_private.hex(),
                    "peer_public": receiver_public.hex()},
        "receiver": {"suite": suite.name, "private": receiver_private.hex(),
                     "peer_public": emitter_public.hex()},
    }  # fmt: skip


def pinned_keys(record: dict[str, str]) -> PinnedKeys:
    """The ``PinnedKeys`` of one role's record (``provision``); SpecError when malformed."""
    try:
        suite = SUITES[record["suite"]]
        peer_public = bytes.fromhex(record["peer_public"])
        own = suite.load_private(bytes.fromhex(record["private"]))
    except (KeyError, ValueError, TypeError) as error:
        raise SpecError(f"the run's signing-key record is unusable ({error})") from None
    if len(peer_public) != suite.public_bytes:
        raise SpecError(f"the pinned {suite.name} public key has {len(peer_public)} bytes")
    return PinnedKeys(suite, own, peer_public)


def read_pinned_keys(path: str | Path) -> PinnedKeys:
    """``pinned_keys`` of the JSON record in ``path`` (the runner's 0600 file)."""
    return pinned_keys(json.loads(Path(path).read_text()))
