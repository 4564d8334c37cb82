"""The answer first: what each configuration costs against the baseline, one sentence per
headline metric, every number taken from the analysis' records.

The headline metrics are the registry's (``analysis.metrics``, ``Metric.finding``); two kinds
of interval stand behind them:

- current and charge (modelled): the analysis' comparison (block bootstrap within runs,
  ``analysis.json``), the study's method;
- latency p50/p99, connection set-up time, CPU per message and bytes per message: one value
  per run (``analysis.per_run``), compared with an i.i.d. bootstrap over runs (Hesterberg's
  expanded percentile interval, ``analysis.over_runs``).

Sample-size honesty: a finding resting on fewer than ``MIN_RUNS`` runs of either
configuration, or on a degenerate interval, says so, and names how many runs would give a
95 % interval of ±``PRECISION`` of the baseline, estimated from the observed run-to-run
spread (``analysis.over_runs.runs_needed``).

``Findings`` is the typed record ``build_report`` returns and ``findings.json`` holds
(``to_dict``; ``from_dict`` and ``read_findings`` read it back, upgrading older versions).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iotsecbench.analysis.metrics import COUNTED, METRICS, SERIES, Metric
from iotsecbench.analysis.over_runs import LEVEL, compare_over_runs, runs_needed
from iotsecbench.analysis.over_runs import REPS as RUN_LEVEL_REPS
from iotsecbench.analysis.pareto import front_with_security_axes
from iotsecbench.analysis.results import (
    Comparison,
    Interval,
    build_record,
    flat_record,
    interval_from_fields,
    nested_interval,
)
from iotsecbench.errors import DataError
from iotsecbench.files import read_json
from iotsecbench.report.data import ReportData
from iotsecbench.report.readable import (
    change,
    configuration_name,
    effect_word,
    interval_text,
    number,
    relative_percent,
    role_phrase,
    with_unit,
)

__all__ = ["LEVEL", "RUN_LEVEL_REPS", "Finding", "Findings", "find", "runs_needed"]

# Runs per configuration below which an interval is called indicative. The stability study
# ran 5; with fewer, the between-run spread — which a block bootstrap inside runs cannot
# see — rests on 1–3 degrees of freedom, and percentile bootstrap intervals over so few
# units cover less than their nominal level even when expanded (Hesterberg 2015, §4.2).
MIN_RUNS = 5
SAMPLE_RULE = (
    f"at least {MIN_RUNS} runs per configuration (the stability study's design; percentile "
    "bootstrap intervals over fewer units under-cover: Hesterberg 2015, “What teachers should "
    "know about the bootstrap”, The American Statistician 69(4))"
)
PRECISION = 0.01  # the ±1 % (of the baseline value) answer runs_needed aims at

# (metric, role) pairs the analysis compares within runs, in the order findings list them.
ANALYSIS_METRICS = tuple((m.key, m.role) for m in METRICS.findings() if m.finding == SERIES)

FORMAT_NAME = "iotsecbench-findings"
# findings.json version history (read back by Findings.from_dict, older versions upgraded):
#   version 0: no format or version field (baseline, context, sample_rule, precision,
#              findings, pareto, notes).
#   version 1: "format" and "version" fields; otherwise as version 0.
#   version 2: a modelled finding's "model_range" (nested interval) and "model_share";
#              older versions read as having none.
FORMAT_VERSION = 2


@dataclass(frozen=True)
class Finding:
    """One configuration against the baseline on one headline metric."""

    configuration: str
    baseline: str
    metric: str  # a key of the registry (analysis.metrics)
    role: str  # emitter | receiver | end-to-end
    kind: str  # measured (on this host) | modelled | measured with <meter> | counted on <target>
    unit: str
    value: float  # mean of the configuration
    baseline_value: float
    difference: float  # value − baseline_value
    interval: Interval  # of the difference over the runs' variation (level, method)
    runs: int  # runs of the configuration or the baseline, whichever has fewer
    runs_needed: int | None  # for a ±PRECISION interval, from the observed spread
    enough_runs: bool
    cohens_d: float | None = None
    sentence: str = ""
    caveat: str = ""
    # A modelled metric's second interval: the difference's central 90 % over the draws of
    # the device profile (analysis.model_range), written nested in to_dict so the flat
    # fields above keep their meaning; and the share of those draws in which the
    # configuration is above the baseline (the ranking's survival). None: measured, or no
    # draws.
    model_range: Interval | None = None
    model_share: float | None = None

    @property
    def relative_percent(self) -> float:
        return relative_percent(self.difference, self.baseline_value)

    @property
    def relative_interval(self) -> Interval | None:
        """The interval in % of the baseline's magnitude; None when the baseline is 0."""
        if self.baseline_value == 0 or not math.isfinite(self.baseline_value):
            return None
        return self.interval.scaled(100.0 / abs(self.baseline_value))

    @property
    def significant(self) -> bool:
        return self.interval.excludes_zero()

    def to_dict(self) -> dict[str, Any]:
        record = flat_record(self)
        share = record.pop("model_share")
        del record["model_range"]
        if self.model_range is not None:  # a measured finding keeps its version-1 shape
            record["model_range"] = self.model_range.to_dict()
            record["model_share"] = share
        record["relative_percent"] = self.relative_percent
        record["significant"] = self.significant
        # JSON has no NaN: a value that does not exist is null.
        return {
            k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in record.items()
        }

    @classmethod
    def from_dict(cls, record: Any, where: str = "finding") -> Finding:
        """The finding ``to_dict`` wrote (its derived fields recomputed, not read)."""
        return build_record(
            cls,
            record,
            where,
            numbers=("value", "baseline_value", "difference"),
            interval=interval_from_fields(record, where),
            model_range=nested_interval(record, "model_range", where),
        )


