"""``iotsecbench export``: the results for other tools — every table as Parquet, a timeline a
trace viewer opens, and the costs in CI-dashboard formats (docs/exports.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

PARQUET = "parquet"


def export(
    results_dir: Annotated[
        Path, typer.Argument(help="A results directory made by `run` or `bench handshake --out`.")
    ],
    export_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="parquet (every table, default); timeline (Chrome trace-event JSON: Perfetto, "
            "chrome://tracing); bencher (Bencher Metric Format: each configuration's cost over "
            "the baseline with the analysis' interval; of a bench handshake store, each "
            "profile's handshake cost); github-action-benchmark (the same for "
            "benchmark-action/github-action-benchmark's customSmallerIsBetter).",
        ),
    ] = PARQUET,
    timeline: Annotated[
        bool, typer.Option("--timeline", help="The same as --format timeline.")
    ] = False,
    run: Annotated[
        str | None,
        typer.Option("--run", help="With the timeline: one run (its id) instead of them all."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Directory to write into (default: RESULTS_DIR/parquet for Parquet, "
            "RESULTS_DIR for the others)."
        ),
    ] = None,
) -> None:
    """Write the results for other tools; prints each file written.

    A timeline holds per run its handshake phases, each message's seal, transport and open,
    the 10 Hz samples and any measured current as counters, a traced or counted handshake's
    iotst groups, on the host's monotonic clock. The CI formats hold what `report` states
    first: each configuration's cost over the baseline, with its 95 % interval; of a `bench
    handshake` store, each profile's network-invariant handshake cost (CPU time traced, or
    the device's instructions counted on a virtual MCU) with its interval over the seeds.
    """
    from iotsecbench.errors import SpecError
    from iotsecbench.files import check_output_directory, write_atomic
    from iotsecbench.report.exporters import DOCUMENT_EXPORTERS
    from iotsecbench.store import read
    from iotsecbench.store.export import export_parquet

    known = [PARQUET, *DOCUMENT_EXPORTERS]
    if export_format not in known:
        raise SpecError(f"--format {export_format!r}: use one of {', '.join(known)}")
    if timeline:
        if export_format not in (PARQUET, "timeline"):
            raise SpecError(f"--timeline and --format {export_format}: give one of them")
        export_format = "timeline"
    if run is not None and export_format != "timeline":
        raise SpecError("--run chooses the run of a timeline: add --timeline")
    if not (results_dir / "results.duckdb").exists():
        raise SpecError(f"{results_dir} holds no results.duckdb (is it a results directory?)")
    # where it writes, checked before anything is read: a file in the way (2), a read-only
    # directory (3)
    directory = out or (results_dir / PARQUET if export_format == PARQUET else results_dir)
    check_output_directory(directory, "--out")
    if export_format == PARQUET:
        read.require_runs(results_dir)  # exit 4 before any file is written
        for path in export_parquet(results_dir, directory):
            typer.echo(str(path))
        return
    documents = DOCUMENT_EXPORTERS[export_format](results_dir, run)
    directory.mkdir(parents=True, exist_ok=True)
    for name, document in documents.items():
        path = write_atomic(directory / name, json.dumps(document, indent=1, allow_nan=False))
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command()(export)
