"""Command-line interface: one module per subcommand, thin."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def bench_outputs(out: Path | None, json_file: Path | None, name: str) -> Path:
    """A benchmark's new results directory (default ``results/<name>-<UTC time>``), and its
    ``--json`` file, checked before any work (``files.check_output_*``: exit 2 or 3)."""
    import datetime

    from iotsecbench.errors import SpecError
    from iotsecbench.files import check_output_directory, check_output_file

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    out = check_output_directory(out or Path("results") / f"{name}-{stamp}", "--out")
    if (out / "results.duckdb").exists():
        raise SpecError(f"{out} already holds results; use a new --out")
    if json_file is not None:
        check_output_file(json_file, "--json")
    return out


@contextlib.contextmanager
def handshake_progress(
    console: Console, *, quiet: bool, suffix: str = "", first: Callable[[], None] | None = None
) -> Iterator[Callable[[Any, int, int], None]]:
    """A handshake benchmark's progress, one bar per profile (``name`` + ``suffix``): yields the
    benchmark's ``on_progress``; ``first`` runs before the first bar (once everything
    refusable was refused). A profile that negotiated other parameters is exit 2, a failed
    handshake one line and exit 1."""
    import typer
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from iotsecbench.bench.handshake import HandshakeFailed, HandshakeMismatch
    from iotsecbench.errors import SpecError

    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console,
        disable=quiet,
    )  # fmt: skip
    tasks: dict[str, Any] = {}

    def on_progress(result: Any, done: int, planned: int) -> None:
        if not tasks and first is not None:
            first()
        if result.name not in tasks:
            tasks[result.name] = progress.add_task(f"{result.name}{suffix}", total=planned)
        progress.update(tasks[result.name], completed=done, total=planned)

    try:
        with progress:
            yield on_progress
    except HandshakeMismatch as error:
        raise SpecError(f"negotiated parameters differ from the profile: {error}") from None
    except HandshakeFailed as error:
        console.print(f"iotsecbench: error: {error}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
