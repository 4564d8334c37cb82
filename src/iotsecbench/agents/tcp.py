"""The ``tcp`` transport: emitter and receiver on one TCP connection, no broker (the
`block-sizes` study). ``python -m iotsecbench.agents.tcp --config FILE`` runs either role.

The receiver listens, prints ``READY``, and serves connections one after the other: a
connection whose frames cannot be read (oversize length, unknown kind, cut off) is counted
as ``malformed`` and closed, and the receiver waits for the next; the run ends with the
connection that sends the end frame. Over it: TLS directly on the socket when the
configuration asks for it (the receiver is the TLS server), then the scheme's key
establishment (frames ``H``, ``K``, ``R``), then the data blocks (``D``), each returned
resealed (``C``) with the ``echo`` method. Frames: ``agents/framing.py``.

Records are the MQTT agents' (``message``, ``handshake``, ``operation``, ``counters``…), so
the runner turns them into rows the same way; the emitter adds one ``echo`` record per
returned block. ``saturating`` sends the next block as soon as the previous one is written
(``echo``: returned) until ``duration_s`` is over.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import sys
import time
from pathlib import Path
from typing import Any

from iotsecbench.agents import framing, wire
from iotsecbench.agents.config import AgentConfig
from iotsecbench.agents.handshake import measured_tls_handshake
from iotsecbench.agents.receiver import COUNTERS
from iotsecbench.agents.session import AgentFailure, AgentSession, run_agent
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import thread_cpu_ns
from iotsecbench.security.key_establishment import (
    EmitterKeyExchange,
    ReceiverKeyExchange,
    export_key_log_lines,
)
from iotsecbench.security.schemes.base import (
    AuthenticationError,
    MalformedMessageError,
    ReplayError,
)
from iotsecbench.security.tls import (
    SERVER_NAME,
    TlsProfile,
    server_context,
)

LENGTH_HEADER_BYTES = framing.HEADER.size  # per frame, beside the scheme's own overhead
# The emitter's per-block record, in this order (the same fields as over MQTT).
MESSAGE_FIELDS = (
    "seq", "payload_bytes", "wire_bytes", "t_created_ns", "t_sealed_ns", "t_published_ns",
    "seal_cpu_ns",
)  # fmt: skip


def _send(sock: socket.socket, kind: bytes, body: bytes) -> int:
    frame = framing.encode(kind, body)
    sock.sendall(frame)
    return len(frame)


def _expect(sock: socket.socket, kind: bytes, what: str) -> bytes:
    frame = framing.read_frame(sock)
    if frame is None:
        raise AgentFailure(f"the peer closed the connection before {what}")
    if frame[0] != kind:
        raise AgentFailure(f"expected {what} (frame {kind!r}), got frame {frame[0]!r}")
    return frame[1]


# -- emitter ---------------------------------------------------------------------------


def _connect(session: AgentSession) -> socket.socket:
    config = session.config
    t0, c0 = now_ns(), thread_cpu_ns()
    try:
        sock = socket.create_connection((config.host, config.port), config.connect_timeout_s)
    except OSError as error:
        raise AgentFailure(f"cannot connect to {config.host}:{config.port}: {error}") from None
    session.record_phase("tcp_connect", t0, now_ns(), thread_cpu_ns() - c0, {})
    if config.tcp_nodelay:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    session.tcp_socket = sock
    if config.tls is None:
        return sock
    context = session.tls_client_context()
    try:
        tls_sock, measured = measured_tls_handshake(
            context, sock, SERVER_NAME, timeout=config.connect_timeout_s
        )
    except (OSError, ssl.SSLError) as error:
        raise AgentFailure(f"TLS handshake with the receiver failed: {error}") from None
    detail = {
        key: value
        for key, value in measured.to_dict().items()
        if key not in ("t_start_ns", "t_end_ns", "wall_ns", "thread_cpu_ns")
    }
    detail["cpu_scope"] = "thread (the handshake runs in the connecting thread)"
    session.record_phase(
        "tls_handshake", measured.t_start_ns, measured.t_end_ns, measured.thread_cpu_ns, detail
    )
    session.tcp_socket = tls_sock
    session.record_negotiated(tls_sock, measured.t_end_ns)
    return tls_sock


def _emitter_keys(session: AgentSession, sock: socket.socket) -> Any:
    exchange = EmitterKeyExchange(
        session.scheme.name, session.pre_shared_key(), session.pinned_keys()
    )
    hello = _expect(sock, b"H", "the receiver's key-exchange hello")
    t_start, cpu_start = now_ns(), thread_cpu_ns()
    reply = exchange.on_receiver_hello(hello)
    cpu_ns = thread_cpu_ns() - cpu_start
    _send(sock, b"K", reply)
    ready = _expect(sock, b"R", "the receiver's key confirmation")
    cpu_start = thread_cpu_ns()
    keys = exchange.on_ready(ready)
    cpu_ns += thread_cpu_ns() - cpu_start
    session.record_key_exchange(
        (t_start, now_ns()),
        cpu_ns,
        exchange.operations(),
        bytes_out=len(reply),
        bytes_in=len(hello) + len(ready),
        messages=3,
        span="receiver hello received -> key confirmation verified",
    )
    return keys


def _send_blocks(session: AgentSession, sock: socket.socket, keys: Any) -> int:
    config = session.config
    scheme = session.scheme
    sealer = scheme.sealer(keys.emitter_to_receiver if keys is not None else None)
    echo = config.method == "echo"
    opener = scheme.opener(keys.receiver_to_emitter if keys is not None else None) if echo else None
    payload_bytes = config.payload_bytes
    filler = wire.make_filler(payload_bytes, config.seed)
    seal_operations = scheme.seal_operations(payload_bytes)
    open_operations = scheme.open_operations(payload_bytes)
    period_ns = round(1e9 / config.rate_hz)
    start_ns = now_ns()
    end_ns = start_ns + round(config.duration_s * 1e9)
    limit = None if config.saturating else config.message_count
    tls = session.negotiated is not None
    write_message = session.writer.integer_writer("message", MESSAGE_FIELDS)
    encode_frame, sendall = framing.encode, sock.sendall
    session.event("publish_start", saturating=config.saturating, method=config.method)
    seq, now = 0, now_ns()
    # The saturating path is what the block-sizes study measures: per block it reads the
    # clocks, seals, sends and appends one record line, and nothing else (no Python call
    # that has nothing to do; benchmarks/README.md, tcp transport).
    while (limit is None and now < end_ns) or (limit is not None and seq < limit):
        config.fault_at(seq, session.writer)
        if limit is not None:
            delay_ns = start_ns + seq * period_ns - now_ns()
            if delay_ns > 0:
                time.sleep(delay_ns / 1e9)
        t_created, cpu_start = now_ns(), thread_cpu_ns()
        sealed = sealer.seal(wire.encode(seq, t_created, filler))
        seal_cpu_ns = thread_cpu_ns() - cpu_start
        t_sealed = now_ns()
        frame = encode_frame(b"D", sealed)
        try:
            sendall(frame)
        except OSError as error:
            raise AgentFailure(f"lost the connection after {seq} blocks: {error}") from None
        now = t_published = now_ns()
        write_message(seq, payload_bytes, len(frame), t_created, t_sealed, t_published, seal_cpu_ns)
        if seal_operations:
            session.operations(t_created, seal_operations)
        if tls:
            session.operations(t_sealed, session.record_operations(len(frame)))
        if opener is not None:
            returned = _expect(sock, b"C", f"the echo of block {seq}")
            t_returned, cpu_start = now_ns(), thread_cpu_ns()
            try:
                echoed_seq, _ = wire.decode(opener.open(returned).plaintext)
            except (AuthenticationError, MalformedMessageError, ReplayError, ValueError):
                raise AgentFailure(f"the echo of block {seq} does not verify") from None
            open_cpu_ns = thread_cpu_ns() - cpu_start
            if echoed_seq != seq:
                raise AgentFailure(f"the echo of block {seq} carries block {echoed_seq}")
            session.writer.write_integers(
                "echo",
                seq=seq,
                t_sent_ns=t_created,
                t_returned_ns=t_returned,
                t_opened_ns=now_ns(),
                open_cpu_ns=open_cpu_ns,
                wire_bytes=len(returned) + LENGTH_HEADER_BYTES,
            )
            session.operations(t_returned, open_operations)
        seq += 1
    session.event("publish_end", sent=seq)
    return seq


def emit(session: AgentSession) -> None:
    sock = _connect(session)
    keys = _emitter_keys(session, sock) if session.scheme.key_establishment else None
    sent = _send_blocks(session, sock, keys)
    _send(sock, b"Z", json.dumps({"sent": sent}).encode())
    session.writer.write("counters", name="messages_sent", value=sent)
    # The receiver closes once it has read the end frame: every block has been read.
    sock.settimeout(session.config.connect_timeout_s + session.config.drain_s)
    with contextlib.suppress(OSError, framing.FrameError):
        while framing.read_frame(sock) is not None:
            pass
    with contextlib.suppress(OSError):
        sock.close()


# -- receiver --------------------------------------------------------------------------


class _Connection:
    """One accepted connection: its keys and what it delivered."""

    def __init__(self, session: AgentSession, counts: dict[str, int]) -> None:
        self.session, self.counts = session, counts
        scheme = session.scheme
        self.opener: Any = None if scheme.key_establishment else scheme.opener(None)
        self.sealer: Any = None if scheme.key_establishment else scheme.sealer(None)
        self.open_operations = scheme.open_operations(session.config.payload_bytes)
        self.seal_operations = scheme.seal_operations(session.config.payload_bytes)
        self.delivered: set[int] = set()
        self.write_message = session.writer.integer_writer(
            "message",
            (
                "seq", "wire_bytes", "t_created_ns", "t_arrived_ns", "t_delivered_ns",
                "open_cpu_ns",
            ),
        )  # fmt: skip

    def keys(self, sock: socket.socket) -> None:
        session = self.session
        exchange = ReceiverKeyExchange(
            session.scheme.name, session.pre_shared_key(), session.pinned_keys()
        )
        _send(sock, b"H", exchange.hello())
        message = _expect(sock, b"K", "the emitter's key-exchange message")
        t_start, cpu_start = now_ns(), thread_cpu_ns()
        try:
            ready, keys = exchange.on_emitter_message(message)
        except Exception as error:  # a forged or broken key message ends this connection
            raise framing.FrameError(f"key exchange rejected: {type(error).__name__}") from None
        self.opener = session.scheme.opener(keys.emitter_to_receiver)
        self.sealer = session.scheme.sealer(keys.receiver_to_emitter)
        cpu_ns = thread_cpu_ns() - cpu_start
        _send(sock, b"R", ready)
        session.record_key_exchange(
            (t_start, now_ns()),
            cpu_ns,
            exchange.operations(),
            bytes_out=len(ready),
            bytes_in=len(message),
            span="emitter key received -> key confirmation sent",
        )
        session.write_key_log(export_key_log_lines(keys, session.scheme.name))

    def block(self, sock: socket.socket, body: bytes) -> None:
        session, counts = self.session, self.counts
        t_arrived = now_ns()
        counts["messages_received"] += 1
        if session.negotiated is not None:
            session.operations(
                t_arrived, session.record_operations(len(body) + LENGTH_HEADER_BYTES)
            )
        cpu_start = thread_cpu_ns()
        try:
            opened = self.opener.open(body)
            seq, t_created = wire.decode(opened.plaintext)
        except AuthenticationError:
            self._reject("auth_failures", t_arrived, body)
            return
        except (MalformedMessageError, ValueError):
            self._reject("malformed", t_arrived, body)
            return
        except ReplayError:
            self._reject("replays_rejected", t_arrived, body)
            return
        open_cpu_ns = thread_cpu_ns() - cpu_start
        t_delivered = now_ns()
        if self.open_operations:
            session.operations(t_arrived, self.open_operations)
        if seq in self.delivered:
            counts["duplicates"] += 1
            return
        self.delivered.add(seq)
        counts["messages_delivered"] += 1
        self.write_message(
            seq, len(body) + LENGTH_HEADER_BYTES, t_created, t_arrived, t_delivered, open_cpu_ns
        )
        if session.config.method == "echo":
            resealed = self.sealer.seal(opened.plaintext)
            session.operations(t_delivered, self.seal_operations)
            session.operations(t_delivered, session.record_operations(len(resealed)))
            _send(sock, b"C", resealed)

    def _reject(self, counter: str, t_arrived: int, body: bytes) -> None:
        self.counts[counter] += 1
        self.session.event("rejected", reason=counter, t_arrived_ns=t_arrived, bytes=len(body))

    def serve(self, sock: socket.socket) -> int | None:
        """Read frames until the end frame (returns the emitter's count) or a clean close."""
        if self.session.scheme.key_establishment:
            self.keys(sock)
        reader = framing.FrameReader(sock)  # from here on, every read goes through it
        while True:
            frame = reader.read_frame()
            if frame is None:
                return None
            kind, body = frame
            if kind == b"D":
                self.block(sock, body)
            elif kind == b"Z":
                try:
                    return int(json.loads(body)["sent"])
                except (ValueError, KeyError, TypeError):
                    raise framing.FrameError("unreadable end frame") from None
            else:
                raise framing.FrameError(f"unexpected frame {kind!r} in the data phase")


def _tls_server(session: AgentSession) -> ssl.SSLContext | None:
    tls = session.config.tls
    if tls is None:
        return None
    if tls.server_cert is None or tls.server_key is None:
        raise AgentFailure("a TLS configuration over tcp needs the server certificate and key")
    return server_context(TlsProfile(**tls.profile), tls.ca_file, tls.server_cert, tls.server_key)


def receive(session: AgentSession) -> None:
    config = session.config
    counts = dict.fromkeys(COUNTERS, 0)
    context = _tls_server(session)
    listener = socket.create_server((config.host, config.port))
    listener.settimeout(3 * config.connect_timeout_s)
    print("READY", flush=True)  # the runner starts the emitter only after this line
    expected = None
    try:
        while expected is None:
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                raise AgentFailure("no emitter connected within the connect timeout") from None
            raw.settimeout(config.connect_timeout_s + config.duration_s + config.drain_s)
            if config.tcp_nodelay:
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection = _Connection(session, counts)
            try:
                sock = context.wrap_socket(raw, server_side=True) if context else raw
                session.tcp_socket = sock
                expected = connection.serve(sock)
            except (framing.FrameError, ssl.SSLError, AgentFailure) as error:
                counts["malformed"] += 1
                session.event("connection_rejected", error=str(error))
            except OSError as error:
                session.event("connection_lost", error=str(error))
            finally:
                session.tcp_socket = None
                with contextlib.suppress(OSError):
                    raw.close()
            if expected is not None:
                session.event("end_received", expected=expected)
    finally:
        listener.close()
    for name, value in counts.items():
        session.writer.write("counters", name=name, value=value)


def main(argv: list[str] | None = None) -> None:
    role = _role_of(argv)
    run_agent(role, emit if role == "emitter" else receive, argv)


def _role_of(argv: list[str] | None) -> str:
    """The role named in the config file (one program serves both ends)."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = Path(args[args.index("--config") + 1]) if "--config" in args[:-1] else None
    if path is None:
        raise SystemExit("usage: python -m iotsecbench.agents.tcp --config FILE")
    return AgentConfig.from_file(path).role


if __name__ == "__main__":
    main()
