"""Payload schemes: the registry of every scheme, one module per family on ``base.PayloadScheme``.

Scheme names are ``<key establishment>-<cipher>`` (``catalog.py``): every cipher combines with
every key establishment. Adding a cipher: write its class (usually a few lines on
``aead.CounterNonceAead`` or ``etm.EncryptThenMac``), give it an unused ``scheme_id``, list it
in ``catalog.CIPHERS``, and document its wire format in ``docs/wire-format.md``
(docs/schemes.md walks through it).
"""

from __future__ import annotations

import functools

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
from iotsecbench.security.schemes.catalog import CIPHERS, KEY_ESTABLISHMENTS, compose
from iotsecbench.security.schemes.identity import NoneScheme

# Every scheme's name with what it is made of, in registry order (``none``, then every
# cipher with each key establishment). A scheme's class is composed when first asked for:
# composing all 900 at import cost every agent and command ~30 ms of CPU, for the one or two
# schemes a process uses.
_PARTS: dict[str, tuple[type[PayloadScheme], str]] = {
    f"{KEY_ESTABLISHMENTS[kx].name}-{cipher.cipher}": (cipher, kx)
    for cipher in CIPHERS
    for kx in KEY_ESTABLISHMENTS
}


def _check_registry() -> None:
    """Duplicate names, or one id for two wire formats, would make captured messages
    ambiguous: fail at import. A composed scheme's id and wire format are its cipher's."""
    if len(_PARTS) != len(CIPHERS) * len(KEY_ESTABLISHMENTS) or NoneScheme.name in _PARTS:
        raise RuntimeError("duplicate scheme name")
    ids: dict[int, str] = {}
    for cls in (NoneScheme, *CIPHERS):
        wire_format = cls.cipher or cls.name
        if ids.get(cls.scheme_id, wire_format) != wire_format:
            raise RuntimeError(f"duplicate scheme id: {cls.name} / {cls.scheme_id}")
        if not 0 <= cls.scheme_id <= 255:
            raise RuntimeError(f"scheme id of {cls.name} does not fit one byte")
        ids[cls.scheme_id] = wire_format


_check_registry()


@functools.cache
def _scheme_class(name: str) -> type[PayloadScheme]:
    """The class of scheme ``name`` (KeyError if there is none), composed once."""
    if name == NoneScheme.name:
        return NoneScheme
    cipher, kx = _PARTS[name]
    return compose(cipher, kx)


def scheme_names() -> list[str]:
    """Names of every payload scheme, in registry order (``none`` first)."""
    return [NoneScheme.name, *_PARTS]


def get_scheme(name: str) -> PayloadScheme:
    """The scheme called ``name``; ``SpecError`` with a suggestion when there is none."""
    try:
        return _scheme_class(name)()
    except KeyError:
        raise unknown_name_error("scheme", name, scheme_names()) from None


def cipher_names() -> list[str]:
    """Every cipher (wire format) token, in listing order."""
    return [cipher.cipher for cipher in CIPHERS]


def key_establishment_names() -> list[str]:
    """Every key-establishment token, in listing order."""
    return list(KEY_ESTABLISHMENTS)


def describe_schemes(sample_plaintext_bytes: int = 256) -> list[dict]:
    """One plain-JSON record per scheme, for ``iotsecbench schemes`` and reports."""
    records = []
    for name in scheme_names():
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
