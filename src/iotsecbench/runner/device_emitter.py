"""The device as the lab's emitter (``run --target``): the firmware's "publish" role
(``vmcu/client/publish.c``) under QEMU, its UART bridged to the broker (``runner.device``) — or,
over the tcp transport, its "tcp" role (``vmcu/client/frames.c``), bridged to the host's
receiver (``agents.tcp``) — run as the emitter process of a run, in place of
``agents.emitter`` (``agents.tcp``):

    python -m iotsecbench.runner.device_emitter --config emitter.config.json --target rv32imc

It reads the emitter's ``AgentConfig`` like any agent, hands the firmware the same run (topic
prefix, account, TLS profile and PKI, payload size, rate, QoS, duration, filler seed), and
passes the firmware's records on to ``emitter.jsonl`` *while the run goes* (every ~50 ms: the
runner's silence watchdog sees a live emitter), in the agents' vocabulary
(docs/device-client.md, "The whole run"):

* ``message``: the firmware's own seq and times, on the lab's clock (clock sync:
  ``runner.device``), plus the instructions each message cost (``instructions_crypto``,
  ``_protocol``, ``_wait``, ``_io``); ``seal_cpu_ns`` is 0 (no payload scheme seals);
* ``sample`` every 100 ms of the lab's clock: where a host agent has its process CPU time, the
  device's counted CPU time — client instructions (crypto + protocol) x CPI / clock, *counted
  on <target>* — with the instructions per bucket and the time slept; ``rss_bytes`` is the
  device's RAM in use (static RAM + heap); the TCP counters are the bridge's connection to the
  broker (the device's connection), read when the sample is passed on (≤ 50 ms later);
* ``operation``: what the Python emitter logs for the same messages (TLS record protection, MQTT
  packets, the handshake's public-key operations), so the *priced* figure of the energy model
  can stand beside the counted one (``runner.collect``);
* ``handshake`` phases (tcp_connect, tls_handshake, mqtt_connect) timed by the bridge, each
  with its counted instructions; ``negotiated`` read from the wire and checked against the
  profile (a mismatch fails the run); the firmware's memory and footprint as ``counters``;
* over the tcp transport: the bridge's tcp_connect and the key exchange (the handshake's one
  counted group), and with the echo method an ``echo`` record per block (its opening counted).

A firmware that cannot keep the asked rate stops itself (publish.c) and the run fails naming the
rate achieved; the same check runs here over the whole run (``kept_rate_hz``,
``RATE_TOLERANCE``). A saturating
run (tcp) has no rate to keep: it sends as fast as QEMU emulates, so its rate and throughput
are the emulator's, and its figure is the instructions per byte (``runner.collect``).
"""

from __future__ import annotations

import argparse
import signal
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotsecbench.agents import wire
from iotsecbench.agents.config import AgentConfig
from iotsecbench.agents.records import RecordWriter, read_records_from
from iotsecbench.agents.vocabulary import DEVICE_BUCKETS
from iotsecbench.analysis.counted import (
    KEY_EXCHANGE_MARK,
    CountedGroup,
    CountedRepetition,
    key_exchange_group,
)
from iotsecbench.energy.profile import load_profile
from iotsecbench.errors import SpecError
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.tcpinfo import read_tcp_info
from iotsecbench.runner.counted import counted_connection, counted_frames
from iotsecbench.runner.device import DeviceRun, run_device
from iotsecbench.security import resolve_configuration
from iotsecbench.security.agreements import AGREEMENTS
from iotsecbench.security.key_establishment import exchange_operations
from iotsecbench.security.tls import TlsProfile, handshake_operations, record_operations
from iotsecbench.security.tls.stacks import NATIVE_CIPHERS, NATIVE_KEY_ESTABLISHMENTS
from iotsecbench.spec.models import CellFilter
from iotsecbench.vmcu.client import (
    BLOCK_SIZES_KEY_ESTABLISHMENTS,
    LIGHTWEIGHT_CIPHERS,
    MLKEM_KEY_ESTABLISHMENTS,
    DeviceFirmware,
    build_of,
    device_firmware,
    device_problem,
)
from iotsecbench.vmcu.device import PUBLISH, RECORDS_FILE, TCP, DeviceConfig, seed_for
from iotsecbench.vmcu.targets import TARGETS
from iotsecbench.vmcu.targets import target as target_named

