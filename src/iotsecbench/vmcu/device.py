"""Running the device client (``vmcu.client``) and reading what it counted: its configuration
file (the firmware's ``config.c`` is the other side), the QEMU command that connects its UART
to a bridge as a TCP client, and the firmware's output — its records in the agents' vocabulary
(``count_segment`` per ledger segment, ``counters``, ``tls_transcript``, ``event``, ``error``)
and, apart from them, its TLS 1.3 secrets (read once, for the transcript, never stored).

What starts QEMU and the bridge, in which network namespace and under which watchdog, is the
runner's (``runner/device.py``); this module stays pure of the lab.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotsecbench.vmcu.targets import Target

CONFIG_FILE = "device-config.bin"
RECORDS_FILE = "device-records.jsonl"
SECRETS_FILE = "device-secrets.txt"
PROGRESS_FILE = "device-progress.txt"
CONFIG_MAGIC = b"IOTSBDC1"
SEED_BYTES = 32
PUBLISH = "publish"  # the role of a whole run: the device as the lab's emitter
TCP = "tcp"  # the same over the tcp transport: frames straight to the receiver (frames.c)
EMITTER_ROLES = (PUBLISH, TCP)  # a whole run's: they sync the lab's clock first
# lwc: the payload schemes' lightweight ciphers (agents/native/crypto_lwc.c), only when sealing
FAMILIES = ("pk", "sha2", "aes", "chacha20_poly1305", "mlkem", "mldsa", "lwc")
# mbedTLS's error codes the device build names by number only (no MBEDTLS_ERROR_C).
MBEDTLS_ERRORS = {
    0x2700: "X509_CERT_VERIFY_FAILED (the server's certificate does not verify)",
    0x7080: "SSL_BAD_CONFIG",
    0x7780: "SSL_FATAL_ALERT_MESSAGE (the server sent an alert)",
    0x7280: "SSL_CONN_EOF",
    0x6E00: "SSL_HANDSHAKE_FAILURE",
    0x7A00: "SSL_BAD_PROTOCOL_VERSION",
    0x7F00: "SSL_ALLOC_FAILED (out of memory)",
    0x0010: "MPI_ALLOC_FAILED (out of memory)",
    0x4F80: "ECP_ALLOC_FAILED (out of memory)",
}


@dataclass(frozen=True)
class DeviceConfig:
    """What the firmware reads before it counts anything (``client/config.c``)."""

    seed: bytes  # the TRNG stand-in's seed (SEED_BYTES): one seed, one instruction stream
    client_id: str
    username: str | None = None
    password: str | None = None
    topic_prefix: str = ""
    tls_version: str = ""  # "1.2", "1.3"; "" for plain MQTT
    suites: tuple[int, ...] = ()  # IANA ids to offer (empty: the stack's default)
    groups: tuple[int, ...] = ()  # IANA supported groups, the first gets the key share
    ca_pem: bytes = b""
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    server_name: str = "localhost"
    keep_alive_s: int = 60
    role: str = "connect"  # or an emitter role: "publish" (MQTT) or "tcp" (frames)
    log_secrets: bool = True  # TLS 1.3: the secrets the host reads the transcript with
    # the "publish" role (client/publish.c): the run's messages, as agents/emitter.py sends them
    message_count: int = 0
    period_ns: int = 0
    qos: int = 0
    payload_bytes: int = 0
    filler_seed: int = 0  # agents/wire.py make_filler's seed
    scheme: str = ""  # a payload scheme (the mbedtls-scheme build), or "" for none
    psk: bytes = b""  # a psk-* scheme's pre-shared key (the runner's psk_file), or none
    # the "tcp" role (client/frames.c): the method and the pacing of agents/tcp.py
    echo: bool = False  # every block comes back and is opened
    saturating: bool = False  # the next block as soon as the last is written (or echoed)
    duration_ns: int = 0  # saturating: for this long on the lab's clock

    def __post_init__(self) -> None:
        if len(self.seed) != SEED_BYTES:
            raise ValueError(f"the device seed is {SEED_BYTES} bytes, not {len(self.seed)}")

    def encode(self) -> bytes:
        """The configuration file's bytes (format: client/config.c)."""
        entries: list[tuple[str, bytes]] = [
            ("role", self.role.encode()),
            ("tls_version", self.tls_version.encode()),
            ("seed", self.seed),
            ("client_id", self.client_id.encode()),
            ("topic_prefix", self.topic_prefix.encode()),
            ("server_name", self.server_name.encode()),
            ("keep_alive_s", struct.pack("<I", self.keep_alive_s)),
            ("log_secrets", bytes([int(self.log_secrets)])),
        ]
        if self.role in EMITTER_ROLES:
            entries += [
                ("message_count", struct.pack("<I", self.message_count)),
                ("period_ns", struct.pack("<Q", self.period_ns)),
                ("qos", struct.pack("<I", self.qos)),
                ("payload_bytes", struct.pack("<I", self.payload_bytes)),
                ("filler_seed", struct.pack("<Q", self.filler_seed)),
                ("scheme", self.scheme.encode()),
            ]
            if self.psk:
                entries.append(("psk", self.psk))
        if self.role == TCP:
            entries += [
                ("echo", bytes([int(self.echo)])),
                ("saturating", bytes([int(self.saturating)])),
                ("duration_ns", struct.pack("<Q", self.duration_ns)),
            ]
        if self.username is not None:
            entries.append(("username", self.username.encode()))
        if self.password is not None:
            entries.append(("password", self.password.encode()))
        if self.suites:
            entries.append(("suites", b"".join(struct.pack(">H", s) for s in self.suites)))
        if self.groups:
            entries.append(("groups", b"".join(struct.pack(">H", g) for g in self.groups)))
        if self.ca_pem:
            entries.append(("ca", self.ca_pem))
        if self.client_cert_pem is not None and self.client_key_pem is not None:
            entries += [("client_cert", self.client_cert_pem), ("client_key", self.client_key_pem)]
        parts = [CONFIG_MAGIC]
        for key, value in entries:
            parts.append(bytes([len(key)]) + key.encode() + struct.pack("<I", len(value)))
            parts.append(value + b"\0")
        parts.append(b"\0")
        return b"".join(parts)


