"""``bench crypto``: what each payload scheme costs per message and per byte, measured fairly.

Method, after eBACS/SUPERCOP (Bernstein & Lange) and pyperf:

* **warm-up** calls first (key schedules, caches, lazy imports), never measured;
* each *sample* times a **batch** of calls with ``perf_counter_ns`` and divides by the batch
  length, the batch being long enough (``MIN_BATCH_NS``) that the clock's resolution and the
  timer call itself vanish; **many samples** (``repetitions``) per case;
* the **median and quartiles** of the samples are reported (robust to interrupts and frequency
  changes), for seal and for open, per message and per byte, with the throughput;
* the harness's own per-call cost is measured the same way with the identity scheme ``none``
  (framing bypassed, nothing computed) and shown beside every figure: it is the floor any
  Python-called scheme pays;
* messages are opened in sequence by one opener, exactly as the receiver does (the replay
  window forbids opening one message twice, so every open sees a fresh message);
* key establishment is timed separately (both sides, in process, no network), per key
  establishment; message expansion is exact (``expected_overhead_bytes``); peak memory is the
  Python heap peak (``tracemalloc``) of one seal + open, which does not see allocations made
  inside C libraries.

Every row records the implementation's provenance (library, version, native or pure Python),
so a ranking never silently compares C with Python.

With a *target* (``--target rv32imc|cortex-m4``) the same schemes are also counted on a virtual
microcontroller (``vmcu``: the cipher cross-compiled for the device's instruction set, run
under QEMU with instruction counting): instructions per message and per byte, code size, static
RAM, stack and heap, beside the host's timings of the same sizes. Counts are exact and
repeatable, so they need no repetitions; cycles are an estimate (docs/virtual-mcu.md).
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iotsecbench.energy.profile import load_profile
from iotsecbench.errors import SpecError
from iotsecbench.measure.host import host_facts, software_versions
from iotsecbench.security.key_establishment import (
    EmitterKeyExchange,
    ReceiverKeyExchange,
    in_memory_pinned_keys,
)
from iotsecbench.security.schemes import (
    DirectionKeys,
    PayloadScheme,
    cipher_names,
    get_scheme,
    key_establishment_names,
    scheme_names,
)
from iotsecbench.vmcu import (
    LinkedLibrary,
    OperationCount,
    SchemeCount,
    Target,
    count_operations,
    count_scheme,
    target_cipher,
    target_facts,
)

FORMAT_VERSION = 2  # 2: "target", "target_results" and "target_operations" (virtual-MCU
# counts of the schemes and of the public-key operations) when counted
# 1: first format (one record per scheme x payload size)
DEFAULT_SIZES = (16, 51, 64, 242, 256, 1024, 1460, 4096, 5120, 10240, 16384)
MIN_BATCH_NS = 200_000  # a batch lasts at least 0.2 ms: timer resolution and cost vanish
DEFAULT_REPETITIONS = 31
DEFAULT_WARMUP = 10
CASE_BUDGET_NS = 400_000_000  # at most ~0.4 s of samples per (scheme, size, operation)
MIN_REPETITIONS = 5
PSK = b"\x11" * 32  # benchmark-only key material, never used to protect anything


@dataclass(frozen=True)
class Summary:
    """Median and quartiles of one case's per-call samples, in nanoseconds."""

    median_ns: float
    q1_ns: float
    q3_ns: float
    samples: int  # number of batches
    batch: int  # calls per batch

    @classmethod
    def of(cls, values: Sequence[float], batch: int) -> Summary:
        if len(values) >= 2:
            q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
        else:
            q1 = q3 = values[0]
        return cls(statistics.median(values), q1, q3, len(values), batch)


