"""The ``iotsecbench`` command: builds the Typer app from one module per subcommand.

Each subcommand module exposes ``register(app)``; the order of ``SUBCOMMANDS`` is the order a
user meets them in a workflow (run → analyze → report → export), as ``--help`` lists them.
"""

from __future__ import annotations

import importlib
import sys

import typer

from iotsecbench.errors import UserError

SUBCOMMANDS = ("run", "analyze", "report", "export", "db", "bench", "schemes", "meter", "doctor")


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="iotsecbench",
        help=(
            "Measure what securing IoT messages costs: plain MQTT vs TLS vs application-layer "
            "encryption on a real mosquitto broker, with dependence-aware statistics."
        ),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    for name in SUBCOMMANDS:
        importlib.import_module(f"iotsecbench.cli.{name}").register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors end in one line and their exit code; bugs keep tracebacks."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if not args:
        args = ["--help"]  # a bare `iotsecbench` is a request for help, not a usage error
    try:
        # Without standalone mode, click returns an Exit's code instead of exiting.
        code = build_app()(args=args, standalone_mode=False)
        if code == 130:  # Typer turns a KeyboardInterrupt into a silent Exit(130)
            print("iotsecbench: interrupted", file=sys.stderr)
        if isinstance(code, int) and code:
            sys.exit(code)
    except UserError as error:
        if debug:
            raise
        print(f"iotsecbench: error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        print("iotsecbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except typer.Abort:
        print("iotsecbench: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as error:
        # Usage errors of the (vendored) click layer: bad option, missing argument, bad type.
        # They carry format_message() and exit_code; anything else is a bug: keep the traceback.
        format_message = getattr(error, "format_message", None)
        if format_message is None or not hasattr(error, "exit_code"):
            raise
        print(f"iotsecbench: error: {format_message()}", file=sys.stderr)
        sys.exit(2)
