"""Post-quantum key establishment: the libraries against NIST's ACVP vectors (FIPS 203/204,
tests/data/vectors), the hybrid combiner, the signed exchange (and what tampering does to it),
the TLS profile grammar and the stack that speaks it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem, x25519

from iotsecbench.errors import SpecError
from iotsecbench.security import pq_openssl, resolve_configuration
from iotsecbench.security.agreements import AGREEMENTS
from iotsecbench.security.key_establishment import (
    EmitterKeyExchange,
    ReceiverKeyExchange,
    in_memory_pinned_keys,
    message_sizes,
)
from iotsecbench.security.schemes import AuthenticationError, get_scheme
from iotsecbench.security.signatures import SUITES, pinned_keys, provision
from iotsecbench.security.tls import parse_profile
from iotsecbench.security.tls.operations import handshake_operations
from iotsecbench.security.tls.stacks import stack_problem

VECTORS = Path(__file__).resolve().parents[2] / "data" / "vectors"
FIPS203 = json.loads((VECTORS / "mlkem" / "acvp_fips203_subset.json").read_text())
FIPS204 = json.loads((VECTORS / "mldsa" / "acvp_fips204_subset.json").read_text())
needs_openssl35 = pytest.mark.skipif(
    pq_openssl.problem() is not None, reason=str(pq_openssl.problem())
)
CRYPTOGRAPHY_MLKEM = {768: mlkem.MLKEM768PrivateKey, 1024: mlkem.MLKEM1024PrivateKey}
MLDSA = {
    "ML-DSA-44": (mldsa.MLDSA44PrivateKey, mldsa.MLDSA44PublicKey),
    "ML-DSA-65": (mldsa.MLDSA65PrivateKey, mldsa.MLDSA65PublicKey),
}


def _level(vector: dict) -> int:
    return int(vector["parameterSet"].removeprefix("ML-KEM-"))


def _ids(vectors: list[dict]) -> list[str]:
    return [f"{v['parameterSet']}-{v['tcId']}" for v in vectors]


# --- ML-KEM (FIPS 203) ----------------------------------------------------------------------


@pytest.mark.parametrize("vector", FIPS203["keyGen"], ids=_ids(FIPS203["keyGen"]))
def test_mlkem_key_generation_of_both_libraries_matches_acvp(vector: dict) -> None:
    seed = bytes.fromhex(vector["d"] + vector["z"])
    if _level(vector) in CRYPTOGRAPHY_MLKEM:
        key = CRYPTOGRAPHY_MLKEM[_level(vector)].from_seed_bytes(seed)
        assert key.public_key().public_bytes_raw().hex().upper() == vector["ek"]
    if pq_openssl.problem() is None:
        private, _ = pq_openssl.mlkem(_level(vector))
        key = private.generate(seed=seed)
        assert key.public_key().public_bytes_raw().hex().upper() == vector["ek"]
        assert key.private_bytes_raw().hex().upper() == vector["dk"]


@needs_openssl35
@pytest.mark.parametrize("vector", FIPS203["encapsulation"], ids=_ids(FIPS203["encapsulation"]))
def test_mlkem_encapsulation_matches_acvp(vector: dict) -> None:
    _, public = pq_openssl.mlkem(_level(vector))
    peer = public.from_public_bytes(bytes.fromhex(vector["ek"]))
    shared, ciphertext = peer.encapsulate(ikme=bytes.fromhex(vector["m"]))
    assert (shared.hex().upper(), ciphertext.hex().upper()) == (vector["k"], vector["c"])


@needs_openssl35
@pytest.mark.parametrize("vector", FIPS203["decapsulation"], ids=_ids(FIPS203["decapsulation"]))
def test_mlkem_decapsulation_matches_acvp_with_implicit_rejection(vector: dict) -> None:
    private, _ = pq_openssl.mlkem(_level(vector))
    key = private.from_private_bytes(bytes.fromhex(vector["dk"]))
    assert key.decapsulate(bytes.fromhex(vector["c"])).hex().upper() == vector["k"]


@needs_openssl35
@pytest.mark.parametrize("vector", [v for v in FIPS203["encapsulation"] if _level(v) != 512])
def test_cryptography_decapsulates_what_openssl_encapsulated(vector: dict) -> None:
    """cryptography loads no expanded dk: its key from an ACVP seed decapsulates an ACVP-
    deterministic encapsulation made by OpenSSL 3.5 to it (two implementations agree)."""
    seed = next(v for v in FIPS203["keyGen"] if v["parameterSet"] == vector["parameterSet"])
    key = CRYPTOGRAPHY_MLKEM[_level(vector)].from_seed_bytes(bytes.fromhex(seed["d"] + seed["z"]))
    _, public = pq_openssl.mlkem(_level(vector))
    peer = public.from_public_bytes(key.public_key().public_bytes_raw())
    shared, ciphertext = peer.encapsulate(ikme=bytes.fromhex(vector["m"]))
    assert key.decapsulate(ciphertext) == shared


def test_mlkem512_without_openssl35_is_one_clear_line(monkeypatch, tmp_path: Path) -> None:
    from iotsecbench.errors import EnvironmentProblem

    monkeypatch.setenv("IOTSECBENCH_OPENSSL_PQ", str(tmp_path / "absent"))
    pq_openssl.mlkem.cache_clear()
    try:
        with pytest.raises(EnvironmentProblem, match=r"scripts/setup\.sh"):
            ReceiverKeyExchange("mlkem512-aes128-gcm").hello()
    finally:
        pq_openssl.mlkem.cache_clear()


# --- ML-DSA (FIPS 204) ----------------------------------------------------------------------


@pytest.mark.parametrize("vector", FIPS204["keyGen"], ids=_ids(FIPS204["keyGen"]))
def test_mldsa_key_generation_matches_acvp(vector: dict) -> None:
    private, _ = MLDSA[vector["parameterSet"]]
    key = private.from_seed_bytes(bytes.fromhex(vector["seed"]))
    assert key.public_key().public_bytes_raw().hex().upper() == vector["pk"]


@pytest.mark.parametrize("vector", FIPS204["sigVer"], ids=_ids(FIPS204["sigVer"]))
def test_mldsa_verification_matches_acvp(vector: dict) -> None:
    """ACVP's internal interface signs M' itself: mu = SHAKE256(SHAKE256(pk, 64) || M', 64)
    (FIPS 204 Algorithm 8), checked with cryptography's verify_mu."""
    _, public = MLDSA[vector["parameterSet"]]
    pk = bytes.fromhex(vector["pk"])
    tr = hashlib.shake_256(pk).digest(64)
    mu = hashlib.shake_256(tr + bytes.fromhex(vector["message"])).digest(64)
    try:
        public.from_public_bytes(pk).verify_mu(bytes.fromhex(vector["signature"]), mu)
        verified = True
    except Exception:
        verified = False
    assert verified == (str(vector["testPassed"]) == "True"), vector["reason"]


# --- the payload key establishments ----------------------------------------------------------


def test_hybrid_secret_is_both_secrets_in_the_draft_order() -> None:
    """X25519MLKEM768 (draft-ietf-tls-ecdhe-mlkem §3): R = ek || X25519 key, E = ciphertext
    || X25519 key, Z = ML-KEM key || X25519 secret — each half recomputed independently."""
    hybrid = AGREEMENTS["x25519mlkem768"]
    state, receiver, _ = hybrid.receiver_start(None)
    emitter, shared, _ = hybrid.emitter_agree(None, receiver)
    assert (len(receiver), len(emitter), len(shared)) == (1184 + 32, 1088 + 32, 64)
    kem_key, ecdh_key = state
    assert shared[:32] == kem_key.decapsulate(emitter[:1088])
    peer = x25519.X25519PublicKey.from_public_bytes(emitter[1088:])
    assert shared[32:] == ecdh_key.exchange(peer)
    assert hybrid.receiver_agree(None, state, emitter)[0] == shared


@pytest.mark.parametrize(
    ("establishment", "hello", "reply"),
    [
        ("mlkem768", 1 + 1184, 1 + 16 + 1088),
        ("mlkem1024", 1 + 1568, 1 + 16 + 1568),
        ("x25519mlkem768-mldsa44", 1 + 1216 + 2420, 1 + 16 + 1120 + 2420),
        ("x25519-ecdsap256", 1 + 32 + 64, 1 + 16 + 32 + 64),
    ],
)
def test_message_sizes_are_the_wire_format(establishment: str, hello: int, reply: int) -> None:
    assert message_sizes(establishment) == (hello, reply, 33)


def _signed_exchange(name: str, keys=None):
    keys = keys or in_memory_pinned_keys(name)
    receiver = ReceiverKeyExchange(name, pinned=keys["receiver"])
    emitter = EmitterKeyExchange(name, pinned=keys["emitter"])
    return receiver, emitter


@pytest.mark.parametrize("suite", list(SUITES))
def test_a_signed_exchange_agrees_and_signs_both_ways(suite: str) -> None:
    name = f"x25519mlkem768-{suite}-chacha20-poly1305"
    receiver, emitter = _signed_exchange(name)
    ready, receiver_keys = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
    assert emitter.on_ready(ready) == receiver_keys
    primitive = SUITES[suite].primitive
    assert (f"{primitive}-sign", 1) in receiver.operations()
    assert (f"{primitive}-verify", 1) in receiver.operations()
    assert (f"{primitive}-sign", 1) in emitter.operations()
    properties = get_scheme(name).properties
    assert properties.authentication == "pinned signature keys" and properties.post_quantum


@pytest.mark.parametrize("suite", list(SUITES))
def test_tampering_with_either_signed_message_is_refused(suite: str) -> None:
    name = f"mlkem768-{suite}-aes128-gcm"
    receiver, emitter = _signed_exchange(name)
    hello = bytearray(receiver.hello())
    hello[5] ^= 1  # inside the ML-KEM key
    with pytest.raises(AuthenticationError, match="receiver's hello is not signed"):
        emitter.on_receiver_hello(bytes(hello))
    receiver, emitter = _signed_exchange(name)
    genuine = emitter.on_receiver_hello(receiver.hello())
    reply = bytearray(genuine)
    reply[-1] ^= 1  # the signature's last byte: the emitter's tamper-kx fault hook does this
    with pytest.raises(AuthenticationError, match="emitter's reply is not signed"):
        receiver.on_emitter_message(bytes(reply))
    # The forgery refused itself, not the session: the genuine reply still completes it.
    ready, keys = receiver.on_emitter_message(genuine)
    assert emitter.on_ready(ready) == keys


def test_a_peer_with_another_key_is_refused() -> None:
    """A man in the middle signs with its own key: the pinned key does not verify it."""
    name = "x25519mlkem768-mldsa44-aes128-gcm"
    honest = in_memory_pinned_keys(name)
    attacker = in_memory_pinned_keys(name)
    receiver = ReceiverKeyExchange(name, pinned=attacker["receiver"])
    emitter = EmitterKeyExchange(name, pinned=honest["emitter"])
    with pytest.raises(AuthenticationError):
        emitter.on_receiver_hello(receiver.hello())


def test_a_signature_for_one_scheme_does_not_verify_for_another() -> None:
    """The signed bytes start with the scheme's label: a hello replayed into a scheme with
    the same agreement and keys but another cipher is refused."""
    keys = in_memory_pinned_keys("x25519-ed25519-aes128-gcm")
    hello = ReceiverKeyExchange("x25519-ed25519-aes128-gcm", pinned=keys["receiver"]).hello()
    other = EmitterKeyExchange("x25519-ed25519-chacha20-poly1305", pinned=keys["emitter"])
    with pytest.raises(AuthenticationError):
        other.on_receiver_hello(hello)


def test_a_signed_scheme_needs_its_pinned_keys() -> None:
    with pytest.raises(SpecError, match="pinned mldsa44 keys"):
        ReceiverKeyExchange("mlkem768-mldsa44-aes128-gcm")
    wrong = pinned_keys(provision("ed25519")["receiver"])
    with pytest.raises(SpecError, match="pinned mldsa44 keys"):
        ReceiverKeyExchange("mlkem768-mldsa44-aes128-gcm", pinned=wrong)


def test_provisioned_records_pin_each_other_and_hide_secrets() -> None:
    records = provision("mldsa44")
    emitter, receiver = pinned_keys(records["emitter"]), pinned_keys(records["receiver"])
    signature = emitter.sign(b"transcript")
    receiver.verify(signature, b"transcript", "a test message")  # the peer's key verifies
    assert records["emitter"]["private"] not in repr(emitter)
    with pytest.raises(SpecError, match="signing-key record"):
        pinned_keys({"suite": "mldsa44", "private": "zz", "peer_public": ""})


# --- TLS -----------------------------------------------------------------------------------


def test_post_quantum_profiles_parse_and_are_tls13_only() -> None:
    profile = parse_profile("tls1.3/x25519mlkem768/mldsa44")
    assert (profile.group, profile.certificate) == ("X25519MLKEM768", "mldsa44")
    assert profile.post_quantum and profile.needs_pq_library
    assert parse_profile("tls1.3/SecP256r1MLKEM768/ecdsa-p256").group == "SecP256r1MLKEM768"
    assert parse_profile("tls1.3/mlkem768/ecdsa-p256").group == "MLKEM768"
    assert not parse_profile("tls1.3/x25519/ecdsa-p256").needs_pq_library
    with pytest.raises(SpecError, match=r"TLS 1\.3 only"):
        parse_profile("tls1.2/x25519mlkem768/ecdsa-p256")
    with pytest.raises(SpecError, match=r"TLS 1\.3 only"):
        parse_profile("tls1.2/mldsa44")


def test_a_configuration_may_name_its_profile_and_the_name_wins() -> None:
    configuration = resolve_configuration("tls1.3/x25519mlkem768/mldsa44+mlkem768-aes128-gcm")
    assert configuration.name == "tls1.3/X25519MLKEM768/mldsa44+mlkem768-aes128-gcm"
    assert configuration.transport == "tls1.3"
    merged = configuration.tls_profile_with({"group": "x25519", "mutual": True})
    assert merged.group == "X25519MLKEM768" and merged.mutual  # named beats [tls]
    assert resolve_configuration(configuration.name).name == configuration.name


def test_only_openssl_35_and_wolfssl_59_speak_post_quantum_tls() -> None:
    profile = parse_profile("tls1.3/x25519mlkem768/ecdsa-p256")
    assert "use stack openssl-3.5" in stack_problem("openssl", profile)
    assert stack_problem("openssl-3.5", profile) is None
    assert stack_problem("wolfssl-5.9", profile) is None
    assert "no ML-KEM" in stack_problem("wolfssl", profile)
    assert stack_problem("openssl", parse_profile("tls1.3/x25519/ecdsa-p256")) is None


def test_the_ml_dsa_signature_is_checked_against_the_certificate() -> None:
    from iotsecbench.security.tls import NegotiatedTls, verify_negotiated

    def signed(signature: str, certificate: str) -> NegotiatedTls:
        return NegotiatedTls(
            version="1.3", cipher="TLS_AES_128_GCM_SHA256", cipher_bits=128,
            group="X25519MLKEM768", signature_algorithm=signature, certificate=certificate,
        )  # fmt: skip

    profile = parse_profile("tls1.3/x25519mlkem768/mldsa44")
    verify_negotiated(profile, signed("mldsa44", "mldsa44"))
    for signature in ("mldsa65", "ecdsa_secp256r1_sha256"):
        with pytest.raises(ValueError, match=f"signed with {signature}"):
            verify_negotiated(profile, signed(signature, "mldsa44"))


def test_post_quantum_handshakes_price_ml_kem_and_ml_dsa() -> None:
    from iotsecbench.security.tls import NegotiatedTls

    negotiated = NegotiatedTls(
        version="1.3", cipher="TLS_AES_128_GCM_SHA256", cipher_bits=128,
        group="X25519MLKEM768", signature_algorithm="mldsa44", server_certificates_sent=2,
        handshake_messages_sent=(("client_hello", 1388), ("finished", 52)),
    )  # fmt: skip
    operations = handshake_operations(negotiated, "mldsa44")
    assert ("mlkem768-decaps", 1) in operations and ("x25519-derive", 1) in operations
    assert operations.count(("mldsa44-verify", 1)) == 2  # CertificateVerify + the leaf
    assert negotiated.client_hello_record_bytes == 1393
    assert negotiated.client_hello_segments(1448) == 1
    assert negotiated.client_hello_segments(536) == 3  # the RFC 1122 default MSS


def test_bench_crypto_times_a_signed_key_establishment() -> None:
    """A signed exchange is timed with keys made once beforehand (it once refused to run:
    the benchmark built its exchanges without pinned keys)."""
    from iotsecbench.bench.crypto import measure_key_establishment

    assert measure_key_establishment("x25519-ed25519", 3).median_ns > 0
