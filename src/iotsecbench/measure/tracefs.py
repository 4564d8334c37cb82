"""Scheduler and network tracepoints from the kernel's tracefs, with nanosecond timestamps.

``SchedTracer`` owns a private tracefs *instance* (``instances/iotsb-<pid>``: its own ring
buffers and event switches, so a user's own tracing is left alone), with the instance's
clock set to ``mono`` — the clock ``time.monotonic_ns`` reads, so trace times and the lab's
own timestamps compare directly. It records, on every CPU:

* ``sched:sched_switch``, ``sched:sched_waking``, ``sched:sched_wakeup`` — every task
  switch and wake-up;
* ``sched:sched_stat_runtime`` — the scheduler's account of how long the current task ran
  (a switch the trace lost is placed from it, ``analysis/iotst.py``);
* ``net:netif_receive_skb`` and ``net:net_dev_xmit`` — every packet received and sent;
* ``tcp:tcp_retransmit_skb`` — every TCP retransmission, with its ports;
* ``ftrace:print`` — the lines the measured code writes to the instance's ``trace_marker``
  (``mark``), which is how it opens named groups.

Why the binary ring buffer and not the ``trace`` text file: the text file prints times in
microseconds; each CPU's ``trace_pipe_raw`` hands over the kernel's own pages, whose events
carry nanosecond deltas. ``parse_pages`` decodes them with the layouts the kernel publishes
(``events/header_page`` and each event's ``format`` file), so nothing is assumed about
field offsets and nothing outside this module (no ``trace-cmd``) is needed at run time.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRACEFS = Path("/sys/kernel/tracing")
EVENTS = (
    ("sched", "sched_switch"),
    ("sched", "sched_waking"),
    ("sched", "sched_wakeup"),
    ("sched", "sched_stat_runtime"),
    ("net", "netif_receive_skb"),
    ("net", "net_dev_xmit"),
    ("tcp", "tcp_retransmit_skb"),
    ("ftrace", "print"),
)
BUFFER_KB_PER_CPU = 4096  # ~ 100 000 events per CPU: far more than one handshake makes

# Ring-buffer event header: type_len (5 bits) and time_delta (27 bits) in one u32.
_PADDING, _TIME_EXTEND, _TIME_STAMP = 29, 30, 31
_COMMIT_MASK = (1 << 30) - 1  # the two high bits of `commit` flag missed events


def tracing_problem(*, mount: bool = True) -> str | None:
    """Why scheduler tracing cannot work here (one line), or None when it can; with
    ``mount``, an unmounted tracefs is mounted first (root only)."""
    if os.geteuid() != 0:
        return "scheduler tracing needs root (tracefs instances and trace_marker)"
    if not (TRACEFS / "instances").is_dir():
        if not mount:
            return f"tracefs is not mounted at {TRACEFS} (bench handshake --trace mounts it)"
        mounted = subprocess.run(
            ["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, check=False
        )
        if mounted.returncode != 0 or not (TRACEFS / "instances").is_dir():
            return f"tracefs is not mounted at {TRACEFS} and mounting it failed"
    missing = [f"{s}:{e}" for s, e in EVENTS if not (TRACEFS / "events" / s / e).is_dir()]
    if missing:
        return f"the kernel lacks the tracepoint(s) {', '.join(missing)}"
    if "mono" not in (TRACEFS / "trace_clock").read_text():
        return "the kernel's tracefs has no 'mono' trace clock"
    return None


# -- event layouts ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    name: str
    offset: int
    size: int
    signed: bool
    kind: str  # 'int', 'str' (char array), 'bytes' (other array), 'loc' (__data_loc), 'tail'


@dataclass(frozen=True)
class EventFormat:
    system: str
    name: str
    id: int
    fields: tuple[Field, ...]

    def decode(self, data: bytes) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for f in self.fields:
            if f.kind == "str":
                values[f.name] = (
                    data[f.offset : f.offset + f.size].split(b"\0", 1)[0].decode(errors="replace")
                )
            elif f.kind == "loc":
                (loc,) = struct.unpack_from("<I", data, f.offset)
                start, length = loc & 0xFFFF, loc >> 16
                values[f.name] = (
                    data[start : start + length].split(b"\0", 1)[0].decode(errors="replace")
                )
            elif f.kind == "bytes":
                values[f.name] = bytes(data[f.offset : f.offset + f.size])
            elif f.kind == "tail":
                values[f.name] = data[f.offset :].split(b"\0", 1)[0].decode(errors="replace")
            elif f.size in (1, 2, 4, 8):
                code = {1: "b", 2: "h", 4: "i", 8: "q"}[f.size]
                (values[f.name],) = struct.unpack_from(
                    "<" + (code if f.signed else code.upper()), data, f.offset
                )
        return values


_FIELD = re.compile(
    r"field:(?P<decl>[^;]+);\s*offset:(?P<offset>\d+);\s*size:(?P<size>\d+);\s*signed:(?P<signed>\d)"
)


def parse_format(system: str, name: str, text: str) -> EventFormat:
    """An event's layout from its tracefs ``format`` file."""
    match = re.search(r"^ID:\s*(\d+)", text, re.MULTILINE)
    if match is None:
        raise ValueError(f"{system}:{name}: no ID in its format file")
    fields = []
    for m in _FIELD.finditer(text):
        decl = m["decl"].strip()
        field_name = re.sub(r"\[.*\]$", "", decl.split()[-1])
        size = int(m["size"])
        if decl.startswith("__data_loc"):
            kind = "loc"
        elif decl.endswith("[]"):
            kind = "tail"
        elif "[" in decl:  # a fixed array: text when of char, raw bytes otherwise (addresses)
            kind = "str" if decl.split()[0] == "char" else "bytes"
        else:
            kind = "int"
        fields.append(Field(field_name, int(m["offset"]), size, m["signed"] == "1", kind))
    return EventFormat(system, name, int(match[1]), tuple(fields))


