"""The hypotheses of the report: a configuration × H1/H2/H3 × role matrix whose cells open
their evidence, and the long table under *raw data*.

``analysis.json`` states each hypothesis in the analysis' own terms (``current_ma of tls1.2
exceeds plain on emitter``); a reader sees it said from its structured evidence instead, in
the registry's names (``analysis.metrics``) and the configurations' readable names.
"""

from __future__ import annotations

from html import escape
from typing import Any

from iotsecbench.analysis.document import HypothesisRow
from iotsecbench.report.data import ReportData
from iotsecbench.report.readable import (
    configuration_name,
    decimals_for,
    effect_word,
    interval_text,
    metric,
    number,
    role_phrase,
    with_unit,
)

HYPOTHESIS_TITLES = {
    "H1": "H1 · costs more than the baseline",
    "H2": "H2 · lies between the baseline and another",
    "H3": "H3 · beaten on every Pareto axis",
}


def _evidence(h: HypothesisRow) -> dict[str, Any]:
    return h.evidence if isinstance(h.evidence, dict) else {}


def _pair(record: dict[str, Any]) -> tuple[str, str]:
    """The configurations of one comparison of the evidence ("a − b")."""
    a, _, b = str(record.get("comparison", "")).partition(" − ")
    return a, b


def _subject(h: HypothesisRow) -> str:
    """The configuration a hypothesis is about: H1 ``x − baseline``, H2 the lower comparison
    ``c − baseline``, H3 the first configuration of its values."""
    evidence = _evidence(h)
    comparison = evidence if "comparison" in evidence else evidence.get("lower")
    if comparison:
        return _pair(comparison)[0]
    values = evidence.get("values")
    return next(iter(values)) if isinstance(values, dict) and values else ""


def _other(h: HypothesisRow) -> str:
    """H2's other configuration t (the upper comparison is ``t − c``)."""
    return _pair(_evidence(h).get("upper") or {})[0]


def _what(evidence: dict[str, Any], data: ReportData) -> str:
    """ "the emitter's modelled current" """
    about = data.metric_of(str(evidence.get("metric", "")), str(evidence.get("device", "")))
    return f"{role_phrase(str(evidence.get('device', '')))} {about.described}"


def statement(h: HypothesisRow, data: ReportData) -> str:
    """The hypothesis as a reader says it, from its evidence."""
    evidence = _evidence(h)
    baseline = configuration_name(str(data.baseline))
    what = _what(evidence, data)
    if h.id == "H1":
        subject = configuration_name(_subject(h))
        return f"{what[0].upper()}{what[1:]} is higher with {subject} than with {baseline}"
    if h.id == "H2":
        subject, other = configuration_name(_subject(h)), configuration_name(_other(h))
        return (
            f"{what[0].upper()}{what[1:]} with {subject} lies strictly between its values with "
            f"{baseline} and with {other}"
        )
    if h.id == "H3":
        return (
            f"{configuration_name(_subject(h))} is beaten by another configuration on every "
            f"Pareto axis ({', '.join(_axes(data))})"
        )
    return str(h.statement)


def _axes(data: ReportData) -> list[str]:
    pareto = data.analysis.pareto if data.analysis is not None else None
    objectives = list(pareto.objectives) if pareto is not None else []
    return [data.metric_of(k).described for k in objectives]


def _comparison_text(record: dict[str, Any], unit: str) -> str:
    """One comparison as a reader says it: Δ with unit, interval at the same rounding, d."""
    a, b = _pair(record)
    low, high = float(record["ci_low"]), float(record["ci_high"])
    decimals = decimals_for((high - low) / 2)
    text = (
        f"{configuration_name(a)} − {configuration_name(b)}: Δ = "
        f"{with_unit(number(float(record['difference']), decimals, signed=True), unit)}"
        f" (95 % CI {with_unit(interval_text(low, high, decimals), unit)})"
    )
    word = effect_word(record.get("cohens_d"))
    return text + (f", {word} effect (d = {number(record['cohens_d'], 2)})" if word else "")


