"""``iotsecbench report``: figures, tables and the self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def report(
    sources: Annotated[
        list[Path],
        typer.Argument(
            help="A results directory (from `run`, analysed or not) or an analysis.json "
            "(e.g. from `analyze --csv`). Two or more results directories: the experiments "
            "side by side, each against the first.",
            metavar="SOURCE...",
        ),
    ],
    format: Annotated[
        str, typer.Option("--format", help="Comma-separated: html, md, csv, tex.")
    ] = "html,md,csv,tex",
    out: Annotated[
        Path | None,
        typer.Option(
            help="Output directory (default: SOURCE/report; for a comparison "
            "FIRST/compared-with-SECOND…)."
        ),
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
    current: Annotated[
        str,
        typer.Option(
            "--current",
            help="Which device current the findings, figures and statistics show: modelled "
            "(the energy model, default) or measured (the power-meter traces attached with "
            "`iotsecbench attach`; run `analyze --current measured` first for the statistics). "
            "Written to SOURCE/report-measured unless --out says otherwise.",
        ),
    ] = "modelled",
    allow_different: Annotated[
        str,
        typer.Option(
            "--allow-different",
            help="Comparing experiments: also compare when these differ (payload, rate or "
            "both: payload,rate). Refused by default: per-message costs scale with both.",
        ),
    ] = "",
) -> None:
    """Build the report: findings first (each configuration against the baseline, in
    sentences), every figure of the stability study, summary, hypotheses, inference and
    reliability tables (Markdown, CSV, LaTeX) and one HTML file that needs no network, its
    figures interactive (hover for values, click a legend entry to hide a series, wheel to
    zoom).

    With two or more results directories (`report A B`), the experiments side by side: the
    same configurations under another device profile, network or stack; for each
    configuration and metric the difference from the first experiment, and how much what it
    costs over the baseline changes, each with a 95 % interval over runs; what differs
    between the experiments listed first. Experiments with different payload sizes or rates
    are refused unless --allow-different says so."""
    from iotsecbench.errors import SpecError
    from iotsecbench.report.build import (
        build_comparison,
        build_report,
        parse_figure_formats,
        parse_formats,
        to_json,
    )
    from iotsecbench.report.compare import parse_allowed
    from iotsecbench.store.duckdb_store import database_path
    from iotsecbench.store.read import CURRENT_SOURCES, require_completed_runs

    # The options first (no file read), then the sources, then the work.
    formats, figure_formats = parse_formats(format), parse_figure_formats(figures)
    if current not in CURRENT_SOURCES:
        raise SpecError(f"--current {current!r}: use modelled or measured")
    if len(sources) > 1:
        if current != "modelled":
            raise SpecError("--current measured applies to one results directory, not a comparison")
        allowed = parse_allowed(allow_different)
    elif allow_different:
        raise SpecError("--allow-different applies when comparing two or more experiments")
    for source in sources:
        if source.is_dir() and database_path(source).exists():
            require_completed_runs(source)  # the same refusal as `analyze`
    if len(sources) > 1:
        built = build_comparison(sources, out, formats, figure_formats, allowed)
    else:
        built = build_report(sources[0], out, formats, figure_formats, current)
    if as_json:
        typer.echo(to_json(built.document()))
        return
    for path in built.files:
        if path.suffix not in (".png", ".svg", ".pdf"):
            typer.echo(str(path))
    if built.skipped_figures:
        typer.echo(f"figures not drawn (no data): {', '.join(built.skipped_figures)}", err=True)


def register(app: typer.Typer) -> None:
    app.command()(report)
