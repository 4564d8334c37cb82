"""A device profile against published silicon (``iotsecbench validate``): each published
figure of the profile's device family (``energy/published.toml``) predicted by the model,
with the model's 90 % range, and the error.

The prediction of an operation at the figure's clock is ``energy.handshake.operation_parts``
(the profile's price split by its clock-scaled share), on the profile's values and on its
draws (``energy.uncertainty``); a ``cycles`` figure is that time × the figure's clock, a
``cycles/B`` one per byte of ``amount`` bytes per call. The summary counts the figures the
profile *claims* (``claimed_by``: its prices were made for that implementation): the median
|error| and the share inside the model's range — the ≥ 90 % the shipped profiles must reach.
"""

from __future__ import annotations

import statistics
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from iotsecbench.energy.handshake import operation_parts
from iotsecbench.energy.profile import DeviceProfile
from iotsecbench.energy.uncertainty import (
    DEFAULT_DRAWS,
    MODEL_LEVEL,
    central_range,
    draw_profile,
    point_values,
)
from iotsecbench.energy.vocabulary import PRIMITIVE_KINDS
from iotsecbench.errors import DataError

__all__ = ["COVERAGE_GOAL", "Comparison", "PublishedFigure", "published_figures", "validate"]

COVERAGE_GOAL = 0.90  # the share of claimed figures a shipped profile's range must hold
UNITS = ("ms", "cycles", "cycles/B")
_FIELDS = ("family", "device", "clock_mhz", "library", "operation", "figure", "unit", "label",
           "source", "date", "claimed_by", "note")  # fmt: skip


@dataclass(frozen=True)
class PublishedFigure:
    family: str
    device: str
    clock_mhz: float
    library: str
    operation: str  # a primitive of the energy vocabulary
    figure: float
    unit: str  # UNITS
    label: str
    source: str
    date: str
    claimed_by: tuple[str, ...]
    note: str
    amount: int = 1  # bytes per call (cycles/B) or operations


@dataclass(frozen=True)
class Comparison:
    published: PublishedFigure
    predicted: float | None  # None: the profile does not price the operation
    low: float | None
    high: float | None
    claimed: bool

    @property
    def error(self) -> float | None:
        """(predicted − published) / published."""
        if self.predicted is None:
            return None
        return (self.predicted - self.published.figure) / self.published.figure

    @property
    def inside(self) -> bool:
        return (
            self.low is not None
            and self.high is not None
            and (self.low <= self.published.figure <= self.high)
        )

    def to_dict(self) -> dict[str, Any]:
        p = self.published
        return {
            "family": p.family, "device": p.device, "clock_mhz": p.clock_mhz,
            "library": p.library, "operation": p.operation, "label": p.label,
            "unit": p.unit, "published": p.figure, "predicted": self.predicted,
            "model_range": None if self.low is None else {
                "low": self.low, "high": self.high, "level": MODEL_LEVEL},
            "error": self.error, "inside_model_range": self.inside, "claimed": self.claimed,
            "source": p.source, "date": p.date, "note": p.note,
        }  # fmt: skip


def published_figures(text: str | None = None) -> list[PublishedFigure]:
    """The packaged ``energy/published.toml`` (or ``text``); ``DataError`` naming the figure
    for a missing field, an unknown unit or operation."""
    if text is None:
        text = resources.files("iotsecbench.energy").joinpath("published.toml").read_text()
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DataError(f"published figures: invalid TOML: {error}") from None
    found = []
    for index, record in enumerate(document.get("figure", []), start=1):
        where = f"published figures: figure {index}"
        missing = [f for f in _FIELDS if f not in record]
        if missing:
            raise DataError(f"{where}: missing {', '.join(missing)}")
        if record["unit"] not in UNITS:
            raise DataError(f"{where}: unit {record['unit']!r} (use {', '.join(UNITS)})")
        if record["operation"] not in PRIMITIVE_KINDS:
            raise DataError(f"{where}: unknown primitive {record['operation']!r}")
        if not float(record["figure"]) > 0 or not float(record["clock_mhz"]) > 0:
            raise DataError(f"{where}: figure and clock_mhz must be positive")
        found.append(
            PublishedFigure(
                **{f: record[f] for f in _FIELDS if f != "claimed_by"},
                claimed_by=tuple(record["claimed_by"]),
                amount=int(record.get("amount", 1)),
            )
        )
    return found


def validate(
    profile: DeviceProfile,
    figures: list[PublishedFigure] | None = None,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
) -> list[Comparison]:
    """Every published figure of ``profile``'s family (or claimed by it), predicted."""
    figures = published_figures() if figures is None else figures
    family = profile.family or profile.name
    mine = [f for f in figures if f.family == family or profile.name in f.claimed_by]
    point = point_values(profile)
    drawn = draw_profile(profile, draws, seed).values
    found = []
    for figure in mine:
        claimed = profile.name in figure.claimed_by
        if figure.operation not in profile.primitives:
            found.append(Comparison(figure, None, None, None, claimed))
            continue
        value = _predicted(profile, point, figure)
        low, high = central_range(np.broadcast_to(_predicted(profile, drawn, figure), (draws,)))
        found.append(Comparison(figure, float(value), low, high, claimed))
    return found


def _predicted(profile: DeviceProfile, values: Mapping[str, Any], figure: PublishedFigure) -> Any:
    seconds = sum(
        operation_parts(profile, values, figure.operation, figure.amount, figure.clock_mhz)
    )
    if figure.unit == "cycles/B":
        # A benchmark's per-byte rate streams blocks through one context (wolfCrypt: 1 KiB
        # updates, set-up and finish once per run): the profile's per-byte price, without
        # its per-call one.
        seconds = seconds - sum(
            operation_parts(profile, values, figure.operation, 0, figure.clock_mhz)
        )
    if figure.unit == "ms":
        return seconds * 1e3 / figure.amount
    return seconds * figure.clock_mhz * 1e6 / figure.amount  # cycles per operation or byte


def summary(comparisons: list[Comparison]) -> dict[str, Any]:
    """Over the claimed figures the profile prices: how many, median |error|, the share
    inside the model's range; and how many it does not price."""
    claimed = [c for c in comparisons if c.claimed and c.predicted is not None]
    errors = [abs(c.error) for c in claimed if c.error is not None]
    return {
        "claimed": len(claimed),
        "shown": len(comparisons),
        "unpriced": sum(1 for c in comparisons if c.predicted is None),
        "median_abs_error": statistics.median(errors) if errors else None,
        "inside_model_range": (sum(c.inside for c in claimed) / len(claimed)) if claimed else None,
        "goal": COVERAGE_GOAL,
    }
