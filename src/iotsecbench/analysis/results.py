"""Result records shared by every analysis module.

Every diagnostic returns a :class:`TestResult` (name, statistic, p-value, null hypothesis,
conclusion, parameters) and every interval an :class:`Interval`, after arch's ``UnitRootTest``
surface, so the report and the terminal summary can render any of them generically. Records
are frozen dataclasses; ``to_dict()`` gives plain JSON-ready Python values and ``summary()``
one human line.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from iotsecbench.errors import DataError


def plain(value: Any) -> Any:
    """Convert numpy scalars/arrays, enums, records and NaN to JSON-ready Python values.

    NaN and infinities become ``None`` (JSON has no NaN); tuples become lists.
    """
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return [plain(item) for item in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    return value


class Record:
    """Mixin for frozen dataclass records: ``to_dict()`` and a default ``summary()``."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def summary(self) -> str:
        return f"{type(self).__name__}({self.to_dict()})"


@dataclass(frozen=True)
class Interval(Record):
    """A confidence interval."""

    low: float  # lower bound, in the unit of the estimate
    high: float  # upper bound, in the unit of the estimate
    level: float  # nominal coverage, e.g. 0.95
    method: str  # how it was built, e.g. "moving-block bootstrap percentile"

    def __post_init__(self) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level must lie in (0, 1), got {self.level}")
        if self.low > self.high:
            raise ValueError(f"low ({self.low}) exceeds high ({self.high})")

    def contains(self, value: float) -> bool:
        """True when ``low <= value <= high``."""
        return bool(self.low <= value <= self.high)

    def excludes_zero(self) -> bool:
        """True when 0 lies outside the interval (the study's significance rule); False for
        an interval that does not exist (NaN ends)."""
        return bool(self.low > 0 or self.high < 0)

    def negated(self) -> Interval:
        """The interval of −x: [−high, −low]."""
        return dataclasses.replace(self, low=-self.high, high=-self.low)

    def scaled(self, factor: float) -> Interval:
        """The interval of factor·x (a negative factor swaps the ends)."""
        low, high = sorted((factor * self.low, factor * self.high))
        return dataclasses.replace(self, low=low, high=high)

    @property
    def degenerate(self) -> bool:
        """No width (one value, or no spread): not an answer."""
        return not self.high > self.low

    def summary(self) -> str:
        return f"[{self.low:.6g}, {self.high:.6g}] ({self.level:.0%} {self.method})"


@dataclass(frozen=True)
class TestResult(Record):
    """One hypothesis test, after arch's ``UnitRootTest`` surface."""

    __test__ = False  # not a pytest test class

    name: str  # e.g. "ADF", "KPSS", "Ljung-Box"
    statistic: float  # the test statistic
    pvalue: float  # p-value (KPSS: interpolated and bounded to [0.01, 0.10])
    null_hypothesis: str  # what the test assumes under H0
    alternative: str  # what rejecting H0 means
    conclusion: str  # plain-language reading at the chosen level
    params: Mapping[str, Any] = field(default_factory=dict)  # lags, regression, bounds, ...

    def rejects(self, alpha: float = 0.05) -> bool:
        """True when the p-value is below ``alpha``."""
        return bool(np.isfinite(self.pvalue) and self.pvalue < alpha)

    def summary(self) -> str:
        return (
            f"{self.name}: statistic {self.statistic:.4g}, p {self.pvalue:.4g} — {self.conclusion}"
        )


R = TypeVar("R")


def _number(value: Any) -> float:
    """A JSON number back as a float: null (a NaN or infinity written out) is NaN."""
    return float("nan") if value is None else float(value)


