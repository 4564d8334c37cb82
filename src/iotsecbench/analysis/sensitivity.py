"""Sensitivity of the cumulative-energy ranking to the transient and steady-state levels.

The `stability` study rescales the handshake (transient) duration by ±10 % and ±20 % and the
steady-state load by α ∈ {0.8, 0.9, 1.0, 1.1, 1.2}, recomputes the cumulative energy and asks
whether the ranking of configurations changes. Per run of fixed duration ``T`` with a
transient of ``τ`` s at mean current ``I_tr`` and a steady state at mean ``I_ss``:

``E(f, α) = [f·τ·I_tr + (T − f·τ)·α·I_ss] / 3600``  (mAh)

Applying the same (f, α) to every configuration (the study's scenario) changes the ranking
only through the transient; the *one-at-a-time* scenario perturbs one configuration while
the others stay nominal, which asks how far a single configuration's estimate may be off
before the ranking flips.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from iotsecbench.analysis.results import Record

TRANSIENT_FACTORS = (0.8, 0.9, 1.0, 1.1, 1.2)
STEADY_STATE_FACTORS = (0.8, 0.9, 1.0, 1.1, 1.2)


@dataclass(frozen=True)
class RunRegimes(Record):
    """Transient and steady-state summary of one configuration (means over its runs)."""

    duration_s: float  # run duration T
    transient_s: float  # transient duration τ
    transient_current_ma: float  # mean current during the transient (0 when τ = 0)
    steady_current_ma: float  # mean steady-state current


def scenario_energy_mah(regimes: RunRegimes, transient_factor: float, alpha: float) -> float:
    """``E(f, α)`` of one run (see module notes), in mAh."""
    transient = min(transient_factor * regimes.transient_s, regimes.duration_s)
    return (
        transient * regimes.transient_current_ma
        + (regimes.duration_s - transient) * alpha * regimes.steady_current_ma
    ) / 3600.0


@dataclass(frozen=True)
class SensitivityScenario(Record):
    """One perturbation and the ranking it gives."""

    transient_factor: float
    alpha: float
    perturbed: str | None  # configuration perturbed (None: all of them, the study's scenario)
    energy_mah: Mapping[str, float]  # configuration → E(f, α)
    ranking: tuple[str, ...]  # configurations by increasing energy
    same_as_nominal: bool


@dataclass(frozen=True)
class SensitivityResult(Record):
    """All scenarios for one device and whether the ranking held."""

    device: str
    nominal_ranking: tuple[str, ...]
    scenarios: tuple[SensitivityScenario, ...]
    invariant_uniform: bool  # ranking unchanged when all configurations are perturbed alike
    invariant_one_at_a_time: bool  # ranking unchanged when one configuration is perturbed

    def summary(self) -> str:
        return (
            f"{self.device}: ranking {' < '.join(self.nominal_ranking)}; invariant "
            f"(uniform) {self.invariant_uniform}, (one at a time) {self.invariant_one_at_a_time}"
        )


def _rank(energy: Mapping[str, float]) -> tuple[str, ...]:
    return tuple(sorted(energy, key=lambda c: (energy[c], c)))


def energy_sensitivity(
    regimes: Mapping[str, RunRegimes],
    device: str,
    transient_factors: Sequence[float] = TRANSIENT_FACTORS,
    alphas: Sequence[float] = STEADY_STATE_FACTORS,
) -> SensitivityResult:
    """Recompute cumulative energy over the (f, α) grid; is the ranking invariant?

    Parameters
    ----------
    regimes : mapping
        configuration → RunRegimes for one device.
    device : str
        Label carried into the result.
    transient_factors, alphas : sequences of float
        The study's ±10/20 % and α ∈ {0.8, …, 1.2}.

    Returns
    -------
    SensitivityResult
    """
    nominal = {c: scenario_energy_mah(r, 1.0, 1.0) for c, r in regimes.items()}
    nominal_ranking = _rank(nominal)
    scenarios = []
    for f in transient_factors:
        for alpha in alphas:
            energy = {c: scenario_energy_mah(r, f, alpha) for c, r in regimes.items()}
            ranking = _rank(energy)
            scenarios.append(
                SensitivityScenario(f, alpha, None, energy, ranking, ranking == nominal_ranking)
            )
            for perturbed, r in regimes.items():
                energy = dict(nominal)
                energy[perturbed] = scenario_energy_mah(r, f, alpha)
                ranking = _rank(energy)
                scenarios.append(
                    SensitivityScenario(
                        f, alpha, perturbed, energy, ranking, ranking == nominal_ranking
                    )
                )
    return SensitivityResult(
        device=device,
        nominal_ranking=nominal_ranking,
        scenarios=tuple(scenarios),
        invariant_uniform=all(s.same_as_nominal for s in scenarios if s.perturbed is None),
        invariant_one_at_a_time=all(
            s.same_as_nominal for s in scenarios if s.perturbed is not None
        ),
    )
