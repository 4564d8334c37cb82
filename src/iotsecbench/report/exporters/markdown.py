"""GitHub-flavoured Markdown tables."""

from __future__ import annotations

from iotsecbench.report.tables import ReportTable


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def render(table: ReportTable) -> str:
    headers = [f"{c.title} ({c.unit})" if c.unit else c.title for c in table.columns]
    align = ["---:" if c.digits is not None else "---" for c in table.columns]
    lines = [
        f"### {table.title}",
        "",
        table.note,
        "",
        "| " + " | ".join(_escape(h) for h in headers) + " |",
        "| " + " | ".join(align) + " |",
    ]
    lines += ["| " + " | ".join(_escape(cell) for cell in row) + " |" for row in table.cells()]
    return "\n".join(lines) + "\n"
