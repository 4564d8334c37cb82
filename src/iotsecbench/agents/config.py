"""The configuration the runner hands an agent (a JSON file, mode 0600: it holds a password)."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from iotsecbench.agents.records import RecordWriter


@dataclass(frozen=True)
class TlsClientFiles:
    """What a TLS client needs: the profile to pin and the PKI files to trust and present."""

    profile: dict[str, Any]  # fields of security.tls.TlsProfile
    ca_file: str
    client_cert: str | None = None
    client_key: str | None = None
    server_cert: str | None = None  # the tcp transport's receiver is the TLS server
    server_key: str | None = None
    # The native agent's offer as IANA numbers (security.tls.stacks); empty: stack defaults.
    suite_ids: tuple[int, ...] = ()
    group_ids: tuple[int, ...] = ()


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
    fault: str | None = None  # test hook only: see ``fault_at``
    psk_file: str | None = None  # psk-* schemes: 0600 file with the run's pre-shared key (raw)
    # signed key exchanges (*-mldsa44 …): 0600 file with this side's key and the peer's pinned
    # public key (security.signatures.provision)
    signing_file: str | None = None
    keylog: str | None = None  # --keylog: append TLS (NSS format) and session keys here
    transport: str = "mqtt"  # "mqtt" (through the broker) or "tcp" (emitter -> receiver)
    method: str = "unidirectional"  # or "echo": the receiver returns every block (tcp)
    saturating: bool = False  # send as fast as possible for duration_s instead of at rate_hz
    stack: str = "openssl"  # "openssl": the Python agents; "mbedtls"/"wolfssl": agents/native
    trace_marker: str | None = None  # native "connect" role: tracefs marker (bench --trace)

    @property
    def message_count(self) -> int:
        """Messages of a fixed-rate run (a saturating run sends until ``duration_s`` is up)."""
        return max(1, round(self.duration_s * self.rate_hz))

    def fault_at(self, seq: int, writer: RecordWriter) -> None:
        """Test hook (``fault``): "crash-after=N" makes the sender die before block N, leaving
        partial records; "hang-after=N" stops it there, alive and silent (SIGSTOP freezes
        every thread, the sampler's too), for the runner's silence watchdog to find."""
        if self.fault is None:  # the one check a saturating sender pays per block
            return
        action, _, count = self.fault.partition("=")
        if action not in ("crash-after", "hang-after") or seq != int(count):
            return
        writer.flush()
        if action == "hang-after":
            os.kill(os.getpid(), signal.SIGSTOP)
        else:
            os._exit(17)

    def key_exchange_in_transit(self, message: bytes) -> bytes:
        """Test hook (``fault``): "tamper-kx" flips the last bit of the emitter's key-exchange
        reply after it is signed, as a man in the middle would, so the receiver's signature
        check refuses it in a real run."""
        if self.fault != "tamper-kx":
            return message
        return message[:-1] + bytes((message[-1] ^ 1,))

    def expected_tls_profile(self) -> dict[str, Any]:
        """The TLS profile the live connection is checked against. Test hook (``fault``):
        "expect-group=NAME" asks for another group than the one configured, so a real
        connection negotiates "something else" and the mismatch fails the run end to end."""
        assert self.tls is not None
        action, _, value = (self.fault or "").partition("=")
        if action == "expect-group":
            return {**self.tls.profile, "group": value}
        return self.tls.profile

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_file(cls, path: Path) -> AgentConfig:
        data = json.loads(path.read_text())
        tls = data.pop("tls", None)
        if tls:
            tls = TlsClientFiles(
                **{
                    **tls,
                    "suite_ids": tuple(tls.get("suite_ids", ())),
                    "group_ids": tuple(tls.get("group_ids", ())),
                }
            )
        return cls(**data, tls=tls)
