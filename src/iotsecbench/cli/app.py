"""The ``iotsecbench`` command: builds the Typer app from one module per subcommand.

Each subcommand module exposes ``register(app)``; the order of ``SUBCOMMANDS`` is the order a
user meets them in a workflow (run → analyze → report → export), as ``--help`` lists them.
"""

from __future__ import annotations

import copy
import functools
import importlib
import math
import os
import shlex
import signal
import sys
from typing import Any

import typer

from iotsecbench import signals
from iotsecbench.errors import UserError
from iotsecbench.files import storage_problem, without_credentials

SUBCOMMANDS = (
    "run", "analyze", "report", "export", "db", "bench", "predict", "validate", "schemes",
    "meter", "doctor",
)  # fmt: skip


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


# The largest whole number any option may take: the store keeps integers as BIGINT (a seed
# above it once left a database without its experiment); each option has its own, lower
# bound where it is checked (the spec models, AnalysisOptions, the bench settings).
LARGEST_INTEGER = 2**63 - 1


def _checked_convert(convert: Any, value: Any, param: Any, ctx: Any) -> Any:
    """A command-line value, refused in one line (exit 2) before any command sees it when it
    is empty (an empty --out would be the current directory, an empty --stack the default),
    a number that is not finite, or a whole number beyond what the store holds."""
    source = ctx.get_parameter_source(param.name) if ctx is not None and param else None
    given = source is not None and source.name == "COMMANDLINE"
    if given and isinstance(value, str) and not value.strip():
        param.type.fail("empty; give a value or leave the option out", param, ctx)
    converted = convert(value, param, ctx)
    if given and isinstance(converted, float) and not math.isfinite(converted):
        param.type.fail(f"{value!r} is not a finite number", param, ctx)
    if (
        given
        and isinstance(converted, int)
        and not isinstance(converted, bool)
        and abs(converted) > LARGEST_INTEGER
    ):
        param.type.fail(f"{value} is beyond any sensible bound", param, ctx)
    return converted


@functools.cache
def command() -> Any:
    """The click command tree of every subcommand, every value checked (built once per
    process: Typer takes ~0.1 s to read the signatures)."""
    return _check_every_value(typer.main.get_command(build_app()))


def _check_every_value(command: Any) -> Any:
    """Every parameter of every command goes through ``_checked_convert`` (one rule for all
    options, including those added later)."""
    for param in command.params:
        checked = copy.copy(param.type)  # types may be shared between parameters
        checked.convert = functools.partial(_checked_convert, param.type.convert)
        param.type = checked
    for subcommand in getattr(command, "commands", {}).values():
        _check_every_value(subcommand)
    return command


def _interrupt(signum: int, frame: object) -> None:
    signals.note()  # counted first: C code running this handler may swallow what it raises
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    """Entry point: user errors end in one line and their exit code; bugs keep tracebacks."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if not args:
        args = ["--help"]  # a bare `iotsecbench` is a request for help, not a usage error
    # One BLAS thread unless the user chose otherwise (read when numpy loads, later): the
    # statistics' matrices are small (statsmodels' ADF fits ~1,300 OLS models), and OpenBLAS's
    # thread per core spin-waits for cores the lab's own processes hold — 2-3x the CPU of one
    # thread on a busy 2-core machine, for byte-identical results (docs/internals.md § Tests).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # SIGINT and SIGTERM stop every command in every phase (a shell that starts a job in the
    # background leaves SIGINT ignored, which Python then keeps ignoring): each becomes a
    # KeyboardInterrupt, exit 130, and what was written atomically stays.
    previous = {signum: signal.signal(signum, _interrupt) for signum in signals.SIGNALS}
    try:
        _run(args, debug)
    except SystemExit as done:
        if done.code == 130 and argv is None:
            # Interrupted, everything stored and said: leave now. Tearing down pandas,
            # matplotlib, SciPy and DuckDB takes the interpreter a second or more on a busy
            # machine, and a Ctrl-C is promised to stop within one.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(130)
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _run(args: list[str], debug: bool) -> None:
    again = f"run `{without_credentials(shlex.join(['iotsecbench', *args]))}` again to finish"
    try:
        # Without standalone mode, click returns an Exit's code instead of exiting.
        code = command()(args=args, prog_name="iotsecbench", standalone_mode=False)
        if code == 130:  # Typer turns a KeyboardInterrupt into a silent Exit(130)
            print(f"iotsecbench: interrupted; {again}", file=sys.stderr)
        if isinstance(code, int) and code:
            sys.exit(code)
    except UserError as error:
        if debug:
            raise
        print(f"iotsecbench: error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        print(f"iotsecbench: interrupted; {again}", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except Exception as error:
        if debug:
            raise
        # A full disk or a read-only file system wherever it strikes: the environment (3).
        filename = getattr(error, "filename", None)
        problem = storage_problem(error, f"writing {filename}" if filename else "writing")
        if problem is not None:
            print(f"iotsecbench: error: {problem}", file=sys.stderr)
            sys.exit(problem.exit_code)
        # Usage errors of the (vendored) click layer: bad option, missing argument, bad type.
        # They carry format_message() and exit_code; anything else is a bug: keep the traceback.
        format_message = getattr(error, "format_message", None)
        if format_message is None or not hasattr(error, "exit_code"):
            raise
        print(f"iotsecbench: error: {format_message()}", file=sys.stderr)
        sys.exit(2)
