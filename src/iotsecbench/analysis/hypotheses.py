"""The `stability` study's hypotheses H1–H3, generalised to any baseline and any pair.

- **H1(x)**: configuration x costs more than the baseline — supported when the 95 % CI of
  ``mean(x) − mean(baseline)`` lies above 0, contradicted when it lies below 0.
- **H2(c, t)**: c lies strictly between the baseline and t — supported when both
  ``c − baseline`` and ``t − c`` are significant with the same sign; contradicted when c is
  significantly outside the range.
- **H3(t)**: t is strictly Pareto-dominated by some configuration (on the point estimates of
  the Pareto objectives).

Verdicts are ``"supported"``, ``"contradicted"`` or ``"inconclusive"`` (H3: ``"supported"`` or
``"not supported"``); the evidence lists the comparisons or values used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from iotsecbench.analysis.pareto import ParetoResult
from iotsecbench.analysis.results import Comparison, Record


@dataclass(frozen=True)
class Hypothesis(Record):
    """One hypothesis instance with its verdict."""

    id: str  # "H1" | "H2" | "H3"
    statement: str
    verdict: str  # "supported" | "contradicted" | "inconclusive" | "not supported"
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        return f"{self.id}: {self.statement} → {self.verdict}"


def find_comparison(
    comparisons: Sequence[Comparison], metric: str, device: str, a: str, b: str
) -> Comparison | None:
    """The comparison a − b (reversing b − a when only that one exists)."""
    for c in comparisons:
        if c.metric == metric and c.device == device:
            if (c.a, c.b) == (a, b):
                return c
            if (c.a, c.b) == (b, a):
                return c.reversed()
    return None


def _sign(c: Comparison) -> int:
    if c.interval.low > 0:
        return 1
    if c.interval.high < 0:
        return -1
    return 0


def _evidence(c: Comparison) -> dict[str, Any]:
    return {
        "comparison": f"{c.a} − {c.b}",
        "difference": c.difference,
        "ci_low": c.interval.low,
        "ci_high": c.interval.high,
        "cohens_d": c.cohens_d,
    }


def hypothesis_h1(
    comparisons: Sequence[Comparison], metric: str, device: str, baseline: str, x: str
) -> Hypothesis | None:
    """H1(x): mean(x) > mean(baseline) at the CI level."""
    c = find_comparison(comparisons, metric, device, x, baseline)
    if c is None:
        return None
    sign = _sign(c)
    verdict = {1: "supported", -1: "contradicted", 0: "inconclusive"}[sign]
    return Hypothesis(
        "H1",
        f"{metric} of {x} exceeds {baseline} on {device}",
        verdict,
        {"metric": metric, "device": device, **_evidence(c)},
    )


def hypothesis_h2(
    comparisons: Sequence[Comparison],
    metric: str,
    device: str,
    baseline: str,
    c_name: str,
    t_name: str,
) -> Hypothesis | None:
    """H2(c, t): c lies strictly between the baseline and t."""
    lower = find_comparison(comparisons, metric, device, c_name, baseline)
    upper = find_comparison(comparisons, metric, device, t_name, c_name)
    if lower is None or upper is None:
        return None
    s1, s2 = _sign(lower), _sign(upper)
    if s1 != 0 and s1 == s2:
        verdict = "supported"
    elif s1 != 0 and s2 != 0:
        verdict = "contradicted"
    else:
        verdict = "inconclusive"
    return Hypothesis(
        "H2",
        f"{metric} of {c_name} lies strictly between {baseline} and {t_name} on {device}",
        verdict,
        {
            "metric": metric,
            "device": device,
            "lower": _evidence(lower),
            "upper": _evidence(upper),
        },
    )


def hypothesis_h3(pareto: ParetoResult, t: str) -> Hypothesis | None:
    """H3(t): t is strictly dominated by some configuration."""
    if t not in pareto.configurations:
        return None
    dominators = pareto.dominated_by.get(t, ())
    return Hypothesis(
        "H3",
        f"{t} is strictly Pareto-dominated over {', '.join(pareto.objectives)}",
        "supported" if dominators else "not supported",
        {
            "dominated_by": list(dominators),
            "values": {c: dict(pareto.values[c]) for c in (t, *dominators)},
            "note": "dominance on point estimates",
        },
    )


def evaluate_hypotheses(
    comparisons: Sequence[Comparison],
    pareto: ParetoResult | None,
    configurations: Sequence[str],
    baseline: str,
    metric: str,
    devices: Sequence[str],
) -> list[Hypothesis]:
    """H1 for every non-baseline configuration, H2 for every ordered pair of them, H3 for all.

    Parameters
    ----------
    comparisons : sequence of Comparison
    pareto : ParetoResult or None
    configurations : sequence of str
    baseline : str
    metric : str
        Metric H1/H2 read (the study: energy, via mean current — ``"current_ma"``).
    devices : sequence of str
        Devices H1/H2 are evaluated on.

    Returns
    -------
    list of Hypothesis
    """
    others = [c for c in configurations if c != baseline]
    result: list[Hypothesis] = []
    for device in devices:
        for x in others:
            h = hypothesis_h1(comparisons, metric, device, baseline, x)
            if h is not None:
                result.append(h)
        for c_name in others:
            for t_name in others:
                if c_name != t_name:
                    h = hypothesis_h2(comparisons, metric, device, baseline, c_name, t_name)
                    if h is not None:
                        result.append(h)
    if pareto is not None:
        for t in configurations:
            h = hypothesis_h3(pareto, t)
            if h is not None:
                result.append(h)
    return result
