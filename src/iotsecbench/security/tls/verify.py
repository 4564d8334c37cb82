"""Verification: does what a connection negotiated match the profile that asked for it?"""

from __future__ import annotations

from iotsecbench.security.tls.observe import NegotiatedTls
from iotsecbench.security.tls.profile import TlsProfile


def _certificate_family(name: str) -> str | None:
    """'rsa', 'ecdsa' or 'ed25519' for a signature algorithm or a certificate key type; an
    ML-DSA one is its parameter set, which the signature scheme names exactly (``mldsa44``:
    draft-ietf-tls-mldsa)."""
    for family in ("rsa", "ecdsa", "ed25519"):
        if name.startswith(family):
            return family
    return name if name.startswith("mldsa") else None


def verify_negotiated(
    profile: TlsProfile, negotiated: NegotiatedTls, expect_resumed: bool | None = None
) -> None:
    """Raise ValueError naming the first way the connection differs from the profile.

    Checks the version, suite, group, server certificate (key type and chain length, read
    from the Certificate message), the signature family, mutual authentication and — when
    ``expect_resumed`` is given — whether the session was resumed.
    """
    if negotiated.version != profile.version:
        raise ValueError(
            f"negotiated TLS {negotiated.version} but the profile asks for TLS {profile.version}"
        )
    requested = profile.requested_suites
    if requested is not None and negotiated.cipher not in requested:
        raise ValueError(
            f"negotiated cipher {negotiated.cipher} is not among the requested {profile.ciphers}"
        )
    # A resumed TLS 1.2 session has no key exchange, so no group to compare.
    resumed_tls12 = negotiated.resumed and negotiated.version == "1.2"
    if profile.group is not None and negotiated.group != profile.group and not resumed_tls12:
        raise ValueError(
            f"negotiated group {negotiated.group} but the profile asks for {profile.group}"
        )
    if negotiated.certificate is not None and negotiated.certificate != profile.certificate:
        raise ValueError(
            f"the server presented a {negotiated.certificate} certificate but the profile "
            f"asks for {profile.certificate}"
        )
    sent = negotiated.server_certificates_sent
    if sent is not None and sent != profile.chain_length + 1:
        raise ValueError(
            f"the server sent {sent} certificate(s) but the profile's chain of "
            f"{profile.chain_length} below the root means {profile.chain_length + 1} (lab/pki.py)"
        )
    if negotiated.signature_algorithm is not None:
        family = _certificate_family(negotiated.signature_algorithm)
        expected = _certificate_family(profile.certificate)
        if family is not None and family != expected:
            raise ValueError(
                f"server signed with {negotiated.signature_algorithm} but the profile asks for "
                f"a {profile.certificate} certificate"
            )
    if profile.mutual and not negotiated.resumed and not negotiated.client_certificate_sent:
        raise ValueError("the profile asks for mutual TLS but the client sent no certificate")
    if expect_resumed is not None and negotiated.resumed != expect_resumed:
        raise ValueError(
            "the session was resumed although a full handshake was asked for"
            if negotiated.resumed
            else "the server did not resume the session (full handshake instead)"
        )
