"""The native device agent (agent.c and its parts): built from the sources beside this file
with Debian's gcc against Debian's mbedTLS 2.28 and wolfSSL 5.5, one program per *build*:

* ``plain``   — no TLS library linked: the MQTT client alone (plain configurations);
* ``mbedtls`` — mbedTLS's static archives, with their ``calloc``/``free`` renamed to the
  counting allocator of heap.c (Debian builds mbedTLS without ``MBEDTLS_PLATFORM_MEMORY``, so
  its ``mbedtls_platform_set_calloc_free`` hook does not exist; the renaming is that hook,
  applied at link time, and counts only the stack's own allocations);
* ``wolfssl`` — wolfSSL's static archive; its heap is counted through ``wolfSSL_SetAllocators``.

Programs are cached under ``$XDG_CACHE_HOME/iotsecbench/native/<hash>/`` (``~/.cache``), the
hash covering the sources, the commands and the libraries' versions, so an edit or an upgrade
rebuilds and a checkout never runs a stale agent. ``scripts/setup.sh`` builds all three
(``python -m iotsecbench.agents.native``); a run builds what is missing. A missing compiler or
library is one line and exit 3 (``EnvironmentProblem``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.errors import EnvironmentProblem

SOURCE_DIR = Path(__file__).resolve().parent
COMMON_SOURCES = (
    "agent.c",
    "state.c",
    "connection.c",
    "roles.c",
    "records.c",
    "sampler.c",
    "heap.c",
    "mqtt.c",
    "filler.c",
    "transcript.c",
)
CFLAGS = (
    "-O2",
    "-std=gnu11",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-format-zero-length",
)
LIBRARY_DIR = Path("/usr/lib/x86_64-linux-gnu")
BUILDS = ("plain", "mbedtls", "wolfssl")
# What each build needs from Debian (the one line a missing piece prints).
PACKAGES = {
    "plain": ("gcc", "libcjson-dev"),
    "mbedtls": ("gcc", "libcjson-dev", "libmbedtls-dev", "binutils"),
    "wolfssl": ("gcc", "libcjson-dev", "libwolfssl-dev"),
}
_HEADERS = {
    "plain": ("cjson/cJSON.h",),
    "mbedtls": ("cjson/cJSON.h", "mbedtls/ssl.h"),
    "wolfssl": ("cjson/cJSON.h", "wolfssl/ssl.h"),
}
_ARCHIVES = {
    "plain": (),
    "mbedtls": ("libmbedtls.a", "libmbedx509.a", "libmbedcrypto.a"),
    "wolfssl": ("libwolfssl.a",),
}


@dataclass(frozen=True)
class Footprint:
    """``size`` of a built agent (x86-64 code of this host, Debian's library builds)."""

    text_bytes: int
    data_bytes: int
    bss_bytes: int

    @property
    def flash_bytes(self) -> int:
        """What a device keeps in flash: code and initialised data."""
        return self.text_bytes + self.data_bytes

    @property
    def static_ram_bytes(self) -> int:
        """What a device reserves in RAM before its heap: initialised and zeroed data."""
        return self.data_bytes + self.bss_bytes


def build_for(stack: str, tls: bool) -> str:
    """The build a run needs: a plain configuration runs the plain build whatever the stack
    (its footprint is the MQTT client alone), a TLS one the stack's."""
    return stack if tls else "plain"


def problem(build: str) -> str | None:
    """Why ``build`` cannot be made on this machine (one line naming the Debian packages), or
    None when it can."""
    missing = []
    if shutil.which("gcc") is None:
        missing.append("gcc")
    if build == "mbedtls" and shutil.which("objcopy") is None:
        missing.append("objcopy")
    for header in _HEADERS[build]:
        if not Path("/usr/include", header).exists():
            missing.append(header)
    for archive in _ARCHIVES[build]:
        if not (LIBRARY_DIR / archive).exists():
            missing.append(archive)
    if not missing:
        return None
    return (
        f"the native {build} agent cannot be built: {', '.join(missing)} missing "
        f"(apt-get install {' '.join(PACKAGES[build])}, or run scripts/setup.sh)"
    )


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iotsecbench" / "native"


def _commands(build: str, out: Path, archives: Path) -> list[list[str]]:
    """What builds ``build`` into ``out``: for mbedTLS the renamed archives first."""
    sources = [str(SOURCE_DIR / name) for name in (*COMMON_SOURCES, f"tls_{build}.c")]
    if build == "plain":
        sources[-1] = str(SOURCE_DIR / "tls_none.c")
    libraries: list[str] = []
    commands: list[list[str]] = []
    if build == "mbedtls":
        for archive in _ARCHIVES["mbedtls"]:
            commands.append(
                [
                    "objcopy",
                    "--redefine-sym=calloc=iotsb_tls_calloc",
                    "--redefine-sym=free=iotsb_tls_free",
                    str(LIBRARY_DIR / archive),
                    str(archives / archive),
                ]
            )
        libraries = [f"-L{archives}", "-lmbedtls", "-lmbedx509", "-lmbedcrypto"]
    elif build == "wolfssl":
        libraries = [str(LIBRARY_DIR / "libwolfssl.a")]
    commands.append(
        ["gcc", *CFLAGS, *sources, *libraries, "-lcjson", "-lm", "-lpthread", "-o", str(out)]
    )
    return commands


@functools.cache  # a process runs one checkout: its sources and libraries stay as they were
def _fingerprint(build: str) -> str:
    digest = hashlib.sha256(build.encode())
    for path in sorted(SOURCE_DIR.glob("*.[ch]")):
        digest.update(path.name.encode() + path.read_bytes())
    for archive in _ARCHIVES[build]:
        stat = (LIBRARY_DIR / archive).stat()  # a library upgrade rebuilds
        digest.update(f"{archive}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update(repr(_commands(build, Path("out"), Path("lib"))).encode())
    return digest.hexdigest()[:16]


def binary(build: str) -> Path:
    """The agent program of ``build``, built now if this checkout has not built it yet."""
    if build not in BUILDS:
        raise ValueError(f"unknown native build {build!r}")
    why = problem(build)
    if why is not None:
        raise EnvironmentProblem(why)
    directory = _cache_root() / _fingerprint(build)
    program = directory / f"iotsb-agent-{build}"
    if program.exists():
        return program
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        partial = Path(scratch) / program.name
        for command in _commands(build, partial, Path(scratch)):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                lines = (result.stderr or result.stdout).strip().splitlines()
                raise EnvironmentProblem(
                    f"building the native {build} agent failed: {lines[-1] if lines else '?'}"
                )
        os.replace(partial, program)  # atomic: a concurrent run sees all or nothing
    return program


@functools.cache
def footprint(program: Path) -> Footprint:
    """text, data and bss of ``program`` (binutils ``size``, Berkeley format)."""
    result = subprocess.run(["size", str(program)], capture_output=True, text=True, check=False)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or len(lines) < 2:
        raise EnvironmentProblem(f"size {program} failed: {result.stderr.strip() or '?'}")
    text, data, bss = (int(value) for value in lines[1].split()[:3])
    return Footprint(text, data, bss)


def main() -> int:
    """Build every native agent this machine can build (``scripts/setup.sh``)."""
    status = 0
    for build in BUILDS:
        try:
            program = binary(build)
        except EnvironmentProblem as error:
            print(f"setup: warning: {error}", file=sys.stderr)
            status = 3
            continue
        size = footprint(program)
        print(f"setup: native agent {build}: {program} (text {size.text_bytes} B)")
    return status
