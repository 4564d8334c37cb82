"""The comparison page (``report A B …``): findings first (what differs, then each
configuration's contrasts), what differs, figures, tables, the experiments, methods — in the
report's page frame, style and figure script (``html._page``)."""

from __future__ import annotations

from html import escape

from iotsecbench.report.compare import Comparison, Contrast
from iotsecbench.report.figures import ReportFigure
from iotsecbench.report.findings import RUN_LEVEL_REPS
from iotsecbench.report.html import _facts, _figures_section, _page, _table_html
from iotsecbench.report.readable import configuration_name
from iotsecbench.report.tables import ReportTable

COMPARISON_SECTIONS = ("findings", "conditions", "figures", "tables", "experiments", "methods")


def _contrast_items(contrasts: list[Contrast]) -> str:
    return "".join(
        f'<li class="{"changed" if c.significant else "unchanged"}">'
        f'<span class="tag {escape(c.kind)}">{escape(c.kind)}</span>{escape(c.sentence)}'
        f"{f' <span class=caveat>{escape(c.caveat)}</span>' if c.caveat else ''}</li>"
        for c in contrasts
    )


def _comparison_findings(comparison: Comparison) -> str:
    parts = [
        '<section id="findings"><h2>Findings</h2>',
        f'<p class="pareto">{escape(comparison.headline())}</p>',
        f'<p class="muted">Each experiment against the reference <b>'
        f"{escape(comparison.reference.label)}</b>, 95 % intervals over runs. Bold: the "
        "interval excludes no difference. Under each configuration, first its own values, "
        "then what it costs over the baseline.</p>",
    ]
    if not comparison.contrasts:
        parts.append("<p class='muted'>No contrast could be computed.</p>")
    for configuration in comparison.configurations:
        values = comparison.of(configuration, "value")
        costs = comparison.of(configuration, "cost")
        if not values and not costs:
            continue
        parts.append(f"<h3>{escape(configuration_name(configuration))}</h3>")
        parts.append(f'<ul class="findings">{_contrast_items(values)}</ul>')
        changed = [c for c in costs if c.significant]
        if costs:
            parts.append(f'<ul class="findings">{_contrast_items(changed)}</ul>')
            if len(changed) < len(costs):
                parts.append(
                    f'<p class="muted">What it costs over the baseline does not change '
                    f"detectably in {len(costs) - len(changed)} of {len(costs)} metrics "
                    "(table “cost change”).</p>"
                )
    parts += [f'<div class="warning">{escape(note)}</div>' for note in comparison.notes]
    parts.append("</section>")
    return "".join(parts)


def _comparison_experiments(comparison: Comparison) -> str:
    parts = ['<section id="experiments"><h2>Experiments</h2>']
    for experiment in comparison.experiments:
        data = experiment.data
        runs = data.runs
        ok = int((runs["status"] == "ok").sum()) if runs is not None else 0
        host = data.host
        parts.append(
            f"<h3>{escape(experiment.label)}</h3>"
            + _facts(
                [
                    ("source", data.source),
                    ("experiment", data.spec.get("name")),
                    ("device profile", data.spec.get("device")),
                    ("baseline", experiment.baseline),
                    ("configurations", ", ".join(data.configurations)),
                    ("completed runs", ok),
                    ("host", host.get("hostname")),
                    ("started", data.experiment.get("created_utc")),
                    ("report of this experiment alone", f"iotsecbench report {data.source}"),
                ]
            )
        )
    parts.append("</section>")
    return "".join(parts)


def render_comparison(
    comparison: Comparison, figures: list[ReportFigure], tables: list[ReportTable]
) -> str:
    """Experiments side by side as one HTML string."""
    by_key = {t.key: t for t in tables}
    conditions = by_key.get("conditions")
    conditions_html = (
        _table_html(conditions)
        if conditions is not None and conditions.rows
        else "<p class='muted'>Nothing differs: same spec, host and software.</p>"
    )
    others = "".join(_table_html(t) for t in tables if t.key != "conditions")
    methods = (
        '<section id="methods"><h2>Methods</h2><p>Runs of different experiments are '
        "independent units: each interval is an i.i.d. bootstrap over runs "
        f"({RUN_LEVEL_REPS} replicates) with Hesterberg's (2015) expanded percentile "
        "interval, so a handful of runs gives a wide interval rather than a false precise "
        "one. A configuration's cost over the baseline is compared as an interaction, "
        "(c − baseline) in B − (c − baseline) in A, its four groups resampled "
        "independently. Modelled values come from each experiment's own device profile "
        "(docs/energy-model.md).</p></section>"
    )
    body = f"""{_comparison_findings(comparison)}
<section id="conditions"><h2>What differs</h2>{conditions_html}</section>
{_figures_section(figures, [])}
<section id="tables"><h2>Tables</h2>{others or "<p class='muted'>No contrast.</p>"}</section>
{_comparison_experiments(comparison)}
{methods}"""
    labels = " · ".join(comparison.labels)
    return _page(
        f"iotsecbench comparison — {labels}", f"Side by side: {labels}", COMPARISON_SECTIONS, body
    )
