"""Building a report: load the data, draw the figures, make the tables, write the formats.

Output directory layout: ``report.html`` (self-contained), ``findings.json`` (the findings
as data), ``tables.md``, ``tables.tex``, ``tables/<name>.csv``, ``figures/<name>.png`` (and
``.svg``/``.pdf`` when asked for). Files are written to temporary names and
renamed, so an interrupted build never leaves a half-written report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.errors import SpecError
from iotsecbench.files import write_atomic
from iotsecbench.report import figures_iotst, html
from iotsecbench.report.data import load
from iotsecbench.report.exporters import EXPORTERS
from iotsecbench.report.figures import BUILDERS, VECTOR_FORMATS, build_figures
from iotsecbench.report.findings import find
from iotsecbench.report.tables import build_tables

FORMATS = ("html", *EXPORTERS)


@dataclass(frozen=True)
class BuiltReport:
    directory: Path
    files: list[Path]
    skipped_figures: list[str]

    @property
    def html(self) -> Path | None:
        return next((f for f in self.files if f.suffix == ".html"), None)


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
) -> BuiltReport:
    """Build the report of ``source`` (results directory or analysis.json) into ``out``;
    ``figure_formats`` (svg, pdf) writes each figure also as a vector file for a paper."""
    data = load(source)
    directory = out or (source if source.is_dir() else source.parent) / "report"
    directory.mkdir(parents=True, exist_ok=True)
    figures, skipped = build_figures(
        data, (*BUILDERS, *figures_iotst.BUILDERS), exports=figure_formats
    )
    tables = build_tables(data)
    findings = find(data)
    files: list[Path] = [
        write_atomic(
            directory / "findings.json",
            json.dumps(findings.to_dict(), indent=2, allow_nan=False).encode("utf-8"),
        )
    ]
    figure_dir = directory / "figures"
    if "html" in formats or figure_formats:
        figure_dir.mkdir(exist_ok=True)
    if "html" in formats:
        page = html.render(data, figures, skipped, tables, findings)
        files.append(write_atomic(directory / "report.html", page.encode("utf-8")))
        for figure in figures:
            files.append(write_atomic(figure_dir / f"{figure.key}.png", figure.png))
    for figure in figures:
        for suffix, content in figure.exports.items():
            files.append(write_atomic(figure_dir / f"{figure.key}.{suffix}", content))
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
    return BuiltReport(directory, files, skipped)
