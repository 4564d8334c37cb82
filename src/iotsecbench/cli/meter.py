"""``iotsecbench meter``: read a power meter's export and say what is in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from iotsecbench.cli import words
from iotsecbench.errors import SpecError


def meter(
    trace: Annotated[
        Path,
        typer.Argument(
            help="A meter recording: Joulescope .jls, Nordic PPK2 CSV, Joulescope waveform or "
            "statistics CSV, "
            "UM25C/UM34C USB-meter log (pyummeter CSV), Qoitech Otii CSV, or a CSV with "
            "time_s and current_ma "
            "(units in the column names) — docs/meters.md."
        ),
    ],
    format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="jls, ppk2, joulescope, usb-meter, otii or generic (default: from the header).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Read a power-meter trace in blocks (a file of any size) and print its format, samples,
    rate, duration, mean current, charge (full rate) and the edges of its digital channels.
    A bad file is refused with file:line (exit 4). `iotsecbench attach` places it in a run."""
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


def attach(
    run: Annotated[
        Path,
        typer.Argument(
            help="The run: its directory (DIR/runs/<run id>), or a results directory with "
            "--run (or holding one completed run)."
        ),
    ],
    trace: Annotated[Path, typer.Argument(help="The meter's recording (formats: `meter`).")],
    run_id: Annotated[
        str | None, typer.Option("--run", help="Run id, when RUN is a results directory.")
    ] = None,
    agent: Annotated[
        str,
        typer.Option(help="Whose device the meter watched: emitter (the device) or receiver."),
    ] = "emitter",
    sync: Annotated[
        str | None,
        typer.Option(
            help="Align by this digital channel (D0–D7; Joulescope GPI 0–7), toggled at the "
            "first handshake's start and at the end of publishing. Default when the trace "
            "has digital channels: D0."
        ),
    ] = None,
    offset: Annotated[
        float | None,
        typer.Option(
            help="Align by an explicit offset: trace time (s from its first sample) = run "
            "time + OFFSET."
        ),
    ] = None,
    correlate: Annotated[
        bool,
        typer.Option(
            "--correlate",
            help="Align by cross-correlating the measured with the modelled current (refused "
            "below r = 0.6). Default when the trace has no digital channel.",
        ),
    ] = False,
    voltage: Annotated[
        float | None,
        typer.Option(
            help="Supply voltage (V) for energy, for meters that record no voltage (PPK2 "
            "CSV); default: the trace's own voltage, or charge only."
        ),
    ] = None,
    format: Annotated[
        str | None, typer.Option("--format", help="The trace's format (default: detected).")
    ] = None,
) -> None:
    """Attach a power-meter trace to a stored run: place the run in it, integrate it at full
    rate over every sample window (the measured current, stored beside the modelled one),
    each connection phase, publishing and each message. Stored in the run's record and the
    database (tables meter_traces, meter_samples, meter_phases); attaching again replaces
    the agent's trace. A trace shorter than the run or unlike it: exit 4, nothing stored."""
    import pandas as pd

    from iotsecbench.workflows.attach import attach as attach_trace

    channel = None
    if sync is not None:
        text = sync.upper().removeprefix("D").removeprefix("GPI")
        if not text.isdigit():
            raise SpecError(f"--sync {sync!r}: give a digital channel, D0 to D7")
        channel = int(text)
    done = attach_trace(
        run,
        trace,
        run_id=run_id,
        agent=agent,
        format=format,
        sync_channel=channel,
        offset_s=offset,
        correlate=correlate,
        voltage_v=voltage,
    )
    a = done.alignment
    if a.method == "sync":
        how = f"by the sync channel ({a.detail}; meter/host clock {a.clock_ratio:.6f})"
    elif a.method == "correlation":
        how = f"by correlation with the modelled current (r = {a.correlation:.3f})"
    else:
        how = "by the offset given"
    typer.echo(
        f"attached {done.trace.path} ({done.trace.format}, sha256 {done.trace.sha256[:12]}) to "
        f"run {done.run_id}, {done.agent}: trace time = run time {a.offset_s:+.4f} s, {how}"
    )
    typer.echo(
        f"  {done.windows} sample windows: measured {done.measured_ma:.3f} mA against "
        f"modelled {done.modelled_ma:.3f} mA on average"
    )
    for row in done.phases.itertuples(index=False):
        energy = "" if pd.isna(row.energy_uj) else f", {_scaled(row.energy_uj * 1e-6, 'J')}"
        typer.echo(
            f"  {row.phase:<14} {_scaled(row.charge_uc * 1e-6, 'C'):>10}  "
            f"{row.mean_current_ma:8.3f} mA{energy}"
        )


def _scaled(value: float, unit: str) -> str:
    """4 significant digits in the SI prefix that suits (µC for a handshake, mC or C for
    minutes of publishing)."""
    for factor, prefix in ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")):
        if abs(value) >= factor:
            return f"{value / factor:.4g} {prefix}{unit}"
    return f"{value / 1e-9:.4g} n{unit}"


