"""The live display of a running experiment: one progress bar over all runs, advancing within
each run by its elapsed share, and one line per finished run."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from iotsecbench.runner.experiment import RunObserver
from iotsecbench.runner.outcome import RunOutcome
from iotsecbench.spec.matrix import PlannedRun
from iotsecbench.spec.models import ExperimentSpec


class RichProgress(RunObserver):
    """A rich progress bar on stderr, so stdout keeps only the results."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task: TaskID | None = None
        self.completed = 0

    def experiment_started(
        self, runs: list[PlannedRun], skipped: int, spec: ExperimentSpec
    ) -> None:
        if skipped:
            self.console.print(f"resuming: {skipped} completed runs kept, {len(runs)} to go")
        self.progress.start()
        self.task = self.progress.add_task("starting", total=len(runs))

    def run_started(self, run: PlannedRun) -> None:
        assert self.task is not None
        self.progress.update(self.task, description=f"{run.cell.label} #{run.repetition}")

    def run_progress(self, run: PlannedRun, fraction: float) -> None:
        assert self.task is not None
        self.progress.update(self.task, completed=self.completed + fraction)

    def run_finished(self, run: PlannedRun, outcome: RunOutcome) -> None:
        assert self.task is not None
        self.completed += 1
        self.progress.update(self.task, completed=self.completed)
        row = outcome.run_row
        if outcome.ok:
            lost = row.get("messages_lost") or 0
            note = f", {lost} lost" if lost else ""
            self.progress.console.print(
                f"[green]ok[/]     {run.run_id}: {row.get('messages_delivered')}/"
                f"{row.get('messages_sent')} delivered{note}"
            )
        else:
            self.progress.console.print(
                f"[red]{row.get('status')}[/] {run.run_id}: {row.get('error')}"
            )

    def experiment_finished(self) -> None:
        self.progress.stop()
