"""Application-layer key establishment: the payload key exchange, one HKDF-SHA256 key schedule,
key confirmation, and optional signatures over the exchange.

This module owns the two pure state machines the agents drive (the agents carry the bytes
over MQTT; nothing here touches the network) and the key schedule; the agreements (how ``Z``
comes about) are in ``security.agreements``, the signature suites in ``security.signatures``:

::

    receiver                                   emitter
    hello = 01 | R [| sig_R]        ──▶        (retained on kx/receiver)
                                    ◀──        01 | nonce (16) | E [| sig_E]  (kx/emitter)
    ready = 01 | HMAC(confirm, hello || emitter message)  ──▶                 (kx/ready)

A key establishment is an agreement (``x25519``, ``mlkem768`` …) or an agreement with a
signature suite (``x25519mlkem768-mldsa44``): then ``sig_R`` signs ``label("hello") || 01 | R``
with the receiver's key and ``sig_E`` signs ``label("reply") || hello || 01 | nonce | E`` with
the emitter's, each checked against the peer's key pinned for the run before anything else
happens (docs/wire-format.md).

``Z`` is never used as a key. Every key comes from HKDF-SHA256 (RFC 5869) with
``salt = E || R || nonce`` and ``info = "iotsb/v1/<scheme>/<direction>/<purpose>"``, so keys are
separated by scheme, direction and purpose (docs/reliability.md, key separation). Secrets
(private keys, Z, derived keys, the PSK) never appear in ``repr``, ``str`` or errors.
"""

from __future__ import annotations

import functools
import hmac as stdlib_hmac
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from iotsecbench.errors import SpecError
from iotsecbench.security.agreements import (
    AGREEMENTS,
    PSK_MIN_BYTES,
    PUBLIC_KEY_BYTES,
    KeyAgreement,
    Operations,
    PskAgreement,
)
from iotsecbench.security.schemes import get_scheme
from iotsecbench.security.schemes.base import (
    SESSION_ID_BYTES,
    AuthenticationError,
    DirectionKeys,
    MalformedMessageError,
    PayloadScheme,
    SchemeError,
)
from iotsecbench.security.signatures import SUITES, PinnedKeys, SignatureSuite, pinned_keys
from iotsecbench.security.signatures import provision as provision_signing_keys

KX_VERSION = 1  # first byte of every key-exchange message

SESSION_NONCE_BYTES = 16
CONFIRM_TAG_BYTES = 32  # HMAC-SHA256, untruncated
CONFIRM_KEY_BYTES = 32
RECEIVER_HELLO_BYTES = 1 + PUBLIC_KEY_BYTES
EMITTER_MESSAGE_BYTES = 1 + SESSION_NONCE_BYTES + PUBLIC_KEY_BYTES
READY_BYTES = 1 + CONFIRM_TAG_BYTES
LABEL_PREFIX = "iotsb/v1"


@dataclass(frozen=True)
class SessionKeys:
    """Both directions' keys of one session (DirectionKeys hides the key bytes in repr)."""

    emitter_to_receiver: DirectionKeys
    receiver_to_emitter: DirectionKeys


def hkdf_label(scheme_name: str, direction: str, purpose: str) -> bytes:
    """HKDF ``info`` string: ``iotsb/v1/<scheme>/<direction>/<purpose>`` (ASCII)."""
    return f"{LABEL_PREFIX}/{scheme_name}/{direction}/{purpose}".encode("ascii")


