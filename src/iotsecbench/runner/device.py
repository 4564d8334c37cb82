"""One connection of the device client (``vmcu.client``) against a real broker: QEMU runs the
firmware, its UART connected as a TCP client to the *bridge*, which holds the TCP connection
to the broker and passes the bytes on (docs/device-client.md).

Why a bridge, not QEMU's socket straight to the broker: QEMU writes a UART's bytes one at a
time, so the broker's connection would carry one byte per segment (TCP_NODELAY) or wait out
Nagle's algorithm for every record (without it), neither what a device's network stack does.
The firmware frames each of its sends (2-byte length) and the bridge sends each frame with one
``send()``, so the segments are those of one buffer per send; from the broker the bytes go to
the UART as they come. On the way the bridge keeps both streams with their arrival times (the
transcript and the device-time replay read them), the connection's TCP_INFO, and the time of
its own TCP connect — QEMU's and the bridge's, not the device's: recorded, not counted.

Call it from the thread that should own the sockets: inside the device host's network
namespace on an emulated network (``lab.network.in_namespace``), where QEMU, a child of that
thread, starts too, so the bytes cross the shaped link like any agent's.

The "publish" role (the device as the lab's emitter) first learns the lab's clock: before the
bridge connects to the broker it answers the firmware's clock sync (``_sync_clock``; the
protocol is ``vmcu/client/clock.c``'s), and while it relays it calls ``on_tick`` about every
50 ms, so the caller can pass the firmware's records on while the run goes.

A firmware that hangs, or keeps waiting after the broker closed the connection, is stopped
within ``timeout_s`` (or ``BROKER_CLOSED_GRACE_S`` after the close) and its run fails with
where it was; QEMU runs supervised (own process group, killed with the runner), so none is
left behind.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from iotsecbench.files import PRIVATE_FILE_MODE, write_atomic
from iotsecbench.lab.processes import Supervised, describe_exit
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.tcpinfo import TcpInfo, read_tcp_info
from iotsecbench.vmcu.client import DeviceFirmware
from iotsecbench.vmcu.device import (
    CONFIG_FILE,
    EMITTER_ROLES,
    DeviceConfig,
    DeviceOutcome,
    client_command,
    read_outcome,
)
from iotsecbench.vmcu.targets import TARGETS

DEFAULT_TIMEOUT_S = 120.0
BROKER_CLOSED_GRACE_S = 3.0  # how long a firmware may run on after the broker closed
QEMU_CONNECT_TIMEOUT_S = 20.0  # QEMU connects its UART when it starts
SEND_TIMEOUT_S = 10.0  # how long a send to QEMU or to the broker may block
CLOCK_SYNC_ROUNDS = 16  # vmcu/client/clock.c's SYNC_ROUNDS
TICK_S = 0.05  # how often the relay calls on_tick
Tick = Callable[[socket.socket], None]  # called with the broker connection while relaying


@dataclass(frozen=True)
class Chunk:
    """Bytes that crossed the bridge: to the broker (``written``) or from it."""

    t_ns: int
    written: bool
    size: int


@dataclass
class DeviceRun:
    """What one connection of the device client gave."""

    outcome: DeviceOutcome
    sent: bytes = b""  # the device's stream to the broker, as the bridge sent it
    received: bytes = b""  # the broker's stream to the device
    chunks: list[Chunk] = field(default_factory=list)
    tcp_connect_ns: tuple[int, int] = (0, 0)  # the bridge's TCP connect: start, end
    tcp_before: TcpInfo | None = None  # the broker connection's counters after connect
    tcp_after: TcpInfo | None = None  # ... and before it closed
    qemu_wall_ns: int = 0  # QEMU's start to its exit
    problem: str | None = None  # why the run failed; None when it completed
    # the publish role's clock sync: lab clock = the firmware's SYS_ELAPSED + offset, within
    # the uncertainty (half the sync's round trip)
    clock_offset_ns: int | None = None
    clock_uncertainty_ns: int | None = None

    def arrival_ns(self, written: bool, offset: int) -> int | None:
        """When the bridge had passed on the direction's first ``offset`` bytes."""
        total = 0
        for chunk in self.chunks:
            if chunk.written == written:
                total += chunk.size
                if total >= offset:
                    return chunk.t_ns
        return None


