"""Multi-objective comparison: Pareto dominance, front and dominance matrix.

A configuration *dominates* another when it is no worse in every objective and strictly
better in at least one (Deb, 2001, Def. 2.5). Objectives are columns of a table with a
direction each (``"min"`` or ``"max"``); security properties enter either as *constraints*
(configurations lacking a required property are excluded before ranking) or as an extra
objective (e.g. a count of properties, maximised) — the dimension the `stability` study
names as missing.

References
----------
.. [1] Deb, K. (2001). *Multi-Objective Optimization Using Evolutionary Algorithms*. Wiley.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iotsecbench.analysis.results import Record

SECURITY_PROPERTY_NAMES = (
    "confidentiality",
    "integrity",
    "authentication",
    "replay_protection",
    "end_to_end",
    "forward_secrecy",
    "post_quantum",  # the session keys resist a quantum computer (ML-KEM in the exchange)
)


def dominates(u: Sequence[float], v: Sequence[float], directions: Sequence[str]) -> bool:
    """True when point ``u`` Pareto-dominates ``v`` under ``directions`` ("min"/"max")."""
    better_or_equal = True
    strictly_better = False
    for a, b, direction in zip(u, v, directions, strict=True):
        if direction == "max":
            a, b = -a, -b
        if a > b:
            better_or_equal = False
            break
        if a < b:
            strictly_better = True
    return better_or_equal and strictly_better


def has_property(properties: Mapping[str, Any], name: str) -> bool:
    """Whether a property is present: booleans as is; strings present unless empty or "none".

    A per-hop variant (``hop_<name>``, what TLS adds) also satisfies ``<name>``; require
    ``end_to_end`` as well to insist on protection through the broker.
    """
    value = properties.get(name)
    if not value and properties.get(f"hop_{name}"):
        return True
    if isinstance(value, str):
        return value.strip().lower() not in ("", "none", "false", "no")
    return bool(value)


def security_score(properties: Mapping[str, Any]) -> int:
    """Number of the security properties (``SECURITY_PROPERTY_NAMES``) a configuration has
    (an objective to maximise)."""
    return sum(has_property(properties, name) for name in SECURITY_PROPERTY_NAMES)


@dataclass(frozen=True)
class ParetoResult(Record):
    """Pareto analysis of a set of configurations."""

    objectives: Mapping[str, str]  # objective name → "min" | "max"
    configurations: tuple[str, ...]  # candidates ranked (after constraints), in input order
    values: Mapping[str, Mapping[str, float]]  # configuration → objective → value
    front: tuple[str, ...]  # non-dominated configurations
    dominated_by: Mapping[str, tuple[str, ...]]  # configuration → those that dominate it
    dominance_matrix: tuple[tuple[bool, ...], ...]  # [i][j]: configurations[i] dominates [j]
    constraints: tuple[str, ...]  # required security properties
    excluded: Mapping[str, tuple[str, ...]]  # configuration → required properties it lacks

    def summary(self) -> str:
        return f"Pareto front over {dict(self.objectives)}: {', '.join(self.front) or '—'}"


def pareto_analysis(
    values: Mapping[str, Mapping[str, float]],
    objectives: Mapping[str, str],
    properties: Mapping[str, Mapping[str, Any]] | None = None,
    constraints: Sequence[str] = (),
) -> ParetoResult:
    """Pareto front and dominance matrix of configurations.

    Parameters
    ----------
    values : mapping
        configuration → objective name → value. Configurations missing an objective (or
        with a NaN) are excluded from ranking.
    objectives : mapping
        objective name → "min" or "max", e.g. ``{"energy_mah": "min", "latency_ms": "min"}``.
        The name ``"security_score"`` is filled from ``properties`` when not in ``values``.
    properties : mapping, optional
        configuration → security properties (``SecurityProperties.to_dict()``).
    constraints : sequence of str
        Properties every candidate must have (e.g. ``["integrity"]``).

    Returns
    -------
    ParetoResult
    """
    for name, direction in objectives.items():
        if direction not in ("min", "max"):
            raise ValueError(f"objective {name!r}: direction must be 'min' or 'max'")
    properties = properties or {}
    excluded: dict[str, tuple[str, ...]] = {}
    table: dict[str, dict[str, float]] = {}
    for configuration, row in values.items():
        props = properties.get(configuration)
        if constraints:
            missing = tuple(c for c in constraints if props is None or not has_property(props, c))
            if missing:
                excluded[configuration] = missing
                continue
        point = {}
        for name in objectives:
            if name in row:
                point[name] = float(row[name])
            elif name == "security_score" and props is not None:
                point[name] = float(security_score(props))
            else:
                point[name] = float("nan")
        if all(np.isfinite(v) for v in point.values()):
            table[configuration] = point
        else:
            excluded[configuration] = ("missing objective value",)
    names = tuple(table)
    directions = tuple(objectives.values())
    points = [tuple(table[c][o] for o in objectives) for c in names]
    matrix = tuple(
        tuple(dominates(points[i], points[j], directions) for j in range(len(names)))
        for i in range(len(names))
    )
    dominated_by = {
        names[j]: tuple(names[i] for i in range(len(names)) if matrix[i][j])
        for j in range(len(names))
    }
    front = tuple(c for c in names if not dominated_by[c])
    return ParetoResult(
        objectives=dict(objectives),
        configurations=names,
        values=table,
        front=front,
        dominated_by=dominated_by,
        dominance_matrix=matrix,
        constraints=tuple(constraints),
        excluded=excluded,
    )


def front_with_security_axes(
    values: Mapping[str, Mapping[str, float]],
    objectives: Mapping[str, str],
    properties: Mapping[str, Mapping[str, Any]],
) -> ParetoResult:
    """The front over ``objectives`` plus each security property as an axis of its own
    (having it beats lacking it), so plain MQTT cannot dominate an encrypted configuration
    by being cheaper alone (the report's headline front). Without ``properties`` the front
    over ``objectives`` alone."""
    widened = {c: dict(v) for c, v in values.items()}
    axes = dict(objectives)
    if properties:
        for configuration, row in widened.items():
            own = properties.get(configuration, {})
            for name in SECURITY_PROPERTY_NAMES:
                row[name] = float(has_property(own, name))
        axes.update({name: "max" for name in SECURITY_PROPERTY_NAMES})
    return pareto_analysis(widened, axes)
