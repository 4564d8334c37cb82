"""``iotsecbench export``: the results tables as Parquet files for other tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def export(
    results_dir: Annotated[Path, typer.Argument(help="A results directory made by `run`.")],
    out: Annotated[
        Path | None,
        typer.Option(help="Where to write the Parquet files (default RESULTS_DIR/parquet)."),
    ] = None,
) -> None:
    """Write every results table to Parquet (schema version in the file metadata)."""
    from iotsecbench.errors import SpecError
    from iotsecbench.store.export import export_parquet

    if not (results_dir / "results.duckdb").exists():
        raise SpecError(f"{results_dir} holds no results.duckdb (is it a results directory?)")
    for path in export_parquet(results_dir, out or results_dir / "parquet"):
        typer.echo(str(path))


def register(app: typer.Typer) -> None:
    app.command()(export)
