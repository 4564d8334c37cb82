"""Table exporters, one module per format, each ``render(table) -> str``; ``EXPORTERS`` maps a
format name to its renderer and file suffix."""

from __future__ import annotations

from collections.abc import Callable

from iotsecbench.report.exporters import csv, latex, markdown
from iotsecbench.report.tables import ReportTable

EXPORTERS: dict[str, tuple[Callable[[ReportTable], str], str]] = {
    "md": (markdown.render, ".md"),
    "csv": (csv.render, ".csv"),
    "tex": (latex.render, ".tex"),
}
