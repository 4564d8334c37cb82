"""``iotsecbench bench handshake``: repeated MQTT-over-TLS connections per TLS profile."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from iotsecbench.cli import bench_outputs, handshake_progress, output_console, words
from iotsecbench.errors import SpecError

# The settings' fields (spec.bench.HandshakeBenchmarkSpec) as the options that set them.
OPTION_NAMES = {
    "profiles": "--profiles",
    "repetitions": "--reps",
    "target_ci": "--target-ci",
    "max_repetitions": "--max-reps",
    "warmup": "--warmup",
    "seed": "--seed",
    "trace": "--trace",
    "cores": "--cores",
    "clock": "--clock",
    "device": "--device",
    "keep_retransmissions": "--keep-retransmissions",
    "network": "--network",
    "stack": "--stack",
    "timeout_s": "--timeout",
    "target": "--target",
}


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
        int | None,
        typer.Option("--max-reps", help="Upper bound on repetitions with --target-ci (1000)."),
    ] = None,
    warmup: Annotated[
        int | None, typer.Option(help="Unmeasured connections per profile first (1).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Seed of the interleaving order (1).")] = None,
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
        str | None,
        typer.Option(
            help="Network profile between client and broker (loopback, wifi, …; "
            "docs/network.md): shows the traced cost does not depend on it."
        ),
    ] = None,
    stack: Annotated[
        str | None,
        typer.Option(
            help="The client's TLS stack: openssl (paho on Python's ssl, default), openssl-3.5 "
            "(the same on OpenSSL 3.5.5, chosen when a profile is post-quantum), mbedtls, "
            "wolfssl or wolfssl-5.9 (the native C agent; wolfssl-5.9 has ML-KEM and ML-DSA; "
            "docs/native-agents.md)."
        ),
    ] = None,
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
        bool | None,
        typer.Option(
            "--keep-retransmissions",
            help="Keep traced repetitions with TCP retransmissions (default: drop).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Repeated full TLS handshakes (paho-mqtt connect → CONNACK → disconnect) per profile
    against the embedded broker, profiles interleaved: mean, SD, median and 95 % CI of the
    handshake's wall time, CPU time (computing) and waiting, and of the whole connect. With
    --trace, also each handshake's scheduler trace: on-CPU time per group (TCP connect,
    ClientHello, certificate chain, …) without the time spent waiting for the network."""
    from iotsecbench.spec.load import load_handshake_spec

    options = {
        "profiles": words(profiles, "--profiles"),
        "repetitions": reps,
        "target_ci": target_ci,
        "max_repetitions": max_reps,
        "warmup": warmup,
        "seed": seed,
        "trace": trace,
        "cores": _core_counts(cores),
        "clock": words(clock, "--clock"),
        "device": device,
        "keep_retransmissions": keep_retransmissions,
        "network": network,
        "stack": stack,
        "timeout_s": timeout,
        "target": target,
    }
    spec = load_handshake_spec(preset, options, OPTION_NAMES)
    if spec.target is not None:  # the counted method: its own module
        from iotsecbench.cli.bench_handshake_counted import counted

        counted(spec, json_file=json_file, out=out, quiet=quiet)
        return
    from rich.console import Console

    from iotsecbench.bench.handshake_plan import plan, run_and_store
    from iotsecbench.bench.handshake_tables import summary_table, trace_table
    from iotsecbench.files import write_atomic

    chosen = plan(spec)
    out = bench_outputs(out, json_file, "handshake")
    # said, and the interpreter re-executed for OpenSSL 3.5, once nothing is left to refuse
    console = Console(stderr=True)
    if chosen.stack_note is not None:
        console.print(f"note: {chosen.stack_note}", highlight=False)
    _reexec_on_openssl_pq(chosen.stack)
    with handshake_progress(console, quiet=quiet) as on_progress:
        bench = run_and_store(chosen, out, on_progress)
    if json_file:
        write_atomic(json_file, bench.to_json())
    output_console().print(summary_table(bench.results))
    if chosen.trace is not None:
        output_console().print(trace_table(bench.results))
    console.print(f"results: {out / 'results.duckdb'}  (iotsecbench report {out})")


def _core_counts(text: str | None) -> list[int] | None:
    try:
        return None if text is None else [int(count) for count in words(text, "--cores") or []]
    except ValueError:
        raise SpecError(f"--cores takes core counts such as 1,2 (got {text!r})") from None


def _reexec_on_openssl_pq(stack: str) -> None:
    """The client is this process: on openssl-3.5 it runs again with OpenSSL 3.5's libraries
    (Python's ssl loads Debian's 3.0 otherwise)."""
    import os
    import ssl
    import sys

    from iotsecbench.errors import EnvironmentProblem
    from iotsecbench.security import pq_openssl
    from iotsecbench.security.tls.stacks import OPENSSL_PQ

    if stack != OPENSSL_PQ or ssl.OPENSSL_VERSION_NUMBER >= 0x30500000:
        return
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


def register(bench_app: typer.Typer) -> None:
    bench_app.command()(handshake)
