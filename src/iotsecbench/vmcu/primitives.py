"""What the virtual-MCU firmware can be built with: one *primitive* per build (so each build's
size is that primitive's footprint), and how the payload schemes' ciphers map onto them.

A primitive's operations are those of its ``firmware/p_*.c``. The payload ciphers all offer
``setkey`` (once per session), ``seal(nonce, aad, plaintext)`` and ``open(nonce, aad, body)``,
with the nonce, associated data and wire body exactly those of the host scheme
(docs/wire-format.md), so a message sealed on the target is byte for byte the host's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iotsecbench.errors import SpecError
from iotsecbench.security.schemes import DirectionKeys, get_scheme
from iotsecbench.security.schemes.base import Frame
from iotsecbench.vmcu.sources import ARCHIVES

LWC = "lwc"  # our C, src/iotsecbench/security/schemes/lwc/
# The device client's ML-KEM encapsulation (agents/native/crypto_mlkem.c): the harness's encaps
MLKEM = ("native/crypto_mlkem.c",)
OURS = "iotsecbench (our C from the specification)"
OURS_WITH_HMAC = OURS + "; HMAC-SHA256 from {library}"


@dataclass(frozen=True)
class Primitive:
    name: str
    source: str  # the firmware/ file with its operations
    defines: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()  # more firmware/ files, lwc/ and agents/native/ ones prefixed
    library: str | None = None  # a third-party archive linked in (vmcu.sources)
    provenance: str | None = None  # None: the library's code, or ours without a library

    def provenance_text(self, linked: str | None = None) -> str:
        """Whose code this build counts (``linked``: another build of its library's, named)."""
        library = ARCHIVES[self.library].library if self.library else None
        library = linked if linked is not None and library is not None else library
        if self.provenance is None:
            return library or OURS
        return self.provenance.format(library=library)


PRIMITIVES = {
    p.name: p
    for p in (
        Primitive("none", "p_none.c"),  # the harness alone: what every size subtracts
        Primitive("aes-gcm", "p_mbedtls_aead.c", ("VM_AEAD=1",), library="mbedtls"),
        Primitive("aes-ccm", "p_mbedtls_aead.c", ("VM_AEAD=2",), library="mbedtls"),
        Primitive("chacha20-poly1305", "p_mbedtls_aead.c", ("VM_AEAD=3",), library="mbedtls"),
        Primitive("aes-ctr-hmac", "p_mbedtls_ctr_hmac.c", extra=("etm.c",), library="mbedtls"),
        Primitive(
            "speck128-ctr-hmac",
            "p_lwc_ctr_hmac.c",
            ("VM_BLOCK=1",),
            ("etm.c", "lwc/speck_simon.c"),
            "mbedtls",
            OURS_WITH_HMAC,
        ),
        Primitive(
            "simon128-ctr-hmac",
            "p_lwc_ctr_hmac.c",
            ("VM_BLOCK=2",),
            ("etm.c", "lwc/speck_simon.c"),
            "mbedtls",
            OURS_WITH_HMAC,
        ),
        Primitive(
            "aes-ctr-hmac-tablefree",
            "p_lwc_ctr_hmac.c",
            ("VM_BLOCK=3",),
            ("etm.c", "lwc/aes.c"),
            "mbedtls",
            OURS_WITH_HMAC,
        ),
        Primitive("ascon-aead128", "p_ascon_aead128.c", extra=("lwc/ascon.c",)),
        Primitive("ascon128v12", "p_ascon_aead128.c", ("VM_ASCON_V12=1",), ("lwc/ascon.c",)),
        Primitive("salsa20-blake2b", "p_salsa20_blake2b.c", extra=("lwc/salsa20_blake2b.c",)),
        # The handshakes' public-key primitives.
        Primitive("x25519", "p_mbedtls_pk.c", ("VM_PK=1",), library="mbedtls"),
        Primitive("p256", "p_mbedtls_pk.c", ("VM_PK=2",), library="mbedtls"),
        Primitive("rsa", "p_mbedtls_pk.c", ("VM_PK=3",), library="mbedtls"),
        Primitive("mlkem512", "p_wolfcrypt_pq.c", ("VM_PQ=1",), MLKEM, "wolfssl"),
        Primitive("mlkem768", "p_wolfcrypt_pq.c", ("VM_PQ=2",), MLKEM, "wolfssl"),
        Primitive("mlkem1024", "p_wolfcrypt_pq.c", ("VM_PQ=5",), MLKEM, "wolfssl"),
        Primitive("mldsa44", "p_wolfcrypt_pq.c", ("VM_PQ=3",), library="wolfssl"),
        Primitive("mldsa65", "p_wolfcrypt_pq.c", ("VM_PQ=6",), library="wolfssl"),
        Primitive("ed25519", "p_wolfcrypt_pq.c", ("VM_PQ=4",), library="wolfssl"),
    )
}


def primitive(name: str) -> Primitive:
    try:
        return PRIMITIVES[name]
    except KeyError:
        raise SpecError(
            f"unknown virtual-MCU primitive {name!r}: choose one of {', '.join(PRIMITIVES)}"
        ) from None


# -- payload ciphers on the target ---------------------------------------------------------------
def _counter(size: int) -> Callable[[Frame], bytes]:
    return lambda frame: frame.counter_nonce(size)


def _ctr_block(frame: Frame) -> bytes:
    return frame.counter_nonce(12) + b"\0\0\0\0"  # etm.ctr_initial_block


def _seq(frame: Frame) -> bytes:
    assert frame.seq is not None
    return frame.seq.to_bytes(8, "big")


@dataclass(frozen=True)
class TargetCipher:
    """A payload cipher as the target runs it: which build, what ``setkey`` takes besides the
    keys, and the per-message nonce the host scheme uses."""

    primitive: str
    nonce: Callable[[Frame], bytes]
    tag_bytes: int | None = None  # AEAD builds take the tag length at setkey
    mac_key: bool = False  # encrypt-then-MAC builds take the MAC key at setkey

    def setkey_inputs(self, keys: DirectionKeys) -> list[bytes]:
        if self.tag_bytes is not None:
            return [keys.enc_key, bytes([self.tag_bytes])]
        if self.mac_key:
            return [keys.enc_key, keys.mac_key]
        return [keys.enc_key]


_AEAD_GCM = TargetCipher("aes-gcm", _counter(12), tag_bytes=16)
_CCM8 = TargetCipher("aes-ccm", _counter(11), tag_bytes=8)


def _etm(primitive: str, nonce: Callable[[Frame], bytes] = _ctr_block) -> TargetCipher:
    return TargetCipher(primitive, nonce, mac_key=True)


TARGET_CIPHERS = {
    "aes128-gcm": _AEAD_GCM,
    "aes256-gcm": _AEAD_GCM,
    "aes128-ccm8": _CCM8,
    "aes256-ccm8": _CCM8,
    "chacha20-poly1305": TargetCipher("chacha20-poly1305", _counter(12), tag_bytes=16),
    "aes128-ctr-hmac": _etm("aes-ctr-hmac"),
    "aes256-ctr-hmac": _etm("aes-ctr-hmac"),
    "aes128-ctr-hmac-tablefree": _etm("aes-ctr-hmac-tablefree"),
    "aes256-ctr-hmac-tablefree": _etm("aes-ctr-hmac-tablefree"),
    "speck128-128-ctr-hmac": _etm("speck128-ctr-hmac"),
    "speck128-256-ctr-hmac": _etm("speck128-ctr-hmac"),
    "simon128-128-ctr-hmac": _etm("simon128-ctr-hmac"),
    "simon128-256-ctr-hmac": _etm("simon128-ctr-hmac"),
    "ascon-aead128": TargetCipher("ascon-aead128", _counter(16)),
    "ascon128v12": TargetCipher("ascon128v12", _counter(16)),
    "salsa20-128-blake2b": _etm("salsa20-blake2b", _seq),
    "salsa20-256-blake2b": _etm("salsa20-blake2b", _seq),
}


def target_cipher(scheme_name: str) -> TargetCipher:
    """How the target runs ``scheme_name``'s cipher; a usage error for ciphers it cannot."""
    cipher = get_scheme(scheme_name).cipher
    try:
        return TARGET_CIPHERS[cipher]
    except KeyError:
        raise SpecError(
            f"{cipher} has no virtual-MCU build: choose among {', '.join(TARGET_CIPHERS)}"
        ) from None
