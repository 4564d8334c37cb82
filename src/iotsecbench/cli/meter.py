"""``iotsecbench meter``: read a power meter's export and say what is in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def meter(
    trace: Annotated[
        Path,
        typer.Argument(
            help="A meter recording: Joulescope .jls, Nordic PPK2 CSV, Joulescope waveform or "
            "statistics CSV, "
            "UM25C/UM34C USB-meter log (pyummeter CSV), or a CSV with time_s and current_ma "
            "(units in the column names) — docs/meters.md."
        ),
    ],
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="jls, ppk2, joulescope, usb-meter or generic (default: from the header).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Read a power-meter trace in blocks (a file of any size) and print its format, samples,
    rate, duration, mean current, charge (full rate) and the edges of its digital channels.
    A bad file is refused with file:line (exit 4). Attaching a trace to a run is not built
    yet (issue "measured energy")."""
    from iotsecbench.meters import read_trace

    found = read_trace(trace, format)
    summary = {
        "file": str(found.path),
        "sha256": found.sha256,
        "format": found.format,
        "samples": found.samples,
        "rate_hz": found.rate_hz,
        "duration_s": found.duration_s,
        "mean_current_ma": found.mean_current_ma,
        "charge_mah": found.charge_mah,
        "digital_edges": None if found.edges is None else len(found.edges),
    }
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(
        f"{found.path}: {found.format}, {found.samples:,} samples at {found.rate_hz:,.6g} Hz"
    )
    typer.echo(
        f"  duration {found.duration_s:.6g} s, measured mean current "
        f"{found.mean_current_ma:.6g} mA, charge {found.charge_mah:.6g} mAh (full rate)"
    )
    if found.edges is not None:
        first = found.edges["time_s"].iloc[0]
        typer.echo(f"  digital channels: {len(found.edges)} change(s), first at {first:.6g} s")


def register(app: typer.Typer) -> None:
    app.command()(meter)
