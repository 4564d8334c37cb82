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
) -> str | None:
    """Pass bytes both ways until QEMU closes its side; a problem when it does not."""
    sent, received = bytearray(), bytearray()
    pending = bytearray()  # the device's bytes not yet a whole frame
    broker_closed_at: float | None = None
    selector = selectors.DefaultSelector()
    selector.register(device, selectors.EVENT_READ, "device")
    selector.register(broker, selectors.EVENT_READ, "broker")
    problem = None
    try:
        while problem is None:
            if time.monotonic() > deadline:
                problem = "timeout"
                continue
            if broker_closed_at is not None and time.monotonic() > broker_closed_at + (
                BROKER_CLOSED_GRACE_S
            ):
                problem = "broker closed"
                continue
            events = selector.select(timeout=0.1)
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
) -> DeviceRun:
    """One connection of ``firmware`` with ``config`` to the broker at ``broker_address``;
    its files (configuration, records, QEMU's log) in ``work_dir``. ``connect`` opens the
    bridge's connection to the broker (default: ``socket.create_connection`` here)."""
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
            problem = _serve(listener, qemu, run, broker_address, connect, deadline, timeout_s)
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
    timeout_s: float,
) -> str | None:
    """Accept QEMU's UART, connect to the broker, relay; a problem word or None."""
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
            problem = _relay(device, broker, qemu, run, deadline)
            run.tcp_after = read_tcp_info(broker)
    return problem


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
