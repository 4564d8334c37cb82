"""The self-contained HTML report: one file, images embedded, no network needed to view it,
readable on a laptop and printable.

Sections: findings (the answer, one sentence per configuration and metric) · summary ·
hypotheses (a configuration × H1/H2/H3 × role matrix) · figures (inline SVG a reader can
hover, toggle and zoom) · pairwise inference and reliability tables · warnings · experiment
(spec, software, host, date, run order) · methods · raw data (with the long hypothesis table).
"""

from __future__ import annotations

import base64
import datetime
import json
from html import escape
from typing import Any

from iotsecbench import __version__
from iotsecbench.analysis.document import FILENAMES
from iotsecbench.report.data import ReportData
from iotsecbench.report.figures import ReportFigure
from iotsecbench.report.findings import Findings
from iotsecbench.report.html_hypotheses import hypotheses_section, hypotheses_table
from iotsecbench.report.interactive import inline_svg
from iotsecbench.report.readable import (
    configuration_name,
    in_words,
)
from iotsecbench.report.tables import ReportTable

SECTIONS = (
    "findings",
    "summary",
    "hypotheses",
    "figures",
    "tables",
    "warnings",
    "experiment",
    "methods",
    "raw-data",
)

CSS = """
:root { --ink: #1b1b1b; --muted: #5a5a5a; --rule: #d8d8d8; --accent: #0072B2;
        --warn: #9a4d00; --bg-warn: #fff4e5; --ok: #00704a; --bad: #b3261e; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       max-width: 1100px; margin: 0 auto; padding: 1.5rem 1.25rem 4rem; overflow-wrap: anywhere; }
header { border-bottom: 2px solid var(--accent); margin-bottom: 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.05rem; margin-bottom: .3rem; }
.muted { color: var(--muted); font-size: .9rem; }
nav { font-size: .9rem; margin: .5rem 0 1rem; }
nav a { margin-right: .9rem; color: var(--accent); text-decoration: none; display: inline-block; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .82rem; width: 100%; }
th, td { padding: .25rem .45rem; border-bottom: 1px solid var(--rule); text-align: left;
         vertical-align: top; }
th { background: #f3f6f9; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
/* Wide tables scroll in their own box; the first column (what a row is) stays in view. */
.scroll { overflow-x: auto; max-width: 100%; }
.scroll table { width: auto; min-width: 100%; }
.scroll td:first-child, .scroll th:first-child { position: sticky; left: 0; z-index: 1;
  background: white; box-shadow: 1px 0 0 var(--rule); overflow-wrap: normal; }
.scroll th:first-child { background: #f3f6f9; z-index: 2; }
th, td { overflow-wrap: normal; }
ul.findings { padding-left: 1.1rem; margin: .2rem 0 .8rem; }
ul.findings li { margin: .25rem 0; }
ul.findings li.changed { font-weight: 600; }
ul.findings .caveat { font-weight: normal; color: var(--muted); font-size: .88rem; }
.pareto { border-left: 4px solid var(--accent); padding: .3rem .7rem; background: #f3f6f9; }
table.matrix td { min-width: 9rem; }
table.matrix summary { cursor: pointer; }
.verdict-contradicted { color: var(--bad); font-weight: 600; }
figure { margin: 1.2rem 0 2rem; page-break-inside: avoid; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--rule); }
.plot { position: relative; border: 1px solid var(--rule); max-width: 820px; }
.plot svg { display: block; width: 100%; height: auto; user-select: none; }
.tip { position: absolute; pointer-events: none; background: rgba(27,27,27,.92); color: white;
       font-size: .78rem; padding: .2rem .45rem; border-radius: .25rem; max-width: 22rem; }
.figure-tools { display: flex; flex-wrap: wrap; gap: .3rem; margin: .2rem 0 .4rem;
                font-size: .78rem; }
.figure-tools button { font: inherit; border: 1px solid var(--rule); background: white;
                       border-radius: .8rem; padding: .05rem .55rem; cursor: pointer; }
.figure-tools button[aria-pressed="false"] { opacity: .45; text-decoration: line-through; }
.figure-tools .zoom { margin-left: auto; display: flex; gap: .2rem; }
.swatch { display: inline-block; width: .7rem; height: .7rem; border-radius: .2rem;
          margin-right: .3rem; vertical-align: -.05rem; }
figcaption { font-size: .88rem; color: var(--muted); margin-top: .3rem; }
.tag { display: inline-block; font-size: .72rem; padding: .05rem .4rem; border-radius: .6rem;
       margin-right: .4rem; color: white; vertical-align: middle; }
.tag.measured { background: var(--ok); }
.tag.modelled { background: var(--warn); }
.tag.counted { background: #6a4c93; } /* counted on a virtual MCU (run --target) */
.verdict-supported { color: var(--ok); font-weight: 600; }
.verdict-not-supported, .verdict-inconclusive { color: var(--muted); font-weight: 600; }
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
  body { max-width: none; font-size: 10pt; padding: 0; }
  nav, .figure-tools, details > summary::marker { display: none; }
  th, .scroll td:first-child, .scroll th:first-child { position: static; box-shadow: none; }
  h2, h3 { page-break-after: avoid; }
  .scroll { overflow: visible; }
  table { font-size: 8pt; }
  details { display: block; }
  details > *:not(summary) { display: block; }
  figure, tr, li { page-break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
@media (max-width: 600px) {
  body { padding: 1rem .6rem 3rem; font-size: 14px; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin: 0 0 .4rem; }
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
    versions = data.versions
    host = data.host
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


def _findings_section(findings: Findings, headline: ReportFigure | None = None) -> str:
    """The answer first: the headline figure, then per configuration one sentence per
    headline metric."""
    if not findings.items:
        return (
            '<section id="findings"><h2>Findings</h2><p class="muted">No findings: they need '
            "the statistics (<code>iotsecbench analyze DIR</code>) and at least two "
            "configurations.</p></section>"
        )
    parts = [
        '<section id="findings"><h2>Findings</h2>',
        f'<p class="muted">Each configuration against the baseline '
        f"<b>{escape(configuration_name(str(findings.baseline)))}</b>, 95 % intervals"
        f"{f'; {escape(findings.context)}' if findings.context else ''}. "
        "Bold: the interval excludes no change.</p>",
    ]
    if headline is not None:  # seen before it is read
        parts.append(_figure_html(headline, "headline"))
    for configuration in findings.configurations:
        items = "".join(
            f'<li class="{"changed" if f.significant else "unchanged"}">'
            f'<span class="tag {escape(f.kind)}">{escape(f.kind)}</span>{escape(f.sentence)}'
            f"{f' <span class=caveat>{escape(f.caveat)}</span>' if f.caveat else ''}</li>"
            for f in findings.of(configuration)
        )
        parts.append(
            f'<h3>{escape(configuration_name(configuration))}</h3><ul class="findings">{items}</ul>'
        )
    if findings.pareto:
        parts.append(f'<p class="pareto">{escape(findings.pareto)}</p>')
    parts += [f'<div class="warning">{escape(note)}</div>' for note in findings.notes]
    parts.append("</section>")
    return "".join(parts)


def _figure_html(figure: ReportFigure, role: str = "") -> str:
    """An inline SVG with its series buttons, zoom buttons and hover data; the PNG where no
    SVG was drawn. ``role`` ("headline") is a class of the figure element."""
    key = escape(figure.key)
    head = (
        f'<h3><span class="tag {escape(figure.provenance)}">{escape(figure.provenance)}</span>'
        f"{escape(figure.title)}</h3>"
    )
    alt = escape(f"{figure.title}. {figure.caption}")
    if not figure.svg:
        encoded = base64.b64encode(figure.png).decode("ascii")
        return (
            f'<figure id="figure-{key}" class="{escape(role)}">{head}<img alt="{alt}" '
            f'src="data:image/png;base64,{encoded}"><figcaption>{escape(figure.caption)}'
            "</figcaption></figure>"
        )
    buttons = "".join(
        f'<button type="button" class="series" aria-pressed="true" data-index="{i}" '
        f'data-prefix="{escape(s["id"])}"><span class="swatch" '
        f'style="background:{escape(s["colour"])}"></span>{escape(s["label"])}</button>'
        for i, s in enumerate(figure.hover.get("series", []))
    )
    data = json.dumps(figure.hover, separators=(",", ":")).replace("</", "<\\/")
    return (
        f'<figure id="figure-{key}" class="{escape(f"interactive {role}".strip())}">{head}'
        f'<div class="figure-tools">{buttons}<span class="zoom">'
        '<button type="button" data-zoom="in" title="zoom in">+</button>'
        '<button type="button" data-zoom="out" title="zoom out">−</button>'
        '<button type="button" data-zoom="reset" title="whole figure">reset</button></span></div>'
        f'<div class="plot" role="img" aria-label="{alt}">{inline_svg(figure.svg, figure.key)}'
        '<div class="tip" hidden></div></div>'
        f'<script type="application/json" class="hover-data">{data}</script>'
        f"<figcaption>{escape(figure.caption)}</figcaption></figure>"
    )


def _figures_section(figures: list[ReportFigure], skipped: list[str]) -> str:
    parts = [
        '<section id="figures"><h2>Figures</h2><p class="muted">Point at a mark for its '
        "values; a series button hides or shows that series; +/− or Ctrl + wheel zoom, drag "
        "pans, double-click resets. <code>iotsecbench report DIR --figures svg,pdf</code> "
        "writes each figure as vector graphics for a paper.</p>"
    ]
    parts += [_figure_html(figure) for figure in figures]
    if skipped:
        parts.append(
            f"<p class='muted'>Not drawn (no data for them in this report): "
            f"{escape(', '.join(skipped))}.</p>"
        )
    parts.append("</section>")
    return "".join(parts)


# The figures' behaviour, inlined (no library, nothing fetched): nearest point under the
# pointer → its values; series buttons hide that series' SVG groups (ids KEY-s<i>-<n>) and
# its points; zoom and pan move the SVG's viewBox.
FIGURE_SCRIPT = """
(() => {
  for (const fig of document.querySelectorAll("figure.interactive")) {
    const data = JSON.parse(fig.querySelector("script.hover-data").textContent);
    const plot = fig.querySelector(".plot"), svg = plot.querySelector("svg");
    const tip = plot.querySelector(".tip"), hidden = new Set();
    const full = [0, 0, data.w, data.h];
    let view = full.slice(), drag = null;
    svg.removeAttribute("width"); svg.removeAttribute("height");
    const show = () => svg.setAttribute("viewBox", view.join(" "));
    show();
    const at = (ev) => {
      const r = svg.getBoundingClientRect();
      return [view[0] + (ev.clientX - r.left) / r.width * view[2],
              view[1] + (ev.clientY - r.top) / r.height * view[3]];
    };
    const zoom = (factor, centre) => {
      const c = centre || [view[0] + view[2] / 2, view[1] + view[3] / 2];
      view = [c[0] - (c[0] - view[0]) * factor, c[1] - (c[1] - view[1]) * factor,
              view[2] * factor, view[3] * factor];
      if (view[2] >= full[2]) view = full.slice();
      show();
    };
    svg.addEventListener("mousemove", (ev) => {
      if (drag) {
        const r = svg.getBoundingClientRect();
        view[0] = drag[0] - (ev.clientX - drag[2]) / r.width * view[2];
        view[1] = drag[1] - (ev.clientY - drag[3]) / r.height * view[3];
        show(); return;
      }
      const [x, y] = at(ev), reach = 14 * view[2] / svg.getBoundingClientRect().width;
      let best = null, distance = Infinity;
      for (const p of data.points) {
        if (p[2] >= 0 && hidden.has(p[2])) continue;
        const d = Math.hypot(p[0] - x, p[1] - y);
        if (d < distance) { distance = d; best = p; }
      }
      if (!best || distance > reach) { tip.hidden = true; return; }
      tip.textContent = best[3]; tip.hidden = false;
      const r = plot.getBoundingClientRect();
      tip.style.left = Math.min(ev.clientX - r.left + 12, r.width - tip.offsetWidth) + "px";
      tip.style.top = (ev.clientY - r.top + 14) + "px";
    });
    svg.addEventListener("mouseleave", () => { tip.hidden = true; drag = null; });
    svg.addEventListener("mousedown", (ev) => {
      if (view[2] < full[2]) drag = [view[0], view[1], ev.clientX, ev.clientY];
    });
    window.addEventListener("mouseup", () => { drag = null; });
    svg.addEventListener("dblclick", () => { view = full.slice(); show(); });
    svg.addEventListener("wheel", (ev) => {
      if (!(ev.ctrlKey || ev.metaKey)) return;  // plain wheel scrolls the page
      ev.preventDefault(); zoom(ev.deltaY < 0 ? 0.8 : 1.25, at(ev));
    }, { passive: false });
    for (const button of fig.querySelectorAll("button[data-zoom]")) {
      button.addEventListener("click", () => {
        const how = button.dataset.zoom;
        if (how === "reset") { view = full.slice(); show(); } else zoom(how === "in" ? 0.8 : 1.25);
      });
    }
    for (const button of fig.querySelectorAll("button.series")) {
      button.addEventListener("click", () => {
        const index = Number(button.dataset.index), off = !hidden.has(index);
        off ? hidden.add(index) : hidden.delete(index);
        button.setAttribute("aria-pressed", String(!off));
        for (const el of svg.querySelectorAll(`[id^="${button.dataset.prefix}"]`)) {
          el.style.display = off ? "none" : "";
        }
      });
    }
  }
})();
"""


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
            in_words(f"{_subject_text(warning.subject)}: {warning.message}", data.current_words),
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
    methods = METHODS
    if data.current_measured:
        methods = (
            (
                f"Device current ({data.current_kind})",
                "The power-meter trace attached to each run (iotsecbench attach), lined up "
                "with the run by sync channel, given offset or correlation with the modelled "
                "current, and integrated at the meter's full rate over each 100 ms sample "
                "window of the agent; runs without a trace are left out, never filled in with "
                "the model. The measured table gives each run's alignment.",
                "docs/meters.md",
            ),
            *METHODS,
        )
    rows = "".join(
        f"<tr><td>{escape(a)}</td><td>{escape(b)}</td><td class='muted'>{escape(c)}</td></tr>"
        for a, b, c in methods
    )
    option_text = in_words(
        ", ".join(f"{k} = {v}" for k, v in options.items() if not isinstance(v, dict | list)),
        data.current_words,
    )
    notes = "".join(
        f"<li>{escape(in_words(n, data.current_words))}</li>"
        for n in (data.analysis.notes if data.analysis is not None else [])
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


def _analysis_file(data: ReportData) -> str:
    return FILENAMES["measured" if data.current_measured else "modelled"]


def _raw_data_section(data: ReportData) -> str:
    source = str(data.source)
    if data.has_store:
        body = (
            f"<p>Every raw measurement is in <code>{escape(source)}/results.duckdb</code> "
            "(tables experiments, runs, events, messages, samples, handshakes, operations; "
            "format in docs/results-format.md), the agents' raw records in "
            f"<code>{escape(source)}/runs/&lt;run id&gt;/</code>, the statistics in "
            f"<code>{escape(source)}/{_analysis_file(data)}</code>. "
            f"<code>iotsecbench export {escape(source)}</code> writes Parquet.</p>"
        )
    else:
        body = f"<p>Statistics from <code>{escape(source)}</code> (analysis.json).</p>"
    return f'<section id="raw-data"><h2>Raw data</h2>{body}{hypotheses_table(data)}</section>'


def render(
    data: ReportData,
    figures: list[ReportFigure],
    skipped: list[str],
    tables: list[ReportTable],
    findings: Findings,
    headline: ReportFigure | None = None,
) -> str:
    """The whole report as one HTML string; ``headline`` (the findings at a glance) opens
    the findings."""
    name = data.spec.get("name") or data.source.name
    by_key = {t.key: t for t in tables}
    summary = by_key.get("summary")
    summary_html = (
        _table_html(summary)
        if summary
        else "<p class='muted'>No results store: summary not available.</p>"
    )
    # The device's counts (run --target) belong with the summary: they are its device figures.
    beside_summary = ("counted",)
    summary_html += "".join(_table_html(by_key[k]) for k in beside_summary if k in by_key)
    other_tables = "".join(
        _table_html(t) for t in tables if t.key not in ("summary", *beside_summary)
    )
    measured = data.current_measured
    if measured:
        summary_html = (
            f"<p class='muted'>The findings, figures and statistics of this report show the "
            f"device current {escape(data.current_kind)} (the traces attached to the runs); "
            "the summary's current and charge columns stay the energy model's, over every "
            f"run.</p>{summary_html}"
        )
    body = f"""{_findings_section(findings, headline)}
