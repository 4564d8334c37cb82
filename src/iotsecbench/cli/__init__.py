"""Command-line interface: one module per subcommand, thin."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

PIPED_WIDTH = 200  # columns for tables written to a file or a pipe


def output_console() -> Console:
    """The console tables are printed on (stdout).

    Piped or redirected, rich assumes 80 columns and squeezes a wide table into columns one
    character wide; a file has no width, so it gets the whole table instead.
    """
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=PIPED_WIDTH)


def words(text: str | None, option: str) -> list[str] | None:
    """A comma-separated option as a list (None when not given); an empty item (``256,,512``)
    is refused, never skipped (exit 2)."""
    from iotsecbench.errors import SpecError

    if text is None:
        return None
    items = [word.strip() for word in text.split(",")]
    if not all(items):
        raise SpecError(f"{option} {text!r}: an empty item; separate values by single commas")
    return items
