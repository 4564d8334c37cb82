"""`iotsecbench analyze`: stability-aware statistics over a results store or CSV files.

Thin: parse options, read frames (``store.read`` or ``store.csv_input``), call
``analysis.pipeline.analyze``, write ``analysis.json`` atomically, print a summary.
``run_analyze`` is the callable tests use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from iotsecbench.analysis.pipeline import AnalysisOptions, AnalysisResult, analyze
from iotsecbench.errors import EnvironmentProblem, SpecError

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


def _properties_for_names(names: list[str]) -> dict[str, dict[str, Any]]:
    """Security properties of configuration names iotsecbench knows (best effort, CSV input)."""
    try:
        from iotsecbench.runner.collect import security_properties
        from iotsecbench.security.configuration import resolve_configuration
    except ImportError:
        return {}
    properties = {}
    for name in names:
        try:
            properties[name] = security_properties(resolve_configuration(name))
        except Exception:  # unknown names simply carry no properties
            continue
    return properties


def write_json_atomically(document: dict[str, Any], path: Path) -> None:
    """Write JSON so that ``path`` is either the old or the complete new document."""
    from iotsecbench.files import write_atomic

    try:
        write_atomic(path, json.dumps(document, indent=1, allow_nan=False) + "\n")
    except OSError as error:
        raise EnvironmentProblem(f"cannot write {path}: {error.strerror or error}") from error


def run_analyze(
    results_dir: Path | None = None,
    csv_path: Path | None = None,
    latency_csv: Path | None = None,
    options: AnalysisOptions | None = None,
    out: Path | None = None,
) -> tuple[AnalysisResult, Path]:
    """Read the inputs, analyse, write ``analysis.json``; returns the result and its path."""
    options = options or AnalysisOptions()
    if (results_dir is None) == (csv_path is None):
        raise SpecError("give either RESULTS_DIR or --csv FILE (exactly one)")
    if latency_csv is not None and csv_path is None:
        raise SpecError("--latency-csv needs --csv")
    if results_dir is not None:
        from iotsecbench.store import read

        results_dir = Path(results_dir)
        if not results_dir.is_dir():
            raise SpecError(f"{results_dir}: not a results directory")
        current = read.current_frame(results_dir)
        latency = read.latency_frame(results_dir)
        properties = read.security_properties(results_dir)
        target = out or results_dir / "analysis.json"
    else:
        from iotsecbench.store.csv_input import read_current_csv, read_latency_csv

        assert csv_path is not None
        current = read_current_csv(csv_path)
        latency = read_latency_csv(latency_csv) if latency_csv is not None else None
        properties = _properties_for_names(sorted(set(current["configuration"])))
        target = out or Path(csv_path).with_name("analysis.json")
    result = analyze(current, latency, properties, options)
    document = result.to_dict()
    document["inputs"] = {
        "results_dir": str(results_dir) if results_dir is not None else None,
        "csv": str(csv_path) if csv_path is not None else None,
        "latency_csv": str(latency_csv) if latency_csv is not None else None,
    }
    write_json_atomically(document, Path(target))
    return result, Path(target)


def print_summary(result: AnalysisResult, path: Path) -> None:
    """Comparisons, hypotheses, Pareto front and warnings as rich tables."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"Differences of means (95 % CI), baseline {result.baseline}")
    for column in ("metric", "device", "a − b", "difference", "CI", "sig.", "d", "method"):
        table.add_column(column)
    for c in result.comparisons:
        method = c.method if c.block_length is None else f"{c.method} b={c.block_length}"
        table.add_row(
            c.metric,
            c.device,
            f"{c.a} − {c.b}",
            f"{c.difference:+.5g}",
            f"[{c.ci_low:+.5g}, {c.ci_high:+.5g}]",
            "yes" if c.significant else "no",
            f"{c.cohens_d:+.2f} {c.effect}",
            method,
        )
    console.print(table)
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
    ) -> None:
        """Dependence-aware statistics: diagnostics, block-bootstrap CIs, Pareto, warnings."""
        if bootstrap not in BOOTSTRAP_CHOICES:
            raise SpecError(f"--bootstrap {bootstrap!r}: use moving, circular or stationary")
        options = AnalysisOptions(
            baseline=baseline,
            bootstrap=bootstrap,
            block_length=parse_block_length(block_length),
            reps=reps,
            seed=seed,
            constraints=tuple(require or ()),
        )
        result, path = run_analyze(results_dir, csv, latency_csv, options, out)
        print_summary(result, path)
