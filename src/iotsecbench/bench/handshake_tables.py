"""``bench handshake``'s terminal tables: per profile the handshake's wall and CPU time with
their 95 % intervals, what was negotiated and the wire counts; traced, the network-invariant
cost beside the wall time, the tracer's overhead and the modelled device time."""

from __future__ import annotations

import math

from rich.table import Table

from iotsecbench.bench.handshake import ProfileResult


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value / 1e6:.3f}"


def summary_table(results: list[ProfileResult]) -> Table:
    """One row per profile (× placement): the client side of the handshake."""
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
    for result in results:
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
    return table


def _mean_ci_ms(statistic: dict[str, float]) -> str:
    half = statistic["ci_high"] - statistic["mean"]
    return f"{statistic['mean'] * 1e3:.3f} ± {half * 1e3:.3f}"


def trace_table(results: list[ProfileResult]) -> Table:
    """The traced view: network-invariant CPU cost beside the wall time, the tracer's
    overhead, and the modelled device time."""
    table = Table(
        title="Traced handshake (iotst), ms: network-invariant CPU ± 95 % CI vs with network "
        "wait; device time is modelled",
        title_justify="left",
        header_style="bold",
    )
    for heading in (
        "configuration", "n", "network-invariant CPU", "with network wait", "network wait",
        "longest run", "tracer overhead", "dropped (retrans.)",
        "device 80/160/240 MHz (modelled [90 % range])",
    ):  # fmt: skip
        table.add_column(heading, no_wrap=heading == "configuration")
    for result in results:
        summary = result.summary()
        invariant, wall = summary["network_invariant_cpu_s"], summary["with_network_wait_s"]
        model = (summary.get("device_model") or {}).get("by_clock_and_cores", {})
        device = " / ".join(
            f"{model[key]['seconds'] * 1e3:.0f} [{model[key]['model_range']['low'] * 1e3:.0f}–"
            f"{model[key]['model_range']['high'] * 1e3:.0f}]"
            for key in ("80MHz x1", "160MHz x1", "240MHz x1") if key in model
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
