"""Sweeps on a Dask cluster (``run --executor dask``): the experiment's runs go to workers in
*blocks*, every configuration of one repetition in its recorded interleaved order, so that
one machine measures every configuration of a block and a faster machine cannot pass for a
faster configuration (docs/scale.md).

Each finished run comes back at once, through a queue on the scheduler, with its run
directory's files; the caller stores it in the one results store, in its own transaction,
as the local executor's runs are. A worker that dies fails the rest of its block: those runs
are stored as failed and ``run --resume`` measures them again. Blocks are not retried on
another worker: a half-measured block on two machines would mix their speeds.

On one machine parallel runs disturb each other's timing, so a LocalCluster has one worker
by default and runs in sequence; more workers (``--dask-workers``) are recorded with every
run (``runs.parallel_runs``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import itertools
import json
import os
import pickle
import re
import shutil
import socket
import tempfile
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from iotsecbench.errors import EnvironmentProblem, SpecError
from iotsecbench.files import private_directory
from iotsecbench.lab.network import remove_recorded_namespaces
from iotsecbench.lab.processes import recording_pids, stop_leftovers
from iotsecbench.measure.host import host_facts
from iotsecbench.runner.collect import build_outcome
from iotsecbench.runner.outcome import ExperimentContext, RunOutcome
from iotsecbench.runner.rows import utc_now
from iotsecbench.spec.matrix import PlannedRun

INSTALL_HINT = "pip install 'iotsecbench[cluster]' (dask.distributed), or scripts/setup.sh --dev"
QUEUE_POLL_S = 0.5
# Test hook (tests/integration/test_scale.py), read by runner.local.FaultPlan:
# IOTSB_TEST_FAULT="worker:die-after@<run id part>" makes the worker process exit right after
# it has sent that run back.
DIE_AFTER = "die-after"


def dask_problem() -> str | None:
    """Why ``--executor dask`` cannot work here (None: it can)."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return f"--executor dask needs dask.distributed: {INSTALL_HINT}"
    return None


def _worker_facts() -> dict[str, Any]:
    """On a worker: what runs need there (doctor --scheduler)."""
    from iotsecbench import __version__

    return {"iotsecbench": __version__, "mosquitto": shutil.which("mosquitto")}


START_HINT = "start one with `dask scheduler` and its workers with `dask worker ADDRESS`"
# Dask's Client retries a refused address until its timeout; a plain TCP connect first
# answers a mistyped or stopped scheduler at once.
PROBE_TIMEOUT_S = 3


def scheduler_address(scheduler: str) -> tuple[str, int]:
    """(host, port) of a ``tcp://HOST:PORT`` or ``tls://HOST:PORT`` scheduler address;
    SpecError for anything else."""
    parts = urlsplit(scheduler)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("tcp", "tls") or not parts.hostname or port is None:
        raise SpecError(f"--scheduler {scheduler!r}: use tcp://HOST:PORT")
    return parts.hostname, port


def connect(scheduler: str) -> Any:
    """A ``distributed.Client`` of the scheduler at ``scheduler``; EnvironmentProblem, in one
    line and within seconds, when nothing answers there."""
    from distributed import Client

    host, port = scheduler_address(scheduler)
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S).close()
        return Client(scheduler, timeout="10s")
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise EnvironmentProblem(
            f"no Dask scheduler at {scheduler} ({reason}); {START_HINT}"
        ) from None


def _workers(client: Any, where: str) -> dict[str, Any]:
    """The cluster's workers (``scheduler_info()['workers']``, keyed by address);
    EnvironmentProblem when it has none."""
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        raise EnvironmentProblem(
            f"the Dask scheduler at {where} has no workers: start them with "
            "`dask worker ADDRESS --nworkers 1 --nthreads 1`"
        )
    return workers


def check_workers(scheduler: str) -> list[tuple[str, bool, str]]:
    """Each worker of ``scheduler``: (address, ready, what was found): iotsecbench installed at
    this version, and mosquitto on its PATH."""
    from iotsecbench import __version__

    with connect(scheduler) as client:
        _workers(client, scheduler)
        try:
            found = client.run(_worker_facts, on_error="return")
        except Exception as error:  # a worker without iotsecbench cannot unpickle the call
            return [(scheduler, False, f"the workers cannot run iotsecbench ({error})")]
    checks = []
    for address, facts in sorted(found.items()):
        if isinstance(facts, Exception):
            checks.append((address, False, f"iotsecbench is not installed there ({facts})"))
            continue
        problems = []
        if facts["iotsecbench"] != __version__:
            problems.append(f"iotsecbench {facts['iotsecbench']}, here {__version__}")
        if not facts["mosquitto"]:
            problems.append("no mosquitto on its PATH")
        detail = "; ".join(problems) or f"iotsecbench {__version__}, {facts['mosquitto']}"
        checks.append((address, not problems, detail))
    return checks


def blocks(runs: list[PlannedRun]) -> list[list[PlannedRun]]:
    """The runs grouped into blocks: one per repetition, each in its run order (plan_runs'
    seeded permutation), the blocks in the order of their first run."""
    grouped: dict[int, list[PlannedRun]] = {}
    for run in sorted(runs, key=lambda r: r.run_order):
        grouped.setdefault(run.repetition, []).append(run)
    return list(grouped.values())


