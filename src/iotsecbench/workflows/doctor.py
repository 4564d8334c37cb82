"""``doctor``'s capability checks: the lab's (``lab.capabilities``) with those of the rooms
the lab may not import — the virtual microcontrollers (``vmcu``) and the native agent's
builds (``agents.native``) — in the order ``doctor`` prints them."""

from __future__ import annotations

from pathlib import Path

from iotsecbench.errors import SpecError
from iotsecbench.lab.capabilities import (
    Check,
    check_capture,
    check_cgroups,
    check_chromium,
    check_dask,
    check_disk,
    check_fleet,
    check_leftover_namespaces,
    check_lightweight_ciphers,
    check_mosquitto,
    check_mosquitto_passwd,
    check_native_aead,
    check_netns,
    check_openssl,
    check_perf,
    check_post_quantum,
    check_python,
    check_root,
    check_tc,
    check_tls_recorder,
    check_tracefs,
)


def check_virtual_mcu() -> Check:
    from iotsecbench.vmcu import TARGETS, missing_tools

    missing = {name: missing_tools(target) for name, target in TARGETS.items()}
    ready = [name for name, tools in missing.items() if not tools]
    detail = (
        f"{', '.join(ready)} can be built and counted under QEMU (`bench crypto --target`)"
        if ready
        else "no target can be built"
    )
    absent = sorted({tool for tools in missing.values() for tool in tools})
    if not absent:
        return Check("Virtual microcontrollers", True, detail)
    packages = sorted({p for n, t in TARGETS.items() if missing[n] for p in t.packages})
    return Check(
        "Virtual microcontrollers",
        False,
        f"{detail}; missing {', '.join(absent)}",
        f"apt-get install {' '.join(packages)} (or scripts/setup.sh --dev) for `--target`",
    )


def check_device_client() -> list[Check]:
    """One line per target: can the device's own client run there (`bench handshake
    --target`, `run --target`: docs/device-client.md)?"""
    from iotsecbench.lab import seeded_rand
    from iotsecbench.lab.limits import fleet_limit
    from iotsecbench.vmcu import TARGETS
    from iotsecbench.vmcu.client import readiness

    broker = seeded_rand.problem()
    checks = []
    for name, target in TARGETS.items():
        ok, detail = readiness(target)
        refused = f"`bench handshake --target {name}` and `run --target {name}` will be refused"
        consequence = "" if ok else refused
        if ok and broker is not None:  # the seeded broker is the handshake benchmark's only
            ok, detail = False, f"{detail}; {broker}"
            consequence = f"`bench handshake --target {name}` will be refused (`run` works)"
        if ok:
            fleet = fleet_limit(emulated=(name, target.fleet_per_core))
            detail = f"{detail}; fleets up to {fleet.devices} virtual devices ({fleet.reason})"
        checks.append(Check(f"Device client on {name}", ok, detail, consequence))
    return checks


def native_agent_checks() -> list[Check]:
    """One line per native agent build (the stack factor's mbedtls, wolfssl and wolfssl-5.9,
    each with TLS, the payload schemes or both; plain for MQTT alone)."""
    from iotsecbench.agents import native

    checks = []
    for build in native.BUILDS:
        problem = native.problem(build)
        name = f"native agent ({build} build)"
        if problem is None:
            checks.append(Check(name, True, native.provenance(build)))
        else:
            stack = native.Build.named(build).stack
            consequence = f"--stack {stack} runs that need it are refused (exit 3)"
            checks.append(Check(name, False, problem, consequence))
    return checks


def all_checks(results_dir: Path = Path(".")) -> list[Check]:
    """Every capability ``doctor`` reports; a failed ``required`` one stops ``run``."""
    return [
        check_python(),
        check_mosquitto(),
        check_mosquitto_passwd(),
        check_openssl(),
        check_native_aead(),
        check_lightweight_ciphers(),
        check_virtual_mcu(),
        *check_device_client(),
        check_tls_recorder(),
        check_post_quantum(),
        check_fleet(),
        check_dask(),
        check_capture(),
        check_root(),
        check_netns(),
        check_leftover_namespaces(),
        check_tc(),
        check_tracefs(),
        check_perf(),
        check_cgroups(),
        check_chromium(),
        check_disk(results_dir),
        *native_agent_checks(),
    ]


def stop_leftovers_of(results_dir: Path) -> list[str]:
    """``doctor --cleanup --out DIR``: stop what a dead runner of ``results_dir`` left (its
    broker, agents, helpers and namespaces, found by their PID files); refused while a runner
    is alive."""
    from iotsecbench.lab.network import remove_recorded_namespaces
    from iotsecbench.lab.processes import stop_leftovers
    from iotsecbench.runner.experiment import PID_DIRNAME
    from iotsecbench.store.directory import DirectoryLock

    if not results_dir.is_dir():
        raise SpecError(f"--out {results_dir} is not a directory")
    with DirectoryLock(results_dir):  # exit 3 while its runner is alive: nothing is left over
        directory = results_dir / PID_DIRNAME
        return stop_leftovers(directory) + remove_recorded_namespaces(directory)