def build_record(
    cls: type[R], record: Any, where: str, numbers: Sequence[str] = (), **fields: Any
) -> R:
    """``cls`` from the JSON object ``record``: its declared fields (``fields`` given
    already built), a missing one refused with a ``DataError`` naming ``where``; extra
    fields are ignored, so a newer document with more in it still reads. ``numbers``: the
    float fields, whose null (a NaN or infinity written out) reads as NaN."""
    if not isinstance(record, Mapping):
        raise DataError(f"{where}: expected an object, found {type(record).__name__}")
    declared = [f for f in dataclasses.fields(cls) if f.name not in fields]  # type: ignore[arg-type]
    required = [
        f.name
        for f in declared
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [name for name in required if name not in record]
    if missing:
        raise DataError(
            f"{where} lacks {', '.join(missing)}: written by another iotsecbench version? "
            "re-run `iotsecbench analyze`"
        )
    values = {f.name: record[f.name] for f in declared if f.name in record}
    values.update({name: _number(values[name]) for name in numbers if name in values})
    return cls(**values, **fields)


# How an interval is written into a JSON record beside its estimate (analysis.json's
# comparisons, findings.json, comparison.json): flat, as these documents always had it.
INTERVAL_FIELDS = ("ci_low", "ci_high", "level", "interval_method")


def flat_record(record: Any) -> dict[str, Any]:
    """A dataclass record's fields with its ``interval`` written flat (``INTERVAL_FIELDS``),
    the layout findings.json and comparison.json keep."""
    flat: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        flat.update(interval_fields(value) if f.name == "interval" else {f.name: value})
    return flat


def interval_fields(interval: Interval) -> dict[str, Any]:
    """``interval`` as the flat fields of ``INTERVAL_FIELDS`` (NaN as null)."""
    return {
        "ci_low": plain(interval.low),
        "ci_high": plain(interval.high),
        "level": plain(interval.level),
        "interval_method": interval.method,
    }


def nested_interval(record: Mapping[str, Any], key: str, where: str) -> Interval | None:
    """The ``Interval`` written nested under ``key`` (``Interval.to_dict``), or None when the
    record has none; a malformed one is a ``DataError`` naming ``where``."""
    nested = record.get(key)
    if nested is None:
        return None
    try:
        return Interval(
            _number(nested["low"]),
            _number(nested["high"]),
            float(nested["level"]),
            str(nested["method"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise DataError(f"{where}: {key} is not an interval ({error})") from None


def interval_from_fields(record: Mapping[str, Any], where: str) -> Interval:
    """The ``Interval`` written as ``interval_fields``; a missing field is a ``DataError``."""
    missing = [name for name in INTERVAL_FIELDS if name not in record]
    if missing:
        raise DataError(
            f"{where} lacks {', '.join(missing)}: written by another iotsecbench version? "
            "re-run `iotsecbench analyze`"
        )
    try:
        return Interval(
            _number(record["ci_low"]),
            _number(record["ci_high"]),
            float(record["level"]),
            str(record["interval_method"]),
        )
    except (TypeError, ValueError) as error:
        raise DataError(f"{where}: not an interval ({error})") from None


@dataclass(frozen=True)
class Comparison(Record):
    """Difference of means between configurations a and b for one metric and device: the one
    record written to ``analysis.json`` (``to_dict``) and read back (``from_dict``)."""

    metric: str  # a key of analysis.metrics: CURRENT | CHARGE | LATENCY
    device: str  # "emitter" | "receiver" | "end-to-end" (latency)
    a: str  # configuration a
    b: str  # configuration b
    mean_a: float
    mean_b: float
    difference: float  # mean(a) − mean(b), in the metric's unit
    interval: Interval  # of the difference
    significant: bool  # the interval excludes 0
    cohens_d: float  # standardised difference, pooled SD; NaN when undefined
    effect: str  # Cohen's label of |d|
    method: str  # "moving" | "circular" | "stationary" | "iid-runs"
    block_length: int | None  # None for the i.i.d. bootstrap over runs
    reps: int
    n_a: int  # observations of a (samples, messages or runs)
    n_b: int
    replicate_histogram: Mapping[str, Any] = field(default_factory=dict)  # counts, edges
    # A modelled metric's second interval: the central 90 % of the difference over the draws
    # of the device profile (analysis.model_range), and the share of draws in which a is
    # above b; None for a measured metric or without the profile's draws.
    model_range: Interval | None = None
    model_share: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The comparison as analysis.json holds it (the interval flat, ``INTERVAL_FIELDS``;
        the model's range nested, after the rest)."""
        record = super().to_dict()
        flat = interval_fields(self.interval)
        model = {}
        if self.model_range is not None:
            model = {
                "model_range": self.model_range.to_dict(),
                "model_share": record["model_share"],
            }
        return {
            **{k: record[k] for k in ("metric", "device", "a", "b", "mean_a", "mean_b")},
            "difference": record["difference"],
            **{k: flat[k] for k in ("ci_low", "ci_high", "level")},
            **{k: record[k] for k in ("significant", "cohens_d", "effect", "method")},
            **{k: record[k] for k in ("block_length", "reps", "n_a", "n_b")},
            "interval_method": flat["interval_method"],
            "replicate_histogram": record["replicate_histogram"],
            **model,
        }

    @classmethod
    def from_dict(cls, record: Any, where: str = "comparison") -> Comparison:
        """The comparison ``to_dict`` wrote; ``DataError`` naming ``where`` if a field is
        missing (numbers written as null read as NaN)."""
        built = build_record(
            cls,
            record,
            where,
            numbers=("mean_a", "mean_b", "difference", "cohens_d"),
            interval=interval_from_fields(record, where),
            model_range=nested_interval(record, "model_range", where),
        )
        return dataclasses.replace(built, replicate_histogram=built.replicate_histogram or {})

    def summary(self) -> str:
        star = "*" if self.significant else " "
        return (
            f"{self.metric:<10} {self.device:<10} {self.a} − {self.b}: {self.difference:+.5g} "
            f"[{self.interval.low:+.5g}, {self.interval.high:+.5g}]{star} "
            f"d={self.cohens_d:+.2f} ({self.effect})"
        )

    def reversed(self) -> Comparison:
        """The same comparison read as b − a."""
        return dataclasses.replace(
            self,
            a=self.b,
            b=self.a,
            mean_a=self.mean_b,
            mean_b=self.mean_a,
            difference=-self.difference,
            interval=self.interval.negated(),
            cohens_d=-self.cohens_d,
            n_a=self.n_b,
            n_b=self.n_a,
            replicate_histogram={},
            model_range=self.model_range.negated() if self.model_range is not None else None,
            model_share=1 - self.model_share if self.model_share is not None else None,
        )
