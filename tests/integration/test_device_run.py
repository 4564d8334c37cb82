"""The whole device run counted (``run --target``, docs/device-client.md "The whole run"): the
device's firmware under QEMU is the run's emitter against the lab's real mosquitto, the Python
receiver opens every message; the records are the agents' (messages on the lab's clock, 10 Hz
samples with counted instructions), the energy is counted beside the priced figure, and a rate
the emulation cannot keep fails the run naming the rate achieved.

Short runs (2 s at 10 Hz): the issue's 60 s runs are the benchmark's
(benchmarks/bench_device_run.py).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import duckdb
import numpy as np
import pytest

from iotsecbench.agents.records import read_records
from iotsecbench.vmcu import TARGETS, missing_tools
from tests.conftest import run_cli, run_cli_forked

# One worker runs these one after another: each keeps an emulated device at its real-time rate
# (QEMU must emulate a message's instructions before the next is due), and two of them beside
# each other and the suite's other work starved one below the 1 % rate tolerance of a 2 s run
# (9.51 Hz in CI).
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.xdist_group("real-time-device"),
]


def _ready(name: str) -> str:
    missing = missing_tools(TARGETS[name])
    if missing:
        pytest.skip(f"the virtual-MCU target {name} needs {', '.join(missing)}")
    return name


def _run(out: Path, target: str, *options: str) -> tuple[int, str]:
    result = run_cli(
        "run", "--target", target, "--stack", "mbedtls", "--duration", "2", "--rate", "10",
        "--reps", "1", "--out", str(out), "--quiet", "--no-report", *options,
    )  # fmt: skip
    return result.returncode, result.stdout + result.stderr


def _query(out: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        return db.execute(sql).fetchall()


SCHEME = "ecdh-p256-aes128-gcm"


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_tls_and_a_payload_scheme_on_the_device_deliver_every_message_counted(
    mosquitto, tmp_path, target
):
    """TLS 1.2 on mbedTLS and ecdh-p256-aes128-gcm (docs/wire-format.md, sealed by the
    firmware), 1 KiB at QoS 1: every message delivered and opened by the Python receiver, the
    runs stored as counted with the device's memory, the message times on the lab's clock,
    the instructions per message steady, the samples split, the key exchange counted and the
    current counted beside the priced one."""
    _ready(target)
    out = tmp_path / target
    code, text = _run(
        out, target, "--configs", f"tls1.2,{SCHEME}", "--payload", "1024", "--qos", "1"
    )
    assert code == 0, text
    assert f"counted on {target}" in text and "from prices" in text  # the summary's line
    rows = _query(
        out,
        "select configuration, status, messages_sent, messages_delivered, auth_failures, "
        "achieved_rate_hz, cost_method, tls_version, tls_heap_publishing_peak_bytes, "
        "footprint_text_bytes, details_json, run_dir from runs order by configuration",
    )
    assert [row[0] for row in rows] == [SCHEME, "tls1.2"]
    for configuration, status, sent, delivered, forged, rate, method, *rest in rows:
        assert (status, sent, delivered, forged, method) == ("ok", 20, 20, 0, "counted")
        assert 9.9 < rate < 10.1, configuration
        version, heap, text_bytes, details, _ = rest
        assert version == ("1.2" if configuration == "tls1.2" else None)
        assert heap > (16_384 if configuration == "tls1.2" else 2_048)  # buffers, cipher state
        assert text_bytes > 50_000  # the library's code in the image
        counted = json.loads(details)["counted"]
        assert counted["target"] == target and counted["priced_current_emitter_ma"] > 0
        assert counted["counted_current_emitter_ma"] > 0
        # The connection's set-up counted group by group (the TLS handshake, then CONNECT).
        connection = counted["connection"]
        assert connection["instructions"] == sum(connection["groups"].values()) > 0
        tls = configuration == "tls1.2"
        assert ("CLIENT_HELLO" in connection["groups"]) == tls, connection["groups"]
        assert "KEY_EXCHANGE" not in connection["groups"]  # the scheme's: its own line
        assert (connection["primitives"].get("pk", 0) > 1_000_000) == tls  # the handshake's
    assert "connection set-up" in text and "network-invariant" in text  # the summary's line
    # The firmware's t_created is the lab's clock: the receiver's arrivals come after it,
    # within the emulated UART's byte-by-byte transfer and the broker's hop.
    latencies = _query(out, "select t_delivered_ns - t_created_ns from messages")
    assert len(latencies) == 40 and all(0 < ns < 500_000_000 for (ns,) in latencies)
    ((kx_instructions,),) = _query(
        out,
        "select cast(json_extract(detail_json, '$.instructions') as bigint) from handshakes "
        "where phase = 'key_exchange' and agent = 'emitter'",
    )
    assert kx_instructions > 1_000_000  # an ECDH P-256 key pair and derive
    for configuration, *_, run_dir in rows:
        _steady_messages_and_samples(out / run_dir / "emitter.jsonl", configuration == SCHEME)
    _counted_model_range(out)


def _counted_model_range(out: Path) -> None:
    """The model's range of a counted emitter (runner.model_draws): the stored samples give
    the counted busy time back (Σ CPU share × window), the run's counted current at the
    profile's values, and on every draw that time × the CPI's draw / the CPI — never the
    logged operations priced; the notes say so."""
    from iotsecbench.energy.exposure import Exposure
    from iotsecbench.energy.profile import load_profile
    from iotsecbench.energy.uncertainty import draw_profile, point_values
    from iotsecbench.runner.model_draws import COUNTED_NOTE, COUNTERS, model_draws
    from iotsecbench.store.read import activity_frames

    model, why_not = model_draws(out, 200, 0)
    assert model is not None and COUNTED_NOTE in model.notes, why_not
    samples, _ = activity_frames(out)
    (device,) = {str(d) for (d,) in _query(out, "select distinct device from runs")}
    profile = load_profile(device)
    for _, own in samples[samples["device"] == "emitter"].groupby("run_id"):
        exposure = Exposure.from_samples(
            own["t_ns"].to_numpy(), *(own[c].to_numpy(dtype=float) for c in COUNTERS), {},
            own["cpu_fraction"].to_numpy(),
        )  # fmt: skip
        # the run's counted mean current: each window by its length (the handshake's windows
        # are merged, longer than 100 ms), the first as long as the median one
        gaps = np.diff(own["t_ns"].to_numpy(dtype=float))
        windows = np.concatenate(([np.median(gaps)], gaps))
        counted_ma = np.average(own["current_ma"].to_numpy(dtype=float), weights=windows)
        point = exposure.mean_current_ma(profile, point_values(profile))
        assert point == pytest.approx(counted_ma, rel=0.05)
        draws = draw_profile(profile, 200, 0)
        busy = exposure.busy_seconds(profile, draws.values)
        assert busy == pytest.approx(exposure.counted_busy_s * draws["cpi"] / profile.value("cpi"))
        assert exposure.counted_busy_s > 0


def _steady_messages_and_samples(path: Path, sealed: bool, payload_bytes: int = 1024) -> None:
    records = read_records(path)
    messages = [r for r in records if r["type"] == "message"]
    for m in messages:  # the firmware's three instants, in order on the lab's clock
        assert m["t_created_ns"] <= m["t_sealed_ns"] <= m["t_published_ns"], m
    seals = {m["instructions_seal"] for m in messages[1:]}
    # the scheme's seal costs the same every time (one size); without one nothing is sealed
    assert (len(seals) == 1 and seals.pop() > 10_000) if sealed else seals == {0}
    # One message costs the same instructions every time after the first (its TLS record
    # protection and MQTT encoding are the same work), and some of them are crypto.
    per_message = [m["instructions_crypto"] + m["instructions_protocol"] for m in messages]
    steady = per_message[1:]
    assert max(steady) - min(steady) <= 0.01 * statistics.mean(steady)
    assert all(m["instructions_crypto"] > 0 for m in messages)
    samples = [r for r in records if r["type"] == "sample"]
    assert len(samples) >= 15  # 10 Hz over 2 s, the handshake's windows merged
    assert samples[-1]["sleep_ns"] > 1_000_000_000  # most of the run asleep between messages
    assert samples[-1]["instructions_crypto"] > 0
    assert samples[-1]["tcp_bytes_sent"] > 20 * payload_bytes  # every message on the wire


# The payload-schemes study's lightweight ciphers (agents/native/crypto_lwc.c), all ten
# between the two targets: each sealed by the firmware and opened by the Python receiver.
LIGHTWEIGHT = {
    "rv32imc": ("psk-salsa20-256-blake2b", "psk-aes256-eax", "psk-ascon128v12",
                "psk-speck128-256-ctr-hmac", "psk-tinyaes128-ctr-hmac"),
    "cortex-m4": ("psk-salsa20-128-blake2b", "psk-aes128-eax", "psk-simon128-128-ctr-hmac",
                  "psk-simon128-256-ctr-hmac", "psk-speck128-128-ctr-hmac"),
}  # fmt: skip


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_lightweight_ciphers_on_the_device_are_opened_by_the_receiver(
    mosquitto, tmp_path, target
):
    """Byte for byte docs/wire-format.md: every message the firmware sealed with EAX,
    Ascon-128 v1.2, Salsa20 + BLAKE2b, SPECK, SIMON or tiny-AES-c is delivered and opened by
    the Python receiver (none rejected); each seal costs the same instructions every time,
    counted as crypto."""
    _ready(target)
    out = tmp_path / target
    configurations = LIGHTWEIGHT[target]
    # 300 B: a partial last block for every cipher (16- and 8-byte blocks), and little of the
    # emulated UART's time, so the slow Cortex-M4 emulation keeps 10 Hz under a loaded machine
    code, text = _run(
        out, target, "--configs", ",".join(configurations), "--payload", "300", "--qos", "1"
    )
    assert code == 0, text
    rows = _query(
        out,
        "select configuration, status, messages_sent, messages_delivered, auth_failures, "
        "cost_method, run_dir from runs order by configuration",
    )
    assert [row[0] for row in rows] == sorted(configurations)
    for configuration, status, sent, delivered, forged, method, run_dir in rows:
        assert (status, sent, delivered, forged, method) == ("ok", 20, 20, 0, "counted"), (
            configuration
        )
        _steady_messages_and_samples(out / run_dir / "emitter.jsonl", True, payload_bytes=300)


# ML-KEM key establishment (agents/native/crypto_mlkem.c on wolfCrypt): the pure and the hybrid
# exchange on rv32imc, the pure one on the slower Cortex-M4 emulation.
MLKEM = {
    "rv32imc": ("mlkem768-aes128-gcm", "x25519mlkem768-chacha20-poly1305"),
    "cortex-m4": ("mlkem768-aes128-gcm",),
}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_mlkem_key_establishment_on_the_device_is_opened_and_counted(mosquitto, tmp_path, target):
    """The firmware encapsulates to the Python receiver's fresh ML-KEM-768 key (docs/wire-
    format.md: E is the 1,088-byte ciphertext, the hybrid's with its X25519 key): the receiver
    decapsulates, confirms, and opens every message; the key exchange is counted as a group
    of its own, ML-KEM's share booked to its family (one Encaps: 1-2.5 M instructions, bench
    crypto --target's mlkem768-encaps), with its stack and heap peaks."""
    _ready(target)
    out = tmp_path / target
    configurations = MLKEM[target]
    code, text = _run(out, target, "--configs", ",".join(configurations), "--payload", "64")
    assert code == 0, text
    rows = _query(
        out,
        "select configuration, status, messages_sent, messages_delivered, auth_failures, "
        "details_json, run_dir from runs order by configuration",
    )
    assert [row[0] for row in rows] == sorted(configurations)
    for configuration, status, sent, delivered, rejected, details, run_dir in rows:
        assert (status, sent, delivered, rejected) == ("ok", 20, 20, 0), configuration
        exchange = json.loads(details)["counted"]["key_exchange"]
        assert 1_000_000 < exchange["primitives"]["mlkem"] < 2_500_000, configuration
        assert exchange["instructions"] > exchange["primitives"]["mlkem"]
        assert exchange["primitives"].get("pk", 0) > (0 if "x25519" in configuration else -1)
        assert 2_000 < exchange["stack_high_water_bytes"] < 32_768  # the board's stack region
        assert exchange["heap_peak_bytes"] > 2_400  # the receiver's key and our reply at least
        records = read_records(out / run_dir / "emitter.jsonl")
        (phase,) = [r for r in records if r["type"] == "handshake" and r["phase"] == "key_exchange"]
        hybrid = "x25519" in configuration
        assert phase["detail"]["bytes_out"] == 1 + 16 + 1088 + (32 if hybrid else 0)
        # one Encaps, inside the phase's span (hello received .. confirmation verified)
        assert phase["detail"]["instructions_mlkem"] == exchange["primitives"]["mlkem"]
    assert "key exchange" in text and f"counted on {target}" in text  # the summary's line


