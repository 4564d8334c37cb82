"""One value per run, and the summary per configuration: the numbers ``run`` prints at its end,
the report's summary table and what the findings and ``report A B`` compare over runs.

Pure: the stored tables come in as frames (``store.read``), frames go out. Every column is a
metric of the registry (``analysis.metrics``): a metric with ``sources`` is the sum of those
runs columns (stored by the runner's ``collect``), scaled; the others are derived here from the
run's samples, events, messages and handshakes. Which figures are *measured* on this host and
which *modelled* for the device is each metric's ``kind``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from iotsecbench.analysis.describe import cumulative_mah, percentile
from iotsecbench.analysis.metrics import (
    FLEET,
    INSTRUCTIONS_PER_BYTE,
    MEAN,
    METRICS,
    PHASE_COLUMNS,
    PHASES,
    Registry,
)

# The tables a run's per-run values are derived from (a fleet's device 0: store.read.table's
# ``first_device``).
TABLES = ("samples", "events", "messages", "handshakes")
AGENTS = ("emitter", "receiver")


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


def _stored(run: pd.Series, registry: Registry) -> dict[str, float]:
    """Every metric the runner stored per run: the sum of its source columns, scaled (NaN
    when one is missing); a fleet's own figures only for a fleet."""
    values: dict[str, float] = {}
    for entry in registry:
        if not entry.sources:
            continue
        parts = [run.get(column) for column in entry.sources]
        present = all(part is not None and pd.notna(part) for part in parts)
        values[entry.column] = float(sum(parts)) * entry.scale if present else np.nan
    fleet_size = run.get("fleet_size")
    if not (fleet_size is not None and pd.notna(fleet_size) and fleet_size > 1):
        # one device: its figures are the other columns'
        values.update(dict.fromkeys((m.column for m in registry if m.group == FLEET), np.nan))
    return values


def _derived(run: pd.Series, tables: Mapping[str, pd.DataFrame]) -> dict[str, float]:
    """The metrics derived from the run's rows: handshake phases, session set-up on the wire,
    CPU per message, the device's current and charge, bytes per message."""
    run_id = run["run_id"]
    own = {name: tables[name][tables[name]["run_id"] == run_id] for name in TABLES}
    samples, events, messages, handshakes = (own[name] for name in TABLES)
    values: dict[str, float] = {}
    emitter_handshakes = handshakes[handshakes["agent"] == "emitter"]
    for phase, column in zip(PHASES, PHASE_COLUMNS, strict=True):
        wall = emitter_handshakes.loc[emitter_handshakes["phase"] == phase, "wall_ns"]
        values[column] = float(wall.iloc[0]) / 1e6 if len(wall) else float("nan")
    values.update(_setup_wire(emitter_handshakes, events[events["agent"] == "emitter"], messages))
    emitter_events = events[events["agent"] == "emitter"]
    start = emitter_events.loc[emitter_events["kind"] == "publish_start", "t_ns"]
    end = emitter_events.loc[emitter_events["kind"] == "publish_end", "t_ns"]
    sent = len(messages)
    for agent in AGENTS:
        agent_samples = samples[samples["agent"] == agent].sort_values("t_ns")
        if len(start) and len(end) and sent:
            cpu = _window_delta(agent_samples, "cpu_ns", start.iloc[0], end.iloc[0])
            values[f"{agent}_cpu_us_per_message"] = cpu / 1e3 / sent
        values[f"{agent}_current_ma"] = (
            float(agent_samples["current_ma"].mean()) if len(agent_samples) else np.nan
        )
        values[f"{agent}_charge_mah"] = _charge_mah(agent_samples)
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
    phases = [values[c] for c in PHASE_COLUMNS if np.isfinite(values[c])]
    values["setup_ms"] = float(sum(phases)) if phases else np.nan
    per_byte = _counted(run).get("client_instructions_per_byte")
    values[INSTRUCTIONS_PER_BYTE] = float(per_byte) if per_byte is not None else np.nan
    return values


def _counted(run: pd.Series) -> dict[str, Any]:
    """A device emitter's counted figures (``run --target``: ``details_json.counted``), or {}."""
    details = run.get("details_json")
    if not isinstance(details, str) or not details:
        return {}
    counted = json.loads(details).get("counted")
    return counted if isinstance(counted, dict) else {}


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


def _latency(latency: pd.DataFrame, configuration: str, repetition: Any) -> np.ndarray:
    mine = (latency["configuration"] == configuration) & (latency["run"] == repetition)
    return latency.loc[mine, "latency_ms"].to_numpy(dtype=float)