@dataclass(frozen=True)
class PageLayout:
    """Where a ring-buffer page keeps its timestamp, commit count and data."""

    timestamp_offset: int = 0
    commit_offset: int = 8
    commit_size: int = 8
    data_offset: int = 16
    page_size: int = 4096

    @classmethod
    def parse(cls, text: str) -> PageLayout:
        offsets = {
            m["decl"].split()[-1]: (int(m["offset"]), int(m["size"])) for m in _FIELD.finditer(text)
        }
        data_offset, data_size = offsets["data"]
        return cls(
            offsets["timestamp"][0],
            offsets["commit"][0],
            offsets["commit"][1],
            data_offset,
            data_offset + data_size,
        )


# -- events ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TraceEvent:
    """One decoded event: ``ts_ns`` on the trace clock (``mono``), the CPU it was recorded on,
    ``pid`` (the task running when it was recorded) and the event's own fields."""

    ts_ns: int
    cpu: int
    name: str  # 'sched_switch', 'print', …
    pid: int
    flags: int
    fields: dict[str, Any] = field(compare=False)


def parse_pages(
    raw: bytes, cpu: int, layout: PageLayout, formats: dict[int, EventFormat]
) -> Iterator[TraceEvent]:
    """Decode one CPU's ring-buffer pages (what ``trace_pipe_raw`` returned, concatenated)."""
    size = layout.page_size
    commit_code = "<Q" if layout.commit_size == 8 else "<I"
    for page_start in range(0, len(raw) - layout.data_offset + 1, size):
        page = raw[page_start : page_start + size]
        (ts,) = struct.unpack_from("<Q", page, layout.timestamp_offset)
        (commit,) = struct.unpack_from(commit_code, page, layout.commit_offset)
        end = layout.data_offset + (commit & _COMMIT_MASK)
        position = layout.data_offset
        while position + 4 <= min(end, len(page)):
            (header,) = struct.unpack_from("<I", page, position)
            type_len, delta = header & 0x1F, header >> 5
            position += 4
            if type_len == _PADDING:
                if delta == 0:
                    break  # the rest of the page is empty
                (length,) = struct.unpack_from("<I", page, position)
                position += length
                continue
            if type_len == _TIME_EXTEND:
                (upper,) = struct.unpack_from("<I", page, position)
                ts += (upper << 27) | delta
                position += 4
                continue
            if type_len == _TIME_STAMP:
                (upper,) = struct.unpack_from("<I", page, position)
                absolute = (upper << 27) | delta
                ts = (ts & ~((1 << 59) - 1)) | absolute  # the top bits come from the page
                position += 4
                continue
            if type_len == 0:
                (length,) = struct.unpack_from("<I", page, position)
                length -= 4
                position += 4
            else:
                length = type_len * 4
            ts += delta
            data = page[position : position + length]
            position += length
            if len(data) < 8:
                continue
            common_type, flags, _preempt, pid = struct.unpack_from("<HBBi", data, 0)
            event_format = formats.get(common_type)
            if event_format is None:
                continue
            yield TraceEvent(ts, cpu, event_format.name, pid, flags, event_format.decode(data))