def seed_for(base_seed: int, repetition: int) -> bytes:
    """The device seed of one repetition: a fixed function of the run's seed and the
    repetition, recorded with it (``seed_hex``)."""
    import hashlib

    return hashlib.sha256(f"iotsb-device/{base_seed}/{repetition}".encode()).digest()


def client_command(target: Target, image: Path, host: str, port: int) -> list[str]:
    """QEMU running ``image`` with its UART connected, as a TCP client, to ``host:port``."""
    chardev = f"socket,id=uart,host={host},port={port},server=off,nodelay=on"
    return [*target.qemu_command(str(image)), "-chardev", chardev, "-serial", "chardev:uart"]


@dataclass
class DeviceOutcome:
    """What the firmware wrote: its records (segments apart) and its TLS 1.3 secrets."""

    records: list[dict[str, Any]] = field(default_factory=list)
    segments: list[dict[str, Any]] = field(default_factory=list)
    secrets: dict[str, bytes] = field(default_factory=dict)
    progress: str = ""  # the last segment the firmware began: "INDEX EVENT MARK|BYTES"

    @property
    def error(self) -> str | None:
        message = next((r["message"] for r in self.records if r.get("type") == "error"), None)
        return None if message is None else explain(message)

    @property
    def finished(self) -> bool:
        return any(
            r.get("type") == "event" and r.get("name") == "agent_end" and r.get("status") == "ok"
            for r in self.records
        )

    def counters(self) -> dict[str, int]:
        return {r["name"]: int(r["value"]) for r in self.records if r.get("type") == "counters"}

    def event(self, name: str) -> dict[str, Any]:
        return next(
            (r for r in self.records if r.get("type") == "event" and r.get("name") == name), {}
        )

    def transcript(self) -> dict[str, Any] | None:
        return next((r for r in self.records if r.get("type") == "tls_transcript"), None)

    def last_segment(self) -> str:
        """Where the firmware was when it stopped (a hung firmware's last words): the segment
        it had begun last, by the mark or the bytes that began it."""
        if not self.progress:
            return "before its first segment"
        index, event, what = [*self.progress.split(" ", 2), "", ""][:3]
        where = what if event == "m" else f"{'read' if event == 'r' else 'wrote'} {what} B"
        return f"in segment {index}, begun by {where}"


def explain(message: str) -> str:
    """The firmware's error with mbedTLS's numeric codes named."""
    marker = "error -0x"
    if marker in message:
        code = int(message.split(marker)[1][:4], 16)
        if code in MBEDTLS_ERRORS:
            return f"{message} = MBEDTLS_ERR_{MBEDTLS_ERRORS[code]}"
    return message


def read_outcome(directory: Path, keep_secrets: bool = False) -> DeviceOutcome:
    """The firmware's output in ``directory`` (whole lines only: a firmware stopped mid-line
    loses that line). The secrets file is removed after reading unless ``keep_secrets``."""
    outcome = DeviceOutcome()
    path = directory / RECORDS_FILE
    if path.exists():
        for line in path.read_bytes().splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                break
            (outcome.segments if record.get("type") == "count_segment" else outcome.records).append(
                record
            )
    progress = directory / PROGRESS_FILE
    if progress.exists():
        lines = [line for line in progress.read_text(errors="replace").splitlines() if line]
        outcome.progress = lines[-1] if lines else ""
    secrets = directory / SECRETS_FILE
    if secrets.exists():
        for line in secrets.read_text().splitlines():
            label, _, value = line.partition(" ")
            if label and value:
                outcome.secrets[label] = bytes.fromhex(value)
        if not keep_secrets:
            secrets.unlink()
    return outcome
