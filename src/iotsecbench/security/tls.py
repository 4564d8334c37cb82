"""TLS profiles: what to ask for, how to configure both ends, and what was actually negotiated.

This module owns ``TlsProfile`` (the transport half of a security configuration), the client
``ssl.SSLContext`` and the mosquitto listener lines built from it, and the
``HandshakeObserver`` that records the *negotiated* parameters from a live connection.
Asking OpenSSL for one thing and getting another is silent (RELIABILITY.md: a TLS 1.3 profile
with a TLS 1.2 cipher negotiates something else), so runs record and check what happened.

Python 3.11's ``ssl`` reports version and cipher but not the key-exchange group or the
signature algorithm, so the observer parses them from the handshake messages OpenSSL's
``SSL_CTX_set_msg_callback`` hands over (it sees TLS 1.3 handshake messages after
decryption): through the C recorder ``_tlsrecord`` where it works, which keeps the messages
without running Python inside the timed handshake, else through the context's
``_msg_callback`` debug hook. It never touches the network itself.

Two things Python 3.11's ``ssl`` cannot ask OpenSSL for are set through ``ctypes`` on the
context's own ``SSL_CTX`` (``OpenSslContextControl``): the key-exchange groups
(``SSL_CTX_set1_groups_list``; ``set_ecdh_curve`` only covers TLS 1.2 ECDHE) and the TLS 1.3
suites (``SSL_CTX_set_ciphersuites``). The OpenSSL security level is set explicitly on both
ends (``@SECLEVEL=N`` in the cipher strings) instead of inheriting the distribution's
default. docs/tls.md explains both, and the combinations refused before anything starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import itertools
import re
import ssl
import threading
import weakref
from dataclasses import asdict, dataclass
from os import PathLike
from typing import Any

from iotsecbench.errors import SpecError

try:  # the C handshake recorder (setup.py builds it when it can; see _tlsrecord.c)
    from iotsecbench.security import _tlsrecord
except ImportError:
    _tlsrecord = None

SERVER_NAME = "localhost"  # the name the lab's server certificate carries and clients check
TLS_VERSIONS = ("1.2", "1.3")
CERTIFICATE_TYPES = ("rsa2048", "rsa3072", "ecdsa-p256", "ed25519")
# Certificates below the trust anchor: the server's plus 0-2 intermediates. The lab's
# server sends these and the root (lab/pki.py), chain_length + 1 certificates.
CHAIN_LENGTHS = (1, 2, 3)
DEFAULT_SECURITY_LEVEL = 2  # Debian's and Python's default; every listed profile passes it

_SSL_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
_MOSQUITTO_VERSIONS = {"1.2": "tlsv1.2", "1.3": "tlsv1.3"}

# IANA TLS Supported Groups registry (RFC 8422, RFC 7919, RFC 8446,
# draft-kwiatkowski-tls-ecdhe-mlkem).
GROUP_NAMES = {
    0x0017: "secp256r1",
    0x0018: "secp384r1",
    0x0019: "secp521r1",
    0x001D: "x25519",
    0x001E: "x448",
    0x0100: "ffdhe2048",
    0x0101: "ffdhe3072",
    0x0102: "ffdhe4096",
    0x0103: "ffdhe6144",
    0x0104: "ffdhe8192",
    0x11EC: "X25519MLKEM768",
    0x11EB: "SecP256r1MLKEM768",
}
# Spellings users write for groups -> the IANA name the observer reports.
GROUP_ALIASES = {
    "x25519": "x25519",
    "x448": "x448",
    "p-256": "secp256r1",
    "p256": "secp256r1",
    "prime256v1": "secp256r1",
    "secp256r1": "secp256r1",
    "p-384": "secp384r1",
    "p384": "secp384r1",
    "secp384r1": "secp384r1",
    "p-521": "secp521r1",
    "p521": "secp521r1",
    "secp521r1": "secp521r1",
    "ffdhe2048": "ffdhe2048",
    "ffdhe3072": "ffdhe3072",
    "modp2048": "modp2048",
    "modp3072": "modp3072",
}
# Groups a profile may ask for, with their security strength in bits (NIST SP 800-57 Pt 1
# Table 2; RFC 7919 §A; RFC 3526). modp* exist only as TLS 1.2 DHE parameters.
GROUP_BITS = {
    "x25519": 128,
    "x448": 224,
    "secp256r1": 128,
    "secp384r1": 192,
    "secp521r1": 256,
    "ffdhe2048": 112,
    "ffdhe3072": 128,
    "modp2048": 112,
    "modp3072": 128,
}
FFDHE_GROUPS = ("ffdhe2048", "ffdhe3072")
MODP_GROUPS = ("modp2048", "modp3072")
CERTIFICATE_BITS = {"rsa2048": 112, "rsa3072": 128, "ecdsa-p256": 128, "ed25519": 128}
# OpenSSL security levels (SSL_CTX_set_security_level(3)): minimum strength in bits; level 3
# and above also refuse suites without forward secrecy (static RSA key transport).
SECURITY_LEVEL_BITS = {0: 0, 1: 80, 2: 112, 3: 128, 4: 192, 5: 256}
# SHA-256 (first 16 bytes, hex) of well-known DH primes, big-endian: a TLS 1.2
# ServerKeyExchange with one of them used that group (`openssl genpkey -genparam -algorithm
# DH -pkeyopt group:NAME` printed them). RFC 7919 ffdhe*, RFC 3526 modp* (OpenSSL's
# automatic TLS 1.2 DHE parameters, which mosquitto 2.0.11 uses).
_DH_PRIME_FINGERPRINTS = {
    "9cd3b7f336872f46c09428d1bbc19877": "ffdhe2048",
    "0eaf67db3a839156d5013494a5318a77": "ffdhe3072",
    "d66436f79bbd6b2e38c0ffbd079be904": "modp2048",
    "48cf8b092fbce4359d9871abf74f98e2": "modp3072",
}
# mosquitto 2.0.11 turns on OpenSSL's automatic DH parameters (SSL_CTX_set_dh_auto, its fix
# for #1925), which in OpenSSL 3.0 take precedence over `dhparamfile`: TLS 1.2 DHE uses the
# RFC 3526 group matching the certificate's strength, and nothing else can be chosen.
TLS12_DHE_GROUP = {"rsa2048": "modp2048", "rsa3072": "modp3072"}

# IANA TLS SignatureScheme registry (RFC 8446 §4.2.3); TLS 1.2 hash/signature pairs share codes.
SIGNATURE_NAMES = {
    0x0201: "rsa_pkcs1_sha1",
    0x0203: "ecdsa_sha1",
    0x0401: "rsa_pkcs1_sha256",
    0x0501: "rsa_pkcs1_sha384",
    0x0601: "rsa_pkcs1_sha512",
    0x0403: "ecdsa_secp256r1_sha256",
    0x0503: "ecdsa_secp384r1_sha384",
    0x0603: "ecdsa_secp521r1_sha512",
    0x0804: "rsa_pss_rsae_sha256",
    0x0805: "rsa_pss_rsae_sha384",
    0x0806: "rsa_pss_rsae_sha512",
    0x0807: "ed25519",
    0x0808: "ed448",
    0x0809: "rsa_pss_pss_sha256",
    0x080A: "rsa_pss_pss_sha384",
    0x080B: "rsa_pss_pss_sha512",
}

# Handshake message types (RFC 8446 §4, RFC 5246 §7.4).
_SERVER_HELLO = 2
_CERTIFICATE = 11
_SERVER_KEY_EXCHANGE = 12
_CERTIFICATE_REQUEST = 13
_CERTIFICATE_VERIFY = 15
_HANDSHAKE_CONTENT_TYPE = 22
_EXTENSION_KEY_SHARE = 0x0033
# A ServerHello with this random is a HelloRetryRequest (RFC 8446 §4.1.3).
_HELLO_RETRY_RANDOM = bytes.fromhex(
    "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c"
)


TLS13_SUITES = (
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_AES_128_CCM_SHA256",
    "TLS_AES_128_CCM_8_SHA256",
)
# OpenSSL's spelling of each group for SSL_CTX_set1_groups_list / `openssl s_client -groups`.
OPENSSL_GROUP_NAMES = {
    "x25519": "X25519",
    "x448": "X448",
    "secp256r1": "P-256",
    "secp384r1": "P-384",
    "secp521r1": "P-521",
    "ffdhe2048": "ffdhe2048",
    "ffdhe3072": "ffdhe3072",
}
_AUTH_OF_CERTIFICATE = {
    "rsa2048": "auth-rsa",
    "rsa3072": "auth-rsa",
    "ecdsa-p256": "auth-ecdsa",  # TLS 1.2 signs with Ed25519 through the ECDSA suites
    "ed25519": "auth-ecdsa",
}
_EXAMPLE_SUITE = {
    ("auth-rsa", "kx-ecdhe"): "ECDHE-RSA-AES128-GCM-SHA256",
    ("auth-rsa", "kx-dhe"): "DHE-RSA-AES256-GCM-SHA384",
    ("auth-ecdsa", "kx-ecdhe"): "ECDHE-ECDSA-AES128-GCM-SHA256",
}


def canonical_group(name: str) -> str:
    """The IANA name of a group spelling (``P-256`` -> ``secp256r1``); SpecError if unknown."""
    group = GROUP_ALIASES.get(str(name).strip().lower())
    if group is None:
        known = ", ".join(sorted(set(GROUP_ALIASES.values())))
        raise SpecError(f"unknown TLS group {name!r}; known: {known} (or P-256, P-384)")
    return group


def expand_tls12_ciphers(ciphers: str) -> list[dict[str, Any]]:
    """The TLS 1.2 suites an OpenSSL cipher string selects (any security level), with
    OpenSSL's ``kea``/``auth`` classification; SpecError when it selects none."""
    scratch = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        scratch.set_ciphers(f"{ciphers}:@SECLEVEL=0")
    except ssl.SSLError:
        raise SpecError(
            f"no usable TLS 1.2 cipher in {ciphers!r} (OpenSSL names, e.g. "
            "ECDHE-RSA-AES128-GCM-SHA256; `openssl ciphers -v` lists them)"
        ) from None
    return [c for c in scratch.get_ciphers() if c["protocol"] != "TLSv1.3"]


