"""TLS profiles: what to ask for, how to configure both ends, and what was actually negotiated.

This module owns ``TlsProfile`` (the transport half of a security configuration), the client
``ssl.SSLContext`` and the mosquitto listener lines built from it, and the
``HandshakeObserver`` that records the *negotiated* parameters from a live connection.
Asking OpenSSL for one thing and getting another is silent (RELIABILITY.md: a TLS 1.3 profile
with a TLS 1.2 cipher negotiates something else), so runs record and check what happened.

Python 3.11's ``ssl`` reports version and cipher but not the key-exchange group or the
signature algorithm, so the observer parses them from the handshake messages that the
context's ``_msg_callback`` debug hook hands over (OpenSSL's ``SSL_CTX_set_msg_callback``,
which sees TLS 1.3 handshake messages after decryption). It never touches the network itself.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
import weakref
from dataclasses import asdict, dataclass
from os import PathLike
from typing import Any

from iotsecbench.errors import SpecError

SERVER_NAME = "localhost"  # the name the lab's server certificate carries and clients check
TLS_VERSIONS = ("1.2", "1.3")
CERTIFICATE_TYPES = ("rsa2048", "rsa3072", "ecdsa-p256")

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


@dataclass(frozen=True)
class TlsProfile:
    """The TLS transport a configuration asks for."""

    version: str  # "1.2" or "1.3"; the client pins minimum = maximum = this
    ciphers: str | None  # OpenSSL cipher string (1.2) or ":"-list of TLS_* suites (1.3)
    certificate: str  # server key type: "rsa2048", "rsa3072" or "ecdsa-p256"
    resumption: bool = False  # reuse sessions between connections (the study: no)
    mutual: bool = False  # the client presents a certificate too

    def __post_init__(self) -> None:
        if self.version not in TLS_VERSIONS:
            raise SpecError(f"TLS version must be 1.2 or 1.3, got {self.version!r}")
        if self.certificate not in CERTIFICATE_TYPES:
            raise SpecError(
                f"TLS certificate must be one of {', '.join(CERTIFICATE_TYPES)}, "
                f"got {self.certificate!r}"
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
                        "TLS 1.3 suites are named TLS_*, e.g. TLS_AES_128_GCM_SHA256"
                    )
            else:
                wrong = [n for n in names if n.startswith("TLS_")]
                if wrong:
                    raise SpecError(
                        f"TLS 1.2 profile with TLS 1.3 suite(s) {':'.join(wrong)}; "
                        "use OpenSSL names such as ECDHE-RSA-AES128-GCM-SHA256"
                    )

    def to_dict(self) -> dict:
        """Plain-JSON form."""
        return asdict(self)


def client_context(
    profile: TlsProfile,
    ca_file: str | PathLike[str],
    client_cert: str | PathLike[str] | None = None,
    client_key: str | PathLike[str] | None = None,
) -> ssl.SSLContext:
    """A client context pinned to the profile's version that verifies the server.

    The server certificate is checked against ``ca_file`` and the name ``SERVER_NAME``
    ("localhost"): connect with ``server_hostname=SERVER_NAME``. For TLS 1.2 ``ciphers``
    restricts the offer. Python's ``ssl`` cannot restrict TLS 1.3 suites on the client, so a
    1.3 ``ciphers`` list is enforced by the broker (``ciphers_tls1.3``); here we only refuse
    suites this client would not offer at all, and ``verify_negotiated`` checks the result.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED + check_hostname
    context.minimum_version = _SSL_VERSIONS[profile.version]
    context.maximum_version = _SSL_VERSIONS[profile.version]
    context.load_verify_locations(cafile=ca_file)
    if profile.ciphers is not None:
        if profile.version == "1.2":
            try:
                context.set_ciphers(profile.ciphers)
            except ssl.SSLError as error:
                raise SpecError(f"no usable TLS 1.2 cipher in {profile.ciphers!r}") from error
        else:
            offered = {c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.3"}
            if not offered & set(profile.ciphers.split(":")):
                raise SpecError(
                    f"this client offers none of the TLS 1.3 suites {profile.ciphers!r} "
                    f"(it offers {':'.join(sorted(offered))})"
                )
    if client_cert is not None:
        context.load_cert_chain(client_cert, client_key)
    elif profile.mutual:
        raise ValueError("a mutual-TLS profile needs client_cert and client_key")
    return context


def mosquitto_listener_lines(
    profile: TlsProfile,
    cafile: str | PathLike[str],
    certfile: str | PathLike[str],
    keyfile: str | PathLike[str],
) -> list[str]:
    """mosquitto 2.0.11 configuration lines for a TLS listener (after its ``listener`` line).

    ``tls_version`` is a *minimum* in mosquitto 2.x; the client pins the maximum.
    """
    paths = {"cafile": cafile, "certfile": certfile, "keyfile": keyfile}
    lines = []
    for option, path in paths.items():
        text = str(path)
        # One option per line, no quoting in mosquitto's parser: a newline would inject options.
        if not text or any(c in text for c in "\n\r"):
            raise ValueError(f"{option} path must be a non-empty single line")
        lines.append(f"{option} {text}")
    lines.append(f"tls_version {_MOSQUITTO_VERSIONS[profile.version]}")
    if profile.ciphers is not None:
        option = "ciphers" if profile.version == "1.2" else "ciphers_tls1.3"
        lines.append(f"{option} {profile.ciphers}")
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
        self.parse_errors: list[str] = []


class HandshakeObserver:
    """Records negotiated TLS parameters of the connections made with one context.

    Call ``install(context)`` before connecting and ``negotiated(ssl_sock)`` after the
    handshake. The hook runs inside OpenSSL callbacks, so it never raises: a message it
    cannot parse is noted and the field stays None.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._connections: weakref.WeakKeyDictionary[Any, _Transcript] = weakref.WeakKeyDictionary()
        self._last: _Transcript | None = None

    def install(self, context: ssl.SSLContext) -> None:
        """Attach the hook to ``context`` (replacing any previous message callback)."""
        context._msg_callback = self._on_message  # type: ignore[attr-defined]

    def negotiated(self, ssl_sock: ssl.SSLSocket | ssl.SSLObject) -> NegotiatedTls:
        """The parameters ``ssl_sock`` negotiated, from the socket and the hooked messages."""
        with self._lock:
            transcript = self._connections.get(ssl_sock)
            if transcript is None and len(self._connections) <= 1:
                # A wrapper library may hand us another object for the same connection.
                transcript = self._last
        if transcript is None:
            raise ValueError("no handshake observed: install the observer before connecting")
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
        name = getattr(msg_type, "name", str(msg_type)).lower()
        try:
            self._record(transcript, direction, int(msg_type), name, bytes(data))
        except Exception as error:  # never raise inside OpenSSL's callback
            transcript.parse_errors.append(f"{name}: {type(error).__name__}")

    @staticmethod
    def _record(
        transcript: _Transcript, direction: str, msg_type: int, name: str, data: bytes
    ) -> None:
        body = data[4:]  # after type(1) | length(3)
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
        transcript.group = f"dhe{8 * prime_bytes}"
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


def _certificate_family(signature_algorithm: str) -> str | None:
    if signature_algorithm.startswith("rsa"):
        return "rsa"
    if signature_algorithm.startswith("ecdsa"):
        return "ecdsa"
    return None


def verify_negotiated(profile: TlsProfile, negotiated: NegotiatedTls) -> None:
    """Raise ValueError naming the first way the connection differs from the profile."""
    if negotiated.version != profile.version:
        raise ValueError(
            f"negotiated TLS {negotiated.version} but the profile asks for TLS {profile.version}"
        )
    requested = requested_cipher_names(profile)
    if requested is not None and negotiated.cipher not in requested:
        raise ValueError(
            f"negotiated cipher {negotiated.cipher} is not among the requested {profile.ciphers}"
        )
    if negotiated.signature_algorithm is not None:
        family = _certificate_family(negotiated.signature_algorithm)
        expected = "rsa" if profile.certificate.startswith("rsa") else "ecdsa"
        if family is not None and family != expected:
            raise ValueError(
                f"server signed with {negotiated.signature_algorithm} but the profile asks for "
                f"a {profile.certificate} certificate"
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
    return "ecdsa-p256-verify" if certificate == "ecdsa-p256" else f"{certificate}-public"


def _sign_operation(certificate: str) -> str:
    return "ecdsa-p256-sign" if certificate == "ecdsa-p256" else f"{certificate}-private"


def handshake_operations(negotiated: NegotiatedTls, certificate: str) -> list[tuple[str, int]]:
    """Public-key operations the *client* performed in the handshake, one entry per operation.

    Assumptions (the lab's PKI, not facts read from the connection):

    * key exchange: ECDHE/DHE on ``negotiated.group`` costs one keygen and one derive (a
      hybrid ML-KEM group adds an ML-KEM keygen and decapsulation); with no group in
      TLS 1.2 the suite is static RSA key transport: one RSA public-key encryption;
    * the server's handshake signature (ServerKeyExchange in 1.2, CertificateVerify in 1.3)
      is one verification with the server's ``certificate`` key type;
    * the chain is one server certificate issued by a trust anchor with the *same* key type
      as ``certificate``: one more verification. The anchor's self-signature is not checked
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
    operations.append((_verify_operation(certificate), 1))  # CA signature on the certificate
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
