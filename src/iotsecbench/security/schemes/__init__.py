"""Payload schemes: the registry of every scheme, one module per family on ``base.PayloadScheme``.

Adding a scheme: write its class (usually a few lines on ``aead.CounterNonceAead``), give it an
unused ``scheme_id``, list it in ``_SCHEME_CLASSES``, and document its wire format in
``docs/wire-format.md``.
"""

from __future__ import annotations

from iotsecbench.security.naming import unknown_name_error
from iotsecbench.security.schemes.aead import EcdhAesGcmScheme
from iotsecbench.security.schemes.base import (
    AuthenticationError,
    DirectionKeys,
    MalformedMessageError,
    NonceExhaustedError,
    OpenedMessage,
    PayloadScheme,
    ReplayError,
    SchemeError,
)
from iotsecbench.security.schemes.ecdh_aes_cbc import EcdhAesCbcScheme
from iotsecbench.security.schemes.identity import NoneScheme

_SCHEME_CLASSES: tuple[type[PayloadScheme], ...] = (
    NoneScheme,
    EcdhAesCbcScheme,
    EcdhAesGcmScheme,
)


def _build_registry() -> dict[str, type[PayloadScheme]]:
    registry: dict[str, type[PayloadScheme]] = {}
    ids: dict[int, str] = {}
    for cls in _SCHEME_CLASSES:
        # Duplicate names or ids would make captured messages ambiguous: fail at import.
        if cls.name in registry or cls.scheme_id in ids:
            raise RuntimeError(f"duplicate scheme name or id: {cls.name} / {cls.scheme_id}")
        if not 0 <= cls.scheme_id <= 255:
            raise RuntimeError(f"scheme id of {cls.name} does not fit one byte")
        registry[cls.name] = cls
        ids[cls.scheme_id] = cls.name
    return registry


_REGISTRY = _build_registry()


def scheme_names() -> list[str]:
    """Names of every payload scheme, in registry order (``none`` first)."""
    return list(_REGISTRY)


def get_scheme(name: str) -> PayloadScheme:
    """The scheme called ``name``; ``SpecError`` with a suggestion when there is none."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise unknown_name_error("scheme", name, _REGISTRY) from None


def describe_schemes(sample_plaintext_bytes: int = 256) -> list[dict]:
    """One plain-JSON record per scheme, for ``iotsecbench schemes`` and reports."""
    records = []
    for name in _REGISTRY:
        scheme = get_scheme(name)
        records.append(
            {
                "name": scheme.name,
                "scheme_id": scheme.scheme_id,
                "key_establishment": scheme.key_establishment,
                "bulk_primitive": scheme.bulk_primitive,
                "properties": scheme.properties.to_dict(),
                "provenance": scheme.provenance.to_dict(),
                "overhead_plaintext_bytes": sample_plaintext_bytes,
                "overhead_bytes": scheme.expected_overhead_bytes(sample_plaintext_bytes),
            }
        )
    return records


__all__ = [
    "AuthenticationError",
    "DirectionKeys",
    "MalformedMessageError",
    "NonceExhaustedError",
    "OpenedMessage",
    "PayloadScheme",
    "ReplayError",
    "SchemeError",
    "describe_schemes",
    "get_scheme",
    "scheme_names",
]