@dataclass(frozen=True)
class ClusterOptions:
    """Where the blocks run: an existing scheduler, or a LocalCluster of ``workers`` worker
    processes (one thread each) on this machine."""

    scheduler: str | None = None  # tcp://HOST:PORT
    workers: int = 1
    simulate: bool = False  # the workers fabricate runs (runner/simulated.py): tests only

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise SpecError(f"--dask-workers {self.workers}: give 1 or more")
        if self.scheduler is not None:
            scheduler_address(self.scheduler)

    @property
    def note(self) -> str:
        """One line for the user: where the runs go and how isolated they are."""
        if self.scheduler is not None:
            return f"blocks of runs go to the workers of {self.scheduler}, one block per worker"
        if self.workers == 1:
            return (
                "a local Dask cluster with one worker: runs in sequence, as the local executor "
                "(parallel runs on one machine disturb each other's timing)"
            )
        return (
            f"a local Dask cluster with {self.workers} workers: {self.workers} runs at a time on "
            "this machine disturb each other's timing (recorded as runs.parallel_runs)"
        )


class DaskSweep:
    """Runs blocks on a Dask cluster and yields each run's outcome as it comes back."""

    def __init__(self, options: ClusterOptions) -> None:
        problem = dask_problem()
        if problem is not None:
            raise EnvironmentProblem(problem)
        self.options = options

    @contextlib.contextmanager
    def client(self) -> Iterator[Any]:
        """A client of the cluster (a LocalCluster is started and stopped with it)."""
        import dask
        from distributed import Client, LocalCluster

        if self.options.scheduler is not None:
            with connect(self.options.scheduler) as client:
                yield client
            return
        # A dead worker fails its block instead of the scheduler retrying it elsewhere.
        with (
            dask.config.set({"distributed.scheduler.allowed-failures": 0}),
            LocalCluster(
                n_workers=self.options.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=40,
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client

    def stream(
        self, runs: list[PlannedRun], context: ExperimentContext
    ) -> Iterator[tuple[PlannedRun, RunOutcome]]:
        """Each run's outcome, in the order they finish; the run's files are already in its
        run directory under ``context.results_dir``."""
        from distributed import Queue

        if not runs:
            return
        with self.client() as client:
            where = self.options.scheduler or "the local cluster"
            parallel = runs_at_once_per_host(_workers(client, where))
            queue = Queue(f"iotsb-{uuid.uuid4().hex}", client=client)
            by_id = {run.run_id: run for run in runs}
            pending: dict[Any, list[PlannedRun]] = {}
            for block in blocks(runs):
                future = client.submit(
                    run_block,
                    block,
                    context,
                    queue.name,
                    parallel,
                    self.options.simulate,
                    pure=False,
                    key=f"iotsb-block-{block[0].repetition}-{uuid.uuid4().hex[:8]}",
                )
                pending[future] = block
            returned: set[str] = set()

            def arrivals(everything: bool = False) -> Iterator[tuple[PlannedRun, RunOutcome]]:
                for item in _drain(queue, everything):
                    run, outcome = _unpack(item, by_id, context)
                    returned.add(run.run_id)
                    yield run, outcome

            while pending:
                yield from arrivals()
                for future in [f for f in pending if f.done()]:
                    block = pending.pop(future)
                    yield from arrivals(everything=True)  # its last runs, if any
                    if future.status == "finished":
                        continue
                    why = _block_failure(future)
                    for run in block:
                        if run.run_id not in returned:
                            yield run, _failed_outcome(run, context, why)


def runs_at_once_per_host(workers: dict[str, Any]) -> dict[str, int]:
    """How many runs each machine of the cluster can execute at the same time: the threads
    of all its workers (``scheduler_info()['workers']``, keyed by worker address)."""
    per_host: dict[str, int] = {}
    for address, info in workers.items():
        host = _host(address)
        per_host[host] = per_host.get(host, 0) + int(info.get("nthreads", 1))
    return per_host


def _host(address: str) -> str:
    """'tcp://10.0.0.5:40123' → '10.0.0.5'."""
    return address.split("://", 1)[-1].rsplit(":", 1)[0]


def _drain(queue: Any, everything: bool = False) -> list[Any]:
    """What the queue holds now (waiting up to QUEUE_POLL_S for the first item, unless
    ``everything``: then only what is there)."""
    if everything:
        size = queue.qsize()
        return list(queue.get(batch=size)) if size else []
    try:
        return [queue.get(timeout=QUEUE_POLL_S)]
    except TimeoutError:
        return []


def _block_failure(future: Any) -> str:
    try:
        error = future.exception(timeout=5)
    except Exception as unknown:  # the scheduler lost it: still a failed block
        error = unknown
    name = type(error).__name__
    if name == "KilledWorker":
        return "its Dask worker died during the block; `run --resume` measures it again"
    return f"its block failed on the Dask worker ({name}: {error}); `run --resume` retries it"


def _failed_outcome(run: PlannedRun, context: ExperimentContext, why: str) -> RunOutcome:
    private_directory(context.run_dir(run))
    outcome = build_outcome(run, context, [{}], status="failed", error=why, started_utc=utc_now())
    outcome.run_row["worker"] = None  # it ran nowhere to the end
    return outcome


def _unpack(
    item: bytes, by_id: dict[str, PlannedRun], context: ExperimentContext
) -> tuple[PlannedRun, RunOutcome]:
    """A run sent back by a worker: its files written into this run directory."""
    run_id, row, tables, files = pickle.loads(zlib.decompress(item))
    run = by_id[run_id]
    run_dir = private_directory(context.run_dir(run))
    for name, data in files.items():
        path = run_dir / name
        if run_dir.resolve() not in path.resolve().parents:
            continue  # never outside the run directory, whatever a worker sends
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return run, RunOutcome(row, tables)


def _pack(run_id: str, outcome: RunOutcome, run_dir: Path, worker: dict[str, Any]) -> bytes:
    files = {
        path.relative_to(run_dir).as_posix(): path.read_bytes()
        for path in sorted(run_dir.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }
    row = {**outcome.run_row, **worker}
    return zlib.compress(pickle.dumps((run_id, row, outcome.tables, files)), 3)


def run_block(
    block: list[PlannedRun],
    context: ExperimentContext,
    queue_name: str,
    parallel_by_host: dict[str, int],
    simulate: bool,
) -> int:
    """On a worker: every run of ``block`` in order, each sent back as soon as it ends.
    Runs measure in this worker's scratch directory, removed as they are sent."""
    from distributed import Queue, get_worker

    from iotsecbench.runner.local import FaultPlan, LocalExecutor
    from iotsecbench.runner.simulated import SimulatedExecutor

    worker = get_worker()
    # Stable per worker name: a restarted worker stops what a dead one left running. A
    # `dask worker` started without --name is named by its address (tcp://HOST:PORT).
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", str(worker.name))
    executor = SimulatedExecutor() if simulate else LocalExecutor()
    facts = {
        "worker": worker.address,
        "worker_host_json": json.dumps(host_facts()),
        "parallel_runs": parallel_by_host.get(_host(worker.address), 1),
    }
    queue = Queue(queue_name)
    faults = FaultPlan.from_environment()
    base = Path(tempfile.gettempdir()) / f"iotsb-worker-{context.experiment_id}-{name}"
    with worker_scratch(base) as scratch, recording_pids(scratch / ".processes"):
        here = dataclasses.replace(context, results_dir=scratch)
        for run in block:
            outcome = executor.execute(run, here, lambda fraction: None)
            run_dir = here.run_dir(run)
            queue.put(_pack(run.run_id, outcome, run_dir, facts))
            shutil.rmtree(run_dir, ignore_errors=True)
            if faults.for_role("worker", run.run_id) == DIE_AFTER:
                os._exit(1)  # test hook: the worker dies mid-block
    return len(block)


@contextlib.contextmanager
def worker_scratch(base: Path) -> Iterator[Path]:
    """A scratch directory for one block, owned by it while it runs, removed when it ends.

    The first free *slot* of ``base`` (``base``, then ``base-2``, ``base-3`` …): a slot is
    owned by whoever holds the ``flock`` of its ``.lock`` file, which the kernel releases when
    its owner dies. What a slot holds on entry was left by a dead worker of the same name: its
    processes and namespaces are stopped first (``stop_leftovers``: safe, as no live block owns
    the slot). Blocks run side by side in one worker (``--nthreads`` above 1) get a slot each,
    so one block's start never stops another's processes.
    """
    for slot in itertools.count(1):
        scratch = base if slot == 1 else base.with_name(f"{base.name}-{slot}")
        handle = _lock_slot(scratch)
        if handle is not None:
            break
    try:
        stop_leftovers(scratch / ".processes")
        remove_recorded_namespaces(scratch / ".processes")
        yield scratch
    finally:
        # Every run's processes have ended (each run stops its own): nothing left to stop, so
        # the keys and files of the block go with it. The lock file goes last, still held, and
        # the directory only if empty: a block that made a new lock file there meanwhile owns
        # the slot.
        for entry in scratch.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.name != ".lock":
                entry.unlink(missing_ok=True)
        (scratch / ".lock").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            scratch.rmdir()
        handle.close()


def _lock_slot(scratch: Path) -> Any:
    """The open, locked ``.lock`` of ``scratch`` (created with it), or None when a live block
    holds it. A lock won on a file another block removed meanwhile is no slot: the lock file
    must still be the one at its name."""
    while True:
        scratch.mkdir(mode=0o700, exist_ok=True)
        try:
            handle = open(scratch / ".lock", "a")  # noqa: SIM115 — held past this function
        except FileNotFoundError:
            continue  # the slot was removed between mkdir and open: make it again
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        try:
            if os.stat(scratch / ".lock").st_ino == os.fstat(handle.fileno()).st_ino:
                return handle
        except FileNotFoundError:
            pass
        handle.close()  # won the lock of a removed slot's file: try the slot afresh
