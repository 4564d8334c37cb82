"""The fleet agent (fleet.c): one process drives many devices over epoll, each with its own
TCP connection, TLS session, credentials, topics and payload filler, in both roles, writing
the per-device agents' records into each device's files (docs/scale.md, "The fleet agent").

Which fleets it runs (``selects``): a run of more than one device on the ``mqtt`` transport
over loopback, a configuration without a payload scheme (plain MQTT or TLS alone), on a stack
it is built for (``FLEET_STACKS``: openssl, mbedtls, wolfssl), without ``--keylog``, unless the spec
asks for one process per agent (``fleet_agent = "processes"``). Everything else runs the
per-device agents as before.

Programs: ``iotsb-fleet-plain`` (no TLS library) and ``iotsb-fleet-<stack>``, cached as the
per-device agents are (``cached_program``), from the sources beside this file.
"""

from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

from iotsecbench.agents.native import (
    CFLAGS,
    SOURCE_DIR,
    Build,
    cached_program,
    debian_library,
    program_fingerprint,
)
from iotsecbench.errors import EnvironmentProblem
from iotsecbench.security import resolve_configuration

# The host stack (Debian's OpenSSL 3.0, the library the Python agents' ssl loads), the
# ESP-IDF family's (Debian's mbedTLS 2.28: TLS 1.2 only) and Debian's wolfSSL 5.5 (TLS 1.2
# and 1.3).
FLEET_STACKS = ("openssl", "mbedtls", "wolfssl")
_SOURCES = (
    "fleet.c",
    "fleet_io.c",
    "fleet_link.c",
    "mqtt.c",
    "filler.c",
    "records.c",
    "transcript.c",
)
# Per stack: its C glue, what it links, the header that says its library is installed.
_TLS = {
    "openssl": (("fleet_tls_openssl.c",), ("-lssl", "-lcrypto"), "openssl/ssl.h"),
    # mbedTLS's archives with calloc/free renamed to heap.c's, as the per-device agent's
    "mbedtls": (("fleet_tls_mbedtls.c", "mbedtls_client.c", "heap.c"), (), "mbedtls/ssl.h"),
    # Debian's static archive, as the per-device agent links it
    "wolfssl": (("fleet_tls_wolfssl.c", "wolfssl_client.c"), (), "wolfssl/ssl.h"),
}
PROCESSES = "processes"  # the spec's fleet_agent value for one process per agent
AUTO = "auto"


def selects(
    stack: str,
    configuration: str,
    transport: str,
    *,
    loopback: bool,
    devices: int,
    choice: str,
    keylog: bool = False,
) -> bool:
    """Whether a run of these factors is driven by the fleet agent (the module's rule)."""
    if choice == PROCESSES or devices < 2 or keylog or not loopback:
        return False
    if transport != "mqtt" or stack not in FLEET_STACKS:
        return False
    return resolve_configuration(configuration).scheme.name == "none"


def build_of(stack: str, configuration: str) -> str:
    """``plain`` for plain MQTT (no TLS library linked), else the stack."""
    plain = resolve_configuration(configuration).transport == "plain"
    return "plain" if plain else stack


def _archives(build: str) -> tuple[Path, ...]:
    """Debian's archives of the stack, as the per-device agent of its TLS build links them."""
    per_device = {"mbedtls": "mbedtls-tls", "wolfssl": "wolfssl-tls"}.get(build)
    return Build.named(per_device).archives if per_device is not None else ()


def _commands(build: str, out: Path, scratch: Path) -> list[list[str]]:
    tls_sources, libraries, _header = _TLS.get(build, (("fleet_tls_none.c",), (), ""))
    sources = [str(SOURCE_DIR / name) for name in (*_SOURCES, *tls_sources)]
    commands, linked = debian_library(build, _archives(build), scratch)
    commands.append(
        ["gcc", *CFLAGS, *sources, *libraries, *linked, "-lcjson", "-lm", "-lpthread",
         "-o", str(out)]
    )  # fmt: skip
    return commands


@functools.cache  # a process runs one checkout: its sources and libraries stay as they were
def _fingerprint(build: str) -> str:
    commands = _commands(build, Path("out"), Path("lib"))
    return program_fingerprint(f"fleet/{build}", _archives(build), commands)


def problem(build: str) -> str | None:
    """Why the fleet agent of ``build`` cannot be made here (one line), or None."""
    headers = ["cjson/cJSON.h", *([_TLS[build][2]] if build in _TLS else [])]
    missing = [h for h in headers if not Path("/usr/include", h).exists()]
    if shutil.which("gcc") is None:
        missing.insert(0, "gcc")
    if not missing:
        return None
    packages = "gcc libcjson-dev" + {
        "openssl": " libssl-dev",
        "mbedtls": " libmbedtls-dev",
        "wolfssl": " libwolfssl-dev",
    }.get(build, "")
    return (
        f"the fleet agent ({build}) cannot be built: {', '.join(missing)} missing "
        f"(apt-get install {packages}, or run scripts/setup.sh)"
    )


def binary(build: str) -> Path:
    """The fleet agent of ``build`` (``plain`` or a stack), built now if needed."""
    why = problem(build)
    if why is not None:
        raise EnvironmentProblem(why)
    return cached_program(
        f"iotsb-fleet-{build}",
        _fingerprint(build),
        lambda out, scratch: _commands(build, out, scratch),
        f"the fleet agent ({build})",
    )


def processes(devices: int) -> int:
    """How many fleet processes a run of ``devices`` starts: one per core, never more than
    devices (the number follows the machine, not the fleet)."""
    return max(1, min(devices, os.cpu_count() or 1))


def build_all() -> int:
    """``scripts/setup.sh``: every fleet agent this machine can build; 3 when one cannot."""
    status = 0
    for build in ("plain", *FLEET_STACKS):
        try:
            print(f"setup: fleet agent {build}: {binary(build)}")
        except EnvironmentProblem as error:
            print(f"setup: warning: {error}")
            status = 3
    return status