def evidence_text(h: HypothesisRow, data: ReportData) -> str:
    """The evidence of a hypothesis in words: the comparisons it rests on, or (H3) who
    dominates it and every configuration's values on the Pareto axes."""
    evidence = _evidence(h)
    unit = metric(str(evidence.get("metric", ""))).unit
    if {"difference", "ci_low", "ci_high"} <= set(evidence):
        return _comparison_text(evidence, unit)
    if "lower" in evidence and "upper" in evidence:
        return (
            f"{_comparison_text(evidence['lower'], unit)}; "
            f"{_comparison_text(evidence['upper'], unit)}"
        )
    if "values" in evidence:
        dominators = [configuration_name(str(c)) for c in evidence.get("dominated_by") or []]
        values = "; ".join(
            f"{configuration_name(str(name))}: "
            + ", ".join(
                f"{data.metric_of(key).described} "
                f"{with_unit(f'{float(value):.4g}', metric(key).unit)}"
                for key, value in (row or {}).items()
                if value is not None
            )
            for name, row in evidence["values"].items()
        )
        by = f"dominated by {', '.join(dominators)}" if dominators else "dominated by none"
        note = f"; {evidence['note']}" if evidence.get("note") else ""
        return f"{by}; {values}{note}"
    return ""


def _analyze_command(data: ReportData) -> str:
    measured = " --current measured" if data.current_measured else ""
    return f"iotsecbench analyze {data.source}{measured}"


def hypotheses_section(data: ReportData) -> str:
    """A configuration × hypothesis × role matrix; each cell opens its evidence."""
    hypotheses = data.analysis.hypotheses if data.analysis is not None else []
    if not hypotheses:
        return (
            '<section id="hypotheses"><h2>Hypotheses</h2><p class="muted">No analysis yet: '
            f"run <code>{escape(_analyze_command(data))}</code>.</p></section>"
        )
    cells: dict[tuple[str, str], list[str]] = {}
    columns: list[tuple[str, str]] = []
    metric_names = set()
    for h in hypotheses:
        evidence = _evidence(h)
        role = str(evidence.get("device", "")) if h.id != "H3" else ""
        if evidence.get("metric"):
            metric_names.add(data.metric_of(str(evidence["metric"]), role or None).heading())
        column = (str(h.id), role)
        if column not in columns:
            columns.append(column)
        verdict = str(h.verdict)
        label = verdict
        if h.id == "H2":  # one cell holds H2 against every other configuration
            label = f"vs {configuration_name(_other(h))}: {verdict}"
        cells.setdefault((_subject(h), f"{h.id}|{role}"), []).append(
            f'<details class="verdict-{escape(verdict.replace(" ", "-"))}">'
            f"<summary>{escape(label)}</summary>"
            f'<p class="muted">{escape(statement(h, data))}. '
            f"{escape(evidence_text(h, data))}</p></details>"
        )
    columns.sort(key=lambda c: (c[0], c[1]))
    head = "".join(
        f"<th>{escape(HYPOTHESIS_TITLES.get(hid, hid))}{f'<br>{escape(role)}' if role else ''}</th>"
        for hid, role in columns
    )
    rows = "".join(
        f"<tr><td>{escape(configuration_name(name))}</td>"
        + "".join(
            f"<td>{''.join(cells.get((name, f'{hid}|{role}'), ['–']))}</td>"
            for hid, role in columns
        )
        + "</tr>"
        for name in data.configurations
        if any(key[0] == name for key in cells)
    )
    on_metrics = f" on {', '.join(sorted(metric_names))}" if metric_names else ""
    return (
        '<section id="hypotheses"><h2>Hypotheses</h2><p class="muted">The stability study\'s '
        "H1–H3 generalised to every configuration against the baseline "
        f"<b>{escape(configuration_name(str(data.baseline)))}</b>{escape(on_metrics)}. "
        "Open a verdict for its evidence; every hypothesis, one per row, is under "
        '<a href="#raw-data">raw data</a>.</p>'
        f"<div class='scroll'><table class='matrix'><thead><tr><th>configuration</th>{head}"
        f"</tr></thead><tbody>{rows}</tbody></table></div></section>"
    )


def hypotheses_table(data: ReportData) -> str:
    """Every hypothesis, one per row, with its evidence (folded, under raw data)."""
    hypotheses = data.analysis.hypotheses if data.analysis is not None else []
    if not hypotheses:
        return ""
    rows = "".join(
        f"<tr><td>{escape(str(h.id))}</td><td>{escape(statement(h, data))}</td>"
        f"<td class='verdict-{escape(str(h.verdict).replace(' ', '-'))}'>"
        f"{escape(str(h.verdict))}</td><td class='muted'>{escape(evidence_text(h, data))}</td></tr>"
        for h in hypotheses
    )
    return (
        "<details><summary>Every hypothesis with its evidence</summary>"
        "<div class='scroll'><table><thead><tr><th>id</th><th>statement</th><th>verdict</th>"
        f"<th>evidence</th></tr></thead><tbody>{rows}</tbody></table></div></details>"
    )
