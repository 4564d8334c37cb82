"""The ``iotst`` method on a Linux scheduler trace: where one handshake's time went.

Pure functions on decoded trace events (``measure.tracefs.TraceEvent`` or anything with the
same attributes: ``ts_ns``, ``cpu``, ``name``, ``pid``, ``fields``). For one repetition:

* **groups** — the client thread marks where each stretch begins (``iotsb grp NAME``), the TLS
  library marks every handshake message it sends or receives (``iotsb msg w 1``), and
  ``iotsb end`` closes the last one; every instant of the repetition belongs to exactly one
  group. A message marker starts the group named after what the client does next
  (``message_group``): after sending its ClientHello it waits for the server's flight,
  after a Certificate it validates the chain, and so on;
* **the client thread's states** from ``sched_switch``/``sched_waking``: on a CPU; off it
  *waiting for the network* (asleep — ``prev_state`` S — and woken by a packet: the
  wake-up came within ``PACKET_WAKE_NS`` of a packet received on the waking CPU while it
  slept, the receive path's own wake-up); *runnable but not running*
  (switched out still runnable — preempted or throttled by a CPU quota — or woken and not
  yet on a CPU); *other* (asleep and woken by anything else: timers, locks, disk);
* the **network-invariant cost** is the thread's on-CPU time, less the trace markers' own
  cost (their ``write`` calls run in the thread: ``marker_cost_ns`` each, measured by the
  caller, subtracted from the group the marker was written in — the study subtracts its
  tracer's own task the same way); the cost **with network wait** is the repetition's
  whole wall time (the study's Table 2 vs Table 1);
* **quantum**: the longest uninterrupted on-CPU stretch in each group;
* **idle per CPU**: the share of the repetition each CPU ran its idle task (None for a CPU
  the trace never switched on, whose state it cannot tell);
* **packets** received (``netif_receive_skb``) and sent by the thread (``net_dev_xmit``), and
  **retransmissions** (``tcp_retransmit_skb``) on the connection's ports.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

PREFIX = "iotsb "
END = "END"

# Handshake message types (RFC 8446 §4, RFC 5246 §7.4).
_CLIENT_HELLO, _SERVER_HELLO, _NEW_SESSION_TICKET = 1, 2, 4
_ENCRYPTED_EXTENSIONS, _CERTIFICATE, _SERVER_KEY_EXCHANGE = 8, 11, 12
_CERTIFICATE_REQUEST, _SERVER_HELLO_DONE, _CERTIFICATE_VERIFY = 13, 14, 15
_CLIENT_KEY_EXCHANGE, _FINISHED = 16, 20
# A TLS 1.3 protected handshake record as the native agent's I/O sees it (bench/native.py):
# which message it holds (EncryptedExtensions, Certificate, CertificateVerify, Finished) is
# known only inside the stack, so its group is named for the record, not the message.
_PROTECTED = 0

# What the client does after receiving a message (the group that message starts).
_AFTER_RECEIVED = {
    _SERVER_HELLO: {"1.3": "KEY_DERIVE", "1.2": "SERVER_HELLO"},
    _ENCRYPTED_EXTENSIONS: "ENCRYPTED_EXTENSIONS",
    _CERTIFICATE: "CERT_CHAIN",
    _SERVER_KEY_EXCHANGE: "CERT_VERIFY",  # 1.2: the signature over the (EC)DHE parameters
    _CERTIFICATE_VERIFY: "CERT_VERIFY",
    _CERTIFICATE_REQUEST: "CERTIFICATE_REQUEST",
    _SERVER_HELLO_DONE: "KEY_DERIVE",  # 1.2: the client's key share and premaster secret
    _FINISHED: "FINISHED",
    _NEW_SESSION_TICKET: "SESSION_TICKET",
    _PROTECTED: "PROTECTED_SERVER_RECORD",
}
# ... and after sending one.
_AFTER_SENT = {
    _CLIENT_HELLO: "WAIT_SERVER_FLIGHT",
    _CERTIFICATE: "CLIENT_AUTH",
    _CERTIFICATE_VERIFY: "CLIENT_AUTH",
    _CLIENT_KEY_EXCHANGE: "CLIENT_FINISHED",
    _FINISHED: {"1.3": "TLS_DONE", "1.2": "WAIT_SERVER_FINISHED"},
    _PROTECTED: "PROTECTED_CLIENT_RECORD",
}
STATES = ("on_cpu", "network_wait", "runnable", "other")
# A wake-up this soon after a packet on the same CPU is that packet's (the receive path wakes
# the reader in the same softirq: a few µs on the lab VM; generous for a slow one).
PACKET_WAKE_NS = 200_000


def message_group(written: bool, message_type: int, version: str) -> str:
    """The group a handshake message starts: what the client does next (module docstring)."""
    table = _AFTER_SENT if written else _AFTER_RECEIVED
    name = table.get(message_type)
    if isinstance(name, dict):
        name = name.get(version, next(iter(name.values())))
    return name or f"AFTER_{'SENT' if written else 'RECEIVED'}_{message_type}"


@dataclass
class GroupCost:
    """One group's time in one repetition, ns (``markers``: trace markers written in it)."""

    on_cpu_ns: int = 0
    network_wait_ns: int = 0
    runnable_ns: int = 0
    other_ns: int = 0
    longest_run_ns: int = 0
    markers: int = 0

    @property
    def wall_ns(self) -> int:
        return self.on_cpu_ns + self.network_wait_ns + self.runnable_ns + self.other_ns


