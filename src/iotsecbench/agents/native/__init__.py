"""The native device agent (agent.c and its parts): built from the sources beside this file
with Debian's gcc against Debian's mbedTLS 2.28 and wolfSSL 5.5, one program per *build* — a
stack and the parts a configuration needs, so each program's size is that configuration's
static footprint:

* ``plain`` — no cryptographic library linked: the MQTT client alone (plain configurations);
* ``<stack>-tls`` — the TLS client (tls_<stack>.c) on ``mbedtls`` or ``wolfssl``;
* ``<stack>-scheme`` — the payload schemes (scheme.c, exchange.c) on the stack's own crypto
  (crypto_<stack>.c), over plain MQTT;
* ``<stack>-tls-scheme`` — both.

mbedTLS is linked from its static archives with their ``calloc``/``free`` renamed to the
counting allocator of heap.c (Debian builds mbedTLS without ``MBEDTLS_PLATFORM_MEMORY``, so its
``mbedtls_platform_set_calloc_free`` hook does not exist; the renaming is that hook, applied at
link time, and counts only the stack's own allocations); wolfSSL from its static archive, its
heap counted through ``wolfSSL_SetAllocators``.

Programs are cached under ``$XDG_CACHE_HOME/iotsecbench/native/<hash>/`` (``~/.cache``), the
hash covering the sources, the commands and the libraries' versions, so an edit or an upgrade
rebuilds and a checkout never runs a stale agent. ``scripts/setup.sh`` builds them all
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
from iotsecbench.security import resolve_configuration

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
    "tcp.c",
)
SCHEME_SOURCES = ("scheme.c", "exchange.c")
CFLAGS = (
    "-O2",
    "-std=gnu11",
    "-Wall",
    "-Wextra",
    "-Wno-unused-parameter",
    "-Wno-format-zero-length",
)
LIBRARY_DIR = Path("/usr/lib/x86_64-linux-gnu")
PLAIN = "plain"
_PARTS = ("tls", "scheme", "tls-scheme")
BUILDS = (PLAIN, *(f"{stack}-{parts}" for stack in ("mbedtls", "wolfssl") for parts in _PARTS))
# What each stack needs from Debian (the one line a missing piece prints).
PACKAGES = {
    "none": ("gcc", "libcjson-dev"),
    "mbedtls": ("gcc", "libcjson-dev", "libmbedtls-dev", "binutils"),
    "wolfssl": ("gcc", "libcjson-dev", "libwolfssl-dev"),
}
_HEADERS = {
    "none": ("cjson/cJSON.h",),
    "mbedtls": ("cjson/cJSON.h", "mbedtls/ssl.h"),
    "wolfssl": ("cjson/cJSON.h", "wolfssl/ssl.h"),
}
# The payload schemes need mbedTLS's crypto archive alone; TLS all three.
_ARCHIVES = {
    "none": (),
    "mbedtls": ("libmbedtls.a", "libmbedx509.a", "libmbedcrypto.a"),
    "wolfssl": ("libwolfssl.a",),
}


@dataclass(frozen=True)
class Build:
    """What one program links: a stack ("none" for plain) and the parts it carries."""

    stack: str
    tls: bool
    scheme: bool

    @classmethod
    def named(cls, name: str) -> Build:
        if name not in BUILDS:
            raise ValueError(f"unknown native build {name!r}")
        if name == PLAIN:
            return cls("none", False, False)
        stack, _, parts = name.partition("-")
        return cls(stack, "tls" in parts.split("-"), "scheme" in parts.split("-"))

    @property
    def archives(self) -> tuple[str, ...]:
        if self.stack == "mbedtls" and not self.tls:
            return ("libmbedcrypto.a",)
        return _ARCHIVES[self.stack]


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


def build_for(stack: str, *, tls: bool, scheme: bool) -> str:
    """The build a run needs: a plain configuration runs the plain build whatever the stack
    (its footprint is the MQTT client alone), others the stack's build with TLS, the payload
    scheme or both."""
    if not (tls or scheme):
        return PLAIN
    return f"{stack}-{'-'.join(part for part, on in (('tls', tls), ('scheme', scheme)) if on)}"


def build_of(stack: str, configuration: str) -> str:
    """The build that runs security configuration ``configuration`` on ``stack``."""
    resolved = resolve_configuration(configuration)
    return build_for(
        stack, tls=resolved.transport != "plain", scheme=resolved.scheme.name != "none"
    )


def problem(build: str) -> str | None:
    """Why ``build`` cannot be made on this machine (one line naming the Debian packages), or
    None when it can."""
    parts = Build.named(build)
    missing = []
    if shutil.which("gcc") is None:
        missing.append("gcc")
    if parts.stack == "mbedtls" and shutil.which("objcopy") is None:
        missing.append("objcopy")
    for header in _HEADERS[parts.stack]:
        if not Path("/usr/include", header).exists():
            missing.append(header)
    for archive in parts.archives:
        if not (LIBRARY_DIR / archive).exists():
            missing.append(archive)
    if not missing:
        return None
    return (
        f"the native {build} agent cannot be built: {', '.join(missing)} missing "
        f"(apt-get install {' '.join(PACKAGES[parts.stack])}, or run scripts/setup.sh)"
    )


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iotsecbench" / "native"


def _commands(build: str, out: Path, archives: Path) -> list[list[str]]:
    """What builds ``build`` into ``out``: for mbedTLS the renamed archives first."""
    parts = Build.named(build)
    names = [
        *COMMON_SOURCES,
        f"stack_{parts.stack}.c",
        f"tls_{parts.stack if parts.tls else 'none'}.c",
        *((*SCHEME_SOURCES, f"crypto_{parts.stack}.c") if parts.scheme else ("scheme_none.c",)),
    ]
    sources = [str(SOURCE_DIR / name) for name in names]
    libraries: list[str] = []
    commands: list[list[str]] = []
    if parts.stack == "mbedtls":
        for archive in parts.archives:
            commands.append(
                [
                    "objcopy",
                    "--redefine-sym=calloc=iotsb_tls_calloc",
                    "--redefine-sym=free=iotsb_tls_free",
                    str(LIBRARY_DIR / archive),
                    str(archives / archive),
                ]
            )
        libraries = [f"-L{archives}", *(f"-l{a[3:-2]}" for a in parts.archives)]
    elif parts.stack == "wolfssl":
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
    for archive in Build.named(build).archives:
        stat = (LIBRARY_DIR / archive).stat()  # a library upgrade rebuilds
        digest.update(f"{archive}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update(repr(_commands(build, Path("out"), Path("lib"))).encode())
    return digest.hexdigest()[:16]


def binary(build: str) -> Path:
    """The agent program of ``build``, built now if this checkout has not built it yet."""
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
