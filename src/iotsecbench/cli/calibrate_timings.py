"""``iotsecbench calibrate --handshakes FILE`` and ``--benchmark LOG``: a device profile fitted
to handshakes timed on a device (``energy.timings``) or priced from a primitive benchmark's
output (``energy.benchmark_logs``)."""

from __future__ import annotations

from pathlib import Path

import typer

from iotsecbench.errors import DataError, SpecError
from iotsecbench.workflows.calibration import write_calibrated


def calibrate_from_timings(
    path: Path, out: Path, profile: str | None, name: str | None, hold_out: bool
) -> None:
    """Read, fit, write the profile, print what was fitted, held and left out. Every bad
    input ends before anything is written."""
    from iotsecbench import __version__
    from iotsecbench.energy.profile import load_profile
    from iotsecbench.energy.timings import fit_handshakes, read_handshake_timings
    from iotsecbench.security.tls.operations import timed_handshake_operations

    rows, sha256 = read_handshake_timings(path)
    devices = sorted({row.device for row in rows})
    if len(devices) != 1:
        raise DataError(f"{path}: rows of several devices ({', '.join(devices)}): one per file")
    operations = []
    for row in rows:
        try:
            operations.append(
                timed_handshake_operations(row.tls_version, row.group, row.signature_algorithm)
            )
        except SpecError as error:
            raise DataError(f"{path}:{row.line}: {error}") from None
    start = load_profile(profile or devices[0])
    result = fit_handshakes(start, rows, operations, sha256, __version__, hold_out)
    write_calibrated(
        result.profile, start, name, f"handshake prices calibrated against {path.name}", out,
        f"Device profile calibrated by iotsecbench {__version__} calibrate --handshakes from\n"
        f"{start.name} against {len(rows)} timed handshake row(s), sha256 {sha256};\n"
        "fitted numbers have status 'calibrated' and a source naming the input and residual.",
    )  # fmt: skip
    typer.echo(
        f"calibrated {len(result.fitted)} number(s) of {start.name} on "
        f"{len(result.residuals)} timed handshake(s):"
    )
    for number in result.fitted:
        typer.echo(
            f"  {number.name:<40} {number.before:>10.5g} → {number.after:<10.5g} "
            f"± {number.standard_error:.2g}"
        )
    if result.held:
        typer.echo(f"  held at their values (the rows cannot tell them apart): "
                   f"{', '.join(result.held)}")  # fmt: skip
    if result.left_out_rows:
        lines = ", ".join(str(line) for line in result.left_out_rows)
        typer.echo(f"  left out (time includes network wait; the model prices computation): "
                   f"lines {lines}")  # fmt: skip
    typer.echo(f"  RMS relative residual: {result.rms_relative:.3g}")
    for held in result.held_out:
        typer.echo(
            f"  held out {held.configuration}: measured {held.measured_s * 1e3:.1f} ms, "
            f"predicted {held.predicted_s * 1e3:.1f} ms ({held.error * 100:+.1f} %)"
        )
    typer.echo(f"wrote {out}")


def calibrate_from_benchmark(
    path: Path,
    format: str,
    clock_mhz: float | None,
    out: Path,
    profile: str | None,
    name: str | None,
) -> None:
    """Price the profile's primitives from a benchmark's output and write it."""
    from iotsecbench import __version__
    from iotsecbench.energy.benchmark_logs import prices_from_log, read_benchmark_log
    from iotsecbench.energy.profile import load_profile

    if clock_mhz is not None and not clock_mhz > 0:
        raise SpecError(f"--clock {clock_mhz:g}: give the clock in MHz, above 0")
    log = read_benchmark_log(path, format, clock_mhz)
    start = load_profile(profile or "esp32-wroom-32")
    priced_profile, priced, unused = prices_from_log(start, log, __version__)
    write_calibrated(
        priced_profile, start, name, f"primitive prices from {path.name}", out,
        f"Device profile calibrated by iotsecbench {__version__} calibrate --benchmark from\n"
        f"{start.name} with {format} output {path.name}, sha256 {log.sha256};\n"
        "priced numbers have status 'calibrated' and a source naming the file and line.",
    )  # fmt: skip
    typer.echo(
        f"priced {len(priced)} primitive(s) of {start.name} from {path.name} "
        f"({format}, {log.clock_mhz:g} MHz):"
    )
    for p in priced:
        typer.echo(f"  {p.number:<34} {p.before:>10.5g} → {p.after:<10.5g} (line {p.entry.line})")
    if unused:
        typer.echo("  not used (a later entry of a primitive already priced, or one the profile "
                   f"does not price): {', '.join(e.label for e in unused)}")  # fmt: skip
    if log.skipped:
        typer.echo(f"  skipped (the model prices no such primitive): {', '.join(log.skipped)}")
    typer.echo(f"wrote {out}")
