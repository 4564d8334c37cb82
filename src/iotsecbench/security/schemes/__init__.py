"""Payload schemes: the registry of every scheme, one module per family on ``base.PayloadScheme``.

Scheme names are ``<key establishment>-<cipher>`` (``catalog.py``): every cipher combines with
every key establishment. Adding a cipher: write its class (usually a few lines on
``aead.CounterNonceAead`` or ``etm.EncryptThenMac``), give it an unused ``scheme_id``, list it
in ``catalog.CIPHERS``, and document its wire format in ``docs/wire-format.md``
(docs/schemes.md walks through it).
"""

from __future__ import annotations

from iotsecbench.security.naming import unknown_name_error
from iotsecbench.security.schemes.base import (
    WIRE_VERSION,
    AuthenticationError,
    DirectionKeys,
    MalformedMessageError,
    NonceExhaustedError,
    OpenedMessage,
    PayloadScheme,
    ReplayError,
    SchemeError,
)
from iotsecbench.security.schemes.catalog import CIPHERS, KEY_ESTABLISHMENTS, all_schemes
from iotsecbench.security.schemes.identity import NoneScheme

_SCHEME_CLASSES: tuple[type[PayloadScheme], ...] = (NoneScheme, *all_schemes())


def _build_registry() -> dict[str, type[PayloadScheme]]:
    registry: dict[str, type[PayloadScheme]] = {}
    ids: dict[int, str] = {}
    for cls in _SCHEME_CLASSES:
        # Duplicate names, or one id for two wire formats, would make captured messages
        # ambiguous: fail at import.
        wire_format = cls.cipher or cls.name
        if cls.name in registry or ids.get(cls.scheme_id, wire_format) != wire_format:
            raise RuntimeError(f"duplicate scheme name or id: {cls.name} / {cls.scheme_id}")
        if not 0 <= cls.scheme_id <= 255:
            raise RuntimeError(f"scheme id of {cls.name} does not fit one byte")
        registry[cls.name] = cls
        ids[cls.scheme_id] = wire_format
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


def cipher_names() -> list[str]:
    """Every cipher (wire format) token, in listing order."""
    return [cipher.cipher for cipher in CIPHERS]


def key_establishment_names() -> list[str]:
    """Every key-establishment token, in listing order."""
    return list(KEY_ESTABLISHMENTS)


def describe_schemes(sample_plaintext_bytes: int = 256) -> list[dict]:
    """One plain-JSON record per scheme, for ``iotsecbench schemes`` and reports."""
    records = []
    for name in _REGISTRY:
        scheme = get_scheme(name)
        records.append(
            {
                "name": scheme.name,
                "cipher": scheme.cipher or None,
                "key_bits": scheme.key_bits,
                "scheme_id": scheme.scheme_id,
                "wire_format_version": WIRE_VERSION if scheme.framed else None,
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
    "cipher_names",
    "describe_schemes",
    "get_scheme",
    "key_establishment_names",
    "scheme_names",
]