@dataclass(frozen=True)
class TlsProfile:
    """The TLS transport a configuration asks for.

    The constructor refuses combinations that cannot negotiate what they claim (a suite of
    the other TLS version, a suite whose authentication does not match the certificate, a
    group the suite's key exchange cannot use, a part the security level forbids) with a
    ``SpecError`` naming the fix, before any process starts (RELIABILITY.md #4).
    """

    version: str  # "1.2" or "1.3"; the client pins minimum = maximum = this
    ciphers: str | None  # OpenSSL cipher string (1.2) or ":"-list of TLS_* suites (1.3)
    certificate: str  # server key type: "rsa2048", "rsa3072", "ecdsa-p256" or "ed25519"
    resumption: bool = False  # measured connections resume the previous one's session
    mutual: bool = False  # the client presents a certificate too
    group: str | None = None  # key-exchange group (IANA name); None: OpenSSL's preference
    chain_length: int = 1  # certificates below the root (leaf + intermediates); +1 sent
    security_level: int = DEFAULT_SECURITY_LEVEL  # OpenSSL security level on both ends

    def __post_init__(self) -> None:
        if self.version not in TLS_VERSIONS:
            raise SpecError(f"TLS version must be 1.2 or 1.3, got {self.version!r}")
        if self.certificate not in CERTIFICATE_TYPES:
            raise SpecError(
                f"TLS certificate must be one of {', '.join(CERTIFICATE_TYPES)}, "
                f"got {self.certificate!r}"
            )
        if self.group is not None:
            object.__setattr__(self, "group", canonical_group(self.group))
        if self.chain_length not in CHAIN_LENGTHS:
            raise SpecError(f"TLS chain_length must be 1, 2 or 3, got {self.chain_length!r}")
        if self.security_level not in SECURITY_LEVEL_BITS:
            raise SpecError(
                f"TLS security_level must be 0-5 (OpenSSL levels), got {self.security_level!r}"
            )
        if self.ciphers is not None:
            if not self.ciphers.strip() or any(c in self.ciphers for c in "\n\r"):
                raise SpecError("TLS ciphers must be a non-empty single-line string")
            names = self.ciphers.split(":")
            # OpenSSL silently ignores suites of the other version (RELIABILITY #4): refuse.
            if self.version == "1.3":
                wrong = [n for n in names if not n.startswith("TLS_")]
                if wrong:
                    raise SpecError(
                        f"TLS 1.3 profile with TLS 1.2 cipher(s) {':'.join(wrong)}; "
                        "TLS 1.3 suites are named TLS_*, e.g. TLS_AES_128_GCM_SHA256 "
                        "(or use tls1.2 for this suite)"
                    )
                unknown = [n for n in names if n not in TLS13_SUITES]
                if unknown:
                    raise SpecError(
                        f"unknown TLS 1.3 suite(s) {':'.join(unknown)}; "
                        f"known: {', '.join(TLS13_SUITES)}"
                    )
            else:
                wrong = [n for n in names if n.startswith("TLS_")]
                if wrong:
                    raise SpecError(
                        f"TLS 1.2 profile with TLS 1.3 suite(s) {':'.join(wrong)}; "
                        "use OpenSSL names such as ECDHE-RSA-AES128-GCM-SHA256 "
                        "(or use tls1.3 for this suite)"
                    )
        self._check_strength()
        if self.version == "1.2":
            self._check_tls12()
        elif self.group in MODP_GROUPS:
            raise SpecError(
                f"{self.group} is a TLS 1.2 DHE parameter set, not a TLS 1.3 group: "
                "use ffdhe2048 or ffdhe3072"
            )

    def _check_strength(self) -> None:
        level = self.security_level
        minimum = SECURITY_LEVEL_BITS[level]
        weak = [
            (part, bits)
            for part, bits in (
                (f"certificate {self.certificate}", CERTIFICATE_BITS[self.certificate]),
                (f"group {self.group}", GROUP_BITS.get(self.group or "", 128)),
            )
            if bits < minimum
        ]
        if weak:
            part, bits = weak[0]
            allowed = max(n for n, b in SECURITY_LEVEL_BITS.items() if b <= bits)
            raise SpecError(
                f"{part} ({bits}-bit security) is refused at OpenSSL security level {level} "
                f"(needs {minimum} bits): set security_level = {allowed} "
                f"or a stronger {part.split()[0]}"
            )

    def _check_tls12(self) -> None:
        if self.group in FFDHE_GROUPS:
            raise SpecError(
                f"TLS 1.2 cannot negotiate {self.group}: mosquitto 2.0.11 uses OpenSSL's "
                "automatic DHE parameters (modp2048 with an RSA-2048 certificate, modp3072 "
                f"with RSA-3072): use tls1.3 for {self.group}, or group = modp2048 with a DHE suite"
            )
        if self.group in MODP_GROUPS and TLS12_DHE_GROUP.get(self.certificate) != self.group:
            matching = [c for c, g in TLS12_DHE_GROUP.items() if g == self.group]
            raise SpecError(
                f"TLS 1.2 DHE group {self.group} comes with a {matching[0]} certificate "
                f"(OpenSSL sizes the automatic parameters to it): set certificate = {matching[0]}"
            )
        if self.ciphers is None:
            return  # the client's default list has suites for every certificate and group
        suites = expand_tls12_ciphers(self.ciphers)
        auth = _AUTH_OF_CERTIFICATE[self.certificate]
        matching_auth = [c for c in suites if c["auth"] == auth]
        if not matching_auth:
            needed = {"auth-rsa": "an RSA", "auth-ecdsa": "an ECDSA or Ed25519"}.get(
                suites[0]["auth"], f"a {suites[0]['auth'].removeprefix('auth-').upper()}"
            )
            other = "ecdsa-p256" if auth == "auth-rsa" else "rsa2048"
            kx = suites[0]["kea"] if suites[0]["kea"] in ("kx-ecdhe", "kx-dhe") else "kx-ecdhe"
            example = _EXAMPLE_SUITE.get((auth, kx), _EXAMPLE_SUITE[(auth, "kx-ecdhe")])
            raise SpecError(
                f"TLS 1.2 suite(s) {self.ciphers} cannot authenticate with a {self.certificate} "
                f"server certificate (they need {needed} certificate): set certificate = "
                f"{other} or use a suite such as {example}"
            )
        if self.group is None:
            usable = matching_auth
        elif self.group in MODP_GROUPS:
            usable = [c for c in matching_auth if c["kea"] == "kx-dhe"]
        else:
            usable = [c for c in matching_auth if c["kea"] == "kx-ecdhe"]
        if not usable:
            kinds = sorted({c["kea"].removeprefix("kx-").upper() for c in matching_auth})
            if kinds == ["RSA"]:
                fix = "static RSA key transport has no key-exchange group: drop group"
            elif self.group in MODP_GROUPS:
                fix = f"group {self.group} needs a DHE suite such as DHE-RSA-AES256-GCM-SHA384"
            else:
                fix = f"group {self.group} needs an ECDHE suite"
            raise SpecError(
                f"TLS 1.2 suite(s) {self.ciphers} use {'/'.join(kinds)} key exchange: {fix}"
            )
        if self.security_level >= 3 and all(c["kea"] == "kx-rsa" for c in usable):
            raise SpecError(
                f"{self.ciphers} is static RSA key transport (no forward secrecy), which OpenSSL "
                f"refuses at security level {self.security_level}: set security_level = 2"
            )

    @property
    def name(self) -> str:
        """Canonical short name, e.g. ``tls1.3/x25519/ecdsa-p256`` (``parse_profile`` reads it)."""
        parts = [f"tls{self.version}"]
        if self.ciphers is not None:
            parts.append(self.ciphers)
        if self.group is not None:
            parts.append(self.group)
        parts.append(self.certificate)
        if self.chain_length != 1:
            parts.append(f"chain{self.chain_length}")
        if self.mutual:
            parts.append("mutual")
        if self.resumption:
            parts.append("resume")
        if self.security_level != DEFAULT_SECURITY_LEVEL:
            parts.append(f"seclevel{self.security_level}")
        return "/".join(parts)

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


