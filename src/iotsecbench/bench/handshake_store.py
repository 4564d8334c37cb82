"""``bench handshake``'s results as a results store ``iotsecbench report`` reads.

One run per configuration (a TLS profile on one CPU placement): its ``runs`` row from the
one builder of runs rows (``runner.rows``; the benchmark's per-configuration statistics in
``details_json``, as ``--json`` writes them), every measured connection one
``handshake_connections`` row and, traced, its classification groups ``handshake_groups``
rows — each built here from the typed ``HandshakeSample`` it measured. Every run is written
as the runner writes one: its record file first, then one transaction.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from iotsecbench.bench.handshake import HandshakeBenchmark, HandshakeSample, ProfileResult
from iotsecbench.runner.rows import experiment_row, run_row, tls_facts, utc_now
from iotsecbench.spec.bench import HandshakeBenchmarkSpec
from iotsecbench.store.duckdb_store import ResultsStore

EXPERIMENT_NAME = "bench-handshake"
# TracedRepetition.to_dict's fields and the handshake_connections columns they fill.
_TRACED = {
    "wall_ns": "trace_wall_ns",
    "on_cpu_ns": "on_cpu_ns",
    "marker_cost_ns": "marker_cost_ns",
    "network_wait_ns": "network_wait_ns",
    "runnable_ns": "runnable_ns",
    "other_ns": "other_ns",
    "packets_received": "packets_received",
    "packets_sent": "packets_sent",
    "retransmissions": "trace_retransmissions",
    "idle_fraction_per_cpu": "idle_fraction_json",
    "problems": "trace_problems_json",
}
_GROUP_COLUMNS = (
    "on_cpu_ns", "network_wait_ns", "runnable_ns", "other_ns", "longest_run_ns", "markers",
)  # fmt: skip


def cost_method_of(result: ProfileResult) -> str:
    """How the configuration's cost was taken (runs.cost_method): traced, the scheduler's
    network-invariant cost beside the clocks, or timed (the clocks and thread CPU alone)."""
    return "traced" if result.tally is not None else "timed"


def connection_row(sample: HandshakeSample) -> dict[str, Any]:
    """One ``handshake_connections`` row: the connection as measured (and, traced, where its
    time went); the run's id is the store's to add."""
    tls = sample.tls
    row: dict[str, Any] = {
        "target": None,  # the client ran on this host
        "repetition": sample.repetition,
        "connection_order": sample.order,
        "t_start_ns": sample.t_start_ns,
        "tcp_connect_ns": sample.tcp_connect_ns,
        "tcp_connect_cpu_ns": sample.tcp_connect_cpu_ns,
        "tls_start_ns": tls.t_start_ns,
        "tls_end_ns": tls.t_end_ns,
        "tls_cpu_ns": tls.thread_cpu_ns,
        "tls_process_cpu_ns": tls.process_cpu_ns,
        "t_ready_ns": sample.t_ready_ns,
        "t_connack_ns": sample.t_connack_ns,
        "mqtt_connect_cpu_ns": sample.mqtt_connect_cpu_ns,
        "total_cpu_ns": sample.total_cpu_ns,
        "tcp_bytes_sent": tls.tcp_bytes_sent,
        "tcp_bytes_received": tls.tcp_bytes_received,
        "tcp_segments_out": tls.tcp_segments_out,
        "tcp_segments_in": tls.tcp_segments_in,
        "tcp_retransmissions": tls.tcp_retransmissions,
        "tcp_mss": tls.tcp_mss,
        "local_port": sample.local_port,
        "tls_heap_peak_bytes": sample.tls_heap_peak_bytes,
        "negotiated_json": sample.negotiated,
    }
    trace = sample.trace or {}
    row.update({column: trace.get(key) for key, column in _TRACED.items()})
    return row


def group_rows(sample: HandshakeSample) -> list[dict[str, Any]]:
    """The ``handshake_groups`` rows of a traced connection, in the order the groups first
    occurred (none for an untraced one)."""
    if sample.trace is None:
        return []
    return [
        {
            "repetition": sample.repetition,
            "group_name": name,
            "position": position,
            **{column: group[column] for column in _GROUP_COLUMNS},
        }
        for position, (name, group) in enumerate(sample.trace["groups"].items())
    ]


def slug(name: str) -> str:
    """A name as a run id's part (profiles hold slashes)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def store_experiment(
    store: ResultsStore,
    bench: Any,
    spec: HandshakeBenchmarkSpec | None,
    broker_version: str | None,
) -> str:
    """The benchmark's ``experiments`` row (either method's ``bench``: its results and
    settings): the settings as given (``spec``) with what was done; returns its id."""
    document = {
        "name": EXPERIMENT_NAME,
        **(spec.model_dump(mode="json") if spec is not None else {}),
        "profiles": [r.name for r in bench.results],
        **bench.settings,
    }
    canonical = json.dumps(document, sort_keys=True, default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return store.ensure_experiment(
        experiment_row(
            experiment_id=f"{EXPERIMENT_NAME}-{digest[:8]}",
            name=EXPERIMENT_NAME,
            spec_json=canonical,
            config_hash=digest[:16],
            seed=bench.settings.get("seed"),
            broker_version=broker_version,
        ),
        resume=False,
    )


def configuration_run(
    index: int,
    experiment_id: str,
    started: str,
    name: str,
    configuration: str,
    *,
    profile: dict[str, Any] | None,
    summary: dict[str, Any],
    cost_method: str,
    network: str | None,
    stack: str,
    broker_version: str | None,
    t0_ns: int | None,
    device: str | None,
    negotiated: dict[str, Any] | None,
    cell: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The ``runs`` row of one benchmark configuration (either method's): the ``index``-th,
    ``name`` (``configuration``, a TLS profile or plain, on a CPU placement), all its
    connections in one run; its statistics (``summary``) in ``details_json`` as ``--json``
    writes them; ``cell``: its id and label when not the name."""
    run_id = f"handshake-{index:02d}-{slug(name)}"
    cell_id, cell_label = cell or (slug(name), name)
    return run_row(
        run_id=run_id,
        experiment_id=experiment_id,
        cell_id=cell_id,
        cell_label=cell_label,
        configuration=configuration,
        status="ok",
        error=None,
        started_utc=started,
        run_order=index,
        repetition=0,  # one run of the configuration, its connections inside
        network=network or "loopback",
        stack=stack,
        broker_version=broker_version,
        run_dir=f"runs/{run_id}",
        cost_method=cost_method,
        details={"benchmark": "handshake", "tls_profile": profile, **summary},
        t0_ns=t0_ns,
        device=device,
        **tls_facts(negotiated),
    )


def store_results(
    bench: HandshakeBenchmark, results_dir: Path, spec: HandshakeBenchmarkSpec | None = None
) -> Path:
    """Write the benchmark into ``results_dir`` (module docstring); ``spec``: the settings it
    was run with (stored as the experiment's specification with what was done)."""
    results_dir = Path(results_dir)
    started = utc_now()
    with ResultsStore.open(results_dir) as store:
        experiment_id = store_experiment(
            store, bench, spec, bench.results[0].broker_version or None
        )
        for index, result in enumerate(bench.results):
            first = result.samples[0] if result.samples else None
            run = configuration_run(
                index, experiment_id, started, result.name, result.profile.name,
                profile=result.profile.to_dict(), summary=result.summary(),
                cost_method=cost_method_of(result), network=bench.settings.get("network"),
                stack=bench.settings.get("stack", "openssl"),
                broker_version=result.broker_version or None,
                t0_ns=first.t_start_ns if first else None,
                device=(bench.settings.get("trace") or {}).get("device"),
                negotiated=first.negotiated if first else None,
            )  # fmt: skip
            store.write_run(
                run,
                {
                    "handshake_connections": [connection_row(sample) for sample in result.samples],
                    "handshake_groups": [
                        row for sample in result.samples for row in group_rows(sample)
                    ],
                },
                results_dir / run["run_dir"],
            )
    return results_dir
