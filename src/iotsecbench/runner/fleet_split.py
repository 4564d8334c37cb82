"""A fleet split over Dask workers (``run --executor dask --split-fleet``): each run is
executed here — broker, its 10 Hz CPU and memory samples, storage — while its fleet agent
processes run on the cluster's workers, one share of the devices per worker
(docs/scale.md, "A fleet over Dask workers").

Each worker gets its share as data: its devices' AgentConfig documents and the TLS client
files they name, rewritten to paths in a scratch directory of its own. It builds the fleet
agent from its own installation, starts it, reports READY through an event on the scheduler and
waits for the GO event, so every share starts its emitters together; when the agent has
exited it sends back every device's record files, which land in the run directory as a
local fleet's do. Which worker drove which device is stored (``fleet_devices.worker``).

The broker is the run's embedded broker, listening where the workers reach it: this machine's
loopback, so the workers must run here (a LocalCluster, or ``dask worker`` processes started
on this machine); with ``--broker URL`` they may be anywhere that reaches it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from iotsecbench.agents.native import fleet
from iotsecbench.agents.records import read_records
from iotsecbench.files import write_secret
from iotsecbench.lab.broker import MosquittoBroker
from iotsecbench.lab.processes import Supervised, describe_exit
from iotsecbench.measure.clock import now_ns
from iotsecbench.runner.collect import first_error
from iotsecbench.runner.fleet_agent import FLEET_FILE, READY_TIMEOUT_S
from iotsecbench.runner.outcome import ProgressCallback
from iotsecbench.runner.supervision import RunFailure, said_ready
from iotsecbench.spec.models import ExperimentSpec

_TLS_FILES = ("ca_file", "client_cert", "client_key")
GO_DELAY_NS = 20_000_000  # every share hears GO before its own t0


class FleetSplit:
    """The cluster a run's fleet processes go to: opened at the first fleet, kept for the
    experiment, closed with ``close`` (or at exit). ``connect`` makes a client as a context
    manager (``runner.cluster.DaskSweep.client``: the same cluster set-up as block sweeps)."""

    def __init__(self, connect: Callable[[], contextlib.AbstractContextManager[Any]]) -> None:
        self._connect = connect
        self._stack = contextlib.ExitStack()
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            self._client = self._stack.enter_context(self._connect())
        return self._client

    def close(self) -> None:
        self._stack.close()
        self._client = None


def run_fleet_split(
    split: FleetSplit,
    spec: ExperimentSpec,
    run_dir: Path,
    broker: MosquittoBroker | None,
    devices: Sequence[Any],
    agent_config: Callable[[str, Any], Path],
    build: str,
    on_progress: ProgressCallback,
) -> None:
    """``runner.fleet_agent.run_fleet``, with each share on a worker of ``split``'s cluster."""
    from distributed import Event

    client = split.client()
    workers = sorted(client.scheduler_info()["workers"])
    count = min(len(workers), len(devices))
    ramp_s = (len(devices) - 1) / spec.connect_ramp_hz if spec.connect_ramp_hz else 0.0
    budget_s = spec.duration_s + 3 * spec.connect_timeout_s + spec.drain_s + 30 + ramp_s
    ready_s = READY_TIMEOUT_S + 0.05 * len(devices) / count
    name = uuid.uuid4().hex[:12]
    go = Event(f"fleet-go-{name}")
    ready = [Event(f"fleet-ready-{name}-{index}") for index in range(count)]
    futures = []
    for index in range(count):
        share = devices[index::count]
        configs = {
            device.index: {
                role: json.loads(agent_config(role, device).read_text())
                for role in ("emitter", "receiver")
            }
            for device in share
        }
        files = {
            Path(path).name: Path(path).read_bytes()
            for roles in configs.values()
            for config in roles.values()
            for key in _TLS_FILES
            if (path := (config.get("tls") or {}).get(key))
        }
        job = {
            "build": build,
            "index": index,
            "ramp_hz": spec.connect_ramp_hz,
            "storm_at_s": spec.storm_at_s,
            "configs": configs,
            "files": files,
            "ready": ready[index].name,
            "go": go.name,
            "ready_s": ready_s,
            "budget_s": budget_s,
        }
        futures.append(
            client.submit(drive_share, job, workers=[workers[index]], pure=False, retries=0)
        )
    started = time.monotonic()
    ready_deadline = started + ready_s
    while not all(event.is_set() for event in ready):  # each share's receivers subscribed
        _check(futures)
        if time.monotonic() > ready_deadline:
            raise RunFailure("the fleet's workers were not ready in time (watchdog)")
        time.sleep(0.1)
    go.set()
    while not all(future.done() for future in futures):
        _check(futures)
        elapsed = time.monotonic() - started
        if elapsed > budget_s + ready_s:
            raise RunFailure("the split fleet did not finish in time (watchdog)")
        if broker is not None and not broker.alive():
            raise RunFailure(f"broker exited ({broker.exit_description()})")
        on_progress(min(0.99, elapsed / max(spec.duration_s + ramp_s, 0.1)))
        time.sleep(0.2)
    by_index = {device.index: device for device in devices}
    problems = []
    for future in futures:
        result = future.result()
        stem = FLEET_FILE.format(index=result["index"])
        (run_dir / f"{stem}.jsonl").write_bytes(result["process"])
        (run_dir / f"{stem}.stderr").write_bytes(result["stderr"])
        shared = {"worker": result["worker"], "devices": sorted(result["devices"])}
        (run_dir / f"{stem}.json").write_text(json.dumps(shared))
        for index, files in result["devices"].items():
            for role, data in files.items():
                (by_index[index].directory / f"{role}.jsonl").write_bytes(data)
        if result["returncode"] != 0:
            problems.append(
                f"fleet process {result['index']} on {result['worker']} failed "
                f"({describe_exit(result['returncode'])}): {result['error']}"
            )
    if problems:
        raise RunFailure(problems[0])
    on_progress(1.0)