@dataclass(frozen=True)
class CryptoResult:
    """One scheme at one payload size."""

    scheme: str
    cipher: str
    key_establishment: str | None
    key_bits: int
    payload_bytes: int
    seal: Summary  # ns per message
    open: Summary  # ns per message
    harness_ns: float  # the identity scheme's median per call at this size (same loop)
    expansion_bytes: int  # wire bytes - payload bytes
    peak_heap_bytes: int  # tracemalloc peak of one seal + open (Python heap only)
    key_establishment_ms: float | None  # median full exchange, both sides, in process
    provenance: dict[str, Any]

    @property
    def seal_ns_per_byte(self) -> float:
        return self.seal.median_ns / max(self.payload_bytes, 1)

    @property
    def open_ns_per_byte(self) -> float:
        return self.open.median_ns / max(self.payload_bytes, 1)

    @property
    def seal_mb_per_s(self) -> float:
        return self.payload_bytes / self.seal.median_ns * 1e3  # bytes/ns -> MB/s

    @property
    def open_mb_per_s(self) -> float:
        return self.payload_bytes / self.open.median_ns * 1e3

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record.update(
            seal_ns_per_byte=self.seal_ns_per_byte,
            open_ns_per_byte=self.open_ns_per_byte,
            seal_mb_per_s=self.seal_mb_per_s,
            open_mb_per_s=self.open_mb_per_s,
        )
        return record


@dataclass
class CryptoBenchmark:
    """A whole run: the environment, then one result per scheme and size."""

    results: list[CryptoResult] = field(default_factory=list)
    key_establishment_ns: dict[str, Summary] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    target: dict[str, Any] | None = None  # the virtual MCU's facts, when counted on one
    target_results: list[SchemeCount] = field(default_factory=list)
    target_operations: list[OperationCount] = field(default_factory=list)

    def to_json(self) -> str:
        document: dict[str, Any] = {
            "format_version": FORMAT_VERSION,
            "environment": self.environment,
            "key_establishment_ns": {k: asdict(v) for k, v in self.key_establishment_ns.items()},
            "results": [result.to_dict() for result in self.results],
        }
        if self.target is not None:
            document["target"] = self.target
            document["target_results"] = [count.to_dict() for count in self.target_results]
            document["target_operations"] = [op.to_dict() for op in self.target_operations]
        return json.dumps(document, indent=2)

    def to_csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(CSV_COLUMNS)
        for r in self.results:
            writer.writerow(
                [
                    r.scheme, r.cipher, r.key_establishment or "", r.key_bits, r.payload_bytes,
                    f"{r.seal.median_ns:.1f}", f"{r.seal.q1_ns:.1f}", f"{r.seal.q3_ns:.1f}",
                    f"{r.open.median_ns:.1f}", f"{r.open.q1_ns:.1f}", f"{r.open.q3_ns:.1f}",
                    f"{r.seal_ns_per_byte:.3f}", f"{r.open_ns_per_byte:.3f}",
                    f"{r.seal_mb_per_s:.2f}", f"{r.open_mb_per_s:.2f}", f"{r.harness_ns:.1f}",
                    r.expansion_bytes, r.peak_heap_bytes,
                    "" if r.key_establishment_ms is None else f"{r.key_establishment_ms:.3f}",
                    r.provenance["library"], r.provenance["version"], r.provenance["native"],
                ]
            )  # fmt: skip
        return buffer.getvalue()


CSV_COLUMNS = (
    "scheme", "cipher", "key_establishment", "key_bits", "payload_bytes",
    "seal_median_ns", "seal_q1_ns", "seal_q3_ns", "open_median_ns", "open_q1_ns", "open_q3_ns",
    "seal_ns_per_byte", "open_ns_per_byte", "seal_mb_per_s", "open_mb_per_s", "harness_ns",
    "expansion_bytes", "peak_heap_bytes", "key_establishment_ms",
    "library", "version", "native",
)  # fmt: skip


def resolve_schemes(names: Iterable[str] | None) -> list[str]:
    """Scheme names from user input: full names, or cipher tokens (measured under ``psk-``,
    since a cipher's per-message cost does not depend on how its keys were agreed)."""
    if not names:
        return [f"psk-{cipher}" for cipher in cipher_names()]
    ciphers, known = set(cipher_names()), set(scheme_names())
    resolved = []
    for name in names:
        name = name.strip()
        if name in ciphers:
            name = f"psk-{name}"
        get_scheme(name)  # SpecError with a suggestion when unknown
        if name not in known or name == "none":
            continue
        resolved.append(name)
    return resolved


def _keys(scheme: PayloadScheme) -> DirectionKeys | None:
    return None if scheme.key_establishment is None else scheme.random_keys(b"benchSID")


