"""The groups of `runs` columns later schema versions added (store/schema.py), each in the order
its migration adds them."""

from __future__ import annotations

from iotsecbench.store.columns import Column

# Version 3 columns of `runs` (migrations.migrate_to_3 adds them, in this order).
BLOCK_COLUMNS = (
    Column(
        "message_transport",
        "VARCHAR",
        "-",
        "how messages travel: 'mqtt' (through the broker) or 'tcp' (emitter -> receiver)",
        allowed=("mqtt", "tcp"),
    ),
    Column(
        "method",
        "VARCHAR",
        "-",
        "'unidirectional', or 'echo' (the receiver returns every block resealed)",
        allowed=("unidirectional", "echo"),
    ),
    Column(
        "pacing",
        "VARCHAR",
        "-",
        "'fixed-rate' (rate_hz) or 'saturating' (as fast as possible for duration_s)",
        allowed=("fixed-rate", "saturating"),
    ),
    Column(
        "payload_bytes_delivered",
        "BIGINT",
        "bytes",
        "application payload delivered to the receiver (frame and crypto headers excluded)",
    ),
    Column(
        "throughput_kib_s",
        "DOUBLE",
        "KiB/s",
        "payload_bytes_delivered / (first creation -> last delivery) / 1024",
    ),
    Column(
        "wire_bytes_per_payload_byte",
        "DOUBLE",
        "-",
        "bytes the emitter's messages took (frame or MQTT payload) per payload byte",
    ),
    Column(
        "energy_emitter_j",
        "DOUBLE",
        "J",
        "modelled device energy of the emitter over its samples: V x sum(I x dt)",
    ),
    Column(
        "energy_receiver_j",
        "DOUBLE",
        "J",
        "modelled device energy of the receiver over its samples: V x sum(I x dt)",
    ),
    Column(
        "energy_per_byte_emitter_uj",
        "DOUBLE",
        "uJ/B",
        "modelled: 1e6 x energy_emitter_j / payload_bytes_delivered",
    ),
    Column(
        "energy_per_byte_receiver_uj",
        "DOUBLE",
        "uJ/B",
        "modelled: 1e6 x energy_receiver_j / payload_bytes_delivered",
    ),
    Column(
        "cpu_per_byte_emitter_us",
        "DOUBLE",
        "us/B",
        "measured on this host: emitter process CPU time / payload_bytes_delivered",
    ),
    Column(
        "cpu_per_byte_receiver_us",
        "DOUBLE",
        "us/B",
        "measured on this host: receiver process CPU time / payload_bytes_delivered",
    ),
    Column("echoes", "BIGINT", "messages", "blocks returned and verified (method 'echo')"),
    Column("echo_rtt_p50_ms", "DOUBLE", "ms", "echo round trip, median (created -> returned)"),
    Column("echo_rtt_p90_ms", "DOUBLE", "ms", "echo round trip, 90th percentile"),
    Column("echo_rtt_p99_ms", "DOUBLE", "ms", "echo round trip, 99th percentile"),
)

# Version 6 columns of `runs` (migrations.migrate_to_6 adds them, in this order).
NATIVE_COLUMNS = (
    Column(
        "stack",
        "VARCHAR",
        "-",
        "the client's TLS stack: 'openssl' (Python agents on the system's OpenSSL), "
        "'openssl-3.5' (Python agents and broker on OpenSSL 3.5.5) or 'mbedtls'/'wolfssl' "
        "(native agent on Debian's library) or 'wolfssl-5.9' (native agent on wolfSSL 5.9.4 "
        "built from source, broker on OpenSSL 3.5.5); NULL for runs made before the stack "
        "factor existed (openssl)",
        allowed=("openssl", "openssl-3.5", "mbedtls", "wolfssl", "wolfssl-5.9"),
    ),
    Column("stack_version", "VARCHAR", "-", "version of the client's TLS library"),
    Column(
        "tls_heap_handshake_peak_bytes",
        "BIGINT",
        "bytes",
        "measured on this host with the native agent's stack: most heap the emitter's TLS "
        "stack held at once from creating its context to the end of the handshake "
        "(allocator hooks; NULL on openssl and plain runs)",
    ),
    Column(
        "tls_heap_steady_bytes",
        "BIGINT",
        "bytes",
        "measured on this host with the native agent's stack: heap the emitter's stack "
        "library held while publishing, for its TLS and payload scheme (at the end of the "
        "run, before closing; NULL on openssl and plain runs)",
    ),
    Column(
        "tls_heap_publishing_peak_bytes",
        "BIGINT",
        "bytes",
        "measured on this host with the native agent's stack: most heap the emitter's stack "
        "library held at once after the handshake and the payload key exchange",
    ),
    Column(
        "footprint_text_bytes",
        "BIGINT",
        "bytes",
        "static footprint of the native emitter's program (x86-64 `size`): code and constants",
    ),
    Column(
        "footprint_data_bytes",
        "BIGINT",
        "bytes",
        "static footprint of the native emitter's program: initialised data",
    ),
    Column(
        "footprint_bss_bytes",
        "BIGINT",
        "bytes",
        "static footprint of the native emitter's program: zero-initialised data",
    ),
    Column(
        "achieved_rate_hz",
        "DOUBLE",
        "Hz",
        "messages the emitter published per second: (messages - 1) / (last - first creation)",
    ),
)

