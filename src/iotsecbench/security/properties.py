"""What a security configuration promises and which library delivers it.

This module owns the two records every scheme and TLS profile declares: ``SecurityProperties``
(confidentiality, integrity, authentication, replay protection, ... and the warnings shown
wherever the scheme is listed) and ``Provenance`` (library, installed version, native or pure
Python). The Pareto analysis reads the properties as constraints or as an objective.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from importlib import metadata

# The allowed values of SecurityProperties.authentication, weakest first.
AUTHENTICATION_LEVELS: tuple[str, ...] = (
    "none",
    "pre-shared trust",
    "pinned signature keys",  # both ends sign the key exchange with keys pinned per run
    "server certificate",
    "mutual certificates",
)


@dataclass(frozen=True)
class SecurityProperties:
    """The security guarantees of a scheme, validated at construction."""

    confidentiality: bool  # an eavesdropper learns nothing but the length
    integrity: bool  # a modified message is rejected
    authentication: str  # one of AUTHENTICATION_LEVELS
    replay_protection: bool  # a replayed or too-old message is rejected
    end_to_end: bool  # protects the payload through the broker
    forward_secrecy: bool  # ephemeral keys: a later key leak does not expose old traffic
    tag_bytes: int  # length of the authentication tag on the wire, 0 when there is none
    nonce_rule: str  # how nonces/IVs are chosen, e.g. "96-bit counter per direction"
    warnings: tuple[str, ...] = ()  # shown wherever the scheme is listed
    # the keys resist a quantum computer ("harvest now, decrypt later"): ML-KEM in the exchange
    post_quantum: bool = False

    def __post_init__(self) -> None:
        if self.authentication not in AUTHENTICATION_LEVELS:
            raise ValueError(
                f"authentication must be one of {', '.join(AUTHENTICATION_LEVELS)}, "
                f"got {self.authentication!r}"
            )
        if self.tag_bytes < 0:
            raise ValueError(f"tag_bytes must be >= 0, got {self.tag_bytes}")
        if self.integrity and self.tag_bytes == 0:
            raise ValueError("integrity needs a tag: tag_bytes must be > 0")
        if not isinstance(self.warnings, tuple):
            # A list would make the record unhashable and mutable behind the frozen facade.
            raise TypeError("warnings must be a tuple of strings")

    def to_dict(self) -> dict:
        """Plain-JSON form (warnings as a list) for records, reports and the CLI."""
        record = asdict(self)
        record["warnings"] = list(self.warnings)
        return record


@dataclass(frozen=True)
class Provenance:
    """Which implementation runs a scheme's primitives."""

    library: (
        str  # distribution name, e.g. "cryptography"; "a + b" when two libraries share the work
    )
    version: str  # installed version, read from package metadata ("x / y" for two libraries)
    native: bool  # True when every primitive runs in C/Rust, False when any is pure Python
    detail: str = ""  # which library runs which primitive, e.g. "Salsa20: pycryptodome (C)"

    def __post_init__(self) -> None:
        if not self.library or not self.version:
            raise ValueError("provenance needs a library name and a version")

    @classmethod
    def of_installed(cls, library: str, *, native: bool) -> Provenance:
        """Provenance of an installed distribution, its version read from package metadata."""
        try:
            version = metadata.version(library)
        except metadata.PackageNotFoundError:
            version = "not installed"
        return cls(library=library, version=version, native=native)

    @classmethod
    def combined(cls, *parts: Provenance, detail: str) -> Provenance:
        """Provenance of a construction built from several libraries (e.g. a cipher + a MAC)."""
        return cls(
            library=" + ".join(part.library for part in parts),
            version=" / ".join(part.version for part in parts),
            native=all(part.native for part in parts),
            detail=detail,
        )

    def with_detail(self, detail: str) -> Provenance:
        """The same library, with a note on what it runs."""
        return Provenance(self.library, self.version, self.native, detail)

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


# Read once at import: results record the version that actually ran, not the one pinned.
CRYPTOGRAPHY = Provenance.of_installed("cryptography", native=True)
# The identity scheme runs no cryptographic library at all; the interpreter is what "runs" it.
PYTHON = Provenance(library="python", version=sys.version.split()[0], native=False)
# CPython's hashlib/hmac: BLAKE2b is CPython's own C code, SHA-256/HMAC come from OpenSSL.
HASHLIB = Provenance(library="python-hashlib", version=sys.version.split()[0], native=True)
# pycryptodome: the AES, Salsa20 and ChaCha20 cores are C; modes such as EAX are composed in
# Python over those C cores (a few Python calls per message, independent of its length).
PYCRYPTODOME = Provenance.of_installed("pycryptodome", native=True)
PYNACL = Provenance.of_installed("pynacl", native=True)  # libsodium (C)
TINYAES = Provenance.of_installed("tinyaes", native=True)  # tiny-AES-c (C) via Cython
FAST_ASCON = Provenance.of_installed("fast-ascon", native=True)  # RustCrypto ascon-aead (Rust)
ASCON_PURE = Provenance.of_installed("ascon", native=False)  # pyascon reference, pure Python
SIMON_SPECK = Provenance.of_installed("simonspeckciphers", native=False)  # pure Python
# iotsecbench's own C (security/schemes/_lightweight.c: SPECK128, SIMON128), built with it.
IOTSECBENCH_C = Provenance.of_installed("iotsecbench", native=True)
