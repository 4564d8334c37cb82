"""One TLS handshake on a connected TCP socket, measured: wall time, the calling thread's CPU
time (the handshake's computing; OpenSSL runs in the calling thread), the process's CPU time,
and the kernel's TCP counters before and after (bytes and segments each way,
retransmissions). Shared by the agents (inside paho's socket set-up) and ``bench handshake``.
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import asdict, dataclass

from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import process_cpu_ns, thread_cpu_ns
from iotsecbench.measure.tcpinfo import read_tcp_info


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


def _counters(sock: socket.socket) -> tuple[int, int, int, int, int] | None:
    info = read_tcp_info(sock)
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
) -> tuple[ssl.SSLSocket, TlsHandshakeMeasurement]:
    """Wrap ``tcp_sock`` (connected) and complete the handshake, offering ``session``."""
    before = _counters(tcp_sock)  # wrap_socket detaches tcp_sock: read it first
    ssl_sock = context.wrap_socket(
        tcp_sock, server_hostname=server_hostname, do_handshake_on_connect=False, session=session
    )
    ssl_sock.settimeout(timeout)
    process_start = process_cpu_ns()
    t_start, cpu_start = now_ns(), thread_cpu_ns()
    ssl_sock.do_handshake()
    t_end, cpu_end = now_ns(), thread_cpu_ns()
    process_end = process_cpu_ns()
    after = _counters(ssl_sock)
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
    )
