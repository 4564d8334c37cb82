"""The receiver: subscribe, publish its key-exchange hello, then open, verify and record every
message until the emitter announces the end (and stragglers have had ``drain_s`` to arrive).

``t_arrived_ns`` is taken when paho hands over the message, before opening;
``t_delivered_ns`` after opening and verifying. Rejected messages never reach the
application: they are counted as ``auth_failures``, ``malformed`` or ``replays_rejected``;
QoS 1 redeliveries (DUP flag) of an already delivered message count as ``duplicates``.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from typing import Any

from iotsecbench.agents import wire
from iotsecbench.agents.session import AgentFailure, AgentSession, run_agent
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import thread_cpu_ns
from iotsecbench.security.key_establishment import ReceiverKeyExchange, export_key_log_lines
from iotsecbench.security.schemes.base import (
    AuthenticationError,
    MalformedMessageError,
    ReplayError,
)

COUNTERS = (
    "messages_received",
    "messages_delivered",
    "duplicates",
    "auth_failures",
    "malformed",
    "replays_rejected",
)


class Receiver:
    """Holds the receiving state; its callbacks run on paho's network thread."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.delivered: set[int] = set()
        self.opener: Any = None
        self.expected: int | None = None
        self.end = threading.Event()
        self.all_delivered = threading.Event()
        scheme = session.scheme
        self.open_operations = scheme.open_operations(session.config.payload_bytes)
        if not scheme.key_establishment:
            self.opener = scheme.opener(None)

    # -- key exchange ----------------------------------------------------------------------
    def start_key_exchange(self) -> None:
        session = self.session
        self.exchange = ReceiverKeyExchange(
            session.scheme.name, session.pre_shared_key(), session.pinned_keys()
        )
        t_ns = now_ns()
        hello = self.exchange.hello()
        session.add_handler("kx/emitter", self.on_emitter_key)
        session.subscribe([(session.topic("kx/emitter"), 1)])
        assert session.client is not None
        # Retained, so an emitter that subscribes later still finds it.
        session.client.publish(session.topic("kx/receiver"), hello, qos=1, retain=True)
        session.event("kx_hello_published", bytes=len(hello), keygen_at_ns=t_ns)

    def on_emitter_key(self, client: Any, userdata: Any, message: Any) -> None:
        session = self.session
        t_start = now_ns()
        cpu_start = thread_cpu_ns()
        try:
            ready, keys = self.exchange.on_emitter_message(bytes(message.payload))
        except Exception as error:  # refused, the run goes on (the emitter waits in vain)
            session.event("kx_rejected", error=f"{type(error).__name__}: {error}")
            return
        self.opener = session.scheme.opener(keys.emitter_to_receiver)
        cpu_ns = thread_cpu_ns() - cpu_start
        client.publish(session.topic("kx/ready"), ready, qos=1)
        t_end = now_ns()
        session.record_key_exchange(
            (t_start, t_end),
            cpu_ns,
            self.exchange.operations(),
            bytes_out=len(ready),
            bytes_in=len(message.payload),
            span="emitter key received -> key confirmation published",
        )
        session.operations(t_start, [("mqtt-packet", 4)])
        # Only with --keylog (off by default); the receiver alone writes, once per session.
        session.write_key_log(export_key_log_lines(keys, session.scheme.name))

    # -- data ------------------------------------------------------------------------------
    def on_data(self, client: Any, userdata: Any, message: Any) -> None:
        t_arrived = now_ns()
        payload = bytes(message.payload)
        self.counts["messages_received"] += 1
        session = self.session
        session.operations(t_arrived, [("mqtt-packet", 2 if message.qos else 1)])
        session.operations(
            t_arrived, session.record_operations(session.publish_packet_bytes(len(payload)))
        )
        if self.opener is None:
            self.counts["malformed"] += 1
            session.event("rejected", reason="no session key yet", bytes=len(payload))
            return
        cpu_start = thread_cpu_ns()
        try:
            opened = self.opener.open(payload)
            seq, t_created = wire.decode(opened.plaintext)
        except AuthenticationError:
            self._reject("auth_failures", t_arrived, payload)
            return
        except (MalformedMessageError, ValueError):
            self._reject("malformed", t_arrived, payload)
            return
        except ReplayError:
            self._reject("duplicates" if message.dup else "replays_rejected", t_arrived, payload)
            return
        open_cpu_ns = thread_cpu_ns() - cpu_start
        t_delivered = now_ns()
        session.operations(t_arrived, self.open_operations)
        if seq in self.delivered:
            # Schemes without replay protection pass repeats through; the application
            # layer still must not deliver a message twice.
            self.counts["duplicates"] += 1
            return
        self.delivered.add(seq)
        self.counts["messages_delivered"] += 1
        session.writer.write(
            "message",
            seq=seq,
            wire_bytes=len(payload),
            t_created_ns=t_created,
            t_arrived_ns=t_arrived,
            t_delivered_ns=t_delivered,
            open_cpu_ns=open_cpu_ns,
            dup_flag=bool(message.dup),
        )
        if self.expected is not None and len(self.delivered) >= self.expected:
            self.all_delivered.set()

    def _reject(self, counter: str, t_arrived: int, payload: bytes) -> None:
        self.counts[counter] += 1
        self.session.event("rejected", reason=counter, t_arrived_ns=t_arrived, bytes=len(payload))

    def on_end(self, client: Any, userdata: Any, message: Any) -> None:
        try:
            self.expected = int(json.loads(message.payload)["sent"])
        except (ValueError, KeyError, TypeError):
            self.session.event("bad_end_message")
            self.expected = 0
        self.session.event("end_received", expected=self.expected)
        if len(self.delivered) >= self.expected:
            self.all_delivered.set()
        self.end.set()

    def emitters_ended(self, signum: int, frame: Any) -> None:
        """SIGUSR1 from the runner: every emitter has ended. Without the end message by then
        it was dropped with data by a broker whose queue for this receiver overflowed (a
        saturating emitter at QoS 1 outruns the Python receiver): receive what still comes
        for ``drain_s`` and finish; what never came is counted lost."""
        if not self.end.is_set():
            self.session.event("end_missing", delivered=len(self.delivered))
            self.end.set()


def receive(session: AgentSession) -> None:
    receiver = Receiver(session)
    session.connect()
    session.add_handler("data", receiver.on_data)
    session.add_handler("ctl/end", receiver.on_end)
    session.subscribe([(session.topic("data"), session.config.qos), (session.topic("ctl/end"), 1)])
    if session.scheme.key_establishment:
        receiver.start_key_exchange()
    signal.signal(signal.SIGUSR1, receiver.emitters_ended)
    print("READY", flush=True)  # the runner starts the emitter only after this line
    while not receiver.end.wait(0.2):
        if session.disconnected.is_set():
            raise AgentFailure("lost the broker connection")
    deadline = time.monotonic() + session.config.drain_s
    while not receiver.all_delivered.is_set() and time.monotonic() < deadline:
        receiver.all_delivered.wait(0.05)
    if session.scheme.key_establishment and session.client is not None:
        # Clear the retained hello so an external broker keeps no state of this run.
        session.client.publish(session.topic("kx/receiver"), b"", qos=1, retain=True)
    for name, value in receiver.counts.items():
        session.writer.write("counters", name=name, value=value)


def main(argv: list[str] | None = None) -> None:
    run_agent("receiver", receive, argv)


if __name__ == "__main__":
    main()
    sys.exit(0)
