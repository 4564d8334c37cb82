"""The whole `stability` analysis: frames in, one :class:`AnalysisResult` record out.

Pure: no files, no processes, no global random state (every bootstrap draws from a
generator derived from ``options.seed`` and the name of what it resamples, so results do
not depend on the order of computation). ``AnalysisResult.to_dict()`` is the
``analysis.json`` document (see ``docs/analysis.md``).

Inputs are the store's frames (``docs/internals.md``): current ``configuration, device, run,
time_s, current_ma`` (any rate; aggregated to 1 Hz here) and latency ``configuration, run,
seq, latency_ms``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from iotsecbench.analysis import checks
from iotsecbench.analysis.battery import BatteryParameters, BatteryProjection, project_battery
from iotsecbench.analysis.bootstrap import (
    BOOTSTRAP_CLASSES,
    BlockBootstrap,
    choose_block_length,
    pooled_mean,
)
from iotsecbench.analysis.changepoint import detect_change_points
from iotsecbench.analysis.checks import QualityWarning
from iotsecbench.analysis.comparisons import (
    BLOCKINGS,
    comparison_row,
    energy_comparisons,
    run_blocks,
)
from iotsecbench.analysis.describe import (
    coefficient_of_variation,
    describe,
    per_minute_mean,
    run_energy_mah,
    segment_cv,
    to_one_hertz,
)
from iotsecbench.analysis.document import FORMAT_NAME, FORMAT_VERSION
from iotsecbench.analysis.hypotheses import Hypothesis, evaluate_hypotheses
from iotsecbench.analysis.metrics import CHARGE, CURRENT, ENERGY_PER_BYTE, LATENCY, METRICS
from iotsecbench.analysis.model_range import ModelDraws, ModelSection, model_stage
from iotsecbench.analysis.pareto import SECURITY_PROPERTY_NAMES, ParetoResult, pareto_analysis
from iotsecbench.analysis.results import Comparison, Record, plain
from iotsecbench.analysis.sensitivity import RunRegimes, SensitivityResult, energy_sensitivity
from iotsecbench.analysis.timeseries import (
    DEFAULT_LJUNG_BOX_LAGS,
    correlogram,
    cross_correlation_of_differences,
    ljung_box,
    stationarity,
)
from iotsecbench.errors import DataError, SpecError

CURRENT_COLUMNS = ("configuration", "device", "run", "time_s", CURRENT)
LATENCY_COLUMNS = ("configuration", "run", "seq", LATENCY)
LATENCY_DEVICE = "end-to-end"  # latency is measured from emitter to receiver
UNITS = {key: METRICS.metric(key).unit for key in (CURRENT, CHARGE, LATENCY)}
LONG_SERIES = 2000  # runs longer than this (per-message latency) get a fixed ADF lag order
ADF_LAGS_LONG_SERIES = 20  # fixed ADF lags there: one regression instead of an AIC search


# Bounds on what a user may ask for: replicates and block lengths beyond these do not fit in
# memory (an array of replicates × series length), and a seed is a 64-bit number.
MAX_REPLICATES = 100_000
MAX_BLOCK_LENGTH = 100_000
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class AnalysisOptions(Record):
    """Every parameter of the analysis, with the study's defaults."""

    baseline: str | None = None  # None: "plain" if present, else the first configuration
    bootstrap: str = "moving"  # "moving" | "circular" | "stationary"
    block_length: int | str = 20  # int, "auto" (Politis–White) or "kc" (ceil 1.5·k_c)
    reps: int = 2000
    level: float = 0.95
    seed: int = 0
    segments: int = 5  # contiguous segments per run for the segment CV
    max_lag: int = 60  # ACF/PACF/CCF lags
    ljung_box_lags: tuple[int, ...] = DEFAULT_LJUNG_BOX_LAGS
    ljung_box_summary_lag: int = 20  # lag whose p-value goes into the series table
    mode_resolution: float = 0.1  # rounding step for the mode (mA, ms)
    change_point_penalty: float = 2.0  # β of the PELT penalty β·σ²_LR·log n
    max_transient_fraction: float = 0.5
    # cumulative charge and mean latency, each the way the registry says is better
    objectives: Mapping[str, str] = field(
        default_factory=lambda: {key: METRICS.metric(key).direction for key in (CHARGE, LATENCY)}
    )
    constraints: tuple[str, ...] = ()  # security properties every Pareto candidate must have
    hypothesis_metric: str = CURRENT
    battery: BatteryParameters = field(default_factory=BatteryParameters)
    # Energy comparisons paired by block (docs/analysis.md): "none" (runs independent),
    # "repetition" (every configuration of one repetition is a block: run order permuted
    # within it) or "worker" (the machine that measured the runs, runs.worker: Dask sweeps).
    block_on: str = "none"
    # Draws of the device profile behind the model's ranges (analysis.model_range); the
    # draws are seeded by `seed`.
    model_draws: int = 1000

    def __post_init__(self) -> None:
        if self.block_on not in BLOCKINGS:
            raise SpecError(f"--block-on {self.block_on!r}: use none, repetition or worker")
        if self.bootstrap not in BOOTSTRAP_CLASSES:
            raise SpecError(
                f"unknown bootstrap {self.bootstrap!r}: use moving, circular or stationary"
            )
        rule = self.block_length
        if isinstance(rule, str) and rule not in ("auto", "kc"):
            raise SpecError(f"block length {rule!r}: use a positive integer, 'auto' or 'kc'")
        if not isinstance(rule, str) and (
            isinstance(rule, bool) or not 1 <= int(rule) <= MAX_BLOCK_LENGTH
        ):
            raise SpecError(
                f"block length {rule!r}: use a positive integer up to {MAX_BLOCK_LENGTH:,}, "
                "'auto' or 'kc'"
            )
        if not 100 <= self.reps <= MAX_REPLICATES:
            raise SpecError(
                f"--reps {self.reps}: use 100 to {MAX_REPLICATES:,} replicates (2000 default)"
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise SpecError(f"--seed {self.seed}: use a whole number from 0 to {MAX_SEED}")
        unknown = [name for name in self.constraints if name not in SECURITY_PROPERTY_NAMES]
        if unknown:
            raise SpecError(
                f"--require {unknown[0]!r}: not a security property; use "
                + ", ".join(SECURITY_PROPERTY_NAMES)
            )
        if not 100 <= self.model_draws <= MAX_REPLICATES:  # as energy.uncertainty.check_draws
            raise SpecError(
                f"--model-draws {self.model_draws}: use 100 to {MAX_REPLICATES:,} draws "
                "(1000 default)"
            )
        if not 0.5 <= self.level < 1.0:
            raise SpecError(f"confidence level {self.level} must lie in [0.5, 1)")
        if self.segments < 1 or self.max_lag < 1:
            raise SpecError("segments and max_lag must be positive")
        for name, direction in self.objectives.items():
            if direction not in ("min", "max"):
                raise SpecError(f"objective {name!r}: direction must be 'min' or 'max'")


@dataclass(frozen=True)
class AnalysisResult(Record):
    """Everything ``iotsecbench analyze`` computes; ``to_dict()`` is ``analysis.json``."""

    options: AnalysisOptions
    configurations: tuple[str, ...]
    devices: tuple[str, ...]
    baseline: str
    descriptive: tuple[Mapping[str, Any], ...]  # per configuration × device × metric (× regime)
    cv: tuple[Mapping[str, Any], ...]  # CV across runs and across segments
    per_minute: tuple[Mapping[str, Any], ...]  # per-minute mean current
    series: tuple[
        Mapping[str, Any], ...
    ]  # temporal diagnostics per configuration × device × metric
    cross_correlations: tuple[Mapping[str, Any], ...]  # emitter vs receiver, first differences
    comparisons: tuple[Comparison, ...]
    pareto: ParetoResult | None
    hypotheses: tuple[Hypothesis, ...]
    sensitivity: tuple[SensitivityResult, ...]
    battery: tuple[BatteryProjection, ...]
    warnings: tuple[QualityWarning, ...]
    notes: tuple[str, ...]
    # The device model's ranges (analysis.model_range); None without the profile's draws
    # (a measured current, CSV input, a profile that cannot be loaded).
    model: ModelSection | None = None

    def to_dict(self) -> dict[str, Any]:
        body = super().to_dict()
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, **body}

    def summary(self) -> str:
        significant = sum(c.significant for c in self.comparisons)
        return (
            f"{len(self.configurations)} configurations, {len(self.comparisons)} comparisons "
            f"({significant} significant), {len(self.warnings)} warnings"
        )


