"""The 10 Hz sampler: one background thread recording an agent's CPU, memory and TCP counters.

Schedule: sample k is due at ``t0 + k·interval_ns`` (absolute, so lateness never accumulates
into drift). When the thread wakes so late that whole ticks have passed, it takes *one* sample
now and counts the missed ticks in :attr:`Sampler.ticks_skipped` — it never bursts to catch up,
because back-to-back samples would describe windows of near-zero length.

TCP fields are cumulative for the agent's connection. Before the first connection exists they
are 0. If the connection goes away (``get_socket`` returns None, or the socket is closed) the
last values are held, so counters never go backwards; if a *new* connection appears
(reconnect), its counters are added on top of the old connection's final values, so the series
stays cumulative for the agent. Bytes exchanged in the last < interval before a socket closes
are only seen if the agent calls :meth:`Sampler.sample_now` before closing it.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from types import TracebackType

from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.cpu import process_cpu_ns
from iotsecbench.measure.memory import rss_bytes
from iotsecbench.measure.tcpinfo import TcpInfo, read_tcp_info

__all__ = ["DEFAULT_INTERVAL_NS", "Sample", "Sampler"]

_log = logging.getLogger(__name__)

DEFAULT_INTERVAL_NS = 100_000_000  # 10 Hz, as in the `stability` study


@dataclass(frozen=True)
class Sample:
    """One probe reading of one agent; every counter is cumulative."""

    t_ns: int  # measure.clock.now_ns() when the sample was read
    cpu_ns: int  # process CPU time (user + system, all threads) since the process started
    rss_bytes: int  # resident set size at t_ns
    tcp_bytes_sent: int  # TCP payload bytes sent (retransmissions included), kernel TCP_INFO
    tcp_bytes_acked: int  # sequence space acked by the peer (SYN counted on the connecting side)
    tcp_bytes_received: int  # TCP payload bytes received in order
    tcp_segs_out: int  # TCP segments sent, ACK-only ones included
    tcp_segs_in: int  # TCP segments received, ACK-only ones included
    tcp_retrans: int  # TCP segments retransmitted

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"Sample.{field.name} must be a non-negative int, got {value!r}")

    def to_dict(self) -> dict[str, int]:
        """Plain dict of every field, for JSON lines and store rows."""
        return asdict(self)


# The TCP counters a Sample carries, with the TcpInfo field each comes from.
_TCP_FIELDS: dict[str, str] = {
    "tcp_bytes_sent": "bytes_sent",
    "tcp_bytes_acked": "bytes_acked",
    "tcp_bytes_received": "bytes_received",
    "tcp_segs_out": "segs_out",
    "tcp_segs_in": "segs_in",
    "tcp_retrans": "total_retrans",
}


class Sampler:
    """Background thread calling ``on_sample`` with a :class:`Sample` every ``interval_ns``.

    ``get_socket`` returns the agent's current connection (or None before it exists); it is
    called from the sampler thread, so it must be cheap and thread-safe (reading an attribute
    is). ``on_sample`` runs on the sampler thread too; an exception there is counted in
    :attr:`callback_errors`, logged once, and sampling continues. Use as a context manager, or
    call :meth:`start` and :meth:`stop`; :meth:`stop` takes one final sample after the thread
    has ended, so the last sample covers the end of the run.
    """

    def __init__(
        self,
        get_socket: Callable[[], socket.socket | None],
        on_sample: Callable[[Sample], None],
        interval_ns: int = DEFAULT_INTERVAL_NS,
    ) -> None:
        if interval_ns <= 0:
            raise ValueError(f"interval_ns must be positive, got {interval_ns}")
        self._get_socket = get_socket
        self._on_sample = on_sample
        self.interval_ns = interval_ns
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False
        # Serialises sample_now() from the agent thread with the sampler thread.
        self._lock = threading.Lock()
        # Reconnection bookkeeping: the socket seen last, its last counters, and the sum of
        # final counters of connections that have gone away.
        self._current_socket: socket.socket | None = None
        self._current_tcp: dict[str, int] = dict.fromkeys(_TCP_FIELDS, 0)
        self._closed_tcp: dict[str, int] = dict.fromkeys(_TCP_FIELDS, 0)
        self.samples_taken = 0  # samples delivered to on_sample (successfully or not)
        self.ticks_skipped = 0  # scheduled ticks dropped because the thread woke up too late
        self.callback_errors = 0  # exceptions raised by on_sample
        self.probe_errors = 0  # exceptions raised while reading the probes
        self.last_error: str | None = None  # repr of the most recent exception of either kind

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Take the first sample now and keep sampling on the schedule until :meth:`stop`."""
        if self._thread is not None:
            raise RuntimeError("Sampler already started")
        self._thread = threading.Thread(target=self._run, name="iotsecbench-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread, wait for it, then take one final sample. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._stop_event.set()
        if self._thread is not None:
            self._thread.join()
        self.sample_now()

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- sampling ------------------------------------------------------------------------

    def sample_now(self) -> Sample | None:
        """Read every probe now and hand the sample to ``on_sample``; None if probing failed."""
        with self._lock:
            try:
                sample = self._read()
            except Exception as error:  # a probe failing must not end the run's sampling
                self.probe_errors += 1
                self._note_error("probe", error)
                return None
            self.samples_taken += 1
            try:
                self._on_sample(sample)
            except Exception as error:  # the sink's bug is counted, not allowed to stop us
                self.callback_errors += 1
                self._note_error("on_sample", error)
            return sample

    def _note_error(self, where: str, error: Exception) -> None:
        first = self.last_error is None
        self.last_error = f"{where}: {error!r}"
        if first:
            # Logged once with the traceback; later ones are only counted, to keep 10 Hz quiet.
            _log.warning(
                "sampler %s raised %r; counting further errors", where, error, exc_info=error
            )

    def _read(self) -> Sample:
        t_ns = now_ns()
        cpu_ns = process_cpu_ns()
        memory_bytes = rss_bytes()
        tcp = self._tcp_counters(self._get_socket())
        return Sample(t_ns=t_ns, cpu_ns=cpu_ns, rss_bytes=memory_bytes, **tcp)

    def _tcp_counters(self, sock: socket.socket | None) -> dict[str, int]:
        info: TcpInfo | None = read_tcp_info(sock) if sock is not None else None
        if info is not None:
            if sock is not self._current_socket:
                # A new connection: bank the previous one's final counters.
                for name in _TCP_FIELDS:
                    self._closed_tcp[name] += self._current_tcp[name]
                self._current_socket = sock
            self._current_tcp = {name: getattr(info, attr) for name, attr in _TCP_FIELDS.items()}
        # No readable connection: hold the last values (counters never go backwards).
        return {name: self._closed_tcp[name] + self._current_tcp[name] for name in _TCP_FIELDS}

    def _run(self) -> None:
        t0_ns = now_ns()
        tick = 0
        while not self._stop_event.is_set():
            self.sample_now()
            # Next due tick; if we are already past it, jump to the latest passed tick and
            # sample at once (late, but one sample, not a burst).
            elapsed_ns = now_ns() - t0_ns
            latest_due_tick = elapsed_ns // self.interval_ns
            if latest_due_tick > tick:
                self.ticks_skipped += latest_due_tick - tick - 1
                tick = latest_due_tick
                continue
            tick += 1
            wait_ns = t0_ns + tick * self.interval_ns - now_ns()
            if wait_ns > 0 and self._stop_event.wait(wait_ns / 1e9):
                break