# The firmware's ciphers: the native agent's scheme.c ones and its device-only lightweight ones;
# its key establishments: the native agent's and the device-only ones (emitter's side): the
# block-sizes study's finite-field DH and RSA-OAEP, ML-KEM and the X25519MLKEM768 hybrid.
DEVICE_CIPHERS = (*NATIVE_CIPHERS, *LIGHTWEIGHT_CIPHERS)
DEVICE_KEY_ESTABLISHMENTS = (
    *NATIVE_KEY_ESTABLISHMENTS,
    *BLOCK_SIZES_KEY_ESTABLISHMENTS,
    *MLKEM_KEY_ESTABLISHMENTS,
)
# The tcp role sends its frames in the clear or sealed by a payload scheme: the block-sizes
# study has no TLS configuration, and the firmware's TLS clients speak to a broker.
NO_TLS_OVER_TCP = (
    "the device's tcp role sends its frames without TLS (the block-sizes study's "
    "configurations are plain or payload schemes): use --transport mqtt for TLS"
)
# Ciphers that cannot be on a device at all, and why (scheme_problem says it).
NO_DEVICE_BUILD = {
    "ascon128v12-purepy": "the pure-Python build of Ascon-128 v1.2 has no device counterpart "
    "(a microcontroller runs C: ascon128v12 is the device's Ascon-128 v1.2)",
}
RATE_TOLERANCE = 0.01  # kept below (1 - this) x the asked rate fails the run
DEVICE_DIRNAME = "device"  # in the run's directory: the firmware's files and QEMU's log


def prepare_device_run(spec: Any) -> list[str]:
    """Before a ``run --target`` starts anything: what the device emitter cannot run is
    refused (SpecError, exit 2), a missing cross toolchain or QEMU is named (exit 3), and the
    firmware images the runs need are built now (cached), not inside a run's watchdog.
    Returns notes for the user."""
    chosen = target_named(spec.target)
    builds = set()
    for name in spec.configurations:
        security = resolve_configuration(name)
        tls = security.tls_profile_with(spec.tls.model_dump())
        for stack in spec.stack:
            problem = _device_problem(name, spec, stack, spec.transport)
            if problem is not None:
                raise SpecError(f"{name} on the {stack} device client: {problem}")
            builds.add(build_of(stack, tls, security.scheme.name != "none"))
    for build in sorted(builds):
        device_firmware(chosen, build)
    profile = load_profile(chosen.profile)
    return [
        f"note: the emitter is the device client on {chosen.name} (QEMU, every instruction "
        f"counted; device time at {profile.name}'s {profile.cpu_clock_hz / 1e6:g} MHz, CPI "
        f"{profile.value('cpi'):g}); the receiver is the Python agent"
    ]


def device_subset(spec: Any) -> tuple[Any, dict[str, str]]:
    """A preset's spec with ``--target``: the configurations the device client runs, each on
    the stacks whose build runs it (an ``exclude`` rule for the others: the ``pq`` preset's
    payload schemes on mbedTLS, its ML-KEM TLS groups on wolfSSL), with the names of those it
    cannot run at all in its description (so the stored experiment and its report cannot pass
    for the whole study), and those names with why, which the caller says it left out; the
    preset's ``include`` rules on a stack the device has not (a host library comparison) are
    dropped with them. A configuration the user named is never dropped:
    ``prepare_device_run`` refuses it. A subset's subset is itself (``run --resume``)."""
    kept, left_out, exclude = [], {}, list(spec.exclude)
    for name in spec.configurations:
        problems = {
            stack: _device_problem(name, spec, stack, spec.transport) for stack in spec.stack
        }
        if all(problem is not None for problem in problems.values()):
            left_out[name] = next(iter(problems.values()))  # type: ignore[assignment]
            continue
        kept.append(name)
        for stack, problem in problems.items():
            rule = {"configuration": name, "stack": stack}
            if problem is not None and not any(_same_rule(r, rule) for r in exclude):
                exclude.append(CellFilter(**rule))
    include = [rule for rule in spec.include if rule.stack is None or rule.stack in spec.stack]
    for rule in spec.include:
        if rule not in include:
            left_out[f"{rule.configuration} on {rule.stack}"] = (
                f"the device client runs on {' or '.join(spec.stack)}, not {rule.stack}"
            )
    if not left_out and len(exclude) == len(spec.exclude):
        return spec, {}
    update: dict[str, Any] = {"configurations": kept, "include": include, "exclude": exclude}
    if left_out:
        update["description"] = (
            f"{spec.description} — on {spec.target}, without {', '.join(left_out)}"
        )
    return spec.model_copy(update=update), left_out


