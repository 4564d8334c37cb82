"""The results schema: every table and column, defined once, with its unit and meaning.

These definitions drive the DuckDB DDL, the validation of rows handed to the store, the
Parquet export metadata and ``docs/results-format.md``. Change a table here, bump
``SCHEMA_VERSION``, add a line to the history below and a ``migrate_to_N`` step in
``store/migrations.py``.

Schema version history (newest last; the ``meta`` table of every results DB records its version):

version 1: first released layout — tables meta, experiments, runs, events, messages, samples,
           handshakes, operations.
version 2: emulated networks — runs.network (profile name; 'loopback' for older runs) and
           runs.tcp_retransmissions; table host_counters (per-host kernel counters and the
           wire's counters of each run on an emulated network).
version 3: the block-sizes study — runs.message_transport ('mqtt'|'tcp'), runs.method
           ('unidirectional'|'echo'), runs.pacing ('fixed-rate'|'saturating') and per-run
           throughput, energy and CPU per payload byte, wire bytes per payload byte and
           echo round-trip percentiles (NULL where a run has no such data).
version 4: the iotst study — table trace_groups (per traced handshake repetition and
           classification group: on-CPU, network-wait, runnable and other time, longest
           on-CPU run, trace markers) from `bench handshake --trace`.
version 5: measured energy — tables meter_traces (a power-meter trace attached to a run's
           agent and how it was aligned), meter_samples (the measured current over each of
           the agent's sample windows, beside the modelled one in samples) and meter_phases
           (measured charge per connection phase and per message) from `iotsecbench attach`.
version 6: native device agents — runs.stack (the client's TLS stack; NULL for runs from
           before the factor, which all ran on openssl), runs.stack_version, the emitter's TLS
           heap (handshake peak, steady state, peak while publishing), its program's static
           footprint (text, data, bss) and runs.achieved_rate_hz.
version 7: scale — runs.fleet_size and the fleet's figures (connect rate, session set-up and
           message latency percentiles, the broker's CPU and memory), where the run ran
           (runs.worker, runs.worker_host_json, runs.parallel_runs); device_index in events,
           messages, samples, handshakes and operations (which fleet device measured it);
           agent 'broker' in samples (the embedded broker's /proc, 10 Hz).
version 8: runs.cost_method — how a run's CPU cost was obtained ('timed', 'traced' or
           'counted'), so traced and counted runs are found by a column (earlier runs: 'traced'
           where details_json holds the trace statistics, else 'timed').
version 9: a typed handshake benchmark — table handshake_connections (one row per measured
           `bench handshake` connection: its phases, CPU, TCP counters, TLS heap, negotiated
           parameters and, traced, where its time went; `target` says where the client ran,
           runs.cost_method how the cost was taken), which replaces the benchmark's rows in
           handshakes; table handshake_groups (per connection and classification group; an
           `instructions` column for counted groups) replaces trace_groups. A benchmark's
           runs rows leave payload_bytes, rate_hz, qos and duration_s NULL: it publishes
           nothing. Older benchmarks are converted (their per-connection trace totals were
           not stored: NULL). A counted benchmark (`bench handshake --target`) stores its
           connections there too (`target`, `seed_hex`, `instructions`) and its groups'
           instructions; one counted before version 9 keeps only its runs rows (it stored
           no connections).
version 10: fleets that scale — table fleet_devices (one summary row per device of a fleet:
            messages, set-up, latency percentiles, the lab's CPU for it, reconnections; raw = 1
            where its messages, samples and operations rows are stored too: a sample of
            fleet_raw_devices devices, docs/scale.md; the worker whose fleet agent drove it).
"""

from __future__ import annotations

from iotsecbench.store.columns import ARROW_TYPES, Column, Table
from iotsecbench.store.run_columns import (
    BLOCK_COLUMNS,
    COST_COLUMNS,
    NATIVE_COLUMNS,
    SCALE_COLUMNS,
)

__all__ = [
    "ARROW_TYPES",
    "BLOCK_COLUMNS",
    "COST_COLUMNS",
    "NATIVE_COLUMNS",
    "SCALE_COLUMNS",
    "Column",
    "Table",
]

SCHEMA_VERSION = 10