@dataclass(frozen=True)
class Findings:
    baseline: str | None
    items: Sequence[Finding] = ()
    pareto: str = ""  # the front in a sentence
    front: Sequence[str] = ()
    context: str = ""  # device profile and host
    sample_rule: str = SAMPLE_RULE
    notes: Sequence[str] = field(default_factory=list)

    def of(self, configuration: str) -> list[Finding]:
        return [f for f in self.items if f.configuration == configuration]

    @property
    def configurations(self) -> list[str]:
        return list(dict.fromkeys(f.configuration for f in self.items))

    def to_dict(self) -> dict[str, Any]:
        """``findings.json``."""
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "baseline": self.baseline,
            "context": self.context,
            "sample_rule": self.sample_rule,
            "precision": PRECISION,
            "findings": [f.to_dict() for f in self.items],
            "pareto": {"sentence": self.pareto, "front": list(self.front)},
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, document: Any, where: str = "findings.json") -> Findings:
        """A ``findings.json`` document of any version this iotsecbench wrote (older ones
        upgraded on the way in); ``DataError`` naming ``where`` when it is not one."""
        document = upgrade(document, where)
        pareto = document.get("pareto") or {}
        return cls(
            baseline=document.get("baseline"),
            items=[
                Finding.from_dict(record, f"{where} findings[{index}]")
                for index, record in enumerate(document.get("findings") or [])
            ],
            pareto=str(pareto.get("sentence") or ""),
            front=list(pareto.get("front") or []),
            context=str(document.get("context") or ""),
            sample_rule=str(document.get("sample_rule") or SAMPLE_RULE),
            notes=list(document.get("notes") or []),
        )


def upgrade(document: Any, where: str) -> dict[str, Any]:
    """``document`` in the current version: the unversioned form (version 0) gains its
    format and version fields; a newer or foreign document is refused."""
    if not isinstance(document, Mapping):
        raise DataError(f"{where}: not an iotsecbench findings document")
    if "format" not in document and "findings" in document:
        document = {"format": FORMAT_NAME, "version": 0, **document}
    if document.get("format") != FORMAT_NAME:
        raise DataError(
            f"{where}: not an iotsecbench findings document (format {document.get('format')!r})"
        )
    version = document.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 0:
        raise DataError(
            f"{where}: findings version {version!r} is not supported by this iotsecbench "
            f"(expected at most {FORMAT_VERSION}); rebuild it with `iotsecbench report`"
        )
    # version 0 → 1 added only the format and version fields, 1 → 2 only optional ones
    return {**document, "version": FORMAT_VERSION}


def read_findings(path: Path) -> Findings:
    """Read ``findings.json`` (any version); ``DataError`` (exit 4) naming what is wrong."""
    return Findings.from_dict(read_json(path), str(path))