@dataclass
class TracedRepetition:
    """Where one repetition's time went (module docstring); times in ns."""

    start_ns: int
    end_ns: int
    groups: dict[str, GroupCost]  # in the order the groups first occurred
    on_cpu_ns: int
    marker_cost_ns: int  # subtracted from on_cpu_ns to give network_invariant_ns
    network_wait_ns: int
    runnable_ns: int
    other_ns: int
    idle_fraction_per_cpu: dict[int, float | None]
    packets_received: int
    packets_sent: int
    retransmissions: int
    problems: list[str] = field(default_factory=list)

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def network_invariant_ns(self) -> int:
        return max(0, self.on_cpu_ns - self.marker_cost_ns)

    @property
    def quantum_max_ns(self) -> int:
        return max((g.longest_run_ns for g in self.groups.values()), default=0)

    def group_seconds(self) -> dict[str, float]:
        """Network-invariant seconds per group (on-CPU less that group's marker cost)."""
        return {name: self._invariant(g) / 1e9 for name, g in self.groups.items()}

    def _invariant(self, group: GroupCost) -> int:
        share = self.marker_cost_ns * group.markers // max(1, self._markers())
        return max(0, group.on_cpu_ns - share)

    def _markers(self) -> int:
        return sum(g.markers for g in self.groups.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "wall_ns": self.wall_ns,
            "on_cpu_ns": self.on_cpu_ns,
            "network_invariant_ns": self.network_invariant_ns,
            "marker_cost_ns": self.marker_cost_ns,
            "network_wait_ns": self.network_wait_ns,
            "runnable_ns": self.runnable_ns,
            "other_ns": self.other_ns,
            "quantum_max_ns": self.quantum_max_ns,
            "idle_fraction_per_cpu": {str(k): v for k, v in self.idle_fraction_per_cpu.items()},
            "packets_received": self.packets_received,
            "packets_sent": self.packets_sent,
            "retransmissions": self.retransmissions,
            "groups": {
                name: {**g.__dict__, "wall_ns": g.wall_ns} for name, g in self.groups.items()
            },
            "problems": self.problems,
        }


def group_boundaries(
    events: Iterable[Any], tid: int, version: str
) -> tuple[list[tuple[int, str]], int | None]:
    """``([(start_ns, group), …], end_ns)`` from the markers thread ``tid`` wrote."""
    starts: list[tuple[int, str]] = []
    end: int | None = None
    for event in events:
        if event.name != "print" or event.pid != tid:
            continue
        text = str(event.fields.get("buf", "")).strip()
        if not text.startswith(PREFIX):
            continue
        kind, _, rest = text[len(PREFIX) :].partition(" ")
        if kind == "grp":
            starts.append((event.ts_ns, rest))
        elif kind == "msg":
            direction, _, number = rest.partition(" ")
            starts.append((event.ts_ns, message_group(direction == "w", int(number), version)))
        elif kind == "end":
            end = event.ts_ns
    return starts, end


