"""Application-layer key establishment: ephemeral ECDH P-256, HKDF-SHA256, key confirmation.

This module owns the two pure state machines the agents drive (the agents carry the bytes
over MQTT; nothing here touches the network) and the key schedule:

::

    receiver                                   emitter
    hello = 01 | Qr (65)            ──▶        (retained on kx/receiver)
                                    ◀──        01 | nonce (16) | Qe (65)     (kx/emitter)
    ready = 01 | HMAC(confirm, hello || emitter message)  ──▶                 (kx/ready)

``Z = ECDH(d, Q_peer)`` is never used as a key. Every key comes from HKDF-SHA256 (RFC 5869)
with ``salt = Qe || Qr || nonce`` and ``info = "iotsb/v1/<scheme>/<direction>/<purpose>"``,
so keys are separated by scheme, direction and purpose (RELIABILITY.md, key separation).
Both public keys are SEC1 uncompressed points and are validated on the curve before use.
Secrets (private keys, Z, derived keys) never appear in ``repr``, ``str`` or errors.
"""

from __future__ import annotations

import hmac as stdlib_hmac
import os
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from iotsecbench.errors import SpecError
from iotsecbench.security.schemes import get_scheme
from iotsecbench.security.schemes.base import (
    SESSION_ID_BYTES,
    AuthenticationError,
    DirectionKeys,
    MalformedMessageError,
    PayloadScheme,
    SchemeError,
)

KX_VERSION = 1  # first byte of every key-exchange message
PUBLIC_KEY_BYTES = 65  # SEC1 uncompressed P-256 point: 04 | x (32) | y (32)
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


def export_key_log_lines(keys: SessionKeys) -> list[str]:
    """Session keys in the documented key-log format (docs/wire-format.md). Secrets!

    Only for an explicit key-log option, written to a 0600 file; never to results or logs.
    """
    lines = []
    for direction_keys in (keys.emitter_to_receiver, keys.receiver_to_emitter):
        lines.append(
            f"IOTSB_SESSION_KEYS {direction_keys.session_id.hex()} {direction_keys.direction} "
            f"enc={direction_keys.enc_key.hex()} mac={direction_keys.mac_key.hex()} "
            f"nonce_prefix={direction_keys.nonce_prefix.hex()}"
        )
    return lines


def _scheme_for_key_exchange(scheme_name: str) -> PayloadScheme:
    scheme = get_scheme(scheme_name)
    if scheme.key_establishment != "ecdh-p256":
        raise SpecError(f"scheme {scheme_name!r} does not use ECDH P-256 key establishment")
    return scheme


def _load_peer_public_key(encoded: bytes) -> ec.EllipticCurvePublicKey:
    """Validate and load a peer's SEC1 uncompressed P-256 point.

    pyca checks that the point lies on the curve and is not the point at infinity, which
    defeats invalid-curve attacks (Wycheproof InvalidCurveAttack).
    """
    if len(encoded) != PUBLIC_KEY_BYTES or encoded[0] != 0x04:
        raise MalformedMessageError("peer public key is not an uncompressed P-256 point")
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), encoded)
    except ValueError as error:
        raise MalformedMessageError("peer public key is not a point on P-256") from error


