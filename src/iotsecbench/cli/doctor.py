"""``iotsecbench doctor``: what this machine can and cannot do, one line each."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from iotsecbench.errors import NoPermissionError, SpecError


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup",
            help="Remove the network namespaces (and the processes inside them) left by runs "
            "whose runner died, e.g. after SIGKILL (needs root); with --out DIR, also stop "
            "the broker, agents and helpers that runner left for DIR.",
        ),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="With --cleanup: a results directory whose dead runner's processes to stop "
            "(found by PID file, command line and start time, never by name).",
        ),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(
            help="Check the workers of a Dask cluster (tcp://HOST:PORT) for `run --executor "
            "dask`: iotsecbench at this version and mosquitto on each.",
        ),
    ] = None,
) -> None:
    """Check mosquitto, OpenSSL, privileges, namespaces, tracing, perf and cgroups.

    Exits 3 when something `run` needs is missing; optional capabilities only warn.
    """
    import dataclasses
    import json

    from iotsecbench.workflows.doctor import all_checks, stop_leftovers_of

    if out is not None and not cleanup:
        raise SpecError("--out is for --cleanup: doctor --cleanup --out DIR")
    if cleanup:
        from iotsecbench.lab.network import cleanup_leftovers, leftover_namespaces

        if out is not None:
            for leftover in stop_leftovers_of(out):
                typer.echo(f"stopped {leftover}")

        if leftover_namespaces() and os.geteuid() != 0:
            raise NoPermissionError("doctor --cleanup: removing network namespaces needs root")
        removed = cleanup_leftovers()
        for name in removed:
            typer.echo(f"removed network namespace {name}")
        typer.echo(f"cleanup: {len(removed)} leftover namespace(s) removed")
        return
    if scheduler is not None:
        _check_scheduler(scheduler)
        return
    checks = all_checks()
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(c) for c in checks], indent=2))
    else:
        for check in checks:
            status = "ok  " if check.ok else ("FAIL" if check.required else "skip")
            tail = "" if check.ok else f" — {check.consequence}"
            typer.echo(f"{status} {check.name}: {check.detail}{tail}")
    if any(c.required and not c.ok for c in checks):
        raise typer.Exit(3)


def _check_scheduler(scheduler: str) -> None:
    """One line per worker; exit 3 when one cannot run iotsecbench's blocks."""
    from iotsecbench.errors import EnvironmentProblem
    from iotsecbench.runner.cluster import check_workers, dask_problem, scheduler_address

    scheduler_address(scheduler)  # a malformed address: exit 2 before anything is tried
    problem = dask_problem()
    if problem is not None:
        raise EnvironmentProblem(problem)
    results = check_workers(scheduler)
    for address, ready, detail in results:
        typer.echo(f"{'ok  ' if ready else 'FAIL'} worker {address}: {detail}")
    if not all(ready for _, ready, _ in results):
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    app.command()(doctor)