def _run_id() -> Column:
    return Column("run_id", "VARCHAR", "-", "run this row belongs to (runs.run_id)", required=True)


def _agent() -> Column:
    return Column(
        "agent",
        "VARCHAR",
        "-",
        "process that measured it: 'emitter' or 'receiver' ('broker': the embedded broker's "
        "samples; 'attacker': the test suite's forger's events)",
    )


def _device_index() -> Column:
    return Column(
        "device_index",
        "INTEGER",
        "-",
        "which device of the run's fleet measured it, 0 … runs.fleet_size - 1 (0 without a "
        "fleet; NULL in runs stored before schema version 7, which had one device)",
    )


MONOTONIC = "ns (monotonic)"
MONOTONIC_NOTE = "time.monotonic_ns of the host; subtract runs.t0_ns for the run's time axis"

META = Table(
    name="meta",
    description="Facts about the results database itself, one key per row.",
    columns=(
        Column("key", "VARCHAR", "-", "'schema_version', 'created_utc' or 'created_by'"),
        Column("value", "VARCHAR", "-", "the value as text (schema_version is an integer)"),
    ),
    primary_key="key",
    order_by=("key",),
    per_run=False,
)

EXPERIMENTS = Table(
    name="experiments",
    description="One row per experiment (one experiment per results directory).",
    columns=(
        Column("experiment_id", "VARCHAR", "-", "unique id of the experiment"),
        Column("name", "VARCHAR", "-", "experiment name from the specification"),
        Column("created_utc", "VARCHAR", "ISO 8601 UTC", "when the experiment was first started"),
        Column("spec_json", "VARCHAR", "JSON", "the full, resolved experiment specification"),
        Column(
            "config_hash",
            "VARCHAR",
            "-",
            "hash of the specification's measurement-relevant part; resume requires it unchanged",
        ),
        Column("seed", "BIGINT", "-", "seed of every random choice (run order, payload bytes)"),
        Column("host_json", "VARCHAR", "JSON", "host facts: OS, kernel, CPU model, cores, memory"),
        Column(
            "versions_json",
            "VARCHAR",
            "JSON",
            "versions of iotsecbench, Python, OpenSSL, mosquitto and libraries",
        ),
    ),
    primary_key="experiment_id",
    order_by=("created_utc", "experiment_id"),
    per_run=False,
)

