"""The counted handshake benchmark (``bench.device``) as a results store ``iotsecbench report``
reads, through the same row builders as the traced method (``runner.rows``,
``bench.handshake_store``): one run per profile with ``runs.cost_method`` 'counted' (its
statistics, groups, memory, footprint and device model in ``details_json``, as ``--json``
writes them), every counted connection one ``handshake_connections`` row with ``target`` the
virtual MCU, and its groups ``handshake_groups`` rows with their instructions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from iotsecbench.bench.device import COUNTED, CountedBenchmark, CountedSample
from iotsecbench.bench.handshake_store import slug, store_experiment
from iotsecbench.runner.rows import run_row, tls_facts, utc_now
from iotsecbench.spec.bench import HandshakeBenchmarkSpec
from iotsecbench.store.duckdb_store import ResultsStore

_TCP = ("tcp_bytes_sent", "tcp_bytes_received", "tcp_segments_out", "tcp_segments_in",
        "tcp_retransmissions")  # fmt: skip


def counted_connection_row(sample: CountedSample, target: str) -> dict[str, Any]:
    """One ``handshake_connections`` row of a connection counted on ``target``: the bridge's
    clock and TCP counters (the broker side's), what was negotiated, the TLS heap's peak and
    the repetition's seed; the thread-CPU columns stay NULL (its cost is in instructions)."""
    connection = sample.connection
    return {
        "target": target,
        "repetition": sample.repetition,
        "connection_order": sample.order,
        "seed_hex": sample.seed_hex,
        "t_start_ns": connection.t_start_ns,
        "tcp_connect_ns": connection.tcp_connect_ns,
        "t_connack_ns": connection.t_connack_ns,
        **{key: connection.tcp.get(key) for key in _TCP},
        "tls_heap_peak_bytes": connection.counters.get("tls_heap_handshake_peak_bytes"),
        "negotiated_json": connection.negotiated,
        "instructions": connection.counted.invariant_instructions,
        "wait_instructions": connection.counted.wait_instructions,
    }


def counted_group_rows(sample: CountedSample) -> list[dict[str, Any]]:
    """The ``handshake_groups`` rows of a counted connection, in handshake order."""
    return [
        {
            "repetition": sample.repetition,
            "group_name": name,
            "position": position,
            "instructions": group.client,
            "wait_instructions": group.wait,
            "io_instructions": group.io,
            "primitive_instructions_json": json.dumps(group.primitives),
        }
        for position, (name, group) in enumerate(sample.connection.counted.groups.items())
    ]


def store_counted(
    bench: CountedBenchmark, results_dir: Path, spec: HandshakeBenchmarkSpec | None = None
) -> Path:
    """Write ``bench`` into ``results_dir`` (a new results store); ``spec``: the settings it was
    run with."""
    results_dir = Path(results_dir)
    started = utc_now()
    broker_version = bench.results[0].broker_version or None
    with ResultsStore.open(results_dir) as store:
        experiment_id = store_experiment(store, bench, spec, broker_version)
        for index, result in enumerate(bench.results):
            run_id = f"handshake-{index:02d}-{slug(result.name)}"
            first = result.samples[0].connection if result.samples else None
            store.write_run(
                run_row(
                    run_id=run_id,
                    experiment_id=experiment_id,
                    cell_id=slug(f"{result.name}-{result.target}"),
                    cell_label=f"{result.name} [{result.method}]",
                    configuration=result.name,
                    status="ok",
                    error=None,
                    started_utc=started,
                    run_order=index,
                    repetition=0,  # one run of the configuration, its connections inside
                    network=bench.settings.get("network", "loopback"),
                    stack=result.stack,
                    broker_version=result.broker_version or None,
                    run_dir=f"runs/{run_id}",
                    cost_method=COUNTED,  # instructions on a virtual MCU, not CPU time
                    details={
                        "benchmark": "handshake",
                        "tls_profile": result.profile.to_dict() if result.profile else None,
                        **result.summary(),
                    },
                    t0_ns=first.t_start_ns if first is not None else None,
                    device=result.device.name,
                    **tls_facts(first.negotiated if first is not None else None),
                ),
                {
                    "handshake_connections": [
                        counted_connection_row(sample, result.target) for sample in result.samples
                    ],
                    "handshake_groups": [
                        row for sample in result.samples for row in counted_group_rows(sample)
                    ],
                },
                results_dir / "runs" / run_id,
            )
    return results_dir
