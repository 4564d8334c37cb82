"""``iotsecbench calibrate --handshakes FILE``: a device profile fitted to handshakes timed on
a device (``energy.timings``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from iotsecbench.errors import DataError, EnvironmentProblem, SpecError


def calibrate_from_timings(
    path: Path, out: Path, profile: str | None, name: str | None, hold_out: bool
) -> None:
    """Read, fit, write the profile, print what was fitted, held and left out. Every bad
    input ends before anything is written."""
    from iotsecbench import __version__
    from iotsecbench.energy.calibrate import profile_toml
    from iotsecbench.energy.profile import load_profile
    from iotsecbench.energy.timings import fit_handshakes, read_handshake_timings
    from iotsecbench.files import write_atomic
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
    calibrated = replace(
        result.profile,
        name=name or f"{start.name}-calibrated",
        description=f"{start.description} — handshake prices calibrated against {path.name}",
    )
    header = (
        f"Device profile calibrated by iotsecbench {__version__} calibrate --handshakes from\n"
        f"{start.name} against {len(rows)} timed handshake row(s), sha256 {sha256};\n"
        "fitted numbers have status 'calibrated' and a source naming the input and residual."
    )
    try:
        write_atomic(out, profile_toml(calibrated, header))
    except OSError as error:
        raise EnvironmentProblem(
            f"--out {out}: cannot write ({error.strerror or error}); choose a writable path"
        ) from error
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