def _relay(
    device: socket.socket,
    broker: socket.socket,
    qemu: Supervised,
    run: DeviceRun,
    deadline: float,
    on_tick: Tick | None = None,
) -> str | None:
    """Pass bytes both ways until QEMU closes its side; a problem when it does not."""
    sent, received = bytearray(), bytearray()
    pending = bytearray()  # the device's bytes not yet a whole frame
    broker_closed_at: float | None = None
    selector = selectors.DefaultSelector()
    selector.register(device, selectors.EVENT_READ, "device")
    selector.register(broker, selectors.EVENT_READ, "broker")
    problem = None
    ticked = time.monotonic()
    try:
        while problem is None:
            # after the bytes of the last select were passed on: a record the firmware wrote
            # after its bytes finds them counted in the connection's TCP_INFO
            if on_tick is not None and time.monotonic() - ticked >= TICK_S:
                ticked = time.monotonic()
                on_tick(broker)
            if time.monotonic() > deadline:
                problem = "timeout"
                continue
            if broker_closed_at is not None and time.monotonic() > broker_closed_at + (
                BROKER_CLOSED_GRACE_S
            ):
                problem = "broker closed"
                continue
            events = selector.select(timeout=TICK_S if on_tick is not None else 0.1)
            if not events and qemu.poll() is not None:
                break  # QEMU is gone and nothing is left to pass on
            for key, _ in events:
                if key.data == "device":
                    try:
                        data = device.recv(65536)
                    except OSError:  # QEMU exiting resets its end
                        data = b""
                    if not data:  # the firmware exited: QEMU closed its side
                        return None
                    pending += data
                    while len(pending) >= 2 and len(pending) >= 2 + (pending[0] << 8 | pending[1]):
                        size = pending[0] << 8 | pending[1]
                        frame = bytes(pending[2 : 2 + size])
                        del pending[: 2 + size]
                        if broker_closed_at is None:
                            try:
                                broker.sendall(frame)
                            except OSError:  # closed, reset, or not taking bytes (timeout)
                                broker_closed_at = broker_closed_at or time.monotonic()
                                continue
                            sent += frame
                            run.chunks.append(Chunk(now_ns(), True, size))
                else:
                    try:
                        data = broker.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        selector.unregister(broker)
                        broker_closed_at = broker_closed_at or time.monotonic()
                        continue
                    run.chunks.append(Chunk(now_ns(), False, len(data)))
                    received += data
                    try:
                        device.sendall(data)
                    except TimeoutError:
                        return "the firmware stopped taking bytes from the broker"
    finally:
        selector.close()
        run.sent, run.received = bytes(sent), bytes(received)
    return problem


def run_device(
    firmware: DeviceFirmware,
    config: DeviceConfig,
    broker_address: tuple[str, int],
    work_dir: Path,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    connect: Callable[[tuple[str, int], float], socket.socket] | None = None,
    on_tick: Tick | None = None,
) -> DeviceRun:
    """One connection of ``firmware`` with ``config`` to the broker at ``broker_address``;
    its files (configuration, records, QEMU's log) in ``work_dir``. ``connect`` opens the
    bridge's connection to the broker (default: ``socket.create_connection`` here);
    ``on_tick`` is called about every ``TICK_S`` while the bridge relays."""
    work_dir.mkdir(parents=True, exist_ok=True)
    # the broker account's password and a mutual profile's key: never readable by others,
    # not even between a write and a chmod
    write_atomic(work_dir / CONFIG_FILE, config.encode(), mode=PRIVATE_FILE_MODE)
    connect = connect or (lambda address, timeout: socket.create_connection(address, timeout))
    target = TARGETS[firmware.target]
    run = DeviceRun(DeviceOutcome())
    deadline = time.monotonic() + timeout_s
    with socket.create_server(("127.0.0.1", 0)) as listener:
        argv = client_command(target, firmware.path, "127.0.0.1", listener.getsockname()[1])
        started = now_ns()
        with Supervised(argv, cwd=work_dir, stderr_path=work_dir / "qemu.log") as qemu:
            sync = config.role in EMITTER_ROLES
            problem = _serve(listener, qemu, run, broker_address, connect, deadline, sync, on_tick)
            # the firmware closed its side: it is exiting (a problem: stop it now)
            grace = 0.0 if problem is not None else min(5.0, deadline - time.monotonic())
            code = qemu.wait(max(0.0, grace))
            run.qemu_wall_ns = now_ns() - started
            if code is None and problem is None:
                problem = f"the firmware did not exit within {timeout_s:g} s"
        # leaving the block stopped QEMU's process group, whatever happened
    run.outcome = read_outcome(work_dir)
    run.problem = _explain(problem, run, code, work_dir, timeout_s)
    return run