def hkdf_sha256(shared_secret: bytes, salt: bytes, info: bytes, length: int) -> bytes:
    """RFC 5869 HKDF-SHA256 (extract then expand) of ``length`` bytes."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(
        shared_secret
    )


def derive_session(
    scheme: PayloadScheme,
    shared_secret: bytes,
    emitter_public: bytes,
    receiver_public: bytes,
    session_nonce: bytes,
) -> tuple[SessionKeys, bytes, int]:
    """Key schedule: (session keys, confirmation key, number of HKDF invocations)."""
    salt = emitter_public + receiver_public + session_nonce
    invocations = 0

    def derive(direction: str, purpose: str, length: int) -> bytes:
        nonlocal invocations
        invocations += 1
        return hkdf_sha256(shared_secret, salt, hkdf_label(scheme.name, direction, purpose), length)

    # One session id for both directions; the direction label in each message's AAD keeps
    # the directions apart.
    session_id = derive("session", "id", SESSION_ID_BYTES)
    directions = {}
    for direction in ("e2r", "r2e"):
        directions[direction] = DirectionKeys(
            enc_key=derive(direction, "enc", scheme.enc_key_bytes),
            mac_key=derive(direction, "mac", scheme.mac_key_bytes),
            nonce_prefix=derive(direction, "nonce", scheme.nonce_prefix_bytes),
            session_id=session_id,
            direction=direction,
        )
    # The receiver proves it derived the same keys by a MAC sent r2e with a dedicated key.
    confirm_key = derive("r2e", "confirm", CONFIRM_KEY_BYTES)
    keys = SessionKeys(directions["e2r"], directions["r2e"])
    return keys, confirm_key, invocations


def confirmation_tag(confirm_key: bytes, transcript: bytes) -> bytes:
    """HMAC-SHA256 over the transcript (receiver hello || emitter message)."""
    mac = hmac.HMAC(confirm_key, hashes.SHA256())
    mac.update(transcript)
    return mac.finalize()


def export_key_log_lines(keys: SessionKeys, scheme_name: str | None = None) -> list[str]:
    """Session keys in the documented key-log format (docs/wire-format.md). Secrets!

    Only for an explicit key-log option, written to a 0600 file; never to results or logs.
    With ``scheme_name``, each line ends with ``scheme=<name>`` (so a reader knows the cipher).
    """
    lines = []
    for direction_keys in (keys.emitter_to_receiver, keys.receiver_to_emitter):
        line = (
            f"IOTSB_SESSION_KEYS {direction_keys.session_id.hex()} {direction_keys.direction} "
            f"enc={direction_keys.enc_key.hex()} mac={direction_keys.mac_key.hex()} "
            f"nonce_prefix={direction_keys.nonce_prefix.hex()}"
        )
        lines.append(line + (f" scheme={scheme_name}" if scheme_name else ""))
    return lines


def parse_key_establishment(name: str) -> tuple[KeyAgreement, SignatureSuite | None]:
    """(agreement, signature suite or None) of a key-establishment token."""
    if name in AGREEMENTS:
        return AGREEMENTS[name], None
    agreement, _, suite = name.rpartition("-")
    if agreement in AGREEMENTS and suite in SUITES:
        return AGREEMENTS[agreement], SUITES[suite]
    raise SpecError(f"{name!r} is not a key establishment")


def signature_label(scheme_name: str, message: str) -> bytes:
    """What a signature over the ``message`` ("hello", "reply") of a scheme starts with."""
    return f"{LABEL_PREFIX}/{scheme_name}/{message}-signature/".encode("ascii")


def _scheme_for_key_exchange(scheme_name: str) -> PayloadScheme:
    scheme = get_scheme(scheme_name)
    if scheme.key_establishment is None:
        raise SpecError(f"scheme {scheme_name!r} has no key establishment")
    return scheme


def message_sizes(key_establishment: str) -> tuple[int, int, int]:
    """(hello, emitter message, ready) lengths in bytes for a key establishment."""
    agreement, suite = parse_key_establishment(key_establishment)
    signature = suite.signature_bytes if suite else 0
    return (
        1 + agreement.receiver_bytes + signature,
        1 + SESSION_NONCE_BYTES + agreement.emitter_bytes + signature,
        READY_BYTES,
    )


def _check_message(name: str, message: bytes, expected_bytes: int) -> bytes:
    try:
        message = bytes(message)
    except TypeError as error:
        raise MalformedMessageError(f"{name} is not bytes") from error
    if len(message) != expected_bytes:
        raise MalformedMessageError(f"{name} has {len(message)} bytes, expected {expected_bytes}")
    if message[0] != KX_VERSION:
        raise MalformedMessageError(f"{name} has version {message[0]}, expected {KX_VERSION}")
    return message


class _KeyExchange:
    """Shared bookkeeping: the scheme, its agreement, the state name and the operations."""

    def __init__(
        self, scheme_name: str, psk: bytes | None = None, pinned: PinnedKeys | None = None
    ) -> None:
        self._scheme = _scheme_for_key_exchange(scheme_name)
        establishment = self._scheme.key_establishment or ""
        self._agreement, self._suite = parse_key_establishment(establishment)
        self._psk = psk
        if self._agreement.name == "psk":
            PskAgreement._psk(psk)  # fail at construction, before anything is published
        if self._suite is not None and (pinned is None or pinned.suite is not self._suite):
            raise SpecError(
                f"scheme {scheme_name!r} signs its key exchange: it needs the run's pinned "
                f"{self._suite.name} keys (the runner provisions them)"
            )
        self._pinned = pinned if self._suite is not None else None
        self._sizes = message_sizes(establishment)
        self._state = "start"
        self._operations: list[tuple[str, int]] = []

    def operations(self) -> list[tuple[str, int]]:
        """Energy-model operations this side performed so far, in order."""
        return list(self._operations)

    @property
    def state(self) -> str:
        """Where the state machine is (no secrets)."""
        return self._state

    @property
    def key_establishment(self) -> str:
        return self._scheme.key_establishment or ""

    def _sign(self, message: str, signed: bytes) -> bytes:
        """The signature over ``signed`` (empty without a signature suite)."""
        if self._pinned is None:
            return b""
        self._operations.append((f"{self._pinned.suite.primitive}-sign", 1))
        return self._pinned.sign(signature_label(self._scheme.name, message) + signed)

    def _verify(self, message: str, signed: bytes, signature: bytes, what: str) -> None:
        """Check the peer's signature over ``signed``; AuthenticationError when it fails."""
        if self._pinned is None:
            return
        self._operations.append((f"{self._pinned.suite.primitive}-verify", 1))
        # A refused message leaves the state as it was: a forgery refuses itself, not the
        # session (the genuine message may still come).
        self._pinned.verify(signature, signature_label(self._scheme.name, message) + signed, what)

    def _signature_bytes(self) -> int:
        return self._suite.signature_bytes if self._suite else 0

    def _expect(self, *states: str) -> None:
        if self._state not in states:
            raise SchemeError(f"{type(self).__name__}: unexpected message in state {self._state}")

    def _derive(
        self,
        shared_secret: bytes,
        emitter_public: bytes,
        receiver_public: bytes,
        session_nonce: bytes,
    ) -> tuple[SessionKeys, bytes]:
        keys, confirm_key, invocations = derive_session(
            self._scheme, shared_secret, emitter_public, receiver_public, session_nonce
        )
        self._operations.append(("hkdf-sha256", invocations))
        return keys, confirm_key

    def __repr__(self) -> str:
        return f"<{type(self).__name__} scheme={self._scheme.name} state={self._state}>"


