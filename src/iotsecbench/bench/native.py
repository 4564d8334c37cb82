"""``bench handshake --stack mbedtls|wolfssl``: the connections of the handshake benchmark made
by the native agent on a device stack (agents/native, role ``connect``) instead of paho on
OpenSSL.

One agent process per profile lives for the whole benchmark (started on its first connection,
inside the emulated network's namespace when there is one) and makes one whole connection —
TCP connect, TLS handshake, CONNECT → CONNACK, DISCONNECT — per request, so warm-up and
interleaving work as for the Python client. Its records give the phases (thread CPU of the
agent's connecting thread), the TCP counters around the handshake and the handshake as it
crossed the wire, which ``agents.native.translate`` reads back and ``verify_negotiated`` checks.

Under ``--trace`` the agent writes the iotst markers itself, into the tracer's
``trace_marker``, from its connecting thread (whose id, the process id, the trace is read
for): the groups the Python client opens, one line per handshake message as the stack's I/O
hands it over, ``end`` at CONNACK; and it measures what one of its marker writes costs.
Under ``--cores``/``--clock`` the agent's process is what is placed (``lab.cpu``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from iotsecbench.agents import native
from iotsecbench.agents.config import AgentConfig, TlsClientFiles
from iotsecbench.agents.handshake import TlsHandshakeMeasurement
from iotsecbench.agents.native.translate import negotiated
from iotsecbench.agents.records import read_records_from
from iotsecbench.errors import EnvironmentProblem, SpecError
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from iotsecbench.security import pq_openssl
from iotsecbench.security.tls import TlsProfile, verify_negotiated
from iotsecbench.security.tls.stacks import (
    POST_QUANTUM_STACKS,
    PYTHON_STACKS,
    group_ids,
    stack_problem,
    suite_ids,
)

CONNECT_TIMEOUT_S = 10.0


class NativeClient:
    """A long-lived native agent that connects to one broker whenever asked."""

    def __init__(
        self,
        stack: str,
        profile: TlsProfile,
        broker: MosquittoBroker,
        user: BrokerUser,
        ca_file: Path,
        work_dir: Path,
        client_files: tuple[Path, Path] | None = None,
        trace_marker: Path | None = None,
    ) -> None:
        assert broker.listener is not None
        work_dir.mkdir(parents=True, exist_ok=True)
        self.records_path = work_dir / "connect.jsonl"
        cert, key = client_files or (None, None)
        config = AgentConfig(
            role="connect",
            run_id="bench",
            configuration=f"tls{profile.version}",
            host=broker.listener.host,
            port=broker.listener.port,
            username=user.name,
            password=user.password,
            client_id="iotsb-bench-native",
            topic_prefix="iotsb/0123456789ab",
            connect_timeout_s=CONNECT_TIMEOUT_S,
            output=str(self.records_path),
            tls=TlsClientFiles(
                profile.to_dict(),
                str(ca_file),
                str(cert) if cert else None,
                str(key) if key else None,
                suite_ids=tuple(suite_ids(profile)),
                group_ids=tuple(group_ids(profile)),
            ),
            stack=stack,
            trace_marker=str(trace_marker) if trace_marker is not None else None,
        )
        self._config_path = work_dir / "connect.config.json"
        self._config_path.write_text(config.to_json())
        self._config_path.chmod(0o600)
        self._program = native.binary(native.build_for(stack, tls=True, scheme=False))
        self._process: subprocess.Popen[bytes] | None = None
        self._offset = 0  # bytes of records already handed out

    @property
    def pid(self) -> int:
        """The agent's process id: its connecting (main) thread's id, what a trace follows."""
        return self._started().pid

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            self._process = subprocess.Popen(
                [str(self._program), "--config", str(self._config_path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            self._expect(b"READY")
        return self._process

    def _expect(self, word: bytes) -> bytes:
        """The agent's next answer, which starts with ``word`` (else it stopped: why)."""
        assert self._process is not None and self._process.stdout is not None
        line = self._process.stdout.readline().strip()
        if line.split(b" ")[0] != word:
            errors = [r["message"] for r in self._new_records() if r.get("type") == "error"]
            raise EnvironmentProblem(
                f"native {self._program.name} stopped: {errors[0] if errors else 'no reason given'}"
            )
        return line

    def _new_records(self) -> list[dict[str, Any]]:
        # from where the last connection's ended: rereading the whole file made each
        # connection dearer than the one before (a transcript is kilobytes)
        fresh, self._offset = read_records_from(self.records_path, self._offset)
        return fresh

    def _ask(self, request: bytes, answer: bytes) -> bytes:
        process = self._started()
        assert process.stdin is not None
        process.stdin.write(request + b"\n")
        process.stdin.flush()
        return self._expect(answer)

    def connect(self, *, traced: bool = False) -> list[dict[str, Any]]:
        """One whole connection (``traced``: with the iotst markers); its records."""
        self._ask(b"trace" if traced else b"go", b"DONE")
        return self._new_records()

    def marker_cost_ns(self, writes: int) -> int:
        """Thread CPU time of one of the agent's marker writes (the caller has tracing on)."""
        cost = int(self._ask(b"calibrate %d" % writes, b"COST").split()[1])
        if cost < 0:
            raise EnvironmentProblem("the native agent was started without a trace marker")
        return cost

    def close(self) -> None:
        if self._process is None:
            return
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def check_stack(stack: str, profiles: Sequence[TlsProfile]) -> None:
    """Refuse what the native agent cannot do here, before any broker starts (exit 2; a
    missing compiler or library: exit 3)."""
    for profile in profiles:
        problem = stack_problem(stack, profile)
        if problem is not None:
            raise SpecError(f"{profile.name} on stack {stack}: {problem}")
    if stack in POST_QUANTUM_STACKS:  # the broker runs on OpenSSL 3.5
        pq_openssl.require()  # exit 3, naming the build command, before anything starts
    if stack in PYTHON_STACKS:
        return
    missing = native.problem(native.build_for(stack, tls=True, scheme=False))
    if missing is not None:
        raise EnvironmentProblem(missing)


def measured_connection(
    records: list[dict[str, Any]], profile: TlsProfile
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], TlsHandshakeMeasurement]:
    """What one native connection's records say: the negotiated parameters (checked against
    ``profile``: ValueError on a mismatch), the phases by name, the TLS handshake measured."""
    phases = {r["phase"]: r for r in records if r.get("type") == "handshake"}
    tls = negotiated(records)
    if tls is None or not {"tcp_connect", "tls_handshake", "mqtt_connect"} <= set(phases):
        raise ValueError("the native agent recorded no complete TLS connection")
    verify_negotiated(profile, tls, expect_resumed=profile.resumption)
    handshake = phases["tls_handshake"]
    detail = handshake["detail"]
    measurement = TlsHandshakeMeasurement(
        handshake["t_start_ns"],
        handshake["t_end_ns"],
        handshake["cpu_ns"],  # the agent's one thread: its computing
        detail["process_cpu_ns"],
        detail["tcp_bytes_sent"],
        detail["tcp_bytes_received"],
        detail["tcp_segments_out"],
        detail["tcp_segments_in"],
        detail["tcp_retransmissions"],
    )
    return tls.to_dict(), phases, measurement
