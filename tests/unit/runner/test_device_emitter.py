"""The device emitter's pure parts (runner/device_emitter.py, docs/device-client.md "The whole
run"): what the spec refuses, the firmware's configuration, the records passed on in the
agents' vocabulary, and the energy model fed with counted instructions."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from iotsecbench.agents.config import AgentConfig
from iotsecbench.agents.records import RecordWriter, read_records
from iotsecbench.energy import model
from iotsecbench.energy.profile import load_profile
from iotsecbench.runner.device_emitter import (
    RATE_TOLERANCE,
    DevicePricing,
    Translator,
    device_config,
    device_subset,
    kept_rate_hz,
    scheme_problem,
)
from iotsecbench.security import resolve_configuration
from iotsecbench.spec.load import load_spec
from iotsecbench.spec.matrix import expand
from iotsecbench.spec.models import ExperimentSpec
from iotsecbench.vmcu.client import DeviceFirmware
from iotsecbench.vmcu.device import DeviceConfig


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"stack": ["openssl"]}, "not openssl"),
        ({"qos": [2]}, "QoS 0 or 1"),
        ({"payload_bytes": [70_000]}, "buffer"),
        ({"saturating": True}, "fixed rate"),
        ({"saturating": True, "transport": ["mqtt", "tcp"]}, "tcp transport's on the device"),
    ],
)
def test_the_spec_refuses_what_the_device_emitter_cannot_do(changes, words):
    with pytest.raises(ValidationError, match=words):
        ExperimentSpec(**{"target": "rv32imc", "stack": ["mbedtls"], **changes})


def test_the_device_saturates_and_echoes_over_the_tcp_transport():
    """The block-sizes study's raw-TCP role (vmcu/client/frames.c): tcp, echo and saturating
    are the device's too; its configurations all run there (finite-field DH and RSA-OAEP in
    the firmware), TLS over tcp does not."""
    spec = load_spec(None, "block-sizes", {"target": "rv32imc", "stack": ["mbedtls"]})
    assert spec.saturating and spec.transport == ["tcp"] and "echo" in spec.method
    subset, left_out = device_subset(spec)
    assert subset.configurations == spec.configurations and not left_out
    with_tls = spec.model_copy(update={"configurations": ["plain", "tls1.2"]})
    subset, left_out = device_subset(with_tls)
    assert subset.configurations == ["plain"] and "without TLS" in left_out["tls1.2"]


def test_a_spec_without_target_keeps_its_hash():
    plain = ExperimentSpec()
    assert plain.target is None
    assert plain.config_hash() == ExperimentSpec(target=None).config_hash()
    assert ExperimentSpec(target="rv32imc", stack=["mbedtls"]).config_hash() != (
        ExperimentSpec(stack=["mbedtls"]).config_hash()
    )


@pytest.mark.parametrize(
    ("configuration", "stack", "words"),
    [
        ("tls1.2", "mbedtls", None),
        ("ecdh-p256-aes128-gcm", "mbedtls", None),
        ("x25519-chacha20-poly1305", "mbedtls", None),
        ("ecdh-p256-aes128-gcm", "wolfssl", "run on mbedtls"),
        ("psk-aes128-gcm", "mbedtls", None),
        ("psk-chacha20-poly1305", "mbedtls", None),
        ("psk-ascon128v12", "mbedtls", None),
        ("psk-salsa20-256-blake2b", "mbedtls", None),
        ("psk-tinyaes128-ctr-hmac", "mbedtls", None),
        ("ecdh-p256-aes256-eax", "mbedtls", None),
        ("psk-ascon128v12-purepy", "mbedtls", "no device counterpart"),
        ("psk-ascon-aead128", "mbedtls", "not psk-ascon-aead128"),
        ("psk-xchacha20-poly1305", "mbedtls", "not psk-xchacha20-poly1305"),
        ("mlkem768-aes128-gcm", "mbedtls", None),
        ("mlkem512-chacha20-poly1305", "mbedtls", None),
        ("mlkem1024-ascon128v12", "mbedtls", None),
        ("x25519mlkem768-aes128-gcm", "mbedtls", None),
        ("mlkem768-aes128-gcm", "wolfssl", "run on mbedtls"),
        ("x25519-ecdsap256-aes128-gcm", "mbedtls", "holds no signing key"),
        ("mlkem768-mldsa44-aes128-gcm", "mbedtls", "holds no signing key"),
        ("tls1.2+ecdh-p256-aes128-gcm", "mbedtls", "over TLS"),
        # the block-sizes study's key establishments, on mbedTLS's DHM and RSA-OAEP
        ("dh-sha256-aes128-ctr-hmac", "mbedtls", None),
        ("rsa-oaep-aes256-gcm", "mbedtls", None),
        ("ffdhe2048-chacha20-poly1305", "mbedtls", None),
    ],
)
def test_which_payload_schemes_the_device_runs(configuration, stack, words):
    problem = scheme_problem(resolve_configuration(configuration), stack)
    assert (problem is None) if words is None else (words in problem)


def _agent_config(tmp_path: Path, configuration: str = "plain") -> AgentConfig:
    return AgentConfig(
        role="emitter", run_id="r1", configuration=configuration, host="127.0.0.1", port=1883,
        username="u", password="p", client_id="iotsb-emitter-x", topic_prefix="iotsb/0123",
        payload_bytes=64, rate_hz=20.0, duration_s=3.0, qos=1, seed=7,
        output=str(tmp_path / "emitter.jsonl"),
    )  # fmt: skip


def test_the_firmware_gets_the_emitters_run(tmp_path):
    config = device_config(_agent_config(tmp_path, "ecdh-p256-aes128-gcm"), 3)
    assert (config.role, config.message_count, config.period_ns) == ("publish", 60, 50_000_000)
    assert (config.qos, config.payload_bytes, config.filler_seed) == (1, 64, 7)
    assert config.scheme == "ecdh-p256-aes128-gcm" and config.tls_version == ""
    encoded = config.encode()
    for key, value in (
        (b"period_ns", struct.pack("<Q", 50_000_000)),
        (b"message_count", struct.pack("<I", 60)),
        (b"scheme", b"ecdh-p256-aes128-gcm"),
    ):  # client/config.c's entries: key length, key, value length, value, NUL
        assert bytes([len(key)]) + key + struct.pack("<I", len(value)) + value + b"\0" in encoded
    assert b"psk" not in encoded
    plain = device_config(_agent_config(tmp_path), 3)
    assert plain.scheme == ""
    # the handshake benchmark's role carries none of it
    assert b"period_ns" not in DeviceConfig(seed=bytes(32), client_id="d").encode()


def test_the_tcp_transport_hands_the_firmware_its_method_and_pacing(tmp_path):
    """Over tcp the firmware's role is "tcp" (frames.c): echo, saturating and the duration
    travel with the run (client/config.c's entries); over mqtt none of them does."""
    agent = dataclasses.replace(
        _agent_config(tmp_path, "dh-sha256-aes128-ctr-hmac"),
        transport="tcp", method="echo", saturating=True,
    )  # fmt: skip
    config = device_config(agent, 3)
    assert (config.role, config.echo, config.saturating) == ("tcp", True, True)
    assert config.duration_ns == 3_000_000_000
    encoded = config.encode()
    for key, value in (
        (b"echo", b"\x01"),
        (b"saturating", b"\x01"),
        (b"duration_ns", struct.pack("<Q", 3_000_000_000)),
        (b"scheme", b"dh-sha256-aes128-ctr-hmac"),
    ):
        assert bytes([len(key)]) + key + struct.pack("<I", len(value)) + value + b"\0" in encoded
    assert b"duration_ns" not in device_config(_agent_config(tmp_path), 3).encode()


def test_a_psk_scheme_hands_the_firmware_the_runs_key(tmp_path):
    key = bytes(range(32))
    (tmp_path / "psk").write_bytes(key)
    agent = dataclasses.replace(
        _agent_config(tmp_path, "psk-aes128-gcm"), psk_file=str(tmp_path / "psk")
    )
    config = device_config(agent, 3)
    assert config.psk == key
    assert b"\x03psk" + struct.pack("<I", 32) + key + b"\0" in config.encode()


def test_a_preset_on_the_device_runs_what_its_firmware_runs():
    """payload-schemes: all but the pure-Python Ascon run on the device (its lightweight
    ciphers included); that one is left out, by name and with why."""
    spec = load_spec(None, "payload-schemes", {"target": "rv32imc"})
    subset, left_out = device_subset(spec)
    assert subset.configurations == [c for c in spec.configurations if not c.endswith("purepy")]
    assert len(subset.configurations) == 16
    assert list(left_out) == ["psk-ascon128v12-purepy"]
    assert "no device counterpart" in left_out["psk-ascon128v12-purepy"]
    assert "without psk-ascon128v12-purepy" in subset.description


def test_the_pq_preset_on_the_device_runs_each_configuration_where_its_build_does():
    """pq names host stacks (OpenSSL 3.5 and 3.0): on the device, its unsigned payload schemes
    (ML-KEM, the hybrid, X25519) run on the mbedTLS scheme build, its ML-KEM TLS groups on
    wolfSSL, classical TLS on both; the signed schemes and the host library comparison are
    left out, each with one line saying why; a subset's subset is itself (--resume)."""
    spec = load_spec(None, "pq", {"target": "rv32imc", "stack": ["mbedtls", "wolfssl"]})
    subset, left_out = device_subset(spec)
    assert device_subset(subset) == (subset, {})
    cells = {(cell.configuration, cell.stack) for cell in expand(subset)}
    assert {stack for name, stack in cells if "-aes128-gcm" in name} == {"mbedtls"}
    assert ("mlkem768-aes128-gcm", "mbedtls") in cells
    assert ("x25519mlkem768-aes128-gcm", "mbedtls") in cells
    assert ("tls1.3/X25519MLKEM768/mldsa44", "wolfssl") in cells
    assert ("tls1.3/X25519MLKEM768/mldsa44", "mbedtls") not in cells
    assert {stack for name, stack in cells if name == "tls1.3/x25519/ecdsa-p256"} == {
        "mbedtls",
        "wolfssl",
    }
    signed = [name for name in spec.configurations if "dsa" in name and "/" not in name]
    assert sorted(signed) == sorted(name for name in left_out if " on " not in name)
    for name in signed:
        assert "holds no signing key" in left_out[name] and "\n" not in left_out[name]
    assert left_out["tls1.3/x25519/ecdsa-p256 on openssl"].endswith("not openssl")


def test_the_firmwares_records_become_the_emitters(tmp_path):
    records = tmp_path / "device-records.jsonl"
    lines = [
        {"type": "event", "name": "agent_start", "role": "publish", "stack": "mbedtls",
         "stack_version": "3.6.5"},
        {"type": "sample", "t_ns": 100, "crypto": 0, "protocol": 160, "wait": 5, "io": 1,
         "sleep_ns": 0, "heap_bytes": 1000, "heap_peak_bytes": 2000},
        {"type": "sample", "t_ns": 100, "crypto": 0, "protocol": 160, "wait": 5, "io": 1,
         "sleep_ns": 0, "heap_bytes": 1000, "heap_peak_bytes": 2000},  # not later: dropped
        {"type": "message", "seq": 0, "payload_bytes": 64, "wire_bytes": 64, "packet_bytes": 80,
         "t_created_ns": 150, "t_sealed_ns": 151, "t_published_ns": 160, "seal": 320,
         "crypto": 40, "protocol": 600, "wait": 7, "io": 3},
        {"type": "counters", "name": "messages_sent", "value": 1},
        {"type": "error", "message": "boom"},
    ]  # fmt: skip
    records.write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"type": "samp')
    firmware = DeviceFirmware("rv32imc", "mbedtls", tmp_path / "x.elf", "h", 1, 2, 3, "p")
    writer = RecordWriter(tmp_path / "emitter.jsonl")
    translator = Translator(
        writer, records, firmware, DevicePricing("esp32-c3", 1.0, 160e6), _agent_config(tmp_path)
    )
    translator.start_detail = {"role": "emitter", "counted_on": "rv32imc"}
    translator.tick(None)
    writer.close()
    out = {r["type"]: r for r in read_records(tmp_path / "emitter.jsonl")}
    assert out["event"]["detail"] == {
        "role": "emitter", "counted_on": "rv32imc", "stack": "mbedtls", "stack_version": "3.6.5"
    }  # fmt: skip
    sample = out["sample"]
    assert sample["cpu_ns"] == 1_000  # 160 instructions at 160 MHz, CPI 1
    assert sample["rss_bytes"] == 2 + 3 + 1000  # static RAM (data + bss) and the heap
    assert sample["instructions_wait"] == 5 and sample["tcp_bytes_sent"] == 0
    message = out["message"]
    assert message["seal_cpu_ns"] == 2_000 and message["instructions_crypto"] == 40
    assert out["counters"]["value"] == 1 and translator.error == "boom"
    assert translator.heap_peak_bytes == 2000
    assert len([r for r in read_records(tmp_path / "emitter.jsonl") if r["type"] == "sample"]) == 1


def test_counted_current_is_the_instructions_at_the_clock():
    """Analytic case: 8 M and then 16 M instructions in two 100 ms windows at CPI 1 and the
    profile's clock keep the core busy 8e6 / f and 16e6 / f of each window; no radio."""
    profile = load_profile("esp32-c3")
    clock = profile.cpu_clock_hz
    t_ns = [100_000_000, 200_000_000]
    zeros = [0, 0]
    current = model.counted_current(
        profile, t_ns, [8_000_000, 24_000_000], zeros, zeros, zeros, zeros, cpi=1.0
    )
    expected = np.minimum(np.array([8e6, 16e6]) / clock / 0.1, 1.0)
    assert np.allclose(current.cpu_fraction, expected)
    assert np.allclose(
        current.current_ma,
        profile.idle_associated_current_ma + profile.core_extra_current_ma * expected,
    )
    assert current.unmodelled_primitives == () and current.cpu_backlog_s == 0.0


def test_a_saturating_runs_energy_is_taken_at_the_devices_pace():
    """Analytic case (energy.model.device_paced_energy_j): a window of 160 M instructions (one
    second of CPU at 160 MHz, CPI 1) and no radio lasts one second on the device, however
    short QEMU made it; a window whose radio needs longer than its CPU lasts its airtime, the
    core's extra current only for its CPU time."""
    profile = load_profile("esp32-c3")
    clock, volts = profile.cpu_clock_hz, profile.supply_voltage_v
    idle, core = profile.idle_associated_current_ma, profile.core_extra_current_ma
    zeros = [0, 0]
    cpu_bound = model.device_paced_energy_j(
        profile, [0, int(clock)], zeros, zeros, zeros, zeros, cpi=1.0
    )
    assert cpu_bound == pytest.approx((idle + core) * 1e-3 * volts * 1.0)
    sent = profile.tx_goodput_bits_per_s // 8  # one second of airtime, in one segment
    airtime_s = 1.0 + profile.packet_overhead_s
    radio_bound = model.device_paced_energy_j(
        profile, [0, int(clock) // 10], [0, sent], zeros, [0, 1], zeros, cpi=1.0
    )
    expected_mas = idle * airtime_s + core * 0.1 + (profile.tx_current_ma - idle) * airtime_s
    assert radio_bound == pytest.approx(expected_mas * 1e-3 * volts)


def test_a_counted_runs_figures_per_byte():
    """runner.collect.counted_per_byte: the messages' client instructions over their payload
    bytes, crypto, seal and the echoes' open apart, and QEMU's counted instructions per second
    of the samples' span, sleep left out."""
    from iotsecbench.runner.collect import counted_per_byte

    messages = [
        {"payload_bytes": 100, "instructions_crypto": 900, "instructions_protocol": 100,
         "instructions_seal": 800},
        {"payload_bytes": 100, "instructions_crypto": 700, "instructions_protocol": 300,
         "instructions_seal": 600},
    ]  # fmt: skip
    echoes = [{"instructions_open": 500}, {"instructions_open": 300}]
    buckets = ("crypto", "protocol", "wait", "io")
    samples = [
        {"t_ns": 0, "sleep_ns": 0, **{f"instructions_{b}": 0 for b in buckets}},
        {"t_ns": 3_000_000_000, "sleep_ns": 1_000_000_000,
         **{f"instructions_{b}": 1_000 for b in buckets}},
    ]  # fmt: skip
    figures = counted_per_byte(messages, echoes, samples)
    assert figures["client_instructions_per_byte"] == 10.0
    assert figures["crypto_instructions_per_byte"] == 8.0
    assert figures["seal_instructions_per_byte"] == 7.0
    assert figures["open_instructions_per_byte"] == 4.0
    assert figures["emulated_instructions_per_s"] == 2_000.0  # 4,000 over 2 s awake
    assert counted_per_byte([], [], []) == {}


def test_the_rate_kept_is_not_moved_by_late_messages_caught_up_but_is_by_a_schedule_behind():
    """A 2 s run at 10 Hz (20 messages on an absolute schedule). Kept 10 Hz: the last message
    46 ms late (a CI run's, QEMU woken late on a loaded machine), though (n - 1) / span says
    9.76 Hz; a fleet device's messages up to 297 ms late mid-run and on time again at the end
    (another CI run's, which a median over the run called 9.82 Hz). Not kept, failing the
    check: every interval 102 ms; the last third slipping 20 ms more per message."""
    period = 100_000_000
    on_time = [i * period for i in range(20)]
    assert kept_rate_hz(on_time, 10.0) == pytest.approx(10.0)
    last_late = [*on_time[:-1], on_time[-1] + 46_000_000]
    assert (len(last_late) - 1) / ((last_late[-1] - last_late[0]) / 1e9) < 9.77
    assert kept_rate_hz(last_late, 10.0) == pytest.approx(10.0)
    caught_up_ms = [0.0, 2.6, 36.5, 2.7, 51.4, 4.1, 0.9, 0.1, 0.2, 34.0, 10.4, 28.3, 0.1,
                    297.1, 245.3, 153.0, 84.5, -0.1, 4.1, 4.1]  # fmt: skip
    caught_up = [t + round(late * 1e6) for t, late in zip(on_time, caught_up_ms, strict=True)]
    assert kept_rate_hz(caught_up, 10.0) == pytest.approx(10.0, rel=1e-3)
    slow = [i * 102_000_000 for i in range(20)]
    assert kept_rate_hz(slow, 10.0) == pytest.approx(1e9 / 102_000_000)
    slipping = [t + max(0, i - 13) * 20_000_000 for i, t in enumerate(on_time)]
    for failing in (slow, slipping):
        assert kept_rate_hz(failing, 10.0) < (1 - RATE_TOLERANCE) * 10.0
    assert kept_rate_hz(on_time[:1], 10.0) is None and kept_rate_hz([], 10.0) is None
