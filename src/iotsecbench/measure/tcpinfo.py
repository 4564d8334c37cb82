"""Kernel TCP counters of one connection, read with ``getsockopt(IPPROTO_TCP, TCP_INFO)``.

The Linux ``struct tcp_info`` (``include/uapi/linux/tcp.h``) only ever grows at its end, and the
kernel copies ``min(requested, sizeof)`` bytes. We ask for more than any kernel has and parse
each field by its fixed offset; a field the running kernel does not fill (older kernels return
a shorter struct) reads as 0, and :attr:`TcpInfo.struct_bytes` records how much the kernel gave
so a consumer can tell "0" from "not reported". Kernel versions that added the fields we use:

=====================================================  =======  ==========
fields                                                 offset   kernel
=====================================================  =======  ==========
state … total_retrans (the original struct)            0–103    2.6
pacing_rate                                            104      3.15
bytes_acked, bytes_received                            120      4.1
segs_out, segs_in                                      136      4.2
notsent_bytes, min_rtt, data_segs_in, data_segs_out    144      4.6
delivery_rate                                          160      4.9
busy_time                                              168      4.10
delivered, delivered_ce                                192      4.18
bytes_sent, bytes_retrans                              200      4.19
snd_wnd                                                228      5.4
=====================================================  =======  ==========

Counting conventions (checked against ``ss -ti`` in ``tests/validation/test_measure_tcpinfo.py``):
``bytes_sent`` counts payload bytes handed to IP, retransmissions included; ``bytes_acked``
counts sequence space acknowledged by the peer, so on the *connecting* side it includes the
SYN (N payload bytes acknowledged → ``bytes_acked == N + 1``) and, after shutdown, the FIN;
``bytes_received`` counts payload bytes received in order (the peer's SYN is not counted, its
FIN is: +1 once the peer has closed). ``segs_out``/``segs_in`` include the handshake segments,
except that an accepted socket's ``segs_out`` misses its SYN-ACK (sent by the listener).
For TLS sockets every figure is TLS record bytes, i.e. ciphertext plus record overhead.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, fields

__all__ = ["TCP_STATES", "TcpInfo", "read_tcp_info"]

# Enough for every kernel so far (6.x returns < 300 bytes); the kernel truncates to its own size.
_REQUEST_BYTES = 512
# The struct as of Linux 2.6 ends after tcpi_total_retrans; shorter replies are not tcp_info.
_MINIMUM_STRUCT_BYTES = 104
# The kernel reports "no RTT sample yet" in tcpi_min_rtt as ~0U.
_UNSET_U32 = 0xFFFFFFFF

# tcp_states.h numbering.
TCP_STATES: dict[int, str] = {
    1: "ESTABLISHED",
    2: "SYN_SENT",
    3: "SYN_RECV",
    4: "FIN_WAIT1",
    5: "FIN_WAIT2",
    6: "TIME_WAIT",
    7: "CLOSE",
    8: "CLOSE_WAIT",
    9: "LAST_ACK",
    10: "LISTEN",
    11: "CLOSING",
    12: "NEW_SYN_RECV",
}

# field name -> (byte offset in struct tcp_info, struct format); native little/big endian "=".
_LAYOUT: dict[str, tuple[int, str]] = {
    "state": (0, "B"),
    "ca_state": (1, "B"),
    "retransmits": (2, "B"),
    "rto_us": (8, "I"),
    "snd_mss_bytes": (16, "I"),
    "rcv_mss_bytes": (20, "I"),
    "unacked": (24, "I"),
    "lost": (32, "I"),
    "retrans": (36, "I"),
    "pmtu_bytes": (60, "I"),
    "rtt_us": (68, "I"),
    "rttvar_us": (72, "I"),
    "snd_ssthresh": (76, "I"),
    "snd_cwnd": (80, "I"),
    "rcv_space_bytes": (96, "I"),
    "total_retrans": (100, "I"),
    "pacing_rate_bytes_per_s": (104, "Q"),
    "bytes_acked": (120, "Q"),
    "bytes_received": (128, "Q"),
    "segs_out": (136, "I"),
    "segs_in": (140, "I"),
    "notsent_bytes": (144, "I"),
    "min_rtt_us": (148, "I"),
    "data_segs_in": (152, "I"),
    "data_segs_out": (156, "I"),
    "delivery_rate_bytes_per_s": (160, "Q"),
    "busy_time_us": (168, "Q"),
    "delivered": (192, "I"),
    "delivered_ce": (196, "I"),
    "bytes_sent": (200, "Q"),
    "bytes_retrans": (208, "Q"),
    "snd_wnd_bytes": (228, "I"),
}


@dataclass(frozen=True)
class TcpInfo:
    """One reading of a connection's kernel TCP counters (cumulative since connect).

    A field the running kernel does not report is 0 (see the module docstring for versions).
    """

    struct_bytes: int  # length of struct tcp_info the kernel returned
    state: int  # TCP state number, see TCP_STATES (1 = ESTABLISHED)
    ca_state: int  # congestion-avoidance state (0 = Open)
    retransmits: int  # consecutive retransmission timeouts in progress
    rto_us: int  # retransmission timeout, µs
    snd_mss_bytes: int  # sender maximum segment size
    rcv_mss_bytes: int  # receiver MSS estimate
    unacked: int  # segments in flight, not yet acknowledged
    lost: int  # segments considered lost
    retrans: int  # segments currently retransmitted and unacknowledged
    pmtu_bytes: int  # path MTU
    rtt_us: int  # smoothed round-trip time, µs
    rttvar_us: int  # round-trip time variation, µs
    snd_ssthresh: int  # slow-start threshold, segments
    snd_cwnd: int  # congestion window, segments
    rcv_space_bytes: int  # receive-buffer autotuning space
    total_retrans: int  # segments retransmitted over the connection's life
    pacing_rate_bytes_per_s: int  # current pacing rate
    bytes_acked: int  # sequence space acknowledged by the peer (SYN/FIN included, see module doc)
    bytes_received: int  # payload bytes received in order (+1 once the peer's FIN arrived)
    segs_out: int  # segments sent, including pure ACKs and retransmissions
    segs_in: int  # segments received, including pure ACKs
    notsent_bytes: int  # bytes in the send queue not yet sent
    min_rtt_us: int  # minimum RTT seen, µs (0 when no sample yet)
    data_segs_in: int  # segments received that carried payload
    data_segs_out: int  # segments sent that carried payload
    delivery_rate_bytes_per_s: int  # most recent delivery-rate estimate
    busy_time_us: int  # time with data in flight, µs
    delivered: int  # segments delivered (SYN included on the connecting side)
    delivered_ce: int  # delivered segments marked ECN congestion-experienced
    bytes_sent: int  # payload bytes sent, retransmissions included
    bytes_retrans: int  # payload bytes retransmitted
    snd_wnd_bytes: int  # peer's advertised receive window after scaling

    @property
    def state_name(self) -> str:
        """Human-readable TCP state, e.g. ``"ESTABLISHED"``."""
        return TCP_STATES.get(self.state, f"UNKNOWN({self.state})")

    def to_dict(self) -> dict[str, int]:
        """Plain dict of every field, for JSON lines."""
        return {field.name: getattr(self, field.name) for field in fields(self)}

    @classmethod
    def from_bytes(cls, raw: bytes) -> TcpInfo:
        """Parse a ``struct tcp_info`` buffer; fields beyond its end read as 0."""
        if len(raw) < _MINIMUM_STRUCT_BYTES:
            raise ValueError(
                f"struct tcp_info too short: {len(raw)} bytes, "
                f"need at least {_MINIMUM_STRUCT_BYTES}"
            )
        values: dict[str, int] = {}
        for name, (offset, code) in _LAYOUT.items():
            if offset + struct.calcsize(code) <= len(raw):
                values[name] = struct.unpack_from("=" + code, raw, offset)[0]
            else:
                values[name] = 0
        if values["min_rtt_us"] == _UNSET_U32:
            values["min_rtt_us"] = 0
        return cls(struct_bytes=len(raw), **values)


def read_tcp_info(sock: socket.socket) -> TcpInfo | None:
    """Read the kernel's TCP counters for ``sock``; None when there are none to read.

    Works for plain sockets and ``ssl.SSLSocket`` (a ``socket.socket`` subclass whose
    ``getsockopt`` reaches the underlying TCP socket). Returns None for a closed socket, a
    non-TCP socket, or a platform without ``TCP_INFO``; never raises ``OSError``.
    """
    tcp_info_option = getattr(socket, "TCP_INFO", None)
    if tcp_info_option is None:
        return None
    try:
        if sock.fileno() < 0:
            return None
        if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
            return None
        raw = sock.getsockopt(socket.IPPROTO_TCP, tcp_info_option, _REQUEST_BYTES)
    except OSError:
        # Closed between the checks and the call, or the kernel refuses: nothing to read.
        return None
    if len(raw) < _MINIMUM_STRUCT_BYTES:
        return None
    return TcpInfo.from_bytes(raw)