def parse_profile(text: str) -> TlsProfile:
    """A profile from its short name: ``tls1.2|tls1.3`` then, in any order, separated by
    ``/``: a suite (``ECDHE-ECDSA-AES128-GCM-SHA256``, ``TLS_AES_128_GCM_SHA256``; ``+``
    joins several), a group (``x25519``, ``P-256``, ``ffdhe2048``), a certificate
    (``rsa2048`` …; default rsa2048), ``chainN``, ``mutual``, ``resume``, ``seclevelN``."""
    tokens = [t for t in str(text).strip().split("/") if t]
    if not tokens or tokens[0] not in ("tls1.2", "tls1.3"):
        raise SpecError(
            f"TLS profile {text!r} must start with tls1.2/ or tls1.3/, "
            "e.g. tls1.3/x25519/ecdsa-p256"
        )
    options: dict[str, Any] = {"version": tokens[0].removeprefix("tls"), "ciphers": None}
    options["certificate"] = "rsa2048"
    for token in tokens[1:]:
        lowered = token.lower()
        if lowered in CERTIFICATE_TYPES:
            options["certificate"] = lowered
        elif lowered in GROUP_ALIASES:
            options["group"] = GROUP_ALIASES[lowered]
        elif re.fullmatch(r"chain\d", lowered):
            options["chain_length"] = int(lowered[5:])
        elif re.fullmatch(r"seclevel\d", lowered):
            options["security_level"] = int(lowered[8:])
        elif lowered == "mutual":
            options["mutual"] = True
        elif lowered in ("resume", "resumption"):
            options["resumption"] = True
        elif token == token.upper() and re.fullmatch(r"[A-Z0-9_+\-:!@=]+", token):
            options["ciphers"] = token.replace("+", ":") if token.startswith("TLS_") else token
        else:
            raise SpecError(
                f"TLS profile {text!r}: cannot read {token!r} (a suite, a group such as x25519, "
                f"a certificate ({', '.join(CERTIFICATE_TYPES)}), chainN, mutual, resume or "
                "seclevelN)"
            )
    return TlsProfile(**options)


