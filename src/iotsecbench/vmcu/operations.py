"""Counting the handshakes' public-key operations on a virtual target: key generation and
agreement (X25519, ECDH P-256, ML-KEM-512/768/1024), signatures (ECDSA P-256, Ed25519,
ML-DSA-44/65) and RSA's public and private exponentiations, each the way one side of a
handshake runs it.

Inputs are derived from a fixed seed — keys, messages, randomness, even the RSA primes — so a
rerun counts the same instructions; operations whose cost depends on their input (ML-DSA's
rejection sampling, RSA's exponent bits) run ``repetitions`` times over different inputs and
report the median with the range. Each family's steps run in order, a step's requests built
from the previous step's answers (a signature to verify, a ciphertext to decapsulate).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Generator, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, x25519
from cryptography.hazmat.primitives.asymmetric.utils import (
    Prehashed,
    decode_dss_signature,
    encode_dss_signature,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from iotsecbench.errors import DataError, SpecError
from iotsecbench.vmcu.build import firmware
from iotsecbench.vmcu.count import footprint
from iotsecbench.vmcu.primitives import primitive
from iotsecbench.vmcu.run import Answer, Request, run
from iotsecbench.vmcu.targets import Target

SEED = 2026  # every input derives from it: counts repeat run after run
SIGNED_BYTES = 130  # a TLS 1.3 CertificateVerify's signed content (RFC 8446 §4.4.3, SHA-256)
DEFAULT_REPETITIONS = 5
MLDSA_SIGN_SAMPLES = 200


@dataclass(frozen=True)
class OperationCount:
    """One public-key operation on one target, over ``samples`` inputs."""

    target: str
    operation: str  # e.g. "x25519-derive", "mldsa44-sign" (the energy model's names)
    primitive: str  # the firmware build
    instructions: float  # median over the samples
    instructions_mean: float  # what an operation of varying cost costs on average
    instructions_min: int
    instructions_max: int
    samples: int
    stack_bytes: int  # high-water mark, the largest of the samples
    heap_bytes: int  # allocation peak, the largest of the samples
    code_bytes: int  # the build's text beyond the harness (all of the family's operations)
    static_ram_bytes: int
    build_hash: str
    provenance: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# A family's steps: a generator that yields (operation name, request) batches and receives the
# answers of each batch before it builds the next.
Steps = Generator[list[tuple[str, Request]], list[Answer], None]


def _x25519(rng: random.Random, reps: int) -> Steps:
    batch, expected = [], []
    for _ in range(reps):
        mine = x25519.X25519PrivateKey.from_private_bytes(rng.randbytes(32))
        peer = x25519.X25519PrivateKey.from_private_bytes(rng.randbytes(32)).public_key()
        private = mine.private_bytes_raw()
        batch += [
            ("x25519-keygen", Request("keygen", ())),
            ("x25519-derive", Request("derive", (private, peer.public_bytes_raw()))),
        ]
        expected.append(mine.exchange(peer))
    answers = yield batch
    _agree("X25519", [a.output for a in answers[1::2]], expected)


def _agree(what: str, got: list[bytes], expected: list[bytes]) -> None:
    """Counts are kept only for code that computed what ``cryptography`` computes."""
    if got != expected:
        raise DataError(f"{what} on the target disagrees with the host's cryptography library")


_ECDSA = ec.ECDSA(Prehashed(hashes.SHA256()), deterministic_signing=True)


def _p256_key(rng: random.Random) -> ec.EllipticCurvePrivateKey:
    order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    return ec.derive_private_key(rng.randrange(1, order), ec.SECP256R1())


def _uncompressed(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)


def _p256(rng: random.Random, reps: int) -> Steps:
    batch, keys, shared = [], [], []
    for _ in range(reps):
        mine, peer = _p256_key(rng), _p256_key(rng)
        private = mine.private_numbers().private_value.to_bytes(32, "big")
        public = _uncompressed(mine.public_key())
        digest = rng.randbytes(32)
        r, s = decode_dss_signature(mine.sign(digest, _ECDSA))  # deterministic (RFC 6979)
        raw = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        batch += [
            ("ecdh-p256-keygen", Request("keygen", ())),
            ("ecdh-p256-derive", Request("derive", (private, _uncompressed(peer.public_key())))),
            ("ecdsa-p256-sign", Request("sign", (private, digest))),
            ("ecdsa-p256-verify", Request("verify", (public, digest, raw))),
        ]
        keys.append(mine)
        shared.append(mine.exchange(ec.ECDH(), peer.public_key()))
    answers = yield batch
    _agree("ECDH P-256", [a.output for a in answers[1::4]], shared)
    for key, answer in zip(keys, answers[2::4], strict=True):
        r, s = int.from_bytes(answer.output[:32], "big"), int.from_bytes(answer.output[32:], "big")
        try:
            key.public_key().verify(encode_dss_signature(r, s), answer.request.inputs[1], _ECDSA)
        except InvalidSignature:
            raise DataError("an ECDSA P-256 signature made on the target does not verify") from None


# Odd primes below 2000: trial division before Miller-Rabin.
SMALL_PRIMES = tuple(
    p for p in range(3, 2000, 2) if all(p % q for q in range(3, int(p**0.5) + 1, 2))
)


def _probable_prime(rng: random.Random, bits: int) -> int:
    """A prime of ``bits`` bits (top two set) from ``rng``: Miller-Rabin, 40 rounds."""
    while True:
        candidate = rng.getrandbits(bits) | (3 << (bits - 2)) | 1
        if any(candidate % p == 0 for p in SMALL_PRIMES):
            continue
        d, r = candidate - 1, 0
        while d % 2 == 0:
            d, r = d // 2, r + 1
        for _ in range(40):
            x = pow(rng.randrange(2, candidate - 1), d, candidate)
            if x in (1, candidate - 1):
                continue
            for _ in range(r - 1):
                x = pow(x, 2, candidate)
                if x == candidate - 1:
                    break
            else:
                break
        else:
            return candidate


def _rsa(bits: int) -> Callable[[random.Random, int], Steps]:
    def steps(rng: random.Random, reps: int) -> Steps:
        e = 65537
        while True:
            p, q = _probable_prime(rng, bits // 2), _probable_prime(rng, bits // 2)
            if p != q and (p - 1) % e and (q - 1) % e:
                break
        n, d = p * q, pow(e, -1, (p - 1) * (q - 1))
        size = bits // 8
        key = tuple(v.to_bytes((v.bit_length() + 7) // 8, "big") for v in (n, e, d, p, q))
        batch = [(f"rsa{bits}-setkey", Request("setkey", key))]
        for _ in range(reps):
            value = rng.randrange(2, n).to_bytes(size, "big")
            batch += [
                (f"rsa{bits}-public", Request("public", (value,))),
                (f"rsa{bits}-private", Request("private", (value,))),
            ]
        answers = yield batch
        for answer in answers[1:]:  # the exponentiations against Python's own
            value = int.from_bytes(answer.request.inputs[0], "big")
            exponent = e if answer.request.operation == "public" else d
            if int.from_bytes(answer.output, "big") != pow(value, exponent, n):
                raise DataError(f"RSA-{bits} {answer.request.operation} gave a wrong result")

    return steps


def _ed25519(rng: random.Random, reps: int) -> Steps:
    seeds = [rng.randbytes(32) for _ in range(reps)]
    answers = yield [("ed25519-keygen", Request("keygen", (seed,))) for seed in seeds]
    messages = [rng.randbytes(SIGNED_BYTES) for _ in range(reps)]
    signed = yield [
        ("ed25519-sign", Request("sign", (seed, answer.output, message)))
        for seed, answer, message in zip(seeds, answers, messages, strict=True)
    ]
    yield [
        ("ed25519-verify", Request("verify", (key.output, message, signature.output)))
        for key, message, signature in zip(answers, messages, signed, strict=True)
    ]


def _mlkem(level: int) -> Callable[[random.Random, int], Steps]:
    name, ek_bytes = f"mlkem{level}", {512: 800, 768: 1184, 1024: 1568}[level]

    def steps(rng: random.Random, reps: int) -> Steps:
        keys = yield [
            (f"{name}-keygen", Request("keygen", (rng.randbytes(64),))) for _ in range(reps)
        ]
        sealed = yield [
            (f"{name}-encaps", Request("encaps", (key.output[:ek_bytes], rng.randbytes(32))))
            for key in keys
        ]
        decapsulated = yield [
            (f"{name}-decaps", Request("decaps", (key.output[ek_bytes:], c.output[:-32])))
            for key, c in zip(keys, sealed, strict=True)
        ]
        for c, answer in zip(sealed, decapsulated, strict=True):
            if answer.output != c.output[-32:]:
                raise DataError(f"{name}: decapsulation did not recover the encapsulated key")

    return steps


def _mldsa(level: int) -> Callable[[random.Random, int], Steps]:
    name, pk_bytes = f"mldsa{level}", {44: 1312, 65: 1952}[level]

    def steps(rng: random.Random, reps: int) -> Steps:
        keys = yield [
            (f"{name}-keygen", Request("keygen", (rng.randbytes(32),))) for _ in range(reps)
        ]
        messages = [rng.randbytes(SIGNED_BYTES) for _ in range(reps)]
        signed = yield [
            (f"{name}-sign", Request("sign", (key.output[pk_bytes:], m, b"", rng.randbytes(32))))
            for key, m in zip(keys, messages, strict=True)
        ]
        yield [
            (f"{name}-verify", Request("verify", (key.output[:pk_bytes], m, b"", s.output)))
            for key, m, s in zip(keys, messages, signed, strict=True)
        ]

    return steps


# family -> (firmware build, its steps)
FAMILIES: dict[str, tuple[str, Callable[[random.Random, int], Steps]]] = {
    "x25519": ("x25519", _x25519),
    "p256": ("p256", _p256),
    "rsa2048": ("rsa", _rsa(2048)),
    "rsa3072": ("rsa", _rsa(3072)),
    "ed25519": ("ed25519", _ed25519),
    "mlkem512": ("mlkem512", _mlkem(512)),
    "mlkem768": ("mlkem768", _mlkem(768)),
    "mlkem1024": ("mlkem1024", _mlkem(1024)),
    "mldsa44": ("mldsa44", _mldsa(44)),
    "mldsa65": ("mldsa65", _mldsa(65)),
}


def resolve_families(text: str) -> list[str]:
    """``all`` or comma-separated family names; a usage error names the choices."""
    names = list(FAMILIES) if text.strip() == "all" else [n.strip() for n in text.split(",")]
    unknown = [name for name in names if name and name not in FAMILIES]
    if unknown:
        raise SpecError(
            f"unknown public-key family {', '.join(unknown)}: choose among "
            f"{', '.join(FAMILIES)} or all"
        )
    return [name for name in names if name]


def count_operations(
    target: Target,
    families: Iterable[str],
    repetitions: int = DEFAULT_REPETITIONS,
    on_count: Callable[[OperationCount], None] | None = None,
    *,
    sign_samples: int = MLDSA_SIGN_SAMPLES,
) -> list[OperationCount]:
    """Every operation of every family on ``target`` (one emulator run per step); ML-DSA
    over at least ``sign_samples`` messages (a test that only checks the results may ask
    for fewer)."""
    counts = []
    for family in families:
        build, make_steps = FAMILIES[family]
        image = firmware(target, build)
        code, static_ram = footprint(target, image)
        samples: dict[str, list[Answer]] = {}
        # ML-DSA signing repeats its rejection loop a message-dependent number of times (3 to
        # 23 M instructions on the Cortex-M4, a long right tail): a profile prices the mean,
        # which 25 messages put 18 % under that of 200 (docs/device-facts.md).
        reps = max(repetitions, sign_samples) if family.startswith("mldsa") else repetitions
        steps = make_steps(random.Random(f"{SEED}:{family}"), reps)
        answers: list[Answer] | None = None
        while True:
            try:
                batch = steps.send(answers) if answers is not None else next(steps)
            except StopIteration:
                break
            answers = run(image, [request for _, request in batch]).answers
            for (operation, _), answer in zip(batch, answers, strict=True):
                if not answer.ok:
                    raise DataError(
                        f"{operation} on {target.name} gave status {answer.status}: "
                        "the firmware refused inputs the host made valid"
                    )
                samples.setdefault(operation, []).append(answer)
        for operation, answered in samples.items():
            if operation.endswith("-setkey"):
                continue
            instructions = [a.instructions for a in answered]
            count = OperationCount(
                target=target.name,
                operation=operation,
                primitive=build,
                instructions=statistics.median(instructions),
                instructions_mean=statistics.fmean(instructions),
                instructions_min=min(instructions),
                instructions_max=max(instructions),
                samples=len(instructions),
                stack_bytes=max(a.stack_bytes for a in answered),
                heap_bytes=max(a.heap_bytes for a in answered),
                code_bytes=code,
                static_ram_bytes=static_ram,
                build_hash=image.build_hash,
                provenance=primitive(build).provenance_text(),
            )
            counts.append(count)
            if on_count is not None:
                on_count(count)
    return counts
