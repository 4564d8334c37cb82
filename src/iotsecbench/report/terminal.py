"""Terminal rendering of the summary: rich tables grouped by topic, measured vs modelled
stated in every heading."""

from __future__ import annotations

import math

import pandas as pd
from rich.table import Table

from iotsecbench.report.summary import BROKER_KEYS, COLUMNS, FLEET_KEYS, SummaryColumn

GROUPS = (
    (
        "Handshake and latency (measured on this host)",
        (
            "runs",
            "tcp_connect_ms",
            "tls_handshake_ms",
            "mqtt_connect_ms",
            "key_exchange_ms",
            "latency_mean_ms",
            "latency_p50_ms",
            "latency_p95_ms",
            "latency_p99_ms",
        ),
    ),
    (
        "Session set-up on the wire (measured on this host: TLS handshake bytes from TCP_INFO "
        "plus the payload key exchange's messages; ClientHello in MSS-sized segments)",
        (
            "setup_bytes_out",
            "setup_bytes_in",
            "client_hello_segments",
            "first_message_ms",
        ),
    ),
    (
        "Cost per message (measured on this host)",
        (
            "seal_us",
            "open_us",
            "emitter_cpu_us_per_message",
            "receiver_cpu_us_per_message",
            "wire_bytes_per_message",
            "expansion_bytes",
            "peak_rss_mib",
            "achieved_rate_hz",
            "lost",
            "rejected",
        ),
    ),
    (
        "Per payload byte (block-sizes; energy modelled, the rest measured on this host)",
        (
            "throughput_kib_s",
            "cpu_per_byte_emitter_us",
            "energy_per_byte_emitter_uj",
            "energy_per_byte_receiver_uj",
            "echo_rtt_p50_ms",
        ),
    ),
    (
        "The client's stack (measured on this host with each row's stack, for its TLS and "
        "payload scheme: heap through its allocator hooks, footprint = size of its x86-64 "
        "program; docs/native-agents.md)",
        (
            "tls_heap_handshake_kib",
            "tls_heap_steady_kib",
            "flash_kib",
            "static_ram_kib",
        ),
    ),
    (
        "Fleet (measured on this host: the devices on one broker, started at once or ramped; "
        "set-up and latency percentiles across every device; the other tables show device 0; "
        "docs/scale.md)",
        FLEET_KEYS,
    ),
    (
        "Broker (measured on this host: mosquitto's mean CPU and peak memory; docs/scale.md)",
        BROKER_KEYS,
    ),
    (
        "Device energy (modelled; see docs/energy-model.md)",
        ("emitter_current_ma", "receiver_current_ma", "emitter_charge_mah", "receiver_charge_mah"),
    ),
)


def _format(value: object, column: SummaryColumn) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{float(value):,.{column.digits}f}"  # type: ignore[arg-type]


def summary_tables(frame: pd.DataFrame) -> list[Table]:
    by_key = {column.key: column for column in COLUMNS}
    tables = []
    for title, keys in GROUPS:
        present = [key for key in keys if key in frame and frame[key].notna().any()]
        if not present:
            continue  # e.g. no echo and no tcp run: the per-byte group says nothing
        table = Table(title=title, title_justify="left", header_style="bold")
        table.add_column("configuration", no_wrap=True)
        for key in keys:
            column = by_key[key]
            table.add_column(f"{column.title}\n{column.unit}".rstrip(), justify="right")
        for _, row in frame.iterrows():
            table.add_row(
                str(row["configuration"]), *(_format(row.get(key), by_key[key]) for key in keys)
            )
        tables.append(table)
    return tables


def warning_lines(frame: pd.DataFrame) -> list[str]:
    return [
        f"{row['configuration']}: {row['warnings']}"
        for _, row in frame.iterrows()
        if row.get("warnings")
    ]


def finding_lines(document: dict) -> list[str]:
    """The report's findings (``findings.json``) as the lines that end the terminal summary:
    each sentence with its caveat, then the Pareto front and the sample-size notes."""
    lines = []
    for finding in document.get("findings", []):
        kind = finding.get("kind", "")
        caveat = f" [dim]{finding['caveat']}[/]" if finding.get("caveat") else ""
        lines.append(f"[bold]{kind}[/] {finding['sentence']}{caveat}")
    pareto = (document.get("pareto") or {}).get("sentence")
    if pareto:
        lines.append(pareto)
    lines += [f"[yellow]{note}[/]" for note in document.get("notes", [])]
    return lines