def _check(futures: list[Any]) -> None:
    for future in futures:
        if future.status == "error":
            raise RunFailure(f"a fleet worker failed: {future.exception()!r}")


def drive_share(job: dict[str, Any]) -> dict[str, Any]:
    """On a worker: run one share of a fleet (``run_fleet_split``) and send its files back."""
    from distributed import Event, get_worker

    program = fleet.binary(job["build"])
    with tempfile.TemporaryDirectory(prefix="iotsb-fleet-") as scratch_name:
        scratch = Path(scratch_name)
        for name, data in job["files"].items():
            write_secret(scratch / name, data)
        entries, outputs = [], {}
        for index, roles in job["configs"].items():
            directory = scratch / f"d{index}"
            directory.mkdir()
            for role, config in roles.items():
                config["output"] = str(directory / f"{role}.jsonl")
                for key in _TLS_FILES:
                    if (config.get("tls") or {}).get(key):
                        config["tls"][key] = str(scratch / Path(config["tls"][key]).name)
                write_secret(directory / f"{role}.config.json", json.dumps(config).encode())
                outputs[(int(index), role)] = Path(config["output"])
            entries.append(
                {
                    "index": int(index),
                    "emitter": str(directory / "emitter.config.json"),
                    "receiver": str(directory / "receiver.config.json"),
                }
            )
        process_file = scratch / "fleet.jsonl"
        config_path = scratch / "fleet.json"
        config_path.write_text(
            json.dumps(
                {
                    "output": str(process_file),
                    "ramp_hz": job["ramp_hz"],
                    "storm_at_s": job["storm_at_s"],
                    "devices": entries,
                }
            )
        )
        returncode = _drive(
            program, config_path, scratch, job, Event(job["ready"]), Event(job["go"])
        )
        devices: dict[int, dict[str, bytes]] = {}
        for (index, role), path in outputs.items():
            devices.setdefault(index, {})[role] = path.read_bytes() if path.exists() else b""
        stderr = scratch / "fleet.stderr"
        return {
            "index": job["index"],
            "worker": get_worker().address,
            "returncode": returncode,
            "error": first_error(read_records(process_file)) or "no error message",
            "process": process_file.read_bytes() if process_file.exists() else b"",
            "stderr": stderr.read_bytes() if stderr.exists() else b"",
            "devices": devices,
        }


def _drive(
    program: Path, config: Path, scratch: Path, job: dict[str, Any], ready: Any, go: Any
) -> int | None:
    """Starts the fleet agent, says READY, waits for GO, then for its end: its exit status
    (it is killed, and reaped, when this returns early)."""
    with Supervised(
        [str(program), "--config", str(config)],
        stdout=subprocess.PIPE,
        stdin=subprocess.PIPE,
        stderr_path=scratch / "fleet.stderr",
    ) as agent:
        assert agent.process is not None and agent.process.stdin is not None
        if not said_ready(agent, job["ready_s"]):
            return agent.poll() if agent.poll() is not None else -1
        ready.set()
        if not go.wait(timeout=job["ready_s"]):
            return -1
        agent.process.stdin.write(f"GO {now_ns() + GO_DELAY_NS}\n".encode())
        agent.process.stdin.flush()
        deadline = time.monotonic() + job["budget_s"]
        while agent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return agent.poll() if agent.poll() is not None else -1
