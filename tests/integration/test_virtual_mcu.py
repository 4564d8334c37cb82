"""The ciphers on the virtual microcontrollers (vmcu, docs/virtual-mcu.md): cross-compiled for
RV32IMC and Cortex-M4 with Debian's toolchains and picolibc, run bare-metal under QEMU. The same
published vectors as on the host (tests/validation/), every cipher's messages byte-identical to
the host scheme's, counts repeatable, and the issue's command end to end.
"""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from iotsecbench.energy.calibrate import rewrite_parameters
from iotsecbench.energy.profile import Parameter, load_profile, profile_text
from iotsecbench.vmcu import (
    FAMILIES,
    TARGET_CIPHERS,
    TARGETS,
    Request,
    count_operations,
    count_scheme,
    firmware,
    missing_tools,
    run,
)
from tests.validation.test_vectors_aead import _lwc_kat, wycheproof
from tests.validation.test_vectors_etm import load

# Cross-compiles and runs QEMU (tests/lanes.py).
pytestmark = pytest.mark.integration


@pytest.fixture(params=sorted(TARGETS), scope="module")
def target(request):
    chosen = TARGETS[request.param]
    missing = missing_tools(chosen)
    if missing:
        pytest.skip(f"the virtual-MCU target {chosen.name} needs {', '.join(missing)}")
    return chosen


def answers(target, primitive, requests):
    return run(firmware(target, primitive), requests).answers


@pytest.mark.parametrize(
    ("primitive", "file"),
    [
        ("ascon-aead128", "LWC_AEAD_KAT_128_128_SP800-232.txt"),
        ("ascon128v12", "LWC_AEAD_KAT_128_128.txt"),  # the device client's ascon128v12
    ],
)
def test_ascon_kat(target, primitive, file):
    """All 1,089 known answers of NIST SP 800-232's Ascon-AEAD128 and of Ascon-128 v1.2 sealed
    and opened on the target; a flipped tag bit refused."""
    kat = _lwc_kat(file)
    requests = []
    for entry in kat:
        fields = ("Key", "Nonce", "PT", "AD", "CT")
        key, nonce, pt, ad, ct = (bytes.fromhex(entry[k]) for k in fields)
        forged = ct[:-1] + bytes([ct[-1] ^ 1])
        requests += [
            Request("setkey", (key,)),
            Request("seal", (nonce, ad, pt)),
            Request("open", (nonce, ad, ct)),
            Request("open", (nonce, ad, forged)),
        ]
    got = answers(target, primitive, requests)
    for index, entry in enumerate(kat):
        setkey, seal, open_, forged = got[4 * index : 4 * index + 4]
        assert setkey.ok and seal.output.hex().upper() == entry["CT"].upper(), entry["Count"]
        assert open_.output.hex().upper() == entry["PT"].upper(), entry["Count"]
        assert forged.rejected, entry["Count"]


@pytest.mark.parametrize("family", ["Speck", "Simon"])
def test_speck_simon_designers_vectors(target, family):
    vectors = [v for v in load("simon-speck/designers_appendix_b.json")["vectors"]]
    vectors = [v for v in vectors if v["cipher"].startswith(family)]
    assert len(vectors) == 2  # 128/128 and 128/256
    requests = [
        Request("block", (bytes.fromhex(v["key"]), bytes.fromhex(v["plaintext"]))) for v in vectors
    ]
    got = answers(target, f"{family.lower()}128-ctr-hmac", requests)
    assert [a.output.hex() for a in got] == [v["ciphertext"] for v in vectors]


def test_table_free_aes_fips197_appendix_c(target):
    block = bytes.fromhex("00112233445566778899aabbccddeeff")
    requests = [
        Request("block", (bytes(range(16)), block)),
        Request("block", (bytes(range(32)), block)),
    ]
    got = answers(target, "aes-ctr-hmac-tablefree", requests)
    assert [a.output.hex() for a in got] == [
        "69c4e0d86a7b0430d8cdb78070b4c55a",  # FIPS 197 C.1
        "8ea2b7ca516745bfeafc49904b496089",  # FIPS 197 C.3
    ]