def _public_bytes(private_key: ec.EllipticCurvePrivateKey) -> bytes:
    return private_key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)


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
    """Shared bookkeeping: the scheme, the state name and the energy operations performed."""

    def __init__(self, scheme_name: str) -> None:
        self._scheme = _scheme_for_key_exchange(scheme_name)
        self._state = "start"
        self._operations: list[tuple[str, int]] = []

    def operations(self) -> list[tuple[str, int]]:
        """Energy-model operations this side performed so far, in order."""
        return list(self._operations)

    @property
    def state(self) -> str:
        """Where the state machine is (no secrets)."""
        return self._state

    def _expect(self, *states: str) -> None:
        if self._state not in states:
            raise SchemeError(f"{type(self).__name__}: unexpected message in state {self._state}")

    def _derive(
        self,
        private_key: ec.EllipticCurvePrivateKey,
        peer: ec.EllipticCurvePublicKey,
        emitter_public: bytes,
        receiver_public: bytes,
        session_nonce: bytes,
    ) -> tuple[SessionKeys, bytes]:
        shared_secret = private_key.exchange(ec.ECDH(), peer)
        self._operations.append(("ecdh-p256-derive", 1))
        keys, confirm_key, invocations = derive_session(
            self._scheme, shared_secret, emitter_public, receiver_public, session_nonce
        )
        self._operations.append(("hkdf-sha256", invocations))
        return keys, confirm_key

    def __repr__(self) -> str:
        return f"<{type(self).__name__} scheme={self._scheme.name} state={self._state}>"


class ReceiverKeyExchange(_KeyExchange):
    """The receiver's side: hello, then answer one emitter message with a confirmation."""

    def __init__(self, scheme_name: str) -> None:
        super().__init__(scheme_name)
        self._private_key: ec.EllipticCurvePrivateKey | None = None
        self._hello = b""

    def hello(self) -> bytes:
        """``01 | Qr``; the same bytes on every call (it is republished retained)."""
        if self._private_key is None:
            self._private_key = ec.generate_private_key(ec.SECP256R1())
            self._operations.append(("ecdh-p256-keygen", 1))
            self._hello = bytes((KX_VERSION,)) + _public_bytes(self._private_key)
            self._state = "hello-sent"
        return self._hello

    def on_emitter_message(self, msg: bytes) -> tuple[bytes, SessionKeys]:
        """Derive the session from ``01 | nonce | Qe``; return (ready message, keys)."""
        self._expect("hello-sent")
        msg = _check_message("emitter message", msg, EMITTER_MESSAGE_BYTES)
        session_nonce = msg[1 : 1 + SESSION_NONCE_BYTES]
        emitter_public = msg[1 + SESSION_NONCE_BYTES :]
        receiver_public = self._hello[1:]
        if stdlib_hmac.compare_digest(emitter_public, receiver_public):
            raise AuthenticationError("emitter public key equals the receiver's (reflection)")
        peer = _load_peer_public_key(emitter_public)
        assert self._private_key is not None
        keys, confirm_key = self._derive(
            self._private_key, peer, emitter_public, receiver_public, session_nonce
        )
        transcript = self._hello + msg
        tag = confirmation_tag(confirm_key, transcript)
        self._operations.append(("hmac-sha256", len(transcript)))
        # The ephemeral private key is no longer needed: drop it (forward secrecy).
        self._private_key = None
        self._state = "done"
        return bytes((KX_VERSION,)) + tag, keys


class EmitterKeyExchange(_KeyExchange):
    """The emitter's side: answer the receiver's hello, then verify its confirmation."""

    def __init__(self, scheme_name: str) -> None:
        super().__init__(scheme_name)
        self._transcript = b""
        self._pending: tuple[SessionKeys, bytes] | None = None

    def on_receiver_hello(self, msg: bytes) -> bytes:
        """``01 | nonce (16, random) | Qe`` for the hello ``01 | Qr``."""
        self._expect("start")
        msg = _check_message("receiver hello", msg, RECEIVER_HELLO_BYTES)
        receiver_public = msg[1:]
        peer = _load_peer_public_key(receiver_public)
        private_key = ec.generate_private_key(ec.SECP256R1())
        self._operations.append(("ecdh-p256-keygen", 1))
        emitter_public = _public_bytes(private_key)
        session_nonce = os.urandom(SESSION_NONCE_BYTES)
        self._pending = self._derive(
            private_key, peer, emitter_public, receiver_public, session_nonce
        )
        reply = bytes((KX_VERSION,)) + session_nonce + emitter_public
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
