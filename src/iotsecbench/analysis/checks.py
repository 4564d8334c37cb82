"""Actionable quality warnings: each kind says what is wrong and what to do next.

Warnings are an enum (:class:`WarningKind`) whose members carry a fix text; a
:class:`QualityWarning` adds the subject (configuration, device, metric, run) and the numbers
that triggered it. They travel with the results into ``analysis.json`` and the report.

References
----------
.. [1] Iglewicz, B., Hoaglin, D. C. (1993). *How to Detect and Handle Outliers*. ASQC Quality
   Press (modified z-score ``M = 0.6745·(x − median)/MAD``, flag ``|M| > 3.5``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iotsecbench.analysis.results import Record

MODIFIED_Z_CONSTANT = 0.6745  # Φ⁻¹(0.75): makes MAD consistent with σ for normal data
MODIFIED_Z_THRESHOLD = 3.5  # Iglewicz & Hoaglin (1993), p. 11
HIGH_CV_THRESHOLD = 0.10  # CV across runs above 10 % (pyperf warns at the same level)
MIN_BLOCKS = 10  # fewer blocks per run make the block bootstrap's variance estimate unstable
MIN_RUNS = 5  # the study's repetitions; fewer leave per-run inference (energy) very weak
OUTLIER_FRACTION = 0.01  # warn when more than 1 % of a series are outliers
MIN_RUNS_FOR_RUN_OUTLIERS = 10  # the MAD of fewer run means is too unstable to flag a run


class WarningKind(enum.Enum):
    """Kinds of quality warning; ``fix`` tells the user what to do."""

    HIGH_CV = (
        "high-cv",
        "Runs disagree: look for background load or thermal drift, interleave configurations, "
        "and add repetitions.",
    )
    NON_STATIONARY = (
        "non-stationary",
        "The steady state drifts or shifts: inspect the run for trends or regime changes, "
        "lengthen the warm-up, or analyse the stationary segments separately.",
    )
    BLOCK_TOO_SHORT = (
        "block-too-short",
        "The block length does not exceed the correlation length k_c: use --block-length kc "
        "or auto, or a larger fixed block.",
    )
    TOO_FEW_BLOCKS = (
        "too-few-blocks",
        "Fewer than ~10 blocks fit in a run: lengthen the runs or shorten the block.",
    )
    OUTLIERS = (
        "outliers",
        "Values with a modified z-score above 3.5: check the measurement setup for glitches "
        "before trusting means; medians are robust.",
    )
    TOO_FEW_RUNS = (
        "too-few-runs",
        "Per-run quantities have very few observations: add repetitions (≥ 5, better ≥ 10) "
        "before reading their intervals as more than indicative.",
    )
    TOO_FEW_SHARED_BLOCKS = (
        "too-few-shared-blocks",
        "A comparison paired by block needs both configurations in at least two blocks: "
        "run more repetitions (--block-on repetition) or on more workers (--block-on worker), "
        "or analyse with --block-on none.",
    )
    CENSORED_CORRELATION_LENGTH = (
        "correlation-length-censored",
        "The ACF never entered the white-noise band up to the maximum lag: the series is "
        "strongly persistent or non-stationary; check stationarity before block bootstrapping.",
    )

    def __init__(self, code: str, fix: str) -> None:
        self.code = code
        self.fix = fix


@dataclass(frozen=True)
class QualityWarning(Record):
    """One warning about one subject."""

    kind: WarningKind
    message: str  # what was observed, with the numbers
    subject: Mapping[str, Any] = field(default_factory=dict)  # configuration, device, metric, run
    values: Mapping[str, Any] = field(default_factory=dict)  # the numbers behind it

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["kind"] = self.kind.code
        data["fix"] = self.kind.fix
        return data

    def summary(self) -> str:
        return f"[{self.kind.code}] {self.message} — {self.kind.fix}"


def modified_z_scores(values: np.ndarray | Sequence[float]) -> np.ndarray:
    """``M_i = 0.6745·(x_i − median)/MAD`` (Iglewicz & Hoaglin, 1993).

    When more than half the values are equal the MAD is 0; the mean absolute deviation then
    stands in, ``M_i = (x_i − median)/(1.253314·MeanAD)`` (1.253314 = √(π/2) makes MeanAD
    estimate σ for normal data, as 1/0.6745 does for the MAD). Zeros if both are 0.
    """
    array = np.asarray(values, dtype=float)
    median = np.median(array)
    deviations = np.abs(array - median)
    mad = np.median(deviations)
    if mad > 0:
        return MODIFIED_Z_CONSTANT * (array - median) / mad
    mean_ad = np.mean(deviations)
    if mean_ad == 0:
        return np.zeros_like(array)
    return (array - median) / (1.253314 * mean_ad)


# A value must also sit at least this far from the median, relative to the median, to count
# as an outlier. A near-constant series (a modelled current that varies by 0.01 % between
# windows) has a tiny MAD, and the modified z-score alone then flags jitter no mean could
# notice. Our choice, not Iglewicz & Hoaglin's; 0 restores their rule.
OUTLIER_MIN_RELATIVE_DEVIATION = 0.01


def outlier_mask(
    values: np.ndarray | Sequence[float],
    threshold: float = MODIFIED_Z_THRESHOLD,
    min_relative_deviation: float = OUTLIER_MIN_RELATIVE_DEVIATION,
) -> np.ndarray:
    """Values whose |modified z-score| exceeds ``threshold`` (3.5) and whose distance from
    the median exceeds ``min_relative_deviation`` of |median|."""
    array = np.asarray(values, dtype=float)
    median = np.median(array) if array.size else 0.0
    far = np.abs(array - median) > min_relative_deviation * abs(median)
    return (np.abs(modified_z_scores(array)) > threshold) & far


def check_outliers(
    values: np.ndarray | Sequence[float],
    subject: Mapping[str, Any],
    max_fraction: float = OUTLIER_FRACTION,
    threshold: float = MODIFIED_Z_THRESHOLD,
) -> list[QualityWarning]:
    """Warn when more than ``max_fraction`` of the values are modified-z outliers.

    With ``max_fraction = 0`` any outlier warns (used for per-run means: one odd run).
    """
    mask = outlier_mask(values, threshold)
    count = int(mask.sum())
    fraction = count / max(1, mask.size)
    if count == 0 or fraction <= max_fraction:
        return []
    return [
        QualityWarning(
            WarningKind.OUTLIERS,
            f"{count} of {mask.size} values ({fraction:.1%}) have |modified z| > {threshold}",
            subject,
            {"count": count, "n": int(mask.size), "fraction": fraction, "threshold": threshold},
        )
    ]


def check_cv(
    cv: float, subject: Mapping[str, Any], threshold: float = HIGH_CV_THRESHOLD
) -> list[QualityWarning]:
    """Warn when the CV across runs exceeds ``threshold``."""
    if not np.isfinite(cv) or cv <= threshold:
        return []
    return [
        QualityWarning(
            WarningKind.HIGH_CV,
            f"CV across runs {cv:.1%} exceeds {threshold:.0%}",
            subject,
            {"cv": cv, "threshold": threshold},
        )
    ]


def check_block_length(
    block_length: int, k_c: int, shortest_run: int, subject: Mapping[str, Any]
) -> list[QualityWarning]:
    """Warn when ``block_length ≤ k_c`` or fewer than ~10 blocks fit in the shortest run."""
    warnings = []
    if block_length <= k_c:
        warnings.append(
            QualityWarning(
                WarningKind.BLOCK_TOO_SHORT,
                f"block length {block_length} ≤ correlation length k_c = {k_c}",
                subject,
                {"block_length": block_length, "k_c": k_c},
            )
        )
    blocks = shortest_run / block_length if block_length else 0.0
    if blocks < MIN_BLOCKS:
        warnings.append(
            QualityWarning(
                WarningKind.TOO_FEW_BLOCKS,
                f"only {blocks:.1f} blocks of {block_length} fit in a run of {shortest_run}",
                subject,
                {"block_length": block_length, "run_length": shortest_run, "blocks": blocks},
            )
        )
    return warnings


def check_runs(
    runs: int, subject: Mapping[str, Any], minimum: int = MIN_RUNS
) -> list[QualityWarning]:
    """Warn when a configuration has fewer than ``minimum`` runs."""
    if runs >= minimum:
        return []
    return [
        QualityWarning(
            WarningKind.TOO_FEW_RUNS,
            f"{runs} run(s); per-run statistics need at least {minimum}",
            subject,
            {"runs": runs, "minimum": minimum},
        )
    ]


def check_stationarity(
    verdicts: Sequence[str],
    kpss_rejections: Sequence[bool],
    subject: Mapping[str, Any],
) -> list[QualityWarning]:
    """Warn when at least half of the runs' steady states reject KPSS level stationarity.

    KPSS (H0: stationary) is the test whose rejection is evidence of instability; ADF is
    reported beside it. A majority rule keeps one chance rejection among five runs from
    flagging a configuration.
    """
    rejected = sum(bool(r) for r in kpss_rejections)
    if not kpss_rejections or rejected * 2 < len(kpss_rejections):
        return []
    return [
        QualityWarning(
            WarningKind.NON_STATIONARY,
            f"steady state not stationary in {rejected} of {len(kpss_rejections)} runs "
            f"(KPSS rejects level stationarity at 5 %)",
            subject,
            {"runs_rejecting": rejected, "runs": len(kpss_rejections), "verdicts": list(verdicts)},
        )
    ]
