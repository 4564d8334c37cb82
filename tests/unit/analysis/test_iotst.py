"""The iotst classification on synthetic scheduler traces whose answer is known by
construction: every nanosecond of the repetition is placed in one group and one state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from iotsecbench.analysis.iotst import classify_repetition, message_group

TID = 4242
BROKER = 777


@dataclass
class Event:
    ts_ns: int
    cpu: int
    name: str
    pid: int
    fields: dict[str, Any] = field(default_factory=dict)


def mark(ts: int, text: str, cpu: int = 0) -> Event:
    return Event(ts, cpu, "print", TID, {"buf": f"iotsb {text}\n"})


def switch(ts: int, prev: int, next_: int, prev_state: int = 1, cpu: int = 0) -> Event:
    fields = {"prev_pid": prev, "next_pid": next_, "prev_state": prev_state}
    return Event(ts, cpu, "sched_switch", prev, fields)


def waking(ts: int, pid: int = TID, cpu: int = 1) -> Event:
    return Event(ts, cpu, "sched_waking", BROKER, {"pid": pid})


def packet(ts: int, cpu: int = 1) -> Event:
    return Event(ts, cpu, "netif_receive_skb", BROKER, {"len": 100})


def handshake_trace() -> list[Event]:
    """TCP connect 0–100; ClientHello built 100–300; waits for the server's flight (asleep
    300–1300, a packet at 1200, woken 1250, on a CPU at 1300); key derivation 1300–1600,
    preempted 1400–1500; certificate chain 1600–2600; end at 2600. CPU 1 idles 0–1000."""
    return [
        switch(-50, 0, BROKER, cpu=1),  # CPU 1 ran the idle task before the trace's first switch
        mark(0, "grp TCP_CONNECT"),
        mark(100, "grp CLIENT_HELLO"),
        mark(290, "msg w 1"),  # ClientHello sent
        switch(300, TID, 0),
        packet(1200),
        waking(1250),
        switch(1300, 0, TID),
        mark(1300, "msg r 2"),  # ServerHello
        switch(1400, TID, BROKER, prev_state=0),  # preempted: still runnable
        switch(1500, BROKER, TID),
        mark(1600, "msg r 11"),  # Certificate
        mark(2600, "end"),
    ]


def test_groups_and_states_add_up_to_the_wall_time() -> None:
    result = classify_repetition(handshake_trace(), TID, version="1.3", cpus=[0, 1])
    assert list(result.groups) == [
        "TCP_CONNECT", "CLIENT_HELLO", "WAIT_SERVER_FLIGHT", "KEY_DERIVE", "CERT_CHAIN",
    ]  # fmt: skip
    assert result.wall_ns == 2600
    assert result.on_cpu_ns == 300 + 100 + 100 + 1000  # 0–300, 1300–1400, 1500–1600, 1600–2600
    assert result.network_wait_ns == 950  # asleep 300–1250, a packet arrived meanwhile
    assert result.runnable_ns == 50 + 100  # woken 1250–1300, preempted 1400–1500
    assert result.other_ns == 0
    assert sum(g.wall_ns for g in result.groups.values()) == result.wall_ns
    wait = result.groups["WAIT_SERVER_FLIGHT"]
    assert (wait.on_cpu_ns, wait.network_wait_ns, wait.runnable_ns) == (10, 950, 50)
    derive = result.groups["KEY_DERIVE"]
    assert (derive.on_cpu_ns, derive.runnable_ns, derive.longest_run_ns) == (200, 100, 100)
    assert result.groups["CERT_CHAIN"].longest_run_ns == 1000
    assert result.quantum_max_ns == 1000


def test_a_lost_switch_in_is_repaired_from_the_threads_own_events() -> None:
    """Without the switch-in at 1300 the marker the thread writes then still shows it on a
    CPU; without the one at 1500, its next own event (1600) does, and 1500–1600 reads as
    runnable: the repair never invents on-CPU time. Each repair is reported."""
    complete = classify_repetition(handshake_trace(), TID, version="1.3", cpus=[0, 1])
    assert complete.problems == []
    lost = [e for e in handshake_trace() if not (e.name == "sched_switch" and e.ts_ns == 1300)]
    repaired = classify_repetition(lost, TID, version="1.3", cpus=[0, 1])
    assert repaired.on_cpu_ns == complete.on_cpu_ns
    assert repaired.network_wait_ns == complete.network_wait_ns
    assert repaired.problems == [
        "1 switch-in(s) missing from the trace: placed where the scheduler's runtime account "
        "(or else the thread's own next event) puts it back on a CPU"
    ]
    later = [e for e in handshake_trace() if not (e.name == "sched_switch" and e.ts_ns == 1500)]
    result = classify_repetition(later, TID, version="1.3", cpus=[0, 1])
    assert result.on_cpu_ns == complete.on_cpu_ns - 100
    assert result.runnable_ns == complete.runnable_ns + 100
    assert len(result.problems) == 1


def runtime(ts: int, ran_ns: int, pid: int = TID, cpu: int = 0) -> Event:
    """The scheduler's account: ``pid`` has run ``ran_ns`` up to ``ts`` (sched_stat_runtime,
    recorded in the context of the task current on ``cpu``)."""
    return Event(ts, cpu, "sched_stat_runtime", pid, {"pid": pid, "runtime": ran_ns})


def test_a_resume_the_trace_lost_is_placed_from_the_schedulers_runtime_account() -> None:
    """A quota throttles the thread at 1400 (switched out still runnable, the CPU idles) and
    it resumes at 1450, a switch the lab VM's trace loses on one of its CPUs; its next own
    event is a marker at 1550. The scheduler's account at 1580 (130 ns run) puts the resume
    at 1450: 1450-1550 is on a CPU, not runnable. With no account after the marker the
    marker is the bound (the older repair)."""
    trace = [e for e in handshake_trace() if e.ts_ns not in (1400, 1500)]
    throttled = [
        *trace,
        switch(1400, TID, 0, prev_state=256),  # preempted ("R+"): 256 & 0xFF is 0, runnable
        mark(1550, "grp KEY_DERIVE_2"),
        runtime(1580, 130),
    ]
    throttled.sort(key=lambda e: e.ts_ns)
    result = classify_repetition(throttled, TID, version="1.3", cpus=[0, 1])
    derive = result.groups["KEY_DERIVE"]
    assert (derive.on_cpu_ns, derive.runnable_ns) == (100 + 100, 50)  # 1300-1400, 1450-1550
    assert result.problems and "runtime account" in result.problems[0]
    unaccounted = [e for e in throttled if e.name != "sched_stat_runtime"]
    older = classify_repetition(unaccounted, TID, version="1.3", cpus=[0, 1])
    assert (older.groups["KEY_DERIVE"].on_cpu_ns, older.groups["KEY_DERIVE"].runnable_ns) == (
        100,
        150,
    )
    # An account that reaches back before the switch-out cannot move the resume before it.
    overlong = [e if e.name != "sched_stat_runtime" else runtime(1580, 900) for e in throttled]
    clamped = classify_repetition(overlong, TID, version="1.3", cpus=[0, 1])
    assert clamped.groups["KEY_DERIVE"].runnable_ns == 0
    assert clamped.on_cpu_ns == result.on_cpu_ns + 50


def test_a_lost_switch_away_from_idle_ends_the_idle_stretch_at_a_tasks_event() -> None:
    """CPU 0 idles 300–1300. Without the switch at 1300 the next switch on it comes at 1400;
    the marker the thread writes at 1300 (in its own context) shows the CPU busy from then."""
    lost = [e for e in handshake_trace() if not (e.name == "sched_switch" and e.ts_ns == 1300)]
    result = classify_repetition(lost, TID, version="1.3", cpus=[0])
    assert result.idle_fraction_per_cpu[0] == pytest.approx(1000 / 2600)  # not 1100 / 2600


def test_a_lost_switch_away_from_idle_ends_where_the_runtime_account_begins() -> None:
    """The same lost switch at 1300, and the scheduler's account at 1350 of 80 ns the thread
    ran on CPU 0: the CPU was busy from 1270, before the marker at 1300 showed it."""
    lost = [e for e in handshake_trace() if not (e.name == "sched_switch" and e.ts_ns == 1300)]
    accounted = sorted([*lost, runtime(1350, 80)], key=lambda e: e.ts_ns)
    result = classify_repetition(accounted, TID, version="1.3", cpus=[0])
    assert result.idle_fraction_per_cpu[0] == pytest.approx(970 / 2600)


def test_sleep_without_a_packet_is_not_network_wait() -> None:
    trace = [e for e in handshake_trace() if e.name != "netif_receive_skb"]
    result = classify_repetition(trace, TID, version="1.3", cpus=[0])
    assert result.network_wait_ns == 0
    assert result.other_ns == 950


def test_marker_cost_is_subtracted_from_the_invariant_cost_only() -> None:
    result = classify_repetition(handshake_trace(), TID, version="1.3", cpus=[0], marker_cost_ns=7)
    markers = 5  # the marker lines that opened groups (the end marker closes the window)
    assert result.marker_cost_ns == 7 * markers
    assert result.network_invariant_ns == result.on_cpu_ns - 7 * markers
    assert sum(result.group_seconds().values()) * 1e9 == pytest.approx(
        result.network_invariant_ns, abs=markers
    )


def test_idle_per_cpu_and_an_unseen_cpu() -> None:
    result = classify_repetition(handshake_trace(), TID, version="1.3", cpus=[0, 1, 2])
    # CPU 1 ran the idle task until the first switch on it (at -50 to the broker): 0 idle
    # within the window; CPU 0 ran idle 300–1300; CPU 2 never switched: unknown.
    assert result.idle_fraction_per_cpu[0] == pytest.approx(1000 / 2600)
    assert result.idle_fraction_per_cpu[1] == 0.0
    assert result.idle_fraction_per_cpu[2] is None


def test_retransmissions_on_the_connection_are_counted_others_are_not() -> None:
    trace = [
        *handshake_trace(),
        Event(500, 1, "tcp_retransmit_skb", BROKER, {"sport": 8883, "dport": 40000}),
        Event(600, 1, "tcp_retransmit_skb", BROKER, {"sport": 22, "dport": 50000}),
    ]
    trace.sort(key=lambda e: e.ts_ns)
    result = classify_repetition(trace, TID, version="1.3", cpus=[0], local_port=40000)
    assert result.retransmissions == 1


def test_other_threads_markers_are_ignored_and_a_missing_end_is_reported() -> None:
    trace = [e for e in handshake_trace() if "end" not in e.fields.get("buf", "")]
    trace.append(Event(2700, 1, "print", BROKER, {"buf": "iotsb grp SOMETHING_ELSE\n"}))
    result = classify_repetition(trace, TID, version="1.3", cpus=[0])
    assert "SOMETHING_ELSE" not in result.groups
    assert result.problems and "no end marker" in result.problems[0]
    with pytest.raises(ValueError, match="no group markers"):
        classify_repetition(trace, TID + 1, version="1.3", cpus=[0])


@pytest.mark.parametrize(
    ("written", "message", "version", "group"),
    [
        (True, 1, "1.3", "WAIT_SERVER_FLIGHT"),
        (False, 2, "1.3", "KEY_DERIVE"),
        (False, 2, "1.2", "SERVER_HELLO"),
        (False, 14, "1.2", "KEY_DERIVE"),
        (False, 15, "1.3", "CERT_VERIFY"),
        (False, 12, "1.2", "CERT_VERIFY"),
        (True, 20, "1.3", "TLS_DONE"),
        (True, 20, "1.2", "WAIT_SERVER_FINISHED"),
        (False, 99, "1.3", "AFTER_RECEIVED_99"),
    ],
)
def test_message_groups(written: bool, message: int, version: str, group: str) -> None:
    assert message_group(written, message, version) == group


def test_a_timer_wake_up_while_other_traffic_flows_is_not_network_wait() -> None:
    """Packets of other connections arrive during a sleep; the thread is woken by a timer on
    another CPU, long after the last packet there: 'other', not network wait."""
    trace = [
        mark(0, "grp NAP"),
        switch(100, TID, 0),
        packet(500, cpu=1),  # someone else's traffic, on CPU 1
        packet(900, cpu=1),
        waking(5_000_000, cpu=0),  # the timer fires on CPU 0, 5 ms later
        switch(5_000_100, 0, TID),
        mark(5_000_200, "end"),
    ]
    nap = classify_repetition(trace, TID, version="1.3", cpus=[0, 1]).groups["NAP"]
    assert nap.network_wait_ns == 0 and nap.other_ns == 5_000_000 - 100


def test_a_packet_before_the_sleep_does_not_make_it_network_wait() -> None:
    trace = [
        mark(0, "grp NAP"),
        packet(50, cpu=1),  # arrived while the thread was still running
        switch(100, TID, 0),
        waking(120, cpu=1),  # within the window, but the packet predates the sleep
        switch(200, 0, TID),
        mark(300, "end"),
    ]
    nap = classify_repetition(trace, TID, version="1.3", cpus=[0, 1]).groups["NAP"]
    assert nap.network_wait_ns == 0