def _require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(f"{what} frame lacks column(s) {', '.join(missing)}")


def _order_configurations(names: Sequence[str], baseline: str | None) -> tuple[list[str], str]:
    ordered = list(dict.fromkeys(names))
    if baseline is None:
        baseline = "plain" if "plain" in ordered else ordered[0]
    elif baseline not in ordered:
        raise SpecError(
            f"baseline {baseline!r} is not among the configurations: {', '.join(ordered)}"
        )
    return [baseline, *[c for c in ordered if c != baseline]], baseline


def _majority(verdicts: Sequence[str]) -> str:
    values, counts = np.unique(np.asarray(verdicts), return_counts=True)
    best = counts.max()
    winners = sorted(values[counts == best])
    return str(winners[0]) if len(winners) == 1 else "inconclusive"


# --- stage results -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Series:
    """Runs of one configuration × device × metric, in time order."""

    configuration: str
    device: str
    metric: str
    runs: Mapping[Any, np.ndarray]
    times: Mapping[Any, np.ndarray]

    @property
    def subject(self) -> dict[str, str]:
        return {"configuration": self.configuration, "device": self.device, "metric": self.metric}


@dataclass(frozen=True)
class _Inputs:
    """Stage 1: the frames checked, ordered and split into series."""

    configurations: tuple[str, ...]  # the baseline first
    baseline: str
    devices: tuple[str, ...]
    current: tuple[_Series, ...]  # 1 Hz current per configuration × device
    latency: tuple[_Series, ...]  # per-message latency per configuration

    @property
    def series(self) -> tuple[_Series, ...]:
        return (*self.current, *self.latency)


