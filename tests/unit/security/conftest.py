"""Fixtures for the security tests: session keys from a real key exchange."""

from __future__ import annotations

import pytest

from iotsecbench.security.key_establishment import (
    EmitterKeyExchange,
    ReceiverKeyExchange,
    SessionKeys,
)


def run_key_exchange(scheme_name: str) -> tuple[SessionKeys, SessionKeys]:
    """Drive both state machines end to end; (receiver's keys, emitter's keys)."""
    receiver = ReceiverKeyExchange(scheme_name)
    emitter = EmitterKeyExchange(scheme_name)
    ready, receiver_keys = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
    return receiver_keys, emitter.on_ready(ready)


@pytest.fixture
def key_exchange():
    """The end-to-end driver, as a fixture (test modules do not import conftest)."""
    return run_key_exchange


@pytest.fixture(scope="module")
def gcm_keys() -> SessionKeys:
    return run_key_exchange("ecdh-p256-aes128-gcm")[0]


@pytest.fixture(scope="module")
def cbc_keys() -> SessionKeys:
    return run_key_exchange("ecdh-p256-aes128-cbc")[0]
