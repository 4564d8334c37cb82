"""The self-contained HTML report: one file, images embedded, no network needed to view it,
readable on a laptop and printable.

Sections: experiment (spec, software, host, date, run order) · summary · hypotheses ·
figures · pairwise inference and reliability tables · warnings · methods · raw data.
"""

from __future__ import annotations

import base64
import datetime
import json
from html import escape
from typing import Any

from iotsecbench import __version__
from iotsecbench.report.data import ReportData
from iotsecbench.report.figures import ReportFigure
from iotsecbench.report.tables import ReportTable

SECTIONS = (
    "experiment",
    "summary",
    "hypotheses",
    "figures",
    "tables",
    "warnings",
    "methods",
    "raw-data",
)

CSS = """
:root { --ink: #1b1b1b; --muted: #5a5a5a; --rule: #d8d8d8; --accent: #0072B2;
        --warn: #9a4d00; --bg-warn: #fff4e5; --ok: #00704a; --bad: #b3261e; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       max-width: 1100px; margin: 0 auto; padding: 1.5rem 1.25rem 4rem; }
header { border-bottom: 2px solid var(--accent); margin-bottom: 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.05rem; margin-bottom: .3rem; }
.muted { color: var(--muted); font-size: .9rem; }
nav { font-size: .9rem; margin: .5rem 0 1rem; }
nav a { margin-right: .9rem; color: var(--accent); text-decoration: none; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .82rem; width: 100%; }
th, td { padding: .25rem .45rem; border-bottom: 1px solid var(--rule); text-align: left;
         vertical-align: top; }
th { background: #f3f6f9; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.scroll { overflow-x: auto; }
figure { margin: 1.2rem 0 2rem; page-break-inside: avoid; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--rule); }
figcaption { font-size: .88rem; color: var(--muted); margin-top: .3rem; }
.tag { display: inline-block; font-size: .72rem; padding: .05rem .4rem; border-radius: .6rem;
       margin-right: .4rem; color: white; vertical-align: middle; }
.tag.measured { background: var(--ok); }
.tag.modelled { background: var(--warn); }
.verdict-supported { color: var(--ok); font-weight: 600; }
.verdict-not-supported, .verdict-inconclusive { color: var(--bad); font-weight: 600; }
.warning { background: var(--bg-warn); border-left: 4px solid var(--warn); padding: .4rem .7rem;
           margin: .4rem 0; font-size: .88rem; }
.warning .fix { color: var(--muted); }
.warning ul { margin: .2rem 0 0; padding-left: 1.2rem; }
details { margin: .5rem 0; }
pre { background: #f6f8fa; padding: .6rem; overflow-x: auto; font-size: .8rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem;
           font-size: .9rem; }
dl.facts dt { color: var(--muted); }
@media print {
  body { max-width: none; font-size: 11pt; }
  nav, details > summary::marker { display: none; }
  th { position: static; }
  h2 { page-break-after: avoid; }
  .scroll { overflow: visible; }
}
"""