@dataclass(frozen=True)
class _Diagnosis:
    """Stage 2, per series: temporal diagnostics of every run and their aggregate record."""

    series: _Series
    record: Mapping[str, Any]  # a row of analysis.json's ``series`` table
    per_run: tuple[Mapping[str, Any], ...]
    steady: Mapping[Any, np.ndarray]  # values after the detected transient, per run
    transients: Mapping[Any, int]  # index where the steady state starts, per run

    @property
    def k_c(self) -> int:
        return int(self.record["k_c"])


@dataclass(frozen=True)
class _Description:
    """Stage 3: descriptive statistics, CVs, per-minute means and per-run charge."""

    descriptive: tuple[Mapping[str, Any], ...]
    cv: tuple[Mapping[str, Any], ...]
    per_minute: tuple[Mapping[str, Any], ...]
    energy: Mapping[tuple[str, str], Mapping[Any, float]]  # (configuration, device) → run → mAh
    durations: Mapping[tuple[str, str], Mapping[Any, float]]  # … → run → seconds
    warnings: tuple[QualityWarning, ...]


def analyze(
    current: pd.DataFrame,
    latency: pd.DataFrame | None = None,
    properties: Mapping[str, Mapping[str, Any]] | None = None,
    options: AnalysisOptions | None = None,
    model: ModelDraws | None = None,
) -> AnalysisResult:
    """Run the full analysis, one stage after another.

    Parameters
    ----------
    current : DataFrame
        ``configuration, device, run, time_s, current_ma`` at any rate ≥ 1 Hz (aggregated to
        1 Hz by the mean of the samples within each whole second).
    latency : DataFrame, optional
        ``configuration, run, seq, latency_ms``.
    properties : mapping, optional
        configuration → security properties (``SecurityProperties.to_dict()``), used by the
        Pareto constraints and the ``security_score`` objective.
    options : AnalysisOptions, optional
    model : ModelDraws, optional
        How each run's modelled mean current moves over draws of its device profile: every
        comparison and value of the modelled current and charge gets the model's range
        beside the runs' interval (``analysis.model_range``).

    Returns
    -------
    AnalysisResult
    """
    options = options or AnalysisOptions()
    inputs = _prepare(current, latency, options)
    diagnoses = {
        (s.configuration, s.device, s.metric): _diagnose(s, options) for s in inputs.series
    }
    description = _describe(inputs, diagnoses, options)
    comparisons, block_warnings = _series_comparisons(inputs, diagnoses, options)
    energy, energy_warnings = energy_comparisons(
        description.energy,
        inputs.configurations,
        (options.reps, options.level, options.seed),
        (options.block_on, run_blocks(current, options.block_on)),
    )
    comparisons += energy
    section, drawn = None, None
    if model is not None:
        stage = model_stage(
            comparisons,
            {(s.configuration, s.device): s.runs for s in inputs.current},
            description.energy,
            description.durations,
            model,
            CURRENT,
            CHARGE,
            run_blocks(current, options.block_on),
            METRICS.column(ENERGY_PER_BYTE).key,
        )
        comparisons, drawn = list(stage.comparisons), stage.active_current
        section = ModelSection(model.method, model.draws, model.level, model.notes, stage.values)
    notes = [
        "current aggregated to 1 Hz by the mean of the samples within each whole second",
        "block bootstraps resample each run separately (no block crosses a run boundary); "
        "intervals are conditional on the observed runs",
    ]
    pareto, pareto_notes = _pareto(inputs, description, properties, options)
    hypotheses = evaluate_hypotheses(
        comparisons,
        pareto,
        list(inputs.configurations),
        inputs.baseline,
        options.hypothesis_metric,
        inputs.devices,
    )
    sensitivity, active = _regimes(inputs, diagnoses, description)
    return AnalysisResult(
        options=options,
        configurations=inputs.configurations,
        devices=inputs.devices,
        baseline=inputs.baseline,
        descriptive=description.descriptive,
        cv=description.cv,
        per_minute=description.per_minute,
        series=tuple(plain(d.record) for d in diagnoses.values()),
        cross_correlations=tuple(_cross_correlations(inputs.current, options)),
        comparisons=tuple(comparisons),
        pareto=pareto,
        hypotheses=tuple(hypotheses),
        sensitivity=tuple(sensitivity),
        battery=tuple(project_battery(active, inputs.baseline, options.battery, drawn)),
        warnings=(*description.warnings, *block_warnings, *energy_warnings),
        notes=(*notes, *pareto_notes),
        model=section,
    )


