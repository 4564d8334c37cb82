"""What both agents share: the timed MQTT connection (``agents.handshake.TimedClient``), the
10 Hz sampler and the records it all produces (docs/design.md, measurement contract).

Handshake phases: ``tcp_connect`` and ``tls_handshake`` are timed inside paho's own socket
set-up (``TimedClient``), then ``mqtt_connect`` from the ready socket to CONNACK.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import signal
import socket
import ssl
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from iotsecbench.agents import wire
from iotsecbench.agents.config import AgentConfig
from iotsecbench.agents.handshake import TimedClient
from iotsecbench.agents.records import RecordWriter
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import process_cpu_ns
from iotsecbench.measure.memory import peak_rss_bytes
from iotsecbench.measure.sampler import Sampler
from iotsecbench.security import resolve_configuration
from iotsecbench.security.signatures import PinnedKeys, read_pinned_keys
from iotsecbench.security.tls import (
    HandshakeObserver,
    TlsProfile,
    client_context,
    handshake_operations,
    record_operations,
    verify_negotiated,
)


class AgentFailure(Exception):
    """Ends an agent with an ``error`` record and exit code 1."""


class AgentSession:
    """One agent's connection and probes. Use as a context manager around the agent's work."""

    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.security = resolve_configuration(config.configuration)
        self.scheme = self.security.scheme
        self.writer = RecordWriter(Path(config.output))
        self.client: TimedClient | None = None
        self.connected = threading.Event()
        self.disconnected = threading.Event()
        self._connack: Any = None
        self._subacks: queue.Queue[int] = queue.Queue()
        self.tls_observer: HandshakeObserver | None = None
        self.negotiated: Any = None
        self.tcp_socket: socket.socket | None = None  # the tcp transport's connection
        self.sampler = Sampler(self._socket, self._on_sample)

    # -- records -------------------------------------------------------------------------
    def _socket(self) -> socket.socket | None:
        if self.tcp_socket is not None:
            return self.tcp_socket
        return self.client.socket() if self.client is not None else None  # type: ignore[return-value]

    def _on_sample(self, sample: Any) -> None:
        self.writer.write("sample", **sample.to_dict())
        self.writer.flush()

    def event(self, kind: str, **detail: Any) -> None:
        self.writer.write("event", t_ns=now_ns(), kind=kind, detail=detail)

    def operations(self, t_ns: int, operations: Iterable[tuple[str, int]]) -> None:
        for primitive, amount in operations:
            self.writer.write("operation", t_ns=t_ns, primitive=primitive, amount=amount)

    def record_phase(
        self, name: str, t_start_ns: int, t_end_ns: int, cpu_ns: int, detail: dict[str, Any]
    ) -> None:
        """One handshake phase: wall time from the two instants, CPU time as measured."""
        self.writer.write(
            "handshake",
            phase=name,
            t_start_ns=t_start_ns,
            t_end_ns=t_end_ns,
            wall_ns=t_end_ns - t_start_ns,
            cpu_ns=cpu_ns,
            detail=detail,
        )

    def record_key_exchange(
        self,
        interval: tuple[int, int],
        cpu_ns: int,
        operations: Iterable[tuple[str, int]],
        **detail: Any,
    ) -> None:
        """The ``key_exchange`` phase (``interval``: its start and end) and the exchange's
        operations, the same record for every transport and role; ``detail`` adds what
        the role measured (``bytes_out``, ``bytes_in``, ``span`` text, ``messages``)."""
        t_start, t_end = interval
        record = {"agreement": self.scheme.key_establishment, **detail}
        self.record_phase("key_exchange", t_start, t_end, cpu_ns, record)
        self.operations(t_start, operations)

    def tls_client_context(self) -> ssl.SSLContext:
        """The client context of the configuration's TLS profile, with the handshake
        observer installed and, with ``--keylog``, the key log on (both transports)."""
        tls = self.config.tls
        assert tls is not None
        context = client_context(
            TlsProfile(**tls.profile),
            Path(tls.ca_file),
            tls.client_cert and Path(tls.client_cert),
            tls.client_key and Path(tls.client_key),
        )
        self.tls_observer = HandshakeObserver()
        self.tls_observer.install(context)
        if self.config.keylog:
            # Python's ssl writes the NSS key log format (CLIENT_RANDOM, TLS 1.3 traffic
            # secrets), appending; the runner created the file 0600.
            context.keylog_filename = self.config.keylog
        return context

    # -- connection ----------------------------------------------------------------------
    def topic(self, suffix: str) -> str:
        return f"{self.config.topic_prefix}/{suffix}"

    def connect(self) -> None:
        config = self.config
        client = TimedClient(
            on_phase=self.record_phase,
            tcp_nodelay=config.tcp_nodelay,
            callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
            client_id=config.client_id,
            protocol=mqtt.MQTTv311,
        )
        client.username_pw_set(config.username, config.password)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        if config.tls is not None:
            profile = TlsProfile(**config.tls.profile)
            context = self.tls_client_context()
            client.tls_set_context(context)
            if profile.resumption:
                client.tls_session = self._priming_session(context)
        client.connect_timeout = config.connect_timeout_s
        self.client = client
        cpu_start = process_cpu_ns()
        try:
            client.connect(config.host, config.port, keepalive=60)
        except (OSError, ssl.SSLError) as error:
            raise AgentFailure(f"cannot connect to {config.host}:{config.port}: {error}") from None
        client.loop_start()
        if not self.connected.wait(config.connect_timeout_s):
            raise AgentFailure(f"no CONNACK within {config.connect_timeout_s} s")
        t_connack, reason = self._connack
        if reason.is_failure:
            raise AgentFailure(f"broker refused the connection: {reason}")
        ready = client.socket_ready_ns or t_connack
        self.record_phase(
            "mqtt_connect",
            ready,
            t_connack,
            process_cpu_ns() - cpu_start,
            {"cpu_scope": "process, whole connect() to CONNACK"},
        )
        self.operations(ready, [("mqtt-packet", 2)])  # CONNECT + CONNACK
        if self.tls_observer is not None:
            self.record_negotiated(client.socket(), t_connack)  # type: ignore[arg-type]

    def _priming_session(self, context: ssl.SSLContext) -> ssl.SSLSession:
        """A resumption profile measures a *resumed* handshake: first a full one (paho
        connect → CONNACK → disconnect, recorded as a ``tls_priming_connection`` event, not as
        handshake phases) whose session the measured connection then offers. The CONNACK read
        also processes TLS 1.3 session tickets, which arrive after the handshake."""
        config = self.config
        primer = mqtt.Client(
            callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
            client_id=f"{config.client_id}-p",
            protocol=mqtt.MQTTv311,
        )
        primer.username_pw_set(config.username, config.password)
        primer.tls_set_context(context)
        acknowledged: list[Any] = []
        primer.on_connect = lambda client, userdata, flags, reason, props: acknowledged.append(
            reason
        )
        t_start = now_ns()
        try:
            primer.connect(config.host, config.port, keepalive=60)
            deadline = t_start + int(config.connect_timeout_s * 1e9)
            while not acknowledged and now_ns() < deadline:
                primer.loop(0.05)
        except (OSError, ssl.SSLError) as error:
            raise AgentFailure(f"priming connection for TLS resumption failed: {error}") from None
        sock = primer.socket()
        session = getattr(sock, "session", None)
        negotiated = None
        if self.tls_observer is not None and sock is not None:
            with contextlib.suppress(ValueError):
                negotiated = self.tls_observer.negotiated(sock).to_dict()  # type: ignore[arg-type]
        primer.disconnect()
        with contextlib.suppress(Exception):
            primer.loop(0.05)
        if not acknowledged or session is None:
            raise AgentFailure("priming connection for TLS resumption got no CONNACK or session")
        self.event("tls_priming_connection", wall_ns=now_ns() - t_start, negotiated=negotiated)
        return session

    def record_negotiated(self, sock: ssl.SSLSocket, t_ns: int) -> None:
        """Record what the TLS connection ``sock`` negotiated, check it against the profile
        (a mismatch fails the run) and log the handshake's operations for the energy model."""
        assert self.tls_observer is not None
        negotiated = self.tls_observer.negotiated(sock)
        self.negotiated = negotiated
        self.writer.write("negotiated", **negotiated.to_dict())
        measured = getattr(self.client, "tls_handshake", None)
        mss = measured.tcp_mss if measured is not None else None
        self.event(
            "tls_wire",
            client_hello_bytes=negotiated.client_hello_record_bytes,
            mss=mss,
            client_hello_segments=negotiated.client_hello_segments(mss),
            round_trips=negotiated.round_trips,
        )
        profile = TlsProfile(**self.config.expected_tls_profile())
        try:
            verify_negotiated(profile, negotiated, expect_resumed=profile.resumption)
        except ValueError as error:
            raise AgentFailure(f"TLS negotiated something else than requested: {error}") from None
        self.operations(t_ns, handshake_operations(negotiated, profile.certificate))

    def pre_shared_key(self) -> bytes | None:
        """The run's pre-shared key (psk-* schemes), read from the runner's 0600 file."""
        if not self.config.psk_file:
            return None
        return Path(self.config.psk_file).read_bytes()

    def pinned_keys(self) -> PinnedKeys | None:
        """This side's signing key and the peer's pinned public key (signed key exchanges)."""
        return read_pinned_keys(self.config.signing_file) if self.config.signing_file else None

    def write_key_log(self, lines: list[str]) -> None:
        """Append session-key lines to the --keylog file (one write: O_APPEND keeps lines
        whole when both agents and the TLS layer append to the same file)."""
        if not self.config.keylog or not lines:
            return
        descriptor = os.open(self.config.keylog, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, "".join(line + "\n" for line in lines).encode("ascii"))
        finally:
            os.close(descriptor)

    def record_operations(self, mqtt_bytes: int) -> list[tuple[str, int]]:
        """TLS record protection of one MQTT packet (nothing over plain transport)."""
        if self.negotiated is None:
            return []
        return record_operations(self.negotiated, mqtt_bytes)

    def publish_packet_bytes(self, payload_bytes: int) -> int:
        """Size of the MQTT PUBLISH carrying ``payload_bytes`` on our data topic."""
        return wire.publish_packet_bytes(self.topic("data"), self.config.qos, payload_bytes)

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
        self._connack = (now_ns(), reason)
        self.connected.set()

    def _on_disconnect(
        self, client: Any, userdata: Any, flags: Any, reason: Any, props: Any
    ) -> None:
        self.event("disconnected", reason=str(reason))
        self.disconnected.set()

    def _on_subscribe(self, client: Any, userdata: Any, mid: int, reasons: Any, props: Any) -> None:
        self._subacks.put(mid)

    def subscribe(self, topics: list[tuple[str, int]]) -> None:
        """Subscribe and wait for the SUBACK, so nothing published afterwards is missed."""
        assert self.client is not None
        result, mid = self.client.subscribe(topics)
        if result != mqtt.MQTT_ERR_SUCCESS:
            raise AgentFailure(f"subscribe failed: {mqtt.error_string(result)}")
        while True:
            try:
                if self._subacks.get(timeout=self.config.connect_timeout_s) == mid:
                    break
            except queue.Empty:
                raise AgentFailure("no SUBACK from the broker") from None
        self.operations(now_ns(), [("mqtt-packet", 2)])

    def add_handler(self, suffix: str, handler: Callable[[Any, Any, Any], None]) -> None:
        assert self.client is not None
        self.client.message_callback_add(self.topic(suffix), handler)

    # -- lifecycle -----------------------------------------------------------------------
    def __enter__(self) -> AgentSession:
        self.event(
            "agent_start",
            role=self.config.role,
            configuration=self.config.configuration,
            openssl_version=ssl.OPENSSL_VERSION,  # the libssl this process loaded (stacks)
        )
        self.sampler.start()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.client is not None:
            try:
                self.client.disconnect()
                self.client.loop_stop()
            except Exception as error:
                self.event("disconnect_failed", error=str(error))
        self.sampler.stop()
        self.writer.write("counters", name="peak_rss_bytes", value=peak_rss_bytes())
        if exc is not None:
            self.writer.write("error", t_ns=now_ns(), message=str(exc) or type(exc).__name__)
        self.event("agent_end")
        self.writer.close()


def run_agent(role: str, body: Callable[[AgentSession], None], argv: list[str] | None) -> None:
    """Parse ``--config``, run ``body`` inside a session, exit 0 on success and 1 on failure."""
    parser = argparse.ArgumentParser(prog=f"python -m iotsecbench.agents.{role}")
    parser.add_argument("--config", type=Path, required=True, help="agent config (JSON)")
    args = parser.parse_args(argv)
    config = AgentConfig.from_file(args.config)

    def _terminate(signum: int, frame: Any) -> None:
        raise AgentFailure(f"terminated by signal {signum}")

    signal.signal(signal.SIGTERM, _terminate)
    try:
        with AgentSession(config) as session:
            body(session)
    except AgentFailure as failure:
        print(f"{role}: {failure}", file=sys.stderr)
        sys.exit(1)


def describe(config: AgentConfig) -> dict[str, Any]:
    """The non-secret part of a config, for events."""
    data = asdict(config)
    data.pop("password", None)
    return data