RUNS = Table(
    name="runs",
    description="One row per run (one cell × one repetition), written when the run ends.",
    columns=(
        Column("run_id", "VARCHAR", "-", "unique id of the run; names its run directory"),
        Column("experiment_id", "VARCHAR", "-", "experiment it belongs to", required=True),
        Column("cell_id", "VARCHAR", "-", "id of the matrix cell (same for every repetition)"),
        Column(
            "cell_label",
            "VARCHAR",
            "-",
            "human label unique per cell, e.g. 'tls1.2' or 'tls1.2 · 1024 B · 10 Hz · QoS1'",
        ),
        Column("configuration", "VARCHAR", "-", "security configuration name, e.g. 'tls1.3'"),
        Column("transport", "VARCHAR", "-", "'plain', 'tls1.2' or 'tls1.3'"),
        Column("scheme", "VARCHAR", "-", "payload scheme name, 'none' without one"),
        Column("payload_bytes", "INTEGER", "bytes", "application payload size per message"),
        Column("rate_hz", "DOUBLE", "Hz", "target publish rate"),
        Column("qos", "INTEGER", "-", "MQTT quality of service level (0, 1 or 2)"),
        Column("duration_s", "DOUBLE", "s", "planned measurement duration"),
        Column("device", "VARCHAR", "-", "device energy profile used to model current"),
        Column("repetition", "INTEGER", "-", "repetition number of this cell, from 0"),
        Column("run_order", "INTEGER", "-", "position in the experiment's interleaved run order"),
        Column(
            "status",
            "VARCHAR",
            "-",
            "'ok', 'failed' or 'interrupted'",
            allowed=("ok", "failed", "interrupted"),
            required=True,
        ),
        Column("error", "VARCHAR", "-", "one-line reason when status is not 'ok', else NULL"),
        Column("started_utc", "VARCHAR", "ISO 8601 UTC", "wall-clock start of the run"),
        Column("ended_utc", "VARCHAR", "ISO 8601 UTC", "wall-clock end of the run"),
        Column("t0_ns", "BIGINT", MONOTONIC, "origin of the run's time axis (monotonic clock)"),
        Column("broker_version", "VARCHAR", "-", "mosquitto version string"),
        Column("tls_version", "VARCHAR", "-", "negotiated TLS version, NULL without TLS"),
        Column("tls_cipher", "VARCHAR", "-", "negotiated TLS cipher suite"),
        Column("tls_group", "VARCHAR", "-", "negotiated key-exchange group, e.g. 'x25519'"),
        Column("tls_signature", "VARCHAR", "-", "negotiated signature algorithm"),
        Column("messages_sent", "BIGINT", "messages", "messages the emitter published"),
        Column("messages_received", "BIGINT", "messages", "messages the receiver got from MQTT"),
        Column(
            "messages_delivered",
            "BIGINT",
            "messages",
            "messages that passed the scheme's checks and reached the application",
        ),
        Column("messages_lost", "BIGINT", "messages", "sent but never received"),
        Column("duplicates", "BIGINT", "messages", "extra copies received (QoS redeliveries)"),
        Column("auth_failures", "BIGINT", "messages", "rejected: tag/MAC or key mismatch"),
        Column("malformed", "BIGINT", "messages", "rejected: too short or bad framing"),
        Column("replays_rejected", "BIGINT", "messages", "rejected by the replay window"),
        Column("peak_rss_emitter_bytes", "BIGINT", "bytes", "peak resident memory, emitter"),
        Column("peak_rss_receiver_bytes", "BIGINT", "bytes", "peak resident memory, receiver"),
        Column(
            "security_json",
            "VARCHAR",
            "JSON",
            "security properties of the configuration (SecurityProperties.to_dict)",
        ),
        Column(
            "provenance_json",
            "VARCHAR",
            "JSON",
            "crypto implementation provenance: library, version, native",
        ),
        Column("energy_model_version", "VARCHAR", "-", "version of the device current model"),
        Column(
            "run_dir",
            "VARCHAR",
            "path",
            "run directory relative to the results directory (POSIX separators)",
        ),
        Column(
            "details_json",
            "VARCHAR",
            "JSON",
            "anything else the runner recorded, e.g. `capture`: the run's pcapng and what it "
            "holds (`run --capture`, docs/capture.md)",
        ),
        # Version 2 (appended, so migrated and new databases have the same column order).
        Column(
            "network",
            "VARCHAR",
            "-",
            "network profile of the run: 'loopback' or an emulated network (docs/network.md)",
        ),
        Column(
            "tcp_retransmissions",
            "BIGINT",
            "segments",
            "TCP segments retransmitted by the emitter, broker and receiver hosts together "
            "(Tcp.RetransSegs of each namespace); NULL on loopback",
        ),
        # Version 3: how messages travel, and the block-sizes study's per-byte metrics.
        *BLOCK_COLUMNS,
        # Version 6: the client's TLS stack, its heap and footprint, the achieved rate.
        *NATIVE_COLUMNS,
        # Version 7: fleets and where each run ran.
        *SCALE_COLUMNS,
        # Version 8: how the run's cost was obtained (timed, traced, counted).
        *COST_COLUMNS,
    ),
    primary_key="run_id",
    order_by=("run_order", "run_id"),
    per_run=False,
)

EVENTS = Table(
    name="events",
    description="Timestamped lifecycle events of each agent (connected, subscribed, stopping…).",
    columns=(
        _run_id(),
        _agent(),
        Column("t_ns", "BIGINT", MONOTONIC, f"when it happened; {MONOTONIC_NOTE}"),
        Column(
            "kind",
            "VARCHAR",
            "-",
            "event kind, e.g. 'connected', 'first_message', 'tls_wire' (the ClientHello's "
            "size and MSS-sized segments), 'kx_rejected'",
        ),
        Column("detail_json", "VARCHAR", "JSON", "event details"),
        _device_index(),
    ),
    order_by=("run_id", "t_ns", "agent"),
)

