"""Application-layer key establishment: six key agreements, one HKDF-SHA256 key schedule, key
confirmation.

This module owns the two pure state machines the agents drive (the agents carry the bytes
over MQTT; nothing here touches the network), the key agreements and the key schedule:

::

    receiver                                   emitter
    hello = 01 | R                  ──▶        (retained on kx/receiver)
                                    ◀──        01 | nonce (16) | E            (kx/emitter)
    ready = 01 | HMAC(confirm, hello || emitter message)  ──▶                 (kx/ready)

``R`` and ``E`` are the two sides' contributions (docs/wire-format.md has their layout):

==============  =======================================  =========================================
agreement       R (receiver)                             E (emitter)
==============  =======================================  =========================================
``psk``         random 16-byte nonce                     random 16-byte nonce; Z = the PSK
``ecdh-p256``   SEC1 uncompressed point (65)             SEC1 uncompressed point (65)
``x25519``      RFC 7748 public key (32)                 RFC 7748 public key (32)
``ffdhe2048``   g^x mod p, 256 bytes big-endian          g^y mod p, 256 bytes big-endian
``dh-sha256``   as ffdhe2048                             as ffdhe2048; Z = SHA-256(g^xy mod p)
``rsa-oaep``    fresh RSA-2048 modulus n (256), e=65537  RSA-OAEP-SHA256(n, K) (256); Z = K (32)
==============  =======================================  =========================================

``Z`` is never used as a key. Every key comes from HKDF-SHA256 (RFC 5869) with
``salt = E || R || nonce`` and ``info = "iotsb/v1/<scheme>/<direction>/<purpose>"``, so keys are
separated by scheme, direction and purpose (docs/reliability.md, key separation). Peer values are
validated before use: P-256 points on the curve, X25519 results not all-zero (RFC 7748 §6.1),
FFDH values in [2, p-2] and in the prime-order subgroup (SP 800-56A §5.6.2.3.1), RSA moduli of
exactly 2048 bits; every RSA-OAEP decryption failure gives one uniform error (Manger).
Secrets (private keys, Z, derived keys, the PSK) never appear in ``repr``, ``str`` or errors.
"""

from __future__ import annotations

import functools
import hashlib
import hmac as stdlib_hmac
import os
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.asymmetric import dh, ec, padding, rsa, x25519
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.utils import CryptographyDeprecationWarning

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
X25519_KEY_BYTES = 32
PSK_NONCE_BYTES = 16
PSK_MIN_BYTES = 16  # the runner provisions 32; shorter keys than 128 bits are refused
FFDH_BYTES = 256
RSA_BITS = 2048
RSA_PUBLIC_EXPONENT = 65537
RSA_TRANSPORTED_KEY_BYTES = 32
# RFC 7919 Appendix A.1 ffdhe2048: p = 2^2048 - 2^1984 + (floor(2^1918 * e) + 560316) * 2^64 - 1,
# g = 2, q = (p - 1) / 2 (a safe prime; tests recompute p from this formula).
FFDHE2048_P = int(
    "FFFFFFFFFFFFFFFFADF85458A2BB4A9AAFDC5620273D3CF1D8B9C583CE2D3695"
    "A9E13641146433FBCC939DCE249B3EF97D2FE363630C75D8F681B202AEC4617A"
    "D3DF1ED5D5FD65612433F51F5F066ED0856365553DED1AF3B557135E7F57C935"
    "984F0C70E0E68B77E2A689DAF3EFE8721DF158A136ADE73530ACCA4F483A797A"
    "BC0AB182B324FB61D108A94BB2C8E3FBB96ADAB760D7F4681D4F42A3DE394DF4"
    "AE56EDE76372BB190B07A7C8EE0A6D709E02FCE1CDF7E2ECC03404CD28342F61"
    "9172FE9CE98583FF8E4F1232EEF28183C3FE3B1B4C6FAD733BB5FCBC2EC22005"
    "C58EF1837D1683B2C6F34A26C1B2EFFA886B423861285C97FFFFFFFFFFFFFFFF",
    16,
)
FFDHE2048_G = 2
FFDHE2048_Q = (FFDHE2048_P - 1) // 2
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


def _scheme_for_key_exchange(scheme_name: str) -> PayloadScheme:
    scheme = get_scheme(scheme_name)
    if scheme.key_establishment not in AGREEMENTS:
        raise SpecError(f"scheme {scheme_name!r} has no key establishment")
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


def validate_ffdh_public(value: int) -> None:
    """SP 800-56A §5.6.2.3.1 full public-key validation for the ffdhe2048 group.

    ``2 <= y <= p - 2`` and ``y^q = 1 mod p``: rejects 0, 1, p - 1 (the order-2 element) and
    anything outside the prime-order subgroup (small-subgroup confinement).
    """
    if not 2 <= value <= FFDHE2048_P - 2:
        raise MalformedMessageError("peer DH value is outside [2, p-2]")
    if pow(value, FFDHE2048_Q, FFDHE2048_P) != 1:
        raise MalformedMessageError("peer DH value is not in the prime-order subgroup")