def _prepare(
    current: pd.DataFrame, latency: pd.DataFrame | None, options: AnalysisOptions
) -> _Inputs:
    """Stage 1: check the frames, order the configurations, aggregate to 1 Hz, split."""
    _require_columns(current, CURRENT_COLUMNS, "current")
    if current.empty:
        raise DataError("the current frame is empty")
    names = list(current["configuration"].astype(str))
    if latency is not None:
        _require_columns(latency, LATENCY_COLUMNS, "latency")
        names += list(latency["configuration"].astype(str))
    configurations, baseline = _order_configurations(names, options.baseline)
    rank = {c: i for i, c in enumerate(configurations)}
    one_hz = to_one_hertz(current.assign(configuration=current["configuration"].astype(str)))
    current_series = sorted(
        _collect(one_hz, CURRENT, "time_s", None),
        key=lambda s: (rank[s.configuration], s.device),
    )
    latency_series: list[_Series] = []
    if latency is not None and not latency.empty:
        latency = latency.assign(configuration=latency["configuration"].astype(str))
        latency_series = sorted(
            _collect(latency, LATENCY, "seq", LATENCY_DEVICE),
            key=lambda s: rank[s.configuration],
        )
    return _Inputs(
        configurations=tuple(configurations),
        baseline=baseline,
        devices=tuple(dict.fromkeys(one_hz["device"].astype(str))),
        current=tuple(current_series),
        latency=tuple(latency_series),
    )