class ReceiverKeyExchange(_KeyExchange):
    """The receiver's side: hello, then answer one emitter message with a confirmation."""

    def __init__(
        self, scheme_name: str, psk: bytes | None = None, pinned: PinnedKeys | None = None
    ) -> None:
        super().__init__(scheme_name, psk, pinned)
        self._private: object = None
        self._hello = b""

    def hello(self) -> bytes:
        """``01 | R [| sig_R]``; the same bytes on every call (it is republished retained)."""
        if not self._hello:
            self._private, public, operations = self._agreement.receiver_start(self._psk)
            self._operations.extend(operations)
            unsigned = bytes((KX_VERSION,)) + public
            self._hello = unsigned + self._sign("hello", unsigned)
            self._state = "hello-sent"
        return self._hello

    def on_emitter_message(self, msg: bytes) -> tuple[bytes, SessionKeys]:
        """Derive the session from ``01 | nonce | E``; return (ready message, keys)."""
        self._expect("hello-sent")
        msg = _check_message("emitter message", msg, self._sizes[1])
        unsigned = msg[: len(msg) - self._signature_bytes()]
        self._verify("reply", self._hello + unsigned, msg[len(unsigned) :], "the emitter's reply")
        session_nonce = unsigned[1 : 1 + SESSION_NONCE_BYTES]
        emitter_public = unsigned[1 + SESSION_NONCE_BYTES :]
        receiver_public = self._hello[1 : 1 + self._agreement.receiver_bytes]
        if stdlib_hmac.compare_digest(emitter_public, receiver_public):
            raise AuthenticationError("emitter public key equals the receiver's (reflection)")
        shared, operations = self._agreement.receiver_agree(
            self._psk, self._private, emitter_public
        )
        self._operations.extend(operations)
        keys, confirm_key = self._derive(shared, emitter_public, receiver_public, session_nonce)
        transcript = self._hello + msg
        tag = confirmation_tag(confirm_key, transcript)
        self._operations.append(("hmac-sha256", len(transcript)))
        # The ephemeral private key is no longer needed: drop it (forward secrecy).
        self._private = None
        self._state = "done"
        return bytes((KX_VERSION,)) + tag, keys


