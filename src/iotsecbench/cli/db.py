"""``iotsecbench db``: check a results database against its run records, or rebuild it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from iotsecbench.errors import DataError

db_app = typer.Typer(
    help="Check or rebuild a results directory's results.duckdb from its per-run records.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

ResultsDir = Annotated[Path, typer.Argument(help="A results directory made by `run` (--out).")]


@db_app.command()
def rebuild(results_dir: ResultsDir) -> None:
    """Set results.duckdb aside (never deleted) and rebuild it from experiment.json and
    runs/*/record.json; says which runs the old database held without a record (they are
    not in the new one, only in the set-aside file). Refused while another process has the
    database open."""
    from iotsecbench.store.rebuild import check as check_store
    from iotsecbench.store.rebuild import rebuild as rebuild_store

    had_database = (results_dir / "results.duckdb").exists()
    dropped: tuple[str, ...] | None = ()
    if had_database:
        try:
            dropped = check_store(results_dir).without_record
        except DataError:
            dropped = None  # damaged: what it held cannot be listed
    restored = rebuild_store(results_dir)
    # Stamps sort in time order, so the last one is the file this rebuild set aside.
    aside = sorted(results_dir.glob("results.duckdb.aside-*"))
    typer.echo(f"rebuilt {results_dir}/results.duckdb: {restored} run(s) restored")
    if dropped:
        shown = ", ".join(dropped[:5]) + (", …" if len(dropped) > 5 else "")
        typer.echo(
            f"dropped {len(dropped)} run(s) the old database held without a record.json "
            f"({shown}): they are only in the set-aside file"
        )
    elif dropped is None:
        typer.echo(
            "the old database could not be read, so the runs it held without a record.json "
            "cannot be listed: any such run is only in the set-aside file"
        )
    if had_database:
        typer.echo(
            f"the previous database is kept as {aside[-1].name} (never deleted: remove it "
            "yourself once the rebuilt one serves)"
        )


@db_app.command()
def check(results_dir: ResultsDir) -> None:
    """Open results.duckdb read-only and compare its runs with runs/*/record.json.

    Exits 0 when they agree, 4 (naming `db rebuild`) when the database is damaged or lacks
    runs its records hold. Changes nothing.
    """
    from iotsecbench.store.rebuild import check as check_store

    found = check_store(results_dir)
    typer.echo(
        f"{results_dir}/results.duckdb: {found.runs_in_database} run(s) in the database, "
        f"{found.records} run record(s)"
    )
    if found.not_in_database:
        raise DataError(
            f"{len(found.not_in_database)} run record(s) missing from or different in the "
            f"database ({', '.join(found.not_in_database[:3])}"
            f"{', …' if len(found.not_in_database) > 3 else ''}); run "
            f"`iotsecbench db rebuild {results_dir}` (or `run --resume`, which restores "
            "completed runs)"
        )
    if found.without_record:
        raise DataError(
            f"{len(found.without_record)} run(s) in the database have no record.json; keep "
            f"the database, a `db rebuild` of {results_dir} would drop them"
        )
    typer.echo("ok: the database and the run records agree")


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