def calibrate(
    out: Annotated[Path, typer.Option("--out", help="Where to write the calibrated profile.")],
    runs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Runs with an attached trace: run directories, or results directories (every "
            "run of theirs with a trace). Not with --handshakes."
        ),
    ] = None,
    handshakes: Annotated[
        Path | None,
        typer.Option(
            "--handshakes",
            help="Instead of traces: a CSV of handshakes timed on a device (device, "
            "tls_version, group, signature_algorithm, clock_mhz, cores, seconds, "
            "network_included, n[, ci_low, ci_high]; docs/energy-model.md): fits the "
            "handshake prices, clock-scaled shares, extra-core slowdown and overhead.",
        ),
    ] = None,
    benchmark: Annotated[
        Path | None,
        typer.Option(
            "--benchmark",
            help="Instead of traces: a primitive benchmark's output (wolfCrypt's or Mbed "
            "TLS's benchmark program, a pqm4-style cycle table; --format) priced into the "
            "profile at its clock (docs/energy-model.md).",
        ),
    ] = None,
    benchmark_format: Annotated[
        str | None,
        typer.Option("--format", help="With --benchmark: wolfcrypt (default), mbedtls or pqm4."),
    ] = None,
    clock: Annotated[
        float | None,
        typer.Option(
            "--clock",
            help="With --benchmark: the clock (MHz) it ran at, when the output does not say "
            "(a pqm4 table counts cycles).",
        ),
    ] = None,
    hold_out: Annotated[
        bool,
        typer.Option(
            "--hold-out",
            help="With --handshakes: each configuration's prediction error by a fit without "
            "it (leave-one-configuration-out).",
        ),
    ] = False,
    profile: Annotated[
        str | None,
        typer.Option(
            help="Profile to start from (a packaged name or a .toml path); default: the "
            "runs' own device profile."
        ),
    ] = None,
    fit: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated numbers to fit, e.g. idle_associated_current,"
            "core_extra_current,packet_overhead,ecdh-p256-derive.per_operation; default: "
            "every guessed number the runs exercise."
        ),
    ] = None,
    check: Annotated[
        list[Path] | None,
        typer.Option(
            help="Attached runs held back from the fit: their residual before and after is "
            "reported (repeatable)."
        ),
    ] = None,
    agent: Annotated[
        str, typer.Option(help="Whose device the meter watched: emitter or receiver.")
    ] = "emitter",
    name: Annotated[
        str | None,
        typer.Option(help="Device name of the new profile (default: <profile>-calibrated)."),
    ] = None,
) -> None:
    """Fit a device profile to measurements: to measured current (RUNS with attached meter
    traces: bounded least squares on modelled − measured current per sample window), to
    handshakes timed on a device (--handshakes CSV: prices, clock-scaled shares, extra-core
    slowdown, overhead), or to a primitive benchmark's output (--benchmark LOG: wolfCrypt,
    Mbed TLS, pqm4). Writes a profile whose fitted numbers have status `calibrated`, a
    source naming the input (SHA-256), the residual and the value replaced, and a range
    from the fit; use it with `run --device FILE` or `predict handshake --device FILE`."""
    # an option of one input given with another is refused, never silently ignored
    if benchmark is None and (benchmark_format is not None or clock is not None):
        raise SpecError("--format and --clock describe a --benchmark output: give one")
    if hold_out and handshakes is None:
        raise SpecError("--hold-out leaves out configurations of --handshakes: give one")
    if handshakes is not None or benchmark is not None:
        if runs or fit is not None or check or (handshakes and benchmark):
            raise SpecError(
                "--handshakes or --benchmark calibrates from timings: give one, and no runs, "
                "--fit or --check"
            )
        from iotsecbench.cli.calibrate_timings import (
            calibrate_from_benchmark,
            calibrate_from_timings,
        )

        if handshakes is not None:
            calibrate_from_timings(handshakes, out, profile, name, hold_out)
        else:
            assert benchmark is not None
            calibrate_from_benchmark(
                benchmark, benchmark_format or "wolfcrypt", clock, out, profile, name
            )
        return
    if not runs:
        raise SpecError("give runs with an attached trace, or --handshakes FILE")
    from iotsecbench import __version__
    from iotsecbench.files import check_output_file
    from iotsecbench.workflows.calibration import calibrate_profile

    check_output_file(out, "--out")  # before the runs are read and fitted
    done = calibrate_profile(
        runs, out, agent=agent, profile=profile, fit=words(fit, "--fit"), check=check, name=name,
        version=__version__,
    )  # fmt: skip
    result, start = done.result, done.start
    typer.echo(
        f"calibrated {len(result.fitted)} number(s) of {start.name} on {result.windows} "
        f"windows of {done.runs} run(s):"
    )
    for p in result.fitted:
        change = (p.after - p.before) / p.before * 100 if p.before else float("nan")
        typer.echo(
            f"  {p.name:<34} {p.before:>10.5g} → {p.after:<10.5g} ± {p.standard_error:<8.2g} "
            f"{p.unit:<9} ({change:+.1f} %, was {p.status_before})"
        )
    if result.not_learnable:
        typer.echo(f"  not learnt (no window depends on them): {', '.join(result.not_learnable)}")
    typer.echo(
        f"  RMS residual (modelled − measured): {result.rms_before_ma:.4g} mA → "
        f"{result.rms_after_ma:.4g} mA"
    )
    if result.held_out_rms_before_ma is not None:
        typer.echo(
            f"  on {done.held_out} held-back run(s): {result.held_out_rms_before_ma:.4g} mA → "
            f"{result.held_out_rms_after_ma:.4g} mA"
        )
    typer.echo(f"wrote {out}")


def register(app: typer.Typer) -> None:
    app.command()(meter)
    app.command()(attach)
    app.command()(calibrate)
