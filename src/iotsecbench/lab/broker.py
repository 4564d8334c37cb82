"""The embedded mosquitto broker: generated config, free loopback ports, auth and ACLs,
readiness check, log in the run directory, clean stop.

mosquitto cannot report an OS-chosen port, so a free port is found by binding port 0 and
releasing it; if another process takes it in between, the start is retried (mosquitto then
logs ``Address already in use``). Every run gets fresh random credentials and an ACL that
lets the emitter write and the receiver read only their run's topics (docs/reliability.md).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from iotsecbench.errors import EnvironmentProblem, MissingBinaryError, PortBusyError
from iotsecbench.files import private_directory, write_secret
from iotsecbench.lab.processes import Supervised, describe_exit

if TYPE_CHECKING:  # `doctor` imports this module for the binary checks alone: keep it light
    from iotsecbench.lab.pki import CertificateSet
    from iotsecbench.security.tls import TlsProfile
    from iotsecbench.spec.models import BrokerSettings

MOSQUITTO_HINT = (
    "install the Debian package 'mosquitto' (apt-get install mosquitto) "
    "or set IOTSB_MOSQUITTO to the binary"
)


def find_binary(name: str, env_var: str) -> str:
    """Path of a program from ``$env_var`` or ``PATH``; ``MissingBinaryError`` naming the fix."""
    override = os.environ.get(env_var)
    if override:
        if shutil.which(override):
            return shutil.which(override)  # type: ignore[return-value]
        raise MissingBinaryError(f"{env_var}={override} is not an executable program")
    found = shutil.which(name)
    if not found:
        raise MissingBinaryError(f"{name} not found on PATH: {MOSQUITTO_HINT}")
    return found


def mosquitto_binary() -> str:
    return find_binary("mosquitto", "IOTSB_MOSQUITTO")


def mosquitto_version(binary: str | None = None) -> str:
    """Version string printed by ``mosquitto -h`` (e.g. '2.0.11')."""
    completed = subprocess.run(
        [binary or mosquitto_binary(), "-h"], capture_output=True, text=True, timeout=10
    )
    match = re.search(r"mosquitto version (\S+)", completed.stdout + completed.stderr)
    return match.group(1) if match else "unknown"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class BrokerUser:
    """A per-run account: name, random password, and the topics it may read and write."""

    name: str
    password: str = field(repr=False)
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()

    @classmethod
    def random(cls, role: str, read: Sequence[str], write: Sequence[str]) -> BrokerUser:
        return cls(
            f"{role}-{secrets.token_hex(4)}", secrets.token_urlsafe(18), tuple(read), tuple(write)
        )


@dataclass(frozen=True)
class Listener:
    """What a client needs to reach the broker."""

    host: str
    port: int
    tls: bool


class MosquittoBroker:
    """A mosquitto process for one run. Use as a context manager; ``listener`` is set inside.

    ``tls_lines`` are the listener options of a TLS listener (from
    ``security.tls.mosquitto_listener_lines``); ``None`` opens a plain listener.
    ``openssl_config`` (from ``security.tls.broker_openssl_config``) is an OpenSSL
    configuration for the broker process only (``OPENSSL_CONF``): mosquitto 2.0.11 has no
    option for the key-exchange groups, OpenSSL's ``system_default`` section does.
    """

    READY_TIMEOUT_S = 10.0
    START_ATTEMPTS = 3

    @classmethod
    def with_tls(
        cls,
        directory: Path,
        users: Sequence[BrokerUser],
        profile: TlsProfile | None,
        certificates: CertificateSet | None,
        **options: Any,
    ) -> MosquittoBroker:
        """A broker whose listener serves ``profile`` with ``certificates`` (a plain listener
        when ``profile`` is None): the one place a TLS profile becomes a broker, for ``run``
        and ``bench handshake`` alike. ``options`` are the constructor's keyword arguments."""
        if profile is None:
            return cls(directory, users, **options)
        if certificates is None:
            raise ValueError("a TLS broker needs its certificates")
        from iotsecbench.security.tls import broker_openssl_config, mosquitto_listener_lines

        return cls(
            directory,
            users,
            tls_lines=mosquitto_listener_lines(
                profile, certificates.ca_file, certificates.server_cert, certificates.server_key
            ),
            openssl_config=broker_openssl_config(profile),
            **options,
        )

    def __init__(
        self,
        directory: Path,
        users: Sequence[BrokerUser],
        *,
        tls_lines: Sequence[str] | None = None,
        settings: BrokerSettings | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        command_prefix: Sequence[str] = (),
        within: Callable[[Callable[[], Any]], Any] | None = None,
        openssl_config: str | None = None,
        environment: dict[str, str] | None = None,
        monitor: BrokerUser | None = None,
    ) -> None:
        self.directory = private_directory(directory)
        self.users = list(users)
        # The $SYS reader's account (sys_counters): a plain listener of its own on the broker
        # host's loopback, so it needs none of the run's TLS.
        self.monitor = monitor
        if monitor is not None:
            self.users.append(monitor)
        self.monitor_port: int | None = None
        self.tls_lines = list(tls_lines) if tls_lines is not None else None
        if settings is None:
            from iotsecbench.spec.models import BrokerSettings  # pydantic: only to run one

            settings = BrokerSettings()
        self.settings = settings
        self.host = host
        # In a network namespace (lab/network.py): a fixed port (the namespace is empty),
        # the `ip netns exec` prefix, and `within`, which calls a function inside it so that
        # the sockets it opens (readiness probe, $SYS reader) reach the broker.
        self.fixed_port = port
        self.command_prefix = list(command_prefix)
        self._within = within or (lambda function: function())
        self.openssl_config = openssl_config
        # The process environment (default: ours), e.g. one that loads OpenSSL 3.5's libssl
        # (security.pq_openssl.library_environment) for post-quantum TLS.
        self.environment = environment
        self.binary = mosquitto_binary()
        self.listener: Listener | None = None
        self._process: Supervised | None = None
        self.log_path = self.directory / "mosquitto.log"
        self.config_path = self.directory / "mosquitto.conf"

    # -- configuration -----------------------------------------------------------------
    def _write_auth_files(self) -> tuple[Path, Path]:
        password_file = self.directory / "passwords"
        acl_file = self.directory / "acl"
        password_file.unlink(missing_ok=True)
        passwd = find_binary("mosquitto_passwd", "IOTSB_MOSQUITTO_PASSWD")
        # Every account in one plain-text file (0600 from the start), hashed in place by one
        # `mosquitto_passwd -U`: one process for a fleet of 10,000 devices' 20,000 accounts,
        # where one `-b` call per user rewrote the whole file each time (quadratic).
        write_secret(
            password_file, "".join(f"{user.name}:{user.password}\n" for user in self.users).encode()
        )
        result = subprocess.run(
            [passwd, "-U", str(password_file)],
            capture_output=True,
            text=True,
            timeout=60 + len(self.users) / 100,
        )
        if result.returncode != 0:
            raise EnvironmentProblem(
                f"mosquitto_passwd failed: {(result.stderr or result.stdout).strip()}"
            )
        os.chmod(password_file, 0o600)
        lines: list[str] = []
        for user in self.users:
            lines.append(f"user {user.name}")
            lines += [f"topic read {topic}" for topic in user.read]
            lines += [f"topic write {topic}" for topic in user.write]
            lines.append("")
        acl_file.write_text("\n".join(lines))
        os.chmod(acl_file, 0o600)
        return password_file, acl_file

    def _config_text(self, port: int, password_file: Path, acl_file: Path) -> str:
        lines = []
        if os.geteuid() == 0:
            # As root, mosquitto drops to user 'mosquitto', which cannot read this 0700
            # run directory; stay the invoking user instead (the broker listens on loopback).
            lines.append("user root")
        settings = self.settings
        lines += [
            "per_listener_settings false",
            "allow_anonymous false",
            f"password_file {password_file}",
            f"acl_file {acl_file}",
            "persistence false",
            f"log_dest file {self.log_path}",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "log_timestamp_format %Y-%m-%dT%H:%M:%S",
            "connection_messages true",
            f"max_inflight_messages {settings.max_inflight_messages}",
            f"max_queued_messages {settings.max_queued_messages}",
        ]
        if settings.tcp_nodelay:
            lines.append("set_tcp_nodelay true")
        if settings.message_size_limit:
            lines.append(f"message_size_limit {settings.message_size_limit}")
        if self.monitor is not None:
            # Before the run's listener: the TLS lines that follow belong to that one.
            self.monitor_port = free_port()
            lines += ["sys_interval 1", f"listener {self.monitor_port} 127.0.0.1"]
        lines.append(f"listener {port} {self.host}")
        if self.tls_lines is not None:
            lines += self.tls_lines
        return "\n".join(lines) + "\n"

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> Listener:
        password_file, acl_file = self._write_auth_files()
        last_problem = ""
        for _attempt in range(self.START_ATTEMPTS):
            port = self.fixed_port or free_port(self.host)
            self.config_path.write_text(self._config_text(port, password_file, acl_file))
            self.log_path.unlink(missing_ok=True)
            process = Supervised(
                [*self.command_prefix, self.binary, "-c", str(self.config_path)],
                stderr_path=self.directory / "mosquitto.stderr",
                env=self._environment(),
            ).__enter__()
            problem = self._wait_ready(process, port)
            if problem is None:
                self._process = process
                self.listener = Listener(self.host, port, self.tls_lines is not None)
                return self.listener
            process.stop()
            last_problem = problem
            if "Address already in use" not in problem:
                break
        if "Address already in use" in last_problem:
            raise PortBusyError(f"mosquitto could not bind a free port: {last_problem}")
        raise EnvironmentProblem(
            f"mosquitto did not start: {last_problem} "
            f"(config {self.config_path}, log {self.log_path})"
        )

    def _problem_text(self) -> str:
        texts = []
        for path in (self.directory / "mosquitto.stderr", self.log_path):
            if path.exists():
                texts += [
                    line
                    for line in path.read_text(errors="replace").splitlines()
                    if "Error" in line or "error" in line
                ]
        # mosquitto logs the cause first ("Unknown configuration variable ...") and then
        # where ("Error found at FILE:LINE"); keep both, without timestamps or repeats.
        messages = list(
            dict.fromkeys(re.sub(r"^\S+: (Error: )?", "", text).strip() for text in texts)
        )
        return "; ".join(messages)

    def _environment(self) -> dict[str, str] | None:
        """The broker's environment (``environment`` or ours), plus OPENSSL_CONF when a TLS
        profile needs it."""
        if self.openssl_config is None:
            return self.environment
        path = self.directory / "openssl.cnf"
        path.write_text(self.openssl_config)
        return {**(self.environment or os.environ), "OPENSSL_CONF": str(path)}

    def _ready_timeout_s(self) -> float:
        """How long the broker may take to accept connections: READY_TIMEOUT_S, plus 5 ms per
        account — mosquitto 2.0.11 took about 60 s with a fleet's 19,800 accounts and their
        ACL entries on this 2-vCPU VM under load (2026-11-26)."""
        return self.READY_TIMEOUT_S + 0.005 * len(self.users)

    def _wait_ready(self, process: Supervised, port: int) -> str | None:
        timeout_s = self._ready_timeout_s()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                return (
                    f"{self._problem_text() or 'no error logged'} "
                    f"(mosquitto {describe_exit(process.poll())})"
                )
            try:
                with self._within(lambda: socket.create_connection((self.host, port), 0.2)):
                    return None
            except OSError:
                time.sleep(0.02)
        return f"not accepting connections on {self.host}:{port} after {timeout_s:.0f} s"

    # sys_interval 1, but mosquitto republishes when now_s - interval > last_update, in whole
    # seconds: every two seconds. Reading 2.5 s sees a publication made after the agents
    # finished (a fleet agent's devices all end within a second: 1.5 s missed their last).
    SYS_READ_S = 2.5

    def sys_counters(self) -> dict[str, int]:
        """The broker's own counters now, from its retained ``$SYS/broker/…`` topics (the
        integer ones, named without the prefix, e.g. 'clients/maximum', 'bytes/received');
        empty without a ``monitor`` account or when the broker does not answer."""
        if self.monitor is None or self.monitor_port is None or not self.alive():
            return {}
        values = self._within(self._read_sys)
        prefix = "$SYS/broker/"
        return {
            topic.removeprefix(prefix): int(value)
            for topic, value in sorted(values.items())
            if topic.startswith(prefix) and value.strip().isdigit()
        }

    def _read_sys(self) -> dict[str, str]:
        """Every $SYS topic's latest value (topic → text), read for SYS_READ_S on the monitor
        listener; empty when it does not answer."""
        import paho.mqtt.client as mqtt  # only runs with a monitor read $SYS

        assert self.monitor is not None and self.monitor_port is not None
        values: dict[str, str] = {}

        def on_message(client: Any, userdata: Any, message: Any) -> None:
            values[message.topic] = message.payload.decode("utf-8", "replace")

        client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=f"iotsb-monitor-{secrets.token_hex(4)}"
        )
        client.username_pw_set(self.monitor.name, self.monitor.password)
        client.on_message = on_message
        try:
            client.connect("127.0.0.1", self.monitor_port, keepalive=10)
            client.subscribe("$SYS/#")
            deadline = time.monotonic() + self.SYS_READ_S
            while time.monotonic() < deadline:
                client.loop(timeout=0.1)
            client.disconnect()
        except OSError:
            return {}
        return values

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def exit_description(self) -> str:
        assert self._process is not None
        return describe_exit(self._process.poll())

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def __enter__(self) -> MosquittoBroker:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
