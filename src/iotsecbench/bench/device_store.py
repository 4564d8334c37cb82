"""The counted handshake benchmark (``bench.device``) as a results store ``iotsecbench report``
reads: one ``runs`` row per profile, its statistics, groups, memory, footprint and device model
in ``details_json`` with ``method`` = "counted on <target>", beside the traced method's."""

from __future__ import annotations

import datetime
import hashlib
import json
import uuid
from pathlib import Path

from iotsecbench.bench.device import CountedBenchmark
from iotsecbench.bench.handshake_store import _slug
from iotsecbench.measure.host import host_facts, software_versions


def store_counted(bench: CountedBenchmark, results_dir: Path) -> Path:
    """Write ``bench`` into ``results_dir`` (a new results store)."""
    from iotsecbench.store.duckdb_store import ResultsStore

    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    spec = {
        "name": "bench-handshake",
        "profiles": [r.name for r in bench.results],
        **bench.settings,
    }
    canonical = json.dumps(spec, sort_keys=True, default=str)
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
            run_dir = results_dir / "runs" / run_id
            run_dir.mkdir(parents=True, exist_ok=True)
            profile = result.profile
            transport = f"tls{profile.version}" if profile is not None else "plain"
            first = result.samples[0].connection if result.samples else None
            store.write_run(
                {
                    "run_id": run_id,
                    "experiment_id": experiment_id,
                    "cell_id": _slug(f"{result.name}-{result.target}"),
                    "cell_label": f"{result.name} [{result.method}]",
                    "configuration": transport,
                    "transport": transport,
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
                    "t0_ns": first.t_start_ns if first is not None else None,
                    "broker_version": result.broker_version,
                    "stack": result.stack,
                    "cost_method": "counted",  # instructions on a virtual MCU, not CPU time
                    "details_json": {
                        "benchmark": "handshake",
                        "tls_profile": profile.to_dict() if profile is not None else None,
                        **result.summary(),
                    },
                },
                {},
                run_dir,
            )
    return results_dir
