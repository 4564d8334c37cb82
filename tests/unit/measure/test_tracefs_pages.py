"""The ring-buffer page decoder on pages built by hand as the kernel lays them out
(include/linux/ring_buffer.h): the timestamps and fields it returns are the ones put in."""

from __future__ import annotations

import struct

from iotsecbench.measure.tracefs import PageLayout, parse_format, parse_pages

SWITCH_FORMAT = """name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;
"""
PRINT_FORMAT = """name: print
ID: 5
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;
\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;
"""
HEADER_PAGE = """\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;
"""


def header(type_len: int, delta: int) -> bytes:
    return struct.pack("<I", type_len | (delta << 5))


def switch_payload(prev: int, next_: int, state: int) -> bytes:
    return struct.pack(
        "<HBBi16siiq16sii", 372, 1, 2, prev, b"python", prev, 120, state, b"swapper/0", next_, 120
    )


def print_payload(pid: int, text: bytes) -> bytes:
    body = struct.pack("<HBBiQ", 5, 0, 1, pid, 0xFFFF) + text + b"\0"
    return body + b"\0" * (-len(body) % 4)


def page(base_ts: int, events: bytes, size: int = 4096) -> bytes:
    head = struct.pack("<QQ", base_ts, len(events))
    return (head + events).ljust(size, b"\0")


def test_events_deltas_time_extend_and_padding_decode_to_the_timestamps_put_in() -> None:
    switch = switch_payload(1234, 0, 1)  # 64 bytes: type_len 16
    marker = print_payload(1234, b"iotsb grp TCP_CONNECT")  # long: length word (type_len 0)
    events = (
        header(len(switch) // 4, 100) + switch
        # a time extend of 2**27 + 5 ns: too large for the 27-bit delta
        + header(30, 5) + struct.pack("<I", 1)
        + header(0, 7) + struct.pack("<I", len(marker) + 4) + marker
        + header(29, 3) + struct.pack("<I", 12) + b"\0" * 8  # discarded: length word + 8 bytes
        + header(len(switch) // 4, 1) + switch_payload(0, 1234, 0)
    )  # fmt: skip
    formats = {f.id: f for f in (parse_format("sched", "sched_switch", SWITCH_FORMAT),
                                 parse_format("ftrace", "print", PRINT_FORMAT))}  # fmt: skip
    layout = PageLayout.parse(HEADER_PAGE)
    assert (layout.data_offset, layout.page_size) == (16, 4096)
    decoded = list(parse_pages(page(1_000_000, events), 1, layout, formats))
    assert [e.name for e in decoded] == ["sched_switch", "print", "sched_switch"]
    assert [e.ts_ns for e in decoded] == [
        1_000_100,
        1_000_100 + (1 << 27) + 5 + 7,
        1_000_100 + (1 << 27) + 5 + 7 + 1,
    ]
    first, marker_event, last = decoded
    assert first.fields["prev_pid"] == 1234 and first.fields["prev_state"] == 1
    assert first.fields["prev_comm"] == "python" and first.fields["next_comm"] == "swapper/0"
    assert marker_event.fields["buf"] == "iotsb grp TCP_CONNECT" and marker_event.pid == 1234
    assert last.fields["next_pid"] == 1234 and last.cpu == 1


def test_two_pages_and_an_unknown_event_type() -> None:
    formats = {372: parse_format("sched", "sched_switch", SWITCH_FORMAT)}
    unknown = struct.pack("<HBBi", 999, 0, 0, 1) + b"\0" * 8
    one = page(10, header(16, 1) + switch_payload(1, 2, 0) + header(4, 1) + unknown)
    two = page(50, header(16, 2) + switch_payload(2, 1, 1))
    decoded = list(parse_pages(one + two, 0, PageLayout(), formats))
    assert [(e.ts_ns, e.fields["prev_pid"]) for e in decoded] == [(11, 1), (52, 2)]


def test_address_arrays_decode_as_bytes_and_ports_as_integers() -> None:
    text = """name: tcp_retransmit_skb
ID: 2281
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
\tfield:__u16 sport;\toffset:8;\tsize:2;\tsigned:0;
\tfield:__u8 saddr[4];\toffset:10;\tsize:4;\tsigned:0;
"""
    decoded = parse_format("tcp", "tcp_retransmit_skb", text).decode(
        struct.pack("<HBBiH4s", 2281, 0, 0, 7, 8883, bytes([127, 0, 0, 1]))
    )
    assert decoded["sport"] == 8883
    assert decoded["saddr"] == bytes([127, 0, 0, 1])
