"""Synthetic study-like CSVs with planted properties, for tests and benchmarks.

AR(1) current around a per-configuration level, a handshake transient at the start of each
run, optional non-stationarity, and latencies with AR(1) noise. Importable (``make_frames``)
and runnable (``python generate.py OUTDIR``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

LEVELS_MA = {"plain": 100.0, "tls1.2": 104.0, "ecdh-p256-aes128-cbc": 102.0}
LATENCY_MS = {"plain": 20.0, "tls1.2": 23.0, "ecdh-p256-aes128-cbc": 21.5}


def ar1(n: int, phi: float, sd: float, rng: np.random.Generator) -> np.ndarray:
    """Stationary AR(1) with marginal SD ``sd``."""
    innovations = rng.normal(scale=sd * np.sqrt(1 - phi**2), size=n)
    x = np.empty(n)
    x[0] = rng.normal(scale=sd)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + innovations[t]
    return x


def make_frames(
    seed: int = 0,
    runs: int = 5,
    seconds: int = 600,
    rate_hz: int = 1,
    messages: int = 6000,
    phi: float = 0.7,
    sd: float = 2.0,
    levels: dict[str, float] | None = None,
    latency_ms: dict[str, float] | None = None,
    transient_s: int = 8,
    transient_extra_ma: float = 40.0,
    drifting: str | None = None,
    drift_ma: float = 15.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Current and latency frames; ``drifting`` names a configuration given a linear trend."""
    rng = np.random.default_rng(seed)
    levels = levels or LEVELS_MA
    latency_ms = latency_ms or LATENCY_MS
    rows = []
    for configuration, level in levels.items():
        for device, offset in (("emitter", 0.0), ("receiver", -10.0)):
            for run in range(1, runs + 1):
                n = seconds * rate_hz
                x = level + offset + ar1(n, phi ** (1 / rate_hz), sd, rng)
                x[: transient_s * rate_hz] += transient_extra_ma
                if configuration == drifting:
                    x += np.linspace(0.0, drift_ma, n)
                rows.append(
                    pd.DataFrame(
                        {
                            "configuration": configuration,
                            "device": device,
                            "run": run,
                            "time_s": np.arange(n) / rate_hz,
                            "current_ma": x,
                        }
                    )
                )
    latency_rows = []
    for configuration, mean in latency_ms.items():
        for run in range(1, runs + 1):
            y = mean + ar1(messages, 0.5, 2.0, rng)
            latency_rows.append(
                pd.DataFrame(
                    {
                        "configuration": configuration,
                        "run": run,
                        "seq": np.arange(messages),
                        "latency_ms": y,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True), pd.concat(latency_rows, ignore_index=True)


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    current, latency = make_frames()
    current.to_csv(out / "current.csv", index=False)
    latency.to_csv(out / "latency.csv", index=False)
