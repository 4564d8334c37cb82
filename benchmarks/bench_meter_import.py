"""Importing a long Joulescope recording: write a ``.jls`` of SECONDS at RATE with pyjls
(current, voltage and one GPI, as a JS220 records them), then time ``meters.read_trace`` on
it and report its peak resident memory (the goal of the "measured energy" issue: a 10-minute
1 MHz file, 600 M samples, in under 60 s and under 500 MB).

    .venv/bin/python benchmarks/bench_meter_import.py [SECONDS] [RATE] [DIR]

The reference in the same run is a plain numpy pass over the same file's current signal
(pyjls ``fsr`` in the same blocks, summed), so the ratio says what the reduction costs on top
of reading, whatever the machine's speed that minute.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write(path: Path, seconds: int, rate: int) -> None:
    from pyjls import DataType, SignalType, Writer

    chunk = rate  # one second at a time: the writer never holds the file either
    generator = np.random.default_rng(0)
    with Writer(str(path)) as writer:
        writer.source_def(source_id=1, name="JS220", vendor="Jetperch", model="JS220",
                          version="1.0", serial_number="bench")  # fmt: skip
        writer.signal_def(signal_id=1, source_id=1, sample_rate=rate, name="current", units="A")
        writer.signal_def(signal_id=2, source_id=1, sample_rate=rate, name="voltage", units="V")
        writer.signal_def(
            signal_id=3, source_id=1, sample_rate=rate, name="gpi[0]", units="",
            signal_type=SignalType.FSR, data_type=DataType.U1,
        )  # fmt: skip
        for second in range(seconds):
            level = 0.030 + 0.020 * (second % 2)
            current = level + generator.normal(0, 0.002, chunk)
            writer.fsr_f32(1, second * chunk, current.astype(np.float32))
            writer.fsr_f32(2, second * chunk, np.full(chunk, 3.3, dtype=np.float32))
            bits = np.full(chunk, second % 2, dtype=np.uint8)
            writer.fsr(3, second * chunk, np.packbits(bits, bitorder="little"))


def reference(path: Path, block_rows: int) -> float:
    from pyjls import Reader

    reader = Reader(str(path))
    signal = next(s for s in reader.signals.values() if s.name == "current")
    total = 0.0
    for start in range(0, signal.length, block_rows):
        total += float(
            reader.fsr(signal.signal_id, start, min(block_rows, signal.length - start)).sum()
        )
    reader.close()
    return total


def main() -> None:
    from iotsecbench.meters import BLOCK_ROWS, read_trace

    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    rate = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    directory = Path(sys.argv[3]) if len(sys.argv) > 3 else Path(tempfile.mkdtemp())
    path = directory / f"bench-{seconds}s-{rate}Hz.jls"
    if not path.exists():
        began = time.perf_counter()
        write(path, seconds, rate)
        print(
            f"wrote {path} ({path.stat().st_size / 2**30:.2f} GiB) "
            f"in {time.perf_counter() - began:.1f} s"
        )
    began = time.perf_counter()
    reference(path, BLOCK_ROWS)
    plain = time.perf_counter() - began
    began = time.perf_counter()
    trace = read_trace(path)
    reduced = time.perf_counter() - began
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{trace.samples:,} samples, mean {trace.mean_current_ma:.3f} mA, {len(trace.edges)} edges"
    )
    print(
        f"read_trace {reduced:.1f} s; plain read of the current {plain:.1f} s; "
        f"ratio {reduced / plain:.2f}"
    )
    print(f"peak RSS of this process {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
