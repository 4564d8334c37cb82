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
from iotsecbench.bench.handshake_store import configuration_run, slug, store_experiment
from iotsecbench.runner.rows import utc_now
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
            first = result.samples[0].connection if result.samples else None
            run = configuration_run(
                index, experiment_id, started, result.name, result.name,
                profile=result.profile.to_dict() if result.profile else None,
                summary=result.summary(),
                cost_method=COUNTED,  # instructions on a virtual MCU, not CPU time
                network=bench.settings.get("network"), stack=result.stack,
                broker_version=result.broker_version or None,
                t0_ns=first.t_start_ns if first else None, device=result.device.name,
                negotiated=first.negotiated if first else None,
                cell=(slug(f"{result.name}-{result.target}"), f"{result.name} [{result.method}]"),
            )  # fmt: skip
            store.write_run(
                run,
                {
                    "handshake_connections": [
                        counted_connection_row(sample, result.target) for sample in result.samples
                    ],
                    "handshake_groups": [
                        row for sample in result.samples for row in counted_group_rows(sample)
                    ],
                },
                results_dir / run["run_dir"],
            )
    return results_dir
