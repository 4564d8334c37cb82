"""Experiments side by side: the same configurations under another device profile, network
or stack, each against the first experiment named (the reference).

Two questions, each answered with a 95 % interval over runs (runs of different experiments
are independent units; i.i.d. bootstrap, Hesterberg's expanded percentile interval,
``analysis.bootstrap.iid_bootstrap_contrast``):

- *contrast*: does a configuration's value differ between experiments? (mean in B − mean
  in A);
- *cost change*: does what a configuration costs over the baseline differ between
  experiments? ((c − baseline) in B − (c − baseline) in A): the question a product team
  asks when the device or the network changes.

What cannot be compared is refused with one line: sources without stored runs, a directory
named twice, no configuration in common, and — unless asked for with ``allow`` — different
payload sizes or publishing rates (per-message costs scale with both, so a difference would
say nothing about the setting that changed).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iotsecbench.analysis.metrics import CHARGE, METRICS, Metric, Registry
from iotsecbench.analysis.over_runs import LEVEL, contrast_over_runs
from iotsecbench.analysis.results import Interval, flat_record
from iotsecbench.errors import SpecError
from iotsecbench.report.data import ReportData, load
from iotsecbench.report.findings import MIN_RUNS
from iotsecbench.report.readable import (
    change,
    configuration_name,
    number,
    relative_percent,
    role_phrase,
    with_unit,
)

# Settings that may differ only when the user says so (--allow-different), and the
# per-run column of the runs table each is read from.
GUARDED = {"payload": ("payload_bytes", "B"), "rate": ("rate_hz", "Hz")}
# Spec fields that name the experiment rather than a condition it ran under.
NOT_CONDITIONS = {"name", "description", "configurations", "include", "exclude"}


@dataclass(frozen=True)
class Experiment:
    label: str  # short, unique among the compared experiments (from the directory)
    data: ReportData

    @property
    def baseline(self) -> str | None:
        return self.data.baseline

    def runs_of(self, configuration: str, column: str) -> np.ndarray:
        return self.data.run_values(configuration, column)


@dataclass(frozen=True)
class Contrast:
    """One configuration × metric × experiment against the reference experiment."""

    kind_of_contrast: str  # "value" (c in B − c in A) | "cost" ((c − base) in B − in A)
    configuration: str
    baseline: str | None  # for a cost contrast: what the cost is measured over
    metric: str
    role: str
    kind: str  # in the experiment: measured | modelled | counted on <target> | measured with …
    unit: str
    experiment: str
    reference: str
    value: float  # in the experiment (a mean, or a cost over the baseline)
    reference_value: float
    difference: float
    interval: Interval  # of the difference, over runs
    runs: int  # fewest runs among the groups the contrast rests on
    sentence: str = ""
    caveat: str = ""
    # How the reference experiment's figure was taken, when not as the experiment's (a run
    # counted on a virtual MCU against a modelled one); "" when both were taken alike.
    reference_kind: str = ""

    @property
    def significant(self) -> bool:
        return self.interval.excludes_zero()

    @property
    def relative_percent(self) -> float:
        return relative_percent(self.difference, self.reference_value)

    def to_dict(self) -> dict[str, Any]:
        record = flat_record(self)
        record.update(relative_percent=self.relative_percent, significant=self.significant)
        return {
            k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in record.items()
        }


@dataclass(frozen=True)
class Comparison:
    experiments: Sequence[Experiment]
    configurations: Sequence[str]  # in every experiment, in the reference's order
    differences: Sequence[tuple[str, Sequence[str]]]  # setting, its value per experiment
    contrasts: Sequence[Contrast] = ()
    notes: Sequence[str] = field(default_factory=list)

    @property
    def reference(self) -> Experiment:
        return self.experiments[0]

    @property
    def labels(self) -> list[str]:
        return [e.label for e in self.experiments]

    def of(self, configuration: str, kind_of_contrast: str) -> list[Contrast]:
        return [
            c
            for c in self.contrasts
            if c.configuration == configuration and c.kind_of_contrast == kind_of_contrast
        ]

    def headline(self) -> str:
        """What differs, in one sentence."""
        if not self.differences:
            return (
                "The experiments ran under the same settings: the comparison shows how "
                "well a rerun reproduces the first."
            )
        listed = "; ".join(
            f"{setting}: {' against '.join(values)}" for setting, values in self.differences[:6]
        )
        more = f" (and {len(self.differences) - 6} more)" if len(self.differences) > 6 else ""
        return f"What differs between {' and '.join(self.labels)} — {listed}{more}."

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiments": [
                {
                    "label": e.label,
                    "source": str(e.data.source),
                    "name": e.data.spec.get("name"),
                    "baseline": e.baseline,
                }
                for e in self.experiments
            ],
            "reference": self.reference.label,
            "configurations": list(self.configurations),
            "differences": [
                {"setting": s, "values": dict(zip(self.labels, v, strict=True))}
                for s, v in self.differences
            ],
            "headline": self.headline(),
            "contrasts": [c.to_dict() for c in self.contrasts],
            "notes": list(self.notes),
            "level": LEVEL,
        }


# --- loading and refusals ------------------------------------------------------------------


def labels_for(paths: Sequence[Path]) -> list[str]:
    """Directory names, lengthened by parent directories until they are unique."""
    parts = [Path(p).resolve().parts for p in paths]
    for depth in range(1, max(len(p) for p in parts) + 1):
        labels = ["/".join(p[-depth:]) for p in parts]
        if len(set(labels)) == len(labels):
            return labels
    return [str(p) for p in paths]


def parse_allowed(text: str) -> set[str]:
    allowed = {part.strip().lower() for part in text.split(",") if part.strip()}
    unknown = allowed - set(GUARDED)
    if unknown:
        raise SpecError(
            f"--allow-different {text!r}: choose from {', '.join(GUARDED)} "
            "(every other setting may differ anyway)"
        )
    return allowed


def load_experiments(sources: Sequence[Path], metrics: Registry = METRICS) -> list[Experiment]:
    resolved = [Path(s).resolve() for s in sources]
    for index, path in enumerate(resolved):
        if path in resolved[:index]:
            raise SpecError(f"{sources[index]} is named twice: compare different experiments")
    experiments = []
    for source, label in zip(sources, labels_for(sources), strict=True):
        data = load(Path(source), metrics=metrics)
        if not data.has_store:
            raise SpecError(
                f"{source}: comparing experiments needs the results directory `run` wrote "
                "(its per-run values); an analysis file alone has none"
            )
        experiments.append(Experiment(label, data))
    return experiments


def _levels(experiment: Experiment, column: str) -> list[float]:
    runs = experiment.data.runs
    ok = runs[runs["status"] == "ok"] if runs is not None else None
    if ok is None or column not in ok:
        return []
    return sorted({float(v) for v in ok[column].dropna()})


def check_comparable(experiments: Sequence[Experiment], allowed: Iterable[str] = ()) -> list[str]:
    """The configurations every experiment has (in the reference's order), or a SpecError
    saying in one line why these experiments cannot be compared."""
    allowed = set(allowed)
    reference = experiments[0]
    for other in experiments[1:]:
        for name, (column, unit) in GUARDED.items():
            mine, theirs = _levels(reference, column), _levels(other, column)
            if name not in allowed and mine != theirs:
                raise SpecError(
                    f"cannot compare {other.label} with {reference.label}: {name} "
                    f"{_joined(theirs, unit)} against {_joined(mine, unit)} (per-message costs "
                    f"scale with it); pass --allow-different {name} to compare anyway"
                )
    common = [
        c
        for c in reference.data.configurations
        if all(c in e.data.configurations for e in experiments[1:])
    ]
    if not common:
        listed = "; ".join(
            f"{e.label}: {', '.join(e.data.configurations) or 'none'}" for e in experiments
        )
        raise SpecError(f"the experiments have no configuration in common ({listed})")
    return common


def _joined(levels: list[float], unit: str) -> str:
    return ", ".join(f"{v:g}" for v in levels) + f" {unit}" if levels else "none"


# --- what differs ---------------------------------------------------------------------------


def _flat(prefix: str, value: Any) -> dict[str, str]:
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, item in value.items():
            flat.update(_flat(f"{prefix}.{key}" if prefix else str(key), item))
        return flat
    if isinstance(value, list):
        return {prefix: ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)}
    return {prefix: "–" if value is None else str(value)}


def _conditions(experiment: Experiment) -> dict[str, str]:
    """Everything an experiment ran under: its spec (factors, device profile, TLS, broker,
    network profiles), the host and the software versions."""
    spec = {k: v for k, v in experiment.data.spec.items() if k not in NOT_CONDITIONS}
    conditions = _flat("", spec)
    host = experiment.data.host
    for key in ("hostname", "machine", "cpu_count", "platform"):
        if key in host:
            conditions[f"host {key}"] = str(host[key])
    conditions.update({f"version of {k}": str(v) for k, v in experiment.data.versions.items()})
    return conditions


def differences(experiments: Sequence[Experiment]) -> list[tuple[str, list[str]]]:
    """Settings whose values are not the same in every experiment (missing reads as –)."""
    conditions = [_conditions(e) for e in experiments]
    keys = list(dict.fromkeys(k for c in conditions for k in c))
    rows = []
    for key in keys:
        values = [c.get(key, "–") for c in conditions]
        if len(set(values)) > 1:
            rows.append((key, values))
    return rows


# --- the contrasts --------------------------------------------------------------------------


def _contrast(
    kind_of_contrast: str,
    configuration: str,
    baseline: str | None,
    entry: Metric,
    experiment: Experiment,
    reference: Experiment,
    seed: int,
) -> Contrast | None:
    """A value contrast (``baseline`` None: c in B − c in A) or a cost contrast ((c − base)
    in B − (c − base) in A), or None when a group has fewer than 2 runs."""
    names = [configuration] if baseline is None else [configuration, baseline]
    weights = (1.0,) if baseline is None else (1.0, -1.0)
    result = contrast_over_runs(
        [experiment.runs_of(name, entry.column) for name in names],
        [reference.runs_of(name, entry.column) for name in names],
        weights,
        (kind_of_contrast, entry.column, configuration, experiment.label),
        seed,
    )
    if result is None:
        return None
    # each experiment labels its own figure: a device emitter's is counted on its target
    kind = experiment.data.metric_of(entry.key, entry.role).kind
    reference_kind = reference.data.metric_of(entry.key, entry.role).kind
    return _described(
        entry,
        Contrast(
            kind_of_contrast=kind_of_contrast,
            configuration=configuration,
            baseline=baseline,
            **{**entry.labels(), "kind": kind},
            reference_kind="" if reference_kind == kind else reference_kind,
            experiment=experiment.label,
            reference=reference.label,
            value=result.value,
            reference_value=result.reference_value,
            difference=result.estimate,
            interval=result.interval,
            runs=result.runs,
        ),
    )


def _described(about: Metric, c: Contrast) -> Contrast:
    shown = change(c.difference, c.interval.low, c.interval.high, c.reference_value, about.unit)
    # taken alike, the kind is said once with the metric; otherwise with each value
    mixed = bool(c.reference_kind)
    values = (
        f"{number(c.value, shown.decimals)} on {c.experiment}"
        + (f" ({c.kind})" if mixed else "")
        + f" against {with_unit(number(c.reference_value, shown.decimals), about.unit)} on "
        + f"{c.reference}"
        + (f" ({c.reference_kind})" if mixed else "")
    )
    interval_only = f"({shown.relative}{LEVEL * 100:.0f} % CI {shown.interval})"
    with_change = f"({shown.signed}, {shown.relative}{LEVEL * 100:.0f} % CI {shown.interval})"
    taken = about.name if mixed else dataclasses.replace(about, kind=c.kind).described
    what = f"{role_phrase(c.role)} {taken}"
    name = configuration_name(c.configuration)
    between = f"between {c.reference} and {c.experiment}"
    if c.kind_of_contrast == "value":
        if c.significant:
            word = "higher" if c.difference > 0 else "lower"
            sentence = (
                f"{name}: {what} is {shown.amount} {word} on {c.experiment}: {values} "
                f"{interval_only}."
            )
        else:
            sentence = (
                f"{name}: {what} does not differ detectably {between}: {values} {with_change}."
            )
    else:
        over = configuration_name(str(c.baseline))
        if c.significant:
            word = "more" if c.difference > 0 else "less"
            sentence = (
                f"What {name} costs over {over} in {what} is {shown.amount} {word} on "
                f"{c.experiment}: {values} {interval_only}."
            )
        else:
            sentence = (
                f"What {name} costs over {over} in {what} does not change detectably "
                f"{between}: {values} {with_change}."
            )
    caveat = ""
    if c.interval.degenerate:
        caveat = f"Degenerate interval ({c.runs} runs): not an answer."
    elif c.runs < MIN_RUNS:
        caveat = f"Indicative: {c.runs} runs per group (fewer than {MIN_RUNS})."
    return dataclasses.replace(c, sentence=sentence, caveat=caveat)


def compare(experiments: Sequence[Experiment], allowed: Iterable[str] = ()) -> Comparison:
    """Every contrast the stored runs support, configuration by configuration."""
    configurations = check_comparable(experiments, allowed)
    reference = experiments[0]
    seed = int(reference.data.spec.get("seed", 0))
    notes = []
    baseline = reference.baseline if reference.baseline in configurations else None
    other_baselines = {e.baseline for e in experiments[1:]} - {reference.baseline}
    if other_baselines:
        notes.append(
            f"The experiments name different baselines ({', '.join(map(str, other_baselines))} "
            f"against {reference.baseline}); costs are taken over {reference.label}'s."
        )
    durations = {float(e.data.spec.get("duration_s", math.nan)) for e in experiments}
    # The registry's findings metrics (modelled energy first, then the measured ones compared
    # over runs) and the others it marks, e.g. what the run cost the embedded broker.
    compared = reference.data.metrics.across_experiments()
    if len(durations) > 1:  # charge per run grows with the run's duration
        compared = [entry for entry in compared if entry.key != CHARGE]
        notes.append(
            "Charge per run not compared: runs lasted "
            f"{' against '.join(f'{d:g} s' for d in sorted(durations))} (current is)."
        )
    contrasts: list[Contrast] = []
    for experiment in experiments[1:]:
        for configuration in configurations:
            for entry in compared:
                pairs = [(None, "value")]
                if baseline is not None and configuration != baseline:
                    pairs.append((baseline, "cost"))
                for over, kind in pairs:
                    found = _contrast(kind, configuration, over, entry, experiment, reference, seed)
                    if found is not None:
                        contrasts.append(found)
    fewest = min((c.runs for c in contrasts), default=0)
    if contrasts and fewest < MIN_RUNS:
        notes.append(
            f"Few runs: {fewest} per configuration in some experiment; intervals over fewer "
            f"than {MIN_RUNS} runs are indicative."
        )
    if not contrasts:
        notes.append("No contrast: every configuration needs at least 2 completed runs.")
    only = {
        e.label: [c for c in e.data.configurations if c not in configurations] for e in experiments
    }
    for label, names in only.items():
        if names:
            notes.append(f"Only in {label} (not compared): {', '.join(names)}.")
    return Comparison(experiments, configurations, differences(experiments), contrasts, notes)


def default_directory(sources: Sequence[Path]) -> Path:
    """``FIRST/compared-with-SECOND+THIRD``: the reference experiment holds the comparison."""
    labels = labels_for(sources)
    name = re.sub(r"[^A-Za-z0-9_.+-]", "-", "+".join(labels[1:]))
    return Path(sources[0]) / f"compared-with-{name}"
