"""The answer first: what each configuration costs against the baseline, one sentence per
headline metric, every number taken from the analysis or the stored runs.

Two kinds of interval stand behind a finding:

- current, charge (modelled) and mean latency: the analysis' comparison (block bootstrap
  within runs, ``analysis.json``), the study's method;
- latency p50/p99, connection set-up time, CPU per message and bytes per message: one value
  per run, compared with an i.i.d. bootstrap over runs (Hesterberg's expanded percentile
  interval, ``analysis.bootstrap.iid_bootstrap_difference``).

Sample-size honesty: a finding resting on fewer than ``MIN_RUNS`` runs of either
configuration, or on a degenerate interval, says so, and names how many runs would give a
95 % interval of ±``PRECISION`` of the baseline, estimated from the observed run-to-run
spread (``runs_needed``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from iotsecbench.analysis.bootstrap import iid_bootstrap_difference, keyed_generator
from iotsecbench.analysis.pareto import SECURITY_PROPERTY_NAMES, has_property, pareto_analysis
from iotsecbench.report.data import ReportData
from iotsecbench.report.readable import (
    change,
    configuration_name,
    effect_word,
    labelled,
    metric,
    number,
    relative_percent,
    role_phrase,
)

LEVEL = 0.95
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
MAX_RUNS_NEEDED = 10_000
RUN_LEVEL_REPS = 2000

# (metric, role) pairs the analysis compares within runs, in the order findings list them.
ANALYSIS_METRICS = (
    ("current_ma", "emitter"),
    ("current_ma", "receiver"),
    ("energy_mah", "emitter"),
    ("energy_mah", "receiver"),
)
# (metric, role, column of the per-run frame, report.summary.summary_frames) over runs.
RUN_LEVEL_METRICS = (
    ("latency_p50_ms", "end-to-end", "latency_p50_ms"),
    ("latency_p99_ms", "end-to-end", "latency_p99_ms"),
    ("setup_ms", "emitter", "setup_ms"),
    ("cpu_us_per_message", "emitter", "emitter_cpu_us_per_message"),
    ("cpu_us_per_message", "receiver", "receiver_cpu_us_per_message"),
    ("wire_bytes_per_message", "emitter", "wire_bytes_per_message"),
)


@dataclass(frozen=True)
class Finding:
    configuration: str
    baseline: str
    metric: str  # key of readable.METRICS
    role: str  # emitter | receiver | end-to-end
    kind: str  # measured (on this host) | modelled | measured with <meter>
    unit: str
    value: float  # mean of the configuration
    baseline_value: float
    difference: float  # value − baseline_value
    ci_low: float
    ci_high: float
    level: float
    interval_method: str
    runs: int  # runs of the configuration or the baseline, whichever has fewer
    runs_needed: int | None  # for a ±PRECISION interval, from the observed spread
    enough_runs: bool
    cohens_d: float | None = None
    sentence: str = ""
    caveat: str = ""

    @property
    def relative_percent(self) -> float:
        return relative_percent(self.difference, self.baseline_value)

    @property
    def significant(self) -> bool:
        return self.ci_low > 0 or self.ci_high < 0

    def to_dict(self) -> dict[str, Any]:
        record = dataclasses.asdict(self)
        record["relative_percent"] = self.relative_percent
        record["significant"] = self.significant
        # JSON has no NaN: a value that does not exist is null.
        return {
            k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in record.items()
        }


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
        return {
            "baseline": self.baseline,
            "context": self.context,
            "sample_rule": self.sample_rule,
            "precision": PRECISION,
            "findings": [f.to_dict() for f in self.items],
            "pareto": {"sentence": self.pareto, "front": list(self.front)},
            "notes": list(self.notes),
        }


def runs_needed(
    values_a: np.ndarray, values_b: np.ndarray, baseline_value: float, precision: float
) -> int | None:
    """Runs per configuration for a 95 % interval of ``mean(a) − mean(b)`` no wider than
    ±``precision``·|baseline|: the smallest n with t(0.975, 2n−2)·√((s_a² + s_b²)/n) below
    it, s the observed between-run standard deviations. None when the spread cannot be
    estimated (fewer than 2 runs, or none at all) or the baseline is 0."""
    a, b = np.asarray(values_a, dtype=float), np.asarray(values_b, dtype=float)
    if a.size < 2 or b.size < 2 or baseline_value == 0 or not math.isfinite(baseline_value):
        return None
    spread = float(a.var(ddof=1) + b.var(ddof=1))
    if not math.isfinite(spread):
        return None
    target = precision * abs(baseline_value)
    for n in range(2, MAX_RUNS_NEEDED + 1):
        if stats.t.ppf(0.5 + LEVEL / 2, 2 * n - 2) * math.sqrt(spread / n) <= target:
            return n
    return MAX_RUNS_NEEDED


def _sentence(f: Finding) -> str:
    about = metric(f.metric, f.kind)
    shown = change(f.difference, f.ci_low, f.ci_high, f.baseline_value, about.unit)
    what = f"{role_phrase(f.role)} {about.described}"
    detail = f"({shown.relative}{LEVEL * 100:.0f} % CI {shown.interval}"
    # A degenerate interval (no spread) makes d meaningless: a difference over ~0.
    word = effect_word(f.cohens_d) if f.ci_high > f.ci_low else None
    detail += f"; {word} effect, d = {number(f.cohens_d or 0.0, 2)})" if word else ")"
    name = configuration_name(f.configuration)
    if f.significant:
        verb = "raises" if f.difference > 0 else "lowers"
        return f"{name} {verb} {what} by {shown.amount} {detail}."
    baseline = configuration_name(f.baseline)
    return f"{name} does not change {what} detectably against {baseline}: {shown.signed} {detail}."


def _caveat(f: Finding) -> str:
    needed = (
        f"; ±{PRECISION * 100:g} % would need about {max(f.runs_needed, MIN_RUNS)} runs"
        if f.runs_needed
        else ""
    )
    if f.ci_high <= f.ci_low:
        return f"Degenerate interval ({f.runs} runs): not an answer{needed}."
    if not f.enough_runs:
        return f"Indicative: {f.runs} runs per configuration (fewer than {MIN_RUNS}){needed}."
    return ""


def _finding(
    configuration: str,
    baseline: str,
    metric_key: str,
    role: str,
    runs_a: np.ndarray,
    runs_b: np.ndarray,
    current: str,
    **measured: Any,
) -> Finding:
    """A finding from its estimate and interval (``measured``) and the per-run values its
    sample-size caveat rests on; label, unit, caveat and sentence are derived here.
    ``current``: what the device's current is (``ReportData.current_kind``)."""
    runs = min(runs_a.size, runs_b.size)
    finding = Finding(
        configuration=configuration,
        baseline=baseline,
        **labelled(metric_key, role, current),
        runs=runs,
        runs_needed=runs_needed(runs_a, runs_b, measured["baseline_value"], PRECISION),
        enough_runs=runs >= MIN_RUNS,
        **measured,
    )
    finding = dataclasses.replace(finding, caveat=_caveat(finding))
    return dataclasses.replace(finding, sentence=_sentence(finding))


