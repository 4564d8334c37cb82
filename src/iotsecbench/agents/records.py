"""The agents' output: one JSON object per line, each with a ``type``.

Types and their fields are declared in ``agents.vocabulary`` (``sample``, ``message``,
``echo``, ``handshake``, ``operation``, ``event``, ``negotiated``, ``counters``, ``error``;
the native agent's ``tls_*``); the writer refuses anything it does not declare. Lines are
written from several threads (main, MQTT network loop,
sampler) under one lock and flushed at every sample, so a crashed agent leaves everything
up to its last 100 ms on disk.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from iotsecbench.agents import vocabulary


class RecordWriter:
    """Thread-safe JSON-lines writer."""

    def __init__(self, path: Path) -> None:
        self._handle = open(path, "w", encoding="utf-8", buffering=1 << 16)  # noqa: SIM115
        self._lock = threading.Lock()
        self._integer_writers: dict[tuple[str, ...], Callable[..., None]] = {}

    def write(self, record_type: str, **fields: Any) -> None:
        vocabulary.check(record_type, fields)
        line = json.dumps({"type": record_type, **fields}, separators=(",", ":"))
        with self._lock:
            if not self._handle.closed:
                self._handle.write(line + "\n")

    def write_integers(self, record_type: str, **fields: int) -> None:
        """A record whose fields are all integers, formatted from a cached template instead
        of ``json.dumps``: the same JSON line at a fraction of the cost."""
        self.integer_writer(record_type, tuple(fields))(*fields.values())

    def integer_writer(self, record_type: str, names: tuple[str, ...]) -> Callable[..., None]:
        """A function writing ``record_type`` records of the integer fields ``names``, given
        positionally: the one-per-message records of a saturating sender take this path, so
        it does no more than format one line and append it (benchmarks/README.md, tcp)."""
        key = (record_type, *names)
        write = self._integer_writers.get(key)
        if write is None:
            vocabulary.check(record_type, names)
            body = ",".join(f'"{name}":%d' for name in names)
            template = f'{{"type":"{record_type}",{body}}}\n'
            handle, lock = self._handle, self._lock

            def write(*values: int) -> None:
                line = template % values
                with lock:
                    if not handle.closed:
                        handle.write(line)

            self._integer_writers[key] = write
        return write

    def flush(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.flush()

    def close(self) -> None:
        with self._lock:
            if not self._handle.closed:
                self._handle.flush()
                os.fsync(self._handle.fileno())
                self._handle.close()


def read_records(path: Path) -> list[dict[str, Any]]:
    """All complete records of an agent file; a torn last line (agent killed mid-write) is
    skipped, since everything before it is intact."""
    return read_records_from(path, 0)[0]


def read_records_from(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The complete records after byte ``offset`` of an agent file, and the offset after the
    last of them (where the next read starts: a reader of a file still being written)."""
    records: list[dict[str, Any]] = []
    if not path.exists():
        return records, offset
    with open(path, "rb") as handle:
        handle.seek(offset)
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                records.append(json.loads(line.decode("utf-8", errors="replace")))
            except json.JSONDecodeError:
                break
            offset += len(line)
    return records, offset