def _collect(frame: pd.DataFrame, value: str, order: str, device: str | None) -> list[_Series]:
    keys = ["configuration", "device"] if device is None else ["configuration"]
    result = []
    for key, group in frame.groupby(keys, sort=False, observed=True):
        names = key if isinstance(key, tuple) else (key,)
        configuration = str(names[0])
        dev = str(names[1]) if device is None else device
        runs, times = {}, {}
        for run, run_frame in group.groupby("run", sort=True, observed=True):
            run_frame = run_frame.sort_values(order)
            runs[run] = run_frame[value].to_numpy(dtype=float)
            times[run] = run_frame[order].to_numpy(dtype=float)
        result.append(_Series(configuration, dev, value, runs, times))
    return result


def _diagnose(series: _Series, options: AnalysisOptions) -> _Diagnosis:
    """Stage 2: per-run diagnostics of one series and the aggregated series record."""
    per_run = []
    steady: dict[Any, np.ndarray] = {}
    transients: dict[Any, int] = {}
    long_series = max(len(v) for v in series.runs.values()) > LONG_SERIES
    adf = {"adf_maxlag": ADF_LAGS_LONG_SERIES, "adf_autolag": None} if long_series else {}
    for run, values in series.runs.items():
        if values.size < 10:
            raise DataError(
                f"{series.configuration}/{series.device} run {run}: {values.size} values; "
                "at least 10 are needed"
            )
        gram = correlogram(values, options.max_lag)
        boxes = ljung_box(values, options.ljung_box_lags)
        whole = stationarity(values, **adf)
        cps = detect_change_points(
            values,
            penalty_factor=options.change_point_penalty,
            max_transient_fraction=options.max_transient_fraction,
        )
        steady_values = values[cps.transient_end :]
        steady_state = stationarity(steady_values, **adf) if cps.transient_end else whole
        steady[run] = steady_values
        transients[run] = cps.transient_end
        times = series.times[run]
        per_run.append(
            {
                "run": run,
                "n": int(values.size),
                "correlogram": gram,
                "ljung_box": boxes,
                "stationarity": whole,
                "steady_state_stationarity": steady_state,
                "change_points": list(cps.change_points),
                "change_point_times": [float(times[i]) for i in cps.change_points],
                "transient_end": cps.transient_end,
                "transient_end_time": float(times[cps.transient_end])
                if cps.transient_end
                else None,
                "segment_means": list(cps.segment_means),
                "segment_cv": segment_cv(values, options.segments)
                if values.size >= options.segments
                else float("nan"),
            }
        )
    k_c = max(r["correlogram"].k_c for r in per_run)
    summary_lag = min(
        options.ljung_box_lags, key=lambda lag: abs(lag - options.ljung_box_summary_lag)
    )

    def lb_at(r: dict) -> float:
        for t in r["ljung_box"]:
            if t.params["lags"] == summary_lag:
                return t.pvalue
        return r["ljung_box"][-1].pvalue if r["ljung_box"] else float("nan")

    acfs = [r["correlogram"] for r in per_run]
    common = min(len(g.acf) for g in acfs)
    steady_verdicts = [r["steady_state_stationarity"].verdict for r in per_run]
    record = {
        "configuration": series.configuration,
        "device": series.device,
        "metric": series.metric,
        "runs_count": len(per_run),
        "k_c": int(k_c),
        "k_c_censored": any(g.k_c_censored for g in acfs),
        "ljung_box_lag": int(summary_lag),
        "ljung_box_pvalue": float(np.median([lb_at(r) for r in per_run])),
        "adf_pvalue": float(np.median([r["stationarity"].adf.pvalue for r in per_run])),
        "kpss_pvalue": float(np.median([r["stationarity"].kpss.pvalue for r in per_run])),
        "steady_state_adf_pvalue": float(
            np.median([r["steady_state_stationarity"].adf.pvalue for r in per_run])
        ),
        "steady_state_kpss_pvalue": float(
            np.median([r["steady_state_stationarity"].kpss.pvalue for r in per_run])
        ),
        "stationarity": _majority([r["stationarity"].verdict for r in per_run]),
        "steady_state_stationarity": _majority(steady_verdicts),
        "change_points": {str(r["run"]): r["change_point_times"] for r in per_run},
        "transient_s": {str(r["run"]): r["transient_end_time"] or 0.0 for r in per_run},
        "acf_mean": np.mean([g.acf[:common] for g in acfs], axis=0),
        "pacf_mean": np.mean([g.pacf[:common] for g in acfs], axis=0),
        "white_noise_band": float(np.mean([g.white_noise_band for g in acfs])),
        "aggregation": "p-values: median over runs; k_c: maximum over runs; verdicts: majority",
        "runs": per_run,
    }
    return _Diagnosis(series, record, tuple(per_run), steady, transients)


