"""Everything a report shows, loaded once: the results store (if any) and ``analysis.json``.

A report can be built from a results directory made by ``run`` (store, and the analysis if
it has been run) or from an ``analyze --csv`` result (the analysis, plus the CSV inputs it
names when they are still there). Figures whose data is absent are left out, and the report
says so.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iotsecbench.analysis.document import FILENAMES, AnalysisDocument, read_analysis
from iotsecbench.analysis.metrics import METRICS, MODELLED, Metric, Registry
from iotsecbench.errors import SpecError
from iotsecbench.report.summary import device_target, summary_frames
from iotsecbench.spec.load import stored_spec_data
from iotsecbench.store import read
from iotsecbench.store.read import CURRENT_SOURCES


@dataclass
class ReportData:
    """Inputs of a report. ``None`` means that source does not exist for this report."""

    source: Path  # the results directory or analysis file the user named
    analysis: AnalysisDocument | None = None
    runs: pd.DataFrame | None = None
    current: pd.DataFrame | None = None  # configuration, device, run, time_s, current_ma
    latency: pd.DataFrame | None = None  # configuration, run, seq, latency_ms
    handshakes: pd.DataFrame | None = None  # every connection's phases + configuration
    # bench handshake --trace (docs/iotst.md): each traced connection's classification groups
    handshake_groups: pd.DataFrame | None = None
    # Power-meter traces attached to runs (docs/meters.md): the traces and their phases, every
    # window with both currents, and `analyze --current measured`'s statistics.
    meter_traces: pd.DataFrame | None = None
    meter_phases: pd.DataFrame | None = None
    measured: pd.DataFrame | None = (
        None  # run_id, configuration, device, run, time_s, measured_ma, modelled_ma
    )
    measured_analysis: AnalysisDocument | None = None
    # What `current` and the analysis' current and charge are: MODELLED, or "measured with
    # <meter>" for a report built with `--current measured` (every label follows it).
    current_kind: str = MODELLED
    summary: pd.DataFrame | None = None
    per_run: pd.DataFrame | None = None  # one row per ok run (report.summary.summary_frames)
    security: dict[str, dict[str, Any]] = field(default_factory=dict)  # per configuration
    experiment: dict[str, Any] = field(default_factory=dict)
    spec: dict[str, Any] = field(default_factory=dict)
    configurations: list[str] = field(default_factory=list)
    # The metrics the per-run frame, summary, findings and contrasts hold (analysis.metrics);
    # for a `run --target` experiment, with the emitter's counted figures labelled so.
    metrics: Registry = METRICS
    # The virtual MCU the emitter ran on (`run --target`; docs/device-client.md), or None.
    counted_target: str | None = None

    @property
    def has_store(self) -> bool:
        return self.runs is not None

    @property
    def current_measured(self) -> bool:
        """The device current is a power meter's (``report --current measured``)."""
        return self.current_kind != MODELLED

    @property
    def current_words(self) -> str:
        """What this report's device current is, in a caption's words: ``current_kind``; with
        a device emitter, its current counted on the target beside the receiver's."""
        if self.counted_target is None:
            return self.current_kind
        return (
            f"counted on {self.counted_target} for the emitter (its instructions x CPI into "
            f"the device model) and {self.current_kind} for the receiver"
        )

    def metric_of(self, key: str, role: str | None = None) -> Metric:
        """The entry of metric ``key`` for ``role`` as this report labels it (a device
        emitter's counted figures say so; the current follows ``current_kind``). Without a
        role, a metric whose emitter was counted and whose receiver was not (a charge summed
        over both devices) names both."""
        found = self.metrics.of(key, role) if role else None
        if found is not None:
            return found.with_current(self.current_kind)
        found = self.metrics.metric(key, self.current_kind)
        receiver = self.metrics.of(found.key, "receiver")
        if receiver is None or receiver.with_current(self.current_kind).kind == found.kind:
            return found
        receiver_kind = receiver.with_current(self.current_kind).kind
        return dataclasses.replace(
            found, kind=f"{found.kind} for the emitter and {receiver_kind} for the receiver"
        )

    @property
    def meters(self) -> str:
        """ "ppk2", "jls and ppk2": the meters behind the attached traces."""
        formats = sorted(set(self.meter_traces["format"])) if self.meter_traces is not None else []
        return " and ".join(formats) or "a power meter"

    @property
    def host(self) -> dict[str, Any]:
        """The host facts ``run`` recorded (experiment.json's host_json), or {}."""
        return _json_object(self.experiment.get("host_json"))

    @property
    def versions(self) -> dict[str, Any]:
        """The software versions ``run`` recorded (versions_json), or {}."""
        return _json_object(self.experiment.get("versions_json"))

    def run_values(self, configuration: str, column: str) -> np.ndarray:
        """Per-run values of one configuration (cell label) from the store; empty for an
        ``analyze --csv`` report, which has no per-run frame."""
        if self.per_run is None or column not in self.per_run:
            return np.array([])
        own = self.per_run.loc[self.per_run["configuration"] == configuration, column]
        return own.dropna().to_numpy(dtype=float)

    @property
    def traced_runs(self) -> pd.Series:
        """Which runs were traced (``runs.cost_method``; docs/iotst.md); all False without
        a store."""
        if self.runs is None or "cost_method" not in self.runs:
            return pd.Series(False, index=getattr(self.runs, "index", None), dtype=bool)
        return self.runs["cost_method"] == "traced"

    @property
    def counted_runs(self) -> pd.Series:
        """Which handshakes were counted on a virtual MCU (``bench handshake --target``:
        ``runs.cost_method`` 'counted' with the count's statistics; docs/device-client.md);
        all False without a store."""
        if self.runs is None or "cost_method" not in self.runs:
            return pd.Series(False, index=getattr(self.runs, "index", None), dtype=bool)
        # `run --target`'s runs are counted too: whole runs, without a handshake's statistics
        handshakes = self.runs["details_json"].map(lambda text: counted(_json_object(text)))
        return (self.runs["cost_method"] == "counted") & handshakes.astype(bool)

    @property
    def baseline(self) -> str | None:
        if self.analysis is not None:
            return self.analysis.baseline
        return self.configurations[0] if self.configurations else None


