"""``iotsecbench bench crypto``: per-scheme seal/open cost, measured eBACS-style."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from iotsecbench.cli import output_console
from iotsecbench.errors import SpecError

# Beyond these a case does not fit in memory (a payload and its sealed copy per batch) or
# takes hours: the bench is for messages, not bulk files.
MAX_SIZE_BYTES = 1 << 26  # 64 MiB
MAX_REPETITIONS = 10_000


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise SpecError(f"--sizes takes whole numbers separated by commas, got {text!r}") from None
    if any(not 0 <= size <= MAX_SIZE_BYTES for size in sizes):
        raise SpecError(f"--sizes {text!r}: each from 0 to {MAX_SIZE_BYTES:,} bytes")
    return sizes


def crypto(
    schemes: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated schemes or ciphers (a cipher alone is measured under psk-, "
            "its cost does not depend on the key establishment). Default: every cipher."
        ),
    ] = None,
    sizes: Annotated[
        str,
        typer.Option(help="Payload sizes in bytes, comma-separated."),
    ] = "16,51,64,242,256,1024,1460,4096,5120,10240,16384",
    repetitions: Annotated[
        int, typer.Option(help="Samples (batches) per case; the median and quartiles use them.")
    ] = 31,
    json_file: Annotated[
        Path | None, typer.Option("--json", help="Write all results as JSON.")
    ] = None,
    csv_file: Annotated[
        Path | None, typer.Option("--csv", help="Write all results as CSV.")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(help="Write a PNG of seal cost per byte vs size (log-log).")
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="Also count each scheme on a virtual microcontroller: rv32imc (the ESP32-C3's "
            "instruction set) or cortex-m4 (the nRF52840's). The cipher is cross-compiled for it "
            "and run under QEMU, which counts instructions exactly; the table gives "
            "instructions per message and per byte, code size and RAM beside the host's "
            "timings (cycles are an estimate, docs/virtual-mcu.md). Needs the cross toolchains "
            "and QEMU (scripts/setup.sh --dev; `iotsecbench doctor` says)."
        ),
    ] = None,
    public_key: Annotated[
        str,
        typer.Option(
            "--public-key",
            help="With --target, also count the handshakes' public-key operations of these "
            "families: x25519, p256 (ECDH and ECDSA), rsa2048, rsa3072, ed25519, mlkem512, "
            "mlkem768, mlkem1024, mldsa44, mldsa65, or all (instructions, stack, heap and "
            "code per operation, from mbedTLS and wolfCrypt built for the target).",
        ),
    ] = "",
    device_library: Annotated[
        bool,
        typer.Option(
            "--device-library",
            help="With --target, count the ciphers on mbedTLS (AES-GCM, -CCM, ChaCha20-Poly1305, "
            "AES-CTR + HMAC, the lightweight ciphers' HMAC) in the device client's build of "
            "mbedTLS 3.6.5 with its device_config.h — the code `run --target` seals with — "
            "instead of the primitives' mbedTLS 2.28.10 (docs/device-client.md: on rv32imc "
            "3.6's AES-GCM costs about 2.4 times 2.28's per byte).",
        ),
    ] = False,
    cpu: Annotated[
        int | None,
        typer.Option(
            help="Pin the measurement to this CPU. On virtual or shared machines the CPUs are "
            "not equally fast at every moment (one vCPU ran 1.8-2x slower than the other for "
            "seconds on the lab VM); pinned, every case runs on the same one. Default: not "
            "pinned. The CPUs used are recorded in the JSON's environment either way."
        ),
    ] = None,
) -> None:
    """Measure every payload scheme's seal and open cost: median and quartiles of ns/message
    and ns/byte, throughput, key-establishment cost, expansion, peak heap, with the harness's
    own per-call cost (the identity scheme) beside every figure and each implementation's
    provenance. Warm-up first, then many timed batches per case (eBACS style). With --target,
    the same schemes counted on a virtual microcontroller as well."""
    from rich.console import Console

    from iotsecbench.bench.crypto import plot_cost_per_byte, run_crypto_benchmark
    from iotsecbench.files import check_output_file, write_atomic

    if not 3 <= repetitions <= MAX_REPETITIONS:
        raise SpecError(
            f"--repetitions {repetitions}: use 3 (quartiles need samples) to {MAX_REPETITIONS:,}"
        )
    payload_sizes = _sizes(sizes)
    for option, path in (("--json", json_file), ("--csv", csv_file), ("--plot", plot)):
        if path is not None:
            check_output_file(path, option)  # before minutes of measuring
    if cpu is not None:
        allowed = sorted(os.sched_getaffinity(0))
        if cpu not in allowed:
            raise SpecError(
                f"--cpu {cpu} is not a CPU this process may use; choose one of "
                f"{', '.join(map(str, allowed))}"
            )
        os.sched_setaffinity(0, {cpu})
    names = [n for n in schemes.split(",") if n.strip()] if schemes else None
    chosen, families, linked = None, [], None
    if target is not None:
        from iotsecbench.vmcu import resolve_families
        from iotsecbench.vmcu import target as find_target

        chosen = find_target(target)
        families = resolve_families(public_key) if public_key else []
    elif public_key:
        raise SpecError("--public-key counts on a virtual microcontroller: give --target too")
    elif device_library:
        raise SpecError("--device-library counts on a virtual microcontroller: give --target too")
    console = Console(stderr=True)
    if device_library and chosen is not None:
        from iotsecbench.vmcu.client import primitives_library

        linked = primitives_library(chosen)  # built now (cached), as a run --target builds it
    with console.status("measuring (warm-up, then timed batches per scheme and size)…") as status:
        bench = run_crypto_benchmark(
            names,
            payload_sizes,
            repetitions=repetitions,
            target=chosen,
            public_key=families,
            on_count=lambda c: status.update(f"counted {_counted(c)} on {c.target}…"),
            linked=linked,
        )
    if json_file:
        write_atomic(json_file, bench.to_json())
    if csv_file:
        write_atomic(csv_file, bench.to_csv())
    if plot:
        plot_cost_per_byte(bench, plot)

    table = _table(
        "Payload schemes: seal / open cost, median (q1–q3); harness = identity scheme",
        ("scheme", "bytes", "seal ns", "seal ns/B", "open ns", "MB/s seal", "harness ns",
         "+B", "heap B", "kx ms", "implementation"),
    )  # fmt: skip
    for r in bench.results:
        provenance = r.provenance
        table.add_row(
            r.scheme,
            str(r.payload_bytes),
            f"{r.seal.median_ns:,.0f} ({r.seal.q1_ns:,.0f}–{r.seal.q3_ns:,.0f})",
            f"{r.seal_ns_per_byte:.2f}",
            f"{r.open.median_ns:,.0f} ({r.open.q1_ns:,.0f}–{r.open.q3_ns:,.0f})",
            f"{r.seal_mb_per_s:,.1f}",
            f"{r.harness_ns:,.0f}",
            str(r.expansion_bytes),
            f"{r.peak_heap_bytes:,}",
            "" if r.key_establishment_ms is None else f"{r.key_establishment_ms:.2f}",
            f"{provenance['library']} ({'native' if provenance['native'] else 'pure Py'})",
        )
    out = output_console()
    out.print(table)
    kx = ", ".join(f"{k} {v.median_ns / 1e6:.2f} ms" for k, v in bench.key_establishment_ns.items())
    if kx:
        out.print(f"key establishment (both sides, in process, median): {kx}")
    if bench.target is not None:
        out.print(_target_table(bench))
        if bench.target_operations:
            out.print(_operations_table(bench))
        facts = bench.target
        out.print(
            f"counted on {facts['name']} ({facts['device']}'s instruction set) under QEMU: "
            f"{facts['counter']}; every sealed message equals the host's bytes. ≈ cycles = "
            f"instructions × CPI {facts['cpi']:g} from the {facts['profile']} profile "
            f"({facts['cpi_basis']}). ≈ ms at its {facts['clock_hz'] / 1e6:g} MHz: a model, never "
            "a measurement on the device."
        )


def _counted(count: Any) -> str:
    return getattr(count, "operation", None) or f"{count.scheme} at {count.payload_bytes} B"


def _operations_table(bench: Any) -> Any:
    """The public-key operations on the target, with the modelled time at the device's clock."""
    facts = bench.target
    table = _table(
        f"Public-key operations on {facts['name']} ({facts['device']}): instructions, median "
        "(range) over the samples",
        ("operation", "instructions", "range", f"≈ ms @ {facts['clock_hz'] / 1e6:g} MHz",
         "stack B", "heap B", "code B", "implementation"),
    )  # fmt: skip
    for op in bench.target_operations:
        table.add_row(
            op.operation,
            f"{op.instructions:,.0f}",
            f"{op.instructions_min:,}–{op.instructions_max:,}",
            f"{op.instructions * facts['cpi'] / facts['clock_hz'] * 1e3:,.1f}",
            f"{op.stack_bytes:,}",
            f"{op.heap_bytes:,}",
            f"{op.code_bytes:,}",
            op.provenance,
        )
    return table