def _cv_run_means(data: ReportData, configuration: str, metric_key: str, role: str) -> np.ndarray:
    if data.analysis is None:
        return np.array([])
    for row in data.analysis.cv:
        if (row.configuration, row.metric, row.device) == (configuration, metric_key, role):
            return np.asarray(row.run_means, dtype=float)
    return np.array([])


def _from_comparisons(data: ReportData, baseline: str, configuration: str) -> list[Finding]:
    found = []
    comparisons = data.analysis.comparisons if data.analysis is not None else ()
    for metric_key, role in ANALYSIS_METRICS:
        row = next(
            (
                c
                for c in comparisons
                if (c.metric, c.device) == (metric_key, role)
                and {c.a, c.b} == {configuration, baseline}
            ),
            None,
        )
        if row is None:
            continue
        sign = 1.0 if row.a == configuration else -1.0
        value, base = (row.mean_a, row.mean_b) if sign > 0 else (row.mean_b, row.mean_a)
        low, high = sorted((sign * row.ci_low, sign * row.ci_high))
        column = f"{role}_{'current_ma' if metric_key == 'current_ma' else 'charge_mah'}"
        # The stored per-run values are the model's; a measured current's run means are
        # the analysis' own.
        measured = data.current_measured
        runs_a = np.array([]) if measured else data.run_values(configuration, column)
        runs_b = np.array([]) if measured else data.run_values(baseline, column)
        if not runs_a.size:
            runs_a = _cv_run_means(data, configuration, metric_key, role)
            runs_b = _cv_run_means(data, baseline, metric_key, role)
        found.append(
            _finding(
                configuration,
                baseline,
                metric_key,
                role,
                runs_a,
                runs_b,
                data.current_kind,
                value=float(value),
                baseline_value=float(base),
                difference=sign * float(row.difference),
                ci_low=float(low),
                ci_high=float(high),
                level=float(row.level),
                interval_method=row.interval_method,
                cohens_d=None if row.cohens_d is None else sign * float(row.cohens_d),
            )
        )
    return found


