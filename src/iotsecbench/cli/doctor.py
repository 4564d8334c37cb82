"""``iotsecbench doctor``: what this machine can and cannot do, one line each."""

from __future__ import annotations

from typing import Annotated

import typer


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check mosquitto, OpenSSL, privileges, namespaces, tracing, perf and cgroups.

    Exits 3 when something `run` needs is missing; optional capabilities only warn.
    """
    import dataclasses
    import json

    from iotsecbench.lab.capabilities import all_checks

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
