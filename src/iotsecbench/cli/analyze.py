"""`iotsecbench analyze`: stability-aware statistics over a results store or CSV files.

Thin: parse options, read frames (``store.read`` or ``store.csv_input``), call
``analysis.pipeline.analyze``, write ``analysis.json`` atomically, print a summary.
The work itself is ``workflows.postprocess.run_analyze`` (also used by ``run``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from iotsecbench.cli import output_console
from iotsecbench.errors import SpecError

if TYPE_CHECKING:  # the analysis stack (pandas, scipy, arch) loads when analyze runs
    from iotsecbench.analysis.pipeline import AnalysisResult

BOOTSTRAP_CHOICES = ("moving", "circular", "stationary")


def parse_block_length(text: str) -> int | str:
    """``20`` | ``auto`` | ``kc`` → int or rule name; ``SpecError`` otherwise."""
    value = text.strip().lower()
    if value in ("auto", "kc"):
        return value
    try:
        number = int(value)
    except ValueError:
        raise SpecError(
            f"--block-length {text!r}: use a positive integer (20), 'auto' or 'kc'"
        ) from None
    if number < 1:
        raise SpecError(f"--block-length {text!r}: must be at least 1")
    return number


def print_summary(result: AnalysisResult, path: Path, current: str = "modelled") -> None:
    """Comparisons, hypotheses, Pareto front and warnings as rich tables."""
    from rich.table import Table

    console = output_console()
    table = Table(
        title=f"Differences of means (95 % CI), baseline {result.baseline}; device current "
        f"{current}"
    )
    ranged = any(c.model_range is not None for c in result.comparisons)
    columns = ("metric", "device", "a − b", "difference", "CI", "sig.", "d", "method")
    for column in columns + (("model 90 % (a > b in draws)",) if ranged else ()):
        table.add_column(column)
    for c in result.comparisons:
        method = c.method if c.block_length is None else f"{c.method} b={c.block_length}"
        model = (
            f"[{c.model_range.low:+.5g}, {c.model_range.high:+.5g}] "
            f"{100 * (c.model_share or 0):.0f} %"
            if c.model_range is not None
            else "–"
        )
        table.add_row(
            c.metric,
            c.device,
            f"{c.a} − {c.b}",
            f"{c.difference:+.5g}",
            f"[{c.interval.low:+.5g}, {c.interval.high:+.5g}]",
            "yes" if c.significant else "no",
            f"{c.cohens_d:+.2f} {c.effect}",
            method,
            *((model,) if ranged else ()),
        )
    console.print(table)
    if result.model is not None:
        console.print(
            f"model 90 %: the difference over {result.model.draws} draws of the device "
            f"profile's ranges, every configuration on the same draws ({result.model.method})",
            highlight=False,
        )
    if result.pareto is not None:
        console.print(result.pareto.summary())
    for h in result.hypotheses:
        console.print(h.summary())
    for w in result.warnings:
        subject = "/".join(str(v) for v in w.subject.values())
        console.print(f"[yellow]warning[/yellow] {subject}: {w.summary()}", highlight=False)
    console.print(f"{result.summary()} → {path}")


def register(app: typer.Typer) -> None:
    """Add the ``analyze`` subcommand to the app."""

    @app.command("analyze")
    def analyze_command(
        results_dir: Annotated[
            Path | None,
            typer.Argument(help="Results directory of `iotsecbench run` (analysis.json there)."),
        ] = None,
        csv: Annotated[
            Path | None,
            typer.Option("--csv", help="Current CSV: configuration,device,run,time_s,current_ma."),
        ] = None,
        latency_csv: Annotated[
            Path | None,
            typer.Option("--latency-csv", help="Latency CSV: configuration,run,seq,latency_ms."),
        ] = None,
        baseline: Annotated[
            str | None,
            typer.Option("--baseline", help="Reference configuration (default: plain)."),
        ] = None,
        bootstrap: Annotated[
            str, typer.Option("--bootstrap", help="moving, circular or stationary.")
        ] = "moving",
        block_length: Annotated[
            str, typer.Option("--block-length", help="An integer, auto (Politis–White) or kc.")
        ] = "20",
        reps: Annotated[int, typer.Option("--reps", help="Bootstrap replicates.")] = 2000,
        seed: Annotated[int, typer.Option("--seed", help="Seed of every random draw.")] = 0,
        require: Annotated[
            list[str] | None,
            typer.Option("--require", help="Security property every Pareto candidate needs."),
        ] = None,
        out: Annotated[
            Path | None, typer.Option("--out", help="Where to write analysis.json.")
        ] = None,
        block_on: Annotated[
            str,
            typer.Option(
                "--block-on",
                help="Pair the energy comparisons by block: none (runs independent, default), "
                "repetition (each repetition's runs, its configurations in permuted order) or "
                "worker (the machine that measured them, --executor dask; docs/scale.md).",
            ),
        ] = "none",
        current: Annotated[
            str,
            typer.Option(
                "--current",
                help="Which device current: modelled (energy model, default) or measured (the "
                "power-meter traces attached to runs; writes analysis-measured.json).",
            ),
        ] = "modelled",
        model_draws: Annotated[
            int,
            typer.Option(
                "--model-draws",
                help="Draws of the device profile behind each modelled figure's model range "
                "(the central 90 % of the figure over the profile's stated ranges; seeded by "
                "--seed; docs/energy-model.md).",
            ),
        ] = 1000,
    ) -> None:
        """Dependence-aware statistics: diagnostics, block-bootstrap CIs, Pareto, warnings."""
        if bootstrap not in BOOTSTRAP_CHOICES:
            raise SpecError(f"--bootstrap {bootstrap!r}: use moving, circular or stationary")
        from iotsecbench.analysis.pipeline import AnalysisOptions
        from iotsecbench.store.read import CURRENT_SOURCES
        from iotsecbench.workflows.postprocess import run_analyze

        options = AnalysisOptions(
            baseline=baseline,
            bootstrap=bootstrap,
            block_length=parse_block_length(block_length),
            reps=reps,
            seed=seed,
            constraints=tuple(require or ()),
            block_on=block_on,
            model_draws=model_draws,
        )
        if current not in CURRENT_SOURCES:
            raise SpecError(f"--current {current!r}: use modelled or measured")
        if csv is not None and current != "modelled":
            raise SpecError("--current applies to a results directory, not to --csv")
        result, path = run_analyze(results_dir, csv, latency_csv, options, out, current)
        print_summary(result, path, current if csv is None else "as given in the CSV")
