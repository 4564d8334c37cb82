"""How large a fleet this machine can run (docs/scale.md): each device is an emitter and a
receiver process, two broker connections, two loopback ports and their memory; a virtual
device (``run --target``) is also a QEMU process that must keep the lab's real time. A fleet
above the smallest of these limits is refused before anything starts, naming the limit."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

# Measured on this project's agents (peak RSS of a run, runs.peak_rss_*_bytes): a Python
# agent holds about 45 MB, the native C agent about 8 MB. With a margin for the broker.
AGENT_BYTES = {"python": 48 * 2**20, "native": 10 * 2**20}
# The fleet agent (agents/native/fleet.c): both roles of a TLS device in one process plus the
# broker's two TLS connections, measured at 1,000 TLS 1.2 devices (docs/scale.md), with a
# margin; per device, not per agent.
FLEET_DEVICE_BYTES = 512 * 2**10
TASKS_PER_DEVICE = 8  # two agents: main, network and sampler threads each, and slack
FDS_RESERVED = 64  # the runner's own files, the broker's listeners and log
PORTS_RESERVED = 1000  # leave the rest of the machine its ephemeral ports
MEMORY_SHARE = 0.8  # of MemAvailable
# A virtual device (run --target): QEMU (about 40 MB resident) beside the Python bridge that
# runs it and the Python receiver; how many a core keeps at real time is the target's
# (vmcu.targets.Target.fleet_per_core, measured).
EMULATED_QEMU_BYTES = 48 * 2**20


@dataclass(frozen=True)
class FleetLimit:
    """The largest fleet this machine allows, and the limit that sets it."""

    devices: int
    reason: str  # e.g. "file descriptors: hard limit 1024 (ulimit -Hn)"


def _mem_available_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _int_file(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def fleet_limit(
    native: bool = False,
    emulated: tuple[str, int] | None = None,
    fleet_agent: bool = False,
    connections: int = 2,
) -> FleetLimit:
    """The smallest of the per-device limits: file descriptors (the broker's two connections
    per device, under the hard limit: a fleet raises the soft one), loopback ephemeral ports,
    processes and threads, and available memory for the agents (``native``: the C agent;
    ``emulated``: virtual devices of a target, (its name, how many a core keeps at real
    time): QEMU beside each device's agents, on this process's cores; ``fleet_agent``: the
    fleet agent, one process per core, so no task limit per device; ``connections``: the
    broker connections per device, 1 with the fleet agent's backend subscribers)."""
    limits: list[FleetLimit] = []
    emulated_per_core = emulated[1] if emulated else 0
    if emulated:
        cores = len(os.sched_getaffinity(0))
        limits.append(
            FleetLimit(
                cores * emulated_per_core,
                f"emulation: {emulated_per_core} virtual {emulated[0]} devices per core keep "
                f"real time ({cores} cores; measured at 10 Hz with TLS 1.2 and 1 KiB, "
                "docs/device-client.md)",
            )
        )
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    per = "two per device" if connections == 2 else "one per device"
    backend = "" if connections == 1 or not fleet_agent else "; or --receivers backend: one"
    if hard != resource.RLIM_INFINITY:
        limits.append(
            FleetLimit(
                (hard - FDS_RESERVED) // connections,
                f"file descriptors: the broker needs {per}, hard limit {hard} "
                "(raise it where the run starts: ulimit -Hn with CAP_SYS_RESOURCE, "
                "/etc/security/limits.conf, or the container's nofile limit"
                f"{backend})",
            )
        )
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        limits.append(
            FleetLimit(
                (high - low + 1 - PORTS_RESERVED) // connections,
                f"ports: {'two loopback connections' if connections == 2 else 'one'} "
                f"per device, ephemeral range {low}-{high} "
                "(net.ipv4.ip_local_port_range)",
            )
        )
    except (OSError, ValueError):
        pass
    candidates = (
        _int_file("/proc/sys/kernel/pid_max"),
        _int_file("/proc/sys/kernel/threads-max"),
        resource.getrlimit(resource.RLIMIT_NPROC)[0],
    )
    tasks = [n for n in candidates if n is not None and n != resource.RLIM_INFINITY and n > 0]
    if tasks and not fleet_agent:
        running = len([name for name in os.listdir("/proc") if name.isdigit()])
        limits.append(
            FleetLimit(
                max(0, (min(tasks) - running * 2) // TASKS_PER_DEVICE),
                f"processes: two agents with their threads per device, task limit {min(tasks)} "
                "(ulimit -u, kernel.pid_max, kernel.threads-max)",
            )
        )
    available = _mem_available_bytes()
    if available is not None:
        per_device = (
            FLEET_DEVICE_BYTES if fleet_agent else 2 * AGENT_BYTES["native" if native else "python"]
        )
        per_device += EMULATED_QEMU_BYTES if emulated_per_core else 0
        agents = (
            "QEMU, its Python bridge and receiver"
            if emulated
            else "the fleet agent's emitter and receiver"
            if fleet_agent
            else f"{'native' if native else 'Python'} emitter and receiver"
        )
        limits.append(
            FleetLimit(
                int(available * MEMORY_SHARE) // per_device,
                f"memory: {available / 2**30:.1f} GiB available, about "
                f"{per_device / 2**20:.2f} MiB per device ({agents}; free memory or run "
                "fewer devices)",
            )
        )
    if not limits:
        return FleetLimit(10_000, "no limit found")
    return min(limits, key=lambda limit: limit.devices)


def raise_fd_limit(devices: int, connections: int = 2) -> None:
    """Lift the soft file-descriptor limit (inherited by the broker and the fleet agents) to
    what ``devices`` need, within the hard limit (raising that needs CAP_SYS_RESOURCE, which
    even root may not have in a container: fleet_limit refuses beyond it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = connections * devices + FDS_RESERVED
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
