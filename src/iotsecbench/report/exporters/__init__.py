"""Exporters, one module per format.

Table exporters (``render(table) -> str``): ``EXPORTERS`` maps a format name to its renderer
and file suffix. Experiment exporters (``documents(results_dir, run_id) -> {file name: JSON
document}``, ``export DIR --format NAME``): ``DOCUMENT_EXPORTERS`` maps a format name to it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from iotsecbench.report.exporters import (
    bencher,
    csv,
    github_action_benchmark,
    latex,
    markdown,
    timeline,
)
from iotsecbench.report.tables import ReportTable

EXPORTERS: dict[str, tuple[Callable[[ReportTable], str], str]] = {
    "md": (markdown.render, ".md"),
    "csv": (csv.render, ".csv"),
    "tex": (latex.render, ".tex"),
}

DOCUMENT_EXPORTERS: dict[str, Callable[[Path, str | None], dict[str, Any]]] = {
    timeline.FORMAT: timeline.documents,
    bencher.FORMAT: bencher.documents,
    github_action_benchmark.FORMAT: github_action_benchmark.documents,
}
