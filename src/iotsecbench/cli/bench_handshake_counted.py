"""``bench handshake --target``: the counted method's call and its tables (``bench.device``;
docs/device-client.md); its settings are the benchmark's (``spec.bench``), validated by
``cli.bench_handshake``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iotsecbench.cli import bench_outputs, handshake_progress, output_console
from iotsecbench.errors import SpecError
from iotsecbench.spec.bench import HandshakeBenchmarkSpec


def _stack(stack: str, profiles: list[Any], target: str) -> tuple[str, str | None]:
    """The device stack: given, or mbedTLS (wolfSSL when a profile is post-quantum: only its
    device build has ML-KEM and ML-DSA), and the note that says which was chosen (printed
    once the benchmark runs: a refusal stays one line)."""
    from iotsecbench.vmcu import target as find_target
    from iotsecbench.vmcu.client import DEVICE_STACKS, require_device

    find_target(target)  # an unknown target: exit 2 first
    if stack in DEVICE_STACKS:
        return stack, None
    if stack != "openssl":
        raise SpecError(f"--target runs the device's client on mbedtls or wolfssl, not {stack}")
    chosen = "wolfssl" if any(p is not None and p.needs_pq_library for p in profiles) else "mbedtls"
    require_device(chosen, profiles)
    return chosen, f"note: --target counts the device client on {chosen} (--stack mbedtls|wolfssl)"


def counted(
    spec: HandshakeBenchmarkSpec, *, json_file: Path | None, out: Path | None, quiet: bool
) -> None:
    """Count every profile of ``spec`` (validated settings with a ``target``) on its virtual
    MCU and print, store and write it."""
    from rich.console import Console

    from iotsecbench.vmcu.client import device_profiles

    target = spec.target
    assert target is not None, "the traced method is cli.bench_handshake's"
    profiles = device_profiles(spec.profiles)
    stack, stack_note = _stack(spec.stack, profiles, target)
    # refused by now what needs no machine; the benchmark's imports are the heavy part
    from iotsecbench.bench.device import run_counted_benchmark
    from iotsecbench.files import write_atomic

    out = bench_outputs(out, json_file, f"handshake-{target}")
    console = Console(stderr=True)

    def note() -> None:
        if stack_note is not None:
            console.print(stack_note, highlight=False, soft_wrap=True)

    with handshake_progress(
        console, quiet=quiet, suffix=f" on {target}", first=note
    ) as on_progress:
        bench = run_counted_benchmark(
            profiles, out / "lab", target_name=target, stack=stack,
            repetitions=spec.repetitions, target_ci=spec.target_ci,
            max_repetitions=spec.max_repetitions, seed=spec.seed, network=spec.network,
            device=spec.device, timeout_s=spec.timeout_s, on_progress=on_progress,
        )  # fmt: skip
    from iotsecbench.bench.device_store import store_counted

    store_counted(bench, out, spec)
    if json_file:
        import json

        write_atomic(json_file, json.dumps(bench.to_dict(), indent=1, default=str))
    output_console().print(summary_table(bench))
    output_console().print(groups_table(bench))
    console.print(f"results: {out / 'results.duckdb'}  (iotsecbench report {out})")


def _count(value: float) -> str:
    """Instructions: millions with two decimals, or whole below a hundred thousand."""
    return f"{value / 1e6:,.2f}M" if abs(value) >= 1e5 else f"{value:,.0f}"


def _interval(statistic: dict[str, Any]) -> str:
    half = (statistic["ci_high"] - statistic["ci_low"]) / 2
    half_text = "0" if half != half or half == 0 else _count(half)  # NaN: one repetition
    return (
        f"{_count(statistic['mean'])} ± {half_text} "
        f"[{_count(statistic['min'])}–{_count(statistic['max'])}]"
    )


def summary_table(bench: Any) -> Any:
    """Per profile: the counts, the device time at the profile's clocks, memory and bytes."""
    from rich.table import Table

    first = next((r for r in bench.results if r.profile is not None), bench.results[0])
    facts = bench.settings["target"]
    table = Table(
        title=f"Handshake counted on {facts['name']} ({facts['device']} instruction set), "
        f"{first.firmware.provenance.split(',')[0]}: instructions, mean ± 95 % CI "
        "[min–max over seeds]; device time = instructions × CPI / clock (counted) "
        "[at the ends of the CPI's 90 % range]",
        title_justify="left",
        header_style="bold",
    )
    for heading in (
        "profile", "n", "negotiated", "network-invariant", "with network wait",
        "device ms [CPI range] (+network)", "heap peak B", "stack B", "flash / RAM B",
        "bytes out/in",
    ):  # fmt: skip
        table.add_column(heading, no_wrap=heading == "profile")
    for result in bench.results:
        summary = result.summary()
        counts = summary["instructions"]
        model = summary["device_model"]["by_clock_and_cores"]
        device = " ".join(
            f"{entry['clock_mhz']:g}MHz {entry['seconds'] * 1e3:,.1f} "
            f"[{entry['cpi_range']['low'] * 1e3:,.1f}–{entry['cpi_range']['high'] * 1e3:,.1f}] "
            f"(+{(entry['with_network_s'] or 0) * 1e3 - entry['seconds'] * 1e3:,.1f})"
            for entry in model.values()
        )
        negotiated = summary["negotiated"]
        memory, firmware, wire = summary["memory"], summary["firmware"], summary["wire"]
        table.add_row(
            result.name,
            str(summary["repetitions"]),
            " ".join(
                str(negotiated[k])
                for k in ("cipher", "group", "signature_algorithm")
                if negotiated[k]
            )
            or "plain MQTT",
            _interval(counts["network_invariant"]),
            _interval(counts["with_network_wait"]),
            device,
            f"{memory['heap_handshake_peak_bytes']:,}",
            f"{memory['stack_high_water_bytes']:,}",
            f"{firmware['flash_bytes']:,} / {firmware['static_ram_bytes']:,}",
            f"{wire['stream_bytes_sent']}/{wire['stream_bytes_received']}",
        )
    return table


def groups_table(bench: Any) -> Any:
    """Mean client instructions per iotst group and profile, and the primitives' share."""
    from rich.table import Table

    table = Table(
        title="Per group (iotst): mean instructions of the device's own work, network wait "
        "apart; in brackets the share inside the wrapped primitives",
        title_justify="left",
        header_style="bold",
    )
    table.add_column("group", no_wrap=True)
    names: list[str] = []
    summaries = [r.summary() for r in bench.results]
    for summary in sorted(summaries, key=lambda s: -len(s["groups"])):  # handshake order first
        names += [n for n in summary["groups"] if n not in names]
    for summary in summaries:
        table.add_column(summary["profile"])
    for name in names:
        cells = []
        for summary in summaries:
            group = summary["groups"].get(name)
            if group is None:
                cells.append("–")
                continue
            client = group["client"]["mean"]
            inside = sum(group["primitives"].values())
            share = f" ({inside / client:.0%})" if client and inside else ""
            cells.append(f"{_count(client)}{share}")
        table.add_row(name, *cells)
    return table