def _sentence(f: Finding, about: Metric) -> str:
    shown = change(f.difference, f.interval.low, f.interval.high, f.baseline_value, about.unit)
    what = f"{role_phrase(f.role)} {about.described}"
    detail = f"({shown.relative}{LEVEL * 100:.0f} % CI {shown.interval}"
    if f.model_range is not None:
        detail = f"({shown.relative}runs: {LEVEL * 100:.0f} % CI {shown.interval}; " + _model_words(
            f, shown.decimals, about.unit
        )
    # A degenerate interval (no spread) makes d meaningless: a difference over ~0.
    word = effect_word(f.cohens_d) if not f.interval.degenerate else None
    detail += f"; {word} effect, d = {number(f.cohens_d or 0.0, 2)})" if word else ")"
    name = configuration_name(f.configuration)
    if f.significant:
        verb = "raises" if f.difference > 0 else "lowers"
        return f"{name} {verb} {what} by {shown.amount} {detail}."
    baseline = configuration_name(f.baseline)
    return f"{name} does not change {what} detectably against {baseline}: {shown.signed} {detail}."


def _model_words(f: Finding, decimals: int, unit: str) -> str:
    """ "model: 90 % range 0.55–1.10 mA; TLS 1.2 above plain MQTT in 97 % of profile draws"
    ("CPI and model: …" for a figure counted on a virtual MCU)."""
    assert f.model_range is not None
    ends = with_unit(interval_text(f.model_range.low, f.model_range.high, decimals), unit)
    # a counted figure's range: the CPI its count is turned into time with, and the
    # profile's currents (runner.model_draws) — not a model's guess at its CPU time
    source = "CPI and model" if f.kind.startswith(COUNTED) else "model"
    words = f"{source}: {f.model_range.level * 100:.0f} % range {ends}"
    if f.model_share is not None and math.isfinite(f.model_share):
        above = f.difference >= 0
        share = f.model_share if above else 1 - f.model_share
        side = "above" if above else "below"
        name, baseline = configuration_name(f.configuration), configuration_name(f.baseline)
        words += f"; {name} {side} {baseline} in {share * 100:.0f} % of profile draws"
    return words


def _caveat(f: Finding) -> str:
    needed = (
        f"; ±{PRECISION * 100:g} % would need about {max(f.runs_needed, MIN_RUNS)} runs"
        if f.runs_needed
        else ""
    )
    if f.interval.degenerate:
        return f"Degenerate interval ({f.runs} runs): not an answer{needed}."
    if not f.enough_runs:
        return f"Indicative: {f.runs} runs per configuration (fewer than {MIN_RUNS}){needed}."
    return ""


def _finding(
    entry: Metric,
    comparison: Comparison,
    runs_a: np.ndarray,
    runs_b: np.ndarray,
    current: str,
) -> Finding:
    """A finding from a comparison of the configuration (a) with the baseline (b) and the
    per-run values its sample-size caveat rests on; label, unit, caveat and sentence are
    derived here. ``current``: what the device's current is (``ReportData.current_kind``)."""
    runs = min(runs_a.size, runs_b.size)
    d = comparison.cohens_d
    finding = Finding(
        configuration=comparison.a,
        baseline=comparison.b,
        **entry.labels(current),
        value=float(comparison.mean_a),
        baseline_value=float(comparison.mean_b),
        difference=float(comparison.difference),
        interval=comparison.interval,
        runs=runs,
        runs_needed=runs_needed(runs_a, runs_b, float(comparison.mean_b), PRECISION),
        enough_runs=runs >= MIN_RUNS,
        cohens_d=float(d) if d is not None and math.isfinite(d) else None,
        model_range=comparison.model_range,
        model_share=comparison.model_share,
    )
    finding = dataclasses.replace(finding, caveat=_caveat(finding))
    return dataclasses.replace(finding, sentence=_sentence(finding, entry.with_current(current)))


def _cv_run_means(data: ReportData, configuration: str, entry: Metric) -> np.ndarray:
    if data.analysis is None:
        return np.array([])
    for row in data.analysis.cv:
        if (row.configuration, row.metric, row.device) == (configuration, entry.key, entry.role):
            return np.asarray(row.run_means, dtype=float)
    return np.array([])


