"""The TLS stacks a client can run on (the ``stack`` factor): ``openssl`` (the Python agents,
through Python's ``ssl``, on Debian 12's OpenSSL 3.0), ``openssl-3.5`` (the same agents and the
broker on OpenSSL 3.5.5, which has ML-KEM and ML-DSA: ``security.pq_openssl``) and the device
stacks of the native agent (agents/native): ``mbedtls`` (Debian 12's 2.28, the ESP-IDF default
family), ``wolfssl`` (Debian 12's 5.5) and ``wolfssl-5.9`` (wolfSSL 5.9.4 built from registry
source with ML-KEM and ML-DSA: agents/native/libraries.py), whose broker runs on OpenSSL 3.5
for every profile, so its classical and post-quantum profiles meet one server.

What each device stack cannot do is refused before anything starts, naming the stack's limit
(docs/native-agents.md); the offer a profile makes is handed to the native agent as IANA
numbers (suites, groups), and what the connection negotiated is read back in OpenSSL's names
so that ``verify_negotiated`` and the store treat every stack alike.
"""

from __future__ import annotations

import functools
import ssl

from iotsecbench.security import pq_openssl
from iotsecbench.security.tls.observe import GROUP_NAMES
from iotsecbench.security.tls.profile import MODP_GROUPS, TlsProfile, expand_tls12_ciphers

OPENSSL = "openssl"
OPENSSL_PQ = "openssl-3.5"
WOLFSSL_PQ = "wolfssl-5.9"
PYTHON_STACKS = (OPENSSL, OPENSSL_PQ)  # the Python agents, on one OpenSSL or the other
STACKS = (OPENSSL, OPENSSL_PQ, "mbedtls", "wolfssl", WOLFSSL_PQ)
NATIVE_STACKS = ("mbedtls", "wolfssl", WOLFSSL_PQ)
# Stacks with ML-KEM groups and ML-DSA certificates; their broker (and the Python peer of the
# tcp transport) runs on OpenSSL 3.5.
POST_QUANTUM_STACKS = (OPENSSL_PQ, WOLFSSL_PQ)

# What each native build speaks (Debian 12's config headers: mbedtls/config.h,
# wolfssl/options.h; wolfssl-5.9: agents/native/configs/wolfssl-5.9.h).
_VERSIONS = {"mbedtls": ("1.2",), "wolfssl": ("1.2", "1.3"), WOLFSSL_PQ: ("1.2", "1.3")}
_LIBRARY = {
    "mbedtls": "mbedtls (Debian 12)",
    "wolfssl": "wolfssl (Debian 12)",
    WOLFSSL_PQ: "wolfSSL 5.9.4 (as built here)",
}
_NO_CERTIFICATE = {"mbedtls": {"ed25519": "mbedTLS 2.28 has no Ed25519 in X.509 or TLS"}}
# TLS 1.3 suites by IANA number (RFC 8446 §B.4): OpenSSL names them after the standard.
TLS13_SUITE_IDS = {
    "TLS_AES_128_GCM_SHA256": 0x1301,
    "TLS_AES_256_GCM_SHA384": 0x1302,
    "TLS_CHACHA20_POLY1305_SHA256": 0x1303,
    "TLS_AES_128_CCM_SHA256": 0x1304,
    "TLS_AES_128_CCM_8_SHA256": 0x1305,
}
_GROUP_IDS = {name: code for code, name in GROUP_NAMES.items()}
# The payload schemes the native agent implements on a stack's own crypto (agents/native/
# scheme.c, its CIPHERS and AGREEMENTS): every combination of these key establishments and
# ciphers, byte for byte as docs/wire-format.md.
NATIVE_KEY_ESTABLISHMENTS = ("psk", "ecdh-p256", "x25519")
NATIVE_CIPHERS = (
    "aes128-cbc",
    "aes128-gcm",
    "aes256-gcm",
    "aes128-ccm8",
    "aes256-ccm8",
    "aes128-ctr-hmac",
    "aes256-ctr-hmac",
    "aes128-cbc-hmac",
    "aes256-cbc-hmac",
    "chacha20-poly1305",
)


def stack_environment(stack: str) -> dict[str, str] | None:
    """The environment the broker and the Python agents of ``stack`` run in: OpenSSL 3.5's
    libraries for the post-quantum stacks (EnvironmentProblem when not built), else ours
    (None)."""
    return pq_openssl.library_environment() if stack in POST_QUANTUM_STACKS else None


def _native_scheme_problem(stack: str, scheme: str) -> str | None:
    """Why the native agent cannot carry payload scheme ``scheme`` (None: it can)."""
    if scheme == "none":
        return None
    for establishment in NATIVE_KEY_ESTABLISHMENTS:
        if scheme.startswith(f"{establishment}-"):
            if scheme.removeprefix(f"{establishment}-") in NATIVE_CIPHERS:
                return None
            break
    return (
        f"the native {stack} agent carries the payload schemes "
        f"{{{','.join(NATIVE_KEY_ESTABLISHMENTS)}}}-{{{','.join(NATIVE_CIPHERS)}}} only, "
        f"not {scheme}: use one of those, or stack openssl"
    )


