"""`iotsecbench doctor` (being built)."""

import typer


def register(app: typer.Typer) -> None:
    """Add the subcommand to the app."""
