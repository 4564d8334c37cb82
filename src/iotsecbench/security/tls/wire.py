"""A TLS connection read from its two byte streams: records (RFC 8446 §5.1, RFC 5246 §6.2),
the handshake messages in them and, for TLS 1.3, the protected records opened with the
connection's traffic secrets (RFC 8446 §7: the key log's CLIENT_/SERVER_HANDSHAKE_TRAFFIC_SECRET
and CLIENT_/SERVER_TRAFFIC_SECRET_0), so that everything the server sent after its ServerHello —
EncryptedExtensions, Certificate, CertificateVerify, Finished, its tickets — can be read with the
same parser as OpenSSL's transcripts (``observe.negotiated_on_the_wire``).

The device client (vmcu/client) is the user: its bytes cross the host's bridge, which keeps
both streams, and its TLS 1.3 secrets come back apart from its records. Nothing here touches
the network; the secrets are used and dropped by the caller.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESCCM, AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from iotsecbench.security.tls.observe import PROTECTED_RECORD

CHANGE_CIPHER_SPEC, ALERT, HANDSHAKE, APPLICATION_DATA = 20, 21, 22, 23
FINISHED, SERVER_HELLO = 20, 2
HEADER_BYTES = 5

# TLS 1.3 suites: (AEAD, key bytes, hash, tag bytes) (RFC 8446 §B.4).
_TLS13_SUITES = {
    "TLS_AES_128_GCM_SHA256": (AESGCM, 16, hashes.SHA256, 16),
    "TLS_AES_256_GCM_SHA384": (AESGCM, 32, hashes.SHA384, 16),
    "TLS_CHACHA20_POLY1305_SHA256": (ChaCha20Poly1305, 32, hashes.SHA256, 16),
    "TLS_AES_128_CCM_SHA256": (AESCCM, 16, hashes.SHA256, 16),
    "TLS_AES_128_CCM_8_SHA256": (AESCCM, 16, hashes.SHA256, 8),
}
# Which key-log label protects which direction in which epoch.
_SECRETS = {
    (False, "handshake"): "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    (True, "handshake"): "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    (False, "application"): "SERVER_TRAFFIC_SECRET_0",
    (True, "application"): "CLIENT_TRAFFIC_SECRET_0",
}


class WireError(ValueError):
    """The streams are not the TLS connection they claim to be (cut short, undecryptable)."""


@dataclass(frozen=True)
class WireRecord:
    """One record as it crossed the wire."""

    written: bool  # sent by the client
    end_offset: int  # the direction's stream offset just after the record
    content_type: int  # the record's outer type
    wire_bytes: int  # header included
    inner_type: int | None = None  # TLS 1.3: the protected record's real type (None: unopened)
    messages: tuple[int, ...] = ()  # handshake message types this record completes


@dataclass(frozen=True)
class WireMessage:
    """A handshake message, complete when its record ended at ``end_offset``."""

    written: bool
    message_type: int  # PROTECTED_RECORD for a record that could not be opened
    end_offset: int
    data: bytes | int  # type | length(3) | body; a protected record: its length


@dataclass
class WireTranscript:
    """Both directions' records and handshake messages, each in stream order."""

    records: list[WireRecord] = field(default_factory=list)
    messages: list[WireMessage] = field(default_factory=list)

    def records_ending(self, written: bool, start: int, end: int) -> list[WireRecord]:
        """The records of one direction that end after offset ``start``, at most at ``end``."""
        return [r for r in self.records if r.written == written and start < r.end_offset <= end]


def hkdf_expand_label(secret: bytes, label: str, length: int, algorithm: type) -> bytes:
    """HKDF-Expand-Label (RFC 8446 §7.1) with an empty context."""
    full = b"tls13 " + label.encode()
    info = struct.pack(">HB", length, len(full)) + full + b"\x00"
    return HKDFExpand(algorithm(), length, info).derive(secret)