def _thread_segments(
    events: Sequence[Any], tid: int, start: int, end: int
) -> tuple[list[tuple[int, int, str]], int]:
    """The thread's states as ``(from, to, state)`` over ``[start, end]``; it is on a CPU
    at ``start`` (it just wrote the marker that opened the repetition). Also how many
    switch-ins the trace lacks.

    Why switch-ins go missing: the lab VM's kernel records no event in its idle task's own
    context on one of its two CPUs (no switch away from the idle task, no ``cpu_idle``;
    interrupts in it are recorded), so every time the thread resumes on that CPU from idle
    the switch-in is lost. After a wake-up that costs microseconds (the wake-up is
    recorded); after a ``--clock`` quota throttled the thread it cost milliseconds, as
    nothing else marks the resume. The repair: an event recorded in the thread's own
    context (``pid``, the task current on that CPU), or the scheduler's ``sched_stat_runtime``
    for it, proves it on a CPU; the switch-in is put where the scheduler says the thread's
    run began — the next ``sched_stat_runtime`` for it, less the ``runtime`` it reports (the
    run's length since its switch-in: the kernel's clock for its CPU time, which leaves out
    interrupts, so the repair never invents on-CPU time) — and at that event when there is
    none."""
    segments: list[tuple[int, int, str]] = []
    repaired = 0
    state, since = "on_cpu", start
    last_packet: dict[int, int] = {}  # CPU -> when it last received a packet
    run_began = _run_beginnings(events, lambda e: e.fields["pid"] == tid)

    def close(at: int, next_state: str) -> None:
        nonlocal state, since
        if at > since:
            segments.append((since, at, state))
        state, since = next_state, max(since, at)

    for index, event in enumerate(events):
        if event.ts_ns < start:
            continue
        if event.ts_ns > end:
            break
        name = event.name
        switched_in = name == "sched_switch" and event.fields["next_pid"] == tid
        on_a_cpu = event.pid == tid or (name == "sched_stat_runtime" and event.fields["pid"] == tid)
        if on_a_cpu and state != "on_cpu" and not switched_in:
            repaired += 1
            began = run_began[index] if run_began[index] is not None else event.ts_ns
            close(max(since, min(began, event.ts_ns)), "on_cpu")
        if name == "sched_switch":
            if event.fields["prev_pid"] == tid and state == "on_cpu":
                prev_state = int(event.fields["prev_state"]) & 0xFF
                if prev_state == 0:
                    close(event.ts_ns, "runnable")  # preempted or throttled, still runnable
                else:
                    close(event.ts_ns, "asleep" if prev_state & 1 else "other")
            elif switched_in:
                close(event.ts_ns, "on_cpu")
        elif name == "sched_waking" and event.fields["pid"] == tid and state in ("asleep", "other"):
            was_asleep = state == "asleep"
            close(event.ts_ns, "runnable")
            # Woken by a packet: the wake-up comes from the receive path, on the CPU that
            # just took the packet in. Any packet anywhere would also count a timer's
            # wake-up while other traffic flows (a sleep is not a network wait).
            packet_at = last_packet.get(event.cpu)
            by_packet = packet_at is not None and event.ts_ns - packet_at <= PACKET_WAKE_NS
            if was_asleep and by_packet and segments and packet_at >= segments[-1][0]:
                segments[-1] = (*segments[-1][:2], "network_wait")
        elif name == "netif_receive_skb":
            last_packet[event.cpu] = event.ts_ns
    close(end, state)
    return [(a, b, "other" if s == "asleep" else s) for a, b, s in segments], repaired


def _run_beginnings(events: Sequence[Any], ran: Callable[[Any], bool]) -> list[int | None]:
    """Per event, when the run that the next ``sched_stat_runtime`` event accepted by ``ran``
    (at or after the event) reports began: that event's time less its ``runtime``, the run's
    length since the task was switched in; None where no such event follows (a trace
    recorded without the tracepoint)."""
    beginnings: list[int | None] = [None] * len(events)
    began: int | None = None
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.name == "sched_stat_runtime" and ran(event):
            began = event.ts_ns - int(event.fields["runtime"])
        beginnings[index] = began
    return beginnings


