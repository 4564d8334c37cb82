"""The key agreements of the payload key exchange: how the two ends arrive at a shared secret.

``security.key_establishment`` runs the protocol (hello, reply, confirmation) and the key
schedule; each agreement here says what the receiver's contribution ``R`` and the emitter's
``E`` are and how each side gets ``Z`` from them (docs/wire-format.md has their layout):

==================  =================================  =========================================
agreement           R (receiver)                       E (emitter)
==================  =================================  =========================================
``psk``             random 16-byte nonce               random 16-byte nonce; Z = the PSK
``ecdh-p256``       SEC1 uncompressed point (65)       SEC1 uncompressed point (65)
``x25519``          RFC 7748 public key (32)           RFC 7748 public key (32)
``ffdhe2048``       g^x mod p, 256 bytes big-endian    g^y mod p, 256 bytes big-endian
``dh-sha256``       as ffdhe2048                       as ffdhe2048; Z = SHA-256(g^xy mod p)
``rsa-oaep``        fresh RSA-2048 modulus n (256)     RSA-OAEP-SHA256(n, K) (256); Z = K (32)
``mlkem512``        fresh ML-KEM-512 key ek (800)      ciphertext (768); Z = the shared key (32)
``mlkem768``        fresh ML-KEM-768 key ek (1,184)    ciphertext (1,088); Z = the shared key
``mlkem1024``       fresh ML-KEM-1024 key ek (1,568)   ciphertext (1,568); Z = the shared key
``x25519mlkem768``  ek (1,184) || X25519 key (32)      ciphertext (1,088) || X25519 key (32);
                                                       Z = ML-KEM key || X25519 secret (64)
==================  =================================  =========================================

Peer values are validated before use: P-256 points on the curve, X25519 results not all-zero
(RFC 7748 §6.1), FFDH values in [2, p-2] and in the prime-order subgroup (SP 800-56A
§5.6.2.3.1), RSA moduli of exactly 2048 bits, ML-KEM keys by FIPS 203's modulus check; every
RSA-OAEP decryption failure gives one uniform error (Manger). ML-KEM decapsulation of a
tampered ciphertext yields a pseudorandom key (FIPS 203 implicit rejection), so the key
confirmation fails. Secrets never appear in ``repr``, ``str`` or errors.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from abc import ABC, abstractmethod
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import dh, ec, mlkem, padding, rsa, x25519
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.utils import CryptographyDeprecationWarning

from iotsecbench.errors import SpecError
from iotsecbench.security import pq_openssl
from iotsecbench.security.schemes.base import AuthenticationError, MalformedMessageError

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


class MlKemAgreement(KeyAgreement):
    """ML-KEM (FIPS 203) key encapsulation to a fresh receiver key, like ``rsa-oaep``: the
    receiver generates a decapsulation key per session and sends its encapsulation key; the
    emitter encapsulates to it; Z is the 32-byte shared key.

    ML-KEM-768 and -1024 run in ``cryptography`` (its bundled OpenSSL); ``cryptography`` has no
    ML-KEM-512, which runs in OpenSSL 3.5 (``pq_openssl``, built by scripts/setup.sh)."""

    def __init__(self, level: int) -> None:
        self.level = level
        self.name = f"mlkem{level}"
        self.receiver_bytes, self.emitter_bytes = pq_openssl.MLKEM_SIZES[level]
        self._kem: Any = {
            768: (mlkem.MLKEM768PrivateKey, mlkem.MLKEM768PublicKey),
            1024: (mlkem.MLKEM1024PrivateKey, mlkem.MLKEM1024PublicKey),
        }.get(level)

    def _library(self) -> Any:
        return self._kem or pq_openssl.mlkem(self.level)  # (private class, public class)

    def receiver_start(self, secret: bytes | None) -> tuple[Any, bytes, Operations]:
        private_class, _ = self._library()
        key = private_class.generate()
        return key, key.public_key().public_bytes_raw(), [(f"{self.name}-keygen", 1)]

    def emitter_agree(
        self, secret: bytes | None, receiver: bytes
    ) -> tuple[bytes, bytes, Operations]:
        _, public_class = self._library()
        try:
            peer = public_class.from_public_bytes(receiver)
        except ValueError as error:  # FIPS 203 §7.2: coefficients not reduced mod q
            raise MalformedMessageError(f"peer {self.name} key is invalid") from error
        shared, ciphertext = peer.encapsulate()
        return ciphertext, shared, [(f"{self.name}-encaps", 1)]

    def receiver_agree(
        self, secret: bytes | None, state: Any, emitter: bytes
    ) -> tuple[bytes, Operations]:
        return state.decapsulate(emitter), [(f"{self.name}-decaps", 1)]


class X25519MlKem768Agreement(KeyAgreement):
    """Hybrid X25519 + ML-KEM-768 as TLS's X25519MLKEM768 (draft-ietf-tls-ecdhe-mlkem §3,
    the concatenation combiner of draft-ietf-tls-hybrid-design §3.3): R = ek || X25519 key,
    E = ciphertext || X25519 key, Z = ML-KEM shared key || X25519 secret. Z goes into HKDF with
    both contributions in the salt, so the session keys stay secret while either holds."""

    name = "x25519mlkem768"

    def __init__(self) -> None:
        self._kem, self._ecdh = MlKemAgreement(768), X25519Agreement()
        self.receiver_bytes = self._kem.receiver_bytes + self._ecdh.receiver_bytes
        self.emitter_bytes = self._kem.emitter_bytes + self._ecdh.emitter_bytes

    def receiver_start(self, secret: bytes | None) -> tuple[Any, bytes, Operations]:
        kem_state, kem_public, kem_ops = self._kem.receiver_start(secret)
        ecdh_state, ecdh_public, ecdh_ops = self._ecdh.receiver_start(secret)
        return (kem_state, ecdh_state), kem_public + ecdh_public, kem_ops + ecdh_ops

    def emitter_agree(
        self, secret: bytes | None, receiver: bytes
    ) -> tuple[bytes, bytes, Operations]:
        split = self._kem.receiver_bytes
        ciphertext, kem_shared, kem_ops = self._kem.emitter_agree(secret, receiver[:split])
        ecdh_public, ecdh_shared, ecdh_ops = self._ecdh.emitter_agree(secret, receiver[split:])
        return ciphertext + ecdh_public, kem_shared + ecdh_shared, kem_ops + ecdh_ops

    def receiver_agree(
        self, secret: bytes | None, state: Any, emitter: bytes
    ) -> tuple[bytes, Operations]:
        split = self._kem.emitter_bytes
        kem_shared, kem_ops = self._kem.receiver_agree(secret, state[0], emitter[:split])
        ecdh_shared, ecdh_ops = self._ecdh.receiver_agree(secret, state[1], emitter[split:])
        return kem_shared + ecdh_shared, kem_ops + ecdh_ops


AGREEMENTS: dict[str, KeyAgreement] = {
    agreement.name: agreement
    for agreement in (
        PskAgreement(),
        EcdhP256Agreement(),
        X25519Agreement(),
        FfdheAgreement(),
        DhSha256Agreement(),
        RsaOaepAgreement(),
        MlKemAgreement(512),
        MlKemAgreement(768),
        MlKemAgreement(1024),
        X25519MlKem768Agreement(),
    )
}
