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


def _post_quantum_stack(stack: str, profiles: list[Any]) -> str:
    """The stack to measure on: openssl-3.5 when a profile needs post-quantum TLS and the
    stack was left at openssl (every profile then runs on it: one library). The client is
    this process, so on openssl-3.5 it re-executes itself with OpenSSL 3.5's libraries."""
    import os
    import ssl
    import sys

    from iotsecbench.errors import EnvironmentProblem
    from iotsecbench.security import pq_openssl
    from iotsecbench.security.tls.stacks import OPENSSL, OPENSSL_PQ

    if stack == OPENSSL and any(profile.needs_pq_library for profile in profiles):
        stack = OPENSSL_PQ
        print(
            f"note: stack {OPENSSL_PQ} for every profile (post-quantum TLS needs OpenSSL 3.5; "
            f"--stack {OPENSSL} with classical profiles measures Debian's 3.0)",
            file=sys.stderr,
        )
    if stack != OPENSSL_PQ or ssl.OPENSSL_VERSION_NUMBER >= 0x30500000:
        return stack
    if os.environ.get("IOTSECBENCH_PQ_REEXEC"):
        raise EnvironmentProblem(
            f"stack {OPENSSL_PQ}: Python's ssl still loads {ssl.OPENSSL_VERSION}"
        )
    environment = pq_openssl.library_environment() | {"IOTSECBENCH_PQ_REEXEC": "1"}
    arguments = [sys.executable, "-m", "iotsecbench", *sys.argv[1:]]
    if "--stack" not in sys.argv:
        arguments += ["--stack", OPENSSL_PQ]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, arguments, environment)
    raise AssertionError("unreachable")


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value / 1e6:.3f}"


