"""What the native agents' integration tests share: the skip when a build cannot be made, the
runs a test stored, and one native agent talking to a Python one through a real mosquitto."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from iotsecbench.agents import native
from iotsecbench.agents.config import AgentConfig, TlsClientFiles
from iotsecbench.agents.records import read_records
from iotsecbench.lab.broker import BrokerUser, MosquittoBroker
from iotsecbench.lab.pki import create_certificates
from iotsecbench.security import pq_openssl
from iotsecbench.security.tls import parse_profile
from iotsecbench.security.tls.stacks import group_ids, suite_ids


def _missing(stacks: tuple[str, ...]) -> str | None:
    builds = [
        b for b in native.BUILDS if b == native.PLAIN or native.Build.named(b).stack in stacks
    ]
    return next(filter(None, (native.problem(build) for build in builds)), None)


_MISSING = _missing(native.DEBIAN_STACKS)
needs_native = pytest.mark.skipif(_MISSING is not None, reason=str(_MISSING))
# The stack built from registry source (scripts/setup.sh builds it), and its broker's OpenSSL 3.5.
_MISSING_PQ = _missing(("wolfssl-5.9",)) or pq_openssl.problem()
needs_wolfssl_pq = pytest.mark.skipif(_MISSING_PQ is not None, reason=str(_MISSING_PQ))


def stored_runs(out: Path, columns: str) -> dict[str, tuple]:
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        rows = db.execute(f"select run_id, {columns} from runs").fetchall()
    return {row[0]: row[1:] for row in rows}


def interoperate(
    tmp_path: Path,
    emitter_native: bool,
    profile_name: str | None,
    scheme: str = "none",
    stack: str = "wolfssl",
    rate_hz: float = 20,
) -> dict:
    """One broker, one emitter and one receiver, one of them native (on ``stack``) and the
    other Python, protecting the messages with ``profile_name`` (TLS) and ``scheme``."""
    prefix = "iotsb/0123456789ab"
    users = {  # as the runner's accounts (runner/local.py)
        "emitter": BrokerUser.random(
            "emitter",
            [f"{prefix}/kx/receiver", f"{prefix}/kx/ready"],
            [f"{prefix}/data", f"{prefix}/ctl/end", f"{prefix}/kx/emitter"],
        ),
        "receiver": BrokerUser.random(
            "receiver",
            [f"{prefix}/data", f"{prefix}/ctl/end", f"{prefix}/kx/emitter"],
            [f"{prefix}/kx/receiver", f"{prefix}/kx/ready"],
        ),
    }
    profile = parse_profile(profile_name) if profile_name else None
    certs = create_certificates(tmp_path / "pki", profile.certificate) if profile else None
    tls = (
        TlsClientFiles(
            profile.to_dict(),
            str(certs.ca_file),
            suite_ids=tuple(suite_ids(profile)),
            group_ids=tuple(group_ids(profile)),
        )
        if profile and certs
        else None
    )
    psk_file = None
    if scheme.startswith("psk-"):
        psk_file = tmp_path / "psk.key"
        psk_file.write_bytes(os.urandom(32))
    build = native.build_for(stack, tls=tls is not None, scheme=scheme != "none")
    broker = MosquittoBroker.with_tls(tmp_path / "broker", list(users.values()), profile, certs)
    with broker:
        assert broker.listener is not None
        transport = f"tls{profile.version}" if profile else "plain"
        configuration = transport if scheme == "none" else f"{transport}+{scheme}"

        def command(role: str) -> list[str]:
            config = AgentConfig(
                role=role, run_id="interop", configuration=configuration,
                host=broker.listener.host, port=broker.listener.port,
                username=users[role].name, password=users[role].password,
                client_id=f"iotsb-{role}", topic_prefix=prefix, payload_bytes=100,
                rate_hz=rate_hz, duration_s=1.0, qos=1, seed=7,
                output=str(tmp_path / f"{role}.jsonl"), tls=tls,
                psk_file=str(psk_file) if psk_file else None,
            )  # fmt: skip
            path = tmp_path / f"{role}.json"
            path.write_text(config.to_json())
            os.chmod(path, 0o600)
            if (role == "emitter") == emitter_native:
                return [str(native.binary(build)), "--config", str(path)]
            return [sys.executable, "-m", f"iotsecbench.agents.{role}", "--config", str(path)]

        receiver = subprocess.Popen(command("receiver"), stdout=subprocess.PIPE)
        try:
            assert receiver.stdout is not None and receiver.stdout.readline() == b"READY\n"
            emitter = subprocess.run(command("emitter"), timeout=60, check=False)
            assert emitter.returncode == 0
            assert receiver.wait(30) == 0
        finally:
            receiver.kill()
    return {role: read_records(tmp_path / f"{role}.jsonl") for role in ("emitter", "receiver")}
