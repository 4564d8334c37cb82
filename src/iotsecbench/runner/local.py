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
import select
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
from iotsecbench.agents.native import translate
from iotsecbench.agents.records import read_records
from iotsecbench.errors import SpecError
from iotsecbench.files import private_directory, write_secret
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker, free_port
from iotsecbench.lab.network import NetworkLab
from iotsecbench.lab.pki import CertificateSet, create_certificates
from iotsecbench.lab.processes import Supervised, describe_exit
from iotsecbench.runner.collect import build_outcome, first_error, utc_now
from iotsecbench.runner.outcome import (
    ExperimentContext,
    ProgressCallback,
    RunInterrupted,
    RunOutcome,
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
from iotsecbench.spec.network import resolve_profile

# Fault injection for the test suite only, e.g. IOTSB_TEST_FAULT="emitter:crash-after=5@<run
# id part>" (the emitter dies after 5 messages), "emitter:hang-after=5@..." (it freezes),
# "emitter:expect-group=NAME@..." (it checks TLS against another group: AgentConfig) or
# "broker:kill-after=1.0@<run id part>".
FAULT_VARIABLE = "IOTSB_TEST_FAULT"


@dataclass(frozen=True)
class FaultPlan:
    """A fault the test suite injects into the runs whose id contains ``run_part``: read once,
    when the executor is made, instead of the environment being consulted mid-run."""

    target: str = ""  # "emitter", "receiver" or "broker"; "" = no fault
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


@dataclass(frozen=True)
class RunPlan:
    """Everything one run's agents need, decided before either starts."""

    run: PlannedRun
    context: ExperimentContext
    run_dir: Path
    topic_prefix: str  # "iotsb/" + 12 hex digits: the run's topics live under it
    target: tuple[str, int]  # the broker's host and port, as the agents reach it
    users: dict[str, BrokerUser]  # role → credentials
    tls_files: TlsClientFiles | None
    broker: MosquittoBroker | None = None  # the embedded broker (None: an external one)
    network: NetworkLab | None = None  # the emulated network (None: loopback)


PSK_FILE = "psk.key"  # in the (0700) run directory, mode 0600, removed after the run
SIGNING_FILE = "{role}.signing.json"  # a signed key exchange's pinned keys, as PSK_FILE
TCP_RECEIVER_PORT = 5001  # the tcp receiver's port in its own namespace (nothing else there)


def _prepare_keylog(path: Path) -> Path:
    """The --keylog file, created 0600 if new; refused if others can read it (it holds keys)."""
    path = Path(path).resolve()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_secret(path, b"")
    elif path.stat().st_mode & 0o077:
        raise SpecError(f"--keylog {path} is readable by other users (chmod 600 {path})")
    return path


AGENT_SILENCE_S = 10.0  # docs/reliability.md #10: this long without a record = hung


class SilenceWatch:
    """Finds an agent that is alive but silent. A working agent writes a sample record at
    10 Hz and flushes each one (agents/records.py), so its file never stops growing for
    long; one that has not grown for ``AGENT_SILENCE_S`` belongs to a hung agent."""

    def __init__(self, agents: dict[str, tuple[Path, Supervised]]) -> None:
        self._agents = agents
        self._seen = {role: (-1, time.monotonic()) for role in agents}  # size, when it changed

    def silent(self, now: float) -> str | None:
        """The running agent that has been silent too long, or None (a finished agent
        has nothing more to say)."""
        for role, (path, process) in self._agents.items():
            if process.poll() is not None:
                continue
            try:
                size = path.stat().st_size
            except OSError:
                size = -1  # not created yet: the same clock runs for a start-up hang
            last_size, since = self._seen[role]
            if size != last_size:
                self._seen[role] = (size, now)
            elif now - since > AGENT_SILENCE_S:
                return role
        return None


class RunFailure(Exception):
    """A run could not complete; the message becomes the run's ``error``."""


def _native_roles(cell: Cell) -> tuple[str, ...]:
    """The agents a native stack runs: both MQTT clients of the broker; over the tcp
    transport the emitter only — the receiver is the TLS server, a host (agents/tcp.py)."""
    return ("emitter",) if cell.transport == "tcp" else ("emitter", "receiver")


class LocalExecutor:
    """Runs each planned run against an embedded (or external) broker on this machine."""

    READY_TIMEOUT_S = 30.0

    def __init__(self, keylog: Path | None = None) -> None:
        self._certificates: dict[str, CertificateSet] = {}
        self._networks: dict[str, NetworkLab] = {}  # run id → its network, until stored
        self._keylog = _prepare_keylog(keylog) if keylog is not None else None
        self._secrets_run: str | None = None  # the run whose secret files exist
        self._faults = FaultPlan.from_environment()

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
        for stale in ("emitter.jsonl", "receiver.jsonl"):
            (run_dir / stale).unlink(missing_ok=True)
        started = utc_now()
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
            # The run's pre-shared key is not needed once its agents exited (--keylog keeps
            # the session keys for whoever wants to decrypt the capture).
            signing = (SIGNING_FILE.format(role=role) for role in ("emitter", "receiver"))
            for secret in (PSK_FILE, *signing):
                (run_dir / secret).unlink(missing_ok=True)
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
        records = {
            agent: read_records(run_dir / f"{agent}.jsonl")
            for agent in ("emitter", "receiver", "attacker")
        }
        if run.cell.stack in NATIVE_STACKS:
            for role in _native_roles(run.cell):
                config_path = run_dir / f"{role}.config.json"
                if not config_path.exists():
                    continue
                config = AgentConfig.from_file(config_path)
                program = self._native_program(run.cell)
                assert program is not None
                records[role], problem = translate.complete(
                    records[role], config, native.footprint(program)
                )
                if problem is not None and status == "ok":
                    status, error = "failed", f"{role}: {problem}"
        network = self._networks.pop(run.run_id, None)
        return build_outcome(
            run,
            context,
            records,
            status=status,
            error=error,
            started_utc=started,
            host_counters=network.counter_rows if network is not None else None,
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
        # Same length for every run ("iotsb/" + 12 hex digits): the topic travels in every
        # PUBLISH, so a name-dependent topic would bias bytes per message between
        # configurations. (Run ids could also hold '+', an MQTT wildcard.)
        prefix = f"iotsb/{os.urandom(6).hex()}"
        emitter_user = BrokerUser.random(
            "emitter",
            read=[f"{prefix}/kx/receiver", f"{prefix}/kx/ready"],
            write=[f"{prefix}/data", f"{prefix}/ctl/end", f"{prefix}/kx/emitter"],
        )
        receiver_user = BrokerUser.random(
            "receiver",
            read=[f"{prefix}/data", f"{prefix}/ctl/end", f"{prefix}/kx/emitter"],
            write=[f"{prefix}/kx/receiver", f"{prefix}/kx/ready"],
        )
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
            users = {"emitter": emitter_user, "receiver": receiver_user}
            network = self._network(run, context, run_dir)
            with network or contextlib.nullcontext():
                target = (
                    (network.address("receiver"), TCP_RECEIVER_PORT)
                    if network is not None
                    else ("127.0.0.1", free_port())
                )
                plan = RunPlan(
                    run, context, run_dir, prefix, target, users, tls_files, None, network
                )
                self._agents(plan, on_progress)
            return
        external = self._broker_target(context, run, tls)
        if external is None:
            users = {"emitter": emitter_user, "receiver": receiver_user}
            if self._faults.for_role("attacker", run.run_id) is not None:
                # Test hook: a third account that may read and write the data topic only.
                data = [f"{prefix}/data"]
                users["attacker"] = BrokerUser.random("attacker", read=data, write=data)
            network = self._network(run, context, run_dir)
            broker = MosquittoBroker.with_tls(
                run_dir / "broker",
                list(users.values()),
                tls,
                certs,
                settings=context.spec.broker,
                environment=stack_environment(run.cell.stack),
                **(network.broker_options(8883 if tls else 1883) if network else {}),
            )
            with network or contextlib.nullcontext(), broker:
                assert broker.listener is not None
                plan = RunPlan(
                    run,
                    context,
                    run_dir,
                    prefix,
                    (broker.listener.host, broker.listener.port),
                    users,
                    tls_files,
                    broker,
                    network,
                )
                self._agents(plan, on_progress)
                if not broker.alive():
                    raise RunFailure(f"broker exited ({broker.exit_description()})")
        else:
            host, port, user, password = external
            shared = BrokerUser(user, password)
            plan = RunPlan(
                run,
                context,
                run_dir,
                prefix,
                (host, port),
                {"emitter": shared, "receiver": shared},
                tls_files,
            )
            self._agents(plan, on_progress)

    def _agent_config(self, role: str, plan: RunPlan) -> Path:
        run, context, run_dir, prefix = plan.run, plan.context, plan.run_dir, plan.topic_prefix
        user, target, tls_files = plan.users[role], plan.target, plan.tls_files
        spec = context.spec
        config = AgentConfig(
            role=role,
            run_id=run.run_id,
            configuration=run.cell.configuration,
            host=target[0],
            port=target[1],
            username=user.name,
            password=user.password,
            client_id=f"iotsb-{role}-{prefix.removeprefix('iotsb/')}",
            topic_prefix=prefix,
            payload_bytes=run.cell.payload_bytes,
            rate_hz=run.cell.rate_hz,
            duration_s=spec.duration_s,
            qos=run.cell.qos,
            connect_timeout_s=spec.connect_timeout_s,
            drain_s=spec.drain_s,
            seed=spec.seed,
            tcp_nodelay=spec.broker.tcp_nodelay,
            output=str(run_dir / f"{role}.jsonl"),
            tls=tls_files,
            fault=self._faults.for_role(role, run.run_id),
            **self._secret_files(role, run, run_dir),
            keylog=str(self._keylog) if self._keylog is not None else None,
            transport=run.cell.transport,
            method=run.cell.method,
            saturating=spec.saturating,
            stack=run.cell.stack,
        )
        path = run_dir / f"{role}.config.json"
        path.unlink(missing_ok=True)
        write_secret(path, config.to_json().encode())
        return path

    def _secret_files(self, role: str, run: PlannedRun, run_dir: Path) -> dict[str, str | None]:
        """The run's secrets one agent reads (``AgentConfig.psk_file``, ``signing_file``), made
        fresh at the run's first agent config, each a 0600 file in the run directory: psk-*
        schemes share a 256-bit key; signed key exchanges get one file per role with its own
        private key and the peer's public key (security.signatures.provision)."""
        scheme = resolve_configuration(run.cell.configuration).scheme
        psk = scheme.key_establishment == "psk"
        suite = signature_suite(scheme.name)
        if self._secrets_run != run.run_id:  # the run's first agent config: new secrets
            secrets: dict[str, bytes] = {PSK_FILE: os.urandom(32)} if psk else {}
            if suite is not None:
                for other, record in provision_signing_keys(suite.name).items():
                    secrets[SIGNING_FILE.format(role=other)] = json.dumps(record).encode()
            for name, data in secrets.items():
                (run_dir / name).unlink(missing_ok=True)
                write_secret(run_dir / name, data)
            self._secrets_run = run.run_id
        return {
            "psk_file": str(run_dir / PSK_FILE) if psk else None,
            "signing_file": str(run_dir / SIGNING_FILE.format(role=role)) if suite else None,
        }

    def _agents(self, plan: RunPlan, on_progress: ProgressCallback) -> None:
        spec, run_dir, broker, network = plan.context.spec, plan.run_dir, plan.broker, plan.network
        configs = {role: self._agent_config(role, plan) for role in plan.users}

        program = self._native_program(plan.run.cell)

        def argv(role: str) -> list[str]:
            # The attacker (a test hook) sits on the emitter's host of an emulated network.
            host = "emitter" if role == "attacker" else role
            inside = network.command(host, []) if network is not None else []
            if program is not None and role in _native_roles(plan.run.cell):
                return [*inside, str(program), "--config", str(configs[role])]
            return [
                *inside,
                sys.executable,
                "-m",
                # agents/tcp.py serves both roles of the tcp transport.
                f"iotsecbench.agents.{'tcp' if plan.run.cell.transport == 'tcp' else role}",
                "--config",
                str(configs[role]),
            ]

        environment = stack_environment(plan.run.cell.stack)
        with Supervised(
            argv("receiver"),
            stdout=subprocess.PIPE,
            stderr_path=run_dir / "receiver.stderr",
            env=environment,
        ) as receiver:
            self._wait_ready(receiver, run_dir)
            budget_s = spec.duration_s + 3 * spec.connect_timeout_s + spec.drain_s + 30
            attacker = (
                Supervised(
                    argv("attacker"), stderr_path=run_dir / "attacker.stderr", env=environment
                )
                if "attacker" in configs
                else contextlib.nullcontext()
            )
            with (
                attacker,
                Supervised(
                    argv("emitter"), stderr_path=run_dir / "emitter.stderr", env=environment
                ) as emitter,
            ):
                started = time.monotonic()
                watch = SilenceWatch(
                    {
                        "emitter": (run_dir / "emitter.jsonl", emitter),
                        "receiver": (run_dir / "receiver.jsonl", receiver),
                    }
                )
                kill_broker_after_s = self._faults.broker_kill_after_s(plan.run.run_id)
                while emitter.poll() is None:
                    elapsed = time.monotonic() - started
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
                    hung = watch.silent(time.monotonic())
                    if hung is not None:
                        raise RunFailure(
                            f"{hung} wrote nothing for {AGENT_SILENCE_S:.0f} s "
                            "(watchdog: alive but hung); processes killed"
                        )
                    if broker is not None and not broker.alive():
                        raise RunFailure(f"broker exited ({broker.exit_description()})")
                    # The receiver may finish first (end message seen, all delivered) while
                    # the emitter is still tearing down: only a failing receiver is an error.
                    if receiver.poll() not in (None, 0):
                        raise RunFailure(self._agent_problem("receiver", receiver, run_dir))
                    on_progress(min(0.99, elapsed / max(spec.duration_s, 0.1)))
                    time.sleep(0.1)
                if emitter.poll() != 0:
                    raise RunFailure(self._agent_problem("emitter", emitter, run_dir))
            if receiver.wait(spec.drain_s + spec.connect_timeout_s + 5) is None:
                raise RunFailure("receiver did not finish after the end message (watchdog)")
            if receiver.poll() != 0:
                raise RunFailure(self._agent_problem("receiver", receiver, run_dir))
        on_progress(1.0)

    @staticmethod
    def _native_program(cell: Cell) -> Path | None:
        """The native agent of a run of ``cell`` (None: the Python agents), built if needed:
        the one that runs the agents, and whose footprint the run records."""
        if cell.stack not in NATIVE_STACKS:
            return None
        return native.binary(native.build_of(cell.stack, cell.configuration))

    def _wait_ready(self, receiver: Supervised, run_dir: Path) -> None:
        assert receiver.process is not None and receiver.process.stdout is not None
        stream = receiver.process.stdout
        deadline = time.monotonic() + self.READY_TIMEOUT_S
        while time.monotonic() < deadline:
            readable, _, _ = select.select([stream], [], [], 0.1)
            if readable:
                line = stream.readline()
                if line.strip() == b"READY":
                    return
                if not line:
                    break
            if receiver.poll() is not None:
                break
        raise RunFailure(self._agent_problem("receiver", receiver, run_dir, before_ready=True))

    @staticmethod
    def _agent_problem(
        role: str, agent: Supervised, run_dir: Path, before_ready: bool = False
    ) -> str:
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
        return f"{role} failed{when} ({describe_exit(agent.poll())}): {message}{because}"
