"""struct tcp_info parsing by offset (synthetic buffers) and the None cases of read_tcp_info."""

from __future__ import annotations

import socket
import struct

import pytest

from iotsecbench.measure.tcpinfo import TcpInfo, read_tcp_info


def _buffer(length: int) -> bytearray:
    raw = bytearray(length)
    raw[0] = 1  # ESTABLISHED
    struct.pack_into("=II", raw, 68, 1234, 567)  # rtt, rttvar
    struct.pack_into("=I", raw, 80, 10)  # snd_cwnd
    struct.pack_into("=I", raw, 100, 3)  # total_retrans
    if length >= 136:
        struct.pack_into("=QQ", raw, 120, 5001, 7000)  # bytes_acked, bytes_received
    if length >= 144:
        struct.pack_into("=II", raw, 136, 11, 12)  # segs_out, segs_in
    if length >= 160:
        struct.pack_into("=IIII", raw, 144, 0, 900, 6, 5)  # notsent, min_rtt, data in, data out
    if length >= 200:
        struct.pack_into("=I", raw, 192, 6)  # delivered
    if length >= 216:
        struct.pack_into("=QQ", raw, 200, 5000, 100)  # bytes_sent, bytes_retrans
    return raw


def test_full_struct_fields_at_their_offsets() -> None:
    info = TcpInfo.from_bytes(bytes(_buffer(280)))
    assert info.struct_bytes == 280
    assert info.state == 1 and info.state_name == "ESTABLISHED"
    assert (info.rtt_us, info.rttvar_us, info.snd_cwnd, info.total_retrans) == (1234, 567, 10, 3)
    assert (info.bytes_acked, info.bytes_received) == (5001, 7000)
    assert (info.segs_out, info.segs_in) == (11, 12)
    assert (info.min_rtt_us, info.data_segs_in, info.data_segs_out) == (900, 6, 5)
    assert info.delivered == 6
    assert (info.bytes_sent, info.bytes_retrans) == (5000, 100)
    assert info.to_dict()["bytes_sent"] == 5000


@pytest.mark.parametrize(
    ("length", "has_bytes_acked", "has_segs", "has_bytes_sent"),
    [
        (104, False, False, False),
        (136, True, False, False),
        (160, True, True, False),
        (216, True, True, True),
    ],
)
def test_shorter_structs_from_older_kernels_read_missing_fields_as_zero(
    length: int, has_bytes_acked: bool, has_segs: bool, has_bytes_sent: bool
) -> None:
    info = TcpInfo.from_bytes(bytes(_buffer(length)))
    assert info.struct_bytes == length
    assert info.rtt_us == 1234  # in the original 2.6 struct
    assert info.bytes_acked == (5001 if has_bytes_acked else 0)
    assert info.segs_out == (11 if has_segs else 0)
    assert info.bytes_sent == (5000 if has_bytes_sent else 0)


def test_unset_min_rtt_reads_as_zero() -> None:
    raw = _buffer(200)
    struct.pack_into("=I", raw, 148, 0xFFFFFFFF)
    assert TcpInfo.from_bytes(bytes(raw)).min_rtt_us == 0


def test_too_short_buffer_is_rejected() -> None:
    with pytest.raises(ValueError, match="too short"):
        TcpInfo.from_bytes(bytes(50))


def test_udp_and_closed_sockets_give_none() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        assert read_tcp_info(udp) is None
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.close()
    assert read_tcp_info(tcp) is None


def test_unix_stream_socket_gives_none() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert read_tcp_info(left) is None


def test_unconnected_tcp_socket_reads_close_state() -> None:
    if not hasattr(socket, "TCP_INFO"):
        pytest.skip("platform has no TCP_INFO")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
        info = read_tcp_info(tcp)
        assert info is not None and info.state_name == "CLOSE"
        assert info.bytes_sent == 0
