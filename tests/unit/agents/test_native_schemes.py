"""The native agent's payload schemes (agents/native/scheme.c on mbedTLS), receiver side,
driven through tests/unit/agents/scheme_check.c built with AddressSanitizer and UBSan against
the Python schemes playing the emitter: the key exchange agrees with key_establishment.py, and
for every message — genuine, replayed, too old, cut, bit-flipped or random bytes — the C
receiver's verdict is the Python opener's (docs/wire-format.md, rejection rules)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import REPO
from tests.unit.agents.test_native_codec import Codec

from iotsecbench.security.key_establishment import EmitterKeyExchange
from iotsecbench.security.schemes import get_scheme
from iotsecbench.security.schemes.base import (
    AuthenticationError,
    MalformedMessageError,
    ReplayError,
)

# Builds the C driver with gcc and runs it as a process (tests/lanes.py).
pytestmark = pytest.mark.integration

NATIVE = REPO / "src" / "iotsecbench" / "agents" / "native"
SCHEMES = (
    "ecdh-p256-aes128-gcm",
    "x25519-aes256-ccm8",
    "psk-aes128-ctr-hmac",
    "x25519-aes256-cbc-hmac",
    "ecdh-p256-aes128-cbc",
    "x25519-chacha20-poly1305",
)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None or not Path("/usr/include/mbedtls/gcm.h").exists():
        pytest.skip("gcc or libmbedtls-dev not installed (scripts/setup.sh installs them)")
    binary = tmp_path_factory.mktemp("native") / "scheme_check"
    sources = ("scheme.c", "crypto_mbedtls.c", "stack_mbedtls.c", "heap.c", "state.c", "records.c")
    subprocess.run(
        [gcc, "-std=gnu11", "-g", "-O1", "-Wall", "-Wextra", "-Wno-unused-parameter",
         "-fsanitize=address,undefined", "-fno-sanitize-recover=all", f"-I{NATIVE}",
         "-o", str(binary), str(Path(__file__).with_name("scheme_check.c")),
         *(str(NATIVE / name) for name in sources), "-lmbedcrypto", "-lpthread"],
        check=True,
    )  # fmt: skip
    return binary


def verdict_of(opener, message: bytes) -> str:
    """The Python receiver's verdict, in the driver's words."""
    try:
        return "ok " + opener.open(message).plaintext.hex()
    except AuthenticationError:
        return "auth"
    except MalformedMessageError:
        return "malformed"
    except ReplayError as error:
        return "duplicate" if error.reason == "duplicate" else "too-old"


class Session:
    """A C receiver and a Python emitter (with a Python receiver twin for the verdicts)."""

    def __init__(self, driver: Path, scheme: str) -> None:
        self.c = Codec(driver)
        assert self.c("select", scheme) == "ok"
        psk = bytes(range(32)) if scheme.startswith("psk-") else None
        hello = self.c.bytes_of("hello", psk.hex() if psk else "-")
        emitter = EmitterKeyExchange(scheme, psk)
        answer = emitter.on_receiver_hello(hello)
        keys = emitter.on_ready(self.c.bytes_of("answer", answer.hex()))  # verifies the C MAC
        self.sealer = get_scheme(scheme).sealer(keys.emitter_to_receiver)
        self.twin = get_scheme(scheme).opener(keys.emitter_to_receiver)

    def both(self, message: bytes) -> tuple[str, str]:
        return self.c("open", message.hex()), verdict_of(self.twin, message)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_c_receiver_agrees_with_the_python_one(driver: Path, scheme: str) -> None:
    session = Session(driver, scheme)
    messages = [session.sealer.seal(bytes([i]) * (i * 7 % 50)) for i in range(80)]
    c, python = session.both(messages[5])
    assert c == python and c.startswith("ok "), (c, python)
    for message in messages[70:]:  # newer: moves the window past message 5
        c, python = session.both(message)
        assert c == python and c.startswith("ok "), (c, python)
    cases = [
        messages[5],  # replayed
        messages[3],  # too old for the 64-entry window (highest is 79)
        messages[20],  # inside the window, unseen: accepted once
        messages[20],  # and then a duplicate
        messages[60][:-1],  # cut
        bytes([2]) + messages[61][1:],  # another wire version
        messages[62][:12] + bytes([messages[62][12] ^ 1]) + messages[62][13:],  # a flipped bit
        messages[63][:-1] + bytes([messages[63][-1] ^ 0x80]),  # a flipped tag (or padding) bit
        messages[64][:2],  # a header alone
    ]
    for message in cases:
        c, python = session.both(message)
        assert c == python, (message.hex(), c, python)


@settings(max_examples=150, deadline=None)
@given(garbage=st.binary(max_size=120), scheme=st.sampled_from(SCHEMES))
def test_any_bytes_get_a_verdict_and_never_a_read_past_them(
    driver: Path, garbage: bytes, scheme: str
) -> None:
    session = _sessions(driver, scheme)
    c, python = session.both(garbage)
    assert c == python, (garbage.hex(), c, python)


_OPEN: dict[str, Session] = {}


def _sessions(driver: Path, scheme: str) -> Session:
    """One session per scheme for all the random examples (a driver start is costly)."""
    if scheme not in _OPEN:
        _OPEN[scheme] = Session(driver, scheme)
    return _OPEN[scheme]


def test_a_wrong_key_confirmation_input_is_refused(driver: Path) -> None:
    c = Codec(driver)
    assert c("select", "x25519-aes128-gcm") == "ok"
    hello = c.bytes_of("hello", "-")
    assert c("answer", hello.hex()).startswith("refused")  # a hello is not an answer (size)
    low_order = bytes([1]) + bytes(16) + bytes(32)  # u = 0: the all-zero result
    assert c("answer", low_order.hex()) == "refused emitter public key is invalid"
    # A refused answer leaves the exchange open: the genuine one still gets its confirmation.
    emitter = EmitterKeyExchange("x25519-aes128-gcm", None)
    answer = emitter.on_receiver_hello(hello)
    emitter.on_ready(c.bytes_of("answer", answer.hex()))