MESSAGES = Table(
    name="messages",
    description="One row per message sequence number, with its timestamps along the path.",
    columns=(
        _run_id(),
        Column("seq", "BIGINT", "-", "message sequence number within the run, from 0"),
        Column("payload_bytes", "INTEGER", "bytes", "application payload size"),
        Column("wire_bytes", "INTEGER", "bytes", "MQTT payload size after sealing"),
        Column("t_created_ns", "BIGINT", MONOTONIC, "payload created by the emitter"),
        Column("t_sealed_ns", "BIGINT", MONOTONIC, "payload sealed by the scheme"),
        Column("t_published_ns", "BIGINT", MONOTONIC, "handed to the MQTT client"),
        Column("t_arrived_ns", "BIGINT", MONOTONIC, "arrived at the receiver's MQTT callback"),
        Column(
            "t_delivered_ns",
            "BIGINT",
            MONOTONIC,
            "opened and handed to the application; NULL when not delivered",
        ),
        Column("seal_cpu_ns", "BIGINT", "ns (thread CPU)", "CPU time spent sealing"),
        Column("open_cpu_ns", "BIGINT", "ns (thread CPU)", "CPU time spent opening"),
        Column(
            "status",
            "VARCHAR",
            "-",
            "'delivered', 'lost', 'rejected' or 'forged' (accepted by the receiver, never sent "
            "by the emitter: a forgery the scheme let through, e.g. CBC without a MAC)",
            allowed=("delivered", "lost", "rejected", "forged"),
        ),
        Column("duplicates", "INTEGER", "messages", "extra copies of this seq received"),
        _device_index(),
    ),
    order_by=("run_id", "seq"),
)

SAMPLES = Table(
    name="samples",
    description=(
        "Periodic (10 Hz) samples of each agent's counters, with the modelled device current "
        "for the window ending at t_ns."
    ),
    columns=(
        _run_id(),
        _agent(),
        Column("t_ns", "BIGINT", MONOTONIC, f"sample time; {MONOTONIC_NOTE}"),
        Column("cpu_ns", "BIGINT", "ns (process CPU)", "cumulative process CPU time"),
        Column("rss_bytes", "BIGINT", "bytes", "resident memory"),
        Column("tcp_bytes_sent", "BIGINT", "bytes", "cumulative TCP bytes sent (TCP_INFO)"),
        Column("tcp_bytes_acked", "BIGINT", "bytes", "cumulative TCP bytes acknowledged"),
        Column("tcp_bytes_received", "BIGINT", "bytes", "cumulative TCP bytes received"),
        Column("tcp_segs_out", "BIGINT", "segments", "cumulative TCP segments sent"),
        Column("tcp_segs_in", "BIGINT", "segments", "cumulative TCP segments received"),
        Column("tcp_retrans", "BIGINT", "segments", "cumulative TCP retransmissions"),
        Column(
            "current_ma",
            "DOUBLE",
            "mA (modelled)",
            "modelled mean device current over the window ending at t_ns — not measured",
        ),
        Column(
            "cpu_fraction", "DOUBLE", "fraction", "modelled share of the window with the CPU busy"
        ),
        Column("tx_fraction", "DOUBLE", "fraction", "modelled share of the window transmitting"),
        Column("rx_fraction", "DOUBLE", "fraction", "modelled share of the window receiving"),
        _device_index(),
    ),
    order_by=("run_id", "agent", "t_ns"),
)

HANDSHAKES = Table(
    name="handshakes",
    description="Connection set-up phases of each agent, with wall and CPU time.",
    columns=(
        _run_id(),
        _agent(),
        Column(
            "phase",
            "VARCHAR",
            "-",
            "'tcp_connect', 'tls_handshake', 'mqtt_connect' or 'key_exchange'",
            allowed=("tcp_connect", "tls_handshake", "mqtt_connect", "key_exchange"),
        ),
        Column("t_start_ns", "BIGINT", MONOTONIC, "phase start"),
        Column("t_end_ns", "BIGINT", MONOTONIC, "phase end"),
        Column("wall_ns", "BIGINT", "ns", "elapsed wall time of the phase"),
        Column("cpu_ns", "BIGINT", "ns (thread CPU)", "CPU time the agent spent in the phase"),
        Column("detail_json", "VARCHAR", "JSON", "phase details, e.g. negotiated parameters"),
        _device_index(),
    ),
    order_by=("run_id", "agent", "t_start_ns"),
)