class OpenSslContextControl:
    """Sets what Python 3.11's ``ssl`` has no API for on a context's own ``SSL_CTX``.

    CPython's ``_ssl`` context object starts with the ``SSL_CTX *`` after the object header
    (Modules/_ssl.c ``PySSLContext``); the pointer is read there and then *checked* against
    two values Python does expose (options and security level) before anything is changed,
    so a different layout fails loudly instead of writing to the wrong memory. The library
    is the libssl the ``_ssl`` module itself loaded (from /proc/self/maps), so both sides
    share one OpenSSL.
    """

    _SSL_CTRL_SET_GROUPS_LIST = 92  # ssl.h: SSL_CTX_set1_groups_list is SSL_CTX_ctrl(…, 92)

    def __init__(self) -> None:
        library = ctypes.CDLL(self._libssl_path())
        library.SSL_CTX_ctrl.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.c_long,
            ctypes.c_char_p,
        ]
        library.SSL_CTX_ctrl.restype = ctypes.c_long
        library.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
        library.SSL_CTX_get_options.restype = ctypes.c_uint64
        library.SSL_CTX_get_security_level.argtypes = [ctypes.c_void_p]
        library.SSL_CTX_get_security_level.restype = ctypes.c_int
        library.SSL_CTX_set_security_level.argtypes = [ctypes.c_void_p, ctypes.c_int]
        library.SSL_CTX_set_security_level.restype = None
        library.SSL_CTX_set_ciphersuites.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        library.SSL_CTX_set_ciphersuites.restype = ctypes.c_int
        library.OpenSSL_version_num.restype = ctypes.c_ulong
        if library.OpenSSL_version_num() != ssl.OPENSSL_VERSION_NUMBER:
            raise RuntimeError("the libssl found is not the one Python's ssl module uses")
        self._library = library

    @staticmethod
    def _libssl_path() -> str:
        with contextlib.suppress(OSError), open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if "/libssl.so" in path:
                    return path
        return "libssl.so.3"

    def pointer(self, context: ssl.SSLContext) -> int:
        pointer = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
        library = self._library
        if (
            not pointer
            or library.SSL_CTX_get_options(pointer) != int(context.options)
            or library.SSL_CTX_get_security_level(pointer) != context.security_level
        ):
            raise RuntimeError(
                "cannot locate the SSL_CTX of this Python's ssl.SSLContext (CPython 3.11 "
                "layout expected); group and TLS 1.3 suite selection are unavailable"
            )
        return pointer

    def set_groups(self, context: ssl.SSLContext, groups: str) -> None:
        """``SSL_CTX_set1_groups_list``: the groups offered (TLS 1.3 key share, TLS 1.2 ECDHE)."""
        done = self._library.SSL_CTX_ctrl(
            self.pointer(context), self._SSL_CTRL_SET_GROUPS_LIST, 0, groups.encode()
        )
        if done != 1:
            raise SpecError(f"OpenSSL refuses the group list {groups!r}")

    def set_tls13_suites(self, context: ssl.SSLContext, suites: str) -> None:
        """``SSL_CTX_set_ciphersuites``: the TLS 1.3 suites offered."""
        if self._library.SSL_CTX_set_ciphersuites(self.pointer(context), suites.encode()) != 1:
            raise SpecError(f"OpenSSL refuses the TLS 1.3 suites {suites!r}")

    def set_security_level(self, context: ssl.SSLContext, level: int) -> None:
        """``SSL_CTX_set_security_level``, checked through ``context.security_level``."""
        self._library.SSL_CTX_set_security_level(self.pointer(context), level)
        if context.security_level != level:
            raise RuntimeError(f"OpenSSL security level stayed {context.security_level}")