def counted(details: dict[str, Any]) -> bool:
    """Whether a configuration's stored statistics were counted on a virtual MCU (``bench
    handshake --target``; else traced or timed on this host)."""
    return str(details.get("method", "")).startswith("counted")


def device_instructions_per_s(details: dict[str, Any]) -> float:
    """The instructions per second a counted configuration's device runs at: its profile's
    clock over its CPI (the device model stored with the counts; docs/device-client.md)."""
    return details["device_time_s"]["clock_mhz"] * 1e6 / details["device_model"]["cpi"]


def traced_configurations(
    data: ReportData, *, counted_too: bool = False
) -> list[tuple[str, dict[str, Any]]]:
    """(configuration, its stored statistics) of every traced configuration, in run order;
    ``counted_too``: with the configurations counted on a virtual MCU."""
    runs = data.runs
    if runs is None or runs.empty:
        return []
    chosen = data.traced_runs | data.counted_runs if counted_too else data.traced_runs
    return [
        (str(label), json.loads(details) if isinstance(details, str) and details else {})
        for label, details in zip(
            runs[chosen]["cell_label"], runs[chosen]["details_json"], strict=True
        )
    ]


def _json_object(value: Any) -> dict[str, Any]:
    """A JSON object stored as text (or already parsed); {} when absent or unreadable."""
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if value else {}
    except (TypeError, json.JSONDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _order(names: list[str], preferred: list[str]) -> list[str]:
    first = [name for name in preferred if name in names]
    return first + [name for name in names if name not in first]


def load(source: Path, current: str = MODELLED, metrics: Registry = METRICS) -> ReportData:
    """Load a results directory (with or without analysis.json) or an analysis.json file.

    ``current="measured"``: the device current is the power-meter traces attached to the runs
    (``iotsecbench attach``) and the analysis is ``analysis-measured.json`` (``analyze
    --current measured``); runs without a trace are left out of the current, never filled
    in with the model."""
    source = Path(source)
    if current not in CURRENT_SOURCES:
        raise SpecError(f"--current {current!r}: use modelled or measured")
    if source.is_file():
        analysis_path, results_dir = source, None
    elif source.is_dir():
        analysis_path = source / "analysis.json"
        results_dir = source if (source / "results.duckdb").exists() else None
        if results_dir is None and not analysis_path.exists():
            raise SpecError(f"{source} holds neither results.duckdb nor analysis.json")
    else:
        raise SpecError(f"{source} does not exist")
    data = ReportData(source=source, metrics=metrics)
    if analysis_path.exists():
        data.analysis = read_analysis(analysis_path)
    if results_dir is not None:
        with read.reading(results_dir):  # one connection for the dozen tables read here
            _load_results(data, results_dir, current, metrics)
    elif current == "measured":
        raise SpecError(
            f"--current measured needs a results directory with traces attached, not {source}"
        )
    elif data.analysis is not None:
        _load_csv_inputs(data)
    names: list[str] = []
    if data.summary is not None and not data.summary.empty:
        names = list(data.summary["configuration"])
    elif data.analysis is not None:
        names = list(data.analysis.configurations)
    elif data.current is not None:
        names = list(dict.fromkeys(data.current["configuration"]))
    preferred = [data.analysis.baseline] if data.analysis is not None else []
    data.configurations = _order(names, preferred)
    return data


def _load_results(data: ReportData, results_dir: Path, current: str, metrics: Registry) -> None:
    """What ``load`` reads of a results directory into ``data``."""
    data.runs = read.runs_frame(results_dir)
    data.current = read.current_frame(results_dir)
    data.latency = read.latency_frame(results_dir)
    handshakes = read.handshake_phases(results_dir, first_device=True)
    labels = data.runs.set_index("run_id")["cell_label"]
    handshakes["configuration"] = handshakes["run_id"].map(labels)
    data.handshakes = handshakes
    if data.traced_runs.any():  # the traced runs' groups (counted ones: details_json)
        groups = read.table(results_dir, "handshake_groups")
        traced = set(data.runs.loc[data.traced_runs, "run_id"])
        data.handshake_groups = groups[groups["run_id"].isin(traced)]
    _load_meter_data(data, results_dir)
    if current == "measured":
        _use_measured_current(data, results_dir)
    data.counted_target = device_target(data.runs)
    if data.counted_target is not None:
        data.metrics = metrics.counted_on(data.counted_target)
    data.per_run, data.summary = summary_frames(results_dir, metrics)
    data.security = read.security_properties(results_dir)
    data.spec = stored_spec_data(results_dir) or {}
    document = read.stored_document(results_dir / "experiment.json")
    if document is not None:
        data.experiment = document.get("experiment", document)


def _load_meter_data(data: ReportData, results_dir: Path) -> None:
    traces = read.table(results_dir, "meter_traces")
    if traces.empty:
        return
    labels = data.runs.set_index("run_id")["cell_label"] if data.runs is not None else {}
    data.meter_traces = traces.assign(configuration=traces["run_id"].map(labels))
    data.meter_phases = read.table(results_dir, "meter_phases")
    data.measured = read.measured_against_modelled(results_dir)
    measured_analysis = results_dir / FILENAMES["measured"]
    if measured_analysis.exists():
        data.measured_analysis = read_analysis(measured_analysis)


def _use_measured_current(data: ReportData, results_dir: Path) -> None:
    if data.meter_traces is None:
        raise SpecError(
            f"no power-meter trace is attached to the runs of {results_dir}: attach one with "
            "`iotsecbench attach RUN TRACE`, or build the report of the modelled current"
        )
    data.current = read.current_frame(results_dir, "measured")
    data.current_kind = f"measured with {data.meters}"
    # The measured analysis replaces the modelled one; without it the report has the
    # measured current over time but no statistics, and says how to get them.
    data.analysis = data.measured_analysis


def _load_csv_inputs(data: ReportData) -> None:
    """For an ``analyze --csv`` result, read the CSVs it names if they still exist."""
    from iotsecbench.store.csv_input import read_current_csv, read_latency_csv

    inputs = data.analysis.inputs if data.analysis is not None else {}
    if inputs.get("csv") and Path(inputs["csv"]).exists():
        data.current = read_current_csv(Path(inputs["csv"]))
    if inputs.get("latency_csv") and Path(inputs["latency_csv"]).exists():
        data.latency = read_latency_csv(Path(inputs["latency_csv"]))
