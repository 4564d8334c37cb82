"""The per-configuration summary printed at the end of ``run`` (and used by reports): the
stored tables read once and handed to the analysis, which derives every value
(``analysis.per_run``; each column a metric of ``analysis.metrics``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from iotsecbench.analysis.metrics import METRICS, THROUGHPUT, Registry
from iotsecbench.analysis.per_run import TABLES, empty_frames, per_run_values, summarise_runs
from iotsecbench.spec.load import stored_spec_data
from iotsecbench.store import read


def summary_frames(
    results_dir: Path, metrics: Registry = METRICS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stored tables read once, for both frames the report uses: one row per ok run
    (``per_run``) and one per configuration (the summary), a column per metric of
    ``metrics``."""
    with read.reading(results_dir):
        runs = read.runs_frame(results_dir)
        runs = runs[runs["status"] == "ok"]
        if runs.empty:
            return empty_frames(metrics)
        # A fleet's per-device figures are its device 0's (its fleet figures are in `runs`).
        tables = {name: read.table(results_dir, name, first_device=True) for name in TABLES}
        # Every connection's phases: the agents' and a handshake benchmark's, in one shape.
        tables["handshakes"] = read.handshake_phases(results_dir, first_device=True)
        latency = read.latency_frame(results_dir)
    per_run = per_run_values(runs, tables, latency, metrics)
    # Configurations in the order the spec lists them (runs themselves are shuffled).
    order = (stored_spec_data(results_dir) or {}).get("configurations", [])
    return per_run, summarise_runs(runs, tables["messages"], latency, per_run, order, metrics)


def device_target(runs: pd.DataFrame) -> str | None:
    """The virtual MCU whose device client was the emitter of these runs (``run --target``:
    ``cost_method`` 'counted' with the firmware's figures in ``details_json.counted``), or
    None: then every figure is measured on this host or modelled."""
    if runs.empty or "cost_method" not in runs:
        return None
    counted = runs.loc[runs["cost_method"] == "counted", "details_json"]
    targets = {json.loads(text or "{}").get("counted", {}).get("target") for text in counted}
    targets.discard(None)
    return min(targets) if targets else None


def target_of(results_dir: Path) -> str | None:
    """``device_target`` of the runs stored in ``results_dir``."""
    return device_target(read.runs_frame(results_dir))


def counted_emitter_lines(results_dir: Path) -> list[str]:
    """For configurations whose emitter was the device client on a virtual MCU (``run
    --target``): the emitter's current counted on the target beside the priced one (the same
    samples, host operations x the profile's prices), and what the tables' emitter columns
    then mean."""
    runs = read.runs_frame(results_dir)
    if runs.empty or "cost_method" not in runs:
        return []
    runs = runs[(runs["status"] == "ok") & (runs["cost_method"] == "counted")]
    figures: dict[str, list[dict]] = {}
    for label, details in zip(runs["cell_label"], runs["details_json"], strict=True):
        counted = json.loads(details or "{}").get("counted")
        if counted and counted.get("counted_current_emitter_ma") is not None:
            figures.setdefault(str(label), []).append(counted)
    lines = []
    saturating = runs[runs["pacing"] == "saturating"] if "pacing" in runs else runs.iloc[:0]
    lines += _per_byte_lines(saturating)
    for label, rows in figures.items():
        target = rows[0]["target"]
        counted_ma = sum(r["counted_current_emitter_ma"] for r in rows) / len(rows)
        priced = [r.get("priced_current_emitter_ma") for r in rows]
        priced = [value for value in priced if value is not None]
        priced_text = f"{sum(priced) / len(priced):.2f} mA from prices" if priced else "no price"
        lines.append(
            f"{label}: emitter current {counted_ma:.2f} mA counted on {target} "
            f"(instructions x CPI {rows[0]['cpi']:g} / clock) against {priced_text} "
            f"(operations x the profile's prices), mean of {len(rows)} run(s)"
        )
        accelerated = [r["accelerated"] for r in rows if r.get("accelerated")]
        if accelerated:  # the profile prices an accelerator: that figure apart, labelled so
            current = sum(a["current_emitter_ma"] for a in accelerated) / len(accelerated)
            speedups = ", ".join(f"{k} x{v:g}" for k, v in accelerated[0]["speedups"].items())
            lines.append(
                f"{label}: emitter current {current:.2f} mA {accelerated[0]['kind']} "
                f"(speed-up {speedups}; the {counted_ma:.2f} mA above is counted on {target}, "
                "software only)"
            )
        exchange = rows[0].get("key_exchange")
        if exchange:  # the same on every run of a configuration, but for value-dependent paths
            lines.append(key_exchange_line(label, target, exchange))
    if lines:
        lines.append(
            "with --target the emitter's CPU, current and charge above are counted on the "
            "target (device time at the profile's clock), its memory is the firmware's (heap "
            "peaks, flash and static RAM of the image); the receiver's are measured on this host; "
            "a counted column's model range is the CPI's (the count × each draw of the CPI) "
            "with the profile's currents"
        )
    return lines