def stack_problem(
    stack: str,
    profile: TlsProfile | None,
    *,
    scheme: str = "none",
    transport: str = "mqtt",
    qos: int = 0,
    key_log: bool = False,
) -> str | None:
    """Why ``stack`` cannot run a configuration (its TLS ``profile``, None for plain MQTT,
    its payload ``scheme``, its ``transport``, the highest ``qos`` it publishes at, and
    whether ``--keylog`` or ``--capture`` must log its secrets) — one line naming the stack's
    limit — or None when it can."""
    if stack not in STACKS:
        return f"unknown TLS stack {stack!r}; known: {', '.join(STACKS)}"
    if stack == OPENSSL and profile is not None and profile.needs_pq_library:
        return (
            f"Debian's OpenSSL 3.0 has no ML-KEM or ML-DSA ({profile.name}): use stack "
            f"{OPENSSL_PQ} (OpenSSL 3.5.5, built by scripts/setup.sh)"
        )
    ccm8_only = profile is not None and _ccm8_only(profile)
    if stack in POST_QUANTUM_STACKS and ccm8_only and profile.security_level > 0:
        # OpenSSL 3.5 rates an 8-byte tag at 64 bits of security: NO_CIPHERS_AVAILABLE
        return (
            f"OpenSSL 3.5 (this stack's broker) offers CCM_8 suites only at security level 0 "
            f"({profile.ciphers}): set security_level = 0 or choose another suite"
        )
    if stack in PYTHON_STACKS:
        return None
    if transport not in ("mqtt", "tcp"):
        return f"the native {stack} agent speaks mqtt and tcp only (transport {transport})"
    if qos > 1 and transport == "mqtt":
        return f"the native {stack} agent publishes at QoS 0 and 1 only"
    scheme_limit = _native_scheme_problem(stack, scheme)
    if scheme_limit is not None:
        return scheme_limit
    if profile is None:
        return None
    if profile.needs_pq_library and stack not in POST_QUANTUM_STACKS:
        return (
            f"Debian 12's {stack} has no ML-KEM or ML-DSA: use stack {WOLFSSL_PQ} (the native "
            f"agent) or {OPENSSL_PQ}"
        )
    if profile.version not in _VERSIONS[stack]:
        return f"{_LIBRARY[stack]} speaks TLS {' and '.join(_VERSIONS[stack])} only"
    certificate_limit = _NO_CERTIFICATE.get(stack, {}).get(profile.certificate)
    if certificate_limit is not None:
        return f"{certificate_limit}: use ecdsa-p256 or an RSA certificate with {stack}"
    if key_log and stack == "wolfssl" and profile.version == "1.3":
        return (
            "--keylog/--capture: Debian's wolfSSL 5.5 is built without the TLS 1.3 secret "
            "callback, so its TLS 1.3 secrets cannot be logged (nor a capture decrypted): use "
            f"TLS 1.2, stack {WOLFSSL_PQ} or openssl"
        )
    if key_log and stack == WOLFSSL_PQ and profile.version == "1.2" and profile.resumption:
        return (
            "--keylog/--capture: wolfSSL 5.9.4 as built here hands over a TLS 1.2 master "
            "secret when it derives one, which a resumed session does not (no OpenSSL layer "
            "to read the session's): use TLS 1.3 or a full handshake"
        )
    return None


def _ccm8_only(profile: TlsProfile) -> bool:
    """Every suite the profile admits is an AES-CCM one with an 8-byte tag."""
    suites = profile.requested_suites
    return bool(suites) and all("CCM8" in s or "CCM_8" in s for s in suites or ())


@functools.cache
def _openssl_suites() -> dict[int, dict]:
    """IANA number -> OpenSSL's description of every suite this OpenSSL knows."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.set_ciphers("ALL:COMPLEMENTOFALL:@SECLEVEL=0")
    return {c["id"] & 0xFFFF: c for c in context.get_ciphers()}


def suite_name(code: int) -> str:
    """OpenSSL's name of the suite with IANA number ``code`` (``suite-0xNNNN`` if unknown)."""
    tls13 = {number: name for name, number in TLS13_SUITE_IDS.items()}
    if code in tls13:
        return tls13[code]
    return _openssl_suites().get(code, {}).get("name", f"suite-0x{code:04x}")


# Secret bits of the TLS 1.3 suites' bulk ciphers (RFC 8446 §B.4): OpenSSL does not list the
# CCM suites unless asked.
_TLS13_SUITE_BITS = {0x1301: 128, 0x1302: 256, 0x1303: 256, 0x1304: 128, 0x1305: 128}


def suite_bits(code: int) -> int:
    """Secret bits of the bulk cipher of the suite with IANA number ``code`` (0 if unknown),
    for a stack that does not say (wolfssl-5.9 has no OpenSSL layer to ask)."""
    if code in _TLS13_SUITE_BITS:
        return _TLS13_SUITE_BITS[code]
    return int(_openssl_suites().get(code, {}).get("strength_bits", 0))


def suite_ids(profile: TlsProfile) -> list[int]:
    """The IANA numbers of the suites ``profile`` offers; empty = the stack's default list."""
    if profile.ciphers is None:
        return []
    if profile.version == "1.3":
        return [TLS13_SUITE_IDS[name] for name in profile.ciphers.split(":")]
    return [c["id"] & 0xFFFF for c in expand_tls12_ciphers(profile.ciphers)]


def group_ids(profile: TlsProfile) -> list[int]:
    """The IANA numbers of the groups the client offers, as ``client_groups`` offers them to
    OpenSSL: the group alone in TLS 1.3; in TLS 1.2 P-256 after it when the server's
    certificate is ECDSA P-256 (RFC 8422 §5.1); nothing for DHE (the server's parameters)."""
    if profile.group is None or profile.group in MODP_GROUPS:
        return []
    groups = [_GROUP_IDS[profile.group]]
    if profile.version == "1.2" and profile.certificate == "ecdsa-p256":
        groups += [] if profile.group == "secp256r1" else [_GROUP_IDS["secp256r1"]]
    return groups
