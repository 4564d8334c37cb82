"""LaTeX tables (booktabs), ready for \\input in a paper."""

from __future__ import annotations

from iotsecbench.report.tables import ReportTable

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "−": "$-$",
    "µ": r"\textmu{}",
    "·": r"$\cdot$",
    "–": "--",
}


def escape(text: str) -> str:
    return "".join(_SPECIAL.get(character, character) for character in text)


def render(table: ReportTable) -> str:
    spec = "".join("r" if c.digits is not None else "l" for c in table.columns)
    headers = [escape(c.title) + (f" ({escape(c.unit)})" if c.unit else "") for c in table.columns]
    lines = [
        "\\begin{table}[htbp]",
        "\\centering",
        "\\small",
        f"\\caption{{{escape(table.title)}. {escape(table.note)}}}",
        f"\\label{{tab:iotsecbench-{table.key}}}",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(headers) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(escape(cell) for cell in row) + " \\\\" for row in table.cells()]
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"