def _idle_fractions(
    events: Sequence[Any], cpus: Iterable[int], start: int, end: int
) -> dict[int, float | None]:
    """Share of ``[start, end]`` each CPU ran its idle task (pid 0). A switch away from the
    idle task that the trace lost (``_thread_segments``) ends the idle stretch where the
    scheduler's runtime account of the task then current begins, or else at the CPU's next
    event recorded in a task's context, which proves the CPU busy from then on."""
    fractions: dict[int, float | None] = {}
    span = max(1, end - start)
    for cpu in cpus:
        own = [e for e in events if e.cpu == cpu]
        run_began = _run_beginnings(own, lambda e: e.fields["pid"] == e.pid)
        switches = [e for e in own if e.name == "sched_switch"]
        if not switches:
            fractions[cpu] = None
            continue
        current = switches[0].fields["prev_pid"]  # who ran before the first switch
        at, idle = start, 0
        for index, event in enumerate(own):
            ts = min(max(event.ts_ns, start), end)
            if event.name == "sched_switch":
                if current == 0:
                    idle += ts - at
                at, current = ts, event.fields["next_pid"]
            elif current == 0 and event.pid != 0:
                began = run_began[index]
                busy_from = ts if began is None else max(at, min(began, ts))
                idle += busy_from - at
                at, current = busy_from, event.pid
        if current == 0:
            idle += end - at
        fractions[cpu] = idle / span
    return fractions


def classify_repetition(
    events: Sequence[Any],
    tid: int,
    *,
    version: str,
    cpus: Iterable[int],
    local_port: int | None = None,
    marker_cost_ns: int = 0,
) -> TracedRepetition:
    """One repetition's groups, thread states, idle, packets and retransmissions."""
    starts, end = group_boundaries(events, tid, version)
    problems: list[str] = []
    if not starts:
        raise ValueError(f"no group markers from thread {tid} in the trace")
    if end is None:
        problems.append("no end marker: the repetition ends at the last event")
        end = max(e.ts_ns for e in events)
    start = starts[0][0]
    segments, repaired = _thread_segments(events, tid, start, end)
    if repaired:
        problems.append(
            f"{repaired} switch-in(s) missing from the trace: placed where the scheduler's "
            "runtime account (or else the thread's own next event) puts it back on a CPU"
        )
    groups: dict[str, GroupCost] = {}
    bounds = [*starts, (end, END)]
    for (g_start, name), (g_end, _) in itertools.pairwise(bounds):
        cost = groups.setdefault(name, GroupCost())
        for s_start, s_end, state in segments:
            overlap = min(s_end, g_end) - max(s_start, g_start)
            if overlap <= 0:
                continue
            setattr(cost, f"{state}_ns", getattr(cost, f"{state}_ns") + overlap)
            if state == "on_cpu":
                cost.longest_run_ns = max(cost.longest_run_ns, overlap)
        cost.markers += sum(
            1 for e in events if e.name == "print" and e.pid == tid and g_start <= e.ts_ns < g_end
        )
    totals = {state: sum(b - a for a, b, s in segments if s == state) for state in STATES}
    markers = sum(g.markers for g in groups.values())
    window = [e for e in events if start <= e.ts_ns <= end]
    retransmissions = sum(
        1
        for e in events
        if e.name == "tcp_retransmit_skb"
        and (local_port is None or local_port in (e.fields.get("sport"), e.fields.get("dport")))
    )
    return TracedRepetition(
        start_ns=start,
        end_ns=end,
        groups=groups,
        on_cpu_ns=totals["on_cpu"],
        marker_cost_ns=marker_cost_ns * markers,
        network_wait_ns=totals["network_wait"],
        runnable_ns=totals["runnable"],
        other_ns=totals["other"],
        idle_fraction_per_cpu=_idle_fractions(events, cpus, start, end),
        packets_received=sum(1 for e in window if e.name == "netif_receive_skb"),
        packets_sent=sum(1 for e in window if e.name == "net_dev_xmit" and e.pid == tid),
        retransmissions=retransmissions,
        problems=problems,
    )
