"""Matrix expansion: a spec becomes cells, cells × repetitions become planned runs.

Runs of different cells are interleaved (each repetition is a seeded random permutation of
all cells: A C B, B A C, …) so that drift of the machine over time cannot masquerade as a
difference between configurations; the order is recorded with every run.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from dataclasses import dataclass

from iotsecbench.errors import SpecError
from iotsecbench.spec.hosts import LOOPBACK
from iotsecbench.spec.models import CellFilter, ExperimentSpec

FACTORS = (
    "configuration",
    "payload_bytes",
    "rate_hz",
    "qos",
    "network",
    "transport",
    "method",
    "stack",
)
# Factors an `include` entry may leave out when the spec has one level of them.
SINGLE_LEVEL_DEFAULTS = ("network", "transport", "method", "stack")


@dataclass(frozen=True)
class Cell:
    """One combination of factor levels."""

    configuration: str
    payload_bytes: int
    rate_hz: float
    qos: int
    label: str = ""  # human label, unique within the experiment
    network: str = LOOPBACK  # network profile name
    transport: str = "mqtt"  # "mqtt" (through the broker) or "tcp" (emitter -> receiver)
    method: str = "unidirectional"  # or "echo" (tcp only)
    stack: str = "openssl"  # the client's TLS stack: openssl, openssl-3.5, mbedtls, wolfssl(-5.9)

    @property
    def cell_id(self) -> str:
        """File-system-safe identifier, stable across runs of the same spec."""
        rate = f"{self.rate_hz:g}".replace(".", "p")
        raw = f"{self.configuration}_{self.payload_bytes}B_{rate}Hz_q{self.qos}"
        # Default levels leave ids as they were before these factors existed.
        if self.network != LOOPBACK:
            raw += f"_net-{self.network}"
        if self.transport != "mqtt":
            raw += f"_{self.transport}"
        if self.method != "unidirectional":
            raw += f"_{self.method}"
        if self.stack != "openssl":
            raw += f"_{self.stack}"
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
    for factor in ("network", "transport", "method", "stack"):
        if factor in varying:
            parts.append(getattr(cell, factor))
    return " · ".join(parts)


def expand(spec: ExperimentSpec) -> list[Cell]:
    """All cells of the spec, in the order the factors are listed, with unique labels."""
    cells = [
        Cell(
            c, payload, rate, qos, network=network, transport=transport, method=method, stack=stack
        )
        for c, payload, rate, qos, network, transport, method, stack in itertools.product(
            spec.configurations,
            spec.payload_bytes,
            spec.rate_hz,
            spec.qos,
            spec.network,
            spec.transport,
            spec.method,
            spec.stack,
        )
    ]
    cells = [cell for cell in cells if not any(_matches(cell, rule) for rule in spec.exclude)]
    for rule in spec.include:
        missing = [
            f
            for f in ("configuration", "payload_bytes", "rate_hz", "qos")
            if getattr(rule, f) is None
        ]
        levels = {}
        for factor in SINGLE_LEVEL_DEFAULTS:
            listed = getattr(spec, factor)
            level = getattr(rule, factor) or (listed[0] if len(listed) == 1 else None)
            if level is None:
                missing.append(factor)
            elif level not in listed:
                raise SpecError(f"include: {factor} '{level}' is not in the spec's `{factor}` list")
            levels[factor] = level
        if missing:
            raise SpecError(f"include entries must set every factor; missing {', '.join(missing)}")
        extra = Cell(
            rule.configuration,  # type: ignore[arg-type]
            rule.payload_bytes,  # type: ignore[arg-type]
            rule.rate_hz,  # type: ignore[arg-type]
            rule.qos,  # type: ignore[arg-type]
            **levels,
        )
        if extra not in cells:
            cells.append(extra)
    if not cells:
        raise SpecError("the experiment has no cells left after `exclude`")
    varying = {field for field in FACTORS[1:] if len({getattr(cell, field) for cell in cells}) > 1}
    return [dataclasses.replace(c, label=_label(c, varying)) for c in cells]


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
