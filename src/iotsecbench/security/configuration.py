"""Security configurations: parsing ``TRANSPORT[+SCHEME]`` names into transport + scheme.

This module owns the configuration vocabulary of docs/internals.md: ``plain``, ``tls1.2``,
``tls1.3``, a bare scheme name (plain transport) and ``tls1.2+<scheme>``/``tls1.3+<scheme>``.
The transport may also be a TLS profile's short name (``tls1.3/x25519mlkem768/mldsa44``,
``security.tls.parse_profile``): what it names beats the experiment's ``[tls]`` settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from iotsecbench.errors import SpecError
from iotsecbench.security.naming import suggest, unknown_name_error
from iotsecbench.security.schemes import get_scheme, scheme_names
from iotsecbench.security.schemes.base import PayloadScheme
from iotsecbench.security.tls import TlsProfile
from iotsecbench.security.tls.profile import profile_options

TRANSPORTS = ("plain", "tls1.2", "tls1.3")

# The study's TLS: self-signed RSA-2048 server certificate, default suites, no resumption.
DEFAULT_TLS_PROFILES = {
    "tls1.2": TlsProfile(version="1.2", ciphers=None, certificate="rsa2048"),
    "tls1.3": TlsProfile(version="1.3", ciphers=None, certificate="rsa2048"),
}


@dataclass(frozen=True)
class SecurityConfiguration:
    """One point on the security axis of an experiment."""

    name: str  # canonical name: "plain", "tls1.2", "<scheme>", "tls1.3+<scheme>"
    transport: str  # "plain", "tls1.2" or "tls1.3"
    tls_profile: TlsProfile | None  # None for plain transport
    scheme: PayloadScheme  # the payload scheme ("none" when there is none)
    # TlsProfile fields the name itself sets (a profile short name as transport): [tls]
    # settings leave them alone
    named: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, got {self.transport!r}")
        if (self.tls_profile is None) != (self.transport == "plain"):
            raise ValueError("a TLS transport needs a TLS profile and plain transport none")

    def tls_profile_with(self, settings: Mapping[str, Any]) -> TlsProfile | None:
        """The TLS profile with an experiment's ``[tls]`` settings (``spec.models.TlsSettings``
        fields) merged in, or None on plain transport. ``ciphers_tls13`` replaces ``ciphers``
        for TLS 1.3 (a spec mixing both versions needs one suite list each). ``SpecError``
        (exit 2, before anything starts) for a combination that cannot negotiate what it
        asks for."""
        profile = self.tls_profile
        if profile is None:
            return None
        ciphers = settings.get("ciphers")
        if profile.version == "1.3" and settings.get("ciphers_tls13") is not None:
            ciphers = settings["ciphers_tls13"]
        fields = ("certificate", "group", "chain_length", "mutual", "resumption", "security_level")
        try:
            return dataclasses.replace(
                profile,
                ciphers=profile.ciphers if "ciphers" in self.named else ciphers or profile.ciphers,
                **{
                    name: settings[name]
                    for name in fields
                    if name in settings and name not in self.named
                },
            )
        except SpecError as error:
            raise SpecError(f"[tls] with configuration {self.name!r}: {error}") from None

    def properties(self) -> dict[str, Any]:
        """The configuration's security properties: the scheme's, plus what the transport adds
        (TLS protects each hop, client–broker, not end to end through the broker)."""
        properties = self.scheme.properties.to_dict()
        properties["transport"] = self.transport
        if self.transport != "plain":
            properties["hop_confidentiality"] = True
            properties["hop_integrity"] = True
            properties["server_authentication"] = True
            # an ML-KEM group protects the hop against "harvest now, decrypt later"
            properties["hop_post_quantum"] = bool(
                self.tls_profile is not None and self.tls_profile.post_quantum
            )
        return properties


def _canonical_name(transport: str, scheme_name: str) -> str:
    if scheme_name == "none":
        return transport
    return scheme_name if transport == "plain" else f"{transport}+{scheme_name}"


def configuration_names() -> list[str]:
    """Every configuration name ``resolve_configuration`` accepts, canonical spellings."""
    names = []
    for transport in TRANSPORTS:
        names.extend(_canonical_name(transport, scheme) for scheme in scheme_names())
    return names


def resolve_configuration(name: str) -> SecurityConfiguration:
    """Parse a configuration name; ``SpecError`` with a "did you mean" on unknown parts.

    ``plain+<scheme>`` and ``<transport>+none`` are accepted and canonicalised (to ``<scheme>``
    and ``<transport>``), so one configuration has one name in stored results.
    """
    if not isinstance(name, str) or not name:
        raise SpecError("security configuration name must be a non-empty string")
    transport, plus, scheme_name = name.partition("+")
    profile, named, label = None, frozenset(), transport
    if "/" in transport:  # a TLS profile's short name: what it sets beats [tls]
        options = profile_options(transport)
        profile = TlsProfile(**options)
        transport, label, scheme_name = f"tls{profile.version}", profile.name, scheme_name or "none"
        named = frozenset(k for k, v in options.items() if k != "ciphers" or v is not None)
    elif not plus:
        if name in TRANSPORTS:
            transport, scheme_name = name, "none"
        elif name in scheme_names():
            transport, scheme_name = "plain", name
        else:
            raise unknown_name_error("security configuration", name, configuration_names())
        label = transport
    if transport not in TRANSPORTS:
        match = suggest(transport, TRANSPORTS)
        hint = (
            f"did you mean {match}+{scheme_name}?" if match else f"known: {', '.join(TRANSPORTS)}"
        )
        raise SpecError(f"unknown transport {transport!r} in {name!r} ({hint})")
    if scheme_name not in scheme_names():
        match = suggest(scheme_name, scheme_names())
        hint = f"did you mean {label}+{match}?" if match else f"known: {', '.join(scheme_names())}"
        raise SpecError(f"unknown scheme {scheme_name!r} in {name!r} ({hint})")
    return SecurityConfiguration(
        name=_canonical_name(label, scheme_name),
        transport=transport,
        tls_profile=profile or DEFAULT_TLS_PROFILES.get(transport),
        scheme=get_scheme(scheme_name),
        named=named,
    )
