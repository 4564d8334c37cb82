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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np


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
        """True when 0 lies outside the interval (the study's significance rule)."""
        return not self.contains(0.0)

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


@dataclass(frozen=True)
class Comparison(Record):
    """Difference of means between configurations a and b for one metric and device."""

    metric: str  # "current_ma" | "energy_mah" | "latency_ms"
    device: str  # "emitter" | "receiver" | "end-to-end" (latency)
    a: str  # configuration a
    b: str  # configuration b
    mean_a: float
    mean_b: float
    difference: float  # mean(a) − mean(b), in the metric's unit
    ci_low: float
    ci_high: float
    level: float  # nominal coverage of [ci_low, ci_high]
    significant: bool  # the interval excludes 0
    cohens_d: float  # standardised difference, pooled SD
    effect: str  # Cohen's label of |d|
    method: str  # "moving" | "circular" | "stationary" | "iid-runs"
    block_length: int | None  # None for the i.i.d. bootstrap over runs
    reps: int
    n_a: int  # observations of a (samples, messages or runs)
    n_b: int
    interval_method: str  # full description of the interval
    replicate_histogram: Mapping[str, Any] = field(default_factory=dict)  # counts, edges

    def summary(self) -> str:
        star = "*" if self.significant else " "
        return (
            f"{self.metric:<10} {self.device:<10} {self.a} − {self.b}: {self.difference:+.5g} "
            f"[{self.ci_low:+.5g}, {self.ci_high:+.5g}]{star} d={self.cohens_d:+.2f} "
            f"({self.effect})"
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
            ci_low=-self.ci_high,
            ci_high=-self.ci_low,
            cohens_d=-self.cohens_d,
            n_a=self.n_b,
            n_b=self.n_a,
            replicate_histogram={},
        )
