"""Benchmark programs' output read into prices (energy.benchmark_logs): a wolfCrypt log
captured on a real ESP32 (tests/data/benchmarks/, cited there) is reproduced entry by entry by
the profile calibrated from it; Mbed TLS and pqm4 formats; bad input at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from iotsecbench.energy.benchmark_logs import prices_from_log, read_benchmark_log
from iotsecbench.energy.handshake import operation_seconds
from iotsecbench.energy.profile import load_profile
from iotsecbench.energy.uncertainty import point_values
from iotsecbench.errors import DataError

DATA = Path(__file__).parents[2] / "data" / "benchmarks"
WOLFCRYPT = DATA / "wolfcrypt-esp32-hw-240mhz.txt"


def test_the_wolfcrypt_log_of_a_real_esp32_is_read_with_its_clock() -> None:
    log = read_benchmark_log(WOLFCRYPT, "wolfcrypt")
    assert log.clock_mhz == 240.0 and len(log.sha256) == 64
    by_primitive = {e.primitive: e for e in log.entries}
    assert by_primitive["aes-gcm"].amount == 400 * 1024
    assert by_primitive["ecdsa-p256-verify"].seconds == 1.013
    assert by_primitive["ecdsa-p256-verify"].amount == 2
    assert "x25519-derive" in by_primitive and "ed25519-verify" in by_primitive
    assert "MD5" in log.skipped and "AES-256-GCM-enc" in log.skipped


def test_the_profile_calibrated_from_the_log_reproduces_its_entries() -> None:
    """Each priced entry's time, recomputed by the model on the calibrated profile for the
    same bytes or operations, is the log's (the per-call cost aside: set to 0 here)."""
    log = read_benchmark_log(WOLFCRYPT, "wolfcrypt")
    calibrated, priced, _ = prices_from_log(load_profile("esp32-wroom-32"), log, "test")
    assert len(priced) >= 12
    values = dict(point_values(calibrated))
    for name, cost in calibrated.primitives.items():
        if cost.kind == "bulk":
            values[f"{name}.per_call"] = 0.0
    for p in priced:
        modelled = operation_seconds(calibrated, values, p.entry.primitive, int(p.entry.amount))
        assert modelled == pytest.approx(p.entry.seconds, rel=1e-9), p.entry.label
        number = calibrated.numbers()[p.number]
        assert number.status == "calibrated" and f"line {p.entry.line}" in number.source
    # the log's own cycles per byte for AES-128-GCM: 604.25
    assert calibrated.numbers()["aes-gcm.cycles_per_byte"].value == pytest.approx(604.2, rel=1e-3)


def test_a_log_at_another_clock_converts_by_each_share() -> None:
    """At 80 MHz an operation with clock-scaled share s takes (s·3 + 1 − s) times its
    240 MHz time: the price at the profile's clock divides that back out."""
    log = read_benchmark_log(WOLFCRYPT, "wolfcrypt", clock_mhz=80)
    profile = load_profile("esp32-wroom-32")
    calibrated, _, _ = prices_from_log(profile, log)
    share = profile.primitives["ecdsa-p256-verify"].clock_scaled_share
    s = share.value if share is not None else 1.0
    verify = calibrated.numbers()["ecdsa-p256-verify.per_operation"].value
    assert verify == pytest.approx(506.5 / (3 * s + 1 - s), rel=1e-9)


def test_mbedtls_output_in_both_styles() -> None:
    log = read_benchmark_log(DATA / "mbedtls-mbed-os-example.txt", "mbedtls", clock_mhz=120)
    by_primitive = {e.primitive: e for e in log.entries}
    assert by_primitive["aes-gcm"].amount / by_primitive["aes-gcm"].seconds == 486_000
    assert by_primitive["rsa2048-public"].seconds == pytest.approx(0.028)
    assert by_primitive["ecdh-p256-derive"].seconds == pytest.approx(0.281)
    assert by_primitive["ecdh-p256-keygen"].seconds == pytest.approx(0.566 - 0.281)
    assert by_primitive["x25519-keygen"].seconds == pytest.approx(0.533 - 0.268)
    assert "SHA-512" in log.skipped


def test_pqm4_tables_count_cycles_at_the_clock_given(tmp_path: Path) -> None:
    table = tmp_path / "benchmarks.md"
    table.write_text(
        "| scheme | implementation | key generation [cycles] | encapsulation [cycles] | "
        "decapsulation [cycles] |\n| ------ | ------ | ----: | ----: | ----: |\n"
        "| ml-kem-768 (100 executions) | clean | AVG: 1,200,000 <br /> MIN: 1 | AVG: 1,440,000 "
        "| AVG: 1,680,000 |\n"
    )
    log = read_benchmark_log(table, "pqm4", clock_mhz=24)
    assert [(e.primitive, e.seconds) for e in log.entries] == [
        ("mlkem768-keygen", pytest.approx(0.05)),
        ("mlkem768-encaps", pytest.approx(0.06)),
        ("mlkem768-decaps", pytest.approx(0.07)),
    ]
    with pytest.raises(DataError, match="give the clock"):
        read_benchmark_log(table, "pqm4")


@pytest.mark.parametrize(
    ("format", "text", "fragment"),
    [
        ("wolfcrypt", "nothing here\n", ":1: no priced primitive"),
        ("wolfcrypt", "SHA-256   24600 KiB took 0 seconds, x\n", ":1: time '0' must be positive"),
        ("pqm4", "| sphincs-128f | clean | AVG: 5 | AVG: 6 | AVG: 7 |\n", ":1: unknown primitive"),
        ("pqm4", "| ml-kem-512 | clean | AVG: fast | AVG: 6 | AVG: 7 |\n", ":1: cycles"),
        ("botan", "x\n", "unknown benchmark format 'botan'"),
    ],
)
def test_bad_input_ends_at_file_and_line(
    tmp_path: Path, format: str, text: str, fragment: str
) -> None:
    path = tmp_path / "log.txt"
    path.write_text(text)
    with pytest.raises(DataError) as caught:
        read_benchmark_log(path, format, clock_mhz=24)
    assert fragment in str(caught.value) and str(path) in str(caught.value)
