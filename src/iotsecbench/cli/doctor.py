"""``iotsecbench doctor``: what this machine can and cannot do, one line each."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from iotsecbench.errors import NoPermissionError


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    cleanup: Annotated[
        bool,
        typer.Option(
            "--cleanup",
            help="Remove the network namespaces (and the processes inside them) left by runs "
            "whose runner died, e.g. after SIGKILL. Needs root.",
        ),
    ] = False,
) -> None:
    """Check mosquitto, OpenSSL, privileges, namespaces, tracing, perf and cgroups.

    Exits 3 when something `run` needs is missing; optional capabilities only warn.
    """
    import dataclasses
    import json

    from iotsecbench.lab.capabilities import all_checks

    if cleanup:
        from iotsecbench.lab.network import cleanup_leftovers, leftover_namespaces

        if leftover_namespaces() and os.geteuid() != 0:
            raise NoPermissionError("doctor --cleanup: removing network namespaces needs root")
        removed = cleanup_leftovers()
        for name in removed:
            typer.echo(f"removed network namespace {name}")
        typer.echo(f"cleanup: {len(removed)} leftover namespace(s) removed")
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


def register(app: typer.Typer) -> None:
    app.command()(doctor)
