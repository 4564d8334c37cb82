"""Turning an unknown name into a one-line ``SpecError`` with a "did you mean" suggestion."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from iotsecbench.errors import SpecError

_CUTOFF = 0.6  # difflib's default: below it suggestions are more confusing than helpful
_PREFERRED_PREFIX = "ecdh-p256-"  # the default experiment's key establishment


def suggest(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to ``name``, or None.

    Besides whole names, each name's dash-separated tails are compared too, so a short
    misspelling like ``aes-gmc`` finds ``ecdh-p256-aes128-gcm`` through its tail ``aes128-gcm``.
    """
    best, best_score = None, (_CUTOFF, False)
    for candidate in known:
        parts = candidate.split("-")
        # On equal scores (one cipher under six key establishments) prefer the default
        # experiment's key establishment, so the suggestion is the most familiar spelling.
        preferred = candidate.startswith(_PREFERRED_PREFIX)
        for tail in {"-".join(parts[i:]) for i in range(len(parts))}:
            score = (difflib.SequenceMatcher(None, name, tail).ratio(), preferred)
            if score > best_score:
                best, best_score = candidate, score
    return best


def unknown_name_error(kind: str, name: str, known: Iterable[str]) -> SpecError:
    """``unknown scheme 'aes-gmc' (did you mean ecdh-p256-aes128-gcm?)`` or a list of names."""
    known = sorted(known)
    match = suggest(name, known)
    if match is not None:
        return SpecError(f"unknown {kind} {name!r} (did you mean {match}?)")
    if len(known) <= 12:
        return SpecError(f"unknown {kind} {name!r} (known: {', '.join(known)})")
    # Hundreds of combinations (key establishment × cipher × transport) would not be one
    # line a person can read: name the grammar and where the list is instead.
    transports = "plain, tls1.2, tls1.3, " if "configuration" in kind else ""
    combined = ", or TRANSPORT+SCHEME" if transports else ""
    return SpecError(
        f"unknown {kind} {name!r}: use {transports}a scheme KEYEST-CIPHER such as "
        f"ecdh-p256-aes128-gcm{combined} (every name: iotsecbench schemes --all)"
    )
