"""A fleet driven by the fleet agent (agents/native/fleet.c; which fleets: agents.native.fleet
.selects): one process per core, each holding its share of the devices in both roles.

Start-up: every device's two AgentConfig files are written as for the per-device agents (the
runner reads them again to complete the records), then one fleet config per process naming
its devices (round robin, so a ramp keeps every process busy). Each process connects and
subscribes its receivers and says READY; once all have, each gets ``GO <t0>`` on stdin, and
device i's emitter connects at t0 + i / ramp. Supervised like the per-device agents: a
process that exits non-zero fails the run naming the device its error names, one whose
record file stops growing is hung, and a run over its budget is stopped; leaving the
``with`` block kills and reaps every process.
"""

from __future__ import annotations

import contextlib
import json
import math
import secrets
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from iotsecbench.agents.native import fleet
from iotsecbench.agents.records import read_records
from iotsecbench.files import write_secret
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from iotsecbench.lab.processes import Supervised, describe_exit
from iotsecbench.measure.clock import now_ns
from iotsecbench.runner.collect import first_error
from iotsecbench.runner.outcome import ProgressCallback
from iotsecbench.runner.supervision import RunFailure, SilenceWatch, check_running, said_ready
from iotsecbench.spec.hosts import LOOPBACK
from iotsecbench.spec.matrix import Cell
from iotsecbench.spec.models import ExperimentSpec
from iotsecbench.spec.network import resolve_profile

FLEET_FILE = "fleet-{index}"  # per process, in the run directory: .json, .jsonl, .stderr
READY_TIMEOUT_PER_DEVICE_S = 0.05  # receivers set up 64 at a time per process
READY_TIMEOUT_S = 30.0
# What one backend subscriber (fleet_receivers = backend) carries: messages per second, and
# devices at most (at 1 Hz and below).
BACKEND_MESSAGES_PER_S = 500
BACKEND_DEVICES = 500


def backend_devices(rate_hz: float) -> int:
    """How many devices one backend subscriber serves: about BACKEND_MESSAGES_PER_S of their
    messages per second (500 devices at 1 Hz, 50 at 10 Hz), so that no one connection of the
    lab's back end, read by a fleet process that also drives its devices, falls behind. It
    subscribes at QoS 0 (fleet.h, BACKEND_QOS): mosquitto's per-client in-flight window and
    queue, sized for one device's receiver, would throttle it and drop the rest (measured:
    13 % of 10,000 devices' messages dropped with QoS 1 backends)."""
    return max(1, min(BACKEND_DEVICES, int(BACKEND_MESSAGES_PER_S / max(rate_hz, 1e-9))))


def drives(cell: Cell, spec: ExperimentSpec, keylog: bool) -> bool:
    """Whether the fleet agent drives the runs of ``cell`` (agents/native/fleet.py's rule);
    never a fleet of virtual devices (``target``: each emitter is a firmware under QEMU)."""
    if spec.target is not None:
        return False
    return fleet.selects(
        cell.stack,
        cell.configuration,
        cell.transport,
        loopback=resolve_profile(cell.network, spec.networks).kind == LOOPBACK,
        devices=spec.devices,
        choice=spec.fleet_agent,
        keylog=keylog,
    )


def device_workers(run_dir: Path) -> dict[int, str]:
    """Which worker's fleet process drove each device ('local': this machine), from the
    run's fleet-K.json files; empty for the per-device agents."""
    workers = {}
    for path in run_dir.glob("fleet-*.json"):
        share = json.loads(path.read_text())
        for device in share.get("devices", []):
            workers[device["index"] if isinstance(device, dict) else device] = share["worker"]
    return workers


