"""Both ends of a TLS profile: the client ``ssl.SSLContext`` and the broker's mosquitto
listener lines and OpenSSL configuration. The offer is exactly the profile;
``verify.verify_negotiated`` checks what was agreed."""

from __future__ import annotations

import ssl
from os import PathLike

from iotsecbench.errors import SpecError
from iotsecbench.security.tls.openssl import openssl_control
from iotsecbench.security.tls.profile import MODP_GROUPS, TlsProfile

SERVER_NAME = "localhost"  # the name the lab's server certificate carries and clients check

_SSL_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
_MOSQUITTO_VERSIONS = {"1.2": "tlsv1.2", "1.3": "tlsv1.3"}

# OpenSSL's spelling of each group for SSL_CTX_set1_groups_list / `openssl s_client -groups`.
OPENSSL_GROUP_NAMES = {
    "x25519": "X25519",
    "x448": "X448",
    "secp256r1": "P-256",
    "secp384r1": "P-384",
    "secp521r1": "P-521",
    "ffdhe2048": "ffdhe2048",
    "ffdhe3072": "ffdhe3072",
    "X25519MLKEM768": "X25519MLKEM768",
    "SecP256r1MLKEM768": "SecP256r1MLKEM768",
    "SecP384r1MLKEM1024": "SecP384r1MLKEM1024",
    "MLKEM512": "MLKEM512",
    "MLKEM768": "MLKEM768",
    "MLKEM1024": "MLKEM1024",
}


def client_groups(profile: TlsProfile) -> str | None:
    """The OpenSSL group list the client offers for ``profile`` (None: OpenSSL's default).

    TLS 1.3: the group alone, so the one key share sent is the one asked for. TLS 1.2:
    DHE parameters are the server's (``TLS12_DHE_GROUP``), so nothing is set for them; with
    an ECDSA P-256 certificate, P-256 follows the requested group because a TLS 1.2 server
    may only use an ECDSA certificate on a curve the client lists (RFC 8422 §5.1; OpenSSL
    refuses the handshake otherwise). The broker is limited to the requested group
    (``broker_openssl_config``), which ``verify_negotiated`` confirms.
    """
    if profile.group is None or profile.group in MODP_GROUPS:
        return None
    name = OPENSSL_GROUP_NAMES[profile.group]
    if profile.version == "1.3":
        return name
    if profile.certificate == "ecdsa-p256" and profile.group != "secp256r1":
        return f"{name}:P-256"
    return name


def client_context(
    profile: TlsProfile,
    ca_file: str | PathLike[str],
    client_cert: str | PathLike[str] | None = None,
    client_key: str | PathLike[str] | None = None,
) -> ssl.SSLContext:
    """A client context pinned to the profile's version that verifies the server.

    The server certificate is checked against ``ca_file`` and the name ``SERVER_NAME``
    ("localhost"): connect with ``server_hostname=SERVER_NAME``. The offer is exactly the
    profile: TLS 1.2 ``ciphers`` through ``set_ciphers``; TLS 1.3 suites and the group
    through ``OpenSslContextControl`` (Python 3.11 has no API for either), so a device-like
    client offers one key share and no HelloRetryRequest is needed; the security level is
    set explicitly. ``verify_negotiated`` still checks the result.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED + check_hostname
    context.minimum_version = _SSL_VERSIONS[profile.version]
    context.maximum_version = _SSL_VERSIONS[profile.version]
    context.load_verify_locations(cafile=ca_file)
    control = openssl_control()
    if profile.ciphers is not None:
        if profile.version == "1.2":
            try:
                context.set_ciphers(profile.ciphers)
            except ssl.SSLError as error:
                raise SpecError(f"no usable TLS 1.2 cipher in {profile.ciphers!r}") from error
        else:
            control.set_tls13_suites(context, profile.ciphers)
    groups = client_groups(profile)
    if groups is not None:
        control.set_groups(context, groups)
    control.set_security_level(context, profile.security_level)
    if client_cert is not None:
        context.load_cert_chain(client_cert, client_key)
    elif profile.mutual:
        raise ValueError("a mutual-TLS profile needs client_cert and client_key")
    return context


def server_context(
    profile: TlsProfile,
    ca_file: str | PathLike[str],
    server_cert: str | PathLike[str],
    server_key: str | PathLike[str],
) -> ssl.SSLContext:
    """The server end of ``profile`` when there is no broker (the ``tcp`` transport's
    receiver): what ``mosquitto_listener_lines`` and ``broker_openssl_config`` give the
    broker — the version pinned, the suites, the group, the security level and, for a mutual
    profile, a client certificate required — set on a Python server context."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _SSL_VERSIONS[profile.version]
    context.maximum_version = _SSL_VERSIONS[profile.version]
    context.load_cert_chain(server_cert, server_key)
    control = openssl_control()
    if profile.ciphers is not None:
        if profile.version == "1.2":
            context.set_ciphers(profile.ciphers)
        else:
            control.set_tls13_suites(context, profile.ciphers)
    if profile.group is not None and profile.group not in MODP_GROUPS:
        control.set_groups(context, OPENSSL_GROUP_NAMES[profile.group])
    control.set_security_level(context, profile.security_level)
    if profile.mutual:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cafile=ca_file)
    return context


