"""Matrix expansion: a spec becomes cells, cells × repetitions become planned runs.

Runs of different cells are interleaved (each repetition is a seeded random permutation of
all cells: A C B, B A C, …) so that drift of the machine over time cannot masquerade as a
difference between configurations; the order is recorded with every run.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass

from iotsecbench.errors import SpecError
from iotsecbench.spec.models import CellFilter, ExperimentSpec
from iotsecbench.spec.network import LOOPBACK

FACTORS = ("configuration", "payload_bytes", "rate_hz", "qos", "network")


@dataclass(frozen=True)
class Cell:
    """One combination of factor levels."""

    configuration: str
    payload_bytes: int
    rate_hz: float
    qos: int
    label: str = ""  # human label, unique within the experiment
    network: str = LOOPBACK  # network profile name

    @property
    def cell_id(self) -> str:
        """File-system-safe identifier, stable across runs of the same spec."""
        rate = f"{self.rate_hz:g}".replace(".", "p")
        raw = f"{self.configuration}_{self.payload_bytes}B_{rate}Hz_q{self.qos}"
        if self.network != LOOPBACK:  # loopback ids stay as they were before networks
            raw += f"_net-{self.network}"
        return re.sub(r"[^A-Za-z0-9_.+-]", "-", raw)


@dataclass(frozen=True)
class PlannedRun:
    """One execution of a cell."""

    cell: Cell
    repetition: int  # 1-based
    run_order: int  # 0-based position in the whole experiment

    @property
    def run_id(self) -> str:
        return f"{self.cell.cell_id}_r{self.repetition}"


def _matches(cell: Cell, rule: CellFilter) -> bool:
    return all(
        getattr(rule, field) is None or getattr(rule, field) == getattr(cell, field)
        for field in FACTORS
    )


def _label(cell: Cell, varying: set[str]) -> str:
    parts = [cell.configuration]
    if "payload_bytes" in varying:
        parts.append(f"{cell.payload_bytes} B")
    if "rate_hz" in varying:
        parts.append(f"{cell.rate_hz:g} Hz")
    if "qos" in varying:
        parts.append(f"QoS{cell.qos}")
    if "network" in varying:
        parts.append(cell.network)
    return " · ".join(parts)


def expand(spec: ExperimentSpec) -> list[Cell]:
    """All cells of the spec, in the order the factors are listed, with unique labels."""
    cells = [
        Cell(configuration, payload, rate, qos, network=network)
        for configuration, payload, rate, qos, network in itertools.product(
            spec.configurations, spec.payload_bytes, spec.rate_hz, spec.qos, spec.network
        )
    ]
    cells = [cell for cell in cells if not any(_matches(cell, rule) for rule in spec.exclude)]
    for rule in spec.include:
        missing = [
            f
            for f in ("configuration", "payload_bytes", "rate_hz", "qos")
            if getattr(rule, f) is None
        ]
        network = rule.network or (spec.network[0] if len(spec.network) == 1 else None)
        if network is None:
            missing.append("network")
        elif network not in spec.network:
            raise SpecError(f"include: network '{network}' is not in the spec's `network` list")
        if missing:
            raise SpecError(f"include entries must set every factor; missing {', '.join(missing)}")
        extra = Cell(
            rule.configuration,  # type: ignore[arg-type]
            rule.payload_bytes,  # type: ignore[arg-type]
            rule.rate_hz,  # type: ignore[arg-type]
            rule.qos,  # type: ignore[arg-type]
            network=network,  # type: ignore[arg-type]
        )
        if extra not in cells:
            cells.append(extra)
    if not cells:
        raise SpecError("the experiment has no cells left after `exclude`")
    varying = {
        field
        for field in ("payload_bytes", "rate_hz", "qos", "network")
        if len({getattr(cell, field) for cell in cells}) > 1
    }
    return [
        Cell(c.configuration, c.payload_bytes, c.rate_hz, c.qos, _label(c, varying), c.network)
        for c in cells
    ]


def plan_runs(spec: ExperimentSpec) -> list[PlannedRun]:
    """Cells × repetitions, interleaved: one permutation per repetition, seeded by ``spec.seed``."""
    cells = expand(spec)
    rng = random.Random(spec.seed)
    planned: list[PlannedRun] = []
    for repetition in range(1, spec.repetitions + 1):
        order = list(cells)
        rng.shuffle(order)
        for cell in order:
            planned.append(PlannedRun(cell, repetition, len(planned)))
    return planned