def _table_html(table: ReportTable, max_rows: int | None = None) -> str:
    head = "".join(
        f"<th>{escape(c.title)}{f' ({escape(c.unit)})' if c.unit else ''}</th>"
        for c in table.columns
    )
    rows = []
    for cells in table.cells()[:max_rows]:
        row = "".join(
            f'<td class="num">{escape(v)}</td>' if c.digits is not None else f"<td>{escape(v)}</td>"
            for c, v in zip(table.columns, cells, strict=True)
        )
        rows.append(f"<tr>{row}</tr>")
    return (
        f'<h3 id="table-{escape(table.key)}">{escape(table.title)}</h3>'
        f'<p class="muted">{escape(table.note)}</p>'
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _facts(pairs: list[tuple[str, Any]]) -> str:
    items = "".join(
        f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in pairs if v not in (None, "")
    )
    return f'<dl class="facts">{items}</dl>'


def _experiment_section(data: ReportData) -> str:
    spec = data.spec
    experiment = data.experiment
    versions = _json_field(experiment.get("versions_json"))
    host = _json_field(experiment.get("host_json"))
    parts = ['<section id="experiment"><h2>Experiment</h2>']
    if spec:
        parts.append(
            _facts(
                [
                    ("name", spec.get("name")),
                    ("description", spec.get("description")),
                    ("configurations", ", ".join(spec.get("configurations", []))),
                    ("payload (B)", ", ".join(map(str, spec.get("payload_bytes", [])))),
                    ("rate (Hz)", ", ".join(f"{r:g}" for r in spec.get("rate_hz", []))),
                    ("QoS", ", ".join(map(str, spec.get("qos", [])))),
                    ("duration per run (s)", spec.get("duration_s")),
                    ("repetitions", spec.get("repetitions")),
                    ("device profile", spec.get("device")),
                    ("seed", spec.get("seed")),
                    ("created", experiment.get("created_utc")),
                    ("config hash", experiment.get("config_hash")),
                ]
            )
        )
        parts.append(
            "<details><summary>Full experiment spec (JSON)</summary><pre>"
            f"{escape(json.dumps(spec, indent=2))}</pre></details>"
        )
    elif data.analysis is not None:
        inputs = data.analysis.inputs
        parts.append(
            _facts(
                [
                    ("analysed CSV", inputs.get("csv")),
                    ("latency CSV", inputs.get("latency_csv")),
                    ("configurations", ", ".join(data.configurations)),
                ]
            )
        )
    if versions or host:
        parts.append("<h3>Software and host</h3>")
        parts.append(_facts(list(versions.items()) + list(host.items())))
    if data.runs is not None and not data.runs.empty:
        rows = "".join(
            f"<tr><td class='num'>{int(r.run_order)}</td><td>{escape(str(r.run_id))}</td>"
            f"<td>{escape(str(r.cell_label))}</td><td class='num'>{int(r.repetition)}</td>"
            f"<td>{escape(str(r.status))}</td><td>{escape(str(r.started_utc or ''))}</td>"
            f"<td>{escape(str(r.error or ''))}</td></tr>"
            for r in data.runs.sort_values("run_order").itertuples()
        )
        parts.append(
            "<details><summary>Run order (configurations interleaved, seeded)</summary>"
            "<div class='scroll'><table><thead><tr><th>order</th><th>run</th>"
            "<th>configuration</th><th>rep.</th><th>status</th><th>started (UTC)</th>"
            f"<th>error</th></tr></thead><tbody>{rows}</tbody></table></div></details>"
        )
    parts.append("</section>")
    return "".join(parts)


def _json_field(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        return json.loads(value) if value else {}
    except (TypeError, json.JSONDecodeError):
        return {}


def _readable(value: Any) -> str:
    """Evidence records as text a reader can scan: numbers to 4 significant digits, nested
    records in parentheses, no JSON punctuation."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        keys = ("comparison", "difference", "ci_low", "ci_high", "cohens_d")
        if set(keys[1:4]) <= set(value):
            # One comparison: the sentence a paper would use.
            text = (
                f"{value.get('comparison', '')}: Δ = {_readable(value['difference'])} "
                f"[{_readable(value['ci_low'])}, {_readable(value['ci_high'])}]"
            )
            if value.get("cohens_d") is not None:
                text += f", d = {_readable(value['cohens_d'])}"
            return text.strip(": ")
        return "; ".join(
            f"{key.replace('_', ' ')}: {_readable(item)}"
            for key, item in value.items()
            if key not in ("metric", "device")
        )
    if isinstance(value, list | tuple):
        return ", ".join(_readable(item) for item in value) or "none"
    return "" if value is None else str(value)


def _hypotheses_section(data: ReportData) -> str:
    hypotheses = data.analysis.hypotheses if data.analysis is not None else []
    if not hypotheses:
        return (
            '<section id="hypotheses"><h2>Hypotheses</h2><p class="muted">No analysis yet: '
            "run <code>iotsecbench analyze</code> on the results directory.</p></section>"
        )
    rows = []
    for h in hypotheses:
        verdict = str(h.verdict)
        css = "verdict-" + verdict.replace(" ", "-")
        evidence_text = _readable(h.evidence)
        rows.append(
            f"<tr><td>{escape(str(h.id))}</td><td>{escape(h.statement)}"
            f"</td><td class='{css}'>{escape(verdict)}</td>"
            f"<td class='muted'>{escape(evidence_text)}</td></tr>"
        )
    return (
        '<section id="hypotheses"><h2>Hypotheses</h2><p class="muted">The study\'s H1–H3 '
        "generalised to every configuration against the baseline "
        f"<b>{escape(str(data.baseline))}</b>, each with its evidence.</p>"
        "<div class='scroll'><table><thead><tr><th>id</th><th>statement</th><th>verdict</th>"
        f"<th>evidence</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        "</section>"
    )


def _figures_section(figures: list[ReportFigure], skipped: list[str]) -> str:
    parts = ['<section id="figures"><h2>Figures</h2>']
    for figure in figures:
        encoded = base64.b64encode(figure.png).decode("ascii")
        parts.append(
            f'<figure id="figure-{escape(figure.key)}"><h3><span class="tag '
            f'{escape(figure.provenance)}">{escape(figure.provenance)}</span>'
            f"{escape(figure.title)}</h3>"
            f'<img alt="{escape(figure.title)}" src="data:image/png;base64,{encoded}">'
            f"<figcaption>{escape(figure.caption)}</figcaption></figure>"
        )
    if skipped:
        parts.append(
            f"<p class='muted'>Not drawn (no data for them in this report): "
            f"{escape(', '.join(skipped))}.</p>"
        )
    parts.append("</section>")
    return "".join(parts)


def _subject_text(subject: Any) -> str:
    if isinstance(subject, dict):
        return " · ".join(str(v) for v in subject.values() if v not in (None, ""))
    return str(subject or "")


def _warnings_section(data: ReportData) -> str:
    """Warnings grouped by kind: the fix is said once, each occurrence in one line."""
    groups: dict[str, tuple[str, list[str]]] = {}

    def add(kind: str, text: str, fix: str) -> None:
        groups.setdefault(kind, (fix, []))[1].append(text)

    if data.summary is not None and "warnings" in data.summary:
        for row in data.summary.itertuples():
            if row.warnings:
                add(
                    "security",
                    f"{row.configuration}: {row.warnings}",
                    "see `iotsecbench schemes`; prefer a scheme with integrity and replay "
                    "protection",
                )
    if data.runs is not None:
        for row in data.runs[data.runs["status"] != "ok"].itertuples():
            add(
                f"run {row.status}",
                f"{row.run_id}: {row.error}",
                "re-run the missing runs with `iotsecbench run --resume --out DIR`",
            )
    for warning in data.analysis.warnings if data.analysis is not None else []:
        add(
            warning.kind,
            f"{_subject_text(warning.subject)}: {warning.message}",
            warning.fix,
        )
    count = sum(len(items) for _, items in groups.values())
    body = (
        "".join(
            f'<div class="warning"><b>{escape(kind)}</b> ({len(items)})'
            f"{f' — <span class=fix>{escape(fix)}</span>' if fix else ''}"
            f"<ul>{''.join(f'<li>{escape(item)}</li>' for item in items)}</ul></div>"
            for kind, (fix, items) in groups.items()
        )
        or "<p>No warnings.</p>"
    )
    return f'<section id="warnings"><h2>Warnings ({count})</h2>{body}</section>'


METHODS = (
    (
        "Device current (modelled)",
        "Per 100 ms window of each agent: idle associated current + busy-core current × CPU "
        "fraction + (TX − idle) × TX airtime fraction + (RX − idle) × RX airtime fraction. CPU "
        "time from the operations the agent performed, priced per primitive from the device "
        "profile; airtime from the measured TCP bytes and segments. Every parameter has a "
        "source.",
        "docs/energy-model.md; ESP32 Series Datasheet v5.2; ESP-IDF docs",
    ),
    (
        "1 Hz series",
        "Mean of the samples within each whole second (ten 100 ms samples), as in "
        "the stability study.",
        "Del-Valle-Soto et al. 2026",
    ),
    (
        "Descriptive statistics",
        "Mean, SD (n−1), median, mode, P25/P50/P75, min/max; CV across "
        "runs and across contiguous segments.",
        "docs/analysis.md",
    ),
    (
        "ACF / PACF, k_c",
        "statsmodels acf/pacf up to lag 60 with the ±1.96/√n white-noise band; "
        "k_c is the first lag whose ACF falls inside the band.",
        "Box, Jenkins & Reinsel",
    ),
    (
        "Ljung–Box, ADF, KPSS",
        "statsmodels acorr_ljungbox, adfuller and kpss; ADF (null: unit "
        "root) and KPSS (null: stationary) reported together.",
        "Ljung & Box 1978; Dickey & Fuller 1979; Kwiatkowski et al. 1992",
    ),
    (
        "Change points",
        "ruptures KernelCPD (linear kernel, PELT, jump = 1) with a penalty "
        "scaled by the long-run variance; splits transient (handshake) from steady state.",
        "Truong, Oudre & Vayatis 2020",
    ),
    (
        "Block bootstrap",
        "arch Moving/Circular/Stationary block bootstrap of the difference of "
        "means, blocks inside runs, percentile CI; block length 20 (the study), auto "
        "(Politis–White) or 1.5·k_c.",
        "Künsch 1989; Politis & White 2004; arch",
    ),
    (
        "Run-level bootstrap",
        "i.i.d. bootstrap over runs for per-run energy, Hesterberg's "
        "expanded percentile interval for few runs.",
        "Hesterberg 2015",
    ),
    (
        "Effect size",
        "Cohen's d with pooled SD; 0.2 / 0.5 / 0.8 small / medium / large.",
        "Cohen 1988",
    ),
    (
        "Pareto front",
        "Non-dominated configurations over the objectives (default cumulative "
        "energy and mean latency, minimised); security properties as constraints.",
        "docs/analysis.md",
    ),
    ("Outliers", "Modified z-score with the 3.5 threshold.", "Iglewicz & Hoaglin 1993"),
)


def _methods_section(data: ReportData) -> str:
    options = data.analysis.options if data.analysis is not None else {}
    rows = "".join(
        f"<tr><td>{escape(a)}</td><td>{escape(b)}</td><td class='muted'>{escape(c)}</td></tr>"
        for a, b, c in METHODS
    )
    option_text = ", ".join(
        f"{k} = {v}" for k, v in options.items() if not isinstance(v, dict | list)
    )
    notes = "".join(
        f"<li>{escape(n)}</li>" for n in (data.analysis.notes if data.analysis is not None else [])
    )
    parameters = (
        f"<p class=muted>Analysis parameters: {escape(option_text)}</p>" if option_text else ""
    )
    return (
        '<section id="methods"><h2>Methods</h2>'
        "<p>Measurement methods (clock, phases, samples): docs/methods.md.</p>"
        "<div class='scroll'><table><thead><tr><th>statistic</th><th>how</th>"
        f"<th>reference</th></tr></thead><tbody>{rows}</tbody></table></div>"
        f"{parameters}{f'<ul class=muted>{notes}</ul>' if notes else ''}</section>"
    )


def _raw_data_section(data: ReportData) -> str:
    source = str(data.source)
    if data.has_store:
        body = (
            f"<p>Every raw measurement is in <code>{escape(source)}/results.duckdb</code> "
            "(tables experiments, runs, events, messages, samples, handshakes, operations; "
            "format in docs/results-format.md), the agents' raw records in "
            f"<code>{escape(source)}/runs/&lt;run id&gt;/</code>, the statistics in "
            f"<code>{escape(source)}/analysis.json</code>. "
            f"<code>iotsecbench export {escape(source)}</code> writes Parquet.</p>"
        )
    else:
        body = f"<p>Statistics from <code>{escape(source)}</code> (analysis.json).</p>"
    return f'<section id="raw-data"><h2>Raw data</h2>{body}</section>'


def render(
    data: ReportData, figures: list[ReportFigure], skipped: list[str], tables: list[ReportTable]
) -> str:
    """The whole report as one HTML string."""
    name = data.spec.get("name") or data.source.name
    generated = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    by_key = {t.key: t for t in tables}
    summary = by_key.get("summary")
    summary_html = (
        _table_html(summary)
        if summary
        else "<p class='muted'>No results store: summary not available.</p>"
    )
    other_tables = "".join(_table_html(t) for t in tables if t.key != "summary")
    nav = "".join(f'<a href="#{s}">{s.replace("-", " ")}</a>' for s in SECTIONS)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>iotsecbench report — {escape(name)}</title><style>{CSS}</style></head>
<body>
<header><h1>What securing the messages cost: {escape(name)}</h1>
<p class="muted">iotsecbench {escape(__version__)} · report generated {generated} ·
<span class="tag measured">measured</span> on this host,
<span class="tag modelled">modelled</span> for the device (energy model)</p></header>
<nav>{nav}</nav>
{_experiment_section(data)}
<section id="summary"><h2>Summary</h2>{summary_html}</section>
{_hypotheses_section(data)}
{_figures_section(figures, skipped)}
<section id="tables"><h2>Inference and reliability</h2>{
        other_tables or "<p class='muted'>No analysis yet.</p>"
    }</section>
{_warnings_section(data)}
{_methods_section(data)}
{_raw_data_section(data)}
</body></html>
"""