OPERATIONS = Table(
    name="operations",
    description="Every cryptographic or protocol operation an agent performed (energy input).",
    columns=(
        _run_id(),
        _agent(),
        Column("t_ns", "BIGINT", MONOTONIC, "when the operation was performed"),
        Column("primitive", "VARCHAR", "-", "primitive name, e.g. 'aes-gcm', 'ecdh-p256-derive'"),
        Column(
            "amount",
            "BIGINT",
            "bytes or count",
            "bytes for bulk primitives, operation count for the others (docs/internals.md)",
        ),
        _device_index(),
    ),
    order_by=("run_id", "agent", "t_ns"),
)

HOST_COUNTERS = Table(
    name="host_counters",
    description=(
        "Counters of each host of an emulated network at the end of the run (fresh namespaces, "
        "so they are the run's totals): /proc/net/snmp and netstat, interface bytes and "
        "packets, the rate limiter's drops, and the wire's frames, drops and forwards."
    ),
    columns=(
        _run_id(),
        Column("host", "VARCHAR", "-", "'emitter', 'broker', 'receiver' or 'wire'"),
        Column(
            "source",
            "VARCHAR",
            "-",
            "'snmp', 'netstat', 'dev:IFACE', 'qdisc:IFACE', 'link:HOST.up|down' or 'wire'",
        ),
        Column("name", "VARCHAR", "-", "counter name, e.g. 'Tcp.RetransSegs', 'tx_bytes'"),
        Column("value", "BIGINT", "count or bytes", "counter value at the end of the run"),
    ),
    order_by=("run_id", "host", "source", "name"),
)