def _describe(
    inputs: _Inputs,
    diagnoses: Mapping[tuple[str, str, str], _Diagnosis],
    options: AnalysisOptions,
) -> _Description:
    """Stage 3: descriptive statistics (whole and steady state), CVs, per-minute means, the
    per-run charge of every current series, and the quality warnings these raise."""
    descriptive: list[dict] = []
    cv_rows: list[dict] = []
    per_minute: list[dict] = []
    energy: dict[tuple[str, str], dict[Any, float]] = {}
    durations: dict[tuple[str, str], dict[Any, float]] = {}
    warnings: list[QualityWarning] = []
    for s in inputs.series:
        diagnosis = diagnoses[(s.configuration, s.device, s.metric)]
        subject = s.subject
        pooled = np.concatenate(list(s.runs.values()))
        steady = np.concatenate(list(diagnosis.steady.values()))
        for regime, values in (("whole", pooled), ("steady-state", steady)):
            descriptive.append(
                {
                    **subject,
                    "regime": regime,
                    "unit": UNITS[s.metric],
                    **describe(values, options.mode_resolution).to_dict(),
                }
            )
        run_means = [float(v.mean()) for v in s.runs.values()]
        segment_cvs = [r["segment_cv"] for r in diagnosis.per_run]
        cv_across = coefficient_of_variation(run_means)
        cv_rows.append(
            {
                **subject,
                "cv_across_runs": cv_across,
                "run_means": run_means,
                "segments": options.segments,
                "segment_cv_by_run": segment_cvs,
                "segment_cv_mean": float(np.nanmean(segment_cvs)) if segment_cvs else None,
            }
        )
        warnings += checks.check_cv(cv_across, subject)
        warnings += checks.check_runs(len(s.runs), subject)
        if len(run_means) >= checks.MIN_RUNS_FOR_RUN_OUTLIERS:
            warnings += checks.check_outliers(run_means, {**subject, "level": "run means"}, 0.0)
        warnings += checks.check_outliers(steady, {**subject, "level": "steady-state values"})
        warnings += checks.check_stationarity(
            [r["steady_state_stationarity"].verdict for r in diagnosis.per_run],
            [r["steady_state_stationarity"].kpss.rejects() for r in diagnosis.per_run],
            subject,
        )
        if diagnosis.record["k_c_censored"]:
            warnings.append(
                QualityWarning(
                    checks.WarningKind.CENSORED_CORRELATION_LENGTH,
                    f"ACF outside the white-noise band at every lag up to {options.max_lag}",
                    subject,
                )
            )
        if s.metric == CURRENT:
            for run, values in s.runs.items():
                times = s.times[run]
                dt = float(np.median(np.diff(times))) if times.size > 1 else 1.0
                energy.setdefault((s.configuration, s.device), {})[run] = run_energy_mah(values, dt)
                durations.setdefault((s.configuration, s.device), {})[run] = values.size * dt
                minutes = per_minute_mean(times, values)
                per_minute.append(
                    {
                        **subject,
                        "run": run,
                        "minute": minutes.index.tolist(),
                        "mean_current_ma": minutes.to_numpy().tolist(),
                    }
                )
    for (configuration, device), by_run in energy.items():
        subject = {"configuration": configuration, "device": device, "metric": CHARGE}
        values = list(by_run.values())
        descriptive.append(
            {
                **subject,
                "regime": "whole",
                "unit": "mAh",
                **describe(values, 1e-4).to_dict(),
                "per_run": by_run,
            }
        )
        cv_rows.append(
            {**subject, "cv_across_runs": coefficient_of_variation(values), "run_means": values}
        )
    return _Description(
        tuple(descriptive), tuple(cv_rows), tuple(per_minute), energy, durations, tuple(warnings)
    )


