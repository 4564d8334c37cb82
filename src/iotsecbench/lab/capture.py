"""Packet captures of a run's traffic (``run --capture``, docs/capture.md).

Debian's ``dumpcap`` records the device's link while the run's agents talk — the emitter
host's ``eth0`` inside its namespace on an emulated network, the loopback interface (filtered
to the run's port) otherwise — and Debian's ``editcap`` turns what it recorded into the
pcapng file the user opens: the run's TLS secrets inside as a Decryption Secrets Block (so
Wireshark and tshark decrypt with no key log file), the payload schemes' session keys as the
first packet's comment (which the Lua dissector, docs/wireshark/iotsecbench.lua, reads) and
a capture comment saying how to decode the run's port.

dumpcap and editcap come in one package (wireshark-common), and dumpcap writes pcapng
itself, so it is the one capture tool: tcpdump writes pcap and would need editcap anyway.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from iotsecbench.errors import EnvironmentProblem, MissingBinaryError, NoPermissionError
from iotsecbench.lab.processes import Supervised

CAPTURE_FILE = "capture.pcapng"  # in the run directory, mode 0600: it holds the run's secrets
KEY_LOG_FILE = "capture.keylog"  # the run's secrets while it runs (0600); removed once embedded
RAW_FILE = "capture.raw.pcapng"  # dumpcap's own file; removed once CAPTURE_FILE is written
STDERR_FILE = "capture.stderr"
SESSION_KEYS_LABEL = "IOTSB_SESSION_KEYS"  # docs/wire-format.md "Key log"
BUFFER_MIB = 32  # kernel capture buffer: a saturating run's burst fits (dumpcap's default is 2)
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 15.0  # dumpcap writes what it still holds and its statistics on SIGTERM
# libpcap hands dumpcap a ring-buffer block only when it fills or times out (dumpcap: 250 ms),
# and what SIGTERM finds still in the kernel's ring is lost: before the stop, the file must
# have stopped growing for SETTLE_S (at most SETTLE_LIMIT_S on a loaded machine). Seen in CI:
# the last two PUBLISHes of a run missing from its capture.
SETTLE_S = 0.6
SETTLE_LIMIT_S = 5.0
INSTALL_HINT = "install Debian's wireshark-common (apt-get install wireshark-common)"
PRIVILEGE_HINT = (
    "run as root, or let dumpcap capture (dpkg-reconfigure wireshark-common, then join the "
    "wireshark group)"
)


def _binary(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def _tool(name: str) -> str:
    found = _binary(name)
    if found is None:
        raise MissingBinaryError(f"--capture needs {name}, which is not installed: {INSTALL_HINT}")
    return found


def capture_problem() -> EnvironmentProblem | None:
    """Why this machine cannot take a run's capture (a missing tool, or no privilege to
    capture), or None. The probe opens the loopback interface as a capture does
    (``dumpcap -L``), so it fails exactly when a capture would."""
    try:
        dumpcap = _tool("dumpcap")
        _tool("editcap")
    except MissingBinaryError as missing:
        return missing
    try:
        probe = subprocess.run(
            [dumpcap, "-L", "-i", "lo"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return EnvironmentProblem(f"--capture: dumpcap could not be started ({error})")
    if probe.returncode != 0:
        lines = [line.strip() for line in probe.stderr.splitlines() if line.strip()]
        detail = lines[0] if lines else f"exit code {probe.returncode}"
        return NoPermissionError(
            f"--capture: dumpcap cannot capture here ({detail}); {PRIVILEGE_HINT}"
        )
    return None


def require_capture() -> None:
    """Raise the one-line exit-3 problem of ``capture_problem``, if any."""
    problem = capture_problem()
    if problem is not None:
        raise problem


def tool_version() -> str | None:
    """'dumpcap 4.0.17' (what took the captures), or None when it is not installed."""
    dumpcap = _binary("dumpcap")
    if dumpcap is None:
        return None
    result = subprocess.run([dumpcap, "-v"], capture_output=True, text=True, timeout=30)
    match = re.search(r"Dumpcap \(Wireshark\) (\S+)", result.stdout + result.stderr)
    return f"dumpcap {match.group(1)}" if match else "dumpcap"


@dataclass(frozen=True)
class CaptureSummary:
    """What one run's capture holds: named in the run's record (``details_json.capture``)."""

    file: str  # the pcapng file, relative to the results directory
    interface: str  # where it was taken: 'lo', or 'eth0 (emitter namespace)'
    capture_filter: str  # the BPF filter ('' inside a namespace: the link carries the run only)
    tcp_port: int  # the broker's port (the tcp transport's: the receiver's)
    tls: bool  # the run's MQTT (or frames) travelled in TLS: decode the port as TLS
    packets: int | None  # dumpcap's count of packets written
    dropped_packets: int | None  # dropped by the kernel or dumpcap: the capture is incomplete
    tls_secret_lines: int  # NSS key log lines in the Decryption Secrets Block
    session_key_lines: int  # IOTSB_SESSION_KEYS lines in the first packet's comment
    tool: str  # 'dumpcap 4.0.17'

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class CaptureSite:
    """Where a run's capture is taken: an interface, seen from a namespace (or not)."""

    interface: str
    capture_filter: str
    tcp_port: int
    tls: bool
    mqtt: bool = True  # False: the tcp transport's frames (no dissector of Wireshark's)
    command_prefix: tuple[str, ...] = ()  # e.g. ('ip', 'netns', 'exec', NAME)
    label: str = ""  # how the record names it

    def decode_hint(self) -> str:
        """The tshark options that decode the run's port (Wireshark: Decode As…)."""
        port = self.tcp_port
        options = [f"-d tcp.port=={port},tls"] if self.tls else []
        if self.mqtt:
            options.append(f"-d {'tls' if self.tls else 'tcp'}.port=={port},mqtt")
        return " ".join(options)


