"""The model's uncertainty: a device profile drawn many times from its numbers' ranges.

Every number of a profile states the range its true value cannot leave (``energy.profile``).
``draw_profile`` turns each into draws of a PERT distribution — the beta distribution on
``[low, high]`` with its mode at the profile's value and shape λ = 4, the usual reading of an
expert's (minimum, most likely, maximum) [1]_ — so a value at an end of its range (a lower
bound such as a CPI of 1) draws skewed away from it, and no draw leaves the range. Counted
numbers are the CPI's draws scaled (``value × cpi_draw / cpi``): one CPI per draw moves all of
them together, as one unknown CPI would.

A model output evaluated on the same draws for every configuration (``values(i)`` or the
arrays themselves) keeps common random numbers: the difference of two configurations' outputs
draw by draw carries their correlation, which the difference of their separate ranges would
lose. Each number's draws come from a generator keyed by the seed and the number's name, so a
profile with one more number leaves the others' draws unchanged.

References
----------
.. [1] Vose, D. (2008). *Risk Analysis: A Quantitative Guide*, 3rd ed., Wiley, §14.3
   (the PERT distribution).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from iotsecbench.energy.profile import DeviceProfile
from iotsecbench.errors import SpecError

__all__ = [
    "DEFAULT_DRAWS",
    "MODEL_LEVEL",
    "PERT_SHAPE",
    "ProfileDraws",
    "central_range",
    "check_draws",
    "draw_profile",
    "keyed_generator",
    "pert",
    "point_values",
]

DEFAULT_DRAWS = 1000  # enough for a 90 % range's ends to about ±1 % of its width
PERT_SHAPE = 4.0  # λ of the PERT distribution (the classic PERT weight of the mode)
MODEL_LEVEL = 0.90  # a model range is the central 90 % of a figure's draws
# Bounds on what a user may ask for: fewer draws leave a 90 % range's ends to a handful of
# draws; more hold every number's draws × the runs' figures in memory for no visible gain.
MIN_DRAWS, MAX_DRAWS = 100, 100_000
MAX_SEED = 2**63 - 1  # a seed is stored as a BIGINT, like every seed of the lab


def check_draws(draws: int, seed: int, option: str = "--draws") -> None:
    """Refuse (exit 2, one line) a number of draws or a seed outside the bounds above."""
    if not MIN_DRAWS <= draws <= MAX_DRAWS:
        raise SpecError(
            f"{option} {draws}: use {MIN_DRAWS} to {MAX_DRAWS:,} draws ({DEFAULT_DRAWS} default)"
        )
    if not 0 <= seed <= MAX_SEED:
        raise SpecError(f"--seed {seed}: use a whole number from 0 to {MAX_SEED}")


def central_range(values: NDArray[np.float64], level: float = MODEL_LEVEL) -> tuple[float, float]:
    """The central ``level`` of a figure's draws: its percentile ends."""
    low, high = np.percentile(np.asarray(values, dtype=float), [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def keyed_generator(seed: int, *key: str) -> np.random.Generator:
    """A generator for ``seed`` and a name: the same draws whatever else is drawn."""
    digest = hashlib.sha256("\0".join(key).encode()).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([int(seed), *words]))


def pert(
    generator: np.random.Generator, low: float, mode: float, high: float, size: int
) -> NDArray[np.float64]:
    """``size`` draws of PERT(low, mode, high): ``low + (high − low)·Beta(α, β)``,
    α = 1 + λ(mode − low)/(high − low), β = 1 + λ(high − mode)/(high − low); a range
    without width draws its one value."""
    if not low <= mode <= high:
        raise ValueError(f"PERT needs low <= mode <= high, got {low}, {mode}, {high}")
    width = high - low
    if width <= 0:
        return np.full(size, float(mode))
    alpha = 1 + PERT_SHAPE * (mode - low) / width
    beta = 1 + PERT_SHAPE * (high - mode) / width
    return low + width * generator.beta(alpha, beta, size)


@dataclass(frozen=True)
class ProfileDraws:
    """``draws`` joint draws of every number of a profile, by dotted name (``tx_current``,
    ``ecdh-p256-keygen.per_operation``: ``DeviceProfile.numbers``)."""

    profile: DeviceProfile
    draws: int
    seed: int
    values: Mapping[str, NDArray[np.float64]]

    def __getitem__(self, name: str) -> NDArray[np.float64]:
        return self.values[name]

    def get(self, name: str, default: float | None = None) -> NDArray[np.float64] | float | None:
        return self.values.get(name, default)

    @property
    def method(self) -> str:
        """How the draws were made, for an interval's ``method``."""
        return (
            f"profile Monte Carlo ({self.draws} draws of {self.profile.name}'s ranges, PERT, "
            f"seed {self.seed})"
        )


def draw_profile(profile: DeviceProfile, draws: int = DEFAULT_DRAWS, seed: int = 0) -> ProfileDraws:
    """Draw every number of ``profile`` ``draws`` times (seeded; see the module's notes)."""
    if draws < 2:
        raise ValueError(f"draws must be at least 2, got {draws}")
    numbers = profile.numbers()
    values: dict[str, NDArray[np.float64]] = {}
    cpi = numbers.get("cpi")
    cpi_ratio = None
    if cpi is not None:
        cpi_draws = pert(keyed_generator(seed, "cpi"), *_pert_ends(cpi), draws)
        cpi_ratio = cpi_draws / cpi.value if cpi.value > 0 else np.ones(draws)
    for name, number in numbers.items():
        if number.status == "counted" and cpi_ratio is not None:
            values[name] = number.value * cpi_ratio
        else:
            values[name] = pert(keyed_generator(seed, name), *_pert_ends(number), draws)
    for array in values.values():
        array.setflags(write=False)
    return ProfileDraws(profile, draws, seed, MappingProxyType(values))


def _pert_ends(number) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    low, high = number.bounds
    return low, number.value, high


def point_values(profile: DeviceProfile) -> Mapping[str, float]:
    """Every number's value by dotted name: the point the model's figures are quoted at."""
    return MappingProxyType({name: n.value for name, n in profile.numbers().items()})