def run_fleet(
    spec: ExperimentSpec,
    run_dir: Path,
    broker: MosquittoBroker | None,
    devices: Sequence[Any],
    agent_config: Callable[[str, Any], Path],
    program: Path,
    environment: dict[str, str] | None,
    on_progress: ProgressCallback,
    backend: BrokerUser | None = None,
) -> None:
    """Runs ``devices`` (runner.local's ``FleetDevice``s: an index each; ``agent_config``
    writes a role's AgentConfig file for one) on ``program`` against ``broker`` (None: an
    external one). With ``backend`` (fleet_receivers = backend), each process's receivers
    are served by ceil(share / backend_devices(...)) subscriber connections on that account.
    ``fleet_max_connecting`` is split evenly over the processes (at least one each)."""
    count = fleet.processes(len(devices))
    ramp_s = (len(devices) - 1) / spec.connect_ramp_hz if spec.connect_ramp_hz else 0.0
    budget_s = spec.duration_s + 3 * spec.connect_timeout_s + spec.drain_s + 30 + ramp_s
    if spec.fleet_max_connecting:  # queued set-ups: each ends within connect_timeout_s
        budget_s += len(devices) * spec.connect_timeout_s / spec.fleet_max_connecting
    configs = []
    tag = secrets.token_hex(4)  # the backend subscribers' client ids: unique on the broker
    for index in range(count):
        share = devices[index::count]
        name = FLEET_FILE.format(index=index)
        per_backend = backend_devices(max(spec.rate_hz))
        backends = math.ceil(len(share) / per_backend) if backend is not None else 0
        config = {
            "worker": "local",
            "output": str(run_dir / f"{name}.jsonl"),
            "ramp_hz": spec.connect_ramp_hz,
            "storm_at_s": spec.storm_at_s,
            "max_connecting": max(1, (spec.fleet_max_connecting or 0) // count)
            if spec.fleet_max_connecting
            else 0,
            "backends": [
                {
                    "username": backend.name,
                    "password": backend.password,
                    "client_id": f"iotsb-backend-{tag}-{index}-{number}",
                    "output": str(run_dir / f"{name}-backend-{number}.jsonl"),
                }
                for number in range(backends)
                if backend is not None
            ],
            "devices": [
                {
                    "index": device.index,
                    "emitter": str(agent_config("emitter", device)),
                    "receiver": str(agent_config("receiver", device)),
                }
                for device in share
            ],
        }
        path = run_dir / f"{FLEET_FILE.format(index=index)}.json"
        write_secret(path, json.dumps(config).encode())  # 0600: a backend's password
        configs.append(path)
    try:
        _supervise(spec, run_dir, broker, configs, program, environment, on_progress, budget_s)
    finally:  # the backend account's password leaves the files (it may be --broker's)
        for path in configs:
            config = json.loads(path.read_text())
            if config["backends"]:
                for entry in config["backends"]:
                    entry["password"] = ""
                path.unlink()
                write_secret(path, json.dumps(config).encode())


def _supervise(
    spec: ExperimentSpec,
    run_dir: Path,
    broker: MosquittoBroker | None,
    configs: list[Path],
    program: Path,
    environment: dict[str, str] | None,
    on_progress: ProgressCallback,
    budget_s: float,
) -> None:
    """Starts a fleet process per config, READY and GO, and watches them to the end."""
    ramp_s = (spec.devices - 1) / spec.connect_ramp_hz if spec.connect_ramp_hz else 0.0
    ready_s = READY_TIMEOUT_S + READY_TIMEOUT_PER_DEVICE_S * spec.devices / len(configs)
    with contextlib.ExitStack() as stack:
        agents = [
            stack.enter_context(
                Supervised(
                    [str(program), "--config", str(path)],
                    stdout=subprocess.PIPE,
                    stdin=subprocess.PIPE,
                    stderr_path=path.with_suffix(".stderr"),
                    env=environment,
                )
            )
            for path in configs
        ]
        for index, agent in enumerate(agents):
            _wait_ready(agent, index, run_dir, ready_s)
        t0_ns = now_ns() + 20_000_000  # every process hears GO before t0
        for agent in agents:
            assert agent.process is not None and agent.process.stdin is not None
            agent.process.stdin.write(f"GO {t0_ns}\n".encode())
            agent.process.stdin.flush()
        watch = SilenceWatch(
            {
                f"fleet process {index}": (run_dir / f"{FLEET_FILE.format(index=index)}.jsonl", a)
                for index, a in enumerate(agents)
            }
        )
        started = time.monotonic()
        while any(agent.poll() is None for agent in agents):
            elapsed = time.monotonic() - started
            for index, agent in enumerate(agents):
                if agent.poll() not in (None, 0):
                    raise RunFailure(_problem(agent, index, run_dir))
            if elapsed > budget_s:
                raise RunFailure(
                    f"the fleet did not finish within {budget_s:.0f} s (watchdog); processes killed"
                )
            check_running(watch, broker)
            on_progress(min(0.99, elapsed / max(spec.duration_s + ramp_s, 0.1)))
            time.sleep(0.1)
        for index, agent in enumerate(agents):
            if agent.poll() != 0:
                raise RunFailure(_problem(agent, index, run_dir))
    on_progress(1.0)


def _wait_ready(agent: Supervised, index: int, run_dir: Path, timeout_s: float) -> None:
    if not said_ready(agent, timeout_s):
        raise RunFailure(_problem(agent, index, run_dir, before_ready=True))


def _problem(agent: Supervised, index: int, run_dir: Path, before_ready: bool = False) -> str:
    """What ended fleet process ``index``: its error record (which names the device), else
    its last line on stderr."""
    name = FLEET_FILE.format(index=index)
    message = first_error(read_records(run_dir / f"{name}.jsonl"))
    if message is None:
        stderr = run_dir / f"{name}.stderr"
        lines = stderr.read_text(errors="replace").strip().splitlines() if stderr.exists() else []
        message = lines[-1] if lines else "no error message"
    when = " before its receivers were ready" if before_ready else ""
    return f"fleet process {index} failed{when} ({describe_exit(agent.poll())}): {message}"