def _series_comparisons(
    inputs: _Inputs,
    diagnoses: Mapping[tuple[str, str, str], _Diagnosis],
    options: AnalysisOptions,
) -> tuple[list[Comparison], list[QualityWarning]]:
    """Stage 4a: every pair of configurations per metric and device (a later in the order
    than b, so the baseline is always b), by the block bootstrap, with the block-length
    warnings (once per configuration and block length)."""
    by_key: dict[tuple[str, str], dict[str, _Series]] = {}
    for s in inputs.series:
        by_key.setdefault((s.metric, s.device), {})[s.configuration] = s
    bootstrap = BlockBootstrap(options.bootstrap, options.reps, options.seed)  # type: ignore[arg-type]
    result: list[Comparison] = []
    warnings: list[QualityWarning] = []
    warned: set[tuple] = set()
    for (metric, device), by_config in by_key.items():
        present = [c for c in inputs.configurations if c in by_config]
        for j, b in enumerate(present):
            for a in present[j + 1 :]:
                sa, sb = by_config[a], by_config[b]
                runs_a, runs_b = list(sa.runs.values()), list(sb.runs.values())
                k_c = {name: diagnoses[(name, device, metric)].k_c for name in (a, b)}
                choice = choose_block_length(
                    [*runs_a, *runs_b],
                    options.block_length,
                    options.bootstrap,
                    max(k_c.values()),  # type: ignore[arg-type]
                )
                b_len = choice.block_length
                for name, runs in ((a, runs_a), (b, runs_b)):
                    if (metric, device, name, b_len) not in warned:
                        warned.add((metric, device, name, b_len))
                        warnings += checks.check_block_length(
                            b_len,
                            k_c[name],
                            min(len(r) for r in runs),
                            {"configuration": name, "device": device, "metric": metric},
                        )
                label = (
                    f"{options.bootstrap}-block bootstrap percentile "
                    f"(b={b_len} [{choice.rule}], {options.reps} reps, runs resampled separately)"
                )
                boot = bootstrap.difference(
                    ((metric, device, a), runs_a),
                    ((metric, device, b), runs_b),
                    b_len,
                    options.level,
                    label,
                )
                pooled_a, pooled_b = np.concatenate(runs_a), np.concatenate(runs_b)
                result.append(comparison_row(metric, device, a, b, pooled_a, pooled_b, boot))
    return result, warnings