Operations = list[tuple[str, int]]


class KeyAgreement(ABC):
    """One way for the two ends to arrive at a shared secret ``Z`` (then HKDF, then confirm).

    ``R`` is the receiver's contribution (in the hello), ``E`` the emitter's (in its reply).
    Each method returns the energy-model operations it performed.
    """

    name: str
    receiver_bytes: int  # length of R
    emitter_bytes: int  # length of E

    @abstractmethod
    def receiver_start(self, secret: bytes | None) -> tuple[Any, bytes, Operations]:
        """(private state, R, operations)."""

    @abstractmethod
    def emitter_agree(
        self, secret: bytes | None, receiver: bytes
    ) -> tuple[bytes, bytes, Operations]:
        """Validate R; (E, Z, operations)."""

    @abstractmethod
    def receiver_agree(
        self, secret: bytes | None, state: Any, emitter: bytes
    ) -> tuple[bytes, Operations]:
        """Validate E; (Z, operations)."""


class PskAgreement(KeyAgreement):
    """Pre-shared key: both sides contribute a fresh nonce; Z is the PSK (no forward secrecy)."""

    name = "psk"
    receiver_bytes = PSK_NONCE_BYTES
    emitter_bytes = PSK_NONCE_BYTES

    @staticmethod
    def _psk(secret: bytes | None) -> bytes:
        if secret is None or len(secret) < PSK_MIN_BYTES:
            raise SpecError(
                f"a psk-* scheme needs a pre-shared key of at least {PSK_MIN_BYTES} bytes"
            )
        return secret

    def receiver_start(self, secret: bytes | None) -> tuple[Any, bytes, Operations]:
        self._psk(secret)
        return None, os.urandom(PSK_NONCE_BYTES), []

    def emitter_agree(
        self, secret: bytes | None, receiver: bytes
    ) -> tuple[bytes, bytes, Operations]:
        return os.urandom(PSK_NONCE_BYTES), self._psk(secret), []

    def receiver_agree(
        self, secret: bytes | None, state: Any, emitter: bytes
    ) -> tuple[bytes, Operations]:
        return self._psk(secret), []


class EcdhP256Agreement(KeyAgreement):
    """Ephemeral-ephemeral ECDH on P-256; Z is the x coordinate (32 bytes)."""

    name = "ecdh-p256"
    receiver_bytes = PUBLIC_KEY_BYTES
    emitter_bytes = PUBLIC_KEY_BYTES

    def receiver_start(self, secret: bytes | None) -> tuple[Any, bytes, Operations]:
        private_key = ec.generate_private_key(ec.SECP256R1())
        return private_key, _public_bytes(private_key), [("ecdh-p256-keygen", 1)]

    def emitter_agree(
        self, secret: bytes | None, receiver: bytes
    ) -> tuple[bytes, bytes, Operations]:
        peer = _load_peer_public_key(receiver)
        private_key = ec.generate_private_key(ec.SECP256R1())
        shared = private_key.exchange(ec.ECDH(), peer)
        operations = [("ecdh-p256-keygen", 1), ("ecdh-p256-derive", 1)]
        return _public_bytes(private_key), shared, operations

    def receiver_agree(
        self, secret: bytes | None, state: Any, emitter: bytes
    ) -> tuple[bytes, Operations]:
        peer = _load_peer_public_key(emitter)
        return state.exchange(ec.ECDH(), peer), [("ecdh-p256-derive", 1)]


class X25519Agreement(KeyAgreement):
    """Ephemeral X25519 (RFC 7748); an all-zero result (low-order peer point) is refused."""

    name = "x25519"
    receiver_bytes = X25519_KEY_BYTES
    emitter_bytes = X25519_KEY_BYTES

    @staticmethod
    def _public(private_key: x25519.X25519PrivateKey) -> bytes:
        return private_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    @staticmethod
    def _exchange(private_key: x25519.X25519PrivateKey, peer: bytes) -> bytes:
        try:
            shared = private_key.exchange(x25519.X25519PublicKey.from_public_bytes(peer))
        except ValueError as error:  # pyca refuses low-order points (all-zero output)
            raise MalformedMessageError("peer X25519 key is a low-order point") from error
        if not any(shared):  # RFC 7748 §6.1, checked here too in case a backend does not
            raise MalformedMessageError("X25519 shared secret is all zero")
        return shared

    def receiver_start(self, secret: bytes | None) -> tuple[Any, bytes, Operations]:
        private_key = x25519.X25519PrivateKey.generate()
        return private_key, self._public(private_key), [("x25519-keygen", 1)]

    def emitter_agree(
        self, secret: bytes | None, receiver: bytes
    ) -> tuple[bytes, bytes, Operations]:
        private_key = x25519.X25519PrivateKey.generate()
        shared = self._exchange(private_key, receiver)
        return self._public(private_key), shared, [("x25519-keygen", 1), ("x25519-derive", 1)]

    def receiver_agree(
        self, secret: bytes | None, state: Any, emitter: bytes
    ) -> tuple[bytes, Operations]:
        return self._exchange(state, emitter), [("x25519-derive", 1)]


