"""The fleet agent's pure parts: which fleets it drives, how many processes, and the refusals
of a fleet larger than file descriptors or memory allow (exit 2's message names the limit
and the fix), checked against limits set here."""

from __future__ import annotations

import pytest

from iotsecbench.agents.native import fleet
from iotsecbench.errors import SpecError
from iotsecbench.lab import limits
from iotsecbench.runner.experiment import validate
from iotsecbench.runner.fleet_agent import BACKEND_DEVICES, backend_devices, drives
from iotsecbench.spec.matrix import expand
from iotsecbench.spec.models import ExperimentSpec


def chosen(configuration: str = "tls1.2", **changes: object) -> bool:
    factors: dict = dict(
        stack="openssl", transport="mqtt", loopback=True, devices=10, choice="auto"
    )
    factors.update(changes)
    stack, transport = factors.pop("stack"), factors.pop("transport")
    return fleet.selects(stack, configuration, transport, **factors)


def test_the_fleet_agent_drives_exactly_the_fleets_it_can() -> None:
    assert chosen("tls1.2") and chosen("plain") and chosen("tls1.3/x25519/ecdsa-p256/resume")
    assert not chosen("ecdh-p256-aes128-gcm")  # a payload scheme: per-device agents
    assert not chosen("tls1.2+x25519-aes128-gcm")
    assert not chosen(devices=1)
    assert not chosen(choice="processes")
    assert chosen(stack="mbedtls") and chosen(stack="wolfssl")
    assert not chosen(stack="wolfssl-5.9")  # built from source: the per-device agents
    assert not chosen(loopback=False)
    assert not chosen(keylog=True)
    assert not chosen(transport="tcp")


def test_processes_follow_the_cores_not_the_fleet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert [fleet.processes(n) for n in (1, 2, 3, 10_000)] == [1, 2, 2, 2]


def test_a_fleet_beyond_the_descriptors_is_refused_naming_the_limit_and_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits.resource, "getrlimit", lambda which: (256, 1064))
    limit = limits.fleet_limit(fleet_agent=True)
    assert limit.devices == (1064 - limits.FDS_RESERVED) // 2 == 500
    assert "file descriptors" in limit.reason and "ulimit -Hn" in limit.reason
    spec = ExperimentSpec(configurations=["tls1.2"], devices=501, duration_s=1)
    with pytest.raises(SpecError, match=r"devices 501: this machine allows 500 .*ulimit -Hn"):
        validate(spec, None)
    validate(spec.model_copy(update={"devices": 500}), None)


def test_backend_subscribers_halve_the_descriptors_a_device_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits.resource, "getrlimit", lambda which: (256, 1064))
    monkeypatch.setattr(limits, "_mem_available_bytes", lambda: 2**40)
    two = limits.fleet_limit(fleet_agent=True)
    assert "or --receivers backend: one" in two.reason  # the fix it names
    assert limits.fleet_limit(fleet_agent=True, connections=1).devices == 1000
    spec = ExperimentSpec(configurations=["tls1.2"], devices=1001, duration_s=1)
    with pytest.raises(SpecError, match=r"devices 1001: this machine allows 1000 .*one per device"):
        validate(spec.model_copy(update={"fleet_receivers": "backend"}), None)
    validate(spec.model_copy(update={"devices": 1000, "fleet_receivers": "backend"}), None)


def test_a_backend_subscriber_serves_about_500_messages_per_second() -> None:
    assert backend_devices(1.0) == 500 == BACKEND_DEVICES
    assert backend_devices(10.0) == 50
    assert backend_devices(0.2) == 500  # never more devices than that
    assert backend_devices(5000.0) == 1
    with pytest.raises(ValueError, match="saturating"):
        ExperimentSpec(devices=4, fleet_receivers="backend", saturating=True)


def test_backend_receivers_and_pacing_need_the_fleet_agent() -> None:
    for field, value in (("fleet_receivers", "backend"), ("fleet_max_connecting", 8)):
        with pytest.raises(ValueError, match=field):
            ExperimentSpec(configurations=["tls1.2"], devices=1, **{field: value})
        with pytest.raises(ValueError, match=field):
            ExperimentSpec(
                configurations=["tls1.2"], devices=4, fleet_agent="processes", **{field: value}
            )
        spec = ExperimentSpec(configurations=["ecdh-p256-aes128-gcm"], devices=4, **{field: value})
        with pytest.raises(SpecError, match="needs the fleet agent"):
            validate(spec, None)
        # what is measured changes: so does the hash; at the defaults it is as it was
        assert (
            ExperimentSpec(devices=3, **{field: value}).config_hash()
            != ExperimentSpec(devices=3).config_hash()
        )
    assert (
        ExperimentSpec(devices=3).config_hash()
        == ExperimentSpec(
            devices=3, fleet_receivers="devices", fleet_max_connecting=None
        ).config_hash()
    )


def test_a_fleet_beyond_the_memory_is_refused_naming_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "_mem_available_bytes", lambda: 100 * limits.FLEET_DEVICE_BYTES)
    limit = limits.fleet_limit(fleet_agent=True)
    assert limit.devices == 80  # MEMORY_SHARE of it
    assert "memory" in limit.reason and "fleet agent" in limit.reason
    assert "run fewer devices" in limit.reason
    with pytest.raises(SpecError, match="limited by memory"):
        validate(ExperimentSpec(configurations=["plain"], devices=81, duration_s=1), None)


def test_a_storm_needs_the_fleet_agent() -> None:
    with pytest.raises(ValueError, match="storm_at_s"):
        ExperimentSpec(configurations=["tls1.2"], devices=1, storm_at_s=2)
    with pytest.raises(ValueError, match="storm_at_s"):
        ExperimentSpec(configurations=["tls1.2"], devices=4, storm_at_s=2, fleet_agent="processes")
    spec = ExperimentSpec(configurations=["ecdh-p256-aes128-gcm"], devices=4, storm_at_s=2)
    with pytest.raises(SpecError, match="storm_at_s needs the fleet agent"):
        validate(spec, None)
    # Left at their defaults, the new fields leave the configuration hash as it was.
    assert (
        ExperimentSpec(devices=3).config_hash()
        == ExperimentSpec(devices=3, fleet_agent="auto", storm_at_s=None).config_hash()
    )


def test_a_fleet_of_virtual_devices_is_never_the_fleet_agents() -> None:
    """--devices N --target: each emitter is a firmware under its own QEMU (main's 35b.3),
    even on a stack the fleet agent is built for."""
    spec = ExperimentSpec(configurations=["tls1.2"], target="rv32imc", devices=2)
    assert spec.stack == ["mbedtls"]
    assert not any(drives(cell, spec, keylog=False) for cell in expand(spec))
    host = spec.model_copy(update={"target": None})
    assert all(drives(cell, host, keylog=False) for cell in expand(host))
