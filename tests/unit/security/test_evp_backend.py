"""The C extension (``evp.py``/``_evp.c``) against pyca ``cryptography``, the independent
implementation of the same ciphers: byte-identical messages, each opening the other's, the
same refusals. The published vectors run through the extension in
tests/validation/test_vectors_aead.py (``aead_seal`` uses whichever backend is active).
"""

from __future__ import annotations

import os

import pytest
from cryptography.exceptions import InvalidTag
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.blocked_import import run_with_import_blocked
from tests.conftest import missing_c_build_tool

from iotsecbench.lab.capabilities import check_native_aead
from iotsecbench.security.schemes import (
    AuthenticationError,
    DirectionKeys,
    MalformedMessageError,
    NonceExhaustedError,
    ReplayError,
    evp,
    get_scheme,
)
from iotsecbench.security.schemes.base import MAX_SEQ

EVP_SCHEMES = [
    "psk-aes128-gcm",
    "psk-aes256-gcm",
    "psk-aes128-ccm8",
    "psk-aes256-ccm8",
    "psk-chacha20-poly1305",
    "x25519-aes128-gcm",  # the key establishment does not change the per-message path
]
SIZES = [0, 1, 15, 16, 17, 64, 255, 1000, 4096, 10240, 65536]


def test_extension_is_built_wherever_it_can_be():
    # A silent fallback would quietly change every AES-GCM figure: where the compiler and
    # headers exist (CI installs them through scripts/setup.sh), the build must have worked.
    missing = missing_c_build_tool("evp.h")
    if missing:
        pytest.skip(f"{missing} here: the pyca fallback is used")
    assert evp.AVAILABLE, evp.MISSING_REASON
    assert evp.openssl_version().startswith("OpenSSL 3")
    assert check_native_aead().ok


needs_evp = pytest.mark.skipif(not evp.AVAILABLE, reason=f"{evp.MISSING_REASON}")


def keys_for(name: str, direction: str = "e2r") -> DirectionKeys:
    return get_scheme(name).random_keys(os.urandom(8), direction)


@pytest.fixture
def pyca_backend(monkeypatch):
    """Sealers and openers made while this is active use pyca (the fallback backend)."""

    def made_with_pyca(factory):
        monkeypatch.setattr(evp, "ACTIVE", False)
        try:
            return factory()
        finally:
            monkeypatch.setattr(evp, "ACTIVE", evp.AVAILABLE)

    return made_with_pyca


@needs_evp
@pytest.mark.parametrize("name", EVP_SCHEMES)
def test_same_bytes_and_mutual_opening(name, pyca_backend):
    scheme, keys = get_scheme(name), keys_for(name)
    native_sealer, native_opener = scheme.sealer(keys), scheme.opener(keys)
    pyca_sealer = pyca_backend(lambda: scheme.sealer(keys))
    pyca_opener = pyca_backend(lambda: scheme.opener(keys))
    assert native_sealer._native is not None and pyca_sealer._native is None
    for size in SIZES:
        plaintext = os.urandom(size)
        native_message, pyca_message = native_sealer.seal(plaintext), pyca_sealer.seal(plaintext)
        # Counter nonces make sealing deterministic: the backends must agree byte for byte.
        assert native_message == pyca_message, size
        assert len(native_message) == size + scheme.expected_overhead_bytes(size)
        assert pyca_opener.open(native_message).plaintext == plaintext
        opened = native_opener.open(pyca_message)
        assert opened.plaintext == plaintext and opened.seq == native_sealer.next_seq - 1
    assert native_sealer.next_seq == pyca_sealer.next_seq == len(SIZES)


@needs_evp
@settings(max_examples=60, deadline=None)
@given(plaintext=st.binary(max_size=2048), first_seq=st.integers(0, MAX_SEQ))
def test_any_payload_and_counter_match_pyca(plaintext, first_seq):
    scheme, keys = get_scheme("psk-aes128-ccm8"), keys_for("psk-aes128-ccm8")
    native = scheme.sealer(keys, first_seq=first_seq).seal(plaintext)
    state = scheme.pyca_state(keys.enc_key)
    header = bytes([1, scheme.scheme_id]) + first_seq.to_bytes(8, "big")
    nonce = keys.nonce_prefix + first_seq.to_bytes(8, "big")
    aad = header + keys.session_id + b"e2r"
    assert native == header + state.encrypt(nonce, plaintext, aad)