# pyca (>= 47) deprecates FFDH, but RFC 7919 groups are what the `block-sizes` study measures.
# Only that warning is silenced, only around FFDH calls; if pyca drops FFDH, they fail loudly.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning)
    _FFDHE2048_PARAMETERS = dh.DHParameterNumbers(
        FFDHE2048_P, FFDHE2048_G, FFDHE2048_Q
    ).parameters()


class FfdheAgreement(KeyAgreement):
    """Ephemeral finite-field DH in RFC 7919's ffdhe2048 group (OpenSSL via pyca).

    Z is ``g^xy mod p`` left-padded to 256 bytes (SP 800-56A: the field-size encoding).
    """

    name = "ffdhe2048"
    receiver_bytes = FFDH_BYTES
    emitter_bytes = FFDH_BYTES

    @staticmethod
    def _keypair() -> tuple[dh.DHPrivateKey, bytes]:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning)
            private_key = _FFDHE2048_PARAMETERS.generate_private_key()
        public = private_key.public_key().public_numbers().y.to_bytes(FFDH_BYTES, "big")
        return private_key, public

    def _exchange(self, private_key: dh.DHPrivateKey, peer: bytes) -> bytes:
        value = int.from_bytes(peer, "big")
        validate_ffdh_public(value)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning)
            numbers = dh.DHPublicNumbers(value, _FFDHE2048_PARAMETERS.parameter_numbers())
            shared = private_key.exchange(numbers.public_key())
        return self._finish(shared.rjust(FFDH_BYTES, b"\0"))

    def _finish(self, shared: bytes) -> bytes:
        return shared

    def _derive_operations(self) -> Operations:
        return [("ffdhe2048-derive", 1)]

    def receiver_start(self, secret: bytes | None) -> tuple[Any, bytes, Operations]:
        private_key, public = self._keypair()
        return private_key, public, [("ffdhe2048-keygen", 1)]

    def emitter_agree(
        self, secret: bytes | None, receiver: bytes
    ) -> tuple[bytes, bytes, Operations]:
        private_key, public = self._keypair()
        shared = self._exchange(private_key, receiver)
        return public, shared, [("ffdhe2048-keygen", 1), *self._derive_operations()]

    def receiver_agree(
        self, secret: bytes | None, state: Any, emitter: bytes
    ) -> tuple[bytes, Operations]:
        return self._exchange(state, emitter), self._derive_operations()


class DhSha256Agreement(FfdheAgreement):
    """The `block-sizes` study's derivation: DH, then SHA-256 of the shared secret.

    The study derived its keys from SHA-256(Z); here SHA-256(Z) becomes HKDF's input keying
    material, so the per-direction, per-purpose separation still holds.
    """

    name = "dh-sha256"

    def _finish(self, shared: bytes) -> bytes:
        return hashlib.sha256(shared).digest()

    def _derive_operations(self) -> Operations:
        return [("ffdhe2048-derive", 1), ("sha256", FFDH_BYTES)]


