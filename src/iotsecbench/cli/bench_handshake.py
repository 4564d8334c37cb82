"""``iotsecbench bench handshake``: repeated MQTT-over-TLS connections per TLS profile."""

from __future__ import annotations

import datetime
import math
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer

from iotsecbench.cli import output_console
from iotsecbench.errors import SpecError

BENCH_PRESET_KIND = "bench-handshake"


def _percent(text: str) -> float:
    """``1%`` or ``0.01`` → 0.01."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise SpecError(f"--target-ci takes a percentage such as 1% (got {text!r})") from None
    if not 0 < value < 1:
        raise SpecError(f"--target-ci must lie between 0 and 100 % (got {text!r})")
    return value


def handshake_preset(name: str) -> dict[str, Any]:
    """A handshake-benchmark preset from ``spec/presets`` (``kind = "bench-handshake"``)."""
    folder = resources.files("iotsecbench.spec") / "presets"
    known = sorted(
        entry.name.removesuffix(".toml")
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
        and tomllib.loads(entry.read_text()).get("kind") == BENCH_PRESET_KIND
    )
    if name not in known:
        raise SpecError(f"unknown handshake preset {name!r} (known: {', '.join(known)})")
    return tomllib.loads((folder / f"{name}.toml").read_text())


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value / 1e6:.3f}"


def handshake(
    profiles: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated TLS profiles: tls1.2|tls1.3 then /-separated parts in any "
            "order — a suite, a group (x25519, P-256, P-384, ffdhe2048, modp2048), a "
            "certificate (rsa2048, rsa3072, ecdsa-p256, ed25519), chainN, mutual, resume, "
            "seclevelN. E.g. tls1.3/x25519/ecdsa-p256,tls1.2/AES256-GCM-SHA384/rsa2048"
        ),
    ] = None,
    preset: Annotated[
        str | None, typer.Option(help="A handshake preset, e.g. cipher-suites (docs/tls.md).")
    ] = None,
    reps: Annotated[
        int | None, typer.Option("--reps", help="Measured handshakes per profile (default 30).")
    ] = None,
    target_ci: Annotated[
        str | None,
        typer.Option(
            "--target-ci",
            help="Repeat each profile until the 95 % CI half-width of its TLS wall and CPU "
            "time is below this share of the mean, e.g. 1%.",
        ),
    ] = None,
    max_reps: Annotated[
        int, typer.Option("--max-reps", help="Upper bound on repetitions with --target-ci.")
    ] = 1000,
    warmup: Annotated[int, typer.Option(help="Unmeasured connections per profile first.")] = 1,
    seed: Annotated[int, typer.Option(help="Seed of the interleaving order.")] = 1,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write every sample and statistic as JSON.")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Results directory (a results store `iotsecbench report` reads); default "
            "results/handshake-<UTC time>."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Repeated full TLS handshakes (paho-mqtt connect → CONNACK → disconnect) per profile
    against the embedded broker, profiles interleaved: mean, SD, median and 95 % CI of the
    handshake's wall time, CPU time (computing) and waiting, and of the whole connect."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table

    from iotsecbench.bench.handshake import (
        DEFAULT_REPETITIONS,
        HandshakeMismatch,
        resolve_profiles,
        run_handshake_benchmark,
        store_results,
    )
    from iotsecbench.files import write_atomic

    names: list[str] = []
    if preset is not None:
        data = handshake_preset(preset)
        names.extend(data["profiles"])
        if reps is None and target_ci is None:
            reps = int(data.get("repetitions", DEFAULT_REPETITIONS))
    if profiles:
        names.extend(n.strip() for n in profiles.split(",") if n.strip())
    if not names:
        raise SpecError("give --profiles or --preset (e.g. --preset cipher-suites)")
    chosen = resolve_profiles(names)  # every profile checked before any broker starts
    target = _percent(target_ci) if target_ci is not None else None
    if reps is not None and reps < 2:
        raise SpecError("--reps must be at least 2 (a confidence interval needs two values)")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    out = out or Path("results") / f"handshake-{stamp}"
    if (out / "results.duckdb").exists():
        raise SpecError(f"{out} already holds results; use a new --out")
    console = Console(stderr=True)
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console,
        disable=quiet,
    )  # fmt: skip
    tasks: dict[str, Any] = {}

    def on_progress(result: Any, done: int, planned: int) -> None:
        if result.name not in tasks:
            tasks[result.name] = progress.add_task(result.name, total=planned)
        progress.update(tasks[result.name], completed=done, total=planned)

    try:
        with progress:
            bench = run_handshake_benchmark(
                chosen,
                out / "lab",
                repetitions=reps,
                target_ci=target,
                max_repetitions=max_reps,
                warmup=warmup,
                seed=seed,
                on_progress=on_progress,
            )
    except HandshakeMismatch as error:
        raise SpecError(f"negotiated parameters differ from the profile: {error}") from None
    store_results(bench, out)
    if json_file:
        write_atomic(json_file, bench.to_json())

    table = Table(
        title="TLS handshake (client side), ms: mean ± 95 % CI half-width, median",
        title_justify="left",
        header_style="bold",
    )
    for heading in (
        "profile", "n", "negotiated", "TLS wall", "TLS CPU (compute)", "TLS wait",
        "connect→CONNACK", "bytes out/in", "segs out/in", "RTT",
    ):  # fmt: skip
        table.add_column(heading, no_wrap=heading == "profile")
    for result in bench.results:
        summary = result.summary()
        cells = []
        for metric in ("tls_wall_ns", "tls_cpu_ns", "tls_wait_ns", "connect_wall_ns"):
            statistic = result.statistic(metric)
            half = (statistic.ci_high - statistic.ci_low) / 2
            cells.append(f"{_ms(statistic.mean)} ± {_ms(half)} ({_ms(statistic.median)})")
        negotiated = summary["negotiated"]
        wire = summary["median_wire"]
        table.add_row(
            result.name,
            str(len(result.samples)),
            f"{negotiated['cipher']} {negotiated['group'] or 'no group'} "
            f"{negotiated['signature_algorithm'] or ''}".strip(),
            *cells,
            f"{wire.get('tcp_bytes_sent', 0):.0f}/{wire.get('tcp_bytes_received', 0):.0f}",
            f"{wire.get('tcp_segments_out', 0):.0f}/{wire.get('tcp_segments_in', 0):.0f}",
            str(negotiated.get("round_trips")),
        )
    output_console().print(table)
    console.print(f"results: {out / 'results.duckdb'}  (iotsecbench report {out})")


def register(bench_app: typer.Typer) -> None:
    bench_app.command()(handshake)