def _analysis_comparison(data: ReportData, entry: Metric, a: str, b: str) -> Comparison | None:
    """The analysis' comparison of ``a`` with ``b`` on ``entry``, read as a − b."""
    comparisons = data.analysis.comparisons if data.analysis is not None else ()
    for c in comparisons:
        if (c.metric, c.device) == (entry.key, entry.role) and {c.a, c.b} == {a, b}:
            return c if c.a == a else c.reversed()
    return None


def _finding_of(
    data: ReportData, entry: Metric, baseline: str, configuration: str, seed: int
) -> Finding | None:
    runs_a = data.run_values(configuration, entry.column)
    runs_b = data.run_values(baseline, entry.column)
    if entry.finding == SERIES:
        comparison = _analysis_comparison(data, entry, configuration, baseline)
        if comparison is None:
            return None
        # The stored per-run values are the model's; a measured current's run means are
        # the analysis' own.
        if (data.current_measured and entry.follows_current) or not runs_a.size:
            runs_a = _cv_run_means(data, configuration, entry)
            runs_b = _cv_run_means(data, baseline, entry)
    else:
        # one run has no spread: the summary table shows its value
        comparison = compare_over_runs(
            entry.key, entry.role, configuration, baseline, runs_a, runs_b, seed
        )
        if comparison is None:
            return None
    return _finding(entry, comparison, runs_a, runs_b, data.current_kind)


def _context(data: ReportData) -> str:
    device = data.spec.get("device")
    facts = data.host
    parts = [f"device profile {device}"] if device else []
    if data.counted_target is not None:
        parts.append(f"emitter: the device client on {data.counted_target} (counted)")
    if facts:
        parts.append(
            f"host {facts.get('hostname', '?')} ({facts.get('machine', '?')}, "
            f"{facts.get('cpu_count', '?')} CPUs)"
        )
    return ", ".join(parts)


def _pareto(data: ReportData, context: str) -> tuple[str, list[str]]:
    """The front over the analysis' objectives plus each security property as an axis of
    its own (``analysis.pareto.front_with_security_axes``), in a sentence."""
    pareto = data.analysis.pareto if data.analysis is not None else None
    if pareto is None or not pareto.values:
        return "", []
    result = front_with_security_axes(pareto.values, pareto.objectives, data.security)
    axes = [
        f"{about.described} ({'lower' if d == 'min' else 'higher'} is better)"
        for k, d in pareto.objectives.items()
        for about in [data.metric_of(k)]
    ]
    front = [configuration_name(c) for c in result.front]
    listed = ", ".join(front[:-1]) + f" and {front[-1]}" if len(front) > 1 else front[0]
    beaten = [c for c in result.configurations if c not in result.front]
    sentence = (
        f"Pareto front: no configuration beats {listed} on every axis at once "
        f"({', '.join(axes)}"
        + ("; and each security property, having it is better" if data.security else "")
        + ")"
        + (
            f"; {', '.join(configuration_name(c) for c in beaten)} "
            f"{'is' if len(beaten) == 1 else 'are'} beaten by another on every axis"
            if beaten
            else ""
        )
        + (f". Figures for {context}." if context else ".")
    )
    return sentence, list(result.front)


def find(data: ReportData, seed: int | None = None) -> Findings:
    """Every finding the data supports, configuration by configuration, in report order: one
    per headline metric of ``data.metrics`` (``Metric.finding``)."""
    baseline = data.baseline
    if baseline is None:
        return Findings(baseline=None)
    seed = int(data.spec.get("seed", 0) if seed is None else seed)
    items: list[Finding] = []
    for configuration in data.configurations:
        if configuration == baseline:
            continue
        for entry in data.metrics.findings():
            found = _finding_of(data, entry, baseline, configuration, seed)
            if found is not None:
                items.append(found)
    context = _context(data)
    sentence, front = _pareto(data, context)
    notes = []
    if items and not all(f.enough_runs for f in items):
        fewest = min(f.runs for f in items)
        notes.append(
            f"Few runs: {fewest} per configuration; a trustworthy interval needs {SAMPLE_RULE}. "
            f"Each indicative finding names the runs a ±{PRECISION * 100:g} % answer would need."
        )
    return Findings(baseline, items, sentence, front, context, SAMPLE_RULE, notes)
