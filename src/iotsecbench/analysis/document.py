"""``analysis.json`` read back: one loader building typed records, the format declared once.

``pipeline.AnalysisResult.to_dict()`` writes the document; ``read_analysis`` reads it for the
report. The comparisons come back as the record that wrote them (``results.Comparison``);
each record below declares the fields its readers use: a field that is missing (for
instance renamed by a later change to the pipeline) fails loudly here, with the document's
path and the place in it, instead of quietly blanking a table. Extra fields are ignored, so
a newer document with more in it still reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from iotsecbench.analysis.model_range import ModelSection, ModelValue
from iotsecbench.analysis.results import Comparison, build_record, nested_interval
from iotsecbench.errors import DataError
from iotsecbench.files import read_json

FORMAT_NAME = "iotsecbench-analysis"
# analysis.json version history:
#   version 1: first layout (comparisons, series, pareto, hypotheses, warnings, descriptive,
#              cv, per_minute, cross_correlations, sensitivity, battery, options, notes).
#   version 2: the device model's ranges: "model" (method, draws, level, notes, values: each
#              modelled value's model_range) and, on comparisons of a modelled metric,
#              "model_range" (nested interval) and "model_share"; on battery projections,
#              "lifetime_days_model_range" and "relative_model_range"; version 1 reads as
#              having none.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
# The document's file in a results directory, per device current analysed (``analyze
# --current``): the modelled one, or the measured one of attached power-meter traces.
FILENAMES = {"modelled": "analysis.json", "measured": "analysis-measured.json"}


@dataclass(frozen=True)
class CvRow:
    configuration: str
    device: str
    metric: str
    cv_across_runs: float | None
    run_means: Sequence[float]
    segment_cv_mean: float | None = None  # absent for the per-run energy rows


@dataclass(frozen=True)
class SeriesRow:
    configuration: str
    device: str
    metric: str
    k_c: int
    acf_mean: Sequence[float]
    pacf_mean: Sequence[float]
    white_noise_band: float


@dataclass(frozen=True)
class HypothesisRow:
    id: str
    statement: str
    verdict: str
    evidence: Any


@dataclass(frozen=True)
class WarningRow:
    kind: str
    message: str
    subject: Mapping[str, Any]
    fix: str = ""


@dataclass(frozen=True)
class ParetoFront:
    objectives: Mapping[str, str]  # name → "min" | "max", in order
    values: Mapping[str, Mapping[str, float]]  # configuration → objective → value
    front: Sequence[str]
    excluded: Sequence[Any] = ()


@dataclass(frozen=True)
class SensitivityRow:
    device: str
    scenarios: Sequence[Mapping[str, Any]]  # transient_factor, alpha, perturbed, energy_mah …
    invariant_uniform: bool
    invariant_one_at_a_time: bool


@dataclass(frozen=True)
class AnalysisDocument:
    """What the report reads of an ``analysis.json``."""

    options: Mapping[str, Any]
    configurations: Sequence[str]
    baseline: str
    cv: Sequence[CvRow]
    comparisons: Sequence[Comparison]
    series: Sequence[SeriesRow]
    hypotheses: Sequence[HypothesisRow]
    warnings: Sequence[WarningRow]
    pareto: ParetoFront | None
    sensitivity: Sequence[SensitivityRow]
    notes: Sequence[str]
    inputs: Mapping[str, Any] = field(default_factory=dict)  # analyze --csv: the files read
    model: ModelSection | None = None  # the device model's ranges (version 2)

    def model_value(self, configuration: str, device: str, metric: str) -> ModelValue | None:
        """The model's range of one configuration's modelled value, if the analysis has it."""
        return self.model.value(configuration, device, metric) if self.model else None

    def comparisons_of(self, metric: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.metric == metric]


Row = TypeVar("Row")


def _build(cls: type[Row], record: Any, where: str) -> Row:
    """``cls`` from the JSON object ``record``: its declared fields, missing ones refused."""
    return build_record(cls, record, where)


def parse_analysis(document: Any, where: str = "analysis.json") -> AnalysisDocument:
    """The typed form of a parsed ``analysis.json`` document; ``DataError`` if it is not one."""
    if not isinstance(document, Mapping) or document.get("format") != FORMAT_NAME:
        found = document.get("format") if isinstance(document, Mapping) else None
        raise DataError(f"{where}: not an iotsecbench analysis (format {found!r})")
    if document.get("version") not in READABLE_VERSIONS:
        raise DataError(
            f"{where}: analysis version {document.get('version')} is not supported by this "
            f"iotsecbench (expected {FORMAT_VERSION}); re-run `iotsecbench analyze`"
        )

    def rows(key: str, cls: type[Row]) -> list[Row]:
        return [
            _build(cls, record, f"{where} {key}[{index}]")
            for index, record in enumerate(document.get(key) or [])
        ]

    comparisons = [
        Comparison.from_dict(record, f"{where} comparisons[{index}]")
        for index, record in enumerate(document.get("comparisons") or [])
    ]

    top = _build(_TopLevel, document, where)
    pareto = document.get("pareto")
    return AnalysisDocument(
        options=top.options,
        configurations=list(top.configurations),
        baseline=top.baseline,
        cv=rows("cv", CvRow),
        comparisons=comparisons,
        series=rows("series", SeriesRow),
        hypotheses=rows("hypotheses", HypothesisRow),
        warnings=rows("warnings", WarningRow),
        pareto=_build(ParetoFront, pareto, f"{where} pareto") if pareto else None,
        sensitivity=rows("sensitivity", SensitivityRow),
        notes=list(top.notes),
        inputs=document.get("inputs") or {},
        model=_model(document.get("model"), f"{where} model"),
    )


def _model(section: Any, where: str) -> ModelSection | None:
    """The ``model`` section (version 2), or None."""
    if section is None:
        return None
    values = [
        build_record(
            ModelValue,
            record,
            f"{where} values[{index}]",
            numbers=("value",),
            model_range=nested_interval(record, "model_range", f"{where} values[{index}]"),
        )
        for index, record in enumerate(section.get("values") or [])
    ]
    return build_record(
        ModelSection, section, where, values=tuple(values), notes=tuple(section.get("notes") or ())
    )


@dataclass(frozen=True)
class _TopLevel:
    options: Mapping[str, Any]
    configurations: Sequence[str]
    baseline: str
    notes: Sequence[str]


def read_analysis(path: Path) -> AnalysisDocument:
    """Read and check an ``analysis.json`` file; ``DataError`` (exit 4) naming what is wrong."""
    return parse_analysis(read_json(path), str(path))
