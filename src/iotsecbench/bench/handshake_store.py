"""``bench handshake``'s results as a results store ``iotsecbench report`` reads: one ``runs``
row per profile (statistics and negotiated parameters in ``details_json``), per measured
connection its three phases in ``handshakes`` and, traced, its groups in ``trace_groups``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from iotsecbench.bench.handshake import HandshakeBenchmark, HandshakeSample, ProfileResult
from iotsecbench.measure.host import host_facts, software_versions
from iotsecbench.runner.collect import TLS_FACTS, collect


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def _handshake_records(sample: HandshakeSample) -> list[dict[str, Any]]:
    """One connection's three phases as the agents record them (``agents.records``), so the
    runner's ``collect`` turns them into ``handshakes`` rows."""
    common = {"repetition": sample.repetition, "order": sample.order}
    phases = [
        ("tcp_connect", sample.t_start_ns, sample.t_start_ns + sample.tcp_connect_ns,
         sample.tcp_connect_cpu_ns, common),
        ("tls_handshake", sample.tls.t_start_ns, sample.tls.t_end_ns, sample.tls.thread_cpu_ns,
         {**common, **sample.tls.to_dict(), "negotiated": sample.negotiated,
          **({} if sample.tls_heap_peak_bytes is None
             else {"tls_heap_peak_bytes": sample.tls_heap_peak_bytes})}),
        ("mqtt_connect", sample.t_ready_ns, sample.t_connack_ns, sample.mqtt_connect_cpu_ns,
         {**common, "cpu_scope": "thread (no network thread)"}),
    ]  # fmt: skip
    return [
        {"type": "handshake", "phase": phase, "t_start_ns": start, "t_end_ns": end,
         "wall_ns": end - start, "cpu_ns": cpu, "detail": detail}
        for phase, start, end, cpu, detail in phases
    ]  # fmt: skip


def _trace_rows(result: ProfileResult) -> list[dict[str, Any]]:
    """``trace_groups`` rows of a traced configuration (none without --trace)."""
    rows = []
    for sample in result.samples:
        if sample.trace is None:
            continue
        for position, (name, group) in enumerate(sample.trace["groups"].items()):
            rows.append(
                {
                    "repetition": sample.repetition,
                    "group_name": name,
                    "position": position,
                    **{key: group[key] for key in TRACE_GROUP_COLUMNS},
                }
            )
    return rows


TRACE_GROUP_COLUMNS = (
    "on_cpu_ns", "network_wait_ns", "runnable_ns", "other_ns", "longest_run_ns", "markers",
)  # fmt: skip


def store_results(bench: HandshakeBenchmark, results_dir: Path) -> Path:
    """Write the benchmark as a results store ``iotsecbench report`` reads: one ``runs`` row
    per profile (statistics and negotiated parameters in ``details_json``) and, per measured
    connection, its ``tcp_connect``, ``tls_handshake`` and ``mqtt_connect`` phases in
    ``handshakes`` (agent ``emitter``: the benchmark's client is the device)."""
    import datetime
    import hashlib
    import uuid

    from iotsecbench.store.duckdb_store import ResultsStore

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    spec = {
        "name": "bench-handshake",
        "profiles": [r.name for r in bench.results],
        **bench.settings,
    }
    canonical = json.dumps(spec, sort_keys=True)
    with ResultsStore.open(results_dir) as store:
        experiment_id = store.ensure_experiment(
            {
                "experiment_id": f"bench-handshake-{uuid.uuid4().hex[:8]}",
                "name": "bench-handshake",
                "created_utc": now,
                "spec_json": spec,
                "config_hash": hashlib.sha256(canonical.encode()).hexdigest()[:16],
                "seed": bench.settings.get("seed"),
                "host_json": host_facts(),
                "versions_json": software_versions(bench.results[0].broker_version or None),
            },
            resume=False,
        )
        for index, result in enumerate(bench.results):
            run_id = f"handshake-{index:02d}-{_slug(result.name)}"
            summary = result.summary()
            run_dir = results_dir / "runs" / run_id
            run_dir.mkdir(parents=True, exist_ok=True)
            records = [{"type": "negotiated", **sample.negotiated} for sample in result.samples[:1]]
            for sample in result.samples:
                records += _handshake_records(sample)
            facts, tables = collect(run_id, {"emitter": records}, payload_bytes=0, device=None)
            store.write_run(
                {
                    "run_id": run_id,
                    "experiment_id": experiment_id,
                    "cell_id": _slug(result.name),
                    "cell_label": result.name,
                    "configuration": f"tls{result.profile.version}",
                    "transport": f"tls{result.profile.version}",
                    "scheme": "none",
                    "payload_bytes": 0,
                    "rate_hz": 0.0,
                    "qos": 0,
                    "duration_s": 0.0,
                    "repetition": 0,
                    "run_order": index,
                    "status": "ok",
                    "started_utc": now,
                    "ended_utc": now,
                    "t0_ns": result.samples[0].t_start_ns if result.samples else None,
                    # Traced: the scheduler's network-invariant cost is in details_json.
                    "cost_method": "traced" if result.tally is not None else "timed",
                    "broker_version": result.broker_version,
                    **{key: facts[key] for key in TLS_FACTS},
                    "details_json": {
                        "benchmark": "handshake",
                        "tls_profile": result.profile.to_dict(),
                        **summary,
                    },
                },
                {"handshakes": tables["handshakes"], "trace_groups": _trace_rows(result)},
                run_dir,
            )
    return results_dir
