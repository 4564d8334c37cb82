"""CSV tables: raw numbers (full precision), one header row with units, for other tools."""

from __future__ import annotations

import csv
import io
import math

from iotsecbench.report.tables import ReportTable


def render(table: ReportTable) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [f"{c.key}_{c.unit}".replace("%", "percent") if c.unit else c.key for c in table.columns]
    )
    for row in table.rows:
        values = []
        for column in table.columns:
            value = row.get(column.key)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                values.append("")
            elif isinstance(value, float):
                values.append(repr(value))
            else:
                values.append(str(value))
        writer.writerow(values)
    return buffer.getvalue()