def _same_rule(rule: Any, wanted: dict[str, str]) -> bool:
    return all(getattr(rule, key) == value for key, value in wanted.items())


def _device_problem(name: str, spec: Any, stack: str, transports: Any) -> str | None:
    """Why the device client on ``stack`` cannot run configuration ``name`` over any of
    ``transports``, or None."""
    security = resolve_configuration(name)
    return _run_problem(security, security.tls_profile_with(spec.tls.model_dump()), stack,
                        transports)  # fmt: skip


def _run_problem(security: Any, tls: TlsProfile | None, stack: str, transports: Any) -> str | None:
    """Why the device client on ``stack`` cannot run this security configuration (with its TLS
    profile, if any) over any of ``transports``, or None: the spec's check before a run
    starts and the emitter's own, one rule."""
    if tls is not None and "tcp" in transports:
        return NO_TLS_OVER_TCP
    return scheme_problem(security, stack) or (
        device_problem(stack, tls) if tls is not None else None
    )


def scheme_problem(security: Any, stack: str) -> str | None:
    """Why the device emitter cannot run this configuration's payload scheme, or None. The
    firmware's schemes are the native agent's ``scheme.c`` with its device-only lightweight
    ciphers (``DEVICE_CIPHERS``), and its key establishments (``DEVICE_KEY_ESTABLISHMENTS``:
    PSK with the runner's key in the configuration, (EC)DH, the block-sizes study's
    finite-field DH and RSA-OAEP, ML-KEM and the X25519MLKEM768 hybrid; no signed ones: the
    firmware holds no signing key)."""
    scheme = security.scheme
    if scheme.name == "none":
        return None
    if security.tls_profile is not None:
        return "a payload scheme over TLS is not on the device yet: one or the other"
    if stack != "mbedtls":
        return "the device's payload schemes run on mbedtls (the mbedtls-scheme build)"
    cipher = scheme.name.removeprefix(f"{scheme.key_establishment}-")
    if cipher in NO_DEVICE_BUILD:
        return NO_DEVICE_BUILD[cipher]
    if scheme.key_establishment not in AGREEMENTS:  # x25519-ecdsap256, mlkem768-mldsa44 …
        return (
            f"a signed key establishment ({scheme.key_establishment}): the firmware holds no "
            "signing key (its key establishments are unsigned)"
        )
    if scheme.key_establishment not in DEVICE_KEY_ESTABLISHMENTS or cipher not in DEVICE_CIPHERS:
        return (
            f"the device runs the payload schemes {{{','.join(DEVICE_KEY_ESTABLISHMENTS)}}}-"
            f"{{{','.join(DEVICE_CIPHERS)}}} (scheme.c, crypto_lwc.c, crypto_mlkem.c), "
            f"not {scheme.name}"
        )
    return None


def device_config(config: AgentConfig, repetition_seed: int) -> DeviceConfig:
    """What the firmware reads: the emitter's run, as ``agents.emitter`` would send it."""
    tls = config.tls
    profile = TlsProfile(**tls.profile) if tls is not None else None
    mutual = tls is not None and profile is not None and profile.mutual and tls.client_cert
    tcp = config.transport == "tcp"
    return DeviceConfig(
        seed=seed_for(config.seed, repetition_seed),
        client_id=config.client_id,
        username=config.username,
        password=config.password,
        topic_prefix=config.topic_prefix,
        tls_version=profile.version if profile is not None else "",
        suites=tls.suite_ids if tls is not None else (),
        groups=tls.group_ids if tls is not None else (),
        ca_pem=Path(tls.ca_file).read_bytes() if tls is not None else b"",
        client_cert_pem=Path(tls.client_cert).read_bytes() if mutual and tls else None,  # type: ignore[arg-type]
        client_key_pem=Path(tls.client_key).read_bytes() if mutual and tls else None,  # type: ignore[arg-type]
        role=TCP if tcp else PUBLISH,
        message_count=config.message_count,
        period_ns=round(1e9 / config.rate_hz),
        qos=config.qos,
        payload_bytes=config.payload_bytes,
        filler_seed=config.seed,
        scheme=scheme
        if (scheme := resolve_configuration(config.configuration).scheme.name) != "none"
        else "",
        psk=Path(config.psk_file).read_bytes() if config.psk_file else b"",
        echo=tcp and config.method == "echo",
        saturating=tcp and config.saturating,
        duration_ns=round(config.duration_s * 1e9) if tcp else 0,
    )


