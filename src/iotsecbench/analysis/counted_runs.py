"""A counted configuration's figures over its runs (``run --target``): the device client's
counts stored with each ok run (``details_json.counted``), averaged per configuration here so
the report only says them (``report.summary``).

Pure: a runs frame in, typed records out. The mean over runs is what a counted figure is
quoted as: the firmware's counts hardly vary between runs (the same code on the same
messages), so no interval is drawn for them; their model range is the CPI's
(``analysis.model_range``), not the runs' spread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import pandas as pd

from iotsecbench.analysis.metrics import THROUGHPUT


@dataclass(frozen=True)
class Accelerated:
    """The emitter's current with the profile's crypto accelerator priced in: modelled on top
    of the software-only count, labelled with its kind."""

    current_ma: float
    kind: str
    speedups: dict[str, float]


@dataclass(frozen=True)
class CountedConnection:
    """The client instructions of a connection's set-up (from the first handshake mark to the
    CONNACK), mean of the runs: network-invariant, per group and per primitive family."""

    instructions: float
    groups: dict[str, float]  # in the order the connection went through them
    primitives: dict[str, float]

    def group_shares(self) -> list[tuple[str, float]]:
        return shares(self.groups, self.instructions)

    def primitive_shares(self) -> list[tuple[str, float]]:
        return shares(self.primitives, self.instructions)


@dataclass(frozen=True)
class CountedEmitter:
    """One configuration's emitter current counted on the target (instructions x CPI / clock)
    beside the priced one (host operations x the profile's prices), mean of its runs."""

    label: str
    target: str
    runs: int
    cpi: float
    counted_current_ma: float
    priced_current_ma: float | None  # None: the profile prices none of its operations
    accelerated: Accelerated | None
    key_exchange: dict[str, Any] | None  # a payload scheme's exchange, as the firmware counted it
    connection: CountedConnection | None = None  # its set-up, where the firmware counted one


@dataclass(frozen=True)
class CountedPerByte:
    """A counted saturating configuration's headline (the block-sizes study on the device):
    client instructions per payload byte and their parts, mean of its runs. The throughput is
    the emulator's, not a device's: QEMU runs at its own pace."""

    label: str
    target: str
    runs: int
    client_per_byte: float
    crypto_per_byte: float | None
    seal_per_byte: float | None
    open_per_byte: float | None  # the echo's open, where the run echoed
    throughput_kib_s: float | None
    emulated_instructions_per_s: float | None


def shares(counts: Mapping[str, float], total: float) -> list[tuple[str, float]]:
    """Each part's share of ``total``, largest first (ties in their order); none of no total."""
    if not total:
        return []
    return [(name, count / total) for name, count in sorted(counts.items(), key=lambda kv: -kv[1])]


def counted_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The ok runs whose emitter was the device client (``cost_method`` 'counted')."""
    if runs.empty or "cost_method" not in runs:
        return runs.iloc[:0]
    return runs[(runs["status"] == "ok") & (runs["cost_method"] == "counted")]


def emitters_over_runs(runs: pd.DataFrame) -> list[CountedEmitter]:
    """Per configuration with a counted emitter current, in the order the runs list them."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for label, counted in _counted_details(counted_runs(runs)):
        if counted.get("counted_current_emitter_ma") is not None:
            by_label.setdefault(label, []).append(counted)
    figures = []
    for label, rows in by_label.items():
        accelerated = [r["accelerated"] for r in rows if r.get("accelerated")]
        figures.append(
            CountedEmitter(
                label=label,
                target=rows[0]["target"],
                runs=len(rows),
                cpi=rows[0]["cpi"],
                counted_current_ma=fmean(r["counted_current_emitter_ma"] for r in rows),
                priced_current_ma=_mean(r.get("priced_current_emitter_ma") for r in rows),
                accelerated=Accelerated(
                    current_ma=fmean(a["current_emitter_ma"] for a in accelerated),
                    kind=accelerated[0]["kind"],
                    speedups=dict(accelerated[0]["speedups"]),
                )
                if accelerated
                else None,
                # The same on every run of a configuration, but for value-dependent paths.
                key_exchange=rows[0].get("key_exchange") or None,
                connection=_connection([r["connection"] for r in rows if r.get("connection")]),
            )
        )
    return figures


def per_byte_over_runs(runs: pd.DataFrame) -> list[CountedPerByte]:
    """Per counted saturating configuration, in the order the runs list them."""
    runs = counted_runs(runs)
    if "pacing" not in runs:
        return []
    runs = runs[runs["pacing"] == "saturating"]
    by_label: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    for (label, counted), throughput in zip(_counted_details(runs), runs[THROUGHPUT], strict=True):
        if counted.get("client_instructions_per_byte") is not None:
            by_label.setdefault(label, []).append((counted, throughput))
    figures = []
    for label, rows in by_label.items():
        counts = [counted for counted, _ in rows]

        def mean(key: str, counts: list[dict[str, Any]] = counts) -> float | None:
            return _mean(c.get(key) for c in counts)

        figures.append(
            CountedPerByte(
                label=label,
                target=counts[0]["target"],
                runs=len(rows),
                client_per_byte=fmean(c["client_instructions_per_byte"] for c in counts),
                crypto_per_byte=mean("crypto_instructions_per_byte"),
                seal_per_byte=mean("seal_instructions_per_byte"),
                open_per_byte=mean("open_instructions_per_byte"),
                throughput_kib_s=_mean(t for _, t in rows),
                emulated_instructions_per_s=mean("emulated_instructions_per_s"),
            )
        )
    return figures


def _connection(counts: list[dict[str, Any]]) -> CountedConnection | None:
    """The mean of the runs' connection counts (a group or family a run lacks counts 0)."""
    if not counts:
        return None

    def mean_of(key: str) -> dict[str, float]:
        names = list(dict.fromkeys(name for count in counts for name in count[key]))
        return {name: fmean(count[key].get(name, 0) for count in counts) for name in names}

    return CountedConnection(
        instructions=fmean(count["instructions"] for count in counts),
        groups=mean_of("groups"),
        primitives=mean_of("primitives"),
    )


def _counted_details(runs: pd.DataFrame) -> Iterable[tuple[str, dict[str, Any]]]:
    """Each run's label and its counted figures ({} where it stored none), row for row."""
    for label, details in zip(runs["cell_label"], runs["details_json"], strict=True):
        yield str(label), json.loads(details or "{}").get("counted") or {}


def _mean(values: Iterable[Any]) -> float | None:
    """The mean of the values present (None and NaN are absent), or None."""
    present = [float(v) for v in values if v is not None and pd.notna(v)]
    return fmean(present) if present else None
