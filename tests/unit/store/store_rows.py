"""Rows for the store tests: a small, fully specified experiment and its runs.

(A uniquely named helper module rather than conftest.py, so that it cannot clash with
another test package's helpers on sys.path.)
"""

from __future__ import annotations

from typing import Any

EXPERIMENT_ID = "exp-1"
CONFIG_HASH = "hash-aaa"


def experiment_row(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "experiment_id": EXPERIMENT_ID,
        "name": "unit",
        "created_utc": "2025-01-01T00:00:00+00:00",
        "spec_json": '{"name": "unit"}',
        "config_hash": CONFIG_HASH,
        "seed": 7,
        "host_json": '{"cores": 4}',
        "versions_json": '{"python": "3.11"}',
    }
    row.update(overrides)
    return row


def run_row(run_id: str, repetition: int, label: str = "tls1.2", **overrides: Any) -> dict:
    row: dict[str, Any] = {
        "run_id": run_id,
        "experiment_id": EXPERIMENT_ID,
        "cell_id": f"cell-{label}",
        "cell_label": label,
        "configuration": label,
        "transport": "tls1.2" if label.startswith("tls") else "plain",
        "scheme": "none",
        "payload_bytes": 64,
        "rate_hz": 10.0,
        "qos": 1,
        "duration_s": 1.0,
        "device": "esp32",
        "repetition": repetition,
        "run_order": repetition,
        "status": "ok",
        "error": None,
        "started_utc": "2025-01-01T00:00:01+00:00",
        "ended_utc": "2025-01-01T00:00:02+00:00",
        "t0_ns": 1_000_000_000,
        "tls_version": "TLSv1.2",
        "messages_sent": 3,
        "security_json": '{"confidentiality": true}',
        "details_json": None,
    }
    row.update(overrides)
    return row


def run_tables(t0_ns: int = 1_000_000_000) -> dict[str, list[dict[str, Any]]]:
    """Three messages (one lost), two samples, one of everything else."""
    return {
        "messages": [
            {
                "seq": 0,
                "payload_bytes": 64,
                "wire_bytes": 100,
                "t_created_ns": t0_ns + 1_000_000,
                "t_sealed_ns": t0_ns + 1_100_000,
                "t_published_ns": t0_ns + 1_200_000,
                "t_arrived_ns": t0_ns + 3_000_000,
                "t_delivered_ns": t0_ns + 3_500_000,  # latency 2.5 ms
                "seal_cpu_ns": 50_000,
                "open_cpu_ns": 40_000,
                "status": "delivered",
                "duplicates": 0,
            },
            {
                "seq": 1,
                "payload_bytes": 64,
                "wire_bytes": 100,
                "t_created_ns": t0_ns + 101_000_000,
                "t_delivered_ns": None,
                "status": "lost",
            },
            {
                "seq": 2,
                "payload_bytes": 64,
                "t_created_ns": t0_ns + 201_000_000,
                "t_delivered_ns": t0_ns + 205_000_000,  # latency 4 ms
                "status": "delivered",
                "duplicates": 1,
            },
        ],
        "samples": [
            {"agent": "emitter", "t_ns": t0_ns + 100_000_000, "cpu_ns": 10, "current_ma": 80.5},
            {"agent": "emitter", "t_ns": t0_ns + 200_000_000, "cpu_ns": 20, "current_ma": 81.25},
            {"agent": "receiver", "t_ns": t0_ns + 250_000_000, "current_ma": None},
        ],
        "events": [{"agent": "emitter", "t_ns": t0_ns, "kind": "connected", "detail_json": {}}],
        "handshakes": [
            {
                "agent": "emitter",
                "phase": "tls_handshake",
                "t_start_ns": t0_ns - 5_000_000,
                "t_end_ns": t0_ns - 1_000_000,
                "wall_ns": 4_000_000,
                "cpu_ns": 2_000_000,
                "detail_json": {"cipher": "ECDHE-RSA-AES128-GCM-SHA256"},
            }
        ],
        "operations": [{"agent": "emitter", "t_ns": t0_ns, "primitive": "aes-gcm", "amount": 64}],
    }