_CONTROL: OpenSslContextControl | None = None


def openssl_control() -> OpenSslContextControl:
    """The process's one ``OpenSslContextControl`` (created on first use)."""
    global _CONTROL
    if _CONTROL is None:
        _CONTROL = OpenSslContextControl()
    return _CONTROL


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


@dataclass(frozen=True)
class NegotiatedTls:
    """What a TLS connection actually negotiated, as seen by the client."""

    version: str  # "1.2" or "1.3"
    cipher: str  # OpenSSL suite name, e.g. "TLS_AES_256_GCM_SHA384", "ECDHE-RSA-AES128-GCM-SHA256"
    cipher_bits: int  # secret bits of the bulk cipher
    group: str | None  # key-exchange group (IANA name); None for static RSA key transport
    signature_algorithm: str | None  # server's handshake signature (IANA name); None if none
    resumed: bool = False  # an abbreviated/PSK handshake reused an earlier session
    hello_retry: bool = False  # TLS 1.3 HelloRetryRequest (client guessed the wrong group)
    client_certificate_sent: bool = False  # the client signed a CertificateVerify
    handshake_messages_sent: tuple[tuple[str, int], ...] = ()  # (message type, bytes) in order
    handshake_messages_received: tuple[tuple[str, int], ...] = ()
    certificate: str | None = None  # server's leaf key type: "rsa2048", "ed25519", …
    server_certificates_sent: int | None = None  # in its Certificate message (None: resumed)
    round_trips: int | None = None  # client flights answered by the server during the handshake

    @property
    def handshake_bytes_sent(self) -> int:
        """Handshake message bytes (with their 4-byte headers, without record framing)."""
        return sum(size for _, size in self.handshake_messages_sent)

    @property
    def handshake_bytes_received(self) -> int:
        """Handshake message bytes received (post-handshake tickets included if already read)."""
        return sum(size for _, size in self.handshake_messages_received)

    def to_dict(self) -> dict:
        """Plain-JSON form with message counts and byte totals."""
        record = asdict(self)
        record["handshake_messages_sent"] = [list(m) for m in self.handshake_messages_sent]
        record["handshake_messages_received"] = [list(m) for m in self.handshake_messages_received]
        record["handshake_message_count_sent"] = len(self.handshake_messages_sent)
        record["handshake_message_count_received"] = len(self.handshake_messages_received)
        record["handshake_bytes_sent"] = self.handshake_bytes_sent
        record["handshake_bytes_received"] = self.handshake_bytes_received
        return record


class _Transcript:
    """What the hook saw on one connection (no secrets: public handshake fields only)."""

    def __init__(self) -> None:
        self.group: str | None = None
        self.signature_algorithm: str | None = None
        self.hello_retry = False
        self.client_certificate_sent = False
        self.sent: list[tuple[str, int]] = []
        self.received: list[tuple[str, int]] = []
        self.order: list[tuple[str, int]] = []  # (direction, message type) in handshake order
        # The server's leaf certificate as received. Its key type is decoded only after the
        # handshake: parsing it here, inside OpenSSL's callback, ran inside the timed
        # do_handshake and (first use of cryptography's x509 in a fresh agent) added ~20 ms
        # of CPU to every measured TLS handshake.
        self.leaf_certificate_der: bytes | None = None
        self.certificate_count: int | None = None
        self.parse_errors: list[str] = []
        self.raw: list[tuple[str, Any, bytes]] = []  # (direction, message type, bytes), unparsed


