"""Frames of the tcp transport (agents/framing.py) on a real socket pair."""

from __future__ import annotations

import socket
import threading

import pytest

from iotsecbench.agents import framing

# Both ways of reading frames: exact reads (the key exchange) and through one buffer (the
# data phase); each must give the same frames and refuse the same bad input.
READERS = {
    "exact": lambda sock: lambda: framing.read_frame(sock),
    "buffered": lambda sock: framing.FrameReader(sock).read_frame,
}


@pytest.fixture(params=list(READERS))
def reader(request):
    return READERS[request.param]


@pytest.fixture
def pair():
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def test_frames_round_trip_in_order(pair, reader) -> None:
    left, right = pair
    for kind, body in ((b"H", b"hello"), (b"D", bytes(range(256)) * 40), (b"Z", b"")):
        left.sendall(framing.encode(kind, body))
    next_frame = reader(right)
    assert next_frame() == (b"H", b"hello")
    assert next_frame() == (b"D", bytes(range(256)) * 40)
    assert next_frame() == (b"Z", b"")
    left.close()
    assert next_frame() is None  # a clean close between frames


def test_the_buffered_reader_splits_many_frames_received_at_once(pair) -> None:
    left, right = pair
    blocks = [bytes([n % 256]) * (1000 + n) for n in range(200)]  # ~300 kB, several buffers
    sender = threading.Thread(
        target=lambda: left.sendall(b"".join(framing.encode(b"D", b) for b in blocks))
    )
    sender.start()
    next_frame = framing.FrameReader(right).read_frame
    assert [next_frame() for _ in blocks] == [(b"D", b) for b in blocks]
    sender.join()


def test_an_oversize_length_is_refused_before_reading_the_body(pair, reader) -> None:
    left, right = pair
    left.sendall(framing.HEADER.pack(framing.MAX_FRAME_BYTES + 1, ord("D")))
    with pytest.raises(framing.FrameError, match="outside"):
        reader(right)()
    with pytest.raises(framing.FrameError):
        framing.encode(b"D", bytes(framing.MAX_FRAME_BYTES))


def test_a_frame_cut_off_or_of_an_unknown_kind_is_refused(pair, reader) -> None:
    left, right = pair
    left.sendall(framing.HEADER.pack(6, ord("Q")) + b"hello")
    with pytest.raises(framing.FrameError, match="unknown frame kind"):
        reader(right)()
    other_left, other_right = socket.socketpair()
    other_left.sendall(framing.HEADER.pack(100, ord("D")) + b"short")
    other_left.close()
    with pytest.raises(framing.FrameError, match="closed inside a frame"):
        reader(other_right)()
    other_right.close()
    with pytest.raises(framing.FrameError, match="outside"):
        third_left, third_right = socket.socketpair()
        third_left.sendall(framing.HEADER.pack(0, ord("D")))
        reader(third_right)()
