"""A broker whose OpenSSL draws its random numbers from a seed (``seeded_rand.c``, an OpenSSL
3 provider): for the counted device runs, where one seed must give one server — its key
share, its signatures and their lengths — so that a repetition's instruction count repeats to
the instruction (docs/device-client.md). Never used by ``run``.

The provider is compiled once with gcc against Debian's OpenSSL headers (a provider reaches
libcrypto only through the core's dispatch table, so the build serves the openssl-3.5 broker
as well), cached under a hash of its source; ``openssl_config`` adds it and the ``[random]``
section that selects it to a broker's OpenSSL configuration.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from iotsecbench.errors import EnvironmentProblem
from iotsecbench.files import exclusive
from iotsecbench.sources import cache_root

SOURCE = Path(__file__).resolve().parent / "seeded_rand.c"
HEADER = Path("/usr/include/openssl/core_dispatch.h")
INIT_SECTION = "[iotsecbench_init]"


def problem() -> str | None:
    """Why the seeded generator cannot be built here (one line), or None."""
    missing = [tool for tool in ("gcc",) if shutil.which(tool) is None]
    if not HEADER.exists():
        missing.append(str(HEADER))
    if not missing:
        return None
    return (
        f"the broker's seeded random generator needs {', '.join(missing)} "
        "(apt-get install gcc libssl-dev, or scripts/setup.sh)"
    )


@functools.cache
def module() -> Path:
    """The provider's shared object, built now if this checkout has not built it."""
    why = problem()
    if why is not None:
        raise EnvironmentProblem(why)
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target = cache_root() / "seeded-rand" / digest / "iotsb_seeded.so"
    if target.exists():
        return target
    with exclusive(target.parent / ".lock"):  # a concurrent first use builds it once
        if not target.exists():
            _build(target)
    return target


def _build(target: Path) -> None:
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        partial = Path(scratch) / target.name
        command = ["gcc", "-O2", "-Wall", "-fPIC", "-shared", str(SOURCE), "-o", str(partial),
                   "-lpthread"]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            lines = (result.stderr or result.stdout).strip().splitlines()
            raise EnvironmentProblem(
                f"building the seeded random generator failed: {lines[-1] if lines else '?'}"
            )
        os.replace(partial, target)


def openssl_config(seed: bytes, base: str | None) -> str:
    """``base`` (a broker's OpenSSL configuration, or None) with the seeded generator as the
    library's random source."""
    if len(seed) != 32:
        raise ValueError("the broker's seed is 32 bytes")
    sections = (
        "[iotsecbench_providers]\ndefault = iotsecbench_default\n"
        "iotsbseeded = iotsecbench_seeded\n\n"
        "[iotsecbench_default]\nactivate = 1\n\n"
        f"[iotsecbench_seeded]\nmodule = {module()}\nseed = {seed.hex()}\nactivate = 1\n\n"
        "[iotsecbench_random]\nrandom = IOTSB-SEEDED\n"
    )
    init = "providers = iotsecbench_providers\nrandom = iotsecbench_random\n"
    if base is None:
        return (
            "# Written by iotsecbench for one broker: its random numbers from a seed.\n"
            f"openssl_conf = iotsecbench_init\n\n{INIT_SECTION}\n{init}\n{sections}"
        )
    if INIT_SECTION not in base:
        raise ValueError("the broker's OpenSSL configuration has no iotsecbench_init section")
    return base.replace(f"{INIT_SECTION}\n", f"{INIT_SECTION}\n{init}", 1) + "\n" + sections


if __name__ == "__main__":  # scripts/setup.sh --dev: build it once
    print(f"setup: the counted runs' seeded broker generator: {module()}")
