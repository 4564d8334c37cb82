"""Frames of the tcp transport (agents/framing.py) on a real socket pair."""

from __future__ import annotations

import socket

import pytest

from iotsecbench.agents import framing


@pytest.fixture
def pair():
    left, right = socket.socketpair()
    yield left, right
    left.close()
    right.close()


def test_frames_round_trip_in_order(pair) -> None:
    left, right = pair
    for kind, body in ((b"H", b"hello"), (b"D", bytes(range(256)) * 40), (b"Z", b"")):
        left.sendall(framing.encode(kind, body))
    assert framing.read_frame(right) == (b"H", b"hello")
    assert framing.read_frame(right) == (b"D", bytes(range(256)) * 40)
    assert framing.read_frame(right) == (b"Z", b"")
    left.close()
    assert framing.read_frame(right) is None  # a clean close between frames


def test_an_oversize_length_is_refused_before_reading_the_body(pair) -> None:
    left, right = pair
    left.sendall(framing.HEADER.pack(framing.MAX_FRAME_BYTES + 1, ord("D")))
    with pytest.raises(framing.FrameError, match="outside"):
        framing.read_frame(right)
    with pytest.raises(framing.FrameError):
        framing.encode(b"D", bytes(framing.MAX_FRAME_BYTES))


def test_a_frame_cut_off_or_of_an_unknown_kind_is_refused(pair) -> None:
    left, right = pair
    left.sendall(framing.HEADER.pack(6, ord("Q")) + b"hello")
    with pytest.raises(framing.FrameError, match="unknown frame kind"):
        framing.read_frame(right)
    other_left, other_right = socket.socketpair()
    other_left.sendall(framing.HEADER.pack(100, ord("D")) + b"short")
    other_left.close()
    with pytest.raises(framing.FrameError, match="closed inside a frame"):
        framing.read_frame(other_right)
    other_right.close()
    with pytest.raises(framing.FrameError, match="outside"):
        third_left, third_right = socket.socketpair()
        third_left.sendall(framing.HEADER.pack(0, ord("D")))
        framing.read_frame(third_right)
