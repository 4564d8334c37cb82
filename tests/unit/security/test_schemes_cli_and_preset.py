"""`iotsecbench schemes` groups by cipher (readable), `--all`/`--json` list every scheme; the
`payload-schemes` preset reproduces the study's grid; `bench crypto` runs end to end."""

from __future__ import annotations

import json
import os

import pytest
from tests.conftest import run_cli_forked

from iotsecbench.security import scheme_names
from iotsecbench.spec.load import load_spec


@pytest.mark.integration
def test_schemes_table_is_grouped_by_cipher():
    cli = run_cli_forked  # three listings: forks of the pre-imported CLI (tests/cli_server.py)
    result = cli("schemes")
    assert result.returncode == 0, result.stderr
    assert "x25519" in result.stdout and "salsa20-128-blake2b" in result.stdout
    assert len(result.stdout.splitlines()) < 80  # not one row per combination
    everything = cli("schemes", "--all")
    assert "rsa-oaep-aes256-gcm" in everything.stdout
    listed = json.loads(cli("schemes", "--json").stdout)
    assert {entry["name"] for entry in listed} == set(scheme_names())


def test_payload_schemes_preset_is_the_study_grid():
    spec = load_spec(None, "payload-schemes", {})
    assert spec.payload_bytes == [1024, 5120, 10240]
    assert spec.repetitions == 10 and spec.duration_s * spec.rate_hz[0] == 100
    ciphers = {name.removeprefix("psk-") for name in spec.configurations}
    for study_cipher in ("salsa20-128-blake2b", "salsa20-256-blake2b", "aes128-eax", "aes256-eax",
                         "aes128-gcm", "aes256-gcm", "aes128-ccm8", "aes256-ccm8",
                         "tinyaes128-ctr-hmac", "ascon128v12", "simon128-128-ctr-hmac",
                         "simon128-256-ctr-hmac", "speck128-128-ctr-hmac",
                         "speck128-256-ctr-hmac", "chacha20-poly1305"):  # fmt: skip
        assert study_cipher in ciphers


@pytest.mark.integration
def test_bench_crypto_end_to_end(cli, tmp_path):
    out_json, out_csv, plot = tmp_path / "b.json", tmp_path / "b.csv", tmp_path / "b.png"
    result = cli(
        "bench", "crypto", "--schemes", "aes128-gcm,x25519-chacha20-poly1305", "--sizes", "16,256",
        "--repetitions", "5", "--json", str(out_json), "--csv", str(out_csv), "--plot", str(plot),
        "--cpu", str(max(os.sched_getaffinity(0))),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(out_json.read_text())
    assert data["format_version"] == 2 and len(data["results"]) == 4
    assert "target" not in data  # counted on a virtual MCU only with --target
    row = data["results"][0]
    for key in ("seal", "open", "harness_ns", "expansion_bytes", "peak_heap_bytes", "provenance"):
        assert key in row
    assert row["seal"]["q1_ns"] <= row["seal"]["median_ns"] <= row["seal"]["q3_ns"]
    assert set(data["key_establishment_ns"]) == {"psk", "x25519"}
    assert out_csv.read_text().count("\n") == 5 and plot.stat().st_size > 1000
    assert data["environment"]["cpu_affinity"] == [max(os.sched_getaffinity(0))]
    # The refusals: forks of the pre-imported CLI (tests/cli_server.py).
    bad = run_cli_forked("bench", "crypto", "--schemes", "aes128-gmc")
    assert bad.returncode == 2 and "did you mean" in bad.stderr
    no_target = run_cli_forked("bench", "crypto", "--target", "avr", "--schemes", "aes128-gcm")
    assert no_target.returncode == 2 and "rv32imc, cortex-m4" in no_target.stderr
    no_build = run_cli_forked(
        "bench", "crypto", "--target", "rv32imc", "--schemes", "aes128-gcm,aes128-eax"
    )
    assert no_build.returncode == 2 and "aes128-eax has no virtual-MCU build" in no_build.stderr
    no_board = run_cli_forked(
        "bench", "crypto", "--public-key", "x25519", "--schemes", "aes128-gcm"
    )
    assert no_board.returncode == 2 and "give --target too" in no_board.stderr
    no_device = run_cli_forked("bench", "crypto", "--device-library", "--schemes", "aes128-gcm")
    assert no_device.returncode == 2 and "give --target too" in no_device.stderr
    no_family = run_cli_forked("bench", "crypto", "--target", "rv32imc", "--public-key", "x448")
    assert no_family.returncode == 2 and "unknown public-key family x448" in no_family.stderr
    no_such_cpu = run_cli_forked("bench", "crypto", "--cpu", "4096")
    assert no_such_cpu.returncode == 2 and "--cpu 4096 is not a CPU" in no_such_cpu.stderr
