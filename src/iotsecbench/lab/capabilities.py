"""What this machine can and cannot do for iotsecbench: one ``Check`` per capability, each
saying what works and what will be skipped. Nothing here changes the machine. These are the
lab's own checks (and those of the libraries it loads); ``workflows.doctor`` gathers them
with the rooms' that the lab may not import (the virtual MCUs, the native agents)."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.errors import MissingBinaryError


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str  # what was found
    consequence: str = ""  # what is skipped or how to fix it when not ok
    required: bool = False  # a failed required check stops `run`


def _run(argv: list[str], timeout: float = 10) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def check_mosquitto() -> Check:
    from iotsecbench.lab.broker import mosquitto_binary, mosquitto_version

    try:
        binary = mosquitto_binary()
    except MissingBinaryError as error:
        return Check("mosquitto", False, "not found", str(error), required=True)
    return Check("mosquitto", True, f"{mosquitto_version(binary)} at {binary}", required=True)


def check_mosquitto_passwd() -> Check:
    found = shutil.which("mosquitto_passwd")
    return Check(
        "mosquitto_passwd",
        bool(found),
        found or "not found",
        "install the Debian package 'mosquitto'",
        required=True,
    )


def check_openssl() -> Check:
    return Check(
        "OpenSSL (Python ssl)",
        True,
        f"{ssl.OPENSSL_VERSION}; TLS 1.3: {'yes' if ssl.HAS_TLSv1_3 else 'no'}",
    )


def check_python() -> Check:
    from importlib.metadata import version

    return Check(
        "Python",
        sys.version_info >= (3, 11),
        f"{sys.version.split()[0]}, paho-mqtt {version('paho-mqtt')}, "
        f"cryptography {version('cryptography')}",
        "iotsecbench needs Python ≥ 3.11",
        required=True,
    )


def check_native_aead() -> Check:
    from iotsecbench.security.schemes import evp

    if evp.AVAILABLE:
        return Check(
            "AEAD framing in C",
            True,
            f"built; AES-GCM, AES-CCM and ChaCha20-Poly1305 seal through {evp.openssl_version()}",
        )
    return Check(
        "AEAD framing in C",
        False,
        "not built: AES-GCM, AES-CCM and ChaCha20-Poly1305 run through pyca (framing in Python, "
        "~1.5x slower at 4 KiB; results say so in their provenance)",
        evp.MISSING_REASON or "",
    )


def check_lightweight_ciphers() -> Check:
    from iotsecbench.security.schemes import lightweight

    if lightweight.AVAILABLE:
        return Check(
            "Lightweight ciphers in C",
            True,
            "built; SPECK128, SIMON128, Ascon-AEAD128 (NIST SP 800-232), Salsa20 + BLAKE2b and "
            "table-free AES run in iotsecbench's C",
        )
    return Check(
        "Lightweight ciphers in C",
        False,
        "not built: the speck/simon schemes run pure Python (~100x slower; their provenance "
        "says so), salsa20-*-blake2b two libraries; ascon-aead128 and *-tablefree are not "
        "offered",
        "install gcc and python3-dev, then rerun scripts/setup.sh",
    )


def check_post_quantum() -> Check:
    from iotsecbench.security import pq_openssl

    problem = pq_openssl.problem()
    if problem is None:
        return Check(
            "Post-quantum TLS",
            True,
            f"{pq_openssl.library_version()} in {pq_openssl.prefix()}: stack openssl-3.5 "
            "(ML-KEM groups, ML-DSA certificates), the broker of stack wolfssl-5.9 and the "
            "mlkem512 key establishment",
        )
    return Check(
        "Post-quantum TLS",
        False,
        "OpenSSL 3.5 is not built: stacks openssl-3.5 and wolfssl-5.9 and mlkem512-* are refused "
        "(ML-KEM-768/1024 and ML-DSA payload schemes work through cryptography)",
        "python -m iotsecbench.security.pq_openssl (or scripts/setup.sh)",
    )


def check_fleet() -> Check:
    from iotsecbench.lab.limits import fleet_limit

    python, native = fleet_limit(), fleet_limit(native=True)
    driven = fleet_limit(fleet_agent=True)
    backend = fleet_limit(fleet_agent=True, connections=1)
    return Check(
        "Fleets",
        python.devices >= 2,
        f"up to {python.devices} devices per run with the Python agents ({native.devices} "
        f"native), limited by {python.reason}; {driven.devices} with the fleet agent "
        f"(limited by {driven.reason.split(':')[0]}), {backend.devices} with --receivers "
        f"backend (limited by {backend.reason.split(':')[0]})",
        "run --devices needs at least two",
    )


def check_dask() -> Check:
    try:
        import distributed
    except ImportError:
        return Check(
            "Dask sweeps",
            False,
            "dask.distributed is not installed: run --executor dask is refused",
            "pip install 'iotsecbench[cluster]' (or scripts/setup.sh --dev)",
        )
    return Check(
        "Dask sweeps",
        True,
        f"dask.distributed {distributed.__version__}: run --executor dask (doctor --scheduler "
        "ADDRESS checks a cluster's workers)",
    )


def check_tls_recorder() -> Check:
    from iotsecbench.security.tls import recorder_problem

    problem = recorder_problem()
    if problem is None:
        return Check(
            "TLS handshake recorder in C", True, "works; nothing runs in Python inside handshakes"
        )
    return Check(
        "TLS handshake recorder in C",
        False,
        problem,
        "Python's ssl hook is used: measured client TLS CPU includes ~0.15 ms of it "
        "(docs/tls.md); install gcc, python3-dev and libssl-dev, then rerun scripts/setup.sh",
    )


def check_capture() -> Check:
    from iotsecbench.lab.capture import capture_problem, tool_version

    problem = capture_problem()
    if problem is None:
        return Check(
            "packet capture (run --capture)",
            True,
            f"{tool_version()} captures here; editcap embeds the TLS secrets",
        )
    return Check(
        "packet capture (run --capture)", False, str(problem), "--capture is refused (exit 3)"
    )


def check_root() -> Check:
    root = os.geteuid() == 0
    return Check(
        "privileges",
        root,
        "root" if root else f"uid {os.geteuid()} (not root)",
        "network namespaces, shaping and scheduler tracing will be skipped",
    )


def check_netns() -> Check:
    from iotsecbench.lab.network import support_problem

    problem = support_problem()  # creates and deletes a probe namespace when root
    if problem is not None:
        return Check(
            "network namespaces",
            False,
            problem,
            "--network profiles will be refused (exit 3); loopback runs work",
        )
    return Check("network namespaces", True, "root; ip, tc and ethtool found; netns works")


def check_leftover_namespaces() -> Check:
    from iotsecbench.lab.network import leftover_namespaces

    leftovers = leftover_namespaces()
    return Check(
        "leftover namespaces",
        not leftovers,
        f"{len(leftovers)} from runs whose runner died" if leftovers else "none",
        "remove them with `iotsecbench doctor --cleanup`",
    )


def check_tc() -> Check:
    # Rate limits are tbf qdiscs; offloads are turned off with ethtool (docs/network.md).
    tc = shutil.which("tc") or shutil.which("tc", path="/usr/sbin:/sbin")
    ethtool = shutil.which("ethtool") or shutil.which("ethtool", path="/usr/sbin:/sbin")
    detail = f"tc: {tc or 'missing'}, ethtool: {ethtool or 'missing'}"
    return Check(
        "link shaping (tc, ethtool)",
        bool(tc and ethtool),
        detail,
        "install iproute2 and ethtool (scripts/setup.sh) for shaped links",
    )


def check_tracefs() -> Check:
    from iotsecbench.measure.tracefs import TRACEFS, tracing_problem

    problem = tracing_problem(mount=False)
    return Check(
        "tracefs (scheduler traces)",
        problem is None,
        f"{TRACEFS}: sched, net and tcp tracepoints, mono clock" if problem is None else problem,
        "bench handshake --trace (the iotst study) cannot run",
    )


def check_perf() -> Check:
    perf = shutil.which("perf")
    if not perf:
        return Check("perf", False, "not found", "install linux-perf for CPU counters")
    result = _run([perf, "stat", "-x,", "-e", "task-clock", "true"])
    works = result is not None and result.returncode == 0
    return Check(
        "perf",
        works,
        f"{perf} ({'software events work' if works else 'not usable'})",
        "perf-based counters will be skipped",
    )


def check_cgroups() -> Check:
    v1 = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists()
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    kind = "v1 cpu controller" if v1 else "v2" if v2 else "none found"
    return Check(
        "cgroups (CPU limits)",
        v1,
        kind,
        "bench handshake --clock needs the cgroup v1 CPU controller (cpu.cfs_quota_us)",
    )


def check_chromium() -> Check:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return Check(
        "Chromium (report tests)",
        bool(found),
        found or "not found",
        "the HTML report's browser test will be skipped",
    )


def check_disk(directory: Path) -> Check:
    usage = shutil.disk_usage(directory if directory.exists() else Path.cwd())
    free_gib = usage.free / 2**30
    return Check(
        "disk space",
        free_gib > 1,
        f"{free_gib:.1f} GiB free in {directory}",
        "free some space: a long experiment writes hundreds of MB",
    )
