"""Every operation the security code makes the agents log is one the energy model prices."""

from __future__ import annotations

import pytest

from iotsecbench.energy.profile import load_profile
from iotsecbench.energy.vocabulary import PRIMITIVE_KINDS
from iotsecbench.security import get_scheme
from iotsecbench.security.key_establishment import exchange_operations
from iotsecbench.security.schemes import cipher_names, key_establishment_names
from iotsecbench.security.tls import NegotiatedTls, handshake_operations, record_operations


def _negotiated(version: str, cipher: str, group: str | None, signature: str | None):
    return NegotiatedTls(
        version=version, cipher=cipher, cipher_bits=128, group=group, signature_algorithm=signature
    )


# A scheme's operations are its cipher's (seal, open) plus its key establishment's (the
# exchange): each part once covers every combination.
@pytest.mark.parametrize("cipher", cipher_names())
def test_cipher_operations_are_priced(cipher: str) -> None:
    scheme = get_scheme(f"psk-{cipher}")
    for primitive, _ in scheme.seal_operations(256) + scheme.open_operations(256):
        assert primitive in PRIMITIVE_KINDS, primitive


@pytest.mark.parametrize("establishment", key_establishment_names())
def test_key_establishment_operations_are_priced(establishment: str) -> None:
    operations = exchange_operations(f"{establishment}-aes128-gcm")
    for primitive, _ in operations["receiver"] + operations["emitter"]:
        assert primitive in PRIMITIVE_KINDS, primitive


@pytest.mark.parametrize(
    ("negotiated", "certificate"),
    [
        (
            _negotiated("1.2", "ECDHE-RSA-AES256-GCM-SHA384", "x25519", "rsa_pss_rsae_sha256"),
            "rsa2048",
        ),
        (_negotiated("1.2", "AES256-GCM-SHA384", None, None), "rsa2048"),
        (
            _negotiated(
                "1.3", "TLS_CHACHA20_POLY1305_SHA256", "secp256r1", "ecdsa_secp256r1_sha256"
            ),
            "ecdsa-p256",
        ),
        (_negotiated("1.2", "ECDHE-RSA-AES128-SHA256", "secp256r1", "rsa_pkcs1_sha256"), "rsa3072"),
    ],
)
def test_tls_operations_are_priced(negotiated: NegotiatedTls, certificate: str) -> None:
    operations = handshake_operations(negotiated, certificate) + record_operations(negotiated, 300)
    for primitive, _ in operations:
        assert primitive in PRIMITIVE_KINDS, primitive


def test_default_profile_prices_the_whole_vocabulary() -> None:
    profile = load_profile("esp32-wroom-32")
    assert set(PRIMITIVE_KINDS) <= set(profile.primitives)
