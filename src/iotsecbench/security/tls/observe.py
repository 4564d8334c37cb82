"""Handshake observation: the parameters a live TLS connection actually negotiated.

Python 3.11's ``ssl`` reports version and cipher but not the key-exchange group or the
signature algorithm, so the observer parses them from the handshake messages OpenSSL's
``SSL_CTX_set_msg_callback`` hands over (it sees TLS 1.3 handshake messages after
decryption): through the C recorder ``_tlsrecord`` where it works, which keeps the messages
without running Python inside the timed handshake, else through the context's
``_msg_callback`` debug hook. Asking OpenSSL for one thing and getting another is silent
(docs/reliability.md: a TLS 1.3 profile with a TLS 1.2 cipher negotiates something else), so
runs record what happened. It never touches the network itself.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import itertools
import os
import ssl
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from iotsecbench.security.tls.openssl import openssl_control

try:  # the C handshake recorder (setup.py builds it when it can; see _tlsrecord.c)
    from iotsecbench.security import _tlsrecord
except ImportError:
    _tlsrecord = None

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
    0x11ED: "SecP384r1MLKEM1024",
    0x0200: "MLKEM512",  # draft-ietf-tls-mlkem
    0x0201: "MLKEM768",
    0x0202: "MLKEM1024",
}

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
    0x0904: "mldsa44",  # draft-ietf-tls-mldsa
    0x0905: "mldsa65",
    0x0906: "mldsa87",
}

RECORD_HEADER_BYTES = 5  # TLS record header: type, version, length (RFC 8446 §5.1)
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

    @property
    def client_hello_record_bytes(self) -> int | None:
        return client_hello_record_bytes(self.handshake_messages_sent)

    def client_hello_segments(self, mss: int | None) -> int | None:
        return client_hello_segments(self.handshake_messages_sent, mss)

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


def client_hello_record_bytes(messages_sent: Iterable[Sequence[Any]]) -> int | None:
    """The first ClientHello as sent: the message plus its 5-byte record header (RFC 8446
    §5.1; a ClientHello under 16 KiB is one record). ``messages_sent``: (type, bytes) pairs."""
    sizes = [size for kind, size in messages_sent if kind == "client_hello"]
    return sizes[0] + RECORD_HEADER_BYTES if sizes else None


def client_hello_segments(messages_sent: Iterable[Sequence[Any]], mss: int | None) -> int | None:
    """How many TCP segments of ``mss`` bytes the first ClientHello needs (more than one: the
    server waits for the second before it can answer — what an ML-KEM key share does on a
    1,500-byte MTU)."""
    size = client_hello_record_bytes(messages_sent)
    return -(-size // mss) if size is not None and mss else None


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


_marker = {"fd": -1}  # set_trace_marker: where Python's hook writes its lines


def set_trace_marker(fd: int) -> None:
    """Write one line per handshake message (``iotsb msg w 1``: written or read, message
    type) to ``fd``, a tracefs ``trace_marker`` (``bench.iotst``), from whichever hook is
    installed; -1 turns it off. Inside the handshake this costs one ``write`` per message,
    which the tracing-overhead measurement includes."""
    _marker["fd"] = fd
    if _tlsrecord is not None and hasattr(_tlsrecord, "set_marker_fd"):
        _tlsrecord.set_marker_fd(fd)


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
        if _marker["fd"] >= 0:
            with contextlib.suppress(OSError):
                os.write(_marker["fd"], f"iotsb msg {direction[0]} {int(msg_type)}".encode())
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
        _parse_transcript(transcript)

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


def _parse_transcript(transcript: _Transcript) -> None:
    """Decode the kept handshake messages once, after the handshake."""
    pending, transcript.raw = transcript.raw, []
    for direction, msg_type, data in pending:
        name = getattr(msg_type, "name", str(msg_type)).lower()
        try:
            HandshakeObserver._record(transcript, direction, int(msg_type), name, data)
        except Exception as error:  # a message we cannot parse leaves its field None
            transcript.parse_errors.append(f"{name}: {type(error).__name__}")


# A handshake record a native agent saw only in its protected form (TLS 1.3 after the
# ServerHello, TLS 1.2's Finished): its size is known, its content is not.
PROTECTED_RECORD = 0

# The most a TLS 1.3 client's protected handshake flight holds without a certificate (RFC 8446
# §4.4): a Finished (4-byte header + a SHA-384 MAC of 48 B) and the empty Certificate a
# client without one answers a CertificateRequest with (4 + 1 context + 3 list length), each
# with its inner content type (1) and a 16-byte AEAD tag. Any real certificate chain and its
# CertificateVerify are far larger (hundreds of bytes).
_TLS13_CLIENT_FLIGHT_WITHOUT_CERTIFICATE = (4 + 48 + 1 + 16) + (4 + 1 + 3 + 1 + 16)


def negotiated_on_the_wire(
    version: str,
    cipher: str,
    cipher_bits: int,
    resumed: bool,
    messages: list[tuple[bool, int, bytes | int]],
    peer_chain: list[bytes],
) -> NegotiatedTls:
    """What a connection made by another TLS stack negotiated (agents/native), read with the
    same parser as OpenSSL's transcripts: ``messages`` are (written, handshake type, bytes)
    as they crossed the wire, in order, a protected record being (written,
    ``PROTECTED_RECORD``, its length); ``peer_chain`` the server's certificates as the stack
    received them (DER, leaf first; empty when the Certificate message was in the clear)."""
    transcript = _Transcript()
    for written, msg_type, data in messages:
        direction = "write" if written else "read"
        if msg_type == PROTECTED_RECORD:
            size = data if isinstance(data, int) else len(data)
            transcript.order.append((direction, PROTECTED_RECORD))
            (transcript.sent if written else transcript.received).append(("protected", size))
        else:
            assert isinstance(data, bytes)
            transcript.raw = [(direction, _message_type(msg_type), data)]
            _parse_transcript(transcript)
    if version == "1.3" and not resumed and not transcript.client_certificate_sent:
        # A TLS 1.3 client's Certificate and CertificateVerify travel protected, so the
        # message the TLS 1.2 path sees is hidden: what shows is the size of the client's
        # protected flight, which only a certificate can take past the bound.
        flight = sum(size for name, size in transcript.sent if name == "protected")
        transcript.client_certificate_sent = flight > _TLS13_CLIENT_FLIGHT_WITHOUT_CERTIFICATE
    leaf = peer_chain[0] if peer_chain else transcript.leaf_certificate_der
    return NegotiatedTls(
        version=version,
        cipher=cipher,
        cipher_bits=cipher_bits,
        group=transcript.group,
        signature_algorithm=transcript.signature_algorithm,
        resumed=resumed,
        hello_retry=transcript.hello_retry,
        client_certificate_sent=transcript.client_certificate_sent,
        handshake_messages_sent=tuple(transcript.sent),
        handshake_messages_received=tuple(transcript.received),
        certificate=key_type_of_der(leaf) if leaf else None,
        server_certificates_sent=len(peer_chain) if peer_chain else transcript.certificate_count,
        round_trips=_round_trips(transcript.order),
    )


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
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa, rsa

    key = x509.load_der_x509_certificate(der).public_key()
    if isinstance(key, rsa.RSAPublicKey):
        return f"rsa{key.key_size}"
    if isinstance(key, ec.EllipticCurvePublicKey):
        return {"secp256r1": "ecdsa-p256", "secp384r1": "ecdsa-p384"}.get(
            key.curve.name, f"ecdsa-{key.curve.name}"
        )
    if isinstance(key, ed25519.Ed25519PublicKey):
        return "ed25519"
    if isinstance(key, mldsa.MLDSA44PublicKey):
        return "mldsa44"
    if isinstance(key, mldsa.MLDSA65PublicKey):
        return "mldsa65"
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