class _Opener:
    """One direction's TLS 1.3 record protection: keys per epoch, sequence number per key."""

    def __init__(self, suite: str, secrets: dict[str, bytes], written: bool) -> None:
        if suite not in _TLS13_SUITES:
            raise WireError(f"cannot open records of suite {suite}")
        self._suite = _TLS13_SUITES[suite]
        self._secrets = secrets
        self._written = written
        self._epoch = "handshake"
        self._key: tuple[object, bytes] | None = None
        self._sequence = 0

    def application(self) -> None:
        """After this direction's Finished: the application traffic keys."""
        self._epoch, self._key, self._sequence = "application", None, 0

    def open(self, header: bytes, body: bytes) -> tuple[int, bytes]:
        """The inner content type and plaintext of one protected record."""
        if self._key is None:
            label = _SECRETS[(self._written, self._epoch)]
            secret = self._secrets.get(label)
            if secret is None:
                raise WireError(f"no {label} to open the {self._epoch} records")
            aead, key_bytes, algorithm, tag = self._suite
            key = hkdf_expand_label(secret, "key", key_bytes, algorithm)
            iv = hkdf_expand_label(secret, "iv", 12, algorithm)
            cipher = aead(key, tag_length=tag) if aead is AESCCM else aead(key)  # type: ignore[operator]
            self._key = (cipher, iv)
        cipher, iv = self._key
        nonce = bytes(a ^ b for a, b in zip(iv, self._sequence.to_bytes(12, "big"), strict=True))
        self._sequence += 1
        try:
            inner = cipher.decrypt(nonce, body, header)  # type: ignore[attr-defined]
        except InvalidTag:
            raise WireError("a protected record does not open with the logged secrets") from None
        stripped = inner.rstrip(b"\x00")
        if not stripped:
            raise WireError("a protected record holds no content type")
        return stripped[-1], stripped[:-1]


def _split(stream: bytes) -> list[tuple[int, bytes, bytes]]:
    """(end offset, header, body) of every whole record of one direction."""
    records, at = [], 0
    while len(stream) - at >= HEADER_BYTES:
        length = int.from_bytes(stream[at + 3 : at + 5], "big")
        end = at + HEADER_BYTES + length
        if end > len(stream):
            break
        records.append((end, stream[at : at + HEADER_BYTES], stream[at + HEADER_BYTES : end]))
        at = end
    return records


def read_transcript(
    sent: bytes,
    received: bytes,
    version: str,
    suite: str,
    secrets: dict[str, bytes] | None = None,
) -> WireTranscript:
    """The records and handshake messages of a client's two streams (``sent`` to the server,
    ``received`` from it). TLS 1.3 records after the ServerHello are opened with ``secrets``
    (key-log labels → bytes); without them, or in TLS 1.2 after ChangeCipherSpec, a protected
    record stays a ``PROTECTED_RECORD`` of its size, as the native agent reports them."""
    transcript = WireTranscript()
    for written, stream in ((True, sent), (False, received)):
        opener = _Opener(suite, secrets, written) if version == "1.3" and secrets else None
        protected = False  # this direction's records are protected from here on
        pending = b""  # handshake bytes not yet a whole message
        for end, header, body in _split(stream):
            outer = header[0]
            inner, content = outer, body
            if outer == CHANGE_CIPHER_SPEC:
                protected = version == "1.2"  # TLS 1.3's is the middlebox-compatibility dummy
                transcript.records.append(WireRecord(written, end, outer, len(header) + len(body)))
                continue
            opened = not (protected or (version == "1.3" and outer == APPLICATION_DATA))
            if not opened and opener is not None:
                inner, content = opener.open(header, body)
                opened = True
            completed: list[int] = []
            if not opened:
                transcript.messages.append(WireMessage(written, PROTECTED_RECORD, end, len(body)))
                inner = None  # type: ignore[assignment]
            elif inner == HANDSHAKE:
                pending += content
                while len(pending) >= 4:
                    size = 4 + int.from_bytes(pending[1:4], "big")
                    if len(pending) < size:
                        break
                    message, pending = pending[:size], pending[size:]
                    transcript.messages.append(WireMessage(written, message[0], end, message))
                    completed.append(message[0])
                    if message[0] == FINISHED and opener is not None:
                        opener.application()
            transcript.records.append(
                WireRecord(
                    written, end, outer, len(header) + len(body),
                    inner if opened else None, tuple(completed),
                )
            )  # fmt: skip
    return transcript


def on_the_wire_messages(transcript: WireTranscript, order: list[tuple[bool, int]]) -> list:
    """The handshake messages as ``negotiated_on_the_wire`` takes them — (written, type, bytes
    or a protected record's size) — in the order the client handled them. ``order`` lists the
    client's I/O in sequence as (written, the direction's stream offset after it)."""
    by_end: dict[tuple[bool, int], list[WireMessage]] = {}
    for message in transcript.messages:
        by_end.setdefault((message.written, message.end_offset), []).append(message)
    messages, previous = [], {True: 0, False: 0}
    for written, offset in order:
        for end in sorted(
            e for (w, e) in by_end if w == written and previous[written] < e <= offset
        ):
            messages += [(m.written, m.message_type, m.data) for m in by_end[(written, end)]]
        previous[written] = offset
    return messages