def _calibrate(call: Callable[[], object]) -> tuple[int, int]:
    """(calls per batch, estimated ns per call) so that a batch lasts ``MIN_BATCH_NS``."""
    batch = 1
    while True:
        start = time.perf_counter_ns()
        for _ in range(batch):
            call()
        elapsed = time.perf_counter_ns() - start
        if elapsed >= MIN_BATCH_NS or batch >= 1 << 20:
            return batch, max(1, elapsed // batch)
        batch *= 2 if elapsed * 4 > MIN_BATCH_NS else 8


def time_seal(
    seal: Callable[[bytes], bytes], plaintext: bytes, batch: int, count: int
) -> list[float]:
    """``count`` samples, each the mean of ``batch`` back-to-back seals (ns per call)."""
    values = []
    loop = range(batch)
    for _ in range(count):
        start = time.perf_counter_ns()
        for _ in loop:
            seal(plaintext)
        values.append((time.perf_counter_ns() - start) / batch)
    return values


def _time_open(open_: Callable[[bytes], Any], messages: list[bytes], batch: int) -> list[float]:
    """One sample per ``batch`` consecutive messages, opened in order (ns per call)."""
    values = []
    for index in range(0, len(messages) - batch + 1, batch):
        chunk = messages[index : index + batch]
        start = time.perf_counter_ns()
        for message in chunk:
            open_(message)
        values.append((time.perf_counter_ns() - start) / batch)
    return values


def measure_case(
    scheme: PayloadScheme, size: int, repetitions: int, warmup: int
) -> tuple[Summary, Summary, int]:
    """(seal summary, open summary, peak heap bytes) for one scheme at one payload size."""
    keys = _keys(scheme)
    plaintext = os.urandom(size)
    sealer = scheme.sealer(keys)
    for _ in range(warmup):
        sealer.seal(plaintext)
    batch, per_call_ns = _calibrate(lambda: sealer.seal(plaintext))
    repetitions = max(MIN_REPETITIONS, min(repetitions, CASE_BUDGET_NS // (per_call_ns * batch)))
    seal_values = time_seal(sealer.seal, plaintext, batch, repetitions)

    # Open: a fresh sequence of messages from a fresh sealer, opened in order by one opener,
    # as the receiver does (the replay window refuses to open a message twice).
    sealer, opener = scheme.sealer(keys), scheme.opener(keys)
    for _ in range(warmup):
        opener.open(sealer.seal(plaintext))
    messages = [sealer.seal(plaintext) for _ in range(batch * repetitions)]
    open_values = _time_open(opener.open, messages, batch)
    del messages

    fresh_sealer, fresh_opener = scheme.sealer(keys), scheme.opener(keys)
    tracemalloc.start()
    try:
        fresh_opener.open(fresh_sealer.seal(plaintext))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return Summary.of(seal_values, batch), Summary.of(open_values, batch), peak


def measure_key_establishment(kx: str, repetitions: int) -> Summary:
    """A full exchange (both sides, in process, no network) for ``kx``, in nanoseconds. A
    signed one's keys are made once, outside the timing: the runner provisions them per run,
    the device does not make them per session."""
    name = f"{kx}-aes128-gcm"
    pinned = in_memory_pinned_keys(name)

    def once() -> float:
        start = time.perf_counter_ns()
        receiver = ReceiverKeyExchange(name, PSK, pinned.get("receiver"))
        emitter = EmitterKeyExchange(name, PSK, pinned.get("emitter"))
        ready, _ = receiver.on_emitter_message(emitter.on_receiver_hello(receiver.hello()))
        emitter.on_ready(ready)
        return float(time.perf_counter_ns() - start)

    once()  # warm-up
    first = once()
    count = max(3, min(repetitions, int(2e9 / max(first, 1.0))))  # about 2 s at most
    return Summary.of([first] + [once() for _ in range(count - 1)], 1)


def device_facts(target: Target) -> dict[str, Any]:
    """The target's facts, with the CPI and clock its device profile sources (the "≈ cycles"
    and "≈ ms" columns: models, never measurements)."""
    device = load_profile(target.profile)
    if "cpi" not in device.parameters:
        raise SpecError(f"device profile {target.profile} has no cpi parameter for {target.name}")
    cpi, clock = device.parameters["cpi"], device.parameters["cpu_clock"]
    return {
        **target_facts(target),
        "cpi": cpi.value,
        "cpi_status": cpi.status,
        "cpi_basis": cpi.source,
        "clock_hz": device.cpu_clock_hz,
        "clock_source": clock.source,
    }


def environment() -> dict[str, Any]:
    """What the figures depend on: host, library builds (``measure.host``) and the clock."""
    return {
        **host_facts(),
        **software_versions(),
        "clock": "time.perf_counter_ns",
        "min_batch_ns": MIN_BATCH_NS,
    }


def run_crypto_benchmark(
    schemes: Sequence[str] | None = None,
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    repetitions: int = DEFAULT_REPETITIONS,
    warmup: int = DEFAULT_WARMUP,
    key_establishments: Sequence[str] | None = None,
    on_result: Callable[[CryptoResult], None] | None = None,
    target: Target | None = None,
    public_key: Sequence[str] = (),
    on_count: Callable[[SchemeCount | OperationCount], None] | None = None,
    linked: LinkedLibrary | None = None,
) -> CryptoBenchmark:
    """Measure every scheme at every size; ``on_result`` sees each result as it is made. With
    ``target``, count each scheme there too, and the ``public_key`` families' operations
    (``on_count`` sees each count); ``linked``: the ciphers' library as that build of it (the
    device client's, ``vmcu.client.primitives_library``)."""
    names = resolve_schemes(schemes)
    bench = CryptoBenchmark(environment=environment())
    if target is not None:
        for name in names:
            target_cipher(name)  # a cipher the target cannot run is refused before any work
        bench.target = device_facts(target)
        for name in names:
            bench.target_results += count_scheme(target, name, sizes, on_count, linked)
        bench.target_operations = count_operations(target, public_key, on_count=on_count)
    wanted_kx = (
        list(key_establishments)
        if key_establishments is not None
        else sorted({get_scheme(n).key_establishment or "" for n in names} - {""})
    )
    for kx in wanted_kx:
        if kx not in key_establishment_names():
            raise ValueError(f"unknown key establishment {kx!r}")
        bench.key_establishment_ns[kx] = measure_key_establishment(kx, repetitions)
    identity = get_scheme("none")
    for size in sizes:
        harness, _, _ = measure_case(identity, size, repetitions, warmup)
        for name in names:
            scheme = get_scheme(name)
            seal, open_, peak = measure_case(scheme, size, repetitions, warmup)
            kx_summary = bench.key_establishment_ns.get(scheme.key_establishment or "")
            result = CryptoResult(
                scheme=name,
                cipher=scheme.cipher,
                key_establishment=scheme.key_establishment,
                key_bits=scheme.key_bits,
                payload_bytes=size,
                seal=seal,
                open=open_,
                harness_ns=harness.median_ns,
                expansion_bytes=scheme.expected_overhead_bytes(size),
                peak_heap_bytes=peak,
                key_establishment_ms=kx_summary.median_ns / 1e6 if kx_summary else None,
                provenance=scheme.provenance.to_dict(),
            )
            bench.results.append(result)
            if on_result is not None:
                on_result(result)
    return bench


def plot_cost_per_byte(bench: CryptoBenchmark, path: Path) -> Path:
    """Seal cost per byte against payload size, log-log, one line per scheme (native solid,
    pure Python dashed), with the harness floor per byte in grey."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(9, 6))
    by_scheme: dict[str, list[CryptoResult]] = {}
    for result in bench.results:
        by_scheme.setdefault(result.scheme, []).append(result)
    for name, results in by_scheme.items():
        results.sort(key=lambda r: r.payload_bytes)
        style = "-" if results[0].provenance["native"] else "--"
        axis.plot(
            [r.payload_bytes for r in results],
            [r.seal_ns_per_byte for r in results],
            style,
            marker="o",
            markersize=3,
            label=results[0].cipher or name,
        )
    floor = sorted({(r.payload_bytes, r.harness_ns) for r in bench.results})
    axis.plot(
        [s for s, _ in floor], [h / s for s, h in floor], ":", color="grey", label="harness floor"
    )
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("payload size (bytes)")
    axis.set_ylabel("seal cost (ns per byte, median) — measured")
    axis.set_title("Payload schemes: seal cost per byte vs size (dashed: pure Python)")
    axis.legend(fontsize=7, ncol=2)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
