"""The native device agent (agent.c and its parts): built from the sources beside this file
with Debian's gcc against Debian's mbedTLS 2.28 and wolfSSL 5.5 (stacks ``mbedtls``,
``wolfssl``), or against a library built here from registry source (``wolfssl-5.9``:
``libraries``), one program per *build* — a stack and the parts a configuration needs, so each
program's size is that configuration's static footprint:

* ``plain`` — no cryptographic library linked: the MQTT client alone (plain configurations);
* ``<stack>-tls`` — the TLS client (tls_<family>.c, the family being mbedtls or wolfssl);
* ``<stack>-scheme`` — the payload schemes (scheme.c, exchange.c) on the stack's own crypto
  (crypto_<family>.c), over plain MQTT;
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from iotsecbench.agents.native import libraries
from iotsecbench.errors import DataError, EnvironmentProblem
from iotsecbench.files import exclusive
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
DEBIAN_STACKS = ("mbedtls", "wolfssl")
STACKS = (*DEBIAN_STACKS, *libraries.LIBRARIES)
BUILDS = (PLAIN, *(f"{stack}-{parts}" for stack in STACKS for parts in _PARTS))
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
        stack = max((s for s in STACKS if name.startswith(f"{s}-")), key=len)
        parts = name.removeprefix(f"{stack}-").split("-")
        return cls(stack, "tls" in parts, "scheme" in parts)

    @property
    def source_library(self) -> libraries.SourceLibrary | None:
        """The library built here from registry source, or None (Debian's, or none)."""
        return libraries.LIBRARIES.get(self.stack)

    @property
    def family(self) -> str:
        """Whose C glue the program compiles: tls_<family>.c, crypto_<family>.c, …"""
        library = self.source_library
        return library.family if library is not None else self.stack

    @property
    def archives(self) -> tuple[Path, ...]:
        """The static archives the program links."""
        library = self.source_library
        if library is not None:
            return (libraries.archive_path(library),)
        if self.stack == "mbedtls" and not self.tls:
            return (LIBRARY_DIR / "libmbedcrypto.a",)
        return tuple(LIBRARY_DIR / name for name in _ARCHIVES[self.stack])


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
    """Why ``build`` cannot be made on this machine (one line naming the Debian packages or
    the library build to run), or None when it can."""
    parts = Build.named(build)
    library = parts.source_library
    missing = []
    if shutil.which("gcc") is None:
        missing.append("gcc")
    if parts.stack == "mbedtls" and shutil.which("objcopy") is None:
        missing.append("objcopy")
    headers = _HEADERS["none"] if library is not None else _HEADERS[parts.stack]
    for header in headers:
        if not Path("/usr/include", header).exists():
            missing.append(header)
    if library is None:
        missing += [archive.name for archive in parts.archives if not archive.exists()]
    if missing:
        return (
            f"the native {build} agent cannot be built: {', '.join(missing)} missing "
            f"(apt-get install {' '.join(PACKAGES['none' if library else parts.stack])}, "
            "or run scripts/setup.sh)"
        )
    return libraries.problem(library) if library is not None else None


def provenance(build: str) -> str:
    """Where ``build``'s library comes from, for ``doctor``."""
    library = Build.named(build).source_library
    if library is None:
        return "gcc and the Debian libraries are there"
    return f"{library.description}, built in {libraries.prefix(library)}"


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "iotsecbench" / "native"


def _commands(build: str, out: Path, archives: Path) -> list[list[str]]:
    """What builds ``build`` into ``out``: for mbedTLS the renamed archives first."""
    parts = Build.named(build)
    family = parts.family
    names = [
        *COMMON_SOURCES,
        f"stack_{family}.c",
        f"tls_{family if parts.tls else 'none'}.c",
        *((f"{family}_client.c",) if parts.tls else ()),  # shared with the fleet agent
        *((*SCHEME_SOURCES, f"crypto_{family}.c") if parts.scheme else ("scheme_none.c",)),
    ]
    sources = [str(SOURCE_DIR / name) for name in names]
    linked: list[str] = []
    flags: list[str] = []
    commands: list[list[str]] = []
    library = parts.source_library
    if library is not None:  # its headers, its configuration and its name in the records
        flags = [
            f"-I{libraries.prefix(library) / 'include'}",
            *(f"-D{define}" for define in library.defines),
            f'-DIOTSB_STACK_NAME="{library.stack}"',
        ]
        linked = [str(libraries.archive_path(library))]
    else:
        commands, linked = debian_library(parts.stack, parts.archives, archives)
    commands.append(
        ["gcc", *CFLAGS, *flags, *sources, *linked, "-lcjson", "-lm", "-lpthread", "-o", str(out)]
    )
    return commands


def debian_library(
    stack: str, archives: Sequence[Path], scratch: Path
) -> tuple[list[list[str]], list[str]]:
    """How a program links Debian's build of ``stack`` (the commands to run first, the link
    arguments): mbedTLS's archives copied into ``scratch`` with calloc/free renamed to
    heap.c's, so its heap is counted; wolfSSL's static archive as it is; nothing else."""
    if stack == "mbedtls":
        commands = [
            ["objcopy", "--redefine-sym=calloc=iotsb_tls_calloc",
             "--redefine-sym=free=iotsb_tls_free", str(archive), str(scratch / archive.name)]
            for archive in archives
        ]  # fmt: skip
        return commands, [f"-L{scratch}", *(f"-l{a.name[3:-2]}" for a in archives)]
    if stack == "wolfssl":
        return [], [str(archive) for archive in archives]
    return [], []


def program_fingerprint(label: str, archives: Sequence[Path], commands: list[list[str]]) -> str:
    """The cache key of a program built from this folder's C: its label, every source, the
    archives it links (a library upgrade rebuilds it; a source build: its hashed path) and
    its build commands."""
    digest = hashlib.sha256(label.encode())
    for path in sorted(SOURCE_DIR.glob("*.[ch]")):
        digest.update(path.name.encode() + path.read_bytes())
    for archive in archives:
        stat = archive.stat()
        digest.update(f"{archive}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    digest.update(repr(commands).encode())
    return digest.hexdigest()[:16]


@functools.cache  # a process runs one checkout: its sources and libraries stay as they were
def _fingerprint(build: str) -> str:
    commands = _commands(build, Path("out"), Path("lib"))
    return program_fingerprint(build, Build.named(build).archives, commands)


def binary(build: str) -> Path:
    """The agent program of ``build``, built now if this checkout has not built it yet."""
    why = problem(build)
    if why is not None:
        raise EnvironmentProblem(why)
    return cached_program(
        f"iotsb-agent-{build}",
        _fingerprint(build),
        lambda out, scratch: _commands(build, out, scratch),
        f"the native {build} agent",
    )


def cached_program(
    name: str,
    fingerprint: str,
    commands: Callable[[Path, Path], list[list[str]]],
    what: str,
) -> Path:
    """Program ``name`` in the cache directory ``fingerprint``, built by ``commands(out,
    scratch)`` unless a run of this checkout already built it; a failed build is exit 3."""
    directory = _cache_root() / fingerprint
    program = directory / name
    if program.exists():
        return program
    with exclusive(directory / ".lock"):  # a concurrent first use builds it once
        if not program.exists():
            _build(program, commands, what)
    return program


def _build(program: Path, commands: Callable[[Path, Path], list[list[str]]], what: str) -> None:
    with tempfile.TemporaryDirectory(dir=program.parent) as scratch:
        partial = Path(scratch) / program.name
        for command in commands(partial, Path(scratch)):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                lines = (result.stderr or result.stdout).strip().splitlines()
                raise EnvironmentProblem(f"building {what} failed: {lines[-1] if lines else '?'}")
        os.replace(partial, program)  # atomic: a concurrent run sees all or nothing


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
    """Build every native agent this machine can build (``scripts/setup.sh``): first the
    libraries built from registry source, then the programs; exit 3 when one cannot be built."""
    status = 0
    unbuilt: set[str] = set()
    for library in libraries.LIBRARIES.values():
        try:
            libraries.build(library)
        except (EnvironmentProblem, DataError) as error:
            print(f"setup: warning: --stack {library.stack} is refused: {error}", file=sys.stderr)
            unbuilt.add(library.stack)
            status = 3
    for build in BUILDS:
        if Build.named(build).stack in unbuilt:
            continue
        try:
            program = binary(build)
        except EnvironmentProblem as error:
            print(f"setup: warning: {error}", file=sys.stderr)
            status = 3
            continue
        size = footprint(program)
        print(f"setup: native agent {build}: {program} (text {size.text_bytes} B)")
    return status