def terminal_summary(results_dir: Path) -> tuple[pd.DataFrame, str | None, list[str]]:
    """What ``run`` prints after its runs: ``summarise``, ``target_of`` and
    ``counted_emitter_lines``, read through one connection."""
    with read.reading(results_dir):
        return summarise(results_dir), target_of(results_dir), counted_emitter_lines(results_dir)


def key_exchange_line(label: str, target: str, exchange: dict) -> str:
    """A payload scheme's key exchange counted on the device: its group's instructions, the
    primitive families' share, its stack and heap peaks."""
    total = exchange["instructions"]
    shares = ", ".join(
        f"{family} {count / total:.0%}"
        for family, count in sorted(exchange["primitives"].items(), key=lambda kv: -kv[1])
        if total and count
    )
    memory = [
        f"{what} peak {value:,} B"
        for what, value in (
            ("stack", exchange.get("stack_high_water_bytes")),
            ("heap", exchange.get("heap_peak_bytes")),
        )
        if value is not None
    ]
    return (
        f"{label}: key exchange {total / 1e6:.2f} M instructions counted on {target} "
        f"({shares or 'no primitive'}); {', '.join(memory) or 'no memory figure'}"
    )


def _per_byte_lines(runs: pd.DataFrame) -> list[str]:
    """A counted saturating run's headline (the block-sizes study on the device): its client
    instructions per payload byte, counted, and its throughput said for what it is — QEMU's,
    not the device's (emulation runs at its own pace, not a device's clock)."""
    by_label: dict[str, list[tuple[dict, float]]] = {}
    for label, details, throughput in zip(
        runs["cell_label"], runs["details_json"], runs[THROUGHPUT], strict=True
    ):
        counted = json.loads(details or "{}").get("counted") or {}
        if counted.get("client_instructions_per_byte") is not None:
            by_label.setdefault(str(label), []).append((counted, throughput))
    lines = []
    for label, rows in by_label.items():

        def mean(key: str, rows: list = rows) -> float | None:
            values = [r[key] for r, _ in rows if r.get(key) is not None]
            return sum(values) / len(values) if values else None

        parts = [f"crypto {mean('crypto_instructions_per_byte'):,.1f}"]
        for key, name in (("seal", "seal"), ("open", "echo's open")):
            value = mean(f"{key}_instructions_per_byte")
            if value:
                parts.append(f"{name} {value:,.1f}")
        throughputs = [t for _, t in rows if t is not None and pd.notna(t)]
        emulated = mean("emulated_instructions_per_s")
        speed = f", QEMU running {emulated / 1e6:,.0f} M counted instructions/s" if emulated else ""
        rate = (
            f"; its throughput ({sum(throughputs) / len(throughputs):,.1f} KiB/s) is the "
            f"emulator's{speed}, not the device's"
            if throughputs
            else ""
        )
        lines.append(
            f"{label}: {mean('client_instructions_per_byte'):,.1f} client instructions per payload "
            f"byte counted on {rows[0][0]['target']} ({', '.join(parts)}){rate}, mean of "
            f"{len(rows)} run(s)"
        )
    return lines


def summarise(results_dir: Path) -> pd.DataFrame:
    """One row per cell label (ok runs only), a column per summary metric plus warnings."""
    return summary_frames(results_dir)[1]
