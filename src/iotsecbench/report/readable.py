"""Numbers people read: configuration names as a reader says them, and rounding that shows no
more digits than an interval supports.

Every place of the report that names a metric (findings, hypothesis matrix, inference
table) takes the name from the registry (``analysis.metrics``, re-exported here as
``metric``); ``interval_text`` rounds an estimate and its interval to the same decimal place,
chosen so the interval's half-width keeps two significant digits.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from iotsecbench.analysis.metrics import MEASURED, METRICS, MODELLED, ROLES, metric

__all__ = ["MEASURED", "MODELLED", "metric"]

# Cohen (1988): |d| of 0.2, 0.5 and 0.8 are small, medium and large effects.
EFFECT_WORDS = ((0.2, "negligible"), (0.5, "small"), (0.8, "medium"), (math.inf, "large"))

_TRANSPORT_NAMES = {"plain": "plain MQTT", "tls1.2": "TLS 1.2", "tls1.3": "TLS 1.3"}


def role_phrase(role: str | None) -> str:
    """ "the emitter's" for a device role; "the" for an end-to-end or unnamed one."""
    return f"the {role}'s" if role in ROLES else "the"


def role_heading(role: str | None, key: str, current: str = MODELLED) -> str:
    """ "emitter modelled current (mA)"; an end-to-end metric needs no role."""
    heading = metric(key, current).heading()
    return f"{role} {heading}" if role in ROLES else heading


# A metric's key or column in free text (a note or warning of analysis.json): its own word.
_METRIC_WORD = re.compile(
    r"\b(" + "|".join(sorted(map(re.escape, METRICS.names), key=len, reverse=True)) + r")\b"
)


def in_words(text: str, current: str = MODELLED) -> str:
    """Free text the analysis wrote (notes, warnings, options) with every metric key it
    names said as a reader says it: "Pareto energy_mah = …" → "Pareto modelled charge = …".
    Structured records are rendered from their fields instead; this is for prose."""
    return _METRIC_WORD.sub(lambda match: metric(match.group(1), current).described, text)


def configuration_name(name: str) -> str:
    """``tls1.2+ecdh-p256-aes128-gcm`` → ``TLS 1.2 + ecdh-p256-aes128-gcm``; scheme names,
    which are already what a reader types, stay as they are."""
    transport, _, scheme = name.partition("+")
    readable = _TRANSPORT_NAMES.get(transport, transport)
    return f"{readable} + {scheme}" if scheme else readable


def effect_word(d: float | None) -> str | None:
    if d is None or not math.isfinite(d):
        return None
    return next(word for limit, word in EFFECT_WORDS if abs(d) < limit)


def decimals_for(half_width: float, significant: int = 2) -> int:
    """Decimal places that show ``half_width`` with ``significant`` digits (never negative:
    no rounding to tens)."""
    if not math.isfinite(half_width) or half_width <= 0:
        return 3
    return max(0, significant - 1 - math.floor(math.log10(half_width)))


def number(value: float, decimals: int, signed: bool = False) -> str:
    if not math.isfinite(value):
        return "–"
    text = f"{value:+,.{decimals}f}" if signed else f"{value:,.{decimals}f}"
    return text.replace("-", "−")  # a minus sign, not a hyphen


def interval_text(low: float, high: float, decimals: int) -> str:
    """ "0.12–1.26"; with a negative end "−0.05 to 0.30", where a dash would read as minus."""
    if low < 0 or high < 0:
        return f"{number(low, decimals)} to {number(high, decimals)}"
    return f"{number(low, decimals)}–{number(high, decimals)}"


def with_unit(text: str, unit: str) -> str:
    return f"{text} {unit}" if unit else text


@dataclass(frozen=True)
class Change:
    """A difference and its interval as a sentence shows them, every part rounded to the
    decimal place that keeps the interval's half-width at two significant digits."""

    decimals: int
    amount: str  # |difference| with unit: "4.1 mA"
    signed: str  # "+4.1 mA"
    relative: str  # "+8.5 %, " (empty when the reference is 0)
    interval: str  # "3.2–5.0 mA"


def relative_percent(difference: float, reference: float) -> float:
    """The change in % of the reference's magnitude; NaN when the reference is 0 or not finite."""
    if reference == 0 or not math.isfinite(reference):
        return math.nan
    return 100.0 * difference / abs(reference)


def change(difference: float, low: float, high: float, reference: float, unit: str) -> Change:
    half = (high - low) / 2
    decimals = decimals_for(half if half > 0 else abs(difference) / 10)
    relative = ""
    percent = relative_percent(difference, reference)
    if math.isfinite(percent):
        relative_half = 100.0 * half / abs(reference)
        places = decimals_for(relative_half if relative_half > 0 else abs(percent))
        relative = f"{number(percent, min(places, 2), signed=True)} %, "
    return Change(
        decimals,
        with_unit(number(abs(difference), decimals), unit),
        with_unit(number(difference, decimals, signed=True), unit),
        relative,
        with_unit(interval_text(low, high, decimals), unit),
    )