def per_run_values(
    runs: pd.DataFrame,
    tables: Mapping[str, pd.DataFrame],
    latency: pd.DataFrame,
    registry: Registry = METRICS,
) -> pd.DataFrame:
    """One row per run of ``runs`` (the ok ones): ``run_id``, ``configuration`` (its cell
    label) and every per-run metric of the registry — the values the summary averages, and
    the run's own latency percentiles and connection set-up time (what the findings and
    ``report A B`` resample over runs).

    Parameters
    ----------
    runs : DataFrame
        Rows of the runs table.
    tables : mapping
        ``samples``, ``events``, ``messages``, ``handshakes`` (of these runs; others ignored).
    latency : DataFrame
        ``configuration, run, seq, latency_ms`` (``store.read.latency_frame``).
    """
    rows = []
    for _, run in runs.iterrows():
        values: dict[str, Any] = {"run_id": run["run_id"], "configuration": run["cell_label"]}
        values.update(_stored(run, registry))
        values.update(_derived(run, tables))
        own = _latency(latency, run["cell_label"], run["repetition"])
        for column, q in (("latency_p50_ms", 50), ("latency_p99_ms", 99)):
            values[column] = percentile(own, q)
        rows.append(values)
    return pd.DataFrame(rows)


def summarise_runs(
    runs: pd.DataFrame,
    messages: pd.DataFrame,
    latency: pd.DataFrame,
    per_run: pd.DataFrame,
    order: Sequence[str] = (),
    registry: Registry = METRICS,
) -> pd.DataFrame:
    """One row per configuration (cell label), in the spec's order (``order``: its
    configuration names; runs themselves are shuffled), columns as the registry's summary
    metrics plus ``warnings``: means of the per-run values; latency percentiles pool every
    message of the configuration's runs, seal and open times are medians over its messages."""
    averaged = [m.column for m in registry if m.summary == MEAN and m.column in per_run]
    rows = []
    for label, group in sorted(
        runs.groupby("cell_label", sort=False), key=lambda item: _spec_position(order, item[1])
    ):
        own_runs = per_run[per_run["configuration"] == label]
        row: dict[str, Any] = {"configuration": label, "runs": len(group)}
        row.update(own_runs[averaged].astype(float).mean().to_dict())
        lat = latency.loc[latency["configuration"] == label, "latency_ms"].to_numpy(dtype=float)
        if len(lat):
            row.update(
                latency_mean_ms=lat.mean(),
                latency_p50_ms=percentile(lat, 50),
                latency_p95_ms=percentile(lat, 95),
                latency_p99_ms=percentile(lat, 99),
            )
        own_messages = messages[messages["run_id"].isin(group["run_id"])]
        row["seal_us"] = own_messages["seal_cpu_ns"].median() / 1e3
        row["open_us"] = own_messages["open_cpu_ns"].median() / 1e3
        peak = group[["peak_rss_emitter_bytes", "peak_rss_receiver_bytes"]].max().max()
        row["peak_rss_mib"] = float(peak) / 2**20 if pd.notna(peak) else np.nan
        row["lost"] = int(group["messages_lost"].fillna(0).sum())
        row["rejected"] = int(
            group[["auth_failures", "malformed", "replays_rejected"]].fillna(0).to_numpy().sum()
        )
        row["warnings"] = "; ".join(_warnings(group, own_messages))
        rows.append(row)
    return pd.DataFrame(rows)


def _warnings(group: pd.DataFrame, messages: pd.DataFrame) -> list[str]:
    """The scheme's own warnings, and forgeries the receiver accepted."""
    properties = json.loads(group["security_json"].iloc[0] or "{}")
    warnings = list(properties.get("warnings", []))
    forged = int((messages["status"] == "forged").sum())
    if forged:
        warnings.append(
            f"accepted {forged} forged message(s) never sent by the emitter "
            "(delivered to the application; not counted as delivered here)"
        )
    return warnings


def _spec_position(order: Sequence[str], group: pd.DataFrame) -> tuple[int, int, float, int]:
    first = group.iloc[0]
    position = (
        list(order).index(first["configuration"]) if first["configuration"] in order else len(order)
    )
    # A handshake benchmark's runs publish nothing: no payload, rate or QoS (NULL) to order by.
    payload, rate, qos = (first[key] for key in ("payload_bytes", "rate_hz", "qos"))
    return (
        position,
        int(payload) if pd.notna(payload) else 0,
        float(rate) if pd.notna(rate) else 0.0,
        int(qos) if pd.notna(qos) else 0,
    )


def empty_frames(registry: Registry = METRICS) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-run frame and the summary of an experiment without a completed run."""
    return (
        pd.DataFrame(columns=["run_id", "configuration"]),
        pd.DataFrame(
            columns=["configuration", *(m.column for m in registry.in_summary()), "warnings"]
        ),
    )


# Every metric either comes from its sources or is derived above: a registry entry without
# sources must be one of these (tests/unit/analysis/test_metrics.py checks it).
DERIVED = frozenset(
    {
        *PHASE_COLUMNS,
        "setup_ms", "setup_bytes_out", "setup_bytes_in", "client_hello_segments",
        "first_message_ms", "wire_bytes_per_message", "expansion_bytes",
        *(f"{agent}_{what}" for agent in AGENTS
          for what in ("cpu_us_per_message", "current_ma", "charge_mah")),
        "latency_p50_ms", "latency_p99_ms", INSTRUCTIONS_PER_BYTE,
    }
)  # fmt: skip
# The registry's POOLED metrics, each computed by ``summarise`` itself.
POOLED_HERE = frozenset(
    {"runs", "latency_mean_ms", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
     "seal_us", "open_us", "peak_rss_mib", "lost", "rejected"}
)  # fmt: skip
