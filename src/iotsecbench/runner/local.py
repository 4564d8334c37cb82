"""The local executor: a real mosquitto, real TLS, and the two agents as separate processes.

Per run: broker up (fresh credentials, ACL, TLS listener from the configuration) → receiver
(waits until it has subscribed and published its key-exchange hello) → emitter → both exit →
broker down. Every process is supervised: on error, timeout or Ctrl-C all are killed and
reaped, and whatever the agents wrote stays in the run directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from iotsecbench.agents import native
from iotsecbench.agents.config import AgentConfig, TlsClientFiles
from iotsecbench.agents.native import fleet, translate
from iotsecbench.agents.records import read_records
from iotsecbench.errors import SpecError
from iotsecbench.files import check_output_file, private_directory, write_secret
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker, free_port
from iotsecbench.lab.limits import raise_fd_limit
from iotsecbench.lab.network import NetworkLab
from iotsecbench.lab.pki import CertificateSet, create_certificates
from iotsecbench.lab.processes import Supervised, describe_exit
from iotsecbench.runner.broker_watch import BrokerWatch
from iotsecbench.runner.capture import RunCaptures
from iotsecbench.runner.collect import build_outcome, first_error
from iotsecbench.runner.fleet_agent import device_workers, drives, run_fleet
from iotsecbench.runner.fleet_split import FleetSplit, run_fleet_split
from iotsecbench.runner.outcome import (
    ExperimentContext,
    ProgressCallback,
    RunInterrupted,
    RunOutcome,
)
from iotsecbench.runner.rows import utc_now
from iotsecbench.runner.supervision import (
    AGENT_SILENCE_S,
    RunFailure,
    SilenceWatch,
    check_running,
    said_ready,
)
from iotsecbench.security import resolve_configuration
from iotsecbench.security.key_establishment import provision_signing_keys, signature_suite
from iotsecbench.security.tls import TlsProfile
from iotsecbench.security.tls.stacks import (
    NATIVE_STACKS,
    group_ids,
    stack_environment,
    suite_ids,
)
from iotsecbench.spec.hosts import LOOPBACK
from iotsecbench.spec.matrix import Cell, PlannedRun
from iotsecbench.spec.models import ExperimentSpec
from iotsecbench.spec.network import resolve_profile

# Fault injection for the test suite only, e.g. IOTSB_TEST_FAULT="emitter:crash-after=5@<run
# id part>" (the emitter dies after 5 messages), "emitter:hang-after=5@..." (it freezes),
# "emitter:expect-group=NAME@..." (it checks TLS against another group: AgentConfig),
# "emitter:drop-end@..." (its end message never reaches the receiver) or
# "broker:kill-after=1.0@<run id part>".
FAULT_VARIABLE = "IOTSB_TEST_FAULT"


@dataclass(frozen=True)
class FaultPlan:
    """A fault the test suite injects into the runs whose id contains ``run_part``: read once,
    when the executor is made, instead of the environment being consulted mid-run."""

    target: str = ""  # "emitter", "receiver", "broker" or "worker" (runner/cluster.py); "" = none
    action: str = ""  # e.g. "crash-after=5" (an agent's), "kill-after=1.0" (the broker's)
    run_part: str = ""

    @classmethod
    def from_environment(cls) -> FaultPlan:
        target, _, rest = os.environ.get(FAULT_VARIABLE, "").partition(":")
        action, _, run_part = rest.partition("@")
        return cls(target, action, run_part) if run_part else cls()

    def for_role(self, role: str, run_id: str) -> str | None:
        """The fault ``role`` injects in ``run_id`` (an agent's ``fault`` option), or None."""
        hit = self.target == role and self.run_part and self.run_part in run_id
        return self.action if hit else None

    def broker_kill_after_s(self, run_id: str) -> float | None:
        """Seconds into the run after which the broker is killed (``kill-after=S``), or None."""
        action = self.for_role("broker", run_id)
        return float(action.split("=")[1]) if action else None


@dataclass(frozen=True, eq=False)  # by identity: a key of the run's process maps
class FleetDevice:
    """One emitting device of a run and its receiver: their topics, accounts and files."""

    index: int
    directory: Path  # the run directory; devices/dNNN/ inside it for a fleet's devices
    topic_prefix: str  # "iotsb/" + 12 hex digits: the device's topics live under it
    users: dict[str, BrokerUser]  # role → credentials
    in_fleet: bool = False

    def label(self, role: str) -> str:
        """How errors name the device's agent: 'emitter', or 'device 7 emitter' in a fleet."""
        return f"device {self.index} {role}" if self.in_fleet else role


@dataclass(frozen=True)
class RunPlan:
    """Everything one run's agents need, decided before any starts."""

    run: PlannedRun
    context: ExperimentContext
    run_dir: Path
    devices: tuple[FleetDevice, ...]
    target: tuple[str, int]  # the broker's host and port, as the agents reach it
    tls_files: TlsClientFiles | None
    broker: MosquittoBroker | None = None  # the embedded broker (None: an external one)
    network: NetworkLab | None = None  # the emulated network (None: loopback)
    # The fleet's backend subscribers' account (fleet_receivers = backend), else None.
    backend: BrokerUser | None = None


# Extra start-up time per other device of a fleet: two Python agents take about 0.4 s of CPU
# to start, and a fleet starts them all on the same cores (benchmarks/bench_fleet.py).
FLEET_START_S = 0.2
DEVICES_DIRNAME = "devices"  # a fleet's run directory holds one dNNN/ directory per device
PSK_FILE = "psk.key"  # in the (0700) run directory, mode 0600, removed after the run
SIGNING_FILE = "{role}.signing.json"  # a signed key exchange's pinned keys, as PSK_FILE
TCP_RECEIVER_PORT = 5001  # the tcp receiver's port in its own namespace (nothing else there)


def _check_keylog(path: Path) -> Path:
    """The --keylog file, checked before anything starts: a regular file only its owner may
    read, or a new one in an existing directory (made 0600 when the first run starts; the
    directory is never made: a typo in it would go unnoticed). It holds session keys."""
    path = check_output_file(Path(path), "--keylog").resolve()
    if path.exists() and path.stat().st_mode & 0o077:
        raise SpecError(f"--keylog {path} is readable by other users (chmod 600 {path})")
    return path


def _forget_password(directory: Path) -> None:
    """An external broker's password, given in --broker, leaves the agents' configs when
    they have exited: a run's files never keep a user's credential (the embedded broker's
    accounts are made per run and die with it)."""
    for role in ("emitter", "receiver"):
        path = directory / f"{role}.config.json"
        if path.exists():
            config = AgentConfig.from_file(path)
            path.unlink()
            write_secret(path, dataclasses.replace(config, password="").to_json().encode())


def _device_directories(run_dir: Path) -> list[Path]:
    """Where a run's agents wrote: the run directory, or each fleet device's, in order."""
    devices = sorted((run_dir / DEVICES_DIRNAME).glob("d*"))
    return devices or [run_dir]


def _native_roles(cell: Cell) -> tuple[str, ...]:
    """The agents a native stack runs: both MQTT clients of the broker; over the tcp
    transport the emitter only — the receiver is the TLS server, a host (agents/tcp.py)."""
    return ("emitter",) if cell.transport == "tcp" else ("emitter", "receiver")


class LocalExecutor:
    """Runs each planned run against an embedded (or external) broker on this machine."""

    READY_TIMEOUT_S = 30.0

    def __init__(
        self,
        keylog: Path | None = None,
        capture: bool = False,
        fleet_split: FleetSplit | None = None,
    ) -> None:
        self._certificates: dict[str, CertificateSet] = {}
        self._networks: dict[str, NetworkLab] = {}  # run id → its network, until stored
        self._keylog = _check_keylog(keylog) if keylog is not None else None
        # --capture: each run's traffic and secrets in its pcapng (runner/capture.py)
        self._captures = RunCaptures(self._keylog) if capture else None
        self._faults = FaultPlan.from_environment()
        self._broker_result: dict | None = None  # the current run's BrokerWatch.result()
        self._fleet_split = fleet_split  # --split-fleet: fleet processes on Dask workers
        # The agents log TLS secrets (--keylog, or --capture's key log): the fleet agent
        # cannot, so the per-device agents drive such fleets.
        self._logs_secrets = self._keylog is not None or self._captures is not None

    def certificates(
        self, context: ExperimentContext, key_type: str, chain_length: int = 1
    ) -> CertificateSet:
        key = f"{key_type}/{chain_length}"
        if key not in self._certificates:
            self._certificates[key] = create_certificates(
                context.results_dir / "pki", key_type, chain_length
            )
        return self._certificates[key]

    # -- one run ---------------------------------------------------------------------------
    def execute(
        self, run: PlannedRun, context: ExperimentContext, on_progress: ProgressCallback
    ) -> RunOutcome:
        run_dir = private_directory(context.run_dir(run))
        if self._keylog is not None and not self._keylog.exists():
            write_secret(self._keylog, b"")  # 0600 before any agent appends to it
        for stale in ("emitter.jsonl", "receiver.jsonl"):
            (run_dir / stale).unlink(missing_ok=True)
        shutil.rmtree(run_dir / DEVICES_DIRNAME, ignore_errors=True)
        for stale in run_dir.glob("fleet-*"):  # a fleet agent's files (runner/fleet_agent.py)
            stale.unlink()
        if self._captures is not None:
            self._captures.prepare(run_dir)
        started = utc_now()
        self._broker_result = None
        if self._fleet_split is not None:  # the cluster up before the broker's CPU is watched
            self._fleet_split.client()
        try:
            self._run_processes(run, context, run_dir, on_progress)
        except RunFailure as failure:
            return self._outcome(run, context, run_dir, "failed", str(failure), started)
        except KeyboardInterrupt:
            # The processes are already stopped (the with-blocks); keep what they measured.
            outcome = self._outcome(
                run, context, run_dir, "interrupted", "interrupted by the user", started
            )
            raise RunInterrupted(outcome) from None
        finally:
            # The run's pre-shared keys are not needed once its agents exited (--keylog keeps
            # the session keys for whoever wants to decrypt the capture).
            for directory in _device_directories(run_dir):
                signing = (SIGNING_FILE.format(role=role) for role in ("emitter", "receiver"))
                for secret in (PSK_FILE, *signing):
                    (directory / secret).unlink(missing_ok=True)
                if context.broker_url is not None:
                    _forget_password(directory)
        return self._outcome(run, context, run_dir, "ok", None, started)

    def _outcome(
        self,
        run: PlannedRun,
        context: ExperimentContext,
        run_dir: Path,
        status: str,
        error: str | None,
        started: str,
    ) -> RunOutcome:
        devices = []
        # Once per run, not per device: finding the program hashes the agent's sources.
        program = self._native_program(run.cell, context.spec.target)
        driven = self._fleet_program(run.cell, context.spec, self._logs_secrets) is not None
        # the fleet agent's program is no device's footprint
        footprint = native.footprint(program) if program is not None and not driven else None
        for directory in _device_directories(run_dir):
            records = {
                agent: read_records(directory / f"{agent}.jsonl")
                for agent in ("emitter", "receiver", "attacker")
            }
            if program is not None or driven:  # the fleet agent's footprint is no device's
                for role in _native_roles(run.cell):
                    config_path = directory / f"{role}.config.json"
                    if not config_path.exists():
                        continue
                    config = AgentConfig.from_file(config_path)
                    records[role], problem = translate.complete(records[role], config, footprint)
                    if problem is not None and status == "ok":
                        status, error = "failed", f"{role}: {problem}"
            devices.append(records)
        network = self._networks.pop(run.run_id, None)
        details = None
        if self._captures is not None:
            details = {"capture": self._captures.finish(run.run_id, run_dir, context.results_dir)}
        return build_outcome(
            run,
            context,
            devices,
            status=status,
            error=error,
            started_utc=started,
            details=details,
            host_counters=network.counter_rows if network is not None else None,
            broker=self._broker_result,
            workers=device_workers(run_dir),
        )

    def _network(
        self, run: PlannedRun, context: ExperimentContext, run_dir: Path
    ) -> NetworkLab | None:
        """The run's emulated network, or None on loopback (docs/network.md)."""
        profile = resolve_profile(run.cell.network, context.spec.networks)
        if profile.kind == LOOPBACK:
            return None
        # The wire's loss pattern: reproducible per run, different between runs.
        seed = zlib.crc32(f"{context.spec.seed}/{run.run_id}".encode())
        network = NetworkLab(profile, run.run_id, run_dir, seed=seed)
        self._networks[run.run_id] = network
        return network

    def _broker_target(
        self, context: ExperimentContext, run: PlannedRun, tls: TlsProfile | None
    ) -> tuple[str, int, str, str] | None:
        if context.broker_url is None:
            return None
        url = urlparse(context.broker_url)
        return (
            url.hostname or "127.0.0.1",
            url.port or (8883 if tls else 1883),
            url.username or "",
            url.password or "",
        )

    @staticmethod
    def _devices(run_dir: Path, count: int) -> tuple[FleetDevice, ...]:
        """The run's devices, each with its own topics and broker accounts. Every topic prefix
        has the same length ("iotsb/" + 12 hex digits): the topic travels in every PUBLISH,
        so a name-dependent topic would bias bytes per message between configurations. (Run
        ids could also hold '+', an MQTT wildcard.)"""
        devices = []
        for index in range(count):
            prefix = f"iotsb/{os.urandom(6).hex()}"
            users = {
                "emitter": BrokerUser.random(
                    "emitter",
                    read=[f"{prefix}/kx/receiver", f"{prefix}/kx/ready"],
                    write=[f"{prefix}/data", f"{prefix}/ctl/end", f"{prefix}/kx/emitter"],
                ),
                "receiver": BrokerUser.random(
                    "receiver",
                    read=[f"{prefix}/data", f"{prefix}/ctl/end", f"{prefix}/kx/emitter"],
                    write=[f"{prefix}/kx/receiver", f"{prefix}/kx/ready"],
                ),
            }
            directory = (
                run_dir
                if count == 1
                else private_directory(
                    run_dir / DEVICES_DIRNAME / f"d{index:0{len(str(count - 1))}d}"
                )
            )
            devices.append(FleetDevice(index, directory, prefix, users, in_fleet=count > 1))
        return tuple(devices)

    def _run_processes(
        self,
        run: PlannedRun,
        context: ExperimentContext,
        run_dir: Path,
        on_progress: ProgressCallback,
    ) -> None:
        tls = resolve_configuration(run.cell.configuration).tls_profile_with(
            context.spec.tls.model_dump()
        )
        devices = self._devices(run_dir, context.spec.devices)
        tls_files = None
        certs = None
        tcp = run.cell.transport == "tcp"
        if tls is not None:
            if context.broker_url is not None and not tcp:
                if context.broker_ca_file is None:
                    raise SpecError("a TLS configuration on an external broker needs --broker-ca")
                tls_files = TlsClientFiles(dataclasses.asdict(tls), str(context.broker_ca_file))
            else:
                certs = self.certificates(context, tls.certificate, tls.chain_length)
                tls_files = TlsClientFiles(
                    dataclasses.asdict(tls),
                    str(certs.ca_file),
                    str(certs.client_cert),
                    str(certs.client_key),
                    str(certs.server_cert) if tcp else None,
                    str(certs.server_key) if tcp else None,
                    tuple(suite_ids(tls)),
                    tuple(group_ids(tls)),
                )
        if tcp:
            # No broker: the receiver listens (on loopback, or on its own host of the
            # emulated network, whose switch lets the emitter reach it), the emitter connects.
            network = self._network(run, context, run_dir)
            with network or contextlib.nullcontext():
                target = (
                    (network.address("receiver"), TCP_RECEIVER_PORT)
                    if network is not None
                    else ("127.0.0.1", free_port())
                )
                plan = RunPlan(run, context, run_dir, devices, target, tls_files, None, network)
                self._agents(plan, on_progress)
            return
        external = self._broker_target(context, run, tls)
        backend = context.spec.fleet_receivers == "backend"
        if external is None:
            # With backend subscribers no receiver connects: one account reads every topic.
            users = [
                user
                for device in devices
                for role, user in device.users.items()
                if not (backend and role == "receiver")
            ]
            backend_user = (
                BrokerUser.random("backend", read=["iotsb/+/data", "iotsb/+/ctl/end"], write=[])
                if backend
                else None
            )
            users += [backend_user] if backend_user is not None else []
            if self._faults.for_role("attacker", run.run_id) is not None:
                # Test hook: a third account that may read and write the data topic only.
                data = [f"{devices[0].topic_prefix}/data"]
                attacker = BrokerUser.random("attacker", read=data, write=data)
                devices[0].users["attacker"] = attacker
                users.append(attacker)
            network = self._network(run, context, run_dir)
            if len(devices) > 1:
                # The broker inherits it: two sockets per device, one with backend subscribers.
                raise_fd_limit(len(devices), 1 if backend else 2)
            broker = MosquittoBroker.with_tls(
                run_dir / "broker",
                users,
                tls,
                certs,
                settings=context.spec.broker,
                environment=stack_environment(run.cell.stack),
                # A fleet's $SYS counters, read on the broker host's loopback.
                monitor=(
                    BrokerUser.random("monitor", read=["$SYS/#"], write=[])
                    if len(devices) > 1
                    else None
                ),
                **(network.broker_options(8883 if tls else 1883) if network else {}),
            )
            with network or contextlib.nullcontext(), broker:
                assert broker.listener is not None
                plan = RunPlan(
                    run,
                    context,
                    run_dir,
                    devices,
                    (broker.listener.host, broker.listener.port),
                    tls_files,
                    broker,
                    network,
                    backend_user,
                )
                watch = BrokerWatch(broker)
                try:
                    with watch:
                        self._agents(plan, on_progress)
                finally:  # a failed run keeps what the broker cost until it failed
                    self._broker_result = watch.result()
                if not broker.alive():
                    raise RunFailure(f"broker exited ({broker.exit_description()})")
        else:
            host, port, user, password = external
            shared = BrokerUser(user, password)
            for device in devices:
                device.users.update(emitter=shared, receiver=shared)
            plan = RunPlan(
                run,
                context,
                run_dir,
                devices,
                (host, port),
                tls_files,
                backend=shared if backend else None,
            )
            self._agents(plan, on_progress)

    def _agent_config(self, role: str, plan: RunPlan, device: FleetDevice) -> Path:
        run, context, directory = plan.run, plan.context, device.directory
        user, target, tls_files = device.users[role], plan.target, plan.tls_files
        spec = context.spec
        config = AgentConfig(
            role=role,
            run_id=run.run_id,
            configuration=run.cell.configuration,
            host=target[0],
            port=target[1],
            username=user.name,
            password=user.password,
            client_id=f"iotsb-{role}-{device.topic_prefix.removeprefix('iotsb/')}",
            topic_prefix=device.topic_prefix,
            payload_bytes=run.cell.payload_bytes,
            rate_hz=run.cell.rate_hz,
            duration_s=spec.duration_s,
            qos=run.cell.qos,
            connect_timeout_s=spec.connect_timeout_s,
            drain_s=spec.drain_s,
            seed=spec.seed + device.index,  # each device its own payload filler
            tcp_nodelay=spec.broker.tcp_nodelay,
            output=str(directory / f"{role}.jsonl"),
            tls=tls_files,
            fault=self._faults.for_role(role, run.run_id) if device.index == 0 else None,
            **self._secret_paths(role, run, directory),
            keylog=self._agent_key_log(plan.run_dir),
            transport=run.cell.transport,
            method=run.cell.method,
            saturating=spec.saturating,
            stack=run.cell.stack,
        )
        path = directory / f"{role}.config.json"
        path.unlink(missing_ok=True)
        write_secret(path, config.to_json().encode())
        return path

    def _agent_key_log(self, run_dir: Path) -> str | None:
        """Where the agents log their secrets: the run's own key log with --capture (it goes
        into the capture, and into --keylog afterwards), else --keylog's file, else nowhere."""
        if self._captures is not None:
            return str(self._captures.key_log(run_dir))
        return str(self._keylog) if self._keylog is not None else None

    @staticmethod
    def _write_secrets(run: PlannedRun, directory: Path) -> None:
        """A device's secrets, made fresh for each run, each a 0600 file in its directory:
        psk-* schemes share a 256-bit key between the device and its receiver; signed key
        exchanges get one file per role with its own private key and the peer's public key
        (security.signatures.provision)."""
        scheme = resolve_configuration(run.cell.configuration).scheme
        suite = signature_suite(scheme.name)
        secrets: dict[str, bytes] = (
            {PSK_FILE: os.urandom(32)} if scheme.key_establishment == "psk" else {}
        )
        if suite is not None:
            for other, record in provision_signing_keys(suite.name).items():
                secrets[SIGNING_FILE.format(role=other)] = json.dumps(record).encode()
        for name, data in secrets.items():
            (directory / name).unlink(missing_ok=True)
            write_secret(directory / name, data)

    @staticmethod
    def _secret_paths(role: str, run: PlannedRun, directory: Path) -> dict[str, str | None]:
        """Where one agent reads its secrets (``AgentConfig.psk_file``, ``signing_file``)."""
        scheme = resolve_configuration(run.cell.configuration).scheme
        psk = scheme.key_establishment == "psk"
        signed = signature_suite(scheme.name) is not None
        return {
            "psk_file": str(directory / PSK_FILE) if psk else None,
            "signing_file": str(directory / SIGNING_FILE.format(role=role)) if signed else None,
        }

    def _agents(self, plan: RunPlan, on_progress: ProgressCallback) -> None:
        """Every device's receiver (each ready: subscribed, hello published), then the
        emitters, ``connect_ramp_hz`` per second or all at once; supervised until every
        emitter has finished and every receiver has seen its end."""
        spec, broker, network = plan.context.spec, plan.broker, plan.network
        environment = stack_environment(plan.run.cell.stack)
        fleet_program = self._fleet_program(plan.run.cell, spec, self._logs_secrets)
        if fleet_program is not None and self._fleet_split is not None:
            run_fleet_split(
                self._fleet_split,
                spec,
                plan.run_dir,
                broker,
                plan.devices,
                lambda role, device: self._agent_config(role, plan, device),
                fleet.build_of(plan.run.cell.stack, plan.run.cell.configuration),
                on_progress,
            )
            return
        if fleet_program is not None:
            run_fleet(
                spec,
                plan.run_dir,
                broker,
                plan.devices,
                lambda role, device: self._agent_config(role, plan, device),
                fleet_program,
                environment,
                on_progress,
                plan.backend,
            )
            return
        device_target = spec.target
        program = self._native_program(plan.run.cell, device_target)

        def argv(role: str, config: Path) -> list[str]:
            # The attacker (a test hook) sits on the emitter's host of an emulated network.
            host = "emitter" if role == "attacker" else role
            inside = network.command(host, []) if network is not None else []
            if program is not None and role in _native_roles(plan.run.cell):
                return [*inside, str(program), "--config", str(config)]
            if device_target is not None and role == "emitter":
                # The device's firmware under QEMU, bridged to the broker (docs/device-client.md)
                module = "iotsecbench.runner.device_emitter"
                target = ["--target", device_target]
                return [*inside, sys.executable, "-m", module, "--config", str(config), *target]
            # agents/tcp.py serves both roles of the tcp transport.
            module = "tcp" if plan.run.cell.transport == "tcp" else role
            return [
                *inside,
                sys.executable,
                "-m",
                f"iotsecbench.agents.{module}",
                "--config",
                str(config),
            ]

        def start(role: str, device: FleetDevice, **options: object) -> Supervised:
            config = self._agent_config(role, plan, device)
            stderr = device.directory / f"{role}.stderr"
            return stack.enter_context(
                Supervised(argv(role, config), stderr_path=stderr, env=environment, **options)
            )

        ramp_s = (len(plan.devices) - 1) / spec.connect_ramp_hz if spec.connect_ramp_hz else 0.0
        # A fleet's agents start on a machine their predecessors already keep busy.
        crowd_s = FLEET_START_S * (len(plan.devices) - 1)
        budget_s = (
            spec.duration_s + 3 * spec.connect_timeout_s + spec.drain_s + 30 + ramp_s + crowd_s
        )
        with contextlib.ExitStack() as stack:
            if self._captures is not None:  # recording before the first agent connects
                tls, mqtt = plan.tls_files is not None, plan.run.cell.transport == "mqtt"
                site = RunCaptures.site(plan.target[1], tls, mqtt, plan.network)
                stack.enter_context(self._captures.recording(plan.run_dir, site))
            receivers: dict[FleetDevice, Supervised] = {}
            for device in plan.devices:
                self._write_secrets(plan.run, device.directory)
                receivers[device] = start("receiver", device, stdout=subprocess.PIPE)
            for device, receiver in receivers.items():
                self._wait_ready(receiver, device)
            if "attacker" in plan.devices[0].users:
                start("attacker", plan.devices[0])
            watched = {
                device.label("receiver"): (device.directory / "receiver.jsonl", receiver)
                for device, receiver in receivers.items()
            }
            emitters: dict[FleetDevice, Supervised] = {}
            pending = list(plan.devices)
            started = time.monotonic()
            watch = SilenceWatch(watched, startup_s=AGENT_SILENCE_S + crowd_s)
            kill_broker_after_s = self._faults.broker_kill_after_s(plan.run.run_id)
            while pending or any(e.poll() is None for e in emitters.values()):
                elapsed = time.monotonic() - started
                while pending and (
                    not spec.connect_ramp_hz or elapsed >= len(emitters) / spec.connect_ramp_hz
                ):
                    device = pending.pop(0)
                    emitters[device] = start("emitter", device)
                    watch.add(
                        device.label("emitter"),
                        device.directory / "emitter.jsonl",
                        emitters[device],
                    )
                if (
                    kill_broker_after_s is not None
                    and broker is not None
                    and broker.alive()
                    and elapsed > kill_broker_after_s
                ):
                    os.kill(broker.pid, signal.SIGKILL)  # test hook: "kill-after=SECONDS"
                if elapsed > budget_s:
                    raise RunFailure(
                        f"emitter did not finish within {budget_s:.0f} s "
                        "(watchdog); processes killed"
                    )
                check_running(watch, broker)
                for device, emitter in emitters.items():
                    # An emitter that failed ends the run at once, as a receiver that failed:
                    # a receiver may finish first (end seen, all delivered) without error.
                    if emitter.poll() not in (None, 0):
                        raise RunFailure(self._agent_problem("emitter", emitter, device))
                for device, receiver in receivers.items():
                    if receiver.poll() not in (None, 0):
                        raise RunFailure(self._agent_problem("receiver", receiver, device))
                on_progress(min(0.99, elapsed / max(spec.duration_s + ramp_s, 0.1)))
                time.sleep(0.1)
            for device, emitter in emitters.items():
                if emitter.poll() != 0:
                    raise RunFailure(self._agent_problem("emitter", emitter, device))
            # The Python MQTT receiver waits for the emitter's end message, which a broker
            # drops with data when its queue for the receiver overflows (a saturating emitter
            # at QoS 1 outruns it): told that every emitter has ended, it drains and finishes,
            # and what never came is counted lost (agents/receiver.py, emitters_ended).
            told = plan.run.cell.transport == "mqtt" and not (
                program is not None and "receiver" in _native_roles(plan.run.cell)
            )
            for device, receiver in receivers.items():
                if told and receiver.wait(spec.drain_s + 1) is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(receiver.pid, signal.SIGUSR1)
                if receiver.wait(spec.drain_s + spec.connect_timeout_s + 5) is None:
                    raise RunFailure(
                        f"{device.label('receiver')} did not finish after the end message "
                        "(watchdog)"
                    )
                if receiver.poll() != 0:
                    raise RunFailure(self._agent_problem("receiver", receiver, device))
        on_progress(1.0)

    @staticmethod
    def _fleet_program(cell: Cell, spec: ExperimentSpec, keylog: bool) -> Path | None:
        """The fleet agent that drives a run of ``cell`` (agents/native/fleet.py's rule), or
        None: the per-device agents do."""
        if not drives(cell, spec, keylog):
            return None
        return fleet.binary(fleet.build_of(cell.stack, cell.configuration))

    @staticmethod
    def _native_program(cell: Cell, device_target: str | None = None) -> Path | None:
        """The native agent of a run of ``cell`` (None: the Python agents), built if needed:
        the one that runs the agents, and whose footprint the run records. With a device
        emitter (``device_target``) the stack is the firmware's and the receiver is Python."""
        if cell.stack not in NATIVE_STACKS or device_target is not None:
            return None
        return native.binary(native.build_of(cell.stack, cell.configuration))

    def _wait_ready(self, receiver: Supervised, device: FleetDevice) -> None:
        if not said_ready(receiver, self.READY_TIMEOUT_S):
            raise RunFailure(self._agent_problem("receiver", receiver, device, before_ready=True))

    @staticmethod
    def _agent_problem(
        role: str, agent: Supervised, device: FleetDevice, before_ready: bool = False
    ) -> str:
        run_dir = device.directory
        message = first_error(read_records(run_dir / f"{role}.jsonl"))
        if message is None:
            stderr = run_dir / f"{role}.stderr"
            lines = (
                stderr.read_text(errors="replace").strip().splitlines() if stderr.exists() else []
            )
            message = lines[-1] if lines else "no error message"
        when = " before it was ready" if before_ready else ""
        refused = [
            record.get("detail", {}).get("error", "")
            for record in read_records(run_dir / "receiver.jsonl")
            if record.get("type") == "event" and record.get("kind") == "kx_rejected"
        ]
        because = f" (the receiver refused the key exchange: {refused[0]})" if refused else ""
        return (
            f"{device.label(role)} failed{when} ({describe_exit(agent.poll())}): {message}{because}"
        )