@dataclass
class DevicePricing:
    """How counted instructions become device time: the target's profile, CPI and clock."""

    profile: str
    cpi: float
    clock_hz: float

    def ns(self, instructions: int) -> int:
        return round(instructions * self.cpi / self.clock_hz * 1e9)


@dataclass
class Translator:
    """The firmware's records → the emitter's, as they come (module docstring)."""

    writer: RecordWriter
    records: Path
    firmware: DeviceFirmware
    pricing: DevicePricing
    config: AgentConfig
    offset: int = 0
    last_sample_ns: int = 0
    heap_peak_bytes: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    created_ns: list[int] = field(default_factory=list)
    error: str | None = None
    start_detail: dict[str, Any] = field(default_factory=dict)
    published: list[tuple[int, int]] = field(default_factory=list)  # (t_sealed_ns, wire bytes)
    echoed: list[int] = field(default_factory=list)  # the echoes' t_returned_ns
    tcp: Any = None  # the broker connection's last TCP_INFO: held once it closed

    def tick(self, broker: Any) -> None:
        """Pass on what the firmware wrote since the last tick."""
        records, self.offset = read_records_from(self.records, self.offset)
        if broker is not None:
            self.tcp = read_tcp_info(broker) or self.tcp
        tcp = self.tcp
        for record in records:
            self._translate(record, tcp)
        self.writer.flush()

    def _translate(self, record: dict[str, Any], tcp: Any) -> None:
        kind = record.pop("type", "")
        if kind == "sample":
            self._sample(record, tcp)
        elif kind == "message":
            self._message(record)
        elif kind == "echo":
            self._echo(record)
        elif kind == "counters":
            self.counters[record["name"]] = int(record["value"])
            self.writer.write("counters", name=record["name"], value=int(record["value"]))
        elif kind == "event" and record.get("name") == "key_exchange":
            self._key_exchange(record)
        elif kind == "event":
            name = record.pop("name", "")
            if name == "agent_start":  # the firmware's stack and version, and the run's facts
                record.pop("role", None)
                detail = {**self.start_detail, **record}
                self.writer.write("event", t_ns=now_ns(), kind=name, detail=detail)
            else:
                self.writer.write("event", t_ns=now_ns(), kind=name, detail=record)
        elif kind == "error":
            self.error = str(record.get("message", "the device client failed"))

    def _sample(self, record: dict[str, Any], tcp: Any) -> None:
        t_ns = int(record["t_ns"])
        if t_ns <= self.last_sample_ns:  # the energy model needs strictly increasing windows
            return
        self.last_sample_ns = t_ns
        self.heap_peak_bytes = max(self.heap_peak_bytes, int(record.get("heap_peak_bytes", 0)))
        client = int(record["crypto"]) + int(record["protocol"])
        self.writer.write(
            "sample",
            t_ns=t_ns,
            cpu_ns=self.pricing.ns(client),
            rss_bytes=self.firmware.static_ram_bytes + int(record.get("heap_bytes", 0)),
            tcp_bytes_sent=tcp.bytes_sent if tcp else 0,
            tcp_bytes_acked=tcp.bytes_acked if tcp else 0,
            tcp_bytes_received=tcp.bytes_received if tcp else 0,
            tcp_segs_out=tcp.segs_out if tcp else 0,
            tcp_segs_in=tcp.segs_in if tcp else 0,
            tcp_retrans=tcp.total_retrans if tcp else 0,
            sleep_ns=int(record.get("sleep_ns", 0)),
            instructions_families={k: int(v) for k, v in record.get("families", {}).items()},
            **{f"instructions_{bucket}": int(record[bucket]) for bucket in DEVICE_BUCKETS},
        )

    def _message(self, record: dict[str, Any]) -> None:
        self.created_ns.append(int(record["t_created_ns"]))
        self.writer.write(
            "message",
            seq=int(record["seq"]),
            payload_bytes=int(record["payload_bytes"]),
            wire_bytes=int(record["wire_bytes"]),
            t_created_ns=int(record["t_created_ns"]),
            t_sealed_ns=int(record["t_sealed_ns"]),
            t_published_ns=int(record["t_published_ns"]),
            seal_cpu_ns=self.pricing.ns(int(record.get("seal", 0))),
            instructions_seal=int(record.get("seal", 0)),
            **{f"instructions_{bucket}": int(record[bucket]) for bucket in DEVICE_BUCKETS},
        )
        self.published.append((int(record["t_sealed_ns"]), int(record["wire_bytes"])))

    def _echo(self, record: dict[str, Any]) -> None:
        """A block the receiver returned (the tcp transport's echo method), as agents/tcp.py
        records it; opening it is counted."""
        self.echoed.append(int(record["t_returned_ns"]))
        self.writer.write(
            "echo",
            seq=int(record["seq"]),
            t_sent_ns=int(record["t_sent_ns"]),
            t_returned_ns=int(record["t_returned_ns"]),
            t_opened_ns=int(record["t_opened_ns"]),
            open_cpu_ns=self.pricing.ns(int(record["open"])),
            wire_bytes=int(record["wire_bytes"]),
            instructions_open=int(record["open"]),
        )

    def _key_exchange(self, record: dict[str, Any]) -> None:
        """The payload scheme's key exchange: its phase (the Python emitter's span, receiver
        hello received to confirmation verified) and the priced operations."""
        scheme = resolve_configuration(self.config.configuration).scheme
        start, end = int(record["t_start_ns"]), int(record["t_end_ns"])
        instructions = int(record["crypto"]) + int(record["protocol"])
        self.writer.write(
            "handshake",
            phase="key_exchange",
            t_start_ns=start,
            t_end_ns=end,
            wall_ns=end - start,
            cpu_ns=self.pricing.ns(instructions),
            detail={
                "agreement": scheme.key_establishment,
                "bytes_out": int(record["bytes_out"]),
                "bytes_in": int(record["bytes_in"]),
                "messages": 3,
                "span": "receiver hello received -> key confirmation verified",
                "instructions": instructions,
                "instructions_mlkem": int(record.get("mlkem", 0)),
                "cpu_scope": f"counted on {self.firmware.target}",
            },
        )
        # over MQTT its three messages and the SUBSCRIBE are packets; over tcp they are frames
        packets = [("mqtt-packet", 4)] if self.config.transport == "mqtt" else []
        operations = [*exchange_operations(scheme.name)["emitter"], *packets]
        for primitive, amount in operations:
            self.writer.write("operation", t_ns=start, primitive=primitive, amount=amount)

    def priced_operations(self, tls: Any) -> None:
        """What agents/emitter.py logs for the same messages (the priced figure's input),
        once the negotiated TLS is known."""
        config = self.config
        scheme = resolve_configuration(config.configuration).scheme
        for t_ns, wire_bytes in self.published:
            operations = scheme.seal_operations(config.payload_bytes)
            if config.transport == "mqtt":  # over tcp a block is a frame: no packet, no TLS
                topic = f"{config.topic_prefix}/data"
                packet = wire.publish_packet_bytes(topic, config.qos, wire_bytes)
                operations = [
                    *operations,
                    *(record_operations(tls, packet) if tls is not None else []),
                    ("mqtt-packet", 2 if config.qos else 1),
                ]
            for primitive, amount in operations:
                self.writer.write("operation", t_ns=t_ns, primitive=primitive, amount=amount)
        for t_ns in self.echoed:  # agents/tcp.py prices opening each echo
            for primitive, amount in scheme.open_operations(config.payload_bytes):
                self.writer.write("operation", t_ns=t_ns, primitive=primitive, amount=amount)