def test_a_rate_the_emulation_cannot_keep_fails_naming_the_rate(mosquitto, tmp_path):
    """4 KiB over TLS at 400 Hz is beyond the emulated UART (one byte at a time): the run
    fails, saying what it achieved, instead of publishing slower in silence."""
    _ready("rv32imc")
    out = tmp_path / "fast"
    code, text = _run(
        out, "rv32imc", "--configs", "tls1.2", "--payload", "4096", "--qos", "0",
        "--rate", "400", "--duration", "4",
    )  # fmt: skip
    assert code == 1, text
    ((status, error),) = _query(out, "select status, error from runs")
    assert status == "failed"
    assert "cannot keep the rate" in error and "achieved" in error and "400.000 Hz" in error


def test_a_psk_scheme_on_the_device_and_its_report_say_counted(mosquitto, tmp_path):
    """A psk-* scheme (the payload-schemes study's key establishment): the runner's key
    reaches the firmware, the Python receiver opens every message; the report of the run
    labels the emitter's figures counted on the target, the receiver's modelled."""
    _ready("rv32imc")
    out = tmp_path / "psk"
    # 10 s: the analysis behind the current's findings needs 10 one-second values per run
    code, text = _run(
        out, "rv32imc", "--configs", "plain,psk-aes128-ccm8", "--payload", "512",
        "--duration", "10",
    )  # fmt: skip
    assert code == 0, text
    assert "The device client's firmware (counted on rv32imc" in text  # the stack table
    rows = _query(out, "select configuration, status, messages_delivered, auth_failures from runs")
    assert sorted(rows) == [("plain", "ok", 100, 0), ("psk-aes128-ccm8", "ok", 100, 0)]
    # analyze and report on the stored runs: forks of the pre-imported CLI (tests/cli_server.py)
    analysed = run_cli_forked("analyze", str(out), timeout=300)  # the findings' current
    assert analysed.returncode == 0, analysed.stderr
    report = run_cli_forked("report", str(out), "--json", timeout=300)
    assert report.returncode == 0, report.stderr
    kinds = {(f["metric"], f["role"]): f["kind"] for f in json.loads(report.stdout)["findings"]}
    assert kinds[("current_ma", "emitter")] == "counted on rv32imc"
    assert kinds[("current_ma", "receiver")] == "modelled"
    counted = {"current_ma", "energy_mah", "cpu_us_per_message"}  # whichever one run supports
    emitter = [kind for (key, role), kind in kinds.items() if role == "emitter" and key in counted]
    assert emitter and set(emitter) == {"counted on rv32imc"}
    # The report's table of the counts: each configuration's set-up, as the summary says it.
    table = (out / "report" / "tables" / "counted.csv").read_text().splitlines()
    assert table[0].startswith("configuration,runs,set_up") and len(table) == 3, table


def test_a_fleet_of_virtual_devices_delivers_every_device_counted(mosquitto, tmp_path):
    """--devices 2 with --target: two QEMUs, each its own device with its own topics and
    receiver, every message of both delivered; the run's fleet figures stored."""
    _ready("rv32imc")
    out = tmp_path / "fleet"
    code, text = _run(out, "rv32imc", "--configs", "tls1.2", "--payload", "256", "--devices", "2")
    assert code == 0, text
    ((status, size, sent, delivered, method),) = _query(
        out, "select status, fleet_size, messages_sent, messages_delivered, cost_method from runs"
    )
    assert (status, size, sent, delivered, method) == ("ok", 2, 40, 40, "counted")
    ((run_dir,),) = _query(out, "select run_dir from runs")
    for device in ("d0", "d1"):  # each device's emitter was its own firmware
        records = read_records(out / run_dir / "devices" / device / "emitter.jsonl")
        assert sum(r["type"] == "message" for r in records) == 20
        assert any(r["type"] == "sample" and r["instructions_crypto"] > 0 for r in records)