def _over_runs(data: ReportData, baseline: str, configuration: str, seed: int) -> list[Finding]:
    found = []
    for metric_key, role, column in RUN_LEVEL_METRICS:
        a = data.run_values(configuration, column)
        b = data.run_values(baseline, column)
        if a.size < 2 or b.size < 2:
            continue  # one run has no spread: the summary table shows its value
        result = iid_bootstrap_difference(
            a, b, reps=RUN_LEVEL_REPS, level=LEVEL,
            seed=keyed_generator(seed, "finding", metric_key, role, configuration, baseline),
        )  # fmt: skip
        pooled = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
        found.append(
            _finding(
                configuration,
                baseline,
                metric_key,
                role,
                a,
                b,
                data.current_kind,
                value=float(a.mean()),
                baseline_value=float(b.mean()),
                difference=result.estimate,
                ci_low=result.interval.low,
                ci_high=result.interval.high,
                level=LEVEL,
                interval_method=result.interval.method,
                cohens_d=result.estimate / pooled if pooled > 0 else None,
            )
        )
    return found


def _context(data: ReportData) -> str:
    device = data.spec.get("device")
    facts = data.host
    parts = [f"device profile {device}"] if device else []
    if facts:
        parts.append(
            f"host {facts.get('hostname', '?')} ({facts.get('machine', '?')}, "
            f"{facts.get('cpu_count', '?')} CPUs)"
        )
    return ", ".join(parts)


def _pareto(data: ReportData, context: str) -> tuple[str, list[str]]:
    """The front over the analysis' objectives plus each security property as an axis of
    its own (having it beats lacking it), so plain MQTT cannot dominate an encrypted
    configuration by being cheaper alone."""
    pareto = data.analysis.pareto if data.analysis is not None else None
    if pareto is None or not pareto.values:
        return "", []
    objectives: dict[str, str] = dict(pareto.objectives)
    values: dict[str, dict[str, float]] = {c: dict(v) for c, v in pareto.values.items()}
    with_security = bool(data.security)
    if with_security:
        for configuration in values:
            properties = data.security.get(configuration, {})
            for name in SECURITY_PROPERTY_NAMES:
                values[configuration][name] = float(has_property(properties, name))
        objectives.update({name: "max" for name in SECURITY_PROPERTY_NAMES})
    result = pareto_analysis(values, objectives)
    axes = [
        f"{about.described} ({'lower' if d == 'min' else 'higher'} is better)"
        for k, d in pareto.objectives.items()
        for about in [metric(k, data.current_kind)]
    ]
    front = [configuration_name(c) for c in result.front]
    listed = ", ".join(front[:-1]) + f" and {front[-1]}" if len(front) > 1 else front[0]
    beaten = [c for c in result.configurations if c not in result.front]
    sentence = (
        f"Pareto front: no configuration beats {listed} on every axis at once "
        f"({', '.join(axes)}"
        + ("; and each security property, having it is better" if with_security else "")
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
    """Every finding the data supports, configuration by configuration, in report order."""
    baseline = data.baseline
    if baseline is None:
        return Findings(baseline=None)
    seed = int(data.spec.get("seed", 0) if seed is None else seed)
    items: list[Finding] = []
    for configuration in data.configurations:
        if configuration == baseline:
            continue
        items += _from_comparisons(data, baseline, configuration)
        items += _over_runs(data, baseline, configuration, seed)
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