HANDSHAKE_CONNECTIONS = Table(
    name="handshake_connections",
    description=(
        "Every measured connection of `bench handshake` (TCP connect, TLS handshake, MQTT "
        "CONNECT → CONNACK), one row each; the run is one TLS profile on one CPU placement "
        "(docs/tls.md, docs/iotst.md)."
    ),
    columns=(
        _run_id(),
        Column(
            "target",
            "VARCHAR",
            "-",
            "where the client ran: NULL on this host, else the device target's name (how its "
            "cost was taken: runs.cost_method)",
        ),
        Column("repetition", "BIGINT", "-", "the configuration's measured repetition, from 0"),
        Column(
            "connection_order", "BIGINT", "-", "position in the benchmark's interleaved sequence"
        ),
        Column("t_start_ns", "BIGINT", MONOTONIC, "TCP connect started"),
        Column("tcp_connect_ns", "BIGINT", "ns", "wall time of the TCP connect"),
        Column("tcp_connect_cpu_ns", "BIGINT", "ns (thread CPU)", "client CPU in the TCP connect"),
        Column("tls_start_ns", "BIGINT", MONOTONIC, "TLS handshake started"),
        Column("tls_end_ns", "BIGINT", MONOTONIC, "TLS handshake completed"),
        Column(
            "tls_cpu_ns",
            "BIGINT",
            "ns (thread CPU)",
            "CPU time of the handshaking thread: the client's computing",
        ),
        Column(
            "tls_process_cpu_ns",
            "BIGINT",
            "ns (process CPU)",
            "CPU time of the whole client process over the handshake",
        ),
        Column("t_ready_ns", "BIGINT", MONOTONIC, "socket ready: TLS done, CONNECT sent"),
        Column("t_connack_ns", "BIGINT", MONOTONIC, "CONNACK received"),
        Column(
            "mqtt_connect_cpu_ns", "BIGINT", "ns (thread CPU)", "client CPU from ready to CONNACK"
        ),
        Column("total_cpu_ns", "BIGINT", "ns (thread CPU)", "client CPU from connect to CONNACK"),
        Column("tcp_bytes_sent", "BIGINT", "bytes", "TCP payload bytes sent in the handshake"),
        Column("tcp_bytes_received", "BIGINT", "bytes", "TCP payload bytes received in it"),
        Column("tcp_segments_out", "BIGINT", "segments", "TCP segments sent (ACKs included)"),
        Column("tcp_segments_in", "BIGINT", "segments", "TCP segments received"),
        Column("tcp_retransmissions", "BIGINT", "segments", "segments the client retransmitted"),
        Column("tcp_mss", "BIGINT", "bytes", "the connection's send MSS after the handshake"),
        Column("local_port", "BIGINT", "-", "the client's TCP port"),
        Column(
            "tls_heap_peak_bytes",
            "BIGINT",
            "bytes",
            "measured on this host with the native agent's stack: most heap its TLS stack held "
            "from creating its context to the end of the handshake (allocator hooks; NULL on "
            "OpenSSL)",
        ),
        Column(
            "negotiated_json",
            "VARCHAR",
            "JSON",
            "what the handshake negotiated and its messages (security.tls.NegotiatedTls)",
        ),
        # Traced connections (runs.cost_method 'traced'; NULL otherwise): analysis.iotst's
        # classification.
        Column("trace_wall_ns", "BIGINT", "ns", "traced: first marker to CONNACK"),
        Column("on_cpu_ns", "BIGINT", "ns", "traced: client thread on a CPU (markers included)"),
        Column(
            "marker_cost_ns",
            "BIGINT",
            "ns",
            "traced: the trace markers' own CPU cost, subtracted from on_cpu_ns to give the "
            "network-invariant cost",
        ),
        Column("network_wait_ns", "BIGINT", "ns", "traced: asleep until a packet woke it"),
        Column("runnable_ns", "BIGINT", "ns", "traced: runnable but not running (preempted)"),
        Column("other_ns", "BIGINT", "ns", "traced: off-CPU for anything else"),
        Column("packets_received", "BIGINT", "packets", "traced: packets the client received"),
        Column("packets_sent", "BIGINT", "packets", "traced: packets the client sent"),
        Column(
            "trace_retransmissions", "BIGINT", "segments", "traced: retransmissions in the trace"
        ),
        Column(
            "idle_fraction_json",
            "VARCHAR",
            "JSON",
            "traced: per CPU, the share of the repetition it was idle",
        ),
        Column("trace_problems_json", "VARCHAR", "JSON", "traced: what the classifier doubted"),
        # Counted connections (runs.cost_method 'counted', `target` set; NULL otherwise):
        # analysis.counted's groups summed (docs/device-client.md).
        Column(
            "seed_hex",
            "VARCHAR",
            "-",
            "counted: the repetition's seed (the device's and the broker's randomness)",
        ),
        Column(
            "instructions",
            "BIGINT",
            "instructions",
            "counted: the client's own instructions from the first handshake mark to the "
            "CONNACK, the network-invariant cost",
        ),
        Column(
            "wait_instructions",
            "BIGINT",
            "instructions",
            "counted: instructions spent polling for bytes not yet there (the network wait)",
        ),
    ),
    order_by=("run_id", "repetition"),
)

HANDSHAKE_GROUPS = Table(
    name="handshake_groups",
    description=(
        "Where each benchmark connection's time went, per classification group (TCP connect, "
        "each handshake message written or read, MQTT CONNECT; docs/iotst.md): the client "
        "thread's time per state from a scheduler trace (runs.cost_method 'traced'), or its "
        "instructions counted on a virtual MCU ('counted'; docs/device-client.md)."
    ),
    columns=(
        _run_id(),
        Column(
            "repetition",
            "BIGINT",
            "-",
            "the connection (handshake_connections.repetition of the same run)",
        ),
        Column(
            "group_name", "VARCHAR", "-", "classification group, e.g. 'CERT_CHAIN', 'TCP_CONNECT'"
        ),
        Column("position", "BIGINT", "-", "order in which the group first occurred"),
        Column("on_cpu_ns", "BIGINT", "ns", "client thread on a CPU (trace markers included)"),
        Column(
            "network_wait_ns", "BIGINT", "ns", "client asleep until a packet arrived and woke it"
        ),
        Column("runnable_ns", "BIGINT", "ns", "client runnable but not running (preempted)"),
        Column("other_ns", "BIGINT", "ns", "client off-CPU for anything else"),
        Column("longest_run_ns", "BIGINT", "ns", "longest uninterrupted on-CPU stretch"),
        Column("markers", "BIGINT", "count", "trace markers written in the group"),
        Column(
            "instructions",
            "BIGINT",
            "instructions",
            "instructions the client executed in the group when they were counted (a device "
            "target under emulation); NULL when the group was timed",
        ),
        Column(
            "primitive_instructions_json",
            "VARCHAR",
            "JSON",
            "of those, the instructions inside each library primitive (counted groups)",
        ),
        Column(
            "wait_instructions",
            "BIGINT",
            "instructions",
            "counted: instructions spent polling for bytes not yet there in the group",
        ),
        Column(
            "io_instructions",
            "BIGINT",
            "instructions",
            "counted: instructions moving bytes through the emulated UART in the group",
        ),
    ),
    order_by=("run_id", "repetition", "position"),
)

