"""Emulated networks: emitter, broker and receiver as hosts in their own network namespaces,
joined through a user-space wire that delays and drops frames, with kernel rate limits.

Topology of one run (``docs/network.md`` has the picture and the reasons)::

    emitter ns            wire ns                      broker ns
    eth0 10.73.0.2 ──veth── emitter ┐            ┌ broker ──veth── eth0 10.73.0.1
                                    ├─ wire.py ──┤
    receiver ns                     │            │
    eth0 10.73.0.3 ──veth── receiver┘            │

- every namespace is named ``iotsb-<runner pid>-<run id>-<role>``; veth pairs are created
  inside them (never in the runner's namespace), so deleting the namespaces deletes every
  link, qdisc and address; nothing is created outside them;
- rate: ``tbf`` on the egress of each direction (host's ``eth0`` for *up*, the wire's port
  for *down*); delay, jitter and loss: the wire (``lab/network_wire.py``), because this
  kernel has no netem and no qdisc that honours departure times;
- offloads (TSO, GSO, GRO, checksum) are off on both ends of every veth, so each packet is
  one frame of at most the MTU and is shaped on its own;
- ``cleanup_leftovers`` (``iotsecbench doctor --cleanup``) removes the namespaces, and kills
  the processes inside them, of runners that no longer exist (e.g. after SIGKILL).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from iotsecbench.errors import EnvironmentProblem, MissingBinaryError, NoPermissionError
from iotsecbench.lab.processes import Supervised, pid_directory
from iotsecbench.spec.hosts import HOSTS, LOOPBACK

if TYPE_CHECKING:  # annotations only: doctor imports this module and should not load pydantic
    from iotsecbench.spec.network import DirectionShape, NetworkProfile

NAMESPACE_PREFIX = "iotsb-"
# A private (RFC 1918) /24 used only inside the run's namespaces, which have no route out.
SUBNET_PREFIX = "10.73.0"
ADDRESSES = {
    "broker": f"{SUBNET_PREFIX}.1",
    "emitter": f"{SUBNET_PREFIX}.2",
    "receiver": f"{SUBNET_PREFIX}.3",
}
# Locally administered unicast MACs (second-lowest bit of the first byte set), fixed so the
# wire can switch by destination address without learning.
HOST_MACS = {
    "broker": "02:69:6f:00:00:01",
    "emitter": "02:69:6f:00:00:02",
    "receiver": "02:69:6f:00:00:03",
}
WIRE_MACS = {
    "broker": "02:69:6f:00:01:01",
    "emitter": "02:69:6f:00:01:02",
    "receiver": "02:69:6f:00:01:03",
}
HOST_INTERFACE = "eth0"
FRAME_BYTES = 1514  # Ethernet header + 1500-byte MTU: the smallest tbf bucket that passes a frame
DEFAULT_QUEUE_S = 0.1  # default rate-limiter buffer: 100 ms of traffic, at least two frames
CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/run/netns")
OFFLOADS = ("tso", "gso", "gro", "tx", "rx")
NETWORK_HINT = (
    "network profiles need root (network namespaces, tc, ethtool); run as root, or use "
    "--network loopback"
)

T = TypeVar("T")


def is_loopback(profile_name: str) -> bool:
    return profile_name == LOOPBACK


# -- helpers -------------------------------------------------------------------------------
def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if not found:
        raise MissingBinaryError(
            f"{name} not found: install it (scripts/setup.sh installs iproute2 and ethtool)"
        )
    return found


def _command(argv: list[str], what: str) -> str:
    """Run a set-up command; failures become one EnvironmentProblem line."""
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip().splitlines()
        detail = message[-1] if message else f"exit code {result.returncode}"
        if "Operation not permitted" in detail or "Permission denied" in detail:
            raise NoPermissionError(f"{what}: {detail}; {NETWORK_HINT}")
        raise EnvironmentProblem(f"{what}: `{' '.join(argv)}` failed: {detail}")
    return result.stdout


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def in_namespace(namespace: str, function: Callable[[], T]) -> T:
    """Call ``function`` in a thread that has entered network namespace ``namespace``.

    Sockets created there stay in that namespace; ``/proc/thread-self/net`` and
    ``/proc/sys/net`` show that namespace. The calling thread is not affected.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            with open(NETNS_DIR / namespace) as handle:
                if _libc().setns(handle.fileno(), CLONE_NEWNET) != 0:
                    error = ctypes.get_errno()
                    raise OSError(error, f"setns {namespace}: {os.strerror(error)}")
            outcome["value"] = function()
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, name=f"netns-{namespace}", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def namespace_name(owner_pid: int, run_id: str, role: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "-", run_id)
    return f"{NAMESPACE_PREFIX}{owner_pid}-{safe}-{role}"