# -- recording ---------------------------------------------------------------------------------
class TracingUnavailable(RuntimeError):
    """tracefs cannot be used here (the message says why, in one line)."""


class SchedTracer:
    """A private tracefs instance recording ``EVENTS``; a context manager.

    ``start()`` empties the buffers and switches recording on, ``stop()`` off, ``events()``
    returns what was recorded since ``start()``, every CPU merged in time order. ``mark(text)``
    writes a line to the instance's ``trace_marker`` (``marker_fd`` for C code that writes
    there itself).
    """

    def __init__(self, name: str | None = None, buffer_kb: int = BUFFER_KB_PER_CPU) -> None:
        self.name = name or f"iotsb-{os.getpid()}"
        self.buffer_kb = buffer_kb
        self.path = TRACEFS / "instances" / self.name
        self.marker_fd = -1
        self.formats: dict[int, EventFormat] = {}
        self.layout = PageLayout()
        self.cpus: list[int] = []
        self.lost_events = 0

    def __enter__(self) -> SchedTracer:
        problem = tracing_problem()
        if problem is not None:
            raise TracingUnavailable(problem)
        with contextlib.suppress(FileNotFoundError):
            self.path.rmdir()  # a leftover of a killed run with this pid
        self.path.mkdir()
        try:
            self._write("tracing_on", "0")
            self._write("trace_clock", "mono")
            self._write("buffer_size_kb", str(self.buffer_kb))
            for system, event in EVENTS:
                if system != "ftrace":  # marker lines are always recorded
                    self._write(f"events/{system}/{event}/enable", "1")
                text = (TRACEFS / "events" / system / event / "format").read_text()
                parsed = parse_format(system, event, text)
                self.formats[parsed.id] = parsed
            self.layout = PageLayout.parse((TRACEFS / "events" / "header_page").read_text())
            self.cpus = sorted(
                int(p.name.removeprefix("cpu")) for p in (self.path / "per_cpu").iterdir()
            )
            self.marker_fd = os.open(self.path / "trace_marker", os.O_WRONLY | os.O_CLOEXEC)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self.marker_fd >= 0:
            os.close(self.marker_fd)
            self.marker_fd = -1
        if self.path.is_dir():
            with contextlib.suppress(OSError):
                self._write("tracing_on", "0")
            for _ in range(3):  # rmdir fails while a reader still holds a buffer open
                try:
                    self.path.rmdir()
                    break
                except OSError:
                    continue

    def _write(self, relative: str, value: str) -> None:
        (self.path / relative).write_text(value)

    def start(self) -> None:
        """Empty every CPU's buffer and start recording.

        The reset costs the next handshake CPU time (the bulk of the tracer's overhead,
        benchmarks/README.md, iotst), but it is needed: relying on the per-CPU pipes to
        have been read empty instead lost most of some repetitions' events on the lab VM's
        kernel (a repetition's on-CPU time read as 0.25 ms instead of 1.45 ms)."""
        with open(self.path / "trace", "w"):
            pass  # opening `trace` for writing with truncation clears the instance's buffers
        self._write("tracing_on", "1")

    def stop(self) -> None:
        self._write("tracing_on", "0")

    def mark(self, text: str) -> None:
        os.write(self.marker_fd, text.encode())

    def _read_cpu(self, cpu: int) -> bytes:
        chunks = []
        path = self.path / "per_cpu" / f"cpu{cpu}" / "trace_pipe_raw"
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while True:
                try:
                    chunk = os.read(fd, self.layout.page_size)
                except OSError as error:
                    if error.errno == errno.EAGAIN:
                        break
                    raise
                if not chunk:
                    break
                chunks.append(chunk.ljust(self.layout.page_size, b"\0"))
        finally:
            os.close(fd)
        return b"".join(chunks)

    def events(self) -> list[TraceEvent]:
        """Everything recorded since ``start()``, in time order (call after ``stop()``)."""
        merged: list[TraceEvent] = []
        for cpu in self.cpus:
            merged.extend(parse_pages(self._read_cpu(cpu), cpu, self.layout, self.formats))
        merged.sort(key=lambda e: (e.ts_ns, e.cpu))
        return merged
