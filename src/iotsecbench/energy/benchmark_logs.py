"""Primitive benchmark tables read into the energy vocabulary's prices (``calibrate
--benchmark``, ``validate``; docs/energy-model.md, "Calibration from timings").

Three formats, each as its program prints it:

* ``wolfcrypt`` — wolfSSL's ``wolfcrypt/benchmark`` (also its ESP-IDF example):
  ``AES-128-GCM-enc  400 KiB took 1.031 seconds, 387.973 KiB/s …`` and
  ``ECDSA [ SECP256R1] 256 verify  2 ops took 1.013 sec, avg 506.500 ms, 1.974 ops/sec``;
  the clock from ESP-IDF's ``cpu freq: 240000000 Hz`` line when the log has it.
* ``mbedtls`` — Mbed TLS's ``programs/test/benchmark``: ``AES-GCM-128 : 36.59 KiB/s, …``,
  ``RSA-2048 : 28 ms/ public`` or ``RSA-2048 : 231 public/s``; ``ECDH-<curve> … handshake``
  is one shared-secret computation (derive), ``ECDHE-<curve> … handshake`` a key pair and a
  shared secret, so keygen = ECDHE − ECDH when both are there.
* ``pqm4`` — a pqm4-style markdown cycle table (``benchmarks.md``): ``| scheme |
  implementation | key generation [cycles] | encapsulation or sign [cycles] | decapsulation
  or verify [cycles] |``, each cell ``AVG: 1,234`` (or a bare number); cycles become time at
  the clock given.

A line naming something the model does not price (MD5, 3DES, SHA-512, …) is listed as
skipped, never guessed; a table row whose scheme the vocabulary does not know is an error
(``pqm4``: each row is meant), as is a malformed number. ``BenchmarkEntry.seconds`` is the
measured time of ``amount`` bytes or operations, so ``energy.handshake.operation_seconds`` of
the same amount on a profile is the model's figure for the same entry.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from iotsecbench.energy.profile import DEFAULT_WIDTHS, DeviceProfile, Parameter
from iotsecbench.energy.vocabulary import PRIMITIVE_KINDS
from iotsecbench.errors import DataError
from iotsecbench.files import CONFIG_MAX_BYTES, read_user_file

__all__ = [
    "FORMATS",
    "BenchmarkEntry",
    "BenchmarkLog",
    "PricedEntry",
    "prices_from_log",
    "read_benchmark_log",
]

FORMATS = ("wolfcrypt", "mbedtls", "pqm4")
_UNITS = {"KiB": 1024, "KB": 1000, "MiB": 1024**2, "MB": 1000**2, "B": 1}

# wolfCrypt labels (brackets and runs of spaces removed) → primitive
_WOLFCRYPT = {
    "AES-128-CBC-enc": "aes-cbc",
    "AES-128-GCM-enc": "aes-gcm",
    "AES-128-CTR": "aes-ctr",
    "AES-128-CCM-enc": "aes-ccm",
    "CHA-CHA-POLY": "chacha20-poly1305",
    "SHA-256": "sha256",
    "HMAC-SHA256": "hmac-sha256",
    "RSA 2048 key gen": "rsa2048-keygen",
    "RSA 2048 public": "rsa2048-public",
    "RSA 2048 private": "rsa2048-private",
    "RSA 3072 public": "rsa3072-public",
    "RSA 3072 private": "rsa3072-private",
    "ECC SECP256R1 256 key gen": "ecdh-p256-keygen",
    "ECDHE SECP256R1 256 agree": "ecdh-p256-derive",
    "ECDSA SECP256R1 256 sign": "ecdsa-p256-sign",
    "ECDSA SECP256R1 256 verify": "ecdsa-p256-verify",
    "CURVE 25519 key gen": "x25519-keygen",
    "CURVE 25519 agree": "x25519-derive",
    "ED 25519 sign": "ed25519-sign",
    "ED 25519 verify": "ed25519-verify",
    **{f"ML-KEM {n} key gen": f"mlkem{n}-keygen" for n in (512, 768, 1024)},
    **{f"ML-KEM {n} encap": f"mlkem{n}-encaps" for n in (512, 768, 1024)},
    **{f"ML-KEM {n} decap": f"mlkem{n}-decaps" for n in (512, 768, 1024)},
    **{f"ML-DSA {n} sign": f"mldsa{n}-sign" for n in (44, 65)},
    **{f"ML-DSA {n} verify": f"mldsa{n}-verify" for n in (44, 65)},
}
# Mbed TLS labels → primitive (asymmetric: label and the operation after the number)
_MBEDTLS_BULK = {
    "AES-CBC-128": "aes-cbc",
    "AES-GCM-128": "aes-gcm",
    "AES-CTR-128": "aes-ctr",
    "AES-CCM-128": "aes-ccm",
    "ChaCha20-Poly1305": "chacha20-poly1305",
    "CHACHA20-POLY1305": "chacha20-poly1305",
    "SHA-256": "sha256",
}
_MBEDTLS_ASYMMETRIC = {
    ("RSA-2048", "public"): "rsa2048-public",
    ("RSA-2048", "private"): "rsa2048-private",
    ("RSA-3072", "public"): "rsa3072-public",
    ("RSA-3072", "private"): "rsa3072-private",
    ("ECDSA-secp256r1", "sign"): "ecdsa-p256-sign",
    ("ECDSA-secp256r1", "verify"): "ecdsa-p256-verify",
    ("ECDH-secp256r1", "handshake"): "ecdh-p256-derive",
    ("ECDHE-secp256r1", "handshake"): "ecdh-p256-keygen+derive",
    ("ECDH-Curve25519", "handshake"): "x25519-derive",
    ("ECDHE-Curve25519", "handshake"): "x25519-keygen+derive",
}
# pqm4 scheme → its three columns' primitives (None: a column the model does not price)
_PQM4 = {
    **{f"ml-kem-{n}": (f"mlkem{n}-keygen", f"mlkem{n}-encaps", f"mlkem{n}-decaps")
       for n in (512, 768, 1024)},
    **{f"ml-dsa-{n}": (None, f"mldsa{n}-sign", f"mldsa{n}-verify") for n in (44, 65)},
}  # fmt: skip

_WOLF_BULK = re.compile(
    r"^(?P<label>\S.*?)\s+(?P<amount>[\d.]+)\s+(?P<unit>KiB|KB|MiB|MB|B)\s+took\s+"
    r"(?P<seconds>[\d.]+)\s+seconds?,"
)
_WOLF_OPS = re.compile(
    r"^(?P<label>\S.*?)\s+(?P<ops>\d+)\s+ops\s+took\s+(?P<seconds>[\d.]+)\s+sec,"
)
_CPU_FREQ = re.compile(r"cpu freq:\s*(?P<hz>\d+)\s*Hz")
_MBED = re.compile(r"^\s*(?P<label>[A-Za-z0-9_()\- ]+?)\s*:\s*(?P<rest>.+)$")
_MBED_RATE = re.compile(r"^(?P<rate>[\d.]+)\s*(?P<unit>KiB|KB|MiB|MB)/s")
_MBED_MS = re.compile(r"^(?P<ms>[\d.]+)\s*ms/\s*(?P<what>\w+)")
_MBED_PER_S = re.compile(r"^(?P<rate>[\d.]+)\s+(?P<what>[\w ]+?)/s")


@dataclass(frozen=True)
class BenchmarkEntry:
    line: int
    label: str  # as the log names it
    primitive: str  # the energy vocabulary's name
    amount: float  # bytes (bulk) or operations (count)
    seconds: float  # the measured time of `amount`

    @property
    def kind(self) -> str:
        return PRIMITIVE_KINDS[self.primitive]


@dataclass(frozen=True)
class BenchmarkLog:
    path: str
    format: str
    sha256: str
    clock_mhz: float | None  # the clock the log says it ran at, when it says
    entries: tuple[BenchmarkEntry, ...]
    skipped: tuple[str, ...]  # labels the model does not price


def read_benchmark_log(path: Path, format: str, clock_mhz: float | None = None) -> BenchmarkLog:
    """Read a benchmark program's output (``FORMATS``); ``DataError`` (exit 4) at
    ``file:line`` for a malformed number or an unknown pqm4 scheme, or when nothing in the
    file is a priced primitive."""
    if format not in FORMATS:
        raise DataError(f"{path}: unknown benchmark format {format!r} (use {', '.join(FORMATS)})")
    raw = read_user_file(path, "benchmark output", CONFIG_MAX_BYTES, "a text file")
    text = raw.decode("utf-8", errors="replace")
    reader = {"wolfcrypt": _wolfcrypt, "mbedtls": _mbedtls, "pqm4": _pqm4}[format]
    entries, skipped, found_clock = reader(str(path), text.splitlines(), clock_mhz)
    if not entries:
        raise DataError(
            f"{path}:1: no priced primitive in this {format} benchmark output (skipped: "
            f"{', '.join(skipped[:8]) or 'nothing recognised'})"
        )
    return BenchmarkLog(
        str(path), format, hashlib.sha256(raw).hexdigest(), clock_mhz or found_clock,
        tuple(entries), tuple(skipped),
    )  # fmt: skip


def _number(text: str, where: str, what: str) -> float:
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        raise DataError(f"{where}: {what} {text!r} is not a number") from None
    if not value > 0:
        raise DataError(f"{where}: {what} {text!r} must be positive")
    return value


def _wolfcrypt(
    path: str, lines: list[str], clock_mhz: float | None
) -> tuple[list[BenchmarkEntry], list[str], float | None]:
    entries, skipped, found = [], [], None
    for index, line in enumerate(lines, start=1):
        where = f"{path}:{index}"
        if (freq := _CPU_FREQ.search(line)) is not None:
            found = int(freq["hz"]) / 1e6
            continue
        bulk, ops = _WOLF_BULK.match(line), _WOLF_OPS.match(line)
        match = bulk or ops
        if match is None:
            continue
        label = " ".join(match["label"].replace("[", " ").replace("]", " ").split())
        primitive = _WOLFCRYPT.get(label)
        if primitive is None:
            skipped.append(label)
            continue
        seconds = _number(match["seconds"], where, "time")
        amount = (
            _number(bulk["amount"], where, "amount") * _UNITS[bulk["unit"]]
            if bulk is not None
            else _number(ops["ops"], where, "operations")  # type: ignore[index]
        )
        entries.append(BenchmarkEntry(index, label, primitive, amount, seconds))
    return entries, skipped, found


def _mbedtls(
    path: str, lines: list[str], clock_mhz: float | None
) -> tuple[list[BenchmarkEntry], list[str], float | None]:
    entries: list[BenchmarkEntry] = []
    skipped: list[str] = []
    for index, line in enumerate(lines, start=1):
        where = f"{path}:{index}"
        match = _MBED.match(line)
        if match is None:
            continue
        label, rest = match["label"].strip(), match["rest"].strip()
        if (rate := _MBED_RATE.match(rest)) is not None:
            primitive = _MBEDTLS_BULK.get(label)
            if primitive is None:
                skipped.append(label)
                continue
            per_second = _number(rate["rate"], where, "rate") * _UNITS[rate["unit"]]
            entries.append(BenchmarkEntry(index, label, primitive, per_second, 1.0))
            continue
        timed = _MBED_MS.match(rest)
        counted = _MBED_PER_S.match(rest) if timed is None else None
        if timed is None and counted is None:
            continue
        what = (timed or counted)["what"].strip().split()[-1]  # type: ignore[index]
        primitive = _MBEDTLS_ASYMMETRIC.get((label, what))
        if primitive is None:
            skipped.append(f"{label} {what}")
            continue
        if timed is not None:
            seconds = _number(timed["ms"], where, "time") / 1e3
        else:
            seconds = 1.0 / _number(counted["rate"], where, "rate")  # type: ignore[index]
        entries.append(BenchmarkEntry(index, f"{label} {what}", primitive, 1.0, seconds))
    return _split_pairs(entries), skipped, None


def _split_pairs(entries: list[BenchmarkEntry]) -> list[BenchmarkEntry]:
    """``…-keygen+derive`` (an ECDHE handshake) less its ``…-derive`` (the ECDH one) is the
    keygen; without the ECDH line the pair is dropped (it cannot be split)."""
    single = {e.primitive: e for e in entries if "+" not in e.primitive}
    found = [e for e in entries if "+" not in e.primitive]
    for pair in (e for e in entries if "+" in e.primitive):
        keygen, derive = pair.primitive.split("+")
        stem = keygen.rsplit("-", 1)[0]
        other = single.get(f"{stem}-{derive}")
        if other is not None and pair.seconds > other.seconds:
            found.append(
                BenchmarkEntry(pair.line, pair.label, keygen, 1.0, pair.seconds - other.seconds)
            )
    return found


def _pqm4(
    path: str, lines: list[str], clock_mhz: float | None
) -> tuple[list[BenchmarkEntry], list[str], float | None]:
    if clock_mhz is None:
        raise DataError(f"{path}:1: a pqm4 table counts cycles: give the clock (--clock MHz)")
    entries = []
    for index, line in enumerate(lines, start=1):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.lstrip().startswith("|") or len(cells) < 5 or set(cells[0]) <= set("-: "):
            continue
        scheme = cells[0].split("(")[0].strip().lower()
        if scheme == "scheme":
            continue
        primitives = _PQM4.get(scheme)
        if primitives is None:
            raise DataError(
                f"{path}:{index}: unknown primitive {scheme!r} (the model prices "
                f"{', '.join(_PQM4)})"
            )
        for cell, primitive in zip(cells[2:5], primitives, strict=True):
            if primitive is None or not cell:
                continue
            average = re.search(r"AVG:\s*([\d,]+)", cell)
            cycles = _number(average[1] if average else cell, f"{path}:{index}", "cycles")
            seconds = cycles / (clock_mhz * 1e6)
            entries.append(BenchmarkEntry(index, f"{scheme} {cells[1]}", primitive, 1.0, seconds))
    return entries, [], clock_mhz


@dataclass(frozen=True)
class PricedEntry:
    entry: BenchmarkEntry
    number: str  # the dotted name set: "<primitive>.per_operation" or ".cycles_per_byte"
    before: float
    after: float


def prices_from_log(
    profile: DeviceProfile, log: BenchmarkLog, version: str = ""
) -> tuple[DeviceProfile, list[PricedEntry], list[BenchmarkEntry]]:
    """``profile`` with each primitive the log times priced from it (status ``calibrated``,
    source naming the file's SHA-256 and line, range ± the width of a measured number: one
    benchmark run stands for the device), converted to the profile's clock with each
    primitive's clock-scaled share; the first entry of a primitive counts, later ones and
    primitives the profile does not price are returned apart."""
    if log.clock_mhz is None:
        raise DataError(f"{log.path}: the log does not say its clock: give --clock MHz")
    reference_hz = profile.cpu_clock_hz
    ratio = reference_hz / (log.clock_mhz * 1e6)
    primitives = dict(profile.primitives)
    priced: list[PricedEntry] = []
    unused: list[BenchmarkEntry] = []
    done: set[str] = set()
    width = DEFAULT_WIDTHS["measured"]
    for entry in log.entries:
        cost = primitives.get(entry.primitive)
        if cost is None or entry.primitive in done:
            unused.append(entry)
            continue
        done.add(entry.primitive)
        share = cost.clock_scaled_share.value if cost.clock_scaled_share is not None else 1.0
        at_reference_s = entry.seconds / (share * ratio + 1 - share) / entry.amount
        field, unit = ("cycles_per_byte", "cycles/B") if cost.kind == "bulk" else (
            "per_operation", "ms")  # fmt: skip
        value = at_reference_s * reference_hz if cost.kind == "bulk" else at_reference_s * 1e3
        old = getattr(cost, field)
        source = (
            f"calibrated by iotsecbench {version} calibrate --benchmark from {log.format} "
            f"output {Path(log.path).name} (sha256 {log.sha256[:16]}) line {entry.line} "
            f"'{entry.label}': {entry.seconds:.6g} s for {entry.amount:g} "
            f"{'B' if cost.kind == 'bulk' else 'operation(s)'} at {log.clock_mhz:g} MHz, "
            f"at the profile's {reference_hz / 1e6:g} MHz with clock-scaled share {share:g}; "
            f"was {old.value:g} ({old.status}: {old.source})"
        )
        new = Parameter(
            value, unit, source, "calibrated", value * (1 - width), value * (1 + width),
            f"one benchmark run standing for the device: ±{width:.0%}, a measured number's "
            "default (another build, library or board)",
        )  # fmt: skip
        primitives[entry.primitive] = replace(cost, **{field: new})
        priced.append(PricedEntry(entry, f"{entry.primitive}.{field}", old.value, value))
    return replace(profile, primitives=MappingProxyType(primitives)), priced, unused
