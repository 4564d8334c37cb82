"""The per-configuration summary printed at the end of ``run`` (and used by reports): the
stored tables read once and handed to the analysis, which derives every value
(``analysis.per_run``; each column a metric of ``analysis.metrics``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from iotsecbench.analysis.counted_runs import (
    CountedConnection,
    CountedPerByte,
    emitters_over_runs,
    per_byte_over_runs,
    shares,
)
from iotsecbench.analysis.metrics import METRICS, Registry
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
    then mean. The figures are the analysis' (``analysis.counted_runs``)."""
    runs = read.runs_frame(results_dir)
    lines = [_per_byte_line(figure) for figure in per_byte_over_runs(runs)]
    for figure in emitters_over_runs(runs):
        label, target = figure.label, figure.target
        priced = (
            f"{figure.priced_current_ma:.2f} mA from prices"
            if figure.priced_current_ma is not None
            else "no price"
        )
        lines.append(
            f"{label}: emitter current {figure.counted_current_ma:.2f} mA counted on {target} "
            f"(instructions x CPI {figure.cpi:g} / clock) against {priced} "
            f"(operations x the profile's prices), mean of {figure.runs} run(s)"
        )
        if figure.accelerated:  # the profile prices an accelerator: that figure apart, labelled
            accelerated = figure.accelerated
            speedups = ", ".join(f"{k} x{v:g}" for k, v in accelerated.speedups.items())
            lines.append(
                f"{label}: emitter current {accelerated.current_ma:.2f} mA {accelerated.kind} "
                f"(speed-up {speedups}; the {figure.counted_current_ma:.2f} mA above is counted "
                f"on {target}, software only)"
            )
        if figure.connection:
            lines.append(connection_line(label, target, figure.connection))
        if figure.key_exchange:
            lines.append(key_exchange_line(label, target, figure.key_exchange))
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


def connection_line(label: str, target: str, connection: CountedConnection) -> str:
    """A device connection's set-up counted: its instructions, the groups that cost most and
    the primitive families' shares."""

    def said(parts: list[tuple[str, float]], at_most: int) -> str:
        # a share that rounds to 0 % says nothing
        return ", ".join(f"{name} {share:.0%}" for name, share in parts[:at_most] if share >= 0.005)

    groups = said(connection.group_shares(), 3) or "none"
    primitives = said(connection.primitive_shares(), 6) or "none"
    return (
        f"{label}: connection set-up {_instructions(connection.instructions)} counted on "
        f"{target}, network-invariant (largest groups {groups}; primitives {primitives})"
    )


def key_exchange_line(label: str, target: str, exchange: dict) -> str:
    """A payload scheme's key exchange counted on the device: its group's instructions, the
    primitive families' share, its stack and heap peaks."""
    total = exchange["instructions"]
    primitives = ", ".join(
        f"{family} {share:.0%}" for family, share in shares(exchange["primitives"], total) if share
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
        f"{label}: key exchange {_instructions(total)} counted on {target} "
        f"({primitives or 'no primitive'}); {', '.join(memory) or 'no memory figure'}"
    )


def _instructions(count: float) -> str:
    """'46.96 M instructions', or a plain connection's '4,213 instructions'."""
    return f"{count / 1e6:.2f} M instructions" if count >= 1e6 else f"{count:,.0f} instructions"


def _per_byte_line(figure: CountedPerByte) -> str:
    """A counted saturating configuration's headline: its client instructions per payload
    byte, counted, and its throughput said for what it is — QEMU's, not the device's."""
    # Crypto always (0.0 says a plain run spends none); seal and open where the run had them.
    parts = [f"crypto {figure.crypto_per_byte:,.1f}"] if figure.crypto_per_byte is not None else []
    for value, name in ((figure.seal_per_byte, "seal"), (figure.open_per_byte, "echo's open")):
        if value:
            parts.append(f"{name} {value:,.1f}")
    emulated = figure.emulated_instructions_per_s
    speed = f", QEMU running {emulated / 1e6:,.0f} M counted instructions/s" if emulated else ""
    rate = (
        f"; its throughput ({figure.throughput_kib_s:,.1f} KiB/s) is the emulator's{speed}, "
        "not the device's"
        if figure.throughput_kib_s is not None
        else ""
    )
    return (
        f"{figure.label}: {figure.client_per_byte:,.1f} client instructions per payload byte "
        f"counted on {figure.target} ({', '.join(parts)}){rate}, mean of {figure.runs} run(s)"
    )


def summarise(results_dir: Path) -> pd.DataFrame:
    """One row per cell label (ok runs only), a column per summary metric plus warnings."""
    return summary_frames(results_dir)[1]