@needs_evp
@pytest.mark.parametrize("name", EVP_SCHEMES)
def test_native_opener_refuses_what_pyca_refuses(name):
    scheme, keys = get_scheme(name), keys_for(name)
    sealer, opener = scheme.sealer(keys), scheme.opener(keys)
    message = sealer.seal(os.urandom(64))
    for bit in range(8 * len(message)):
        flipped = bytearray(message)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises((AuthenticationError, MalformedMessageError, ReplayError)):
            opener.open(bytes(flipped))
    for length in range(len(message)):
        with pytest.raises((AuthenticationError, MalformedMessageError)):
            opener.open(message[:length])
    other = scheme.opener(keys_for(name))  # wrong key
    with pytest.raises(AuthenticationError):
        other.open(message)
    reflected = DirectionKeys(keys.enc_key, keys.mac_key, keys.nonce_prefix, keys.session_id, "r2e")
    with pytest.raises(AuthenticationError):
        scheme.opener(reflected).open(message)
    assert opener.open(message).seq == 0  # nothing above moved the replay window
    with pytest.raises(ReplayError):
        opener.open(message)


@needs_evp
def test_counter_exhaustion_is_refused_in_c():
    scheme = get_scheme("psk-aes128-gcm")
    keys = keys_for("psk-aes128-gcm")
    sealer = scheme.sealer(keys, first_seq=MAX_SEQ)
    last = sealer.seal(b"last")
    assert int.from_bytes(last[2:10], "big") == MAX_SEQ
    assert sealer.next_seq == MAX_SEQ + 1
    with pytest.raises(NonceExhaustedError, match="refusing to reuse a nonce"):
        sealer.seal(b"one too many")
    with pytest.raises(NonceExhaustedError):
        scheme.sealer(keys, first_seq=MAX_SEQ + 1).seal(b"")


@needs_evp
def test_any_bytes_like_plaintext_and_clear_type_errors():
    scheme, keys = get_scheme("psk-chacha20-poly1305"), keys_for("psk-chacha20-poly1305")
    sealer, opener = scheme.sealer(keys), scheme.opener(keys)
    for plaintext in (bytearray(b"abc"), memoryview(b"abcdef")[1:4]):
        assert opener.open(sealer.seal(plaintext)).plaintext == bytes(plaintext)
    with pytest.raises(TypeError):
        sealer.seal("text is not bytes")
    assert opener.open(bytearray(sealer.seal(b"x"))).plaintext == b"x"


@needs_evp
def test_raw_aead_checks_its_inputs():
    with pytest.raises(ValueError, match="OpenSSL has no cipher"):
        evp.aead("AES-128-NOPE", b"k" * 16, 16)
    with pytest.raises(ValueError, match="not an AEAD"):
        evp.aead("AES-128-CBC", b"k" * 16, 16)
    with pytest.raises(ValueError, match="16-byte key"):
        evp.aead("AES-128-GCM", b"k" * 15, 16)
    gcm = evp.aead("AES-128-GCM", b"k" * 16, 16)
    with pytest.raises(InvalidTag):
        gcm.decrypt(b"n" * 12, b"short", b"")
    with pytest.raises(ValueError, match="nonce of 0 bytes"):
        gcm.encrypt(b"", b"data", b"")
    assert "k" * 4 not in repr(gcm)


def test_pyca_fallback_round_trips(pyca_backend):
    scheme, keys = get_scheme("psk-aes256-gcm"), keys_for("psk-aes256-gcm")
    sealer = pyca_backend(lambda: scheme.sealer(keys))
    opener = pyca_backend(lambda: scheme.opener(keys))
    assert sealer._native is None
    assert opener.open(sealer.seal(b"hello")).plaintext == b"hello"
    message = sealer.seal(b"x")
    with pytest.raises(AuthenticationError):
        opener.open(message[:-1] + bytes([message[-1] ^ 1]))