class HandshakeObserver:
    """Records negotiated TLS parameters of the connections made with one context.

    Call ``install(context)`` before connecting and ``negotiated(ssl_sock)`` after the
    handshake. The hook runs inside OpenSSL callbacks, so it never raises: a message it
    cannot parse is noted and the field stays None.
    """

    def __init__(self, *, prefer_c: bool = True) -> None:
        self._prefer_c = prefer_c  # False: Python's hook even where the C recorder works
        self.recorder = "python"  # which one install() attached: "c" or "python"
        self._lock = threading.Lock()
        self._connections: weakref.WeakKeyDictionary[Any, _Transcript] = weakref.WeakKeyDictionary()
        self._last: _Transcript | None = None

    def install(self, context: ssl.SSLContext) -> None:
        """Attach the hook to ``context``: the C recorder when it works here (nothing runs in
        Python during the handshake), else Python's ``_msg_callback``."""
        self.recorder = "c" if self._prefer_c and recorder_problem() is None else "python"
        if self.recorder == "c":
            _tlsrecord.install(openssl_control().pointer(context))  # type: ignore[union-attr]
        else:
            context._msg_callback = self._on_message  # type: ignore[attr-defined]

    def negotiated(self, ssl_sock: ssl.SSLSocket | ssl.SSLObject) -> NegotiatedTls:
        """The parameters ``ssl_sock`` negotiated, from the socket and the hooked messages."""
        if self.recorder == "c":
            transcript: _Transcript | None = _recorded_transcript(ssl_sock)
        else:
            with self._lock:
                transcript = self._connections.get(ssl_sock)
                if transcript is None and len(self._connections) <= 1:
                    # A wrapper library may hand us another object for the same connection.
                    transcript = self._last
        if transcript is None:
            raise ValueError("no handshake observed: install the observer before connecting")
        self._parse(transcript)
        version_name = ssl_sock.version()
        cipher = ssl_sock.cipher()
        if version_name is None or cipher is None:
            raise ValueError("the TLS handshake has not completed")
        return NegotiatedTls(
            version=version_name.removeprefix("TLSv"),
            cipher=cipher[0],
            cipher_bits=cipher[2],
            group=transcript.group,
            signature_algorithm=transcript.signature_algorithm,
            resumed=bool(ssl_sock.session_reused),
            hello_retry=transcript.hello_retry,
            client_certificate_sent=transcript.client_certificate_sent,
            handshake_messages_sent=tuple(transcript.sent),
            handshake_messages_received=tuple(transcript.received),
            certificate=(
                key_type_of_der(transcript.leaf_certificate_der)
                if transcript.leaf_certificate_der
                else _peer_key_type(ssl_sock)
            ),
            server_certificates_sent=transcript.certificate_count,
            round_trips=_round_trips(transcript.order),
        )

    def _on_message(
        self, conn: Any, direction: str, version: Any, content_type: Any, msg_type: Any, data: bytes
    ) -> None:
        if content_type != _HANDSHAKE_CONTENT_TYPE:
            return  # record headers, alerts, change_cipher_spec
        with self._lock:
            transcript = self._connections.get(conn)
            if transcript is None:
                transcript = _Transcript()
                # Not weak-referenceable: the transcript is still reachable through _last.
                with contextlib.suppress(TypeError):
                    self._connections[conn] = transcript
                self._last = transcript
        # Only keep the bytes: this runs inside the timed do_handshake, so every microsecond
        # spent here would be counted as the handshake's CPU. Parsing waits for negotiated().
        transcript.raw.append((direction, msg_type, bytes(data)))

    def _parse(self, transcript: _Transcript) -> None:
        """Decode the kept handshake messages once, after the handshake."""
        pending, transcript.raw = transcript.raw, []
        for direction, msg_type, data in pending:
            name = getattr(msg_type, "name", str(msg_type)).lower()
            try:
                self._record(transcript, direction, int(msg_type), name, data)
            except Exception as error:  # a message we cannot parse leaves its field None
                transcript.parse_errors.append(f"{name}: {type(error).__name__}")

    @staticmethod
    def _record(
        transcript: _Transcript, direction: str, msg_type: int, name: str, data: bytes
    ) -> None:
        body = data[4:]  # after type(1) | length(3)
        transcript.order.append((direction, msg_type))
        if direction == "write":
            transcript.sent.append((name, len(data)))
            if msg_type == _CERTIFICATE_VERIFY:
                transcript.client_certificate_sent = True
            return
        transcript.received.append((name, len(data)))
        if msg_type == _SERVER_HELLO:
            _parse_server_hello(transcript, body)
        elif msg_type == _SERVER_KEY_EXCHANGE:
            _parse_server_key_exchange(transcript, body)
        elif msg_type == _CERTIFICATE_VERIFY:
            transcript.signature_algorithm = _signature_name(int.from_bytes(body[0:2], "big"))
        elif msg_type == _CERTIFICATE:
            certificates = _certificate_list(body)
            transcript.certificate_count = len(certificates)
            if certificates:
                transcript.leaf_certificate_der = certificates[0]


def _ssl_address(ssl_sock: ssl.SSLSocket | ssl.SSLObject) -> int:
    """Address of the connection's ``SSL`` (CPython 3.11 ``PySSLSocket``: header, the socket
    weakref, then ``SSL *``). Used only as a key among the connections the C recorder saw,
    never dereferenced, so a different layout finds nothing instead of crashing."""
    inner = getattr(ssl_sock, "_sslobj", None)
    if inner is None:
        return 0
    offset = object.__basicsize__ + ctypes.sizeof(ctypes.c_void_p)
    return ctypes.c_void_p.from_address(id(inner) + offset).value or 0


def _recorded_transcript(ssl_sock: ssl.SSLSocket | ssl.SSLObject) -> _Transcript | None:
    """A transcript of what the C recorder kept for this connection (parsed later)."""
    recorded = _tlsrecord.messages(_ssl_address(ssl_sock))  # type: ignore[union-attr]
    if recorded is None:
        return None
    transcript = _Transcript()
    transcript.raw = [
        ("write" if written else "read", _message_type(msg_type), data)
        for written, msg_type, data in recorded
    ]
    return transcript


