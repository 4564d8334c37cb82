"""CSV tables: raw numbers (full precision), one header row with units, for other tools."""

from __future__ import annotations

import csv
import io
import math

from iotsecbench.report.tables import ReportTable


def render(table: ReportTable) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = []
    for c in table.columns:
        unit = f"_{c.unit}".replace("%", "percent") if c.unit else ""
        header += [f"{c.key}_low{unit}", f"{c.key}_high{unit}"] if c.pair else [f"{c.key}{unit}"]
    writer.writerow(header)
    for row in table.rows:
        values = []
        for column in table.columns:
            value = row.get(column.key)
            if column.pair:  # a range: two numbers
                values += [_cell(v) for v in (value if value is not None else (None, None))]
            else:
                values.append(_cell(value))
        writer.writerow(values)
    return buffer.getvalue()


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)
