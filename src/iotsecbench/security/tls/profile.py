"""The TLS profile: what a configuration asks of its transport, refused before anything
starts when it cannot negotiate what it claims (docs/tls.md lists the refusals)."""

from __future__ import annotations

import re
import ssl
from dataclasses import asdict, dataclass
from typing import Any

from iotsecbench.errors import SpecError

TLS_VERSIONS = ("1.2", "1.3")
CERTIFICATE_TYPES = ("rsa2048", "rsa3072", "ecdsa-p256", "ed25519", "mldsa44", "mldsa65")
# Certificates below the trust anchor: the server's plus 0-2 intermediates. The lab's
# server sends these and the root (lab/pki.py), chain_length + 1 certificates.
CHAIN_LENGTHS = (1, 2, 3)
DEFAULT_SECURITY_LEVEL = 2  # Debian's and Python's default; every listed profile passes it


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
    "x25519mlkem768": "X25519MLKEM768",
    "secp256r1mlkem768": "SecP256r1MLKEM768",
    "p256mlkem768": "SecP256r1MLKEM768",
    "mlkem768": "MLKEM768",
    "mlkem512": "MLKEM512",
    "mlkem1024": "MLKEM1024",
    "secp384r1mlkem1024": "SecP384r1MLKEM1024",
    "p384mlkem1024": "SecP384r1MLKEM1024",
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
    # ML-KEM-512/768/1024 are NIST security categories 1, 3 and 5 (FIPS 203 §8), which
    # OpenSSL's security levels count at 128, 192 and 256 bits; a hybrid is at least as
    # strong as its stronger half
    "X25519MLKEM768": 192,
    "SecP256r1MLKEM768": 192,
    "SecP384r1MLKEM1024": 256,
    "MLKEM512": 128,
    "MLKEM768": 192,
    "MLKEM1024": 256,
}
# The post-quantum parts (TLS 1.3 only; OpenSSL 3.5, the openssl-3.5 stack): groups with
# ML-KEM (draft-ietf-tls-ecdhe-mlkem, draft-ietf-tls-mlkem) and ML-DSA certificates
# (draft-ietf-tls-mldsa).
PQ_GROUPS = (
    "X25519MLKEM768",
    "SecP256r1MLKEM768",
    "SecP384r1MLKEM1024",
    "MLKEM512",
    "MLKEM768",
    "MLKEM1024",
)
PQ_CERTIFICATES = ("mldsa44", "mldsa65")
FFDHE_GROUPS = ("ffdhe2048", "ffdhe3072")
MODP_GROUPS = ("modp2048", "modp3072")
CERTIFICATE_BITS = {
    "rsa2048": 112,
    "rsa3072": 128,
    "ecdsa-p256": 128,
    "ed25519": 128,
    "mldsa44": 128,  # FIPS 204 §4: ML-DSA-44 is category 2, ML-DSA-65 category 3
    "mldsa65": 192,
}
# OpenSSL security levels (SSL_CTX_set_security_level(3)): minimum strength in bits; level 3
# and above also refuse suites without forward secrecy (static RSA key transport).
SECURITY_LEVEL_BITS = {0: 0, 1: 80, 2: 112, 3: 128, 4: 192, 5: 256}

# mosquitto 2.0.11 turns on OpenSSL's automatic DH parameters (SSL_CTX_set_dh_auto, its fix
# for #1925), which in OpenSSL 3.0 take precedence over `dhparamfile`: TLS 1.2 DHE uses the
# RFC 3526 group matching the certificate's strength, and nothing else can be chosen.
TLS12_DHE_GROUP = {"rsa2048": "modp2048", "rsa3072": "modp3072"}

TLS13_SUITES = (
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_AES_128_CCM_SHA256",
    "TLS_AES_128_CCM_8_SHA256",
)
_AUTH_OF_CERTIFICATE = {
    "rsa2048": "auth-rsa",
    "rsa3072": "auth-rsa",
    "ecdsa-p256": "auth-ecdsa",  # TLS 1.2 signs with Ed25519 through the ECDSA suites
    "ed25519": "auth-ecdsa",
    "mldsa44": "auth-mldsa",  # TLS 1.3 only
    "mldsa65": "auth-mldsa",
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
    """The TLS 1.2 suites an OpenSSL cipher string (keywords such as ``HIGH`` or
    ``ECDHE+AESGCM`` included) selects at any security level, with OpenSSL's ``kea``/``auth``
    classification; SpecError when it selects none. The one place cipher strings are read."""
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
    ``SpecError`` naming the fix, before any process starts (docs/reliability.md #4).
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
            # OpenSSL silently ignores suites of the other version (docs/reliability.md #4): refuse.
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

    @property
    def post_quantum(self) -> bool:
        """The key exchange resists a quantum computer (an ML-KEM group)."""
        return self.group in PQ_GROUPS

    @property
    def needs_pq_library(self) -> bool:
        """A post-quantum group or certificate: OpenSSL 3.5 on both ends (stack openssl-3.5)."""
        return self.group in PQ_GROUPS or self.certificate in PQ_CERTIFICATES

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
        if self.needs_pq_library:
            part = self.group if self.group in PQ_GROUPS else f"certificate {self.certificate}"
            raise SpecError(f"{part} is post-quantum and TLS 1.3 only: use tls1.3")
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
        if (
            self.mutual
            and self.certificate == "ecdsa-p256"
            and self.group not in (None, "secp256r1")
        ):
            # RFC 8422 §5.1: in TLS 1.2 the supported groups also bound the curves of ECDSA
            # certificates, and OpenSSL's server checks the client's certificate against its
            # own list, which the broker limits to the profile's group (measured: every stack
            # is refused with an illegal_parameter alert).
            raise SpecError(
                f"TLS 1.2 mutual authentication with ecdsa-p256 client certificates needs the "
                f"P-256 group, not {self.group}: the server accepts a client's ECDSA "
                "certificate only on a curve among its groups. Set group = P-256, drop it, "
                "or use tls1.3"
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

    @property
    def requested_suites(self) -> set[str] | None:
        """The suite names ``ciphers`` admits, or None when it leaves OpenSSL's default."""
        if self.ciphers is None:
            return None
        if self.version == "1.3":
            return set(self.ciphers.split(":"))
        return {c["name"] for c in expand_tls12_ciphers(self.ciphers)}

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


def parse_profile(text: str) -> TlsProfile:
    """A profile from its short name: ``tls1.2|tls1.3`` then, in any order, separated by
    ``/``: a suite (``ECDHE-ECDSA-AES128-GCM-SHA256``, ``TLS_AES_128_GCM_SHA256``; ``+``
    joins several), a group (``x25519``, ``P-256``, ``ffdhe2048``, ``x25519mlkem768``), a
    certificate (``rsa2048`` …, ``mldsa44``; default rsa2048), ``chainN``, ``mutual``,
    ``resume``, ``seclevelN``."""
    return TlsProfile(**profile_options(text))


def profile_options(text: str) -> dict[str, Any]:
    """The ``TlsProfile`` fields a short name sets (``parse_profile``), defaults included."""
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
    return options
