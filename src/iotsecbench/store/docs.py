"""Rendering the table reference of ``docs/results-format.md`` from the schema definitions.

The document's column tables sit between two marker comments and are regenerated from
``store/schema.py`` so that the documentation cannot drift from the database:

    python -m iotsecbench.store.docs docs/results-format.md

rewrites that section in place; a unit test fails when it is out of date.
"""

from __future__ import annotations

import sys
from pathlib import Path

from iotsecbench.store import schema

BEGIN_MARKER = "<!-- BEGIN GENERATED: tables (python -m iotsecbench.store.docs) -->"
END_MARKER = "<!-- END GENERATED: tables -->"


def render_tables() -> str:
    """Markdown for every table: description, then one row per column."""
    parts = []
    for table in schema.TABLES.values():
        parts.append(f"### `{table.name}`\n\n{table.description}\n")
        notes = []
        if table.primary_key:
            notes.append(f"primary key `{table.primary_key}`")
        if table.order_by:
            notes.append("read in order of " + ", ".join(f"`{c}`" for c in table.order_by))
        if notes:
            parts.append("*" + "; ".join(notes) + ".*\n")
        parts.append("| column | type | unit | meaning |\n|---|---|---|---|")
        for column in table.columns:
            meaning = column.description.replace("|", "\\|")
            if column.required:
                meaning += " (never NULL)"
            parts.append(f"| `{column.name}` | {column.sql_type} | {column.unit} | {meaning} |")
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def replace_section(document: str) -> str:
    """The document with its generated section replaced by the current rendering."""
    try:
        head, rest = document.split(BEGIN_MARKER, 1)
        _, tail = rest.split(END_MARKER, 1)
    except ValueError as error:
        raise ValueError(f"the document lacks the markers {BEGIN_MARKER} … {END_MARKER}") from error
    return f"{head}{BEGIN_MARKER}\n\n{render_tables()}\n{END_MARKER}{tail}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m iotsecbench.store.docs docs/results-format.md", file=sys.stderr)
        return 2
    path = Path(argv[0])
    path.write_text(replace_section(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
