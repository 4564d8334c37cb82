"""The ciphers on the virtual microcontrollers (vmcu, docs/virtual-mcu.md): cross-compiled for
RV32IMC and Cortex-M4 with Debian's toolchains and picolibc, run bare-metal under QEMU. The same
published vectors as on the host (tests/validation/), every cipher's messages byte-identical to
the host scheme's, counts repeatable, and the issue's command end to end.
"""

from __future__ import annotations

import json
import os

import pytest

from iotsecbench.vmcu import (
    TARGET_CIPHERS,
    TARGETS,
    Request,
    count_scheme,
    firmware,
    missing_tools,
    run,
)
from tests.validation.test_vectors_aead import _lwc_kat, wycheproof
from tests.validation.test_vectors_etm import load


@pytest.fixture(params=sorted(TARGETS), scope="module")
def target(request):
    chosen = TARGETS[request.param]
    missing = missing_tools(chosen)
    if missing:
        pytest.skip(f"the virtual-MCU target {chosen.name} needs {', '.join(missing)}")
    return chosen


def answers(target, primitive, requests):
    return run(firmware(target, primitive), requests).answers


def test_ascon_aead128_sp800_232_kat(target):
    """All 1,089 known answers sealed and opened on the target; a flipped tag bit refused."""
    kat = _lwc_kat("LWC_AEAD_KAT_128_128_SP800-232.txt")
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
    got = answers(target, "ascon-aead128", requests)
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
        "--sizes", "64,1024", "--repetitions", "3", "--json", str(out),
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
