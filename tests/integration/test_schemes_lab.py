"""Payload schemes on a real mosquitto: every key establishment over MQTT, and the issue's
check — a message captured with ``mosquitto_sub`` during a run decrypts with an independent
program (tests/independent_decrypt.py) that uses only docs/wire-format.md and the key log.

Capture: the broker's ACL lets only the receiver account read the data topic, so the test
subscribes with ``mosquitto_sub`` under the receiver's credentials, read from the run's own
0600 agent config (a second client of the same account, with its own client id).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import REPO, run_cli
from tests.native_agents import needs_native

pytestmark = pytest.mark.integration


def _capture(out: Path, stop: threading.Event, captured: dict[str, list[str]]) -> None:
    """Start one mosquitto_sub per run as soon as its receiver config appears."""
    started: dict[Path, subprocess.Popen] = {}
    while not stop.is_set():
        for config_path in out.glob("runs/*/receiver.config.json"):
            if config_path in started:
                continue
            config = json.loads(config_path.read_text())
            started[config_path] = subprocess.Popen(
                [
                    "mosquitto_sub", "-h", config["host"], "-p", str(config["port"]),
                    "-u", config["username"], "-P", config["password"],
                    "-i", f"capture-{len(started)}", "-t", config["topic_prefix"] + "/data",
                    "-q", "1", "-C", "3", "-W", "20", "-F", "%x",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )  # fmt: skip
        time.sleep(0.01)
    for config_path, process in started.items():
        stdout, _ = process.communicate(timeout=30)
        captured[config_path.parent.name] = stdout.split()


@pytest.mark.skipif(shutil.which("mosquitto_sub") is None, reason="mosquitto_sub not installed")
@pytest.mark.parametrize(
    "stack", ["openssl", pytest.param("mbedtls", marks=needs_native)]
)  # the native receiver logs the session keys in C (agents/native/scheme.c)
def test_captured_messages_decrypt_with_an_independent_program(mosquitto, tmp_path, stack):
    out, keylog = tmp_path / "results", tmp_path / "keys.log"
    configurations = ["x25519-chacha20-poly1305", "psk-aes128-ctr-hmac"]
    stop, captured = threading.Event(), {}
    capture = threading.Thread(target=_capture, args=(out, stop, captured))
    capture.start()
    try:
        result = run_cli(
            "run", "--configs", ",".join(configurations), "--duration", "2", "--reps", "1",
            "--out", str(out), "--keylog", str(keylog), "--stack", stack, "--quiet",
            "--no-report",
        )  # fmt: skip
    finally:
        stop.set()
        capture.join(timeout=60)
    assert result.returncode == 0, result.stderr + result.stdout
    assert keylog.stat().st_mode & 0o777 == 0o600
    assert len(captured) == 2 and all(len(m) == 3 for m in captured.values()), captured
    for run_name, messages in captured.items():
        decrypted = subprocess.run(
            [
                sys.executable,
                str(REPO / "tests" / "independent_decrypt.py"),
                str(keylog),
                *messages,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert decrypted.returncode == 0, (run_name, decrypted.stdout, decrypted.stderr)
        for line in decrypted.stdout.splitlines():
            _session, seq, plaintext = line.split()
            # The application message: seq (8, big-endian) | t_created_ns (8) | filler.
            assert int(plaintext[:16], 16) == int(seq)
            assert len(plaintext) // 2 == 256
    # The pre-shared key file is gone and no key from the log is in the results.
    assert not list(out.glob("runs/*/psk.key"))
    secrets = [
        field.split("=")[1]
        for field in keylog.read_text().split()
        if field.startswith(("enc=", "mac=", "nonce_prefix="))
    ]
    assert len(secrets) == 2 * 2 * 3  # two sessions, two directions, three values
    for path in out.rglob("*"):
        if path.is_file() and not path.name.endswith(".config.json"):
            content = path.read_bytes()
            assert not any(secret.encode() in content for secret in secrets), path


def test_every_key_establishment_runs_over_mqtt(mosquitto, tmp_path):
    out = tmp_path / "results"
    configurations = [
        "ffdhe2048-aes256-ccm8",
        "dh-sha256-aes128-ctr-hmac",
        "tls1.3+rsa-oaep-aes256-gcm",
        "ecdh-p256-salsa20-256-blake2b",
    ]
    result = run_cli(
        "run", "--configs", ",".join(configurations), "--duration", "1", "--reps", "1",
        "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr + result.stdout
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as db:
        runs = db.execute("select configuration, status, provenance_json from runs").fetchall()
        phases = db.execute(
            "select count(*) from handshakes where phase = 'key_exchange'"
        ).fetchone()
    assert sorted((c, s) for c, s, _ in runs) == sorted((c, "ok") for c in configurations)
    assert phases[0] == 2 * len(configurations)  # emitter and receiver, every run
    provenance = {c: json.loads(p) for c, _, p in runs}
    assert provenance["ecdh-p256-salsa20-256-blake2b"]["library"] == "iotsecbench"  # our C
