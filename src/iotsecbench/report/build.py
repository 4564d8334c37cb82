"""Building a report: load the data, draw the figures, make the tables, write the formats.

Output directory layout: ``report.html`` (self-contained), ``findings.json`` (the findings
as data; ``BuiltReport.findings`` is the same record, typed), ``tables.md``, ``tables.tex``,
``tables/<name>.csv``, ``figures/<name>.png`` (and ``.svg``/``.pdf`` when asked for). Files
are written to temporary names and renamed, so an interrupted build never leaves a
half-written report.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iotsecbench.errors import SpecError
from iotsecbench.files import check_output_directory, write_atomic
from iotsecbench.report import (
    figures_analysis,
    figures_blocks,
    figures_headline,
    figures_iotst,
    figures_setup,
    html,
    html_compare,
    measured,
)
from iotsecbench.report.compare import Comparison, compare, default_directory, load_experiments
from iotsecbench.report.data import load
from iotsecbench.report.exporters import EXPORTERS
from iotsecbench.report.figures import (
    BUILDERS,
    EXPORTS,
    VECTOR_FORMATS,
    ReportFigure,
    build_figures,
)
from iotsecbench.report.figures_compare import comparison_figures
from iotsecbench.report.findings import Findings, find
from iotsecbench.report.style import Palette
from iotsecbench.report.tables import ReportTable, build_tables, comparison_tables

FORMATS = ("html", *EXPORTERS)


@dataclass(frozen=True)
class BuiltReport:
    directory: Path
    files: list[Path]
    skipped_figures: list[str]
    findings: Findings | None = None  # a report's (findings.json)
    comparison: Comparison | None = None  # a comparison's (comparison.json)

    @property
    def html(self) -> Path | None:
        return next((f for f in self.files if f.suffix == ".html"), None)

    def document(self) -> dict[str, Any]:
        """What ``findings.json`` (or ``comparison.json``) holds."""
        if self.comparison is not None:
            return self.comparison.to_dict()
        return (self.findings or Findings(baseline=None)).to_dict()


def to_json(document: dict[str, Any]) -> str:
    """A findings or comparison document as its file holds it."""
    return json.dumps(document, indent=2, allow_nan=False)


def parse_formats(text: str) -> list[str]:
    formats = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise SpecError(f"--format {text!r}: choose from {', '.join(FORMATS)}")
    return formats


def parse_figure_formats(text: str) -> list[str]:
    formats = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [f for f in formats if f not in VECTOR_FORMATS]
    if unknown:
        raise SpecError(f"--figures {text!r}: choose from {', '.join(VECTOR_FORMATS)}")
    return formats


def build_report(
    source: Path,
    out: Path | None = None,
    formats: list[str] | tuple[str, ...] = FORMATS,
    figure_formats: list[str] | tuple[str, ...] = (),
    current: str = "modelled",
) -> BuiltReport:
    """Build the report of ``source`` (results directory or analysis.json) into ``out``;
    ``figure_formats`` (svg, pdf) writes each figure also as a vector file for a paper;
    ``current="measured"``: of the power-meter traces attached to the runs, into
    ``report-measured`` by default so the modelled report stays beside it."""
    if not source.exists():
        raise SpecError(f"{source} does not exist")
    default = "report" if current == "modelled" else "report-measured"
    directory = out or (source if source.is_dir() else source.parent) / default
    check_output_directory(directory, "--out")  # before the data are read and drawn
    data = load(source, current)
    figures, skipped = build_figures(
        data,
        (
            *BUILDERS,
            *figures_analysis.BUILDERS,
            *figures_blocks.BUILDERS,
            *figures_setup.BUILDERS,
            *figures_iotst.BUILDERS,
            *measured.BUILDERS,
        ),
        exports=figure_formats,
    )
    tables = build_tables(data) + measured.tables(data)
    findings = find(data)
    token = EXPORTS.set(tuple(figure_formats))
    try:
        summary_figure = figures_headline.headline(findings, Palette(data.configurations))
    finally:
        EXPORTS.reset(token)
    directory.mkdir(parents=True, exist_ok=True)
    files: list[Path] = [
        write_atomic(directory / "findings.json", to_json(findings.to_dict()).encode("utf-8"))
    ]
    if "html" in formats:
        page = html.render(data, figures, skipped, tables, findings, summary_figure)
        files.append(write_atomic(directory / "report.html", page.encode("utf-8")))
    drawn = [summary_figure, *figures] if summary_figure is not None else figures
    files += _write_figures(directory, drawn, png="html" in formats)
    files += _write_tables(directory, tables, formats)
    return BuiltReport(directory, files, skipped, findings=findings)


def build_comparison(
    sources: list[Path],
    out: Path | None = None,
    formats: list[str] | tuple[str, ...] = FORMATS,
    figure_formats: list[str] | tuple[str, ...] = (),
    allowed: set[str] | frozenset[str] = frozenset(),
) -> BuiltReport:
    """Experiments side by side (report/compare.py) into ``out`` (default
    ``FIRST/compared-with-…``): ``comparison.html``, ``comparison.json``, tables, figures."""
    directory = out or default_directory(sources)
    check_output_directory(directory, "--out")  # before the data are read and drawn
    comparison = compare(load_experiments(sources), allowed)
    figures = comparison_figures(comparison, figure_formats)
    directory.mkdir(parents=True, exist_ok=True)
    tables = comparison_tables(comparison)
    files = [
        write_atomic(directory / "comparison.json", to_json(comparison.to_dict()).encode("utf-8"))
    ]
    if "html" in formats:
        page = html_compare.render_comparison(comparison, figures, tables)
        files.append(write_atomic(directory / "comparison.html", page.encode("utf-8")))
    files += _write_figures(directory, figures, png="html" in formats)
    files += _write_tables(directory, tables, formats)
    return BuiltReport(directory, files, [], comparison=comparison)


def _write_figures(directory: Path, figures: list[ReportFigure], png: bool) -> list[Path]:
    """``figures/<key>.png`` (beside the HTML) and each vector export asked for."""
    wanted = [(f, "png", f.png) for f in figures if png]
    wanted += [(f, suffix, content) for f in figures for suffix, content in f.exports.items()]
    if wanted:
        (directory / "figures").mkdir(exist_ok=True)
    return [
        write_atomic(directory / "figures" / f"{figure.key}.{suffix}", content)
        for figure, suffix, content in wanted
    ]


def _write_tables(directory: Path, tables: list[ReportTable], formats: Sequence[str]) -> list[Path]:
    """``tables/<key>.csv`` per table; one ``tables.md`` / ``tables.tex`` with them all."""
    files = []
    for name, (render, suffix) in EXPORTERS.items():
        if name not in formats:
            continue
        if name == "csv":
            table_dir = directory / "tables"
            table_dir.mkdir(exist_ok=True)
            for table in tables:
                files.append(
                    write_atomic(table_dir / f"{table.key}{suffix}", render(table).encode("utf-8"))
                )
        else:
            text = "\n".join(render(table) for table in tables)
            files.append(write_atomic(directory / f"tables{suffix}", text.encode("utf-8")))
    return files
