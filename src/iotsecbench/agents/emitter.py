"""The emitter: connect, establish keys if the scheme needs them, publish for the configured
duration at the configured rate (or, saturating, as fast as the connection takes them),
announce the end.

Each message's ``t_created_ns`` is taken before sealing and travels inside the protected
payload; ``t_sealed_ns`` after sealing; ``t_published_ns`` when paho has queued it. Messages
follow an absolute schedule (start + seq/rate), so a slow message does not shift the rest.
A saturating emitter (``--rate max``) has no schedule: it publishes until ``duration_s`` is up,
holding at most ``SATURATING_WINDOW`` messages that paho has queued but not yet written, so the
pace is the connection's and not the size of paho's queue.
"""

from __future__ import annotations

import itertools
import json
import queue
import time
from collections import deque
from typing import Any

from iotsecbench.agents import wire
from iotsecbench.agents.session import AgentFailure, AgentSession, run_agent
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import thread_cpu_ns
from iotsecbench.security.key_establishment import EmitterKeyExchange

# Messages a saturating emitter lets paho queue before it waits for the oldest to be written
# (QoS 0) or acknowledged (QoS 1/2): enough to keep the socket busy, bounded in memory.
SATURATING_WINDOW = 64


def establish_keys(session: AgentSession) -> Any:
    """Run the emitter's side of the key exchange over MQTT; returns the session keys."""
    inbox: queue.Queue[tuple[str, int, bytes]] = queue.Queue()
    for suffix in ("kx/receiver", "kx/ready"):
        session.add_handler(
            suffix, lambda c, u, m, s=suffix: inbox.put((s, now_ns(), bytes(m.payload)))
        )
    session.subscribe([(session.topic("kx/receiver"), 1), (session.topic("kx/ready"), 1)])
    exchange = EmitterKeyExchange(
        session.scheme.name, session.pre_shared_key(), session.pinned_keys()
    )
    timeout = session.config.connect_timeout_s

    def expect(suffix: str) -> tuple[int, bytes]:
        try:
            got, t_ns, payload = inbox.get(timeout=timeout)
        except queue.Empty:
            raise AgentFailure(f"no {suffix} message within {timeout} s") from None
        if got != suffix:
            raise AgentFailure(f"key exchange out of order: got {got}, expected {suffix}")
        return t_ns, payload

    t_start, hello = expect("kx/receiver")
    cpu_start = thread_cpu_ns()
    reply = session.config.key_exchange_in_transit(exchange.on_receiver_hello(hello))
    cpu_ns = thread_cpu_ns() - cpu_start
    assert session.client is not None
    session.client.publish(session.topic("kx/emitter"), reply, qos=1).wait_for_publish(timeout)
    _, ready = expect("kx/ready")
    cpu_start = thread_cpu_ns()
    keys = exchange.on_ready(ready)
    t_end = now_ns()
    cpu_ns += thread_cpu_ns() - cpu_start
    session.record_key_exchange(
        (t_start, t_end),
        cpu_ns,
        exchange.operations(),
        bytes_out=len(reply),
        bytes_in=len(hello) + len(ready),
        messages=3,
        span="receiver hello received -> key confirmation verified",
    )
    session.operations(t_start, [("mqtt-packet", 4)])  # hello in, reply + PUBACK, ready in
    return keys


def publish_loop(session: AgentSession, keys: Any) -> int:
    config = session.config
    assert session.client is not None
    sealer = session.scheme.sealer(keys.emitter_to_receiver if keys is not None else None)
    filler = wire.make_filler(config.payload_bytes, config.seed)
    topic = session.topic("data")
    period_ns = round(1e9 / config.rate_hz)
    seal_operations = session.scheme.seal_operations(config.payload_bytes)
    pending = []
    in_flight: deque[Any] = deque()
    # As the native agent: -1 messages announced means "as many as fit in duration_s".
    planned = -1 if config.saturating else config.message_count
    session.event("publish_start", messages=planned)
    start_ns = now_ns()
    stop_ns = start_ns + round(config.duration_s * 1e9)
    sent = 0
    for seq in itertools.count() if config.saturating else range(planned):
        if config.saturating and now_ns() >= stop_ns:
            break
        config.fault_at(seq, session.writer)
        delay_ns = start_ns + seq * period_ns - now_ns()
        if delay_ns > 0 and not config.saturating:
            time.sleep(delay_ns / 1e9)
        if session.disconnected.is_set():
            raise AgentFailure(f"lost the broker connection after {sent} messages")
        t_created = now_ns()
        cpu_start = thread_cpu_ns()
        sealed = sealer.seal(wire.encode(seq, t_created, filler))
        seal_cpu_ns = thread_cpu_ns() - cpu_start
        t_sealed = now_ns()
        info = session.client.publish(topic, sealed, qos=config.qos)
        t_published = now_ns()
        if config.qos:
            pending.append(info)
        if config.saturating:
            in_flight.append(info)
            if len(in_flight) >= SATURATING_WINDOW:
                in_flight.popleft().wait_for_publish(config.connect_timeout_s)
        session.writer.write(
            "message",
            seq=seq,
            payload_bytes=config.payload_bytes,
            wire_bytes=len(sealed),
            t_created_ns=t_created,
            t_sealed_ns=t_sealed,
            t_published_ns=t_published,
            seal_cpu_ns=seal_cpu_ns,
        )
        session.operations(t_created, seal_operations)
        session.operations(
            t_sealed, session.record_operations(session.publish_packet_bytes(len(sealed)))
        )
        session.operations(t_sealed, [("mqtt-packet", 2 if config.qos else 1)])
        sent += 1
    deadline = time.monotonic() + max(5.0, config.drain_s)
    for info in pending:  # QoS>0: the run ends when the broker has acknowledged everything
        info.wait_for_publish(max(0.0, deadline - time.monotonic()))
    unacked = sum(1 for info in pending if not info.is_published())
    session.event("publish_end", sent=sent, unacknowledged=unacked)
    return sent


def emit(session: AgentSession) -> None:
    session.connect()
    keys = establish_keys(session) if session.scheme.key_establishment else None
    sent = publish_loop(session, keys)
    assert session.client is not None
    # Test hook (``fault``): "drop-end" leaves the end message out, as a broker drops it
    # with data when its queue for a slow receiver overflows (agents/receiver.py).
    if session.config.fault != "drop-end":
        end = session.client.publish(session.topic("ctl/end"), json.dumps({"sent": sent}), qos=1)
        end.wait_for_publish(session.config.connect_timeout_s)
    session.writer.write("counters", name="messages_sent", value=sent)


def main(argv: list[str] | None = None) -> None:
    run_agent("emitter", emit, argv)


if __name__ == "__main__":
    main()
