"""Turning the agents' JSON-lines records into rows of the results tables, with the modelled
device current added to every sample (labelled *modelled*, never mixed with measurements)."""

from __future__ import annotations

import dataclasses
import json
import ssl
from collections import defaultdict
from typing import Any

import numpy as np

from iotsecbench.agents import vocabulary
from iotsecbench.analysis.describe import cumulative_mah, percentile
from iotsecbench.energy import model
from iotsecbench.energy.profile import DeviceProfile
from iotsecbench.files import without_credentials
from iotsecbench.runner.outcome import ExperimentContext, RunOutcome
from iotsecbench.runner.rows import run_row, tls_facts
from iotsecbench.spec.matrix import PlannedRun

AGENTS = vocabulary.ROLES
SAMPLE_FIELDS = vocabulary.shared_fields("sample")  # the samples table's measured columns


def _by_type(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Records by type, each checked against the vocabulary (agents/vocabulary.py): a field
    nobody declared would be lost here without a word."""
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        record_type = record.get("type", "?")
        vocabulary.check(record_type, record)
        grouped[record_type].append(record)
    return grouped


def counters(records: list[dict[str, Any]]) -> dict[str, int]:
    return {r["name"]: int(r["value"]) for r in records if r.get("type") == "counters"}


def first_error(records: list[dict[str, Any]]) -> str | None:
    errors = [r["message"] for r in records if r.get("type") == "error"]
    return errors[0] if errors else None


def _samples_with_current(
    run_id: str,
    agent: str,
    samples: list[dict[str, Any]],
    operations: list[dict[str, Any]],
    device: DeviceProfile | None,
    counted_cpi: float | None = None,
) -> tuple[list[dict[str, Any]], list[str], str | None]:
    """The samples' rows with the modelled current: from the operations' prices, or, for a
    device emitter (``counted_cpi``), from the client instructions it counted per window
    (``energy.model.counted_current``)."""
    if not samples:
        return [], [], None
    if device is None:
        raise ValueError("samples need a device profile for their modelled current")
    samples = sorted(samples, key=lambda s: s["t_ns"])
    columns = {
        name: [s[name] for s in samples] for name in ("t_ns", *model.SAMPLE_COLUMNS.values())
    }
    if counted_cpi is not None:
        modelled = _counted_model(device, samples, counted_cpi)
    else:
        activity = model.Activity.from_samples(
            columns,
            (model.Operation(int(o["t_ns"]), o["primitive"], int(o["amount"])) for o in operations),
        )
        modelled = activity.current(device)
    rows = []
    for index, sample in enumerate(samples):
        row = {key: sample[key] for key in SAMPLE_FIELDS}
        row.update(
            run_id=run_id,
            agent=agent,
            current_ma=float(modelled.current_ma[index]),
            cpu_fraction=float(modelled.cpu_fraction[index]),
            tx_fraction=float(modelled.tx_fraction[index]),
            rx_fraction=float(modelled.rx_fraction[index]),
        )
        rows.append(row)
    return rows, list(modelled.unmodelled_primitives), modelled.model_version


def _counted_model(
    device: DeviceProfile,
    samples: list[dict[str, Any]],
    cpi: float,
    accelerators: tuple[model.Accelerator, ...] = (),
) -> model.ModelledCurrent:
    """The model fed with a device emitter's samples (sorted by time): the client instructions
    counted per window (``energy.model.counted_current``), software only or with
    ``accelerators`` pricing their families' instructions."""
    return model.counted_current(
        device,
        [s["t_ns"] for s in samples],
        _client_instructions(samples),
        *([s[name] for s in samples] for name in model.SAMPLE_COLUMNS.values()),
        cpi=cpi,
        family_instructions={
            a.family: [s["instructions_families"].get(a.family, 0) for s in samples]
            for a in accelerators
        },
        accelerators=accelerators,
    )


def _client_instructions(records: list[dict[str, Any]]) -> list[int]:
    """A device emitter's client instructions per sample or message: its crypto and protocol
    buckets (the wait and the UART's io are the emulated link's, not the client's work)."""
    return [int(r["instructions_crypto"]) + int(r["instructions_protocol"]) for r in records]


def _bigint_or_none(value: int) -> int | None:
    return value if -(2**63) <= value < 2**63 else None


def _messages(
    run_id: str,
    sent: list[dict[str, Any]],
    received: list[dict[str, Any]],
    payload_bytes: int,
    emitter_complete: bool = False,
) -> list[dict[str, Any]]:
    """One row per message. A delivery the emitter has no record of is a message lost from
    a crashed emitter's file, or — when the emitter finished and counted what it sent — a
    forgery the scheme let through (``forged``: CBC without a MAC, agents/attacker.py)."""
    arrivals = {r["seq"]: r for r in received}
    rows = []
    for message in sent:
        arrival = arrivals.pop(message["seq"], None)
        rows.append(
            {
                "run_id": run_id,
                "seq": message["seq"],
                "payload_bytes": message["payload_bytes"],
                "wire_bytes": message["wire_bytes"],
                "t_created_ns": message["t_created_ns"],
                "t_sealed_ns": message["t_sealed_ns"],
                "t_published_ns": message["t_published_ns"],
                "t_arrived_ns": arrival and arrival["t_arrived_ns"],
                "t_delivered_ns": arrival and arrival["t_delivered_ns"],
                "seal_cpu_ns": message["seal_cpu_ns"],
                "open_cpu_ns": arrival and arrival["open_cpu_ns"],
                "status": "delivered" if arrival else "lost",
                "duplicates": 0,
            }
        )
    for arrival in arrivals.values():
        rows.append(
            {
                "run_id": run_id,
                # A forgery claims what it likes: 64-bit values past BIGINT are stored NULL.
                "seq": _bigint_or_none(arrival["seq"]),
                "payload_bytes": payload_bytes,
                "wire_bytes": arrival["wire_bytes"],
                "t_created_ns": _bigint_or_none(arrival["t_created_ns"]),
                "t_arrived_ns": arrival["t_arrived_ns"],
                "t_delivered_ns": arrival["t_delivered_ns"],
                "open_cpu_ns": arrival["open_cpu_ns"],
                "status": "forged" if emitter_complete else "delivered",
                "duplicates": 0,
            }
        )
    return rows


def _energy_j(samples: list[dict[str, Any]], voltage_v: float) -> float | None:
    """Modelled energy of one agent's samples: V · Σ I_k · Δt_k (docs/device-facts.md §0),
    each sample's current being the mean over the window ending at it."""
    if len(samples) < 2:
        return None
    times = np.array([s["t_ns"] for s in samples], dtype=np.float64)
    current_ma = np.array([s["current_ma"] for s in samples], dtype=np.float64)
    windows_s = np.diff(times, prepend=times[0] - np.median(np.diff(times))) / 1e9
    return float(cumulative_mah(current_ma, windows_s)[-1] * 3.6 * voltage_v)  # mAh·3.6 = C


def per_byte_metrics(
    grouped: dict[str, dict[str, list[dict[str, Any]]]],
    samples: list[dict[str, Any]],
    payload_bytes: int,
    voltage_v: float | None,
    emitter_energy_j: float | None = None,
) -> dict[str, Any]:
    """The block-sizes study's metrics (and ours) per run: payload delivered, throughput,
    modelled energy and measured host CPU per payload byte, wire bytes per payload byte,
    echo round trips. Payload bytes exclude frame and crypto headers, as in the study.
    ``emitter_energy_j``: the emitter's energy when its samples' timeline is not the device's
    (a counted saturating run: ``_device_paced_energy_j``)."""
    delivered = grouped["receiver"]["message"]
    sent = grouped["emitter"]["message"]
    payload = len(delivered) * payload_bytes
    metrics: dict[str, Any] = {"payload_bytes_delivered": payload}
    if delivered:
        start = min(m["t_created_ns"] for m in delivered)
        window_s = (max(m["t_delivered_ns"] for m in delivered) - start) / 1e9
        metrics["throughput_kib_s"] = payload / window_s / 1024 if window_s > 0 else None
    if sent:
        metrics["wire_bytes_per_payload_byte"] = sum(m["wire_bytes"] for m in sent) / (
            len(sent) * payload_bytes
        )
    for agent in AGENTS:
        rows = sorted((s for s in samples if s["agent"] == agent), key=lambda s: s["t_ns"])
        energy = _energy_j(rows, voltage_v) if voltage_v is not None else None
        if agent == "emitter" and emitter_energy_j is not None:
            energy = emitter_energy_j
        metrics[f"energy_{agent}_j"] = energy
        cpu_ns = rows[-1]["cpu_ns"] if rows else None
        if payload:
            metrics[f"energy_per_byte_{agent}_uj"] = (
                1e6 * energy / payload if energy is not None else None
            )
            metrics[f"cpu_per_byte_{agent}_us"] = cpu_ns / 1e3 / payload if cpu_ns else None
    echoes = grouped["emitter"]["echo"]
    if echoes:
        rtt_ms = np.array([e["t_returned_ns"] - e["t_sent_ns"] for e in echoes]) / 1e6
        metrics["echoes"] = len(echoes)
        for q in (50, 90, 99):
            metrics[f"echo_rtt_p{q}_ms"] = percentile(rtt_ms, q)
    return metrics


def collect(
    run_id: str,
    records: dict[str, list[dict[str, Any]]],
    payload_bytes: int,
    device: DeviceProfile | None,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Rows for every table from both agents' records, plus the run-level facts they imply:
    the one translation of agent records into rows.
    ``device`` prices the samples (None only when there are none)."""
    grouped = {agent: _by_type(records.get(agent, [])) for agent in AGENTS}
    tables: dict[str, list[dict[str, Any]]] = {
        "samples": [],
        "handshakes": [],
        "events": [],
        "operations": [],
    }
    unmodelled: set[str] = set()
    model_version = None
    counted = _counted_emitter(run_id, grouped["emitter"], device)
    for agent in AGENTS:
        kinds = grouped[agent]
        rows, missing, version = _samples_with_current(
            run_id,
            agent,
            kinds["sample"],
            kinds["operation"],
            device,
            counted_cpi=counted["cpi"] if counted and agent == "emitter" else None,
        )
        tables["samples"] += rows
        if counted and agent == "emitter" and rows:
            counted["counted_current_emitter_ma"] = float(np.mean([r["current_ma"] for r in rows]))
        unmodelled.update(missing)
        model_version = model_version or version
        tables["handshakes"] += [
            {
                "run_id": run_id,
                "agent": agent,
                "phase": h["phase"],
                "t_start_ns": h["t_start_ns"],
                "t_end_ns": h["t_end_ns"],
                "wall_ns": h["wall_ns"],
                "cpu_ns": h["cpu_ns"],
                "detail_json": json.dumps(h.get("detail", {})),
            }
            for h in kinds["handshake"]
        ]
        tables["events"] += [
            {
                "run_id": run_id,
                "agent": agent,
                "t_ns": e["t_ns"],
                "kind": e["kind"],
                "detail_json": json.dumps(e.get("detail", {})),
            }
            for e in kinds["event"]
        ]
        tables["operations"] += [
            {
                "run_id": run_id,
                "agent": agent,
                "t_ns": o["t_ns"],
                "primitive": o["primitive"],
                "amount": o["amount"],
            }
            for o in kinds["operation"]
        ]
    # The test suite's attacker (agents/attacker.py) leaves only events: what it forged.
    tables["events"] += [
        {
            "run_id": run_id,
            "agent": "attacker",
            "t_ns": e["t_ns"],
            "kind": e["kind"],
            "detail_json": json.dumps(e.get("detail", {})),
        }
        for e in _by_type(records.get("attacker", []))["event"]
    ]
    emitter_counts = counters(records.get("emitter", []))
    tables["messages"] = _messages(
        run_id,
        grouped["emitter"]["message"],
        grouped["receiver"]["message"],
        payload_bytes,
        emitter_complete="messages_sent" in emitter_counts,
    )
    receiver_counts = counters(records.get("receiver", []))
    delivered = sum(1 for m in tables["messages"] if m["status"] == "delivered")
    sent = emitter_counts.get("messages_sent", len(grouped["emitter"]["message"]))
    first_samples = [s["t_ns"] for s in tables["samples"]]
    facts: dict[str, Any] = {
        "t0_ns": min(first_samples) if first_samples else None,
        "messages_sent": sent,
        "messages_received": receiver_counts.get("messages_received"),
        "messages_delivered": delivered,
        "messages_lost": max(0, sent - delivered),
        "duplicates": receiver_counts.get("duplicates"),
        "auth_failures": receiver_counts.get("auth_failures"),
        "malformed": receiver_counts.get("malformed"),
        "replays_rejected": receiver_counts.get("replays_rejected"),
        "peak_rss_emitter_bytes": emitter_counts.get("peak_rss_bytes"),
        "peak_rss_receiver_bytes": receiver_counts.get("peak_rss_bytes"),
        **tls_facts((grouped["emitter"]["negotiated"] or [{}])[0]),
        **_stack_facts(grouped["emitter"], emitter_counts),
        "energy_model_version": model_version,
        "unmodelled_primitives": sorted(unmodelled),
        "counted": counted,
        **per_byte_metrics(
            grouped,
            tables["samples"],
            payload_bytes,
            device.supply_voltage_v if device is not None else None,
            _device_paced_energy_j(grouped["emitter"], device, counted),
        ),
    }
    return facts, tables


def _device_paced_energy_j(
    emitter: dict[str, list[dict[str, Any]]],
    device: DeviceProfile | None,
    counted: dict[str, Any] | None,
) -> float | None:
    """A counted saturating emitter's energy at the device's own pace
    (``energy.model.device_paced_energy_j``), noted in ``counted``; None otherwise. Its
    samples' windows are QEMU's, which outruns a device's clock, so the energy of those
    windows per byte would divide by the emulator's throughput."""
    start = next((e for e in emitter["event"] if e["kind"] == "publish_start"), {})
    if counted is None or device is None or not start.get("detail", {}).get("saturating"):
        return None
    samples = sorted(emitter["sample"], key=lambda s: s["t_ns"])
    if not samples:
        return None
    energy = model.device_paced_energy_j(
        device,
        _client_instructions(samples),
        *([s[name] for s in samples] for name in model.SAMPLE_COLUMNS.values()),
        cpi=counted["cpi"],
    )
    counted["energy_pace"] = "device"  # the per-byte energy's: its counted CPU and airtime
    return energy


def _counted_emitter(
    run_id: str, emitter: dict[str, list[dict[str, Any]]], device: DeviceProfile | None
) -> dict[str, Any] | None:
    """For a device emitter (``run --target``, runner/device_emitter.py): where it was counted,
    the CPI its instructions are turned into cycles with, and the *priced* figure beside the
    counted one — the same samples with the operations' prices, as for a host agent."""
    start = next((e for e in emitter["event"] if e["kind"] == "agent_start"), {})
    target = start.get("detail", {}).get("counted_on")
    if target is None:
        return None
    cpi = device.parameters["cpi"].value if device and "cpi" in device.parameters else None
    cpi = cpi if cpi is not None else float(start["detail"]["cpi"])
    priced, _, _ = _samples_with_current(
        run_id, "emitter", emitter["sample"], emitter["operation"], device
    )
    voltage = device.supply_voltage_v if device is not None else None
    figures = {
        "target": target,
        "cpi": cpi,
        "priced_current_emitter_ma": (
            float(np.mean([r["current_ma"] for r in priced])) if priced else None
        ),
        "priced_energy_emitter_j": _energy_j(priced, voltage) if voltage else None,
        **counted_per_byte(emitter["message"], emitter["echo"], emitter["sample"]),
    }
    accelerated = _accelerated_emitter(emitter, device, cpi, target)
    if accelerated is not None:
        figures["accelerated"] = accelerated
    handshake = next((e for e in emitter["event"] if e["kind"] == "counted_handshake"), {})
    detail = handshake.get("detail", {})
    groups = detail.get("groups", {})
    # The connection's set-up (TLS handshake and MQTT CONNECT, or CONNECT alone), each group's
    # client instructions: network-invariant by construction (docs/device-client.md).
    set_up = {k: v for k, v in groups.items() if k != "KEY_EXCHANGE"}
    if set_up:
        figures["connection"] = {
            "instructions": sum(set_up.values()),
            "groups": set_up,
            "primitives": detail.get("primitives", {}),
        }
    if "KEY_EXCHANGE" in groups:  # a payload scheme's, counted on the device
        figures["key_exchange"] = {
            "instructions": groups["KEY_EXCHANGE"],
            "primitives": detail.get("key_exchange_primitives", {}),
            "stack_high_water_bytes": detail.get("key_exchange_stack_high_water_bytes"),
            "heap_peak_bytes": detail.get("key_exchange_heap_peak_bytes"),
        }
    return figures


def _accelerated_emitter(
    emitter: dict[str, list[dict[str, Any]]], device: DeviceProfile | None, cpi: float, target: str
) -> dict[str, Any] | None:
    """A device emitter's counted current with the profile's accelerators pricing their
    families' instructions (energy.model.accelerated_busy_s), beside the software-only one, or
    None when the profile prices none. AES-GCM (a GCM scheme or TLS suite) takes the GCM
    speed-up: its GHASH stays on the CPU."""
    samples = sorted(emitter["sample"], key=lambda s: s["t_ns"])
    if device is None or not samples or "instructions_families" not in samples[0]:
        return None
    start = next((e for e in emitter["event"] if e["kind"] == "agent_start"), {})
    suites = [str(n.get("cipher", "")) for n in emitter["negotiated"]]
    configuration = str(start.get("detail", {}).get("configuration", ""))
    gcm = "gcm" in configuration.lower() or any("GCM" in suite.upper() for suite in suites)
    accelerators = model.accelerators_for(device, gcm)
    if not accelerators:
        return None
    modelled = _counted_model(device, samples, cpi, accelerators)
    return {
        "kind": model.counted_kind(target, accelerators),
        "speedups": {a.family: a.speedup for a in accelerators},
        "current_emitter_ma": float(np.mean(modelled.current_ma)),
    }


def counted_per_byte(
    messages: list[dict[str, Any]], echoes: list[dict[str, Any]], samples: list[dict[str, Any]]
) -> dict[str, Any]:
    """A device emitter's cost per payload byte, counted (the block-sizes study's figure on
    the device, where a saturating run's rate is QEMU's, not the device's): the client
    instructions of its messages — from each one's creation to its send (an echoed block: to
    its echo opened) — over their payload bytes, and of those the crypto (inside the
    primitives), the seal and the echoes' opening; beside them how fast QEMU emulated (every
    bucket over the samples' span, sleep left out: a measure of this host)."""
    payload = sum(int(m["payload_bytes"]) for m in messages)
    if not payload:
        return {}
    figures: dict[str, Any] = {
        "client_instructions_per_byte": sum(_client_instructions(messages)) / payload,
        "crypto_instructions_per_byte": sum(int(m["instructions_crypto"]) for m in messages)
        / payload,
        "seal_instructions_per_byte": sum(int(m.get("instructions_seal", 0)) for m in messages)
        / payload,
    }
    if echoes:
        echoed = payload * len(echoes) / len(messages)  # every block is one size
        figures["open_instructions_per_byte"] = (
            sum(int(e.get("instructions_open", 0)) for e in echoes) / echoed
        )
    if len(samples) > 1:
        first, last = (sorted(samples, key=lambda s: s["t_ns"])[i] for i in (0, -1))
        emulated = sum(
            last[f"instructions_{b}"] - first[f"instructions_{b}"]
            for b in vocabulary.DEVICE_BUCKETS
        )
        awake_ns = last["t_ns"] - first["t_ns"] - (last["sleep_ns"] - first["sleep_ns"])
        figures["emulated_instructions_per_s"] = emulated / (awake_ns / 1e9) if awake_ns else None
    return figures


# Emitter counters stored as runs columns (the native agent's heap and footprint).
_NATIVE_COUNTERS = (
    "tls_heap_handshake_peak_bytes",
    "tls_heap_steady_bytes",
    "tls_heap_publishing_peak_bytes",
    "footprint_text_bytes",
    "footprint_data_bytes",
    "footprint_bss_bytes",
)


# Run facts of a fleet that add up over its devices, and those whose fleet value is the
# largest device's; every other fact describes device 0, the fleet's representative device
# (its per-device rows hold them all).
_SUMMED = (
    "messages_sent",
    "messages_received",
    "messages_delivered",
    "messages_lost",
    "duplicates",
    "auth_failures",
    "malformed",
    "replays_rejected",
)
_LARGEST = ("peak_rss_emitter_bytes", "peak_rss_receiver_bytes")
# The emitter's connection phases before it can publish: its session set-up.
SETUP_PHASES = ("tcp_connect", "tls_handshake", "mqtt_connect")


def _percentile_ms(values_ns: list[int], q: float) -> float | None:
    return percentile(np.asarray(values_ns, dtype=float) / 1e6, q) if values_ns else None


# A fleet device's rows kept only for the raw sample (docs/scale.md, "Storage"); the rest
# (handshakes, events) are a few rows per device and stay for every device.
RAW_TABLES = ("messages", "samples", "operations")


def raw_sample(devices: int, raw_devices: int) -> set[int]:
    """The devices whose raw rows a fleet keeps: all of them up to ``raw_devices``, else
    ``raw_devices`` spread evenly from device 0 (index round(i * devices / raw_devices))."""
    if raw_devices >= devices:
        return set(range(devices))
    return {round(i * devices / raw_devices) for i in range(raw_devices)}


def _device_summary(
    run_id: str, index: int, facts: dict[str, Any], tables: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    """A fleet device's fleet_devices row, from its own facts and rows."""
    phases = {
        h["phase"]: h for h in tables["handshakes"] if h["agent"] == "emitter"
    }  # the measured connection's (a storm's reconnections are events)
    setup = [phases[p] for p in SETUP_PHASES if p in phases]
    latencies = [
        (m["t_delivered_ns"] - m["t_created_ns"]) / 1e6
        for m in tables["messages"]
        if m["status"] == "delivered" and m.get("t_created_ns") is not None
    ]
    cpu = {
        agent: max((s["cpu_ns"] for s in tables["samples"] if s["agent"] == agent), default=None)
        for agent in ("emitter", "receiver")
    }
    reconnections = [
        json.loads(e["detail_json"])
        for e in tables["events"]
        if e["agent"] == "emitter" and e["kind"] == "reconnected"
    ]
    return {
        "run_id": run_id,
        "device_index": index,
        "messages_sent": facts.get("messages_sent"),
        "messages_delivered": facts.get("messages_delivered"),
        "messages_lost": facts.get("messages_lost"),
        "duplicates": facts.get("duplicates"),
        "setup_ms": (
            (max(h["t_end_ns"] for h in setup) - min(h["t_start_ns"] for h in setup)) / 1e6
            if "mqtt_connect" in phases
            else None
        ),
        "tls_handshake_ms": (
            phases["tls_handshake"]["wall_ns"] / 1e6 if "tls_handshake" in phases else None
        ),
        "setup_cpu_ns": sum(h["cpu_ns"] for h in setup) if setup else None,
        "latency_p50_ms": percentile(np.asarray(latencies), 50) if latencies else None,
        "latency_p99_ms": percentile(np.asarray(latencies), 99) if latencies else None,
        "latency_max_ms": max(latencies) if latencies else None,
        "emitter_cpu_ns": cpu["emitter"],
        "receiver_cpu_ns": cpu["receiver"],
        "reconnections": len(reconnections),
        "reconnect_ms": reconnections[-1]["wall_ns"] / 1e6 if reconnections else None,
        "reconnect_resumed": sum(1 for r in reconnections if r.get("resumed")),
    }


def collect_fleet(
    run_id: str,
    fleet: list[dict[str, list[dict[str, Any]]]],
    payload_bytes: int,
    device: DeviceProfile | None,
    raw_devices: int | None = None,
    workers: dict[int, str] | None = None,
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """``collect`` for every device of a run (one without a fleet), its rows tagged with
    ``device_index``, plus the fleet's figures: devices connected per second, session set-up
    and message latency percentiles across the fleet. A fleet also gets a ``fleet_devices``
    row per device (``workers``: who drove it), and keeps the ``RAW_TABLES`` rows of
    ``raw_sample`` only (None: all)."""
    facts: dict[str, Any] = {}
    tables: dict[str, list[dict[str, Any]]] = defaultdict(list)
    setups: list[tuple[int, int]] = []  # per device: set-up wall time, completion time
    latencies: list[int] = []
    kept = raw_sample(len(fleet), raw_devices or len(fleet))
    for index, records in enumerate(fleet):
        device_facts, device_tables = collect(run_id, records, payload_bytes, device)
        for rows in device_tables.values():
            for row in rows:
                row["device_index"] = index
        latencies += [
            m["t_delivered_ns"] - m["t_created_ns"]
            for m in device_tables["messages"]
            if m["status"] == "delivered" and m.get("t_created_ns") is not None
        ]
        if len(fleet) > 1:
            summary = _device_summary(run_id, index, device_facts, device_tables)
            worker = (workers or {}).get(index)
            tables["fleet_devices"].append({**summary, "raw": int(index in kept), "worker": worker})
        for name, rows in device_tables.items():
            if index in kept or name not in RAW_TABLES:
                tables[name] += rows
        if index == 0:
            facts = device_facts
        else:
            for name in _SUMMED:
                if device_facts.get(name) is not None:
                    facts[name] = (facts.get(name) or 0) + device_facts[name]
            for name in _LARGEST:
                facts[name] = max((v for v in (facts[name], device_facts[name]) if v), default=None)
            starts = [v for v in (facts["t0_ns"], device_facts["t0_ns"]) if v is not None]
            facts["t0_ns"] = min(starts) if starts else None
            facts["unmodelled_primitives"] = sorted(
                {*facts["unmodelled_primitives"], *device_facts["unmodelled_primitives"]}
            )
        phases = [
            h
            for h in device_tables["handshakes"]
            if h["agent"] == "emitter" and h["phase"] in SETUP_PHASES
        ]
        if any(h["phase"] == "mqtt_connect" for h in phases):
            start = min(h["t_start_ns"] for h in phases)
            end = max(h["t_end_ns"] for h in phases)
            setups.append((end - start, end))
    completions = sorted(end for _, end in setups)
    span_s = (completions[-1] - completions[0]) / 1e9 if len(completions) > 1 else 0.0
    facts.update(
        fleet_size=len(fleet),
        connect_rate_hz=(len(completions) - 1) / span_s if span_s > 0 else None,
        setup_p50_ms=_percentile_ms([wall for wall, _ in setups], 50),
        setup_p99_ms=_percentile_ms([wall for wall, _ in setups], 99),
        latency_p50_ms=_percentile_ms(latencies, 50),
        latency_p99_ms=_percentile_ms(latencies, 99),
    )
    return facts, dict(tables)


def _stack_facts(emitter: dict[str, list[dict[str, Any]]], counts: dict[str, int]) -> dict:
    """The emitter's TLS library (from its agent_start event: the OpenSSL a Python agent
    loaded, the native agent's stack), its native counters and the rate it achieved."""
    detail = next((e for e in emitter["event"] if e["kind"] == "agent_start"), {}).get("detail", {})
    # A native agent names its stack (its plain build none: no version); a Python one names
    # the OpenSSL it loaded (older records: this interpreter's).
    version = (
        detail.get("stack_version") or None
        if "stack" in detail
        else detail.get("openssl_version", ssl.OPENSSL_VERSION)
    )
    created = sorted(m["t_created_ns"] for m in emitter["message"] if "t_created_ns" in m)
    span_s = (created[-1] - created[0]) / 1e9 if len(created) > 1 else 0.0
    return {
        "stack_version": version,
        **{name: counts.get(name) for name in _NATIVE_COUNTERS},
        "achieved_rate_hz": (len(created) - 1) / span_s if span_s > 0 else None,
    }


def build_outcome(
    run: PlannedRun,
    context: ExperimentContext,
    fleet: list[dict[str, list[dict[str, Any]]]],
    *,
    status: str,
    error: str | None,
    started_utc: str,
    details: dict[str, Any] | None = None,
    host_counters: list[Any] | None = None,
    broker: dict[str, Any] | None = None,
    workers: dict[int, str] | None = None,
) -> RunOutcome:
    """The run's ``runs`` row and table rows, from its agents' records: one role → records
    mapping per device (a list of one without a fleet).

    ``host_counters`` are the ``lab.network.CounterRow``s of an emulated network (None on
    loopback); their TCP retransmissions are summed into ``tcp_retransmissions``.
    ``broker``: the embedded broker's figures and samples (runner/broker_watch.py).
    ``workers``: which worker's fleet agent drove each device (runner/fleet_agent.py).
    """
    facts, tables = collect_fleet(
        run.run_id,
        fleet,
        run.cell.payload_bytes,
        context.device,
        raw_devices=context.spec.fleet_raw_devices,
        workers=workers,
    )
    tables.setdefault("host_counters", [])
    retransmissions = None
    if host_counters is not None:
        tables["host_counters"] += [
            {"run_id": run.run_id, **dataclasses.asdict(counter)} for counter in host_counters
        ]
        retransmissions = sum(
            c.value for c in host_counters if c.source == "snmp" and c.name == "Tcp.RetransSegs"
        )
    row = run_row(
        run_id=run.run_id,
        experiment_id=context.experiment_id,
        cell_id=run.cell.cell_id,
        cell_label=run.cell.label,
        configuration=run.cell.configuration,
        status=status,
        error=error,
        started_utc=started_utc,
        run_order=run.run_order,
        repetition=run.repetition,
        network=run.cell.network,
        stack=run.cell.stack,
        broker_version=context.broker_version,
        run_dir=str(context.run_dir(run).relative_to(context.results_dir)),
        # Agents time their CPU on this host; a device emitter (run --target) counts its
        # instructions on a virtual MCU.
        cost_method="counted" if facts.get("counted") else "timed",
        details={
            "unmodelled_primitives": facts.pop("unmodelled_primitives"),
            **({"counted": counted} if (counted := facts.pop("counted", None)) else {}),
            # the external broker, never with the password its URL may carry
            "broker_url": (without_credentials(context.broker_url) if context.broker_url else None),
            **(details or {}),
        },
        payload_bytes=run.cell.payload_bytes,
        rate_hz=run.cell.rate_hz,
        qos=run.cell.qos,
        message_transport=run.cell.transport,
        method=run.cell.method,
        pacing="saturating" if context.spec.saturating else "fixed-rate",
        tcp_retransmissions=retransmissions,
        duration_s=context.spec.duration_s,
        device=context.device.name,
        worker="local",  # runner/cluster.py names its worker instead
        parallel_runs=1,
        **facts,
    )
    if broker is not None:
        row.update(broker["figures"])
        tables["samples"] += [{"run_id": run.run_id, **sample} for sample in broker["samples"]]
        tables["host_counters"] += [
            {"run_id": run.run_id, **counter} for counter in broker["counters"]
        ]
    return RunOutcome(row, tables)