def _message_type(value: int) -> Any:
    """The enum Python's own hook hands over (for its name), or the number if unknown."""
    try:
        return ssl._TLSMessageType(value)  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return value


@functools.cache
def recorder_problem() -> str | None:
    """Why the C handshake recorder cannot be used here (one line), or None when it works.

    Checked once per process: the extension exists, runs the libssl Python's ``ssl`` runs,
    and records the ClientHello of an in-memory connection made by this Python.
    """
    if _tlsrecord is None:
        return "C extension _tlsrecord not built (install gcc, python3-dev, libssl-dev)"
    if _tlsrecord.openssl_version_number() != ssl.OPENSSL_VERSION_NUMBER:
        return "_tlsrecord runs another libssl than Python's ssl module"
    try:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        _tlsrecord.install(openssl_control().pointer(context))
        connection = context.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO())
        with contextlib.suppress(ssl.SSLWantReadError):
            connection.do_handshake()  # writes the ClientHello, then waits for a server
        recorded = _tlsrecord.messages(_ssl_address(connection))
    except (OSError, RuntimeError, ValueError) as error:
        return f"recorder self-test failed: {error}"
    if not recorded or tuple(recorded[0][:2]) != (True, 1):
        return "recorder self-test saw no ClientHello (unexpected ssl object layout)"
    return None


# Post-handshake messages: not part of the handshake's round trips.
_NEW_SESSION_TICKET = 4
_KEY_UPDATE = 24


def _round_trips(order: list[tuple[str, int]]) -> int | None:
    """Client flights that the server answered: each change from writing to reading."""
    flights = [d for d, t in order if t not in (_NEW_SESSION_TICKET, _KEY_UPDATE)]
    if not flights:
        return None
    return sum(1 for pair in itertools.pairwise(flights) if pair == ("write", "read"))


def _certificate_list(body: bytes) -> list[bytes]:
    """DER certificates of a Certificate message (TLS 1.3 RFC 8446 §4.4.2 or 1.2 §7.4.2)."""
    tls13 = body[:1] == b"\x00" and int.from_bytes(body[1:4], "big") == len(body) - 4
    position = 4 if tls13 else 3
    certificates = []
    while position + 3 <= len(body):
        length = int.from_bytes(body[position : position + 3], "big")
        certificates.append(body[position + 3 : position + 3 + length])
        position += 3 + length
        if tls13:
            position += 2 + int.from_bytes(body[position : position + 2], "big")
    return certificates


def key_type_of_der(der: bytes) -> str:
    """The lab's name of a certificate's key type (``rsa2048``, ``ecdsa-p256``, ``ed25519``…)."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    key = x509.load_der_x509_certificate(der).public_key()
    if isinstance(key, rsa.RSAPublicKey):
        return f"rsa{key.key_size}"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return {"secp256r1": "ecdsa-p256", "secp384r1": "ecdsa-p384"}.get(
            key.curve.name, f"ecdsa-{key.curve.name}"
        )
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "ed25519"
    return type(key).__name__


def _peer_key_type(ssl_sock: ssl.SSLSocket | ssl.SSLObject) -> str | None:
    with contextlib.suppress(Exception):
        der = ssl_sock.getpeercert(binary_form=True)
        if der:
            return key_type_of_der(der)
    return None


def _group_name(code: int) -> str:
    return GROUP_NAMES.get(code, f"group-0x{code:04x}")


def _signature_name(code: int) -> str:
    return SIGNATURE_NAMES.get(code, f"signature-0x{code:04x}")


def _parse_server_hello(transcript: _Transcript, body: bytes) -> None:
    """TLS 1.3: the group is in the key_share extension (RFC 8446 §4.1.3, §4.2.8)."""
    position = 2  # legacy_version
    random = body[position : position + 32]
    position += 32
    position += 1 + body[position]  # legacy_session_id_echo
    position += 2 + 1  # cipher_suite, legacy_compression_method
    if position + 2 > len(body):
        return  # TLS 1.2 ServerHello without extensions
    end = position + 2 + int.from_bytes(body[position : position + 2], "big")
    position += 2
    while position + 4 <= end:
        extension = int.from_bytes(body[position : position + 2], "big")
        length = int.from_bytes(body[position + 2 : position + 4], "big")
        if extension == _EXTENSION_KEY_SHARE:
            # ServerHello: KeyShareEntry(group, key); HelloRetryRequest: selected_group only.
            transcript.group = _group_name(int.from_bytes(body[position + 4 : position + 6], "big"))
        position += 4 + length
    if random == _HELLO_RETRY_RANDOM:
        transcript.hello_retry = True


def _parse_server_key_exchange(transcript: _Transcript, body: bytes) -> None:
    """TLS 1.2 ECDHE (RFC 8422 §5.4) or DHE (RFC 5246 §7.4.3) parameters, then the signature."""
    if body[0] == 3:  # ECCurveType named_curve
        transcript.group = _group_name(int.from_bytes(body[1:3], "big"))
        position = 3 + 1 + body[3]  # point length (1 byte) + point
    else:  # DHE: dh_p, dh_g, dh_Ys, each with a 2-byte length
        prime_bytes = int.from_bytes(body[0:2], "big")
        fingerprint = hashlib.sha256(body[2 : 2 + prime_bytes]).hexdigest()[:32]
        # An RFC 7919 prime is that named group; anything else is named by its size.
        transcript.group = _DH_PRIME_FINGERPRINTS.get(fingerprint, f"dhe{8 * prime_bytes}")
        position = 0
        for _ in range(3):
            position += 2 + int.from_bytes(body[position : position + 2], "big")
    if position + 2 <= len(body):
        transcript.signature_algorithm = _signature_name(
            int.from_bytes(body[position : position + 2], "big")
        )


def requested_cipher_names(profile: TlsProfile) -> set[str] | None:
    """The suite names a profile's ``ciphers`` admits, or None when it leaves the default."""
    if profile.ciphers is None:
        return None
    if profile.version == "1.3":
        return set(profile.ciphers.split(":"))
    # Expand OpenSSL keywords (HIGH, ECDHE+AESGCM, !aNULL ...) the way the client will.
    scratch = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        scratch.set_ciphers(profile.ciphers)
    except ssl.SSLError as error:
        raise SpecError(f"no usable TLS 1.2 cipher in {profile.ciphers!r}") from error
    return {c["name"] for c in scratch.get_ciphers() if c["protocol"] != "TLSv1.3"}