def _table(title: str, headings: tuple[str, ...]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    for heading in headings:
        table.add_column(heading, no_wrap=heading == "scheme", min_width=len(heading))
    return table


def _target_table(bench: Any) -> Any:
    """The virtual-MCU counts, eBACS-style, with the host's seal time of the same case."""
    host = {(r.scheme, r.payload_bytes): r for r in bench.results}
    table = _table(
        f"On {bench.target['name']} ({bench.target['device']}): instructions counted exactly; "
        "RAM = static + stack + heap",
        ("scheme", "bytes", "seal instr", "instr/B", "open instr", "≈ cycles/B", "host ns/B",
         "code B", "RAM B", "stack B", "implementation"),
    )  # fmt: skip
    for c in bench.target_results:
        measured = host.get((c.scheme, c.payload_bytes))
        table.add_row(
            c.scheme,
            str(c.payload_bytes),
            f"{c.seal_instructions:,}",
            f"{c.seal_per_byte:,.1f}",
            f"{c.open_instructions:,}",
            f"{c.seal_per_byte * bench.target['cpi']:,.0f}",
            "" if measured is None else f"{measured.seal_ns_per_byte:.2f}",
            f"{c.code_bytes:,}",
            f"{c.static_ram_bytes + c.stack_bytes + c.heap_bytes:,}",
            f"{c.stack_bytes:,}",
            c.provenance,
        )
    return table


def register(bench_app: typer.Typer) -> None:
    bench_app.command()(crypto)