def broker_openssl_config(profile: TlsProfile) -> str | None:
    """An OpenSSL configuration that limits the broker to the profile's group, or None.

    mosquitto 2.0.11 cannot set groups, and a TLS 1.2 server picks the ECDHE group by its
    own preference (P-256 before P-384), so a client offer alone does not decide. OpenSSL
    reads ``Groups`` from the ``system_default`` section of the file ``OPENSSL_CONF`` names
    when the broker creates its context (SSL_CONF_cmd(3)). TLS 1.2 DHE parameters are not
    groups (``TLS12_DHE_GROUP``).
    """
    if profile.group is None or profile.group in MODP_GROUPS:
        return None
    return (
        "# Written by iotsecbench for one broker: its TLS key-exchange group.\n"
        "openssl_conf = iotsecbench_init\n\n"
        "[iotsecbench_init]\nssl_conf = iotsecbench_ssl\n\n"
        "[iotsecbench_ssl]\nsystem_default = iotsecbench_system\n\n"
        f"[iotsecbench_system]\nGroups = {OPENSSL_GROUP_NAMES[profile.group]}\n"
    )


def mosquitto_listener_lines(
    profile: TlsProfile,
    cafile: str | PathLike[str],
    certfile: str | PathLike[str],
    keyfile: str | PathLike[str],
) -> list[str]:
    """mosquitto 2.0.11 configuration lines for a TLS listener (after its ``listener`` line).

    ``tls_version`` is a *minimum* in mosquitto 2.x; the client pins the maximum. ``ciphers``
    always carries ``@SECLEVEL=N`` so the broker's security level is the profile's, not the
    distribution's default; ``certfile`` may hold the chain (leaf first). No ``dhparamfile``:
    mosquitto 2.0.11's automatic DH parameters take precedence over it (``TLS12_DHE_GROUP``).
    """
    paths: dict[str, str | PathLike[str]] = {
        "cafile": cafile,
        "certfile": certfile,
        "keyfile": keyfile,
    }
    lines = []
    for option, path in paths.items():
        text = str(path)
        # One option per line, no quoting in mosquitto's parser: a newline would inject options.
        if not text or any(c in text for c in "\n\r"):
            raise ValueError(f"{option} path must be a non-empty single line")
        lines.append(f"{option} {text}")
    lines.append(f"tls_version {_MOSQUITTO_VERSIONS[profile.version]}")
    tls12_ciphers = profile.ciphers if profile.version == "1.2" and profile.ciphers else "DEFAULT"
    lines.append(f"ciphers {tls12_ciphers}:@SECLEVEL={profile.security_level}")
    if profile.version == "1.3" and profile.ciphers is not None:
        lines.append(f"ciphers_tls1.3 {profile.ciphers}")
    lines.append(f"require_certificate {'true' if profile.mutual else 'false'}")
    return lines