def test_salsa20_estream_and_keyed_blake2b_kat(target):
    requests, expected = [], []
    for file in ("salsa20/ecrypt_256bit.json", "salsa20/estream_128bit.json"):
        for vector in load(file)["vectors"]:
            position = vector.get("position", 0)
            stream = bytes.fromhex(vector["keystream"])
            if position + len(stream) > 16384:
                continue  # deep in the stream: more than the firmware's buffer holds
            key, iv = bytes.fromhex(vector["key"]), bytes.fromhex(vector["iv"])
            requests.append(Request("salsa20", (key, iv, bytes(position + len(stream)))))
            expected.append((position, stream))
    blake = load("blake2b/blake2b_keyed_kat.json")["vectors"]
    for vector in blake:
        data, key = bytes.fromhex(vector["input"]), bytes.fromhex(vector["key"])
        requests.append(Request("blake2b", (key, data, bytes([64]))))  # the KAT: BLAKE2b-512
    got = answers(target, "salsa20-blake2b", requests)
    assert len(expected) >= 4
    for (position, stream), answer in zip(expected, got, strict=False):
        assert answer.output[position:] == stream
    assert len(blake) == 257
    assert [a.output.hex() for a in got[len(expected) :]] == [v["digest"] for v in blake]


def test_hmac_sha256_wycheproof(target):
    data = load("wycheproof/hmac_sha256_test.json")
    tests = [t for g in data["testGroups"] if g["tagSize"] == 256 for t in g["tests"]]
    requests = [Request("hmac", (bytes.fromhex(t["key"]), bytes.fromhex(t["msg"]))) for t in tests]
    got = answers(target, "aes-ctr-hmac", requests)
    for test, answer in zip(tests, got, strict=True):
        assert (answer.output.hex() == test["tag"]) == (test["result"] == "valid"), test["tcId"]


