"""``bench device-costs``: a device profile's crypto prices from virtual-MCU counts.

Every primitive the firmware can run is counted on the device's instruction set (``vmcu``):
bulk primitives at two sizes, giving instructions per byte (the slope) and per call (the
intercept), public-key operations over several inputs (their mean: the energy model wants
the expected cost). Instructions become device time through the target's CPI and the
profile's clock; the prices get status ``counted`` and a source naming the target, the code
counted, the build's hash and the command that made them. Primitives the firmware does not run
but that share its code are ``derived`` from the counts (AES-CBC from AES-CTR, Ascon-128 v1.2
from Ascon-AEAD128, ...), each saying how; the rest keep the base profile's numbers.

A counted profile models a device doing all of its crypto in software (mbedTLS, wolfCrypt or
our C), with no accelerator: the ESP32-C3's AES/SHA/RSA blocks and the nRF52840's CryptoCell
would be faster. docs/virtual-mcu.md says where counts stop being cycles.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass
from types import MappingProxyType

from iotsecbench.energy.profile import DeviceProfile, Parameter, PrimitiveCost, load_profile
from iotsecbench.errors import DataError
from iotsecbench.vmcu import FAMILIES, Request, Target, count_operations, firmware, run
from iotsecbench.vmcu.primitives import primitive

SIZES = (64, 1024)  # two payload sizes: the slope is per byte, the intercept per call
KEY16, KEY32, AAD = bytes(range(16)), bytes(range(32)), bytes(21)  # 21: header + SID + direction
COMMAND = "iotsecbench bench device-costs --target {target} --profile {profile} --out FILE"


@dataclass(frozen=True)
class BulkCount:
    """How to count one bulk primitive: the build, its key, the operation and its inputs."""

    build: str
    setkey: tuple[bytes, ...] | None
    operation: str
    inputs: Callable[[bytes], tuple[bytes, ...]]
    what: str


def _seal(nonce: int) -> Callable[[bytes], tuple[bytes, ...]]:
    return lambda payload: (bytes(nonce), AAD, payload)


def _ctr(payload: bytes) -> tuple[bytes, ...]:
    return (bytes(16), payload)


BULK = {
    "aes-gcm": BulkCount("aes-gcm", (KEY16, b"\x10"), "seal", _seal(12), "AES-128-GCM seal"),
    "aes-ccm": BulkCount("aes-ccm", (KEY16, b"\x08"), "seal", _seal(11), "AES-128-CCM-8 seal"),
    "chacha20-poly1305": BulkCount(
        "chacha20-poly1305", (KEY32, b"\x10"), "seal", _seal(12), "ChaCha20-Poly1305 seal"
    ),
    "ascon-aead128": BulkCount("ascon-aead128", (KEY16,), "seal", _seal(16), "Ascon-AEAD128 seal"),
    "ascon128": BulkCount("ascon128v12", (KEY16,), "seal", _seal(16), "Ascon-128 v1.2 seal"),
    "aes-ctr": BulkCount("aes-ctr-hmac", (KEY16, KEY32), "ctr", _ctr, "AES-128-CTR (tables)"),
    "aes-ctr-tablefree": BulkCount(
        "aes-ctr-hmac-tablefree", (KEY16, KEY32), "ctr", _ctr, "table-free AES-128-CTR"
    ),
    "speck128": BulkCount("speck128-ctr-hmac", (KEY16, KEY32), "ctr", _ctr, "SPECK128/128-CTR"),
    "simon128": BulkCount("simon128-ctr-hmac", (KEY16, KEY32), "ctr", _ctr, "SIMON128/128-CTR"),
    "hmac-sha256": BulkCount(
        "aes-ctr-hmac", None, "hmac", lambda payload: (KEY32, payload), "HMAC-SHA256"
    ),
    "salsa20": BulkCount(
        "salsa20-blake2b", None, "salsa20", lambda p: (KEY32, bytes(8), p), "Salsa20/20"
    ),
    "blake2b": BulkCount(
        "salsa20-blake2b", None, "blake2b", lambda p: (KEY32, p, b"\x20"), "keyed BLAKE2b-256"
    ),
}

# Bulk primitives the firmware does not run, priced from one it does: (source primitive,
# factor on the per-byte cost, why).
DERIVED_BULK = {
    "aes-cbc": ("aes-ctr", 1.0, "one AES block encryption per 16 bytes, as CTR"),
    "aes-ctr-software": ("aes-ctr", 1.0, "tiny-AES-c is table-driven software AES, as mbedTLS's"),
    "aes-eax": ("aes-ctr", 2.0, "EAX = CTR + OMAC: two AES block encryptions per 16 bytes"),
    "sha256": ("hmac-sha256", 1.0, "HMAC's per-byte cost is SHA-256's"),
    "xchacha20-poly1305": ("chacha20-poly1305", 1.0, "the same cipher and MAC per byte"),
    "xsalsa20-poly1305": (
        "chacha20-poly1305", 1.0, "Salsa20 and ChaCha20 cost alike per byte; the same MAC"
    ),
}  # fmt: skip


# Count primitives priced from counted ones: (source, factor, why).
DERIVED_COUNT = {
    "hkdf-sha256": (
        "hmac-sha256", 3.0,
        "extract and two expand blocks: three HMAC-SHA256 calls on short inputs (per call)",
    ),
    "ffdhe2048-keygen": (
        "rsa2048-private", 4.0,
        "a 2048-bit modular exponentiation with a full exponent, without RSA's CRT halves "
        "(two half-size exponentiations cost about a quarter)",
    ),
    "ffdhe2048-derive": ("rsa2048-private", 4.0, "the same exponentiation as key generation"),
}  # fmt: skip


# Primitives a device computes in software whatever its hardware (no accelerator runs them):
# counts on another 32-bit instruction set are a better source than a guess for them.
SOFTWARE_ONLY = (
    "chacha20-poly1305", "xchacha20-poly1305", "xsalsa20-poly1305", "salsa20", "blake2b",
    "ascon128", "ascon-aead128", "speck128", "simon128", "aes-ctr-tablefree",
)  # fmt: skip
# Their public-key kin: lattice and Edwards-curve operations (the ESP32's MPI accelerator
# multiplies big integers; ML-KEM's NTT and ML-DSA's polynomials do not use it).
SOFTWARE_ONLY_OPERATIONS = ("mlkem512", "mlkem768", "mlkem1024", "mldsa44", "mldsa65", "ed25519")


def _count_bulk(target: Target, name: str, how: BulkCount) -> tuple[float, float, str]:
    """(instructions per byte, instructions per call, build hash) of one bulk primitive."""
    image = firmware(target, how.build)
    requests = [Request("setkey", how.setkey)] if how.setkey is not None else []
    requests += [Request(how.operation, how.inputs(bytes(size))) for size in SIZES]
    answers = run(image, requests).answers
    if not all(answer.ok for answer in answers):
        raise DataError(f"counting {name} on {target.name}: the firmware refused an input")
    small, large = (answer.instructions for answer in answers[-2:])
    per_byte = (large - small) / (SIZES[1] - SIZES[0])
    return per_byte, max(small - SIZES[0] * per_byte, 0.0), image.build_hash


def counted_profile(
    profile: DeviceProfile,
    target: Target,
    only: Collection[str] | None = None,
    families: Collection[str] = (),
) -> DeviceProfile:
    """``profile`` with every countable primitive counted on ``target`` (and the derivable
    ones derived), its other numbers unchanged; ``only``: just these bulk primitives and the
    public-key operations of ``families``."""
    clock = profile.cpu_clock_hz
    cpi = load_profile(target.profile).value("cpi")  # the counted core's, not the device's
    command = COMMAND.format(target=target.name, profile=profile.name)
    basis = (
        f"x CPI {cpi:g} ({target.profile}'s cpi: QEMU counts instructions, not cycles) at the "
        f"profile's {clock / 1e6:g} MHz; software only, no accelerator"
    )

    def counted(value: float, unit: str, what: str) -> Parameter:
        return Parameter(round(value, 6), unit, f"counted: {what} {basis}; {command}", "counted")

    primitives = dict(profile.primitives)
    wanted = set(BULK) | set(DERIVED_BULK) if only is None else set(only)
    sources = {DERIVED_BULK[name][0] for name in wanted & set(DERIVED_BULK)}
    for name, how in BULK.items():
        if name not in wanted | sources:
            continue
        per_byte, per_call, build_hash = _count_bulk(target, name, how)
        code = primitive(how.build).provenance_text()
        what = f"{how.what}, {code}, build {build_hash}: {per_byte:.2f} instructions/B"
        call = f"{how.what}, {code}, build {build_hash}: {per_call:,.0f} instructions/call"
        primitives[name] = PrimitiveCost(
            name,
            "bulk",
            cycles_per_byte=counted(per_byte * cpi, "cycles/B", what),
            per_call=counted(per_call * cpi / clock * 1e6, "us", call),
            per_operation=None,
        )
    for name, (source, factor, why) in DERIVED_BULK.items():
        if name not in wanted:
            continue
        base = primitives[source]
        assert base.cycles_per_byte is not None and base.per_call is not None
        primitives[name] = PrimitiveCost(
            name,
            "bulk",
            cycles_per_byte=Parameter(
                round(base.cycles_per_byte.value * factor, 6),
                "cycles/B",
                f"derived: {factor:g} x the counted {source} ({why})",
                "derived",
            ),
            per_call=Parameter(
                base.per_call.value, "us", f"derived: the counted {source}'s per call", "derived"
            ),
            per_operation=None,
        )
    counted_families = list(FAMILIES) if only is None else families
    primitives.update(_counted_operations(target, counted_families, counted, clock, cpi))
    if only is not None:
        return dataclasses.replace(profile, primitives=MappingProxyType(primitives))
    for name, (source, factor, why) in DERIVED_COUNT.items():
        base = primitives[source]
        milliseconds = (
            base.per_operation.value
            if base.per_operation is not None
            else base.per_call.value / 1e3  # type: ignore[union-attr]
        )
        primitives[name] = PrimitiveCost(
            name,
            "count",
            None,
            None,
            Parameter(
                round(milliseconds * factor, 6),
                "ms",
                f"derived: {factor:g} x the counted {source} ({why})",
                "derived",
            ),
        )
    return dataclasses.replace(profile, primitives=MappingProxyType(primitives))


def _counted_operations(
    target: Target,
    families: Collection[str],
    counted: Callable[[float, str, str], Parameter],
    clock: float,
    cpi: float,
) -> dict[str, PrimitiveCost]:
    """Every public-key operation of ``families`` counted on ``target``: its mean over the
    seeded inputs (the energy model wants the expected cost) as milliseconds."""
    costs = {}
    for count in count_operations(target, list(families)):
        what = (
            f"{count.operation}, {count.provenance}, build {count.build_hash}: mean of "
            f"{count.samples} inputs {count.instructions_mean:,.0f} instructions"
        )
        milliseconds = counted(count.instructions_mean * cpi / clock * 1e3, "ms", what)
        costs[count.operation] = PrimitiveCost(count.operation, "count", None, None, milliseconds)
    return costs


def borrowed_guesses(profile: DeviceProfile, target: Target) -> dict[str, Parameter]:
    """For a device of another instruction set (the ESP32's Xtensa): its *guessed* prices of
    software-only primitives and public-key operations, replaced by counts on ``target`` —
    status ``derived``, the source saying which instruction set was counted; measured and
    datasheet numbers stay."""
    guessed_families = [
        family
        for family in SOFTWARE_ONLY_OPERATIONS
        if any(
            parameter.status == "guess"
            for name, cost in profile.primitives.items()
            if name.startswith(f"{family}-")
            for parameter in cost.parameters().values()
        )
    ]
    counted = counted_profile(profile, target, only=SOFTWARE_ONLY, families=guessed_families)
    updates = {}
    operations = [n for n in counted.primitives if n.split("-")[0] in guessed_families]
    for name in (*SOFTWARE_ONLY, *operations):
        if name not in profile.primitives:
            continue  # an operation the firmware counts that the vocabulary does not price
        old, new = profile.primitives[name].parameters(), counted.primitives[name].parameters()
        for field, parameter in old.items():
            if parameter.status == "guess" and field in new:
                source = (
                    f"derived from a count on {target.name}, another 32-bit instruction set than "
                    f"this device's, replacing a guess ({parameter.value:g} {parameter.unit}): "
                    + new[field].source.replace("--out FILE", "--replace-guesses --out FILE")
                )
                updates[f"primitives.{name}.{field}"] = dataclasses.replace(
                    new[field], source=source, status="derived"
                )
    return updates
