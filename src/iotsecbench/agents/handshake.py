"""The timed MQTT connection, shared by the agents and ``bench handshake``.

``measured_tls_handshake``: one TLS handshake on a connected TCP socket, measured — wall
time, the calling thread's CPU time (the handshake's computing; OpenSSL runs in the calling
thread), the process's CPU time, and the kernel's TCP counters before and after (bytes and
segments each way, retransmissions). ``TimedClient``: paho's client with its own socket
set-up timed, so the phases are exactly what paho does: ``tcp_connect`` (socket connect),
``tls_handshake`` (``do_handshake``), then the socket is ready for MQTT CONNECT.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import paho.mqtt.client as mqtt

from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import process_cpu_ns, thread_cpu_ns
from iotsecbench.measure.tcpinfo import TcpInfo, read_tcp_info


@dataclass(frozen=True)
class TlsHandshakeMeasurement:
    """What one ``do_handshake`` cost the client."""

    t_start_ns: int  # monotonic, just before do_handshake
    t_end_ns: int  # monotonic, when do_handshake returned
    thread_cpu_ns: int  # CPU time of the handshaking thread: the client's computing
    process_cpu_ns: int  # CPU time of the whole client process over the same interval
    tcp_bytes_sent: int | None  # TCP payload bytes sent during the handshake (TCP_INFO)
    tcp_bytes_received: int | None  # TCP payload bytes received during the handshake
    tcp_segments_out: int | None  # TCP segments sent (pure ACKs included)
    tcp_segments_in: int | None  # TCP segments received
    tcp_retransmissions: int | None  # segments the client retransmitted
    tcp_mss: int | None = None  # the connection's send MSS after the handshake (TCP_INFO)

    @property
    def wall_ns(self) -> int:
        return self.t_end_ns - self.t_start_ns

    @property
    def wait_ns(self) -> int:
        """Wall time not spent computing in the handshaking thread: network, server, peer."""
        return max(0, self.wall_ns - self.thread_cpu_ns)

    def to_dict(self) -> dict[str, int | None]:
        record = asdict(self)
        record["wall_ns"] = self.wall_ns
        record["wait_ns"] = self.wait_ns
        return record


def _counters(info: TcpInfo | None) -> tuple[int, int, int, int, int] | None:
    if info is None:
        return None
    return (info.bytes_sent, info.bytes_received, info.segs_out, info.segs_in, info.total_retrans)


def measured_tls_handshake(
    context: ssl.SSLContext,
    tcp_sock: socket.socket,
    server_hostname: str,
    *,
    session: ssl.SSLSession | None = None,
    timeout: float | None = None,
    mark: Callable[[str], None] | None = None,
) -> tuple[ssl.SSLSocket, TlsHandshakeMeasurement]:
    """Wrap ``tcp_sock`` (connected) and complete the handshake, offering ``session``;
    ``mark`` (a trace marker, ``bench handshake --trace``) opens the ``CLIENT_HELLO`` group
    just before it and ``MQTT_CONNECT`` just after."""
    before = _counters(read_tcp_info(tcp_sock))  # wrap_socket detaches tcp_sock: read it first
    ssl_sock = context.wrap_socket(
        tcp_sock, server_hostname=server_hostname, do_handshake_on_connect=False, session=session
    )
    ssl_sock.settimeout(timeout)
    process_start = process_cpu_ns()
    if mark is not None:
        mark("iotsb grp CLIENT_HELLO")
    t_start, cpu_start = now_ns(), thread_cpu_ns()
    ssl_sock.do_handshake()
    t_end, cpu_end = now_ns(), thread_cpu_ns()
    if mark is not None:
        mark("iotsb grp MQTT_CONNECT")
    process_end = process_cpu_ns()
    info = read_tcp_info(ssl_sock)
    after = _counters(info)
    deltas: list[int | None] = (
        [a - b for a, b in zip(after, before, strict=True)]
        if before is not None and after is not None
        else [None] * 5
    )
    return ssl_sock, TlsHandshakeMeasurement(
        t_start,
        t_end,
        cpu_end - cpu_start,
        process_end - process_start,
        *deltas,
        tcp_mss=info.snd_mss_bytes if info is not None else None,
    )


# name, t_start_ns, t_end_ns, thread CPU ns, detail: one connection phase as it completes
PhaseCallback = Callable[[str, int, int, int, dict[str, Any]], None]


class TimedClient(mqtt.Client):
    """paho's client with the TCP connect and the TLS handshake timed in its two socket hooks.

    Each completed phase goes to ``on_phase`` (the agents write it as a ``handshake`` record)
    and stays on the client (``tcp_connect``, ``tls_handshake``); ``socket_ready_ns`` is when
    the socket was ready for MQTT CONNECT. ``tls_session``, when set, is offered for
    resumption (paho's own wrap cannot offer a session); the context checks the host name.
    ``mark``, when given, writes the trace markers that open the connection's groups
    (``TCP_CONNECT``, then ``measured_tls_handshake``'s) for ``bench handshake --trace``.
    """

    def __init__(
        self,
        *,
        on_phase: PhaseCallback | None = None,
        tcp_nodelay: bool = True,
        handshake_timeout_s: float | None = None,
        mark: Callable[[str], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._mark = mark
        self._on_phase = on_phase
        self._tcp_nodelay = tcp_nodelay
        self._handshake_timeout_s = handshake_timeout_s
        self.tls_session: ssl.SSLSession | None = None
        self.tcp_connect: tuple[int, int, int] | None = None  # start, end, thread CPU
        self.tls_handshake: TlsHandshakeMeasurement | None = None
        self.socket_ready_ns: int | None = None

    def _phase(self, name: str, start: int, end: int, cpu: int, detail: dict[str, Any]) -> None:
        if self._on_phase is not None:
            self._on_phase(name, start, end, cpu, detail)

    def _create_socket_connection(self) -> socket.socket:
        if self._mark is not None:
            self._mark("iotsb grp TCP_CONNECT")
        t0, c0 = now_ns(), thread_cpu_ns()
        sock = super()._create_socket_connection()
        self.tcp_connect = (t0, now_ns(), thread_cpu_ns() - c0)
        self._phase("tcp_connect", *self.tcp_connect, {})
        if self._tcp_nodelay:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def _ssl_wrap_socket(self, tcp_sock: socket.socket) -> ssl.SSLSocket:
        assert self._ssl_context is not None
        timeout = self._handshake_timeout_s
        ssl_sock, measured = measured_tls_handshake(
            self._ssl_context,
            tcp_sock,
            self._host,
            session=self.tls_session,
            timeout=timeout if timeout is not None else self._connect_timeout,
            mark=self._mark,
        )
        self.tls_handshake = measured
        detail: dict[str, Any] = {
            key: value
            for key, value in measured.to_dict().items()
            if key not in ("t_start_ns", "t_end_ns", "wall_ns", "thread_cpu_ns")
        }
        detail["cpu_scope"] = "thread (the handshake runs in the connecting thread)"
        detail["session_offered"] = self.tls_session is not None
        self._phase(
            "tls_handshake", measured.t_start_ns, measured.t_end_ns, measured.thread_cpu_ns, detail
        )
        return ssl_sock

    def _create_socket(self) -> Any:
        sock = super()._create_socket()
        self.socket_ready_ns = now_ns()
        return sock
