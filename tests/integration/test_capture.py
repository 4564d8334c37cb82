"""`run --capture` with a real mosquitto, real TLS and Debian's dumpcap, editcap and tshark:
the captures open decrypted with no key log file, and show what the store counted."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from iotsecbench.agents import wire
from iotsecbench.errors import NoPermissionError
from iotsecbench.lab import capture, network
from tests.capture_tools import DISSECTOR, tshark, tshark_fields
from tests.conftest import query, run_cli

pytestmark = pytest.mark.integration

CONFIGURATIONS = ("plain", "tls1.2", "tls1.3", "ecdh-p256-aes128-gcm")
PROBLEM = capture.capture_problem()
# A missing tool is a lab part setup.sh installs (a failure under CI=true); a missing
# privilege is the machine's limit (a skip).
SKIP_REASON = (
    "no privilege to capture"
    if isinstance(PROBLEM, NoPermissionError)
    else "wireshark-common (dumpcap, editcap) not installed"
)
needs_capture = pytest.mark.skipif(PROBLEM is not None, reason=f"{SKIP_REASON}: {PROBLEM}")


@pytest.fixture(scope="module")
def results(mosquitto: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One experiment of four runs (~30 s), shared by the slow tests below."""
    if PROBLEM is not None:
        pytest.skip(f"{SKIP_REASON}: {PROBLEM}")
    directory = tmp_path_factory.mktemp("capture")
    out = directory / "results"
    result = run_cli(
        "run", "--configs", ",".join(CONFIGURATIONS), "--duration", "1", "--rate", "20",
        "--reps", "1", "--capture", "--keylog", str(directory / "keys.log"),
        "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    return out


def _capture_of(results: Path, configuration: str) -> tuple[str, dict]:
    [(run_id, details)] = query(
        results, "select run_id, details_json from runs where configuration = ?", configuration
    )
    return run_id, json.loads(details)["capture"]


def _stored_payloads(results: Path, run_id: str) -> dict[int, bytes]:
    """seq → the plaintext the emitter sealed: seq | t_created_ns | the seeded filler."""
    [(seed, payload_bytes)] = query(
        results,
        "select e.seed, r.payload_bytes from runs r join experiments e using (experiment_id) "
        "where r.run_id = ?",
        run_id,
    )
    filler = wire.make_filler(payload_bytes, seed)  # one device: seed + device index 0
    rows = query(results, "select seq, t_created_ns from messages where run_id = ?", run_id)
    return {seq: wire.encode(seq, created, filler) for seq, created in rows}


def _publishes(path: Path, entry: dict, *options: str) -> list[tuple[int, str, str]]:
    """(destination port, topic, payload hex) of every MQTT PUBLISH, in capture order."""
    decode = entry_decode_options(entry)
    rows = tshark_fields(
        path,
        ["tcp.dstport", "mqtt.topic", "mqtt.msg"],
        *decode,
        *options,
        display_filter="mqtt.msgtype == 3",
    )
    publishes = []
    for port, topics, messages in rows:
        topics_, messages_ = topics.split(","), messages.split(",")
        assert len(topics_) == len(messages_)
        publishes += [(int(port), t, m) for t, m in zip(topics_, messages_, strict=True)]
    return publishes


def entry_decode_options(entry: dict) -> list[str]:
    port = entry["tcp_port"]
    if entry["tls"]:
        return ["-d", f"tcp.port=={port},tls", "-d", f"tls.port=={port},mqtt"]
    return ["-d", f"tcp.port=={port},mqtt"]


@pytest.mark.slow
def test_every_run_names_its_private_capture(results: Path) -> None:
    for configuration in CONFIGURATIONS:
        _, entry = _capture_of(results, configuration)
        path = results / entry["file"]
        assert path.name == capture.CAPTURE_FILE
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert entry["interface"] == "lo" and entry["capture_filter"].endswith(
            str(entry["tcp_port"])
        )
        assert entry["packets"] > 0 and entry["dropped_packets"] == 0
        assert entry["tls"] == configuration.startswith("tls")
        for side_file in (capture.RAW_FILE, capture.KEY_LOG_FILE):
            assert not (path.parent / side_file).exists()
        record = json.loads((path.parent / "record.json").read_text())
        assert json.loads(record["run"]["details_json"])["capture"] == entry


@pytest.mark.slow
@pytest.mark.parametrize("configuration", ["tls1.2", "tls1.3"])
def test_tls_captures_open_decrypted_without_a_key_log(results: Path, configuration: str) -> None:
    tshark()
    run_id, entry = _capture_of(results, configuration)
    assert entry["tls_secret_lines"] >= 2
    stored = _stored_payloads(results, run_id)
    port = entry["tcp_port"]
    to_broker = [
        bytes.fromhex(payload)
        for destination, topic, payload in _publishes(results / entry["file"], entry)
        if destination == port and topic.endswith("/data")
    ]
    [(sent,)] = query(results, "select messages_sent from runs where run_id = ?", run_id)
    assert len(to_broker) == sent == len(stored)
    for payload in to_broker:
        seq, _ = wire.decode(payload)
        assert payload == stored[seq]


@pytest.mark.slow
def test_a_plain_capture_shows_the_packets_the_store_counted(results: Path) -> None:
    run_id, entry = _capture_of(results, "plain")
    port = entry["tcp_port"]
    publishes = _publishes(results / entry["file"], entry)
    data = [(destination, payload) for destination, topic, payload in publishes if "/data" in topic]
    [(sent, received)] = query(
        results, "select messages_sent, messages_received from runs where run_id = ?", run_id
    )
    assert sum(1 for destination, _ in data if destination == port) == sent
    assert sum(1 for destination, _ in data if destination != port) == received
    stored = _stored_payloads(results, run_id)
    assert {bytes.fromhex(payload) for _, payload in data} == set(stored.values())


@pytest.mark.slow
def test_the_dissector_decrypts_a_scheme_run_from_the_capture_alone(results: Path) -> None:
    run_id, entry = _capture_of(results, "ecdh-p256-aes128-gcm")
    assert entry["session_key_lines"] == 2
    rows = tshark_fields(
        results / entry["file"],
        ["tcp.dstport", "iotsb.status", "iotsb.plaintext"],
        *entry_decode_options(entry),
        "-X",
        f"lua_script:{DISSECTOR}",
        display_filter=f"iotsb && tcp.dstport == {entry['tcp_port']}",
    )
    stored = _stored_payloads(results, run_id)
    opened = [
        bytes.fromhex(text) for _, statuses, plaintexts in rows for text in plaintexts.split(",")
    ]
    assert all(set(statuses.split(",")) == {"yes: tag verified"} for _, statuses, _ in rows)
    assert sorted(opened) == sorted(stored.values())


@pytest.mark.slow
def test_keylog_still_gets_every_runs_secrets(results: Path) -> None:
    lines = (results.parent / "keys.log").read_text().splitlines()
    assert sum(line.startswith("IOTSB_SESSION_KEYS") for line in lines) == 2
    assert sum(line.startswith("CLIENT_RANDOM") for line in lines) == 2  # TLS 1.2: 2 clients
    assert sum(line.startswith("CLIENT_TRAFFIC_SECRET_0") for line in lines) == 2


@pytest.mark.slow
@needs_capture
@pytest.mark.skipif(network.support_problem() is not None, reason="network emulation needs root")
def test_on_an_emulated_network_the_capture_is_the_devices_link(
    mosquitto: str, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    result = run_cli(
        "run", "--configs", "tls1.3", "--network", "ideal", "--duration", "1", "--rate", "10",
        "--reps", "1", "--capture", "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    run_id, entry = _capture_of(out, "tls1.3")
    assert entry["interface"].startswith("eth0 of the emitter's namespace")
    addresses = tshark_fields(out / entry["file"], ["ip.src", "ip.dst"], display_filter="tcp")
    # the emitter's link: the emitter and the broker only, never the receiver
    assert {address for row in addresses for address in row} == {
        network.ADDRESSES["emitter"],
        network.ADDRESSES["broker"],
    }
    stored = _stored_payloads(out, run_id)
    payloads = [
        bytes.fromhex(p) for _, t, p in _publishes(out / entry["file"], entry) if "/data" in t
    ]
    assert sorted(payloads) == sorted(stored.values())


def _refused(tmp_path: Path, *extra: str, prefix: list[str] | None = None, env=None):
    out = tmp_path / "never"
    argv = [sys.executable, "-m", "iotsecbench", "run", "--configs", "plain", "--duration", "1"]
    completed = subprocess.run(
        [*(prefix or []), *argv, "--out", str(out), "--quiet", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert not out.exists()  # refused before anything ran
    return completed


def test_capture_without_dumpcap_is_refused_before_anything_runs(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    result = _refused(tmp_path, "--capture", env={"PATH": str(empty)})
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and "dumpcap" in result.stderr
    assert "wireshark-common" in result.stderr


def test_capture_without_the_privilege_is_refused_before_anything_runs(tmp_path: Path) -> None:
    if capture._binary("dumpcap") is None:
        pytest.skip("dumpcap (wireshark) not installed: scripts/setup.sh --dev installs it")
    prefix = []
    if os.geteuid() == 0:  # root without the capabilities a capture needs
        setpriv = shutil.which("setpriv")
        if not setpriv:
            pytest.skip("setpriv (util-linux) not found: cannot drop the capture capabilities")
        drop = "-net_raw,-net_admin"
        prefix = [setpriv, "--bounding-set", drop, "--inh-caps", drop, "--"]
    result = _refused(tmp_path, "--capture", prefix=prefix)
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and "dumpcap cannot capture here" in result.stderr


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--executor", "dask"], "--executor local"),
        (["--simulate"], "--simulate"),
        (["--broker", "mqtt://127.0.0.1:1883"], "drop --broker"),
        (["--stack", "wolfssl", "--configs", "tls1.3"], "TLS 1.3 secret callback"),
    ],
)
def test_capture_where_it_cannot_work_is_a_usage_error(
    tmp_path: Path, options: list[str], named: str
) -> None:
    if PROBLEM is not None and ({"--stack", "--broker"} & set(options)):
        pytest.skip(f"{SKIP_REASON}: {PROBLEM}")
    result = _refused(tmp_path, "--capture", *options)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and named in result.stderr