MEASURED = "mA (measured)"

METER_TRACES = Table(
    name="meter_traces",
    description=(
        "Power-meter traces attached to a run (`iotsecbench attach`, docs/meters.md): one per "
        "run and agent whose device the meter watched, with how the run was placed in it."
    ),
    columns=(
        _run_id(),
        _agent(),
        Column("file", "VARCHAR", "path", "the trace file as given to attach"),
        Column("sha256", "VARCHAR", "-", "SHA-256 of the trace file (names it in calibrations)"),
        Column("format", "VARCHAR", "-", "meter format (docs/meters.md), e.g. ppk2, jls, otii"),
        Column("samples", "BIGINT", "samples", "samples in the whole trace"),
        Column("rate_hz", "DOUBLE", "Hz", "the meter's sample rate (median interval)"),
        Column("trace_duration_s", "DOUBLE", "s", "first to last sample of the trace"),
        Column(
            "method",
            "VARCHAR",
            "-",
            "how the run was placed in the trace: 'sync', 'offset' or 'correlation'",
            allowed=("sync", "offset", "correlation"),
        ),
        Column(
            "offset_s",
            "DOUBLE",
            "s",
            "trace time (from its first sample) minus run time, at run time anchor_s; "
            "trace time = anchor_s + offset_s + clock_ratio x (run time - anchor_s)",
        ),
        Column("anchor_s", "DOUBLE", "s", "run time (from runs.t0_ns) at which offset_s holds"),
        Column("clock_ratio", "DOUBLE", "-", "meter clock / host clock (sync), else 1"),
        Column("correlation", "DOUBLE", "-", "Pearson r with the modelled current (correlation)"),
        Column("detail", "VARCHAR", "-", "what the alignment found, in words"),
        Column("voltage_v", "DOUBLE", "V", "mean supply voltage over the run (trace or --voltage)"),
        Column(
            "voltage_source",
            "VARCHAR",
            "-",
            "'measured' (the trace's voltage), 'given' (attach --voltage) or NULL (none)",
            allowed=("measured", "given"),
        ),
        Column("charge_mc", "DOUBLE", "mC (measured)", "charge over the agent's sample windows"),
        Column("mean_current_ma", "DOUBLE", MEASURED, "charge_mc over the sample windows' length"),
        Column("attached_utc", "VARCHAR", "ISO 8601 UTC", "when the trace was attached"),
    ),
    order_by=("run_id", "agent"),
)

METER_SAMPLES = Table(
    name="meter_samples",
    description=(
        "Measured device current over each sample window of the agent (the window ending at "
        "t_ns, as in samples), integrated at the meter's full rate — never mixed with the "
        "modelled samples.current_ma."
    ),
    columns=(
        _run_id(),
        _agent(),
        Column(
            "t_ns", "BIGINT", MONOTONIC, f"end of the window (= samples.t_ns); {MONOTONIC_NOTE}"
        ),
        Column("window_s", "DOUBLE", "s", "length of the window (host clock)"),
        Column("current_ma", "DOUBLE", MEASURED, "mean measured current over the window"),
    ),
    order_by=("run_id", "agent", "t_ns"),
)

