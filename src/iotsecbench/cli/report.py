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
    figures: Annotated[
        str,
        typer.Option(
            "--figures",
            help="Also write every figure as vector graphics for a paper: svg, pdf or both "
            "(figures/<name>.svg|pdf).",
        ),
    ] = "",
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the findings (each configuration against the baseline, with interval, "
            "unit and measured/modelled label) as JSON instead of the file list.",
        ),
    ] = False,
) -> None:
    """Build the report: findings first (each configuration against the baseline, in
    sentences), every figure of the stability study, summary, hypotheses, inference and
    reliability tables (Markdown, CSV, LaTeX) and one HTML file that needs no network, its
    figures interactive (hover for values, click a legend entry to hide a series, wheel to
    zoom)."""
    from iotsecbench.report.build import build_report, parse_figure_formats, parse_formats
    from iotsecbench.store.duckdb_store import database_path
    from iotsecbench.store.read import require_completed_runs

    if source.is_dir() and database_path(source).exists():
        require_completed_runs(source)  # the same refusal as `analyze`
    built = build_report(source, out, parse_formats(format), parse_figure_formats(figures))
    if as_json:
        typer.echo((built.directory / "findings.json").read_text(encoding="utf-8"))
        return
    for path in built.files:
        if path.suffix not in (".png", ".svg", ".pdf"):
            typer.echo(str(path))
    if built.skipped_figures:
        typer.echo(f"figures not drawn (no data): {', '.join(built.skipped_figures)}", err=True)


def register(app: typer.Typer) -> None:
    app.command()(report)
