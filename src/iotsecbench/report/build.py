"""Building a report: load the data, draw the figures, make the tables, write the formats.

Output directory layout: ``report.html`` (self-contained), ``tables.md``, ``tables.tex``,
``tables/<name>.csv``, ``figures/<name>.png``. Files are written to temporary names and
renamed, so an interrupted build never leaves a half-written report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iotsecbench.errors import SpecError
from iotsecbench.files import write_atomic
from iotsecbench.report import figures_iotst, html
from iotsecbench.report.data import load
from iotsecbench.report.exporters import EXPORTERS
from iotsecbench.report.figures import BUILDERS, build_figures
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


def build_report(
    source: Path, out: Path | None = None, formats: list[str] | tuple[str, ...] = FORMATS
) -> BuiltReport:
    """Build the report of ``source`` (results directory or analysis.json) into ``out``."""
    data = load(source)
    directory = out or (source if source.is_dir() else source.parent) / "report"
    directory.mkdir(parents=True, exist_ok=True)
    figures, skipped = build_figures(data, (*BUILDERS, *figures_iotst.BUILDERS))
    tables = build_tables(data)
    files: list[Path] = []
    if "html" in formats:
        page = html.render(data, figures, skipped, tables)
        files.append(write_atomic(directory / "report.html", page.encode("utf-8")))
        figure_dir = directory / "figures"
        figure_dir.mkdir(exist_ok=True)
        for figure in figures:
            files.append(write_atomic(figure_dir / f"{figure.key}.png", figure.png))
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
