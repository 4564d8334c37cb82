"""A deterministic stand-in for the lab, for fast end-to-end tests of the CLI, the store,
the analysis and the report (hyperfine's mock executor; docs/style.md #8).

It fabricates the same agent records the real agents write — 10 Hz samples, messages,
handshake phases, operations, in the agents' vocabulary (agents/vocabulary.py) — from a
seeded generator, and pushes them through the same ``collect`` step (which checks them
against that vocabulary). Nothing it produces is a measurement: runs are marked ``simulated`` in
``details_json`` and the broker version reads ``simulated``. Selected only by the hidden
``run --simulate`` flag.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from iotsecbench.agents.vocabulary import shared_fields
from iotsecbench.runner.collect import build_outcome
from iotsecbench.runner.outcome import ExperimentContext, ProgressCallback, RunOutcome
from iotsecbench.runner.rows import utc_now
from iotsecbench.security import resolve_configuration
from iotsecbench.spec.matrix import PlannedRun

SAMPLE_NS = 100_000_000


class SimulatedExecutor:
    """Synthetic, reproducible runs: same seed and run id, same numbers."""

    def execute(
        self, run: PlannedRun, context: ExperimentContext, on_progress: ProgressCallback
    ) -> RunOutcome:
        seed = zlib.crc32(f"{context.spec.seed}/{run.run_id}".encode())
        security = resolve_configuration(run.cell.configuration)
        # A fleet: every device its own generator (device 0's is the single device's).
        fleet = [
            self._records(run, context, security, np.random.default_rng(seed + index))
            for index in range(context.spec.devices)
        ]
        on_progress(1.0)
        return build_outcome(
            run,
            context,
            fleet,
            status="ok",
            error=None,
            started_utc=utc_now(),
            details={"simulated": True},
        )

    def _records(
        self, run: PlannedRun, context: ExperimentContext, security: Any, rng: np.random.Generator
    ) -> dict[str, list[dict[str, Any]]]:
        spec, cell = context.spec, run.cell
        tls = security.transport != "plain"
        scheme = security.scheme
        t0 = 1_000_000_000_000
        handshake_ns = int(rng.normal(4e6 if tls else 5e5, 2e5))
        start = t0 + 300_000_000 + handshake_ns
        count = max(1, round(spec.duration_s * cell.rate_hz))
        period = round(1e9 / cell.rate_hz)
        overhead = scheme.expected_overhead_bytes(cell.payload_bytes)
        wire = cell.payload_bytes + overhead
        records: dict[str, list[dict[str, Any]]] = {"emitter": [], "receiver": []}
        emitter, receiver = records["emitter"], records["receiver"]
        phases = [("tcp_connect", 1e5)] + ([("tls_handshake", handshake_ns)] if tls else [])
        phases.append(("mqtt_connect", 3e5))
        if scheme.key_establishment:
            phases.append(("key_exchange", 1.5e6))
        clock = t0 + 200_000_000
        for phase, wall in phases:
            emitter.append(
                {
                    "type": "handshake",
                    "phase": phase,
                    "t_start_ns": clock,
                    "t_end_ns": clock + int(wall),
                    "wall_ns": int(wall),
                    "cpu_ns": int(wall * 0.6),
                    "detail": {"simulated": True},
                }
            )
            clock += int(wall)
        emitter.append({"type": "event", "t_ns": start, "kind": "publish_start", "detail": {}})
        latency = rng.gamma(4.0, 0.1e6 * (1.3 if tls else 1.0), count) + 2e5
        for seq in range(count):
            created = start + seq * period
            emitter.append(
                {
                    "type": "message",
                    "seq": seq,
                    "payload_bytes": cell.payload_bytes,
                    "wire_bytes": wire,
                    "t_created_ns": created,
                    "t_sealed_ns": created + 20_000,
                    "t_published_ns": created + 30_000,
                    "seal_cpu_ns": 20_000,
                }
            )
            emitter += [
                {"type": "operation", "t_ns": created, "primitive": p, "amount": a}
                for p, a in scheme.seal_operations(cell.payload_bytes)
            ]
            receiver.append(
                {
                    "type": "message",
                    "seq": seq,
                    "wire_bytes": wire,
                    "t_created_ns": created,
                    "t_arrived_ns": created + int(latency[seq]) - 15_000,
                    "t_delivered_ns": created + int(latency[seq]),
                    "open_cpu_ns": 15_000,
                }
            )
        end = start + count * period
        emitter.append({"type": "event", "t_ns": end, "kind": "publish_end", "detail": {}})
        per_message = wire + 40 + (29 if tls else 0)
        for agent, direction in (("emitter", "tcp_bytes_sent"), ("receiver", "tcp_bytes_received")):
            cpu = 0
            for tick in range(int((end + 500_000_000 - t0) / SAMPLE_NS)):
                t = t0 + tick * SAMPLE_NS
                delivered = int(np.clip((t - start) / period, 0, count))
                cpu += int(rng.normal(2e6, 2e5))
                sample = {"type": "sample", **dict.fromkeys(shared_fields("sample"), 0)}
                sample.update(t_ns=t, cpu_ns=cpu, rss_bytes=40 << 20)
                sample.update(tcp_segs_out=delivered, tcp_segs_in=delivered)
                sample[direction] = delivered * per_message
                records[agent].append(sample)
        emitter.append({"type": "counters", "name": "messages_sent", "value": count})
        for name, value in (
            ("messages_received", count),
            ("messages_delivered", count),
            ("duplicates", 0),
            ("auth_failures", 0),
            ("malformed", 0),
            ("replays_rejected", 0),
        ):
            receiver.append({"type": "counters", "name": name, "value": value})
        for agent in records:
            records[agent].append({"type": "counters", "name": "peak_rss_bytes", "value": 42 << 20})
        return records
