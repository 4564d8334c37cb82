"""``iotsecbench report``: figures, tables and the self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def report(
    source: Annotated[
        Path,
        typer.Argument(
            help="A results directory (from `run`, analysed or not) or an analysis.json "
            "(e.g. from `analyze --csv`)."
        ),
    ],
    format: Annotated[
        str, typer.Option("--format", help="Comma-separated: html, md, csv, tex.")
    ] = "html,md,csv,tex",
    out: Annotated[
        Path | None, typer.Option(help="Output directory (default: SOURCE/report).")
    ] = None,
) -> None:
    """Build the report: every figure of the stability study, summary, inference and
    reliability tables (Markdown, CSV, LaTeX) and one HTML file that needs no network."""
    from iotsecbench.report.build import build_report, parse_formats
    from iotsecbench.store.duckdb_store import database_path
    from iotsecbench.store.read import require_completed_runs

    if source.is_dir() and database_path(source).exists():
        require_completed_runs(source)  # the same refusal as `analyze`
    built = build_report(source, out, parse_formats(format))
    for path in built.files:
        if path.suffix != ".png":
            typer.echo(str(path))
    if built.skipped_figures:
        typer.echo(f"figures not drawn (no data): {', '.join(built.skipped_figures)}", err=True)


def register(app: typer.Typer) -> None:
    app.command()(report)