# Version 7 columns of `runs` (migrations.migrate_to_7 adds them, in this order).
SCALE_COLUMNS = (
    Column(
        "fleet_size",
        "BIGINT",
        "devices",
        "emitting devices in the run, each with its own connection, credentials and keys "
        "(`devices`; 1 without a fleet, NULL for runs stored before schema version 7)",
    ),
    Column(
        "connect_rate_hz",
        "DOUBLE",
        "devices/s",
        "fleet: devices that completed their session set-up per second, (devices - 1) / "
        "(last - first completion); NULL for one device",
    ),
    Column(
        "setup_p50_ms",
        "DOUBLE",
        "ms",
        "session set-up per device (TCP connect to MQTT CONNACK, TLS included), median across "
        "the fleet's emitters",
    ),
    Column("setup_p99_ms", "DOUBLE", "ms", "session set-up per device, 99th percentile"),
    Column(
        "latency_p50_ms",
        "DOUBLE",
        "ms",
        "message latency (created to delivered), median over every delivered message of "
        "every device",
    ),
    Column("latency_p99_ms", "DOUBLE", "ms", "message latency, 99th percentile"),
    Column(
        "broker_cpu_mean_percent",
        "DOUBLE",
        "% of one CPU",
        "the embedded broker's CPU use from its first to its last sample (/proc at 10 Hz); "
        "NULL with an external broker",
    ),
    Column(
        "broker_cpu_peak_percent",
        "DOUBLE",
        "% of one CPU",
        "the embedded broker's CPU use in its busiest 100 ms window",
    ),
    Column(
        "broker_rss_peak_bytes", "BIGINT", "bytes", "the embedded broker's peak resident memory"
    ),
    Column(
        "worker",
        "VARCHAR",
        "-",
        "where the run ran: 'local' (the machine of `run`) or a Dask worker's address "
        "(`--executor dask`); the analysis can block on it",
    ),
    Column(
        "worker_host_json",
        "VARCHAR",
        "JSON",
        "the worker machine's facts (CPU, kernel, load); NULL for 'local' (see "
        "experiments.host_json)",
    ),
    Column(
        "parallel_runs",
        "BIGINT",
        "runs",
        "runs the worker's machine could execute at the same time (1: in sequence, the "
        "default; more only with --dask-workers)",
    ),
)

# Version 8 column of `runs` (migrations.migrate_to_8 adds it): how the run's cost was
# obtained, so readers find traced (and counted) runs by it rather than in details_json.
COST_METHODS = ("timed", "traced", "counted")
COST_COLUMNS = (
    Column(
        "cost_method",
        "VARCHAR",
        "-",
        "how the run's CPU cost was obtained: 'timed' (process and thread CPU time on this "
        "host: the agents' samples), 'traced' (scheduler traces on this host, the "
        "network-invariant cost: `bench handshake --trace`, docs/iotst.md) or 'counted' "
        "(instructions counted on a virtual microcontroller, docs/virtual-mcu.md)",
        allowed=COST_METHODS,
    ),
)
