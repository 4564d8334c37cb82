"""``iotsecbench bench``: focused microbenchmarks, one module per benchmark.

Each ``bench_<name>`` module under ``iotsecbench.cli`` exposes ``register(bench_app)``.
"""

from __future__ import annotations

import importlib

import typer

BENCHMARKS = ("crypto", "handshake", "device_costs")


def register(app: typer.Typer) -> None:
    bench_app = typer.Typer(
        help="Focused microbenchmarks: `bench crypto` (payload schemes), "
        "`bench handshake` (TLS handshakes), `bench device-costs` (a device profile's crypto "
        "prices counted on a virtual microcontroller).",
        no_args_is_help=True,
    )
    for name in BENCHMARKS:
        importlib.import_module(f"iotsecbench.cli.bench_{name}").register(bench_app)
    app.add_typer(bench_app, name="bench")