def _serve(
    listener: socket.socket,
    qemu: Supervised,
    run: DeviceRun,
    broker_address: tuple[str, int],
    connect: Callable[[tuple[str, int], float], socket.socket],
    deadline: float,
    sync: bool,
    on_tick: Tick | None,
) -> str | None:
    """Accept QEMU's UART, (sync the firmware's clock,) connect to the broker, relay; a
    problem word or None."""
    listener.settimeout(0.1)
    accept_by = time.monotonic() + QEMU_CONNECT_TIMEOUT_S
    while True:
        try:
            device, _ = listener.accept()
            break
        except TimeoutError:
            if qemu.poll() is not None:
                return "qemu exited"
            if time.monotonic() > accept_by:
                return "qemu never connected"
    with device:
        device.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # select() says when to read; a send blocks at most this long (a stuck peer)
        device.settimeout(SEND_TIMEOUT_S)
        if sync:
            problem = _sync_clock(device, run)
            if problem is not None:
                return problem
        t0 = now_ns()
        try:
            broker = connect(broker_address, max(1.0, deadline - time.monotonic()))
        except OSError as error:
            return (
                f"cannot connect to the broker at {broker_address[0]}:{broker_address[1]}: {error}"
            )
        run.tcp_connect_ns = (t0, now_ns())
        with broker:
            # as the lab's agents do (AgentConfig.tcp_nodelay): no Nagle delay between records
            broker.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            broker.settimeout(SEND_TIMEOUT_S)
            run.tcp_before = read_tcp_info(broker)
            problem = _relay(device, broker, qemu, run, deadline, on_tick)
            run.tcp_after = read_tcp_info(broker)
    return problem


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        more = sock.recv(size - len(data))
        if not more:
            break
        data += more
    return data


def _sync_clock(device: socket.socket, run: DeviceRun) -> str | None:
    """The lab's clock to the firmware (protocol: vmcu/client/clock.c); a problem or None."""
    try:
        if _receive_exactly(device, 2) != b"\0\0":  # ready: an empty frame
            return "the firmware did not start the clock sync"
        low, high = -(2**63), 2**63  # the offset's bounds over the rounds
        for _ in range(CLOCK_SYNC_ROUNDS):
            sent_ns = now_ns()
            device.sendall(sent_ns.to_bytes(8, "big"))
            reply = _receive_exactly(device, 10)
            answered_ns = now_ns()
            if reply[:2] != b"\0\x08" or len(reply) != 10:
                return "the firmware answered the clock sync with something else"
            elapsed_ns = int.from_bytes(reply[2:], "big")
            low, high = max(low, sent_ns - elapsed_ns), min(high, answered_ns - elapsed_ns)
        run.clock_offset_ns = (low + high) // 2
        run.clock_uncertainty_ns = (high - low + 1) // 2
        device.sendall(run.clock_offset_ns.to_bytes(8, "big", signed=True))
    except OSError as error:
        return f"the firmware's clock sync failed: {error}"
    return None


def _explain(
    problem: str | None, run: DeviceRun, code: int | None, work_dir: Path, timeout_s: float
) -> str | None:
    """The one line a failed run is stored with (None when the firmware finished)."""
    outcome = run.outcome
    if outcome.error is not None:
        return f"the device client failed: {outcome.error}"
    if problem == "timeout":
        return f"the device client did not finish within {timeout_s:g} s ({outcome.last_segment()})"
    if problem == "broker closed":
        return (
            "the broker closed the connection and the device client kept waiting "
            f"({outcome.last_segment()})"
        )
    if problem is not None and problem not in ("qemu exited",):
        return problem
    if not outcome.finished:
        log = (work_dir / "qemu.log").read_text(errors="replace").strip().splitlines()
        detail = f": {log[-1]}" if log else ""
        return (
            f"QEMU stopped ({describe_exit(code)}) before the device client finished "
            f"({outcome.last_segment()}){detail}"
        )
    return None