def handshake(
    profiles: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated TLS profiles: tls1.2|tls1.3 then /-separated parts in any "
            "order — a suite, a group (x25519, P-256, P-384, ffdhe2048, modp2048, "
            "x25519mlkem768, mlkem768), a certificate (rsa2048, rsa3072, ecdsa-p256, ed25519, "
            "mldsa44, mldsa65), chainN, mutual, resume, "
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
    trace: Annotated[
        bool | None,
        typer.Option(
            "--trace/--no-trace",
            help="Record the scheduler trace of every handshake (root, tracefs) and report "
            "its network-invariant CPU cost by group, the iotst method (docs/iotst.md).",
        ),
    ] = None,
    cores: Annotated[
        str | None,
        typer.Option(help="Comma-separated core counts the client may use, e.g. 1,2."),
    ] = None,
    clock: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated CPU shares emulating slower clocks with a cgroup quota "
            "(root), e.g. 1/3,2/3,1: CPU time stays, wall time scales (docs/iotst.md).",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            help="Device profile whose modelled handshake time is printed beside the "
            "host's (with --trace; default esp32-wroom-32, 'none' for no model)."
        ),
    ] = None,
    network: Annotated[
        str,
        typer.Option(
            help="Network profile between client and broker (loopback, wifi, …; "
            "docs/network.md): shows the traced cost does not depend on it."
        ),
    ] = "loopback",
    stack: Annotated[
        str,
        typer.Option(
            help="The client's TLS stack: openssl (paho on Python's ssl, default), openssl-3.5 "
            "(the same on OpenSSL 3.5.5, chosen when a profile is post-quantum), mbedtls, "
            "wolfssl or wolfssl-5.9 (the native C agent; wolfssl-5.9 has ML-KEM and ML-DSA; "
            "docs/native-agents.md)."
        ),
    ] = "openssl",
    timeout: Annotated[
        float | None,
        typer.Option(
            help="Seconds a handshake, and then the CONNACK, may take (default 10; raise it on "
            "slow links: an ML-DSA chain is ~12 KB, seconds at NB-IoT or LoRa rates). With "
            "--target: seconds a whole emulated connection may take (default 120)."
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="Count every handshake on a virtual microcontroller instead (rv32imc, "
            "cortex-m4): the device's own client, mbedTLS or wolfSSL (--stack) built for it, "
            "against the same broker; instructions per iotst group, with and without the "
            "network wait, stack, heap, flash and RAM (docs/device-client.md)."
        ),
    ] = None,
    keep_retransmissions: Annotated[
        bool,
        typer.Option(help="Keep traced repetitions with TCP retransmissions (default: drop)."),
    ] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Repeated full TLS handshakes (paho-mqtt connect → CONNACK → disconnect) per profile
    against the embedded broker, profiles interleaved: mean, SD, median and 95 % CI of the
    handshake's wall time, CPU time (computing) and waiting, and of the whole connect. With
    --trace, also each handshake's scheduler trace: on-CPU time per group (TCP connect,
    ClientHello, certificate chain, …) without the time spent waiting for the network."""
    if target is not None:  # the counted method: its own module (the options it ignores named)
        from iotsecbench.cli.bench_handshake_counted import counted

        given = {"--trace": trace, "--cores": cores, "--clock": clock,
                 "--keep-retransmissions": keep_retransmissions}  # fmt: skip
        counted(
            [n.strip() for n in (profiles or "").split(",") if n.strip()],
            preset=handshake_preset(preset) if preset is not None else None, target=target,
            stack=stack, reps=reps, target_ci=target_ci, max_reps=max_reps, seed=seed,
            json_file=json_file, out=out, network=network, device=device, timeout=timeout,
            quiet=quiet, refused=[option for option, value in given.items() if value],
            percent=_percent,
        )  # fmt: skip
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table

    from iotsecbench.bench.handshake import (
        DEFAULT_REPETITIONS,
        HandshakeFailed,
        HandshakeMismatch,
        TraceSettings,
        resolve_profiles,
        run_handshake_benchmark,
    )
    from iotsecbench.bench.handshake_store import store_results
    from iotsecbench.files import write_atomic

    timeout = 10.0 if timeout is None else timeout
    names: list[str] = []
    if preset is not None:
        data = handshake_preset(preset)
        names.extend(data["profiles"])
        if reps is None and target_ci is None:
            target_ci = data.get("target_ci")
            if target_ci is None:
                reps = int(data.get("repetitions", DEFAULT_REPETITIONS))
            else:
                max_reps = int(data.get("max_repetitions", max_reps))
        trace = data.get("trace", False) if trace is None else trace
        cores = cores or ",".join(str(c) for c in data.get("cores", []))
        clock = clock or ",".join(data.get("clock", []))
        device = device or data.get("device")
    placements = _placements(cores, clock)
    settings = None
    if trace:
        from iotsecbench.errors import EnvironmentProblem
        from iotsecbench.measure.tracefs import tracing_problem

        problem = tracing_problem()
        if problem is not None:
            raise EnvironmentProblem(f"--trace: {problem}")
        settings = TraceSettings(
            device=None if device == "none" else device or "esp32-wroom-32",
            keep_retransmissions=keep_retransmissions,
        )
    elif device is not None or keep_retransmissions:
        raise SpecError("--device and --keep-retransmissions belong to --trace")
    if profiles:
        names.extend(n.strip() for n in profiles.split(",") if n.strip())
    if not names:
        raise SpecError("give --profiles or --preset (e.g. --preset cipher-suites)")
    chosen = resolve_profiles(names)  # every profile checked before any broker starts
    stack = _post_quantum_stack(stack, chosen)
    target = _percent(target_ci) if target_ci is not None else None
    if not 0 < timeout <= 3600:
        raise SpecError(f"--timeout takes seconds between 0 and 3600 (got {timeout:g})")
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
                placements=placements,
                trace=settings,
                network=network,
                stack=stack,
                on_progress=on_progress,
                timeout_s=timeout,
            )
    except HandshakeMismatch as error:
        raise SpecError(f"negotiated parameters differ from the profile: {error}") from None
    except HandshakeFailed as error:
        console.print(f"iotsecbench: error: {error}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
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
        "connect→CONNACK", "bytes out/in", "segs out/in", "ClientHello B (MSS)", "RTT",
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
            f"{wire.get('client_hello_bytes')} ({wire.get('client_hello_segments')} × "
            f"{wire.get('tcp_mss')})",
            str(negotiated.get("round_trips")),
        )
    output_console().print(table)
    if settings is not None:
        output_console().print(_trace_table(bench.results))
    console.print(f"results: {out / 'results.duckdb'}  (iotsecbench report {out})")


def _placements(cores: str | None, clock: str | None) -> list[Any]:
    """Every ``--cores`` × ``--clock`` combination, each checked before anything starts."""
    from fractions import Fraction

    from iotsecbench.errors import EnvironmentProblem
    from iotsecbench.lab.cpu import CpuPlacement, cores_problem, parse_share, quota_problem

    core_counts: list[int | None] = [None]
    if cores:
        try:
            core_counts = [int(c) for c in cores.split(",") if c.strip()]
        except ValueError:
            raise SpecError(f"--cores takes core counts such as 1,2 (got {cores!r})") from None
        for count in core_counts:
            problem = cores_problem(count)  # type: ignore[arg-type]
            if problem is not None:
                raise SpecError(problem)
    shares = [Fraction(1)]
    if clock:
        try:
            shares = [parse_share(c) for c in clock.split(",") if c.strip()]
        except ValueError as error:
            raise SpecError(f"--clock: {error}") from None
        if any(share != 1 for share in shares) and (problem := quota_problem()) is not None:
            raise EnvironmentProblem(f"--clock: {problem}")
    return [CpuPlacement(count, share) for count in core_counts for share in shares]


def _mean_ci_ms(statistic: dict[str, float]) -> str:
    half = statistic["ci_high"] - statistic["mean"]
    return f"{statistic['mean'] * 1e3:.3f} ± {half * 1e3:.3f}"


def _trace_table(results: list[Any]) -> Any:
    """The traced view: network-invariant CPU cost beside the wall time, the tracer's
    overhead, and the modelled device time."""
    from rich.table import Table

    table = Table(
        title="Traced handshake (iotst), ms: network-invariant CPU ± 95 % CI vs with network "
        "wait; device time is modelled",
        title_justify="left",
        header_style="bold",
    )
    for heading in (
        "configuration", "n", "network-invariant CPU", "with network wait", "network wait",
        "longest run", "tracer overhead", "dropped (retrans.)", "device 80/160/240 MHz (modelled)",
    ):  # fmt: skip
        table.add_column(heading, no_wrap=heading == "configuration")
    for result in results:
        summary = result.summary()
        invariant, wall = summary["network_invariant_cpu_s"], summary["with_network_wait_s"]
        model = (summary.get("device_model") or {}).get("by_clock_and_cores", {})
        device = "/".join(
            f"{model[key]['seconds'] * 1e3:.0f}" for key in ("80MHz x1", "160MHz x1", "240MHz x1")
            if key in model
        )  # fmt: skip
        table.add_row(
            result.name,
            str(invariant["n"]),
            _mean_ci_ms(invariant),
            _mean_ci_ms(wall),
            f"{summary['off_cpu_s']['network_wait']['mean'] * 1e3:.3f}",
            f"{summary['quantum_max_s'] * 1e3:.3f}",
            f"{summary['tracing_overhead_share'] * 100:+.1f} %",
            str(summary["retransmission_runs_discarded"]),
            device or "–",
        )
    return table


def register(bench_app: typer.Typer) -> None:
    bench_app.command()(handshake)