class PacketCapture:
    """dumpcap recording one run's site into ``directory/RAW_FILE``: a context manager that
    returns once dumpcap captures, and stops it (so it writes what it holds) on exit."""

    def __init__(self, directory: Path, site: CaptureSite) -> None:
        self.directory = directory
        self.site = site
        self.packets: int | None = None
        self.dropped_packets: int | None = None
        self._process: Supervised | None = None

    @property
    def raw_path(self) -> Path:
        return self.directory / RAW_FILE

    def __enter__(self) -> PacketCapture:
        self.raw_path.unlink(missing_ok=True)
        argv = [
            *self.site.command_prefix,
            _tool("dumpcap"),
            "-q",
            "-i",
            self.site.interface,
            "-B",
            str(BUFFER_MIB),
            "-w",
            str(self.raw_path),
        ]
        if self.site.capture_filter:
            argv += ["-f", self.site.capture_filter]
        stderr = self.directory / STDERR_FILE
        self._process = Supervised(argv, stderr_path=stderr, stop_timeout_s=STOP_TIMEOUT_S)
        self._process.__enter__()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if "Capturing on" in _text(stderr):
                return self
            if self._process.poll() is not None:
                break
            time.sleep(0.02)
        self._process.stop()
        lines = [line for line in _text(stderr).splitlines() if line.strip()]
        detail = lines[0] if lines else "no message"
        raise EnvironmentProblem(f"--capture: dumpcap did not start capturing ({detail})")

    def __exit__(self, *exc_info: object) -> None:
        if self._process is None:
            return
        self._settle()
        self._process.stop()  # SIGTERM: dumpcap flushes, closes the file, prints its counts
        self._process = None
        text = _text(self.directory / STDERR_FILE)
        captured = re.search(r"Packets captured: (\d+)", text)
        dropped = re.search(r"received/dropped on interface .*?: (\d+)/(\d+)", text)
        self.packets = int(captured.group(1)) if captured else None
        self.dropped_packets = int(dropped.group(2)) if dropped else None

    def _settle(self) -> None:
        """Wait until dumpcap has written what crossed the link (see SETTLE_S)."""
        deadline = time.monotonic() + SETTLE_LIMIT_S
        size, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now_size = self.raw_path.stat().st_size if self.raw_path.exists() else 0
            if now_size != size:
                size, since = now_size, time.monotonic()
            elif time.monotonic() - since >= SETTLE_S:
                return
            time.sleep(0.05)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def split_key_log(text: str) -> tuple[list[str], list[str]]:
    """A key log's TLS lines (NSS format) and its payload-scheme session-key lines."""
    tls, sessions = [], []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        (sessions if words[0] == SESSION_KEYS_LABEL else tls).append(line.strip())
    return tls, sessions


def finish(
    capture: PacketCapture | None,
    results_dir: Path,
    key_log: Path | None,
    run_id: str,
    tool: str,
) -> CaptureSummary | None:
    """Write ``CAPTURE_FILE`` (0600) from dumpcap's file with the run's secrets inside and
    remove dumpcap's; None when there is nothing to finish (no capture was started)."""
    if capture is None or not capture.raw_path.exists():
        return None
    directory, site = capture.directory, capture.site
    tls_lines, session_lines = split_key_log(_text(key_log) if key_log is not None else "")
    where = site.label or site.interface
    argv = [
        _tool("editcap"),
        "--capture-comment",
        f"iotsecbench run {run_id}: captured on {where}. The run's "
        f"{'MQTT' if site.mqtt else 'frames (docs/wire-format.md)'} travel on tcp port "
        f"{site.tcp_port}; tshark {site.decode_hint()} decodes it (Wireshark: Decode As).",
    ]
    tls_secrets = directory / f".{KEY_LOG_FILE}.tls"
    if tls_lines:
        tls_secrets.unlink(missing_ok=True)
        descriptor = os.open(tls_secrets, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write("\n".join(tls_lines) + "\n")
        argv += ["--inject-secrets", f"tls,{tls_secrets}"]
    if session_lines and capture.packets:
        argv += ["-a", "1:" + "\n".join(session_lines)]
    final = directory / CAPTURE_FILE
    temporary = directory / f".{CAPTURE_FILE}.tmp"
    temporary.unlink(missing_ok=True)
    try:
        result = subprocess.run(
            [*argv, str(capture.raw_path), str(temporary)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode != 0:
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            raise EnvironmentProblem(
                f"--capture: editcap failed ({lines[-1] if lines else result.returncode})"
            )
        os.chmod(temporary, 0o600)
        os.replace(temporary, final)
    finally:
        tls_secrets.unlink(missing_ok=True)
        temporary.unlink(missing_ok=True)
    capture.raw_path.unlink(missing_ok=True)
    return CaptureSummary(
        file=str(final.relative_to(results_dir)),
        interface=where,
        capture_filter=site.capture_filter,
        tcp_port=site.tcp_port,
        tls=site.tls,
        packets=capture.packets,
        dropped_packets=capture.dropped_packets,
        tls_secret_lines=len(tls_lines),
        session_key_lines=len(session_lines) if capture.packets else 0,
        tool=tool,
    )
