"""The per-configuration summary table printed at the end of ``run`` (and used by reports).

Every figure is computed from the stored raw tables; which ones are *measured* on this host
and which are *modelled* for the device is part of each column's definition in ``COLUMNS``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from iotsecbench.analysis.describe import cumulative_mah
from iotsecbench.store import read

PHASES = ("tcp_connect", "tls_handshake", "mqtt_connect", "key_exchange")
# Summary columns over every message of a configuration, not means of per-run values.
POOLED = ("runs", "latency_mean_ms", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms")
# Summary values the runner stored per run in `runs` (runner.collect), averaged over runs:
# summary key -> (the column(s) summed, scale). The block-sizes study's per-byte figures,
# the achieved rate, the native agent's heap and footprint.
RUN_COLUMNS: dict[str, tuple[tuple[str, ...], float]] = {
    **{
        key: ((key,), 1.0)
        for key in (
            "throughput_kib_s",
            "cpu_per_byte_emitter_us",
            "energy_per_byte_emitter_uj",
            "energy_per_byte_receiver_uj",
            "echo_rtt_p50_ms",
            "achieved_rate_hz",
        )
    },
    # A fleet's figures (runner.collect.collect_fleet) and the embedded broker's, sampled in
    # every run (runner.broker_watch).
    "fleet_size": (("fleet_size",), 1.0),
    "connect_rate_hz": (("connect_rate_hz",), 1.0),
    "setup_p99_ms": (("setup_p99_ms",), 1.0),
    "fleet_latency_p99_ms": (("latency_p99_ms",), 1.0),
    "broker_cpu_percent": (("broker_cpu_mean_percent",), 1.0),
    "broker_rss_mib": (("broker_rss_peak_bytes",), 1 / 2**20),
    "fleet_lost": (("messages_lost",), 1.0),
    "tls_heap_handshake_kib": (("tls_heap_handshake_peak_bytes",), 1 / 1024),
    "tls_heap_steady_kib": (("tls_heap_steady_bytes",), 1 / 1024),
    "flash_kib": (("footprint_text_bytes", "footprint_data_bytes"), 1 / 1024),
    "static_ram_kib": (("footprint_data_bytes", "footprint_bss_bytes"), 1 / 1024),
}


# A fleet's own figures: of one device they repeat the other columns, so they stay empty.
FLEET_KEYS = (
    "fleet_size",
    "connect_rate_hz",
    "setup_p99_ms",
    "fleet_latency_p99_ms",
    "fleet_lost",
)
# What the run cost the embedded broker: one device or many (empty with an external broker).
BROKER_KEYS = ("broker_cpu_percent", "broker_rss_mib")


@dataclass(frozen=True)
class SummaryColumn:
    key: str
    title: str  # short heading for the terminal
    unit: str
    kind: str  # "measured" (on this host) or "modelled" (device energy model)
    digits: int


COLUMNS = (
    SummaryColumn("runs", "runs", "", "measured", 0),
    *(SummaryColumn(f"{p}_ms", p.replace("_", " "), "ms", "measured", 2) for p in PHASES),
    SummaryColumn("latency_mean_ms", "latency mean", "ms", "measured", 2),
    SummaryColumn("latency_p50_ms", "p50", "ms", "measured", 2),
    SummaryColumn("latency_p95_ms", "p95", "ms", "measured", 2),
    SummaryColumn("latency_p99_ms", "p99", "ms", "measured", 2),
    SummaryColumn("setup_bytes_out", "set-up out", "B", "measured", 0),
    SummaryColumn("setup_bytes_in", "set-up in", "B", "measured", 0),
    SummaryColumn("client_hello_segments", "ClientHello", "MSS", "measured", 0),
    SummaryColumn("first_message_ms", "to 1st message", "ms", "measured", 2),
    SummaryColumn("seal_us", "seal", "µs", "measured", 1),
    SummaryColumn("open_us", "open", "µs", "measured", 1),
    SummaryColumn("emitter_cpu_us_per_message", "CPU/msg emitter", "µs", "measured", 0),
    SummaryColumn("receiver_cpu_us_per_message", "CPU/msg receiver", "µs", "measured", 0),
    SummaryColumn("wire_bytes_per_message", "wire/msg", "B", "measured", 1),
    SummaryColumn("expansion_bytes", "expansion", "B", "measured", 1),
    SummaryColumn("emitter_current_ma", "current emitter", "mA", "modelled", 2),
    SummaryColumn("receiver_current_ma", "current receiver", "mA", "modelled", 2),
    SummaryColumn("emitter_charge_mah", "charge emitter", "mAh", "modelled", 4),
    SummaryColumn("receiver_charge_mah", "charge receiver", "mAh", "modelled", 4),
    SummaryColumn("throughput_kib_s", "throughput", "KiB/s", "measured", 1),
    SummaryColumn("cpu_per_byte_emitter_us", "CPU/byte emitter", "µs/B", "measured", 3),
    SummaryColumn("energy_per_byte_emitter_uj", "energy/byte emitter", "µJ/B", "modelled", 3),
    SummaryColumn("energy_per_byte_receiver_uj", "energy/byte receiver", "µJ/B", "modelled", 3),
    SummaryColumn("echo_rtt_p50_ms", "echo RTT p50", "ms", "measured", 3),
    SummaryColumn("peak_rss_mib", "peak RSS", "MiB", "measured", 1),
    SummaryColumn("achieved_rate_hz", "rate achieved", "Hz", "measured", 1),
    SummaryColumn("tls_heap_handshake_kib", "heap TLS handshake", "KiB", "measured", 1),
    SummaryColumn("tls_heap_steady_kib", "heap steady", "KiB", "measured", 1),
    SummaryColumn("flash_kib", "flash text+data", "KiB", "measured", 1),
    SummaryColumn("static_ram_kib", "static RAM data+bss", "KiB", "measured", 1),
    SummaryColumn("fleet_size", "devices", "", "measured", 0),
    SummaryColumn("connect_rate_hz", "connects", "/s", "measured", 1),
    SummaryColumn("setup_p99_ms", "set-up p99", "ms", "measured", 1),
    SummaryColumn("fleet_latency_p99_ms", "latency p99", "ms", "measured", 2),
    SummaryColumn("fleet_lost", "lost per run", "", "measured", 1),
    SummaryColumn("broker_cpu_percent", "broker CPU", "%", "measured", 2),
    SummaryColumn("broker_rss_mib", "broker RSS", "MiB", "measured", 1),
    SummaryColumn("lost", "lost", "", "measured", 0),
    SummaryColumn("rejected", "rejected", "", "measured", 0),
)


def _window_delta(samples: pd.DataFrame, column: str, start_ns: float, end_ns: float) -> float:
    """Growth of a cumulative counter between two instants (linear between 10 Hz samples)."""
    if samples.empty:
        return float("nan")
    times = samples["t_ns"].to_numpy(dtype=float)
    values = samples[column].to_numpy(dtype=float)
    return float(np.interp(end_ns, times, values) - np.interp(start_ns, times, values))


def _charge_mah(samples: pd.DataFrame) -> float:
    if len(samples) < 2:
        return float("nan")
    dt_s = np.diff(samples["t_ns"].to_numpy(dtype=float)) / 1e9
    return float(cumulative_mah(samples["current_ma"].to_numpy(dtype=float)[1:], dt_s)[-1])


def _per_run(run: pd.Series, tables: dict[str, pd.DataFrame]) -> dict[str, float]:
    run_id = run["run_id"]
    samples = tables["samples"][tables["samples"]["run_id"] == run_id]
    events = tables["events"][tables["events"]["run_id"] == run_id]
    messages = tables["messages"][tables["messages"]["run_id"] == run_id]
    handshakes = tables["handshakes"][tables["handshakes"]["run_id"] == run_id]
    values: dict[str, float] = {}
    emitter_handshakes = handshakes[handshakes["agent"] == "emitter"]
    for key, (columns, scale) in RUN_COLUMNS.items():
        parts = [run.get(column) for column in columns]
        present = all(part is not None and pd.notna(part) for part in parts)
        values[key] = float(sum(parts)) * scale if present else np.nan
    if not values["fleet_size"] > 1:  # one device: its figures are the other columns'
        values.update(dict.fromkeys(FLEET_KEYS, np.nan))
    for phase in PHASES:
        wall = emitter_handshakes.loc[emitter_handshakes["phase"] == phase, "wall_ns"]
        values[f"{phase}_ms"] = float(wall.iloc[0]) / 1e6 if len(wall) else float("nan")
    values.update(_setup_wire(emitter_handshakes, events[events["agent"] == "emitter"], messages))
    start = events.loc[(events["agent"] == "emitter") & (events["kind"] == "publish_start"), "t_ns"]
    end = events.loc[(events["agent"] == "emitter") & (events["kind"] == "publish_end"), "t_ns"]
    sent = len(messages)
    for agent in ("emitter", "receiver"):
        own = samples[samples["agent"] == agent].sort_values("t_ns")
        if len(start) and len(end) and sent:
            cpu = _window_delta(own, "cpu_ns", start.iloc[0], end.iloc[0])
            values[f"{agent}_cpu_us_per_message"] = cpu / 1e3 / sent
        values[f"{agent}_current_ma"] = float(own["current_ma"].mean()) if len(own) else np.nan
        values[f"{agent}_charge_mah"] = _charge_mah(own)
    if len(start) and len(end) and sent:
        emitter = samples[samples["agent"] == "emitter"].sort_values("t_ns")
        # Messages published inside the window, so the byte count and the divisor agree.
        inside = messages[
            (messages["t_published_ns"] >= start.iloc[0])
            & (messages["t_published_ns"] <= end.iloc[0])
        ]
        sent_bytes = _window_delta(emitter, "tcp_bytes_sent", start.iloc[0], end.iloc[0])
        if len(inside):
            values["wire_bytes_per_message"] = sent_bytes / len(inside)
            values["expansion_bytes"] = values["wire_bytes_per_message"] - run["payload_bytes"]
    return values


def _setup_wire(
    handshakes: pd.DataFrame, events: pd.DataFrame, messages: pd.DataFrame
) -> dict[str, float]:
    """What setting up the emitter's session put on the wire: TLS handshake bytes (TCP_INFO)
    plus the payload key exchange's messages, each way; how many MSS-sized segments its
    ClientHello needed; and the time from the first connection phase to the first message
    published (the session's first application message)."""
    values = dict.fromkeys(("setup_bytes_out", "setup_bytes_in", "client_hello_segments"), np.nan)
    first_phase = handshakes.groupby("phase")["t_start_ns"].min()
    details = {
        phase: json.loads(text or "{}")
        for phase, text in handshakes.groupby("phase")["detail_json"].first().items()
    }
    tls, exchange = details.get("tls_handshake", {}), details.get("key_exchange", {})
    outgoing = [tls.get("tcp_bytes_sent"), exchange.get("bytes_out")]
    incoming = [tls.get("tcp_bytes_received"), exchange.get("bytes_in")]
    if any(v is not None for v in outgoing):
        values["setup_bytes_out"] = float(sum(v for v in outgoing if v is not None))
        values["setup_bytes_in"] = float(sum(v for v in incoming if v is not None))
    wire = events.loc[events["kind"] == "tls_wire", "detail_json"]
    segments = json.loads(wire.iloc[0] or "{}").get("client_hello_segments") if len(wire) else None
    if segments is not None:
        values["client_hello_segments"] = float(segments)
    published = messages["t_published_ns"].dropna() if "t_published_ns" in messages else []
    values["first_message_ms"] = (
        (float(published.min()) - float(first_phase.min())) / 1e6
        if len(published) and len(first_phase)
        else np.nan
    )
    return values


def _spec_order(results_dir: Path) -> list[str]:
    """Configurations in the order the spec lists them (runs themselves are shuffled)."""
    spec_file = results_dir / "spec.json"
    return json.loads(spec_file.read_text()).get("configurations", []) if spec_file.exists() else []


def _spec_position(order: list[str], group: pd.DataFrame) -> tuple[int, int, float, int]:
    first = group.iloc[0]
    position = (
        order.index(first["configuration"]) if first["configuration"] in order else len(order)
    )
    return position, int(first["payload_bytes"]), float(first["rate_hz"]), int(first["qos"])


def summary_frames(results_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The stored tables read once, for both frames the report uses: one row per ok run
    (``per_run``) and one per configuration (the summary, see ``summarise``)."""
    runs = read.runs_frame(results_dir)
    runs = runs[runs["status"] == "ok"]
    if runs.empty:
        return (
            pd.DataFrame(columns=["run_id", "configuration"]),
            pd.DataFrame(columns=["configuration", *(c.key for c in COLUMNS), "warnings"]),
        )
    # A fleet's per-device figures are its device 0's (its fleet figures are in `runs`).
    tables = {
        name: read.table(results_dir, name, first_device=True)
        for name in ("samples", "events", "messages", "handshakes")
    }
    latency = read.latency_frame(results_dir)
    per_run = _per_run_frame(runs, tables, latency)
    return per_run, _summary(results_dir, runs, tables["messages"], latency, per_run)


def summarise(results_dir: Path) -> pd.DataFrame:
    """One row per cell label (ok runs only), columns as in ``COLUMNS`` plus warnings."""
    return summary_frames(results_dir)[1]


def _per_run_frame(
    runs: pd.DataFrame, tables: dict[str, pd.DataFrame], latency: pd.DataFrame
) -> pd.DataFrame:
    """One row per ok run: ``run_id``, ``configuration`` (cell label) and the per-run values
    the summary averages, plus the run's own latency percentiles and connection set-up time
    (what run-level intervals in the findings resample)."""
    rows = []
    for _, run in runs.iterrows():
        values: dict[str, Any] = {"run_id": run["run_id"], "configuration": run["cell_label"]}
        values.update(_per_run(run, tables))
        phases = [values[f"{p}_ms"] for p in PHASES if np.isfinite(values[f"{p}_ms"])]
        values["setup_ms"] = float(sum(phases)) if phases else np.nan
        mine = (latency["configuration"] == run["cell_label"]) & (
            latency["run"] == run["repetition"]
        )
        own = latency.loc[mine, "latency_ms"].to_numpy(dtype=float)
        for name, q in (("latency_p50_ms", 50), ("latency_p99_ms", 99)):
            values[name] = float(np.percentile(own, q)) if len(own) else np.nan
        rows.append(values)
    return pd.DataFrame(rows)


def _summary(
    results_dir: Path,
    runs: pd.DataFrame,
    messages_table: pd.DataFrame,
    latency: pd.DataFrame,
    per_run: pd.DataFrame,
) -> pd.DataFrame:
    """Per configuration: means of the per-run values; latency percentiles pool every
    message of the configuration's runs."""
    averaged = [c.key for c in COLUMNS if c.key in per_run and c.key not in POOLED]
    rows = []
    order = _spec_order(results_dir)  # read once, not per configuration
    for label, group in sorted(
        runs.groupby("cell_label", sort=False),
        key=lambda item: _spec_position(order, item[1]),
    ):
        own_runs = per_run[per_run["configuration"] == label]
        row: dict[str, Any] = {"configuration": label, "runs": len(group)}
        row.update(own_runs[averaged].astype(float).mean().to_dict())
        lat = latency.loc[latency["configuration"] == label, "latency_ms"].to_numpy(dtype=float)
        if len(lat):
            row.update(
                latency_mean_ms=lat.mean(),
                latency_p50_ms=np.percentile(lat, 50),
                latency_p95_ms=np.percentile(lat, 95),
                latency_p99_ms=np.percentile(lat, 99),
            )
        messages = messages_table[messages_table["run_id"].isin(group["run_id"])]
        row["seal_us"] = messages["seal_cpu_ns"].median() / 1e3
        row["open_us"] = messages["open_cpu_ns"].median() / 1e3
        peak = group[["peak_rss_emitter_bytes", "peak_rss_receiver_bytes"]].max().max()
        row["peak_rss_mib"] = float(peak) / 2**20 if pd.notna(peak) else np.nan
        row["lost"] = int(group["messages_lost"].fillna(0).sum())
        row["rejected"] = int(
            group[["auth_failures", "malformed", "replays_rejected"]].fillna(0).to_numpy().sum()
        )
        properties = json.loads(group["security_json"].iloc[0] or "{}")
        warnings = list(properties.get("warnings", []))
        forged = int((messages["status"] == "forged").sum())
        if forged:
            warnings.append(
                f"accepted {forged} forged message(s) never sent by the emitter "
                "(delivered to the application; not counted as delivered here)"
            )
        row["warnings"] = "; ".join(warnings)
        rows.append(row)
    return pd.DataFrame(rows)