def test_provenance_names_the_backend_that_runs():
    provenance = get_scheme("psk-aes128-gcm").provenance
    if evp.AVAILABLE:
        assert provenance.library == "openssl" and provenance.native
        assert provenance.version in evp.openssl_version()
    else:
        assert provenance.library == "cryptography"
    assert get_scheme("psk-aes128-eax").provenance.library == "pycryptodome"


@pytest.mark.integration
def test_without_the_extension_everything_runs_through_pyca():
    # What a machine without a C compiler gets: simulated by blocking the module's import.
    code = (
        "from iotsecbench.security.schemes import evp, get_scheme\n"
        "from iotsecbench.lab.capabilities import check_native_aead\n"
        "from tests.unit.security.test_evp_backend import keys_for\n"
        "scheme = get_scheme('psk-aes128-gcm'); keys = keys_for('psk-aes128-gcm')\n"
        "sealer, opener = scheme.sealer(keys), scheme.opener(keys)\n"
        "assert sealer._native is None and not evp.AVAILABLE\n"
        "assert opener.open(sealer.seal(b'hi')).plaintext == b'hi'\n"
        "check = check_native_aead()\n"
        "print(scheme.provenance.library, check.ok, check.consequence)\n"
    )
    library, ok, consequence = run_with_import_blocked(
        "iotsecbench.security.schemes._evp", code
    ).split(" ", 2)
    assert (library, ok) == ("cryptography", "False")
    assert "libssl-dev" in consequence and "scripts/setup.sh" in consequence


def _outcome(opener, message) -> tuple:
    try:
        opened = opener.open(message)
    except ReplayError as error:
        return ("ReplayError", str(error), error.reason)
    except (AuthenticationError, MalformedMessageError) as error:
        return (type(error).__name__, str(error))
    return ("opened", opened.plaintext, opened.seq, type(opened).__name__)


@needs_evp
@pytest.mark.parametrize("name", ["psk-aes128-gcm", "psk-aes128-ccm8"])
def test_native_open_matches_the_python_opener_outcome_for_outcome(name, pyca_backend):
    # The receive path in C (header checks, replay window, errors) must be indistinguishable
    # from base.py's: same verdict, same message, same replay reason, same window after.
    scheme, keys = get_scheme(name), keys_for(name)
    sealer = scheme.sealer(keys)
    messages = [sealer.seal(b"m%d" % i) for i in range(200)]
    tampered = bytearray(messages[150])
    tampered[-1] ^= 1
    inputs = [
        messages[0], messages[0], messages[100], messages[40], messages[40], messages[36],
        messages[37], bytes([2]) + messages[101][1:], messages[101][:1] + b"\xff" +
        messages[101][2:], messages[101][:17], b"", bytes(tampered), messages[150],
        bytearray(messages[160]), messages[199], messages[100], "not bytes", messages[198],
    ]  # fmt: skip
    native, python = scheme.opener(keys), pyca_backend(lambda: scheme.opener(keys))
    assert native._native is not None and python._native is None
    outcomes = [(_outcome(native, m), _outcome(python, m)) for m in inputs]
    for index, (from_c, from_python) in enumerate(outcomes):
        assert from_c == from_python, (index, from_c, from_python)
    verdicts = [c[0] for c, _ in outcomes]
    assert verdicts.count("ReplayError") == 4 and verdicts.count("AuthenticationError") == 3
    assert verdicts.count("MalformedMessageError") == 3
    c_window, python_window = native.replay_window, python.replay_window
    assert c_window is not None and python_window is not None
    assert (c_window.highest, c_window._bitmap) == (python_window.highest, python_window._bitmap)
    fresh_tampered = bytearray(messages[180])
    fresh_tampered[12] ^= 1
    with pytest.raises(AuthenticationError) as failure:
        native.open(bytes(fresh_tampered))
    assert isinstance(failure.value.__cause__, InvalidTag)  # as base.py's mapping chains it