def _certificate_family(name: str) -> str | None:
    """'rsa', 'ecdsa' or 'ed25519' for a signature algorithm or a certificate key type."""
    for family in ("rsa", "ecdsa", "ed25519"):
        if name.startswith(family):
            return family
    return None


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
    requested = requested_cipher_names(profile)
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


# Client-side key-exchange operations per group, in the energy vocabulary where it has names.
_GROUP_OPERATIONS = {
    "secp256r1": ("ecdh-p256-keygen", "ecdh-p256-derive"),
    "secp384r1": ("ecdh-p384-keygen", "ecdh-p384-derive"),
    "secp521r1": ("ecdh-p521-keygen", "ecdh-p521-derive"),
    "x25519": ("x25519-keygen", "x25519-derive"),
    "x448": ("x448-keygen", "x448-derive"),
    "X25519MLKEM768": ("x25519-keygen", "x25519-derive", "mlkem768-keygen", "mlkem768-decaps"),
}


def _verify_operation(certificate: str) -> str:
    if certificate in ("ecdsa-p256", "ed25519"):
        return f"{certificate}-verify"
    return f"{certificate}-public"


def _sign_operation(certificate: str) -> str:
    if certificate in ("ecdsa-p256", "ed25519"):
        return f"{certificate}-sign"
    return f"{certificate}-private"


def handshake_operations(negotiated: NegotiatedTls, certificate: str) -> list[tuple[str, int]]:
    """Public-key operations the *client* performed in the handshake, one entry per operation.

    Assumptions (the lab's PKI, not facts read from the connection):

    * key exchange: ECDHE/DHE on ``negotiated.group`` costs one keygen and one derive (a
      hybrid ML-KEM group adds an ML-KEM keygen and decapsulation); with no group in
      TLS 1.2 the suite is static RSA key transport: one RSA public-key encryption;
    * the server's handshake signature (ServerKeyExchange in 1.2, CertificateVerify in 1.3)
      is one verification with the server's ``certificate`` key type;
    * every certificate below the root (``server_certificates_sent`` − 1: the lab's server
      sends the root too; 1 when unknown) was issued with the *same* key type as
      ``certificate``: one verification each. The anchor's self-signature is not checked
      (OpenSSL trusts anchors as configured);
    * with mutual authentication the client key has the same type: one signature;
    * a resumed session skips certificates and signatures; TLS 1.3 resumption still pays
      the (EC)DHE of ``group`` when one was negotiated;
    * hashing, HKDF/PRF and record protection are not counted here (bulk costs are logged
      per record elsewhere); unknown groups yield ``<group>-keygen``/``-derive`` names that
      the energy model reports as unmodelled.
    """
    if certificate not in CERTIFICATE_TYPES:
        raise ValueError(f"certificate must be one of {', '.join(CERTIFICATE_TYPES)}")
    operations: list[tuple[str, int]] = []
    if negotiated.group is not None:
        names = _GROUP_OPERATIONS.get(
            negotiated.group, (f"{negotiated.group}-keygen", f"{negotiated.group}-derive")
        )
        operations.extend((name, 1) for name in names)
    elif negotiated.version == "1.2" and not negotiated.resumed:
        if not certificate.startswith("rsa"):
            raise ValueError("static RSA key transport needs an RSA certificate")
        operations.append((f"{certificate}-public", 1))  # encrypt the premaster secret
    if negotiated.resumed:
        return operations
    if negotiated.signature_algorithm is not None:
        operations.append((_verify_operation(certificate), 1))  # server's handshake signature
    below_root = max(1, (negotiated.server_certificates_sent or 2) - 1)
    for _ in range(below_root):  # issuer signatures
        operations.append((_verify_operation(certificate), 1))
    if negotiated.client_certificate_sent:
        operations.append((_sign_operation(certificate), 1))
    return operations


def record_operations(negotiated: NegotiatedTls, record_bytes: int) -> list[tuple[str, int]]:
    """Bulk operations to protect (or unprotect) ``record_bytes`` of application data.

    AEAD suites (GCM, CCM, ChaCha20-Poly1305) are one pass of their AEAD; CBC suites are
    AES-CBC plus an HMAC over the same bytes (MAC-then-encrypt, SHA-1/SHA-256/SHA-384 all
    priced as HMAC-SHA256 — an approximation the energy model documents). Unknown suites
    return ``<cipher>-record`` so the model reports them as unmodelled instead of free.
    """
    cipher = negotiated.cipher.upper()
    if "CHACHA20" in cipher:
        return [("chacha20-poly1305", record_bytes)]
    if "GCM" in cipher:
        return [("aes-gcm", record_bytes)]
    if "CBC" in cipher or ("AES" in cipher and "SHA" in cipher and "CCM" not in cipher):
        return [("aes-cbc", record_bytes), ("hmac-sha256", record_bytes)]
    return [(f"{negotiated.cipher.lower()}-record", record_bytes)]