class EmitterKeyExchange(_KeyExchange):
    """The emitter's side: answer the receiver's hello, then verify its confirmation."""

    def __init__(
        self, scheme_name: str, psk: bytes | None = None, pinned: PinnedKeys | None = None
    ) -> None:
        super().__init__(scheme_name, psk, pinned)
        self._transcript = b""
        self._pending: tuple[SessionKeys, bytes] | None = None

    def on_receiver_hello(self, msg: bytes) -> bytes:
        """``01 | nonce (16, random) | E [| sig_E]`` for the hello ``01 | R [| sig_R]``."""
        self._expect("start")
        msg = _check_message("receiver hello", msg, self._sizes[0])
        unsigned = msg[: len(msg) - self._signature_bytes()]
        self._verify("hello", unsigned, msg[len(unsigned) :], "the receiver's hello")
        receiver_public = unsigned[1:]
        emitter_public, shared, operations = self._agreement.emitter_agree(
            self._psk, receiver_public
        )
        self._operations.extend(operations)
        session_nonce = os.urandom(SESSION_NONCE_BYTES)
        self._pending = self._derive(shared, emitter_public, receiver_public, session_nonce)
        reply = bytes((KX_VERSION,)) + session_nonce + emitter_public
        reply += self._sign("reply", msg + reply)
        self._transcript = msg + reply
        self._state = "awaiting-ready"
        return reply

    def on_ready(self, msg: bytes) -> SessionKeys:
        """Verify the receiver's key confirmation and release the session keys."""
        self._expect("awaiting-ready")
        msg = _check_message("ready message", msg, READY_BYTES)
        assert self._pending is not None
        keys, confirm_key = self._pending
        mac = hmac.HMAC(confirm_key, hashes.SHA256())
        mac.update(self._transcript)
        self._operations.append(("hmac-sha256", len(self._transcript)))
        try:
            mac.verify(msg[1:])  # constant-time comparison
        except InvalidSignature as error:
            self._state = "failed"
            self._pending = None
            raise AuthenticationError("key confirmation failed: the peers' keys differ") from error
        self._pending = None
        self._state = "done"
        return keys


@functools.cache
def exchange_operations(scheme_name: str) -> dict[str, Operations]:
    """The energy-model operations each side of one key exchange of ``scheme_name`` performs
    (``{"emitter": …, "receiver": …}``), as the state machines above log them: one exchange run
    in memory (psk-* with a throw-away key). For agents that do the exchange elsewhere (the
    native agent) and log only its timing: the protocol fixes the operations."""
    psk = bytes(PSK_MIN_BYTES * 2)
    pinned = in_memory_pinned_keys(scheme_name)
    receiver = ReceiverKeyExchange(scheme_name, psk, pinned.get("receiver"))
    emitter = EmitterKeyExchange(scheme_name, psk, pinned.get("emitter"))
    ready, _ = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
    emitter.on_ready(ready)
    return {"emitter": emitter.operations(), "receiver": receiver.operations()}


def signature_suite(scheme_name: str) -> SignatureSuite | None:
    """The signature suite a scheme's key exchange uses, or None."""
    establishment = get_scheme(scheme_name).key_establishment
    return parse_key_establishment(establishment)[1] if establishment else None


def in_memory_pinned_keys(scheme_name: str) -> dict[str, PinnedKeys]:
    """Fresh pinned keys for both roles of a signed scheme (empty for an unsigned one): for
    exchanges run in memory (benchmarks, operation counts, tests)."""
    suite = signature_suite(scheme_name)
    if suite is None:
        return {}
    records = provision_signing_keys(suite.name)
    return {role: pinned_keys(record) for role, record in records.items()}
