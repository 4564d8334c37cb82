"""Frames of the ``tcp`` transport: what travels on the emitter–receiver connection.

Every frame is ``length`` (4 bytes, big-endian, unsigned) | ``kind`` (1 byte) | ``body``,
where ``length`` counts ``kind`` and ``body``. Kinds: ``H`` the receiver's key-exchange
hello, ``K`` the emitter's key-exchange message, ``R`` the receiver's key confirmation, ``D``
a data block (a sealed message), ``C`` an echoed block (resealed by the receiver), ``Z`` the
end (JSON ``{"sent": N}``). A ``length`` above ``MAX_FRAME_BYTES`` is refused before
anything is read, so a lying peer cannot make a reader allocate what it claims; a
connection closed inside a frame is a truncated frame. docs/wire-format.md.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

HEADER = struct.Struct(">IB")  # length (counts kind + body), kind
# The largest block is 1 MiB of payload (spec.models.TCP_MAX_BLOCK_BYTES); schemes add at
# most a few hundred bytes of header, nonce and tag.
MAX_FRAME_BYTES = (1 << 20) + 4096
KINDS = {b"H"[0], b"K"[0], b"R"[0], b"D"[0], b"C"[0], b"Z"[0]}


class FrameError(ValueError):
    """A frame that cannot be read: oversize length, unknown kind, or cut off."""


def encode(kind: bytes, body: bytes) -> bytes:
    if len(body) + 1 > MAX_FRAME_BYTES:
        raise FrameError(f"a frame of {len(body) + 1} B exceeds {MAX_FRAME_BYTES} B")
    return HEADER.pack(len(body) + 1, kind[0]) + body


def _read_exactly(sock: socket.socket, size: int, *, at_boundary: bool) -> bytes | None:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(size - got, 1 << 16))
        if not chunk:
            if at_boundary and got == 0:
                return None  # the peer closed between frames: a clean end
            raise FrameError(f"connection closed inside a frame ({got} of {size} B read)")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket) -> tuple[bytes, bytes] | None:
    """The next ``(kind, body)``, or None when the peer closed cleanly between frames. Reads
    exactly the frame's bytes, so other reads of the connection may follow (the key
    exchange); a data phase reads through a ``FrameReader``."""
    return _frame(lambda size, at_boundary: _read_exactly(sock, size, at_boundary=at_boundary))


class FrameReader:
    """Frames of one connection through one 64 KiB buffer: a receive call brings ~40 blocks
    of 1.5 kB instead of two calls per block (benchmarks/README.md, tcp transport). It may
    hold bytes already received, so every later read of the connection goes through it."""

    def __init__(self, sock: socket.socket) -> None:
        self._stream = sock.makefile("rb", buffering=1 << 16)

    def read_frame(self) -> tuple[bytes, bytes] | None:
        """As ``framing.read_frame``."""
        return _frame(self._read_exactly)

    def _read_exactly(self, size: int, at_boundary: bool) -> bytes | None:
        data = self._stream.read(size)
        if len(data) < size:
            if at_boundary and not data:
                return None
            raise FrameError(f"connection closed inside a frame ({len(data)} of {size} B read)")
        return data


def _frame(
    read_exactly: Callable[[int, bool], bytes | None],
) -> tuple[bytes, bytes] | None:
    header = read_exactly(HEADER.size, True)
    if header is None:
        return None
    length, kind = HEADER.unpack(header)
    if length < 1 or length > MAX_FRAME_BYTES:
        raise FrameError(f"frame length {length} B outside 1..{MAX_FRAME_BYTES} B")
    if kind not in KINDS:
        raise FrameError(f"unknown frame kind 0x{kind:02x}")
    body = read_exactly(length - 1, False)
    assert body is not None
    return bytes([kind]), body
