"""The device as the tcp transport's emitter (``run --target … --transport tcp``: the firmware's
raw-TCP role, vmcu/client/frames.c; docs/device-client.md "The raw-TCP role"): the block-sizes
study's three configurations — cleartext, finite-field DH (dh-sha256, mbedTLS's DHM) with
AES-128-CTR + HMAC-SHA256, RSA-OAEP key transport with AES-256-GCM — and ML-KEM-768 (wolfCrypt's,
crypto_mlkem.c) with AES-128-GCM, sent saturating straight
to the host's Python receiver, which opens every frame (docs/wire-format.md, byte for byte);
the key exchange counted as the handshake's group, every block's instructions counted, the
run's instructions per payload byte stored as its headline and said with its throughput as the
emulator's.

Lean: one run per target (four configurations, 1 s saturating each, 51-byte blocks, the
study's smallest), shared by the module's checks; one method per target (echo on rv32imc,
unidirectional on the Cortex-M4) so both are covered. The per-byte line over 51/242/1460/4096 B
and its slope against `bench crypto --target` are the benchmark's
(benchmarks/bench_device_run.py --parts tcp).
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from iotsecbench.agents.records import read_records
from iotsecbench.vmcu import TARGETS, missing_tools
from tests.conftest import query, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONFIGURATIONS = (
    "plain", "dh-sha256-aes128-ctr-hmac", "rsa-oaep-aes256-gcm", "mlkem768-aes128-gcm",
)  # fmt: skip
# Each key exchange's public-key work: (its family, its least share of the exchange's
# instructions, the exchange's least instructions).
KEY_WORK = {
    "dh-sha256-aes128-ctr-hmac": ("pk", 0.95, 50_000_000),  # three exponentiations mod p
    "rsa-oaep-aes256-gcm": ("pk", 0.6, 1_000_000),  # the RSA encryption to the receiver's key
    # the encapsulation (1.5 M on rv32imc); HKDF over the 2.3 KB of key and ciphertext is most
    # of the rest
    "mlkem768-aes128-gcm": ("mlkem", 0.3, 1_000_000),
}
METHOD = {"rv32imc": "echo", "cortex-m4": "unidirectional"}
BLOCK = 51


@pytest.fixture(scope="module", params=sorted(TARGETS))
def device_tcp(request, tmp_path_factory) -> tuple[str, Path, str]:
    """One saturating run of the four configurations on a target: (target, results, output)."""
    target = request.param
    missing = missing_tools(TARGETS[target])
    if missing:
        pytest.skip(f"the virtual-MCU target {target} needs {', '.join(missing)}")
    out = tmp_path_factory.mktemp(target) / "out"
    result = run_cli(
        "run", "--target", target, "--transport", "tcp", "--method", METHOD[target],
        "--configs", ",".join(CONFIGURATIONS), "--payload", str(BLOCK), "--rate", "max",
        "--duration", "1", "--reps", "1", "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return target, out, result.stdout + result.stderr


def _records(out: Path, run_dir: str, role: str) -> list[dict]:
    return read_records(out / run_dir / f"{role}.jsonl")


def test_every_frame_is_delivered_opened_and_counted(device_tcp):
    """Each configuration's run: every block the firmware sent was opened by the Python
    receiver (none rejected), with the echo method every echo came back and opened on the
    device; the runs are counted, saturating, over tcp."""
    target, out, _ = device_tcp
    rows = query(
        out,
        "select configuration, status, messages_sent, messages_delivered, auth_failures, "
        "malformed, cost_method, message_transport, method, pacing, run_dir from runs "
        "order by configuration",
    )
    assert [row[0] for row in rows] == sorted(CONFIGURATIONS)
    for configuration, status, sent, delivered, forged, malformed, *facts, run_dir in rows:
        assert status == "ok" and forged == 0 and malformed == 0, configuration
        assert sent == delivered and sent >= 5, (configuration, sent, delivered)
        assert facts == ["counted", "tcp", METHOD[target], "saturating"]
        received = [r for r in _records(out, run_dir, "receiver") if r["type"] == "message"]
        assert sorted(r["seq"] for r in received) == list(range(sent))
        emitter = _records(out, run_dir, "emitter")
        echoes = [r for r in emitter if r["type"] == "echo"]
        if METHOD[target] == "echo":  # each echo resealed by the receiver, opened on the device
            assert [e["seq"] for e in echoes] == list(range(sent))
            assert all(e["t_sent_ns"] < e["t_returned_ns"] <= e["t_opened_ns"] for e in echoes)
        else:
            assert not echoes


def test_the_key_exchange_and_each_block_are_counted(device_tcp):
    """The key exchange is the handshake's one counted group (mbedTLS's DHM with the subgroup
    check: hundreds of millions of instructions; RSA-OAEP to the receiver's key: millions), each
    block costs the same instructions after the first, sealed by the scheme (nothing for
    cleartext), and the run's instructions per payload byte are the blocks' counts over their
    bytes."""
    _, out, _ = device_tcp
    rows = query(out, "select configuration, details_json, run_dir from runs")
    for configuration, details, run_dir in rows:
        emitter = _records(out, run_dir, "emitter")
        events = {e["kind"]: e["detail"] for e in emitter if e["type"] == "event"}
        counted = events["counted_handshake"]
        phases = {h["phase"]: h for h in emitter if h["type"] == "handshake"}
        if configuration == "plain":
            assert counted["groups"] == {} and set(phases) == {"tcp_connect"}
        else:
            group = counted["groups"]["KEY_EXCHANGE"]
            exchange = phases["key_exchange"]["detail"]["instructions"]
            assert abs(group - exchange) < 2_000  # the group's span adds the frames' reads
            family, share, least = KEY_WORK[configuration]
            assert exchange > least
            assert counted["primitives"][family] > share * exchange, counted["primitives"]
        messages = [r for r in emitter if r["type"] == "message"]
        client = [m["instructions_crypto"] + m["instructions_protocol"] for m in messages]
        steady = client[1:]
        assert max(steady) - min(steady) <= 0.01 * statistics.mean(steady), configuration
        seals = {m["instructions_seal"] for m in messages[1:]}
        assert (seals == {0}) if configuration == "plain" else (min(seals) > 10 * BLOCK)
        stored = json.loads(details)["counted"]
        assert stored["client_instructions_per_byte"] == pytest.approx(
            sum(client) / (BLOCK * len(messages))
        )
        assert stored["energy_pace"] == "device"  # saturating: energy at the device's pace


def test_the_summary_says_the_count_and_whose_throughput(device_tcp):
    """The headline of a counted saturating run: instructions per payload byte counted on the
    target, its throughput the emulator's."""
    target, _, text = device_tcp
    words = " ".join(text.split())  # the terminal wraps long lines
    for configuration in CONFIGURATIONS:
        said = re.search(
            rf"counted: {re.escape(configuration)}: [\d.,]+ client instructions per payload "
            rf"byte counted on {target} \(crypto [\d.,]+.*?\); its throughput \([\d.,]+ "
            r"KiB/s\) is the emulator's",
            words,
        )
        assert said is not None, (configuration, words[-3000:])