def kept_rate_hz(created_ns: list[int], rate_hz: float) -> float | None:
    """The rate the messages' schedule kept (Hz): between the least late of the run's first
    fifth of messages and the least late of its last fifth (late: behind the absolute
    schedule, start + seq / ``rate_hz``). Not (n - 1) / span: on an absolute schedule a late
    message shifts no other, but as the last it moves the span (a 2 s run at 10 Hz whose last
    message came 46 ms late "achieved 9.76 Hz" with every other within 3 ms of its time); nor
    a median over the run, which a loaded machine's late messages that the schedule then
    caught up with move too (a fleet's device 300 ms late mid-run and on time at its end
    "kept 9.82 Hz"). A schedule that falls behind and stays behind has no message back on
    time at its end, so it still fails the check."""
    count = len(created_ns)
    if count < 2:
        return None
    fifth = max(1, count // 5)
    period_ns = 1e9 / rate_hz

    def least_late(indices: range) -> int:
        return min(indices, key=lambda i: created_ns[i] - i * period_ns)

    first, last = least_late(range(fifth)), least_late(range(count - fifth, count))
    span_ns = created_ns[last] - created_ns[first]
    return (last - first) * 1e9 / span_ns if last > first and span_ns > 0 else None


def _handshake(
    writer: RecordWriter, run: DeviceRun, translator: Translator, profile: TlsProfile | None
) -> None:
    """The connection's phases, negotiated parameters and operations from the counted
    connection (``runner.counted``): the wire read, checked against the profile."""
    connection = counted_connection(run, profile)
    pricing, target = translator.pricing, translator.firmware.target
    counted = connection.counted
    groups = counted.groups
    mqtt = groups.get("MQTT_CONNECT")
    mqtt_client = mqtt.client if mqtt is not None else 0
    tls_client = counted.invariant_instructions - mqtt_client
    # CONNECT is the first write after the handshake: the bridge's time of its bytes
    written = 0
    connect_ns = connection.t_connack_ns
    inside = False
    for segment in connection.segments:
        if segment.get("event") == "m":
            inside = segment.get("mark") == "MQTT_CONNECT"
        elif segment.get("event") == "w":
            written += int(segment.get("bytes", 0))
            if inside:
                connect_ns = run.arrival_ns(True, written) or connect_ns
                break
    tcp_start, tcp_end = run.tcp_connect_ns
    scope = f"counted on {target}: client instructions x CPI / clock"
    bridge = {"cpu_scope": "the bridge's connect, not counted"}
    phases = [("tcp_connect", tcp_start, tcp_end, 0, bridge)]
    if profile is not None:
        phases.append(("tls_handshake", tcp_end, connect_ns, tls_client, {"cpu_scope": scope}))
    phases.append(("mqtt_connect", connect_ns, connection.t_connack_ns, mqtt_client,
                   {"cpu_scope": scope}))  # fmt: skip
    for name, start, end, instructions, detail in phases:
        writer.write(
            "handshake",
            phase=name,
            t_start_ns=start,
            t_end_ns=end,
            wall_ns=end - start,
            cpu_ns=pricing.ns(instructions),
            detail={**detail, "instructions": instructions},
        )
    if connection.negotiated is not None and connection.tls is not None and profile is not None:
        writer.write("negotiated", **connection.negotiated)
        for primitive, amount in handshake_operations(connection.tls, profile.certificate):
            writer.write("operation", t_ns=tcp_end, primitive=primitive, amount=amount)
    writer.write("operation", t_ns=connect_ns, primitive="mqtt-packet", amount=2)
    translator.priced_operations(connection.tls)
    # the payload scheme's key exchange, after CONNACK: a group of its own
    exchange = key_exchange_group(connection.segments)
    _counted_handshake(writer, counted, exchange, connection.counters)


def _counted_handshake(
    writer: RecordWriter,
    counted: CountedRepetition,
    exchange: CountedGroup | None,
    counters: dict[str, int],
) -> None:
    """The ``counted_handshake`` event (``runner.collect``): each group's client instructions,
    the set-up's and the primitive families'; with a payload scheme its key exchange among the
    groups, with its primitive families and its stack and heap peaks as the firmware reported
    them (emitter.c record_key_exchange)."""
    detail: dict[str, Any] = {
        "groups": {name: group.client for name, group in counted.groups.items()},
        "setup_instructions": counted.setup.client,
        "primitives": counted.primitives(),
    }
    if exchange is not None:
        memory = ("key_exchange_stack_high_water_bytes", "key_exchange_heap_peak_bytes")
        detail["groups"][KEY_EXCHANGE_MARK] = exchange.client
        detail["key_exchange_primitives"] = dict(exchange.primitives)
        detail.update({name: counters.get(name) for name in memory})
    writer.write("event", t_ns=now_ns(), kind="counted_handshake", detail=detail)


def _frames_handshake(writer: RecordWriter, run: DeviceRun, translator: Translator) -> None:
    """The tcp role's connection (no TLS, no MQTT): the bridge's TCP connect, timed and not
    counted, and the key exchange as the handshake's one counted group (its phase came with
    the firmware's key_exchange event: ``Translator._key_exchange``)."""
    counted = counted_frames(run)
    start, end = run.tcp_connect_ns
    writer.write(
        "handshake",
        phase="tcp_connect",
        t_start_ns=start,
        t_end_ns=end,
        wall_ns=end - start,
        cpu_ns=0,
        detail={"cpu_scope": "the bridge's connect, not counted", "instructions": 0},
    )
    translator.priced_operations(None)
    # with a payload scheme its key exchange is the count's one group
    exchange = counted.groups.get(KEY_EXCHANGE_MARK)
    _counted_handshake(writer, counted, exchange, run.outcome.counters())


def emit(config: AgentConfig, target_name: str, writer: RecordWriter) -> str | None:
    """The run; a problem (one line) or None."""
    target = TARGETS[target_name]
    security = resolve_configuration(config.configuration)
    profile = TlsProfile(**config.tls.profile) if config.tls is not None else None
    tcp = config.transport == "tcp"
    problem = _run_problem(security, profile, config.stack, (config.transport,))
    if problem is not None:
        return problem
    scheme = security.scheme.name != "none"
    firmware = device_firmware(target, build_of(config.stack, profile, scheme))
    device = load_profile(target.profile)
    pricing = DevicePricing(device.name, device.value("cpi"), device.cpu_clock_hz)
    work_dir = Path(config.output).parent / DEVICE_DIRNAME
    translator = Translator(writer, work_dir / RECORDS_FILE, firmware, pricing, config)
    translator.start_detail = {
        "role": "emitter",
        "configuration": config.configuration,
        "build": firmware.build,
        "counted_on": target.name,
        "device_profile": pricing.profile,
        "cpi": pricing.cpi,
        "clock_hz": pricing.clock_hz,
        "build_hash": firmware.build_hash,
    }

    budget_s = config.duration_s + 3 * config.connect_timeout_s + config.drain_s + 30
    run = run_device(
        firmware,
        device_config(config, zlib.crc32(config.run_id.encode())),
        (config.host, config.port),
        work_dir,
        timeout_s=budget_s,
        on_tick=translator.tick,
    )
    translator.tcp = run.tcp_after or translator.tcp  # the connection's last counters
    translator.tick(None)
    started = run.outcome.event("agent_start")
    writer.write(
        "event",
        t_ns=now_ns(),
        kind="device_run",
        detail={
            "stack_version": started.get("stack_version"),
            "clock_offset_ns": run.clock_offset_ns,
            "clock_uncertainty_ns": run.clock_uncertainty_ns,
            "qemu_wall_ns": run.qemu_wall_ns,
            "residue_per_boundary": started.get("residue_per_boundary"),
            "residue_per_primitive_call": started.get("residue_per_primitive_call"),
        },
    )
    for name, value in (
        ("footprint_text_bytes", firmware.text_bytes),
        ("footprint_data_bytes", firmware.data_bytes),
        ("footprint_bss_bytes", firmware.bss_bytes),
        ("peak_rss_bytes", firmware.static_ram_bytes + translator.heap_peak_bytes),
    ):
        writer.write("counters", name=name, value=value)
    if run.problem is not None:
        return run.problem
    if tcp:
        _frames_handshake(writer, run, translator)
    else:
        try:
            _handshake(writer, run, translator, profile)
        except ValueError as error:  # CountedMismatch, WireError
            return f"TLS negotiated something else than requested: {error}"
    if config.saturating:  # as fast as QEMU emulates: no rate was asked
        return None
    achieved = kept_rate_hz(translator.created_ns, config.rate_hz)
    if achieved is not None and achieved < (1 - RATE_TOLERANCE) * config.rate_hz:
        return (
            f"the emulation could not keep {config.rate_hz:g} Hz on {target.name}: achieved "
            f"{achieved:.2f} Hz"
        )
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m iotsecbench.runner.device_emitter")
    parser.add_argument("--config", type=Path, required=True, help="agent config (JSON)")
    parser.add_argument("--target", choices=sorted(TARGETS), required=True)
    args = parser.parse_args(argv)
    config = AgentConfig.from_file(args.config)
    writer = RecordWriter(Path(config.output))

    def _terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    problem: str | None
    try:
        problem = emit(config, args.target, writer)
    except (SpecError, OSError) as error:
        problem = str(error)
    except KeyboardInterrupt:
        problem = "terminated"
    if problem is not None:
        writer.write("error", t_ns=now_ns(), message=problem)
    writer.write("event", t_ns=now_ns(), kind="agent_end", detail={})
    writer.close()
    if problem is not None:
        print(f"emitter: {problem}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()


__all__ = ["Translator", "device_config", "emit", "main"]
