"""What an executor returns for one run, and the context shared by all runs of an experiment."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from iotsecbench.energy.profile import DeviceProfile
from iotsecbench.spec.matrix import PlannedRun
from iotsecbench.spec.models import ExperimentSpec


@dataclass(frozen=True)
class ExperimentContext:
    """Read-only facts every run of one experiment needs."""

    spec: ExperimentSpec
    results_dir: Path
    experiment_id: str
    device: DeviceProfile
    broker_version: str
    broker_url: str | None = None  # external broker (mqtt:// or mqtts://) instead of our own
    broker_ca_file: Path | None = None

    def run_dir(self, run: PlannedRun) -> Path:
        return self.results_dir / "runs" / run.run_id


@dataclass(frozen=True)
class RunOutcome:
    """One finished (or failed) run: its ``runs`` row and the rows of every other table."""

    run_row: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.run_row.get("status") == "ok"


class RunInterrupted(Exception):
    """Raised by an executor on Ctrl-C, carrying the partial outcome so it can be stored."""

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__("interrupted")
        self.outcome = outcome


ProgressCallback = Callable[[float], None]  # fraction of the current run done, 0..1


class Executor(Protocol):
    """Runs one planned run and returns its outcome; never raises for a failed run (it
    returns a ``failed`` outcome) except on interruption (``KeyboardInterrupt``)."""

    def execute(
        self, run: PlannedRun, context: ExperimentContext, on_progress: ProgressCallback
    ) -> RunOutcome: ...


class BlockRunner(Protocol):
    """Runs many planned runs elsewhere (runner/cluster.py) and yields each outcome as it
    comes back, its files already in its run directory; a run it could not measure comes
    back as a ``failed`` outcome."""

    def stream(
        self, runs: list[PlannedRun], context: ExperimentContext
    ) -> Iterator[tuple[PlannedRun, RunOutcome]]: ...