_OAEP = padding.OAEP(mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


class RsaOaepAgreement(KeyAgreement):
    """RSA-OAEP key transport (the `block-sizes` study's AES-256-GCM + RSA).

    The receiver generates a fresh RSA-2048 key per session and sends its modulus; the emitter
    encrypts a random 256-bit key K to it with OAEP (SHA-256, MGF1-SHA256); Z = K.
    """

    name = "rsa-oaep"
    receiver_bytes = RSA_BITS // 8
    emitter_bytes = RSA_BITS // 8

    def receiver_start(self, secret: bytes | None) -> tuple[Any, bytes, Operations]:
        private_key = rsa.generate_private_key(
            public_exponent=RSA_PUBLIC_EXPONENT, key_size=RSA_BITS
        )
        modulus = private_key.public_key().public_numbers().n.to_bytes(RSA_BITS // 8, "big")
        return private_key, modulus, [("rsa2048-keygen", 1)]

    def emitter_agree(
        self, secret: bytes | None, receiver: bytes
    ) -> tuple[bytes, bytes, Operations]:
        modulus = int.from_bytes(receiver, "big")
        if modulus.bit_length() != RSA_BITS or modulus % 2 == 0:
            raise MalformedMessageError(f"peer RSA modulus is not an odd {RSA_BITS}-bit number")
        try:
            public_key = rsa.RSAPublicNumbers(RSA_PUBLIC_EXPONENT, modulus).public_key()
        except ValueError as error:
            raise MalformedMessageError("peer RSA public key is invalid") from error
        transported = os.urandom(RSA_TRANSPORTED_KEY_BYTES)
        return public_key.encrypt(transported, _OAEP), transported, [("rsa2048-public", 1)]

    def receiver_agree(
        self, secret: bytes | None, state: Any, emitter: bytes
    ) -> tuple[bytes, Operations]:
        try:
            transported = state.decrypt(emitter, _OAEP)
        except Exception:
            # One uniform error, whatever failed (Manger's attack distinguishes failures).
            raise AuthenticationError("RSA-OAEP key transport failed") from None
        if len(transported) != RSA_TRANSPORTED_KEY_BYTES:
            raise AuthenticationError("RSA-OAEP key transport failed")
        return transported, [("rsa2048-private", 1)]


AGREEMENTS: dict[str, KeyAgreement] = {
    agreement.name: agreement
    for agreement in (
        PskAgreement(),
        EcdhP256Agreement(),
        X25519Agreement(),
        FfdheAgreement(),
        DhSha256Agreement(),
        RsaOaepAgreement(),
    )
}


def message_sizes(key_establishment: str) -> tuple[int, int, int]:
    """(hello, emitter message, ready) lengths in bytes for a key establishment."""
    agreement = AGREEMENTS[key_establishment]
    return (
        1 + agreement.receiver_bytes,
        1 + SESSION_NONCE_BYTES + agreement.emitter_bytes,
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

    def __init__(self, scheme_name: str, psk: bytes | None = None) -> None:
        self._scheme = _scheme_for_key_exchange(scheme_name)
        self._agreement = AGREEMENTS[self._scheme.key_establishment or ""]
        self._psk = psk
        if self._agreement.name == "psk":
            PskAgreement._psk(psk)  # fail at construction, before anything is published
        self._sizes = message_sizes(self._agreement.name)
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
        return self._agreement.name

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

    def __init__(self, scheme_name: str, psk: bytes | None = None) -> None:
        super().__init__(scheme_name, psk)
        self._private: Any = None
        self._hello = b""

    def hello(self) -> bytes:
        """``01 | R``; the same bytes on every call (it is republished retained)."""
        if not self._hello:
            self._private, public, operations = self._agreement.receiver_start(self._psk)
            self._operations.extend(operations)
            self._hello = bytes((KX_VERSION,)) + public
            self._state = "hello-sent"
        return self._hello

    def on_emitter_message(self, msg: bytes) -> tuple[bytes, SessionKeys]:
        """Derive the session from ``01 | nonce | E``; return (ready message, keys)."""
        self._expect("hello-sent")
        msg = _check_message("emitter message", msg, self._sizes[1])
        session_nonce = msg[1 : 1 + SESSION_NONCE_BYTES]
        emitter_public = msg[1 + SESSION_NONCE_BYTES :]
        receiver_public = self._hello[1:]
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

    def __init__(self, scheme_name: str, psk: bytes | None = None) -> None:
        super().__init__(scheme_name, psk)
        self._transcript = b""
        self._pending: tuple[SessionKeys, bytes] | None = None

    def on_receiver_hello(self, msg: bytes) -> bytes:
        """``01 | nonce (16, random) | E`` for the hello ``01 | R``."""
        self._expect("start")
        msg = _check_message("receiver hello", msg, self._sizes[0])
        receiver_public = msg[1:]
        emitter_public, shared, operations = self._agreement.emitter_agree(
            self._psk, receiver_public
        )
        self._operations.extend(operations)
        session_nonce = os.urandom(SESSION_NONCE_BYTES)
        self._pending = self._derive(shared, emitter_public, receiver_public, session_nonce)
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


@functools.cache
def exchange_operations(scheme_name: str) -> dict[str, Operations]:
    """The energy-model operations each side of one key exchange of ``scheme_name`` performs
    (``{"emitter": …, "receiver": …}``), as the state machines above log them: one exchange run
    in memory (psk-* with a throw-away key). For agents that do the exchange elsewhere (the
    native agent) and log only its timing: the protocol fixes the operations."""
    psk = bytes(PSK_MIN_BYTES * 2)
    receiver = ReceiverKeyExchange(scheme_name, psk)
    emitter = EmitterKeyExchange(scheme_name, psk)
    ready, _ = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
    emitter.on_ready(ready)
    return {"emitter": emitter.operations(), "receiver": receiver.operations()}
