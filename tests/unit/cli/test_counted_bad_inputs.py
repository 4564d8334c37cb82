"""bench handshake --target refuses what it cannot do with one line, before anything runs:
exit 2 for a profile the device build cannot negotiate or an option of the traced method,
exit 3 for a missing cross toolchain or QEMU (docs/device-client.md)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from tests.conftest import run_cli_forked

from iotsecbench.vmcu import TARGETS

pytestmark = pytest.mark.integration  # each runs the command line in a process of its own


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["--target", "rv32imc", "--profiles", "tls1.3/x25519/ed25519"], "not ed25519"),
        (
            [
                "--target",
                "cortex-m4",
                "--stack",
                "mbedtls",
                "--profiles",
                "tls1.3/x25519mlkem768/ecdsa-p256",
            ],
            "offers the groups",
        ),
        (["--target", "avr", "--profiles", "tls1.2/rsa2048"], "unknown target 'avr'"),
        (["--target", "rv32imc", "--profiles", "tls1.2/rsa2048", "--trace"], "--trace belong"),
        (
            ["--target", "rv32imc", "--profiles", "tls1.2/rsa2048", "--stack", "openssl-3.5"],
            "mbedtls or wolfssl",
        ),
        # issue 40: bounds, pointless options and outputs, before the firmware is built
        (["--target", "rv32imc", "--profiles", "plain", "--warmup", "0"], "--warmup belong"),
        (["--target", "rv32imc", "--profiles", "plain", "--seed", "-1"], "--seed"),
        (["--target", "rv32imc", "--profiles", "plain", "--reps", "100001"], "--reps"),
        (["--target", "rv32imc", "--profiles", "plain", "--network", "mars"], "--network"),
        (["--target", "rv32imc", "--profiles", "plain", "--json", "/"], "--json / is a dir"),
    ],
)
def test_refused_before_anything_runs(cli, tmp_path, arguments, fragment):
    result = cli("bench", "handshake", *arguments, "--out", str(tmp_path / "out"), timeout=60)
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "lab").exists()  # no broker, no PKI, no QEMU


def test_a_missing_toolchain_is_one_line_and_exit_3(cli, tmp_path):
    result = cli("bench", "handshake", "--target", "rv32imc", "--profiles", "tls1.2/rsa2048",
                 "--out", str(tmp_path / "out"), env={"PATH": "/nonexistent"})  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "apt-get install" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1  # the stack's note waits for a run


def test_a_missing_qemu_is_one_line_and_exit_3(cli, tmp_path):
    """The compilers are there, the emulator is not."""
    target = TARGETS["cortex-m4"]
    tools = [target.compiler, f"{target.prefix}-ar", f"{target.prefix}-size"]
    if any(shutil.which(tool) is None for tool in tools):
        pytest.skip("the virtual-MCU target cortex-m4 needs its toolchain for this test")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        os.symlink(shutil.which(tool), bin_dir / tool)
    result = cli("bench", "handshake", "--target", "cortex-m4", "--profiles", "tls1.2/rsa2048",
                 "--out", str(tmp_path / "out"), env={"PATH": str(bin_dir)})  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "qemu-system-arm" in result.stderr and "Traceback" not in result.stderr
    assert not Path(tmp_path / "out" / "lab").exists()


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["--rate", "max"], "tcp transport's on the device"),
        (["--transport", "tcp", "--configs", "plain,tls1.2"], "without TLS"),
        (["--configs", "psk-ascon128v12-purepy"], "no device counterpart"),
        (["--configs", "tls1.2+psk-speck128-128-ctr-hmac"], "over TLS"),
    ],
)
def test_run_target_refuses_what_the_firmware_cannot_run(tmp_path, arguments, fragment):
    """Saturating MQTT (the firmware paces its PUBLISHes; the tcp role saturates), TLS over the
    tcp role, and a named scheme the firmware does not have: one line, exit 2, nothing started
    (a preset's subset is the run's own note)."""
    result = run_cli_forked(
        "run", "--target", "rv32imc", *arguments, "--out", str(tmp_path / "out")
    )
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if not line.startswith("note:")]
    assert len(errors) == 1, result.stderr  # (the profile's note may come first)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # two simulated experiments of sixteen runs
def test_a_preset_on_the_device_runs_its_subset_names_the_rest_and_resumes(cli, tmp_path):
    """--preset payload-schemes --target: the sixteen configurations the firmware has
    (simulated here: what is stored, said and resumed is the CLI's), the pure-Python Ascon
    named with why on the terminal and in the stored description; --resume with the same
    options agrees with it."""
    out = tmp_path / "out"
    options = ["--preset", "payload-schemes", "--target", "rv32imc", "--simulate",
               "--duration", "1", "--payload", "1024", "--no-report", "--quiet",
               "--out", str(out)]  # fmt: skip
    first = cli("run", *options, "--reps", "1")
    assert first.returncode == 0, first.stderr
    assert "runs 16 of its 17 configurations" in first.stderr
    assert "psk-ascon128v12-purepy: the pure-Python build" in first.stderr
    stored = json.loads((out / "spec.json").read_text())
    assert len(stored["configurations"]) == 16 and stored["device"] == "esp32-c3"
    assert "without psk-ascon128v12-purepy" in stored["description"]
    again = cli("run", *options, "--reps", "2", "--resume")
    assert again.returncode == 0, again.stderr
    assert "16 runs executed, 16 kept" in again.stdout