<section id="summary"><h2>Summary</h2>{summary_html}</section>
{hypotheses_section(data)}
{_figures_section(figures, skipped)}
<section id="tables"><h2>Inference and reliability</h2>{
        other_tables or "<p class='muted'>No analysis yet.</p>"
    }</section>
{_warnings_section(data)}
{_experiment_section(data)}
{_methods_section(data)}
{_raw_data_section(data)}"""
    heading = f"What securing the messages cost: {name}"
    if measured:
        heading += f" — device current {data.current_kind}"
    return _page(
        f"iotsecbench report — {name}",
        heading,
        SECTIONS,
        body,
        data.current_kind if measured else "",
    )


def _page(title: str, heading: str, sections: tuple[str, ...], body: str, meter: str = "") -> str:
    """The document around a report's sections: style, header, navigation, figure script;
    ``meter`` ("measured with ppk2") when the device current is a power meter's."""
    generated = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    nav = "".join(f'<a href="#{s}">{s.replace("-", " ")}</a>' for s in sections)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title><style>{CSS}</style></head>
<body>
<header><h1>{escape(heading)}</h1>
<p class="muted">iotsecbench {escape(__version__)} · report generated {generated} ·
<span class="tag measured">measured</span> on this host,
<span class="tag modelled">modelled</span> for the device (energy model){
        f', <span class="tag measured">{escape(meter)}</span> for the device (power meter)'
        if meter
        else ""
    }</p></header>
<nav>{nav}</nav>
{body}
<script>{FIGURE_SCRIPT}</script>
</body></html>
"""
