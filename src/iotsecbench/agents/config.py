"""The configuration the runner hands an agent (a JSON file, mode 0600: it holds a password)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TlsClientFiles:
    """What a TLS client needs: the profile to pin and the PKI files to trust and present."""

    profile: dict[str, Any]  # fields of security.tls.TlsProfile
    ca_file: str
    client_cert: str | None = None
    client_key: str | None = None
    server_cert: str | None = None  # the tcp transport's receiver is the TLS server
    server_key: str | None = None


@dataclass(frozen=True)
class AgentConfig:
    """Everything one agent needs for one run; written by the runner, read by the agent."""

    role: str  # "emitter" | "receiver"
    run_id: str
    configuration: str  # e.g. "tls1.2+ecdh-p256-aes128-gcm"
    host: str
    port: int
    username: str
    password: str = field(repr=False)
    client_id: str = ""
    topic_prefix: str = ""  # "iotsb/<run_id>": the ACL confines each account to it
    payload_bytes: int = 256
    rate_hz: float = 10.0
    duration_s: float = 10.0
    qos: int = 1
    connect_timeout_s: float = 10.0
    drain_s: float = 2.0
    seed: int = 0
    tcp_nodelay: bool = True  # disable Nagle's algorithm on the agent's socket
    output: str = ""  # JSON-lines file the agent writes its records to
    tls: TlsClientFiles | None = None
    fault: str | None = None  # test hook only: "crash-after=N" makes the emitter die mid-run
    psk_file: str | None = None  # psk-* schemes: 0600 file with the run's pre-shared key (raw)
    keylog: str | None = None  # --keylog: append TLS (NSS format) and session keys here
    transport: str = "mqtt"  # "mqtt" (through the broker) or "tcp" (emitter -> receiver)
    method: str = "unidirectional"  # or "echo": the receiver returns every block (tcp)
    saturating: bool = False  # send as fast as possible for duration_s instead of at rate_hz

    @property
    def message_count(self) -> int:
        """Messages of a fixed-rate run (a saturating run sends until ``duration_s`` is up)."""
        return max(1, round(self.duration_s * self.rate_hz))

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_file(cls, path: Path) -> AgentConfig:
        data = json.loads(path.read_text())
        tls = data.pop("tls", None)
        return cls(**data, tls=TlsClientFiles(**tls) if tls else None)
