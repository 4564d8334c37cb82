"""Running a whole experiment: validate everything, open the store, execute the planned runs
one by one, store each as soon as it ends.

Everything a user can get wrong is checked before the first process starts: configuration
names, the device profile, the broker URL, mosquitto being installed.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
import signal
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from iotsecbench.agents import native
from iotsecbench.agents.native import fleet
from iotsecbench.energy.profile import load_profile
from iotsecbench.errors import EnvironmentProblem, Interrupted, SpecError
from iotsecbench.files import without_credentials, write_atomic
from iotsecbench.lab.broker import mosquitto_binary, mosquitto_version
from iotsecbench.lab.limits import fleet_limit
from iotsecbench.lab.network import remove_recorded_namespaces
from iotsecbench.lab.processes import recording_pids, stop_leftovers
from iotsecbench.runner.fleet_agent import drives
from iotsecbench.runner.interrupts import SignalGuard
from iotsecbench.runner.outcome import (
    BlockRunner,
    Executor,
    ExperimentContext,
    RunInterrupted,
    RunOutcome,
)
from iotsecbench.runner.rows import experiment_row
from iotsecbench.security import pq_openssl, resolve_configuration
from iotsecbench.security.tls.stacks import (
    NATIVE_STACKS,
    OPENSSL_PQ,
    POST_QUANTUM_STACKS,
    stack_problem,
)
from iotsecbench.spec.load import SPEC_FILENAME
from iotsecbench.spec.matrix import PlannedRun, expand, plan_runs
from iotsecbench.spec.models import ExperimentSpec
from iotsecbench.store.directory import DirectoryLock, prepare_results_dir
from iotsecbench.store.duckdb_store import ResultsStore, database_path
from iotsecbench.store.rebuild import restore_completed

PID_DIRNAME = ".processes"  # PID files of the running broker, agents and helpers


class RunObserver:
    """Receives progress; the default ignores it. A failing observer never stops a run."""

    def experiment_started(
        self, runs: list[PlannedRun], skipped: int, spec: ExperimentSpec
    ) -> None:
        """Called once, with the runs still to execute."""

    def run_started(self, run: PlannedRun) -> None:
        """Called before each run."""

    def run_progress(self, run: PlannedRun, fraction: float) -> None:
        """Called repeatedly while a run executes."""

    def run_finished(self, run: PlannedRun, outcome: RunOutcome) -> None:
        """Called after each run has been stored."""

    def experiment_finished(self) -> None:
        """Called once at the end (also after an interruption)."""


def _safely(call: Callable[[], None]) -> None:
    """Call an observer hook; a failing display must not kill the measurement
    (docs/style.md #11)."""
    with contextlib.suppress(Exception):
        call()


@dataclass
class ExperimentOutcome:
    """What happened: where the results are, and each executed run's outcome."""

    results_dir: Path
    experiment_id: str
    outcomes: list[RunOutcome] = field(default_factory=list)
    skipped: int = 0
    leftovers_stopped: list[str] = field(default_factory=list)  # a killed runner's processes

    @property
    def failed(self) -> list[RunOutcome]:
        return [o for o in self.outcomes if not o.ok]


def with_post_quantum_stack(spec: ExperimentSpec) -> tuple[ExperimentSpec, str | None]:
    """``spec`` with every configuration on stack openssl-3.5 when it leaves ``stack`` at its
    default and a configuration needs post-quantum TLS (Debian's OpenSSL 3.0 has none): one
    library for all, so the comparison is the algorithms', not the libraries'. The note says
    so (None: ``spec`` unchanged)."""
    if "stack" in spec.model_fields_set:
        return spec, None
    for name in spec.configurations:
        profile = resolve_configuration(name).tls_profile_with(spec.tls.model_dump())
        if profile is not None and profile.needs_pq_library:
            note = (
                f"stack {OPENSSL_PQ} for every configuration: {name} needs post-quantum TLS, "
                f"which Debian's OpenSSL 3.0 lacks (--stack openssl,{OPENSSL_PQ} compares the "
                "two libraries on the classical configurations)"
            )
            return spec.model_copy(update={"stack": [OPENSSL_PQ]}), note
    return spec, None


def canonical_configurations(spec: ExperimentSpec) -> ExperimentSpec:
    """``spec`` with every configuration name — listed, or in an include/exclude rule — in its
    canonical form (``security.resolve_configuration``: a TLS profile's parts in one order,
    ``plain+<scheme>`` as ``<scheme>``), so a configuration spelled two ways is one
    configuration in stored results and ``report A B`` lines them up; the names as written
    are kept in ``configuration_labels``. SpecError when two listed names are one
    configuration."""
    renamed = {
        name: resolve_configuration(name).name
        for name in [
            *spec.configurations,
            *(r.configuration for r in (*spec.include, *spec.exclude) if r.configuration),
        ]
    }
    seen: dict[str, str] = {}
    for name in spec.configurations:
        first = seen.setdefault(renamed[name], name)
        if first != name:
            raise SpecError(
                f"configurations {first!r} and {name!r} are one configuration "
                f"({renamed[name]!r}): list it once"
            )
    labels = {renamed[name]: name for name in spec.configurations if renamed[name] != name}

    def rules(filters: list) -> list:
        return [
            r.model_copy(update={"configuration": renamed[r.configuration]})
            if r.configuration
            else r
            for r in filters
        ]

    return spec.model_copy(
        update={
            "configurations": [renamed[name] for name in spec.configurations],
            "include": rules(spec.include),
            "exclude": rules(spec.exclude),
            "configuration_labels": {**spec.configuration_labels, **labels},
        }
    )


def validate(
    spec: ExperimentSpec,
    broker_url: str | None,
    *,
    key_log: bool = False,
    capture: bool = False,
    broker_ca_file: Path | None = None,
) -> None:
    """Every check that needs no process: raises ``SpecError`` naming the fix (``key_log``:
    the runs log their secrets, ``--keylog``; ``capture``: ``--capture``, which logs them too,
    into each run's capture)."""
    if capture and broker_url is not None:
        raise SpecError(
            "--capture records the embedded broker's link (docs/capture.md); drop --broker"
        )
    transports = {resolve_configuration(name).transport for name in spec.configurations}
    # impossible TLS combinations (docs/reliability.md #4), over the cells the experiment
    # has: a combination its `exclude` drops is not refused
    checked: set[tuple[str, str, str, int]] = set()
    for cell in expand(spec):
        key = (cell.configuration, cell.stack, cell.transport, cell.qos)
        if key in checked:
            continue
        checked.add(key)
        name, stack = cell.configuration, cell.stack
        configuration = resolve_configuration(name)
        profile = configuration.tls_profile_with(spec.tls.model_dump())
        # With --target the emitter is the firmware (runner.device_emitter refuses what its
        # scheme.c lacks) and the receiver the Python agent: no native agent's limit applies.
        why = stack_problem(
            stack,
            profile,
            scheme=configuration.scheme.name if spec.target is None else "none",
            transport=cell.transport,
            qos=cell.qos,
            key_log=key_log or capture,
        )
        if why is not None:
            raise SpecError(f"{name} on stack {stack}: {why}")
        if stack in NATIVE_STACKS and spec.target is None:
            missing = native.problem(native.build_of(stack, name))
            if missing is not None:
                raise EnvironmentProblem(missing)
        if stack in POST_QUANTUM_STACKS:  # the broker runs on OpenSSL 3.5
            pq_openssl.require()  # exit 3, naming the build command, before anything starts
    load_profile(spec.device)
    if spec.devices > 1:
        # Checked on this machine, which runs the fleets (with --executor dask: each worker's
        # machine should match it).
        emulated = None
        if spec.target is not None:  # each device a QEMU, its bridge and a receiver
            from iotsecbench.vmcu.targets import TARGETS

            emulated = (spec.target, TARGETS[spec.target].fleet_per_core)
        driven = [drives(cell, spec, key_log or capture) for cell in expand(spec)]
        agent_only = [
            name
            for name, used in (
                ("storm_at_s", spec.storm_at_s is not None),
                ("fleet_receivers backend", spec.fleet_receivers == "backend"),
                ("fleet_max_connecting", spec.fleet_max_connecting is not None),
            )
            if used
        ]
        if agent_only and not all(driven):
            raise SpecError(
                f"{agent_only[0]} needs the fleet agent for every cell: transport mqtt on "
                f"loopback, no payload scheme, stack {' or '.join(fleet.FLEET_STACKS)}, "
                "no --keylog"
            )
        limit = fleet_limit(
            native=emulated is None and all(stack in NATIVE_STACKS for stack in spec.stack),
            emulated=emulated,
            fleet_agent=all(driven),
            connections=1 if spec.fleet_receivers == "backend" else 2,
        )
        if spec.devices > limit.devices:
            raise SpecError(
                f"devices {spec.devices}: this machine allows {limit.devices} at most, "
                f"limited by {limit.reason}"
            )
    check_broker(broker_url, broker_ca_file, transports)


def check_broker(
    broker_url: str | None, broker_ca_file: Path | None, transports: set[str] | None = None
) -> None:
    """``--broker`` and ``--broker-ca``, refused in one line before anything starts; the URL
    is named without its password."""
    if broker_url is None:
        if broker_ca_file is not None:
            raise SpecError("--broker-ca is the CA of an external mqtts:// broker: give --broker")
        return
    shown = without_credentials(broker_url)
    url = urlparse(broker_url)
    try:
        port = url.port
    except ValueError:
        port = -1
    if url.scheme not in ("mqtt", "mqtts") or not url.hostname or port == -1:
        raise SpecError(
            f"--broker {shown!r}: use mqtt://[user:password@]host:port or mqtts://… "
            "(a port from 1 to 65535)"
        )
    if port == 0:
        raise SpecError(f"--broker {shown!r}: port 0 is no broker's port (1 to 65535)")
    if url.scheme == "mqtts" and broker_ca_file is None:
        raise SpecError(
            f"--broker {shown!r}: an mqtts:// broker needs --broker-ca, the CA that signed its "
            "certificate"
        )
    if broker_ca_file is not None:
        if url.scheme != "mqtts":
            raise SpecError("--broker-ca applies to an mqtts:// broker (TLS)")
        if not broker_ca_file.is_file():
            what = "is not a regular file" if broker_ca_file.exists() else "does not exist"
            raise SpecError(f"--broker-ca {broker_ca_file} {what}; give the CA certificate (PEM)")
        try:
            ssl.create_default_context(cafile=str(broker_ca_file))
        except (ssl.SSLError, ValueError, UnicodeDecodeError):
            raise SpecError(
                f"--broker-ca {broker_ca_file} holds no PEM certificate; give the broker's CA"
            ) from None
        except OSError as error:
            raise SpecError(
                f"--broker-ca {broker_ca_file}: cannot read it ({error.strerror})"
            ) from None
    wanted = "plain" if url.scheme == "mqtt" else "tls"
    wrong = [t for t in transports or () if (t == "plain") != (wanted == "plain")]
    if wrong:
        raise SpecError(
            f"--broker {url.scheme}:// cannot carry the {', '.join(sorted(wrong))} transport; "
            "choose configurations that match the broker URL"
        )


# An experiment's files in its results directory: what --force-new-run moves aside (the
# database with its WAL and any copies set aside, the records, the statistics, the reports
# and exports made from them), never the directory's lock or another experiment's folder.
EXPERIMENT_ENTRIES = (
    "results.duckdb*",
    "experiment.json",
    SPEC_FILENAME,
    "runs",
    "pki",
    "analysis*.json",
    "report",
    "report-*",
    "compared-with-*",
    "parquet",
)


def _set_aside_previous(results_dir: Path) -> Path | None:
    """``--force-new-run``: move an earlier experiment's files into ``previous-<time>/``."""
    present = sorted({path for pattern in EXPERIMENT_ENTRIES for path in results_dir.glob(pattern)})
    if not present:
        return None
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    aside = results_dir / f"previous-{stamp}"
    aside.mkdir()
    for path in present:
        shutil.move(str(path), aside / path.name)
    return aside


def run_experiment(
    spec: ExperimentSpec,
    results_dir: Path,
    executor: Executor | BlockRunner,
    *,
    resume: bool = False,
    force_new: bool = False,
    broker_url: str | None = None,
    broker_ca_file: Path | None = None,
    observer: RunObserver | None = None,
    broker_version: str | None = None,
    key_log: bool = False,
    capture: bool = False,
    checked: Callable[[], None] | None = None,
) -> ExperimentOutcome:
    """Plan, execute and store every run of ``spec`` into ``results_dir`` (``key_log``: the
    executor writes ``--keylog``, which some stacks cannot; ``capture``: it takes
    ``--capture``s, which log secrets too, on the embedded broker only). ``executor`` runs
    one run at a time here, or (a ``BlockRunner``) streams runs measured elsewhere back for
    storing. ``checked`` is called once the experiment passed every check, before anything
    is made: what the caller prepares for after the runs then costs a refusal nothing."""
    observer = observer or RunObserver()
    validate(spec, broker_url, key_log=key_log, capture=capture, broker_ca_file=broker_ca_file)
    planned = plan_runs(spec)
    if checked is not None:
        checked()
    if broker_version is None:
        broker_version = "external" if broker_url else mosquitto_version(mosquitto_binary())
    results_dir = prepare_results_dir(results_dir)
    _moment("directory-made")
    experiment_id = f"{spec.name}-{spec.config_hash()}"
    # Signals wait while files move and while the store writes (SignalGuard): a run whose
    # record.json exists is then always in the database too, and a new database always has
    # its tables. The lock makes this process the directory's only writer.
    pid_directory = results_dir / PID_DIRNAME
    with SignalGuard() as guard, DirectoryLock(results_dir):
        _moment("locked")
        # Holding the lock, no live runner owns these: a killed runner's children.
        leftovers = stop_leftovers(pid_directory) + remove_recorded_namespaces(pid_directory)
        if force_new:
            _set_aside_previous(results_dir)
        spec_text = spec.model_dump_json(indent=2).encode()
        if not database_path(results_dir).exists():
            # A new experiment: its spec is stored before its database exists, so no moment
            # of a kill leaves a database that `--resume` cannot continue without a guess.
            write_atomic(results_dir / SPEC_FILENAME, spec_text)
            _moment("spec-stored")
        with ResultsStore.open(results_dir) as store, recording_pids(pid_directory):
            _moment("database-made")
            # The store may continue an earlier experiment of the same configuration hash
            # under its stored id: use the id it returns.
            experiment_id = store.ensure_experiment(
                experiment_row(
                    experiment_id=experiment_id,
                    name=spec.name,
                    spec_json=spec.model_dump_json(),
                    config_hash=spec.config_hash(),
                    seed=spec.seed,
                    broker_version=broker_version,
                ),
                resume=resume,
            )
            _moment("experiment-stored")
            context = ExperimentContext(
                spec=spec,
                results_dir=results_dir,
                experiment_id=experiment_id,
                device=load_profile(spec.device),
                broker_version=broker_version,
                broker_url=broker_url,
                broker_ca_file=broker_ca_file,
            )
            result = ExperimentOutcome(results_dir, experiment_id, leftovers_stopped=leftovers)
            write_atomic(results_dir / SPEC_FILENAME, spec_text)  # resumed: more repetitions
            if resume:
                # A run killed between its record and its transaction comes back from its
                # record instead of being measured again.
                restore_completed(store, experiment_id)
            done = store.completed_run_ids(experiment_id) if resume else set()
            todo = [run for run in planned if run.run_id not in done]
            result.skipped = len(planned) - len(todo)
            _moment("runs-planned")
            _safely(lambda: observer.experiment_started(todo, result.skipped, spec))
            try:
                if hasattr(executor, "stream"):
                    _stream_and_store(todo, context, executor, store, guard, observer, result)
                else:
                    for run in todo:
                        _execute_and_store(run, context, executor, store, guard, observer, result)
            finally:
                _safely(observer.experiment_finished)
    return result


# Test hook (tests/integration/test_startup_kills.py): a runner SIGKILLs itself at one of
# these moments of its start-up, as an OOM killer or a power cut could stop it, so that
# `--resume` is tried on every state a start-up can leave.
KILL_AT_VARIABLE = "IOTSB_TEST_KILL_AT"
STARTUP_MOMENTS = (
    "directory-made",
    "locked",
    "spec-stored",
    "database-made",
    "experiment-stored",
    "runs-planned",
)


def _moment(name: str) -> None:
    if os.environ.get(KILL_AT_VARIABLE) == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _resume_hint(result: ExperimentOutcome) -> str:
    return (
        f"{len(result.outcomes)} runs completed and stored in {result.results_dir} (continue "
        f"with `iotsecbench run --resume --out {result.results_dir}`)"
    )


def _keep(
    run: PlannedRun,
    outcome: RunOutcome,
    context: ExperimentContext,
    store: ResultsStore,
    result: ExperimentOutcome,
) -> None:
    """Store one run (its record file, then its transaction) and count it as executed."""
    store.write_run(outcome.run_row, outcome.tables, context.run_dir(run))
    result.outcomes.append(outcome)


def _stream_and_store(
    runs: list[PlannedRun],
    context: ExperimentContext,
    runner: BlockRunner,
    store: ResultsStore,
    guard: SignalGuard,
    observer: RunObserver,
    result: ExperimentOutcome,
) -> None:
    """Runs measured elsewhere: waited for with signals live, each stored with signals held
    back as soon as it arrives."""
    stream = runner.stream(runs, context)
    while True:
        try:
            with guard.interruptible():
                arrived = next(stream, None)
        except KeyboardInterrupt:
            stream.close()  # stops the cluster it started; the workers' runs die with it
            raise Interrupted(f"interrupted; {_resume_hint(result)}") from None
        if arrived is None:
            return
        run, outcome = arrived
        _safely(lambda: observer.run_started(run))  # noqa: B023 (called at once)
        _keep(run, outcome, context, store, result)
        _safely(lambda: observer.run_finished(run, outcome))  # noqa: B023


def _execute_and_store(
    run: PlannedRun,
    context: ExperimentContext,
    executor: Executor,
    store: ResultsStore,
    guard: SignalGuard,
    observer: RunObserver,
    result: ExperimentOutcome,
) -> None:
    """One run: measured with signals live, stored with signals held back."""
    resume_hint = _resume_hint(result)
    _safely(lambda: observer.run_started(run))
    try:
        with guard.interruptible():
            outcome = executor.execute(
                run,
                context,
                lambda fraction: _safely(lambda: observer.run_progress(run, fraction)),
            )
    except RunInterrupted as interrupted:
        _keep(run, interrupted.outcome, context, store, result)
        raise Interrupted(f"interrupted during run {run.run_id}; {resume_hint}") from None
    except KeyboardInterrupt:
        # Noted while the previous run was being stored, or before the executor caught it.
        raise Interrupted(f"interrupted before run {run.run_id}; {resume_hint}") from None
    _keep(run, outcome, context, store, result)
    _safely(lambda: observer.run_finished(run, outcome))