def _pareto(
    inputs: _Inputs,
    description: _Description,
    properties: Mapping[str, Mapping[str, Any]] | None,
    options: AnalysisOptions,
) -> tuple[ParetoResult | None, list[str]]:
    """Stage 5: the Pareto front over the objectives that have data, and notes on it."""
    notes = []
    objective_values: dict[str, dict[str, float]] = {c: {} for c in inputs.configurations}
    for (configuration, _device), by_run in description.energy.items():
        row = objective_values[configuration]
        row[CHARGE] = row.get(CHARGE, 0.0) + float(np.mean(list(by_run.values())))
    for s in inputs.latency:
        objective_values[s.configuration][LATENCY] = pooled_mean(list(s.runs.values()))
    objectives = dict(options.objectives)
    available = {k for row in objective_values.values() for k in row}
    if properties:
        available.add("security_score")
    for objective in [o for o in objectives if o not in available]:
        objectives.pop(objective)
        notes.append(f"Pareto objective {objective!r} dropped: no data for it")
    pareto = (
        pareto_analysis(objective_values, objectives, properties, options.constraints)
        if objectives
        else None
    )
    notes.append(f"Pareto {CHARGE} = sum over devices of the mean per-run cumulative charge")
    return pareto, notes


def _regimes(
    inputs: _Inputs,
    diagnoses: Mapping[tuple[str, str, str], _Diagnosis],
    description: _Description,
) -> tuple[list[SensitivityResult], dict[tuple[str, str], float]]:
    """Stage 6: the transient and steady-state regimes of every current series (energy
    sensitivity per device) and each configuration's mean active current (mA), which the
    battery projection reads."""
    sensitivity = []
    active: dict[tuple[str, str], float] = {}
    for device in inputs.devices:
        regimes = {}
        for s in inputs.current:
            if s.device != device:
                continue
            transients = diagnoses[(s.configuration, s.device, s.metric)].transients
            durations_s, transient_s, transient_ma, steady_ma = [], [], [], []
            for run, values in s.runs.items():
                end = transients[run]
                durations_s.append(values.size)
                transient_s.append(end)
                transient_ma.append(float(values[:end].mean()) if end else 0.0)
                steady_ma.append(float(values[end:].mean()))
            regimes[s.configuration] = RunRegimes(
                float(np.mean(durations_s)),
                float(np.mean(transient_s)),
                float(np.mean(transient_ma)),
                float(np.mean(steady_ma)),
            )
            key = (s.configuration, device)
            charge_mah = sum(description.energy[key].values())
            hours = sum(description.durations[key].values()) / 3600.0
            active[key] = charge_mah / hours
        if len(regimes) >= 2:
            sensitivity.append(energy_sensitivity(regimes, device))
    return sensitivity, active


def _cross_correlations(current_series: Sequence[_Series], options: AnalysisOptions) -> list[dict]:
    """Emitter vs receiver CCF on first differences, per configuration (mean over runs)."""
    by_config: dict[str, dict[str, _Series]] = {}
    for s in current_series:
        by_config.setdefault(s.configuration, {})[s.device] = s
    rows = []
    for configuration, devices in by_config.items():
        if "emitter" not in devices or "receiver" not in devices:
            continue
        emitter, receiver = devices["emitter"], devices["receiver"]
        per_run = []
        for run in emitter.runs:
            if run not in receiver.runs:
                continue
            left = pd.Series(emitter.runs[run], index=emitter.times[run])
            right = pd.Series(receiver.runs[run], index=receiver.times[run])
            joined = pd.concat([left, right], axis=1, join="inner").dropna()
            if len(joined) < 10:
                continue
            per_run.append(
                cross_correlation_of_differences(
                    joined.iloc[:, 0].to_numpy(), joined.iloc[:, 1].to_numpy(), options.max_lag
                )
            )
        if not per_run:
            continue
        common = min(len(r.ccf) for r in per_run)
        mean_ccf = np.mean([r.ccf[:common] for r in per_run], axis=0)
        rows.append(
            {
                "configuration": configuration,
                "x": "emitter",
                "y": "receiver",
                "transform": "first differences",
                "lags": list(range(common)),
                "ccf_mean": mean_ccf.tolist(),
                "band": float(np.mean([r.band for r in per_run])),
                "ccf_lag0_by_run": [r.ccf[0] for r in per_run],
                "peak_lag": int(np.argmax(np.abs(mean_ccf))),
            }
        )
    return rows
