"""Network profiles as data, the `network` factor of the matrix, and the pure helpers of
lab/network.py (no namespaces are created here)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from iotsecbench.errors import NoPermissionError, SpecError
from iotsecbench.lab import network
from iotsecbench.spec.hosts import HOSTS
from iotsecbench.spec.load import build_spec, load_spec
from iotsecbench.spec.matrix import Cell, expand, plan_runs
from iotsecbench.spec.models import ExperimentSpec
from iotsecbench.spec.network import (
    SHAPE_FIELDS,
    NetworkProfile,
    builtin_profile_data,
    builtin_profile_names,
    resolve_profile,
)


def test_the_issue_s_profiles_exist() -> None:
    names = builtin_profile_names()
    for name in ("loopback", "ideal", "wifi", "wifi-lossy", "cellular-nbiot", "lora"):
        assert name in names
    assert resolve_profile("loopback").kind == "loopback"
    assert resolve_profile("wifi-lossy").emitter.up.loss_percent == 2.0
    assert resolve_profile("wifi-lossy-5").emitter.down.loss_percent == 5.0


@pytest.mark.parametrize("name", builtin_profile_names())
def test_every_number_of_a_builtin_profile_has_its_source(name: str) -> None:
    data = builtin_profile_data(name)
    assert data.get("description"), name
    for host in HOSTS:
        for direction, shape in data.get(host, {}).items():
            for key, value in shape.items():
                assert key in SHAPE_FIELDS, (name, host, direction, key)
                assert isinstance(value, dict) and value.get("source", "").strip(), (
                    f"{name}: {host}.{direction}.{key} needs {{ value = …, source = … }}"
                )
    profile = resolve_profile(name)
    for host in HOSTS:
        for direction in ("up", "down"):
            shape = getattr(profile.link(host), direction)
            written = set(data.get(host, {}).get(direction, {}))
            assert set(shape.sources) == written


def test_custom_profile_in_the_spec_takes_plain_numbers() -> None:
    spec = build_spec(
        {
            "network": ["loopback", "slow"],
            "networks": {"slow": {"emitter": {"up": {"delay_ms": 20, "rate_kbit": 100}}}},
        }
    )
    profile = resolve_profile("slow", spec.networks)
    assert profile.emitter.up.delay_ms == 20
    assert profile.expected_one_way_delay_ms("emitter", "broker") == 20
    assert profile.expected_one_way_delay_ms("broker", "emitter") == 0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"network": ["wfi"]}, "did you mean wifi"),
        ({"network": ["wifi", "wifi"]}, "listed twice"),
        ({"networks": {"x": {"emitter": {"up": {"loss_percent": 100}}}}}, "less than 100"),
        ({"networks": {"x": {"emitter": {"up": {"delay_ms": -1}}}}}, "greater than or equal"),
        ({"networks": {"x": {"emitter": {"up": {"delay": 1}}}}}, "unknown key"),
        ({"networks": {"x": {"emitter": {"up": {"delay_ms": {"v": 1}}}}}}, "value ="),
    ],
)
def test_bad_network_specs_are_one_line_errors(data: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_spec(data)


def hash_without_network(spec: ExperimentSpec) -> str:
    """config_hash as the code computed it before the network factor (commit 6ed46c1)."""
    # factors added since
    later = {"network", "networks", "transport", "method", "saturating", "stack", "devices"}
    later |= {"connect_ramp_hz", "configuration_labels"}
    later.add("target")  # the device emitter (run --target)
    later.update(("fleet_agent", "storm_at_s", "fleet_raw_devices"))  # the fleet agent
    later.update(("fleet_receivers", "fleet_max_connecting"))  # backends and pacing
    shaping = spec.model_dump(mode="json", exclude={"repetitions", "name", "description", *later})
    for rule in (*shaping["include"], *shaping["exclude"]):
        for key in ("network", "transport", "method", "stack"):
            rule.pop(key)
    canonical = json.dumps(shaping, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def test_loopback_keeps_cell_ids_and_the_config_hash() -> None:
    spec = ExperimentSpec()
    assert expand(spec)[0].cell_id == "plain_256B_10Hz_q1"
    assert all(c.network == "loopback" for c in expand(spec))
    # The hash of a spec that does not use networks is computed as before the network
    # factor existed (without its keys), so resuming an older experiment keeps working.
    for older in (
        spec,
        ExperimentSpec(exclude=[{"configuration": "plain"}]),
        load_spec(preset="stability"),
    ):
        assert older.config_hash() == hash_without_network(older)
    assert ExperimentSpec(network=["wifi"]).config_hash() != spec.config_hash()


def test_network_is_a_factor_of_the_matrix() -> None:
    spec = build_spec({"configurations": ["plain", "tls1.2"], "network": ["loopback", "wifi"]})
    cells = expand(spec)
    assert len(cells) == 4
    ids = {c.cell_id for c in cells}
    assert "plain_256B_10Hz_q1" in ids and "plain_256B_10Hz_q1_net-wifi" in ids
    labels = {c.label for c in cells}
    assert "plain · wifi" in labels and "tls1.2 · loopback" in labels
    runs = plan_runs(spec)
    assert len({r.run_id for r in runs}) == len(runs)


def test_include_and_exclude_know_the_network() -> None:
    spec = build_spec(
        {
            "configurations": ["plain"],
            "network": ["ideal", "wifi"],
            "exclude": [{"network": "ideal"}],
            "include": [
                {
                    "configuration": "tls1.2",
                    "payload_bytes": 256,
                    "rate_hz": 10.0,
                    "qos": 1,
                    "network": "ideal",
                }
            ],
        }
    )
    cells = expand(spec)
    assert {(c.configuration, c.network) for c in cells} == {("plain", "wifi"), ("tls1.2", "ideal")}
    with pytest.raises(SpecError, match="missing network"):
        expand(
            build_spec(
                {
                    "network": ["ideal", "wifi"],
                    "include": [
                        {"configuration": "plain", "payload_bytes": 64, "rate_hz": 1.0, "qos": 0}
                    ],
                }
            )
        )
    one = build_spec(
        {"include": [{"configuration": "plain", "payload_bytes": 64, "rate_hz": 1.0, "qos": 0}]}
    )
    assert Cell("plain", 64, 1.0, 0).cell_id in {c.cell_id for c in expand(one)}


def test_rate_limiter_arguments() -> None:
    shape = NetworkProfile.model_validate({"emitter": {"up": {"rate_kbit": 1000}}}).emitter.up
    assert network.tbf_arguments(shape) == [
        "tbf", "rate", "1000000bit", "burst", "1514", "limit", "12500",
    ]  # fmt: skip
    slow = NetworkProfile.model_validate({"emitter": {"up": {"rate_kbit": 5.47}}}).emitter.up
    assert network.queue_bytes(slow) == 2 * network.FRAME_BYTES


def test_counters_are_parsed_from_proc_net_texts() -> None:
    texts = {
        "snmp": "Tcp: RtoAlgorithm RetransSegs\nTcp: 1 7\nUdp: InDatagrams\nUdp: 3\n",
        "netstat": "TcpExt: TCPTimeouts\nTcpExt: 2\n",
        "dev": (
            "Inter-|   Receive\n face |bytes packets\n"
            "    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
            "  eth0: 100 2 0 0 0 0 0 0 300 4 0 1 0 0 0 0\n"
        ),
    }
    rows = set(network.parse_counters(texts))
    assert ("snmp", "Tcp.RetransSegs", 7) in rows
    assert ("netstat", "TcpExt.TCPTimeouts", 2) in rows
    assert ("dev:eth0", "rx_bytes", 100) in rows
    assert ("dev:eth0", "tx_packets", 4) in rows
    assert ("dev:eth0", "tx_dropped", 1) in rows
    assert not any(source == "dev:lo" for source, _, _ in rows)


def test_names_carry_the_runner_pid_and_the_run_id(monkeypatch: pytest.MonkeyPatch) -> None:
    name = network.namespace_name(123, "tls1.2+ecdh/x_r1", "emitter")
    assert name == "iotsb-123-tls1.2+ecdh-x_r1-emitter"
    dead_pid = 2**22 + 17  # above the default pid_max: never alive
    monkeypatch.setattr(
        network,
        "list_namespaces",
        lambda: [f"iotsb-{dead_pid}-a_r1-wire", f"iotsb-{os.getpid()}-b_r1-wire", "other"],
    )
    assert network.leftover_namespaces() == [f"iotsb-{dead_pid}-a_r1-wire"]
    assert len(network.leftover_namespaces(include_live=True)) == 2


def test_without_root_network_profiles_are_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    network.require_support(["loopback"])  # loopback needs nothing
    with pytest.raises(NoPermissionError, match="--network wifi: not root") as raised:
        network.require_support(["loopback", "wifi"])
    assert raised.value.exit_code == 3
    assert "\n" not in str(raised.value)