def list_namespaces() -> list[str]:
    """Names of every named network namespace on the machine."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(entry.name for entry in NETNS_DIR.iterdir())


def queue_bytes(shape: DirectionShape) -> int:
    if shape.queue_bytes:
        return shape.queue_bytes
    assert shape.rate_kbit is not None
    return max(2 * FRAME_BYTES, round(shape.rate_kbit * 1000 / 8 * DEFAULT_QUEUE_S))


def tbf_arguments(shape: DirectionShape) -> list[str]:
    """tc arguments of the rate limiter of one direction (burst: one full frame)."""
    assert shape.rate_kbit is not None
    rate_bit = max(8, round(shape.rate_kbit * 1000))
    return [
        "tbf",
        "rate",
        f"{rate_bit}bit",
        "burst",
        str(FRAME_BYTES),
        "limit",
        str(queue_bytes(shape)),
    ]


# -- capabilities --------------------------------------------------------------------------
def support_problem() -> str | None:
    """Why network profiles cannot run here (one line), or None when they can."""
    if os.geteuid() != 0:
        return f"not root (uid {os.geteuid()}): {NETWORK_HINT}"
    for tool in ("ip", "tc", "ethtool"):
        if not (shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")):
            return f"{tool} not found: install iproute2 and ethtool (scripts/setup.sh)"
    probe = f"{NAMESPACE_PREFIX}{os.getpid()}-probe"
    result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or ["failed"])[-1]
        return f"cannot create a network namespace ({detail}): {NETWORK_HINT}"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True)
    return None


def require_support(profile_names: list[str]) -> None:
    """Refuse (exit 3, one line) when a non-loopback profile is asked for and cannot run."""
    wanted = [name for name in profile_names if not is_loopback(name)]
    if not wanted:
        return
    problem = support_problem()
    if problem is not None:
        raise NoPermissionError(f"--network {','.join(wanted)}: {problem}")


# -- the lab -------------------------------------------------------------------------------
@dataclass(frozen=True)
class CounterRow:
    host: str  # 'emitter', 'broker', 'receiver' or 'wire'
    source: str  # 'snmp', 'netstat', 'dev:eth0', 'qdisc:eth0', 'link:emitter.up', …
    name: str  # counter name as the kernel (or the wire) calls it
    value: int


class NetworkLab:
    """The namespaces, links, shaping and wire of one run. A context manager: everything it
    created is removed when the block ends, on error and on Ctrl-C."""

    READY_TIMEOUT_S = 15.0

    def __init__(
        self, profile: NetworkProfile, run_id: str, run_dir: Path, *, seed: int = 0
    ) -> None:
        self.profile = profile
        self.run_id = run_id
        self.run_dir = run_dir
        self.seed = seed
        self.namespaces = {
            role: namespace_name(os.getpid(), run_id, role) for role in (*HOSTS, "wire")
        }
        self._created: list[str] = []
        self._owner_files: list[Path | None] = []  # lab.processes.record_namespace
        self._wire: Supervised | None = None
        self.counter_rows: list[CounterRow] = []
        self.log: list[str] = []  # what was done, in order (tests read it)

    # -- addresses and processes ----------------------------------------------------------
    def address(self, role: str) -> str:
        return ADDRESSES[role]

    def command(self, role: str, argv: list[str]) -> list[str]:
        """``argv`` run inside ``role``'s namespace."""
        return [_tool("ip"), "netns", "exec", self.namespaces[role], *argv]

    def broker_options(self, port: int) -> dict[str, Any]:
        """``MosquittoBroker`` arguments that put a broker on the broker host, on ``port``
        (the run's broker and each of ``bench handshake``'s alike)."""
        return {
            "host": self.address("broker"),
            "port": port,
            "command_prefix": self.command("broker", []),
            "within": lambda function: in_namespace(self.namespaces["broker"], function),
        }

    def connect(self, role: str, host: str, port: int, timeout_s: float) -> socket.socket:
        """A TCP connection opened from inside ``role``'s namespace."""
        return in_namespace(
            self.namespaces[role], lambda: socket.create_connection((host, port), timeout_s)
        )

    # -- lifecycle --------------------------------------------------------------------------
    def _run(self, argv: list[str], what: str) -> str:
        self.log.append(" ".join(argv))
        return _command(argv, what)

    def _add_namespace(self, role: str) -> None:
        name = self.namespaces[role]
        # Recorded before it exists: a signal while `ip netns add` runs must not leave a
        # namespace nobody knows to delete (removing one never made is harmless).
        self._created.append(name)
        self._owner_files.append(record_namespace(name))
        self._run([_tool("ip"), "netns", "add", name], f"creating namespace {name}")

        def quiet_ipv6() -> None:
            # IPv6 would add router solicitations, DAD and MLD frames to every link.
            for scope in ("all", "default"):
                Path(f"/proc/sys/net/ipv6/conf/{scope}/disable_ipv6").write_text("1")

        with contextlib.suppress(OSError):
            in_namespace(name, quiet_ipv6)
        self._run([_tool("ip"), "-n", name, "link", "set", "lo", "up"], f"loopback in {name}")

    def _offloads_off(self, namespace: str, interface: str) -> None:
        # Segmentation and receive offloads would hand 64 kB super-packets to the shaper;
        # checksum offload would leave checksums unfilled in frames the wire copies.
        argv = [_tool("ip"), "netns", "exec", namespace, _tool("ethtool"), "-K", interface]
        for feature in OFFLOADS:
            argv += [feature, "off"]
        self._run(argv, f"turning offloads off on {interface} in {namespace}")

    def _link(self, role: str) -> None:
        wire, host = self.namespaces["wire"], self.namespaces[role]
        ip = _tool("ip")
        self._run(
            [ip, "-n", wire, "link", "add", role, "address", WIRE_MACS[role], "type", "veth",
             "peer", "name", HOST_INTERFACE, "address", HOST_MACS[role], "netns", host],
            f"creating the {role} link",
        )  # fmt: skip
        self._run(
            [ip, "-n", host, "addr", "add", f"{ADDRESSES[role]}/24", "dev", HOST_INTERFACE],
            f"addressing {role}",
        )
        self._offloads_off(host, HOST_INTERFACE)
        self._offloads_off(wire, role)
        link = self.profile.link(role)
        tc = _tool("tc")
        for namespace, interface, shape in (
            (host, HOST_INTERFACE, link.up),
            (wire, role, link.down),
        ):
            if shape.rate_kbit:
                self._run(
                    [tc, "-n", namespace, "qdisc", "add", "dev", interface, "root",
                     *tbf_arguments(shape)],
                    f"rate limit on {interface} in {namespace}",
                )  # fmt: skip
        for namespace, interface in ((host, HOST_INTERFACE), (wire, role)):
            self._run([ip, "-n", namespace, "link", "set", interface, "up"], f"{role} link up")

    def _wire_config(self) -> Path:
        shapes = {
            role: {
                direction: getattr(self.profile.link(role), direction).numbers()
                for direction in ("up", "down")
            }
            for role in HOSTS
        }
        config = {
            "ports": {role: {"ifname": role, "mac": HOST_MACS[role]} for role in HOSTS},
            "shapes": shapes,
            "seed": self.seed,
            "counters_path": str(self.run_dir / "wire.counters.json"),
        }
        path = self.run_dir / "wire.config.json"
        path.write_text(json.dumps(config, indent=1))
        (self.run_dir / "wire.counters.json").unlink(missing_ok=True)
        return path

    def _start_wire(self) -> None:
        argv = self.command(
            "wire",
            [
                sys.executable,
                "-m",
                "iotsecbench.lab.network_wire",
                "--config",
                str(self._wire_config()),
            ],
        )
        self.log.append(" ".join(argv))
        wire = Supervised(argv, stdout=subprocess.PIPE, stderr_path=self.run_dir / "wire.stderr")
        self._wire = wire.__enter__()
        assert wire.process is not None and wire.process.stdout is not None
        deadline = time.monotonic() + self.READY_TIMEOUT_S
        while time.monotonic() < deadline:
            readable, _, _ = select.select([wire.process.stdout], [], [], 0.1)
            if readable and wire.process.stdout.readline().strip() == b"READY":
                return
            if wire.poll() is not None:
                break
        stderr = (self.run_dir / "wire.stderr").read_text(errors="replace").strip().splitlines()
        raise EnvironmentProblem(
            f"the network wire did not start: {stderr[-1] if stderr else 'no error message'}"
        )

    def start(self) -> NetworkLab:
        if self.profile.kind == LOOPBACK:
            raise ValueError("the loopback profile needs no NetworkLab")
        if os.geteuid() != 0:
            raise NoPermissionError(f"not root (uid {os.geteuid()}): {NETWORK_HINT}")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._add_namespace("wire")
        for role in HOSTS:
            self._add_namespace(role)
        for role in HOSTS:
            self._link(role)
        self._start_wire()
        return self

    def collect_counters(self) -> list[CounterRow]:
        """Per-host kernel counters (fresh namespaces: totals of this run) and the wire's."""
        rows: list[CounterRow] = []
        for role in HOSTS:
            namespace = self.namespaces[role]
            if namespace not in self._created:
                continue
            try:
                texts = in_namespace(namespace, _read_net_files)
            except OSError:
                continue
            rows += [CounterRow(role, *entry) for entry in parse_counters(texts)]
            rows += self._qdisc_counters(role, namespace, HOST_INTERFACE)
        if self.namespaces["wire"] in self._created:
            for role in HOSTS:
                rows += self._qdisc_counters("wire", self.namespaces["wire"], role)
        self.counter_rows = rows
        return rows

    def _qdisc_counters(self, host: str, namespace: str, interface: str) -> list[CounterRow]:
        result = subprocess.run(
            [_tool("tc"), "-n", namespace, "-s", "-j", "qdisc", "show", "dev", interface],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0 or not result.stdout.strip():
            return []
        rows = []
        for qdisc in json.loads(result.stdout):
            if qdisc.get("kind") != "tbf":
                continue
            for name in ("bytes", "packets", "drops", "overlimits", "requeues"):
                if name in qdisc:
                    rows.append(
                        CounterRow(host, f"qdisc:{interface}", f"tbf.{name}", int(qdisc[name]))
                    )
        return rows

    def _wire_counters(self) -> list[CounterRow]:
        path = self.run_dir / "wire.counters.json"
        if not path.exists():
            return []
        data = json.loads(path.read_text())
        rows = []
        for role, directions in data.get("links", {}).items():
            for direction, values in directions.items():
                rows += [
                    CounterRow("wire", f"link:{role}.{direction}", name, int(value))
                    for name, value in values.items()
                ]
        for name in ("unknown_destination", "pending_at_exit"):
            if name in data:
                rows.append(CounterRow("wire", "wire", name, int(data[name])))
        return rows

    def stop(self) -> None:
        """Read the counters, stop the wire, kill what is left inside, delete the namespaces.

        Never raises for a cleanup step; every step is tried.
        """
        if self._created and not self.counter_rows:
            with contextlib.suppress(Exception):
                self.collect_counters()
        if self._wire is not None:
            self._wire.stop()
            self._wire = None
            with contextlib.suppress(Exception):
                self.counter_rows = [*self.counter_rows, *self._wire_counters()]
        for name in reversed(self._created):
            remove_namespace(name)
        self._created = []
        for path in self._owner_files:
            if path is not None:
                path.unlink(missing_ok=True)
        self._owner_files = []

    def __enter__(self) -> NetworkLab:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _read_net_files() -> dict[str, str]:
    texts = {}
    for name in ("snmp", "netstat", "dev"):
        texts[name] = Path(f"/proc/thread-self/net/{name}").read_text()
    return texts


def parse_counters(texts: dict[str, str]) -> list[tuple[str, str, int]]:
    """(source, name, value) from the texts of /proc/net/snmp, netstat and dev.

    snmp and netstat come in pairs of lines, ``Tcp: RetransSegs …`` then ``Tcp: 12 …``;
    names become ``Tcp.RetransSegs``. ``dev`` gives ``rx_bytes`` … per interface.
    """
    rows: list[tuple[str, str, int]] = []
    for source in ("snmp", "netstat"):
        lines = texts.get(source, "").splitlines()
        for header, values in zip(lines[::2], lines[1::2], strict=False):
            prefix, _, names = header.partition(":")
            _, _, numbers = values.partition(":")
            for name, number in zip(names.split(), numbers.split(), strict=False):
                with contextlib.suppress(ValueError):
                    rows.append((source, f"{prefix}.{name}", int(number)))
    fields = [
        "rx_bytes",
        "rx_packets",
        "rx_errors",
        "rx_dropped",
        "rx_fifo",
        "rx_frame",
        "rx_compressed",
        "rx_multicast",
        "tx_bytes",
        "tx_packets",
        "tx_errors",
        "tx_dropped",
        "tx_fifo",
        "tx_collisions",
        "tx_carrier",
        "tx_compressed",
    ]
    for line in texts.get("dev", "").splitlines()[2:]:
        interface, _, numbers = line.partition(":")
        interface = interface.strip()
        if interface == "lo":
            continue
        for name, number in zip(fields, numbers.split(), strict=False):
            rows.append((f"dev:{interface}", name, int(number)))
    return rows


# -- cleanup -------------------------------------------------------------------------------
def remove_namespace(name: str) -> None:
    """Kill every process inside a namespace, then delete it (its links and qdiscs go too)."""
    ip = shutil.which("ip") or "/usr/sbin/ip"
    pids = subprocess.run([ip, "netns", "pids", name], capture_output=True, text=True)
    for pid in pids.stdout.split():
        with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
            os.kill(int(pid), signal.SIGKILL)
    for _attempt in range(20):
        result = subprocess.run([ip, "netns", "delete", name], capture_output=True, text=True)
        if result.returncode == 0 or name not in list_namespaces():
            return
        time.sleep(0.05)


def _owner_alive(pid: int) -> bool:
    """Whether ``pid`` still runs something that makes namespaces: iotsecbench, a test run,
    or a parallel test worker (pytest-xdist's, whose command line is execnet's bootstrap:
    known by its parent, the pytest that started it)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if b"iotsecbench" in cmdline or b"pytest" in cmdline:
            return True
        parent = re.search(r"^PPid:\s*(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M)
        return parent is not None and b"pytest" in Path(f"/proc/{parent[1]}/cmdline").read_bytes()
    except OSError:
        return False


def leftover_namespaces(*, include_live: bool = False) -> list[str]:
    """iotsecbench namespaces whose runner is gone (or every one with ``include_live``)."""
    found = []
    for name in list_namespaces():
        match = re.match(rf"{re.escape(NAMESPACE_PREFIX)}(\d+)-", name)
        if not match:
            continue
        if include_live or not _owner_alive(int(match.group(1))):
            found.append(name)
    return found


def record_namespace(name: str) -> Path | None:
    """Inside ``lab.processes.recording_pids``: leave ``netns-<name>.json`` beside the PID
    files while the namespace exists, so that if this runner dies, the next one of the same
    directory removes it (``remove_recorded_namespaces``)."""
    directory = pid_directory()
    if directory is None:
        return None
    path = directory / f"netns-{name}.json"
    path.write_text(json.dumps({"netns": name}))
    return path


def remove_recorded_namespaces(directory: Path) -> list[str]:
    """Remove the namespaces a dead runner of this directory recorded (call only while
    holding the directory's writer lock, like ``lab.processes.stop_leftovers``)."""
    removed = []
    for path in sorted(Path(directory).glob("netns-*.json")):
        try:
            name = str(json.loads(path.read_text())["netns"])
        except (OSError, ValueError, KeyError, TypeError):
            name = None  # half-written by a runner killed mid-write: nothing made yet
        if name is not None and name in list_namespaces():
            remove_namespace(name)  # kills what still runs inside; links and qdiscs go too
            removed.append(f"network namespace {name}")
        path.unlink(missing_ok=True)
    return removed


def cleanup_leftovers(*, include_live: bool = False) -> list[str]:
    """Remove the namespaces (and the processes in them) of crashed runs; return their names."""
    removed = []
    for name in leftover_namespaces(include_live=include_live):
        remove_namespace(name)
        removed.append(name)
    return removed
