"""Virtual microcontrollers (docs/virtual-mcu.md): the payload ciphers cross-compiled for the
devices' instruction sets (RV32IMC for the ESP32-C3, Cortex-M4 for the nRF52840) with Debian's
toolchains and picolibc, run bare-metal under QEMU with exact instruction counting.

``targets`` (the machines), ``primitives`` (what a firmware build holds), ``sources`` (third-party
C fetched from a registry at build time), ``build`` (cross-compiling, cached by the build's
hash), ``run`` (QEMU and the request/answer files), ``count`` (schemes counted and checked
against the host's bytes), ``operations`` (the handshakes' public-key operations)."""

from __future__ import annotations

from typing import Any

from iotsecbench.vmcu.build import (
    Firmware,
    LinkedLibrary,
    compiler_version,
    firmware,
    missing_tools,
    require_tools,
)
from iotsecbench.vmcu.count import SchemeCount, count_scheme
from iotsecbench.vmcu.operations import (
    FAMILIES,
    OperationCount,
    count_operations,
    resolve_families,
)
from iotsecbench.vmcu.primitives import TARGET_CIPHERS, target_cipher
from iotsecbench.vmcu.run import Answer, Request, run
from iotsecbench.vmcu.targets import TARGETS, Target, target


def target_facts(chosen: Target) -> dict[str, Any]:
    """What a target's counts depend on, stored beside them (exit 3 naming the packages when
    the toolchain is missing: this is the first thing a benchmark asks of a target)."""
    require_tools(chosen)
    return {
        "name": chosen.name,
        "device": chosen.device,
        "compiler": compiler_version(chosen),
        "compile_flags": list(chosen.compile_flags),
        "qemu": " ".join(chosen.qemu_command("<firmware>")),
        "counter": chosen.counter,
        "profile": chosen.profile,
    }


__all__ = [
    "FAMILIES",
    "TARGETS",
    "TARGET_CIPHERS",
    "Answer",
    "Firmware",
    "LinkedLibrary",
    "OperationCount",
    "Request",
    "SchemeCount",
    "Target",
    "count_operations",
    "count_scheme",
    "firmware",
    "missing_tools",
    "resolve_families",
    "run",
    "target",
    "target_cipher",
    "target_facts",
]