METER_PHASES = Table(
    name="meter_phases",
    description=(
        "Measured charge (and energy, with a voltage) of each connection phase, of publishing "
        "as a whole and of each message's window, from the aligned trace at full rate."
    ),
    columns=(
        _run_id(),
        _agent(),
        Column(
            "phase",
            "VARCHAR",
            "-",
            "'tcp_connect', 'tls_handshake', 'mqtt_connect', 'key_exchange' (handshakes), "
            "'publishing' (first message to the last) or 'message' (one message's window)",
            allowed=(
                "tcp_connect",
                "tls_handshake",
                "mqtt_connect",
                "key_exchange",
                "publishing",
                "message",
            ),
        ),
        Column("seq", "BIGINT", "-", "message sequence number ('message' rows), else NULL"),
        Column("t_start_ns", "BIGINT", MONOTONIC, "window start"),
        Column("t_end_ns", "BIGINT", MONOTONIC, "window end"),
        Column("charge_uc", "DOUBLE", "uC (measured)", "charge drawn in the window"),
        Column("mean_current_ma", "DOUBLE", MEASURED, "charge over the window's length"),
        Column("energy_uj", "DOUBLE", "uJ", "charge x meter_traces.voltage_v; NULL without one"),
    ),
    order_by=("run_id", "agent", "t_start_ns", "phase"),
)

FLEET_DEVICES = Table(
    name="fleet_devices",
    description=(
        "One row per device of a fleet (runs.fleet_size > 1): what it sent and got, its "
        "set-up, its latency percentiles and the CPU the lab spent on it, whether or not its "
        "raw rows (messages, samples, operations) were kept (docs/scale.md, 'Storage')."
    ),
    columns=(
        _run_id(),
        Column("device_index", "INTEGER", "-", "the device, from 0", required=True),
        Column(
            "raw",
            "INTEGER",
            "0/1",
            "1: the device's messages, samples and operations rows are stored (the raw sample)",
        ),
        Column("messages_sent", "BIGINT", "count", "messages its emitter published"),
        Column("messages_delivered", "BIGINT", "count", "of those, delivered to its receiver"),
        Column("messages_lost", "BIGINT", "count", "sent and not delivered"),
        Column("duplicates", "BIGINT", "count", "deliveries its receiver had already seen"),
        Column("setup_ms", "DOUBLE", "ms", "its emitter's TCP connect to CONNACK (TLS included)"),
        Column("tls_handshake_ms", "DOUBLE", "ms", "its emitter's TLS handshake; NULL: plain"),
        Column("setup_cpu_ns", "BIGINT", "ns", "CPU of its emitter's set-up phases"),
        Column("latency_p50_ms", "DOUBLE", "ms", "median created-to-delivered latency"),
        Column("latency_p99_ms", "DOUBLE", "ms", "99th percentile of the same"),
        Column("latency_max_ms", "DOUBLE", "ms", "largest of the same"),
        Column(
            "emitter_cpu_ns",
            "BIGINT",
            "ns",
            "CPU its emitter used (the fleet agent: what its process spent on this device)",
        ),
        Column("receiver_cpu_ns", "BIGINT", "ns", "the same for its receiver"),
        Column("reconnections", "BIGINT", "count", "reconnections after a cut (a storm)"),
        Column("reconnect_ms", "DOUBLE", "ms", "its last reconnection, connect to CONNACK"),
        Column("reconnect_resumed", "BIGINT", "count", "reconnections that resumed a session"),
        Column(
            "worker",
            "VARCHAR",
            "-",
            "whose fleet agent drove it: a Dask worker's address (--split-fleet), 'local' "
            "(this machine), NULL for the per-device agents",
        ),
    ),
    order_by=("run_id", "device_index"),
)

# Creation order; readers and exporters walk tables in this order.
TABLES: dict[str, Table] = {
    table.name: table
    for table in (
        META,
        EXPERIMENTS,
        RUNS,
        EVENTS,
        MESSAGES,
        SAMPLES,
        HANDSHAKES,
        OPERATIONS,
        HOST_COUNTERS,
        HANDSHAKE_CONNECTIONS,
        HANDSHAKE_GROUPS,
        METER_TRACES,
        METER_SAMPLES,
        METER_PHASES,
        FLEET_DEVICES,
    )
}

# Tables whose rows write_run replaces as a whole for one run.
PER_RUN_TABLES: tuple[str, ...] = tuple(name for name, table in TABLES.items() if table.per_run)

# Tables exported to Parquet and readable with read.table (meta is internal).
DATA_TABLES: tuple[str, ...] = tuple(name for name in TABLES if name != "meta")
