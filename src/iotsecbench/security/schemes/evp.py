"""The C extension ``_evp``: OpenSSL EVP AEADs with the whole wire framing in one C call.

Why: through pyca, the Python framing around a counter-nonce AEAD (sequence number, header,
nonce, AAD, the copy that prepends the header) cost as much as encrypting ~2 KiB, so a 4 KiB
AES-128-GCM seal measured ~1.5x ``openssl speed`` and the ranking of fast ciphers partly
ranked framing code. With ``_evp`` a seal is one call into C, at 1.0-1.1x of ``openssl
speed`` (benchmarks/README.md). The ciphers and the bytes on the wire are the same either way.

The extension is optional (``setup.py``): where it could not be built, AES-GCM, AES-CCM and
ChaCha20-Poly1305 run through pyca ``cryptography`` as before, every result's provenance says
which ran, and ``iotsecbench doctor`` says why it is missing.
"""

from __future__ import annotations

from typing import Any

from iotsecbench.security.properties import Provenance
from iotsecbench.security.schemes.base import (
    MAX_SEQ,
    WIRE_VERSION,
    AuthenticationError,
    DirectionKeys,
    MalformedMessageError,
    NonceExhaustedError,
    OpenedMessage,
    ReplayError,
    _aad_suffix,
)

try:
    from iotsecbench.security.schemes import _evp
except ImportError as error:  # not built: no compiler / headers when installing
    _evp = None
    MISSING_REASON: str | None = (
        f"C extension not built ({error}); install gcc, libc6-dev, python3-dev and libssl-dev, "
        "then rerun scripts/setup.sh"
    )
else:
    MISSING_REASON = None
    # The C path raises and returns base.py's own classes: callers cannot tell the paths apart.
    _evp.configure(
        nonce_exhausted=NonceExhaustedError,
        authentication=AuthenticationError,
        malformed=MalformedMessageError,
        replay=ReplayError,
        opened=OpenedMessage,
    )

AVAILABLE = _evp is not None
# Read at every key setup (not only at import), so tests can run the pyca path beside it.
ACTIVE = AVAILABLE


def openssl_version() -> str:
    """Version text of the libcrypto the extension runs, e.g. "OpenSSL 3.0.19 27 Jan 2026"."""
    return _evp.openssl_version() if _evp is not None else "not available"


def _provenance() -> Provenance | None:
    if _evp is None:
        return None
    fields = openssl_version().split()
    version = fields[1] if len(fields) > 1 else openssl_version()
    return Provenance(
        library="openssl",
        version=version,
        native=True,
        detail=(
            "libcrypto EVP through iotsecbench's C extension: nonce, header, AAD and cipher in "
            "one C call per message"
        ),
    )


PROVENANCE = _provenance()


def aead(cipher: str, key: bytes, tag_bytes: int) -> Any:
    """An EVP AEAD under ``key`` with pyca's ``encrypt/decrypt(nonce, data, aad)``."""
    if _evp is None:
        raise RuntimeError(MISSING_REASON)
    return _evp.Aead(cipher, key, tag_bytes)


def is_aead(state: Any) -> bool:
    """Whether ``state`` came from :func:`aead` (so the framing can run in C too)."""
    return _evp is not None and isinstance(state, _evp.Aead)


def framing(
    state: Any, keys: DirectionKeys, *, scheme_id: int, nonce_bytes: int, first_seq: int, label: str
) -> Any:
    """One direction's framing in C, with base.py's wire version, nonce layout and AAD:
    ``seal(plaintext)`` and ``next_seq`` for a sealer, ``open(message) -> OpenedMessage``
    (length, header and replay checks included) and ``window`` (``(highest, bitmap)`` or
    None) for an opener."""
    return _evp.Framing(
        state,
        WIRE_VERSION,
        scheme_id,
        keys.nonce_prefix,
        nonce_bytes,
        _aad_suffix(keys),
        min(first_seq, MAX_SEQ),
        first_seq > MAX_SEQ,  # exhausted: a sealer made with first_seq = 2**64 (tests)
        label,
    )