@pytest.mark.parametrize(
    ("primitive", "file", "constraints"),
    [
        ("aes-gcm", "aes_gcm", {"ivSize": 96, "tagSize": 128}),
        ("aes-ccm", "aes_ccm", {"tagSize": 64}),
        ("chacha20-poly1305", "chacha20_poly1305", {"ivSize": 96}),
    ],
)
def test_mbedtls_aeads_wycheproof(target, primitive, file, constraints):
    """mbedTLS built from its registry source, on the target: valid vectors seal and open to
    the published bytes, invalid ones never open."""
    cases = [
        (g, t)
        for g, t in wycheproof(file)
        if g["keySize"] in (128, 256) and all(g[k] == v for k, v in constraints.items())
    ]
    requests = []
    for group, test in cases:
        key, iv = bytes.fromhex(test["key"]), bytes.fromhex(test["iv"])
        aad, msg = bytes.fromhex(test["aad"]), bytes.fromhex(test["msg"])
        sealed = bytes.fromhex(test["ct"]) + bytes.fromhex(test["tag"])
        requests += [
            Request("setkey", (key, bytes([group["tagSize"] // 8]))),
            Request("seal", (iv, aad, msg)),
            Request("open", (iv, aad, sealed)),
        ]
    got = answers(target, primitive, requests)
    assert len(cases) >= 10
    for index, (_, test) in enumerate(cases):
        setkey, seal, open_ = got[3 * index : 3 * index + 3]
        sealed = test["ct"] + test["tag"]
        if test["result"] == "valid":
            assert setkey.ok and seal.output.hex() == sealed, test["tcId"]
            assert open_.output.hex() == test["msg"], test["tcId"]
        else:
            assert not open_.ok or not setkey.ok, test["tcId"]


def test_every_cipher_seals_the_host_schemes_bytes(target):
    """count_scheme compares each sealed message with the host scheme's and opens the host's
    message on the target; it raises on any difference."""
    for cipher in TARGET_CIPHERS:
        counts = count_scheme(target, f"psk-{cipher}", [0, 1, 17, 1024])
        assert [c.payload_bytes for c in counts] == [0, 1, 17, 1024]
        assert all(c.seal_instructions > 0 and c.code_bytes > 0 for c in counts), cipher
        assert counts[-1].seal_instructions > counts[0].seal_instructions, cipher


def test_the_device_library_counts_the_code_a_device_run_seals_with(target):
    """--device-library (vmcu.client.primitives_library): the mbedTLS ciphers counted in the
    device client's mbedTLS 3.6.5 build — still every message the host scheme's bytes, a build
    of its own, named so; a cipher without mbedTLS (Ascon) is the same image either way."""
    from iotsecbench.vmcu.client import primitives_library

    linked = primitives_library(target)
    # the block-sizes study's two builds (each a harness image of its own: compiled once)
    for cipher in ("aes256-gcm", "aes128-ctr-hmac"):
        device = count_scheme(target, f"psk-{cipher}", [0, 17, 1024], linked=linked)
        own = count_scheme(target, f"psk-{cipher}", [1024])
        assert "3.6.5" in device[-1].provenance and "2.28" in own[0].provenance, cipher
        assert device[-1].build_hash != own[0].build_hash, cipher
    lightweight = count_scheme(target, "psk-ascon128v12", [64], linked=linked)
    assert lightweight[0].build_hash == count_scheme(target, "psk-ascon128v12", [64])[0].build_hash


def test_counting_is_deterministic(target):
    """Two emulator runs of the same requests count the same instructions, to the one."""
    key, nonce = os.urandom(16), os.urandom(16)
    requests = [Request("setkey", (key,))] + [
        Request("seal", (nonce, b"A" * 21, os.urandom(size))) for size in (16, 1024, 4096)
    ]
    image = firmware(target, "ascon-aead128")
    first, second = run(image, requests), run(image, requests)
    counts = [a.instructions for a in first.answers]
    assert counts == [a.instructions for a in second.answers]
    assert counts[1] < counts[2] < counts[3]
    # Per byte it is linear in the blocks: 4096 B costs about four times 1024 B.
    assert 3.5 < counts[3] / counts[2] < 4.1


def test_bench_crypto_target_command(target, cli, tmp_path):
    """The issue's command: exit 0, with instructions, code size and RAM per case."""
    out = tmp_path / "out.json"
    result = cli(
        "bench", "crypto", "--target", target.name, "--schemes",
        "aes128-gcm,chacha20-poly1305,ascon-aead128,speck128-128-ctr-hmac",
        "--sizes", "64,1024", "--repetitions", "3", "--json", str(out), "--public-key", "x25519",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    assert document["target"]["name"] == target.name
    cases = {(c["scheme"], c["payload_bytes"]): c for c in document["target_results"]}
    assert len(cases) == 8
    for case in cases.values():
        assert case["seal_instructions"] > 0 and case["open_instructions"] > 0
        assert case["code_bytes"] > 1000 and case["static_ram_bytes"] >= 0
        assert case["stack_bytes"] > 0 and len(case["build_hash"]) == 16
    assert "instr/B" in result.stdout and target.device in result.stdout
    operations = {op["operation"]: op for op in document["target_operations"]}
    assert set(operations) == {"x25519-keygen", "x25519-derive"}
    assert operations["x25519-derive"]["instructions"] > 1e6
    assert "Public-key operations" in result.stdout


# -- the handshakes' public-key operations ------------------------------------------------------
def test_x25519_wycheproof(target):
    """mbedTLS's X25519 on the target: valid Wycheproof vectors give the published shared
    secret; "acceptable" ones (low-order or non-canonical points) may be refused. Every fourth
    vector (12 million instructions each; the host runs them all)."""
    tests = [t for _, t in wycheproof("x25519")][::4]
    requests = [
        Request("derive", (bytes.fromhex(t["private"]), bytes.fromhex(t["public"]))) for t in tests
    ]
    got = answers(target, "x25519", requests)
    checked = 0
    for test, answer in zip(tests, got, strict=True):
        if test["result"] == "valid":
            assert answer.output.hex() == test["shared"], test["tcId"]
            checked += 1
        elif answer.ok:
            assert answer.output.hex() == test["shared"], test["tcId"]
    assert checked > 50


def test_ecdh_p256_wycheproof(target):
    """Valid points give the published secret (every fifth vector); invalid ones (off the curve,
    wrong encodings: all of them) are refused before any secret is computed."""
    every = [t for _, t in wycheproof("ecdh_secp256r1_ecpoint")]
    tests = [t for t in every if t["result"] == "invalid"] + every[::5]
    requests = [
        Request("derive", (bytes.fromhex(t["private"]), bytes.fromhex(t["public"]))) for t in tests
    ]
    got = answers(target, "p256", requests)
    for test, answer in zip(tests, got, strict=True):
        if test["result"] == "invalid":
            assert not answer.ok, test["tcId"]
        elif test["result"] == "valid" and test["public"].startswith("04"):
            assert answer.output.hex() == test["shared"], test["tcId"]  # mbedTLS 2.28 takes
        # uncompressed points only: compressed ones are refused, as its TLS code does


def test_mlkem_fips203_acvp(target):
    vectors = load("mlkem/acvp_fips203_subset.json")
    for parameter_set, build in (
        ("ML-KEM-512", "mlkem512"),
        ("ML-KEM-768", "mlkem768"),
        ("ML-KEM-1024", "mlkem1024"),
    ):
        requests, expected = [], []
        for v in vectors["keyGen"]:
            if v["parameterSet"] == parameter_set:
                requests.append(Request("keygen", (bytes.fromhex(v["d"] + v["z"]),)))
                expected.append(v["ek"] + v["dk"])
        for v in vectors["encapsulation"]:
            if v["parameterSet"] == parameter_set:
                requests.append(Request("encaps", (bytes.fromhex(v["ek"]), bytes.fromhex(v["m"]))))
                expected.append(v["c"] + v["k"])
        for v in vectors["decapsulation"]:  # some modified: implicit rejection's K
            if v["parameterSet"] == parameter_set:
                requests.append(Request("decaps", (bytes.fromhex(v["dk"]), bytes.fromhex(v["c"]))))
                expected.append(v["k"])
        got = answers(target, build, requests)
        assert len(got) == 20
        assert [a.output.hex() for a in got] == [e.lower() for e in expected], parameter_set


@pytest.mark.parametrize(
    ("parameter_set", "build"), [("ML-DSA-44", "mldsa44"), ("ML-DSA-65", "mldsa65")]
)
def test_mldsa_fips204_acvp(target, parameter_set, build):
    """Key generation from the seed, signing and verification through mu = H(tr || M') (the
    vectors' internal interface; hashlib's SHAKE256 computes mu on the host)."""
    vectors = load("mldsa/acvp_fips204_subset.json")

    def mine(group: str) -> list[dict]:
        return [v for v in vectors[group] if v["parameterSet"] == parameter_set]

    def mu(tr: bytes, message: str) -> bytes:
        return hashlib.shake_256(tr + bytes.fromhex(message)).digest(64)

    requests = [Request("keygen", (bytes.fromhex(v["seed"]),)) for v in mine("keyGen")]
    expected: list[object] = [(v["pk"] + v["sk"]).lower() for v in mine("keyGen")]
    for v in mine("sigGen"):
        sk = bytes.fromhex(v["sk"])
        requests.append(
            Request("sign_mu", (sk, mu(sk[64:128], v["message"]), bytes.fromhex(v["rnd"])))
        )
        expected.append(v["signature"].lower())
    for v in mine("sigVer"):
        pk = bytes.fromhex(v["pk"])
        tr = hashlib.shake_256(pk).digest(64)
        requests.append(
            Request("verify_mu", (pk, mu(tr, v["message"]), bytes.fromhex(v["signature"])))
        )
        expected.append(v["testPassed"])
    assert len(requests) == 24
    got = answers(target, build, requests)
    assert any(e is False for e in expected) and any(e is True for e in expected)
    for answer, want in zip(got, expected, strict=True):
        assert (answer.ok if isinstance(want, bool) else answer.output.hex()) == want


def test_ed25519_rfc8032(target):
    """RFC 8032 §7.1 tests 1 and 2 (``cryptography`` gives the same bytes)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    tests = [  # secret key, public key, message
        (
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
            "",
        ),
        (
            "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
            "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            "72",
        ),
    ]
    requests = []
    for secret, public, message in tests:
        s, p, m = bytes.fromhex(secret), bytes.fromhex(public), bytes.fromhex(message)
        signature = Ed25519PrivateKey.from_private_bytes(s).sign(m)
        requests += [
            Request("keygen", (s,)),
            Request("sign", (s, p, m)),
            Request("verify", (p, m, signature)),
            Request("verify", (p, m + b"!", signature)),
        ]
    got = answers(target, "ed25519", requests)
    assert got[0].output.hex() == tests[0][1] and got[4].output.hex() == tests[1][1]
    assert got[1].output.hex().startswith("e5564300c360ac729086e2cc806e828a")  # RFC 8032 test 1
    assert got[5].output.hex().startswith("92a009a9f0d4cab8720e820b5f642540")  # and test 2
    assert got[2].ok and got[6].ok and got[3].rejected and got[7].rejected


def test_public_key_operations_are_counted_and_checked(target):
    """Every family's operations: each result checked on the host (shared secrets against
    cryptography, RSA against pow(), signatures verified, decapsulation recovering the key),
    and a second count of the same inputs gives the same instructions."""
    counts = count_operations(target, list(FAMILIES), repetitions=1, sign_samples=1)
    names = {c.operation for c in counts}
    assert {"x25519-derive", "ecdsa-p256-verify", "rsa3072-private", "mlkem768-decaps"} <= names
    assert {"mldsa44-sign", "ed25519-verify", "mlkem512-encaps", "mlkem1024-decaps"} <= names
    assert {"mldsa65-sign", "mldsa65-verify"} <= names
    for c in counts:
        assert c.instructions > 100_000 and c.stack_bytes > 64 and c.code_bytes > 1000, c
    by_name = {c.operation: c for c in counts}
    # An RSA private operation costs far more than the public one; ML-KEM is far cheaper than
    # X25519 in mbedTLS's generic bignum code (both facts of the field, not tuned here).
    assert by_name["rsa2048-private"].instructions > 20 * by_name["rsa2048-public"].instructions
    assert by_name["mlkem768-encaps"].instructions < by_name["x25519-derive"].instructions
    again = count_operations(target, ["mlkem768", "x25519"], repetitions=1)
    assert {(c.operation, c.instructions) for c in again} == {
        (c.operation, c.instructions) for c in counts if c.primitive in ("mlkem768", "x25519")
    }


# -- device profiles from counts --------------------------------------------------------------
def _prices(profile) -> dict[str, tuple[float, str]]:
    return {
        f"{name}.{field}": (parameter.value, parameter.status)
        for name, cost in profile.primitives.items()
        for field, parameter in cost.parameters().items()
    }


def test_device_costs_regenerates_the_shipped_counted_profile(cli, tmp_path):
    """`bench device-costs` on the shipped esp32-c3 profile gives its numbers back: the shipped
    prices come from this code (counts are exact; the inputs are seeded)."""
    if missing_tools(TARGETS["rv32imc"]):
        pytest.skip("the virtual-MCU target rv32imc is not installed")
    out = tmp_path / "esp32-c3.toml"
    result = cli(
        "bench", "device-costs", "--target", "rv32imc", "--profile", "esp32-c3", "--out", str(out)
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "52 counted" in result.stdout
    assert _prices(load_profile(str(out))) == _prices(load_profile("esp32-c3"))


def test_device_costs_replaces_only_guesses_in_place(cli, tmp_path):
    """On the ESP32 profile (another instruction set) only guessed software-only prices are
    replaced, as derived, the file's comments kept: put the guesses back, rerun, get the file."""
    if missing_tools(TARGETS["rv32imc"]):
        pytest.skip("the virtual-MCU target rv32imc is not installed")
    shipped = profile_text("esp32-wroom-32")
    profile = load_profile("esp32-wroom-32")
    replaced = {
        f"primitives.{name}.{field}": Parameter(
            0.0, parameter.unit, "GUESS: put back", "guess", 0.0, 1.0, "a test's guess"
        )
        for name, cost in profile.primitives.items()
        for field, parameter in cost.parameters().items()
        if "another 32-bit instruction set" in parameter.source
    }
    assert len(replaced) >= 15
    guessed = tmp_path / "esp32-guessed.toml"
    guessed.write_text(rewrite_parameters(shipped, replaced))
    out = tmp_path / "esp32.toml"
    result = cli(
        "bench", "device-costs", "--target", "rv32imc", "--profile", str(guessed),
        "--replace-guesses", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # Values and statuses as shipped (the sources differ: they quote the guess they replaced).
    assert _prices(load_profile(str(out))) == _prices(profile)
    assert f"{len(replaced)} guessed prices replaced" in result.stdout
