"""After the runs: the statistics (``analysis.json``) and the report, so that ``run`` ends with
a report and ``analyze``/``report`` can redo either step alone. A procedure over three rooms
(store, analysis, report), so it lives here and not in the runner."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iotsecbench.analysis.document import FILENAMES
from iotsecbench.analysis.pipeline import AnalysisOptions, AnalysisResult, analyze
from iotsecbench.errors import DataError, EnvironmentProblem, SpecError
from iotsecbench.files import check_output_file, write_atomic

if TYPE_CHECKING:  # the report (matplotlib) loads only when a report is built
    from iotsecbench.analysis.model_range import ModelSection
    from iotsecbench.report.build import BuiltReport
    from iotsecbench.report.findings import Findings


def _properties_for_names(names: list[str]) -> dict[str, dict[str, Any]]:
    """Security properties of configuration names iotsecbench knows (best effort, CSV input)."""
    from iotsecbench.security.configuration import resolve_configuration

    properties = {}
    for name in names:
        try:
            properties[name] = resolve_configuration(name).properties()
        except Exception:  # unknown names simply carry no properties
            continue
    return properties


def write_json_atomically(document: dict[str, Any], path: Path) -> None:
    """Write JSON so that ``path`` is either the old or the complete new document."""
    try:
        write_atomic(path, json.dumps(document, indent=1, allow_nan=False) + "\n")
    except OSError as error:
        raise EnvironmentProblem(f"cannot write {path}: {error.strerror or error}") from error


def run_analyze(
    results_dir: Path | None = None,
    csv_path: Path | None = None,
    latency_csv: Path | None = None,
    options: AnalysisOptions | None = None,
    out: Path | None = None,
    current_source: str = "modelled",
) -> tuple[AnalysisResult, Path]:
    """Read the inputs, analyse, write ``analysis.json`` (``analysis-measured.json`` for the
    measured current of attached meter traces); returns the result and its path."""
    options = options or AnalysisOptions()
    if (results_dir is None) == (csv_path is None):
        raise SpecError("give either RESULTS_DIR or --csv FILE (exactly one)")
    if latency_csv is not None and csv_path is None:
        raise SpecError("--latency-csv needs --csv")
    if results_dir is not None and not Path(results_dir).is_dir():
        raise SpecError(f"{results_dir}: not a results directory")
    if results_dir is None:
        return _analyze(None, csv_path, latency_csv, options, out, current_source)
    from iotsecbench.store import read

    with read.reading(results_dir):  # one connection for every table the statistics read
        return _analyze(Path(results_dir), None, None, options, out, current_source)


def _analyze(
    results_dir: Path | None,
    csv_path: Path | None,
    latency_csv: Path | None,
    options: AnalysisOptions,
    out: Path | None,
    current_source: str,
) -> tuple[AnalysisResult, Path]:
    """``run_analyze`` once its arguments are checked."""
    if results_dir is not None:
        from iotsecbench.store import read

        read.require_completed_runs(results_dir)
        current = read.current_frame(results_dir, current_source)
        if current.empty and current_source == "measured":
            # The same refusal (exit 2) as `report --current measured`: asked for what the
            # directory does not hold, nothing damaged.
            raise SpecError(
                f"no completed run of {results_dir} has a power-meter trace attached: attach "
                "one (iotsecbench attach RUN TRACE) or analyse the modelled current"
            )
        latency = read.latency_frame(results_dir)
        properties = read.security_properties(results_dir)
        if options.block_on == "worker":
            current = current.merge(read.workers_frame(results_dir), on=["configuration", "run"])
        target = out or results_dir / FILENAMES[current_source]
    else:
        from iotsecbench.store.csv_input import read_current_csv, read_latency_csv

        assert csv_path is not None
        current_source = "as given in the CSV"
        current = read_current_csv(csv_path)
        latency = read_latency_csv(latency_csv) if latency_csv is not None else None
        properties = _properties_for_names(sorted(set(current["configuration"])))
        target = out or Path(csv_path).with_name("analysis.json")
    # Where the statistics go is checked before they are computed (seconds to minutes).
    check_output_file(Path(target), "--out" if out is not None else "the analysis file")
    model, why_not = None, ""
    if results_dir is not None and current_source == "modelled":
        from iotsecbench.runner.model_draws import model_draws

        model, why_not = model_draws(results_dir, options.model_draws, options.seed)
    result = analyze(current, latency, properties, options, model)
    if why_not:
        result = dataclasses.replace(result, notes=(*result.notes, why_not))
    document = result.to_dict()
    document["inputs"] = {
        "results_dir": str(results_dir) if results_dir is not None else None,
        "csv": str(csv_path) if csv_path is not None else None,
        "latency_csv": str(latency_csv) if latency_csv is not None else None,
        # Which device current the statistics describe: never a mix (docs/meters.md).
        "current": current_source,
    }
    write_json_atomically(document, Path(target))
    return result, Path(target)


@dataclass(frozen=True)
class Postprocessed:
    """What ``analyze_and_report`` did, for ``run``'s closing lines."""

    analysis_path: Path | None
    analysis_problem: str | None  # why the statistics could not be computed, if so
    # The analysis' model ranges (None: no statistics, or no draws), for the summary tables
    model: ModelSection | None
    # What report.build.build_report returned (None when no run completed), passed through
    # untouched: the command reads the report's own record, this layer does not.
    report: BuiltReport | None

    @property
    def report_path(self) -> Path | None:
        return self.report.html if self.report is not None else None

    @property
    def findings(self) -> Findings | None:
        """What the report found (its typed record), for the terminal to print."""
        return self.report.findings if self.report is not None else None


def analyze_and_report(results_dir: Path) -> Postprocessed:
    """Statistics then report for a finished experiment. Too little data for the statistics
    (very short runs) is not an error of the experiment: the report is built without them
    and the reason is returned."""
    from iotsecbench.report.build import build_report
    from iotsecbench.store.read import require_completed_runs

    try:
        require_completed_runs(results_dir)
    except DataError as error:
        return Postprocessed(None, str(error), None, None)  # every run failed: nothing to show
    analysis_path, problem, model = None, None, None
    try:
        result, analysis_path = run_analyze(results_dir)
        model = result.model
    except DataError as error:
        problem = str(error)
        (results_dir / "analysis.json").unlink(missing_ok=True)  # never a stale one
    built = build_report(results_dir, formats=("html", "md", "csv", "tex"))
    return Postprocessed(analysis_path, problem, model, built)
