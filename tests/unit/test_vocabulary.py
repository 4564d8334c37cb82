"""Every operation the security code makes the agents log is one the energy model prices."""

from __future__ import annotations

import pytest

from iotsecbench.energy.profile import load_profile
from iotsecbench.energy.vocabulary import PRIMITIVE_KINDS
from iotsecbench.security import get_scheme, scheme_names
from iotsecbench.security.key_establishment import EmitterKeyExchange, ReceiverKeyExchange
from iotsecbench.security.tls import NegotiatedTls, handshake_operations, record_operations


def _negotiated(version: str, cipher: str, group: str | None, signature: str | None):
    return NegotiatedTls(
        version=version, cipher=cipher, cipher_bits=128, group=group, signature_algorithm=signature
    )


@pytest.mark.parametrize("name", scheme_names())
def test_scheme_operations_are_priced(name: str) -> None:
    scheme = get_scheme(name)
    for primitive, _ in scheme.seal_operations(256) + scheme.open_operations(256):
        assert primitive in PRIMITIVE_KINDS, primitive
    if scheme.key_establishment:
        psk = b"k" * 32  # used by psk-* schemes only
        receiver, emitter = ReceiverKeyExchange(name, psk), EmitterKeyExchange(name, psk)
        ready, _ = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
        emitter.on_ready(ready)
        for primitive, _ in receiver.operations() + emitter.operations():
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
