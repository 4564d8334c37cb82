"""calibrate --handshakes end to end in process: a synthetic table in, a calibrated profile
out; bad input ends with file:line, exit 4 and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.handshake_timings import HEADER, TRUTH, synthetic_rows

from iotsecbench.cli.app import main
from iotsecbench.energy.profile import load_profile


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["calibrate", *args])
        raise SystemExit(0)
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


def _table(path: Path, noise: float = 0.01) -> Path:
    rows, _ = synthetic_rows(noise)
    lines = [HEADER] + [
        f"esp32-wroom-32,{r.tls_version},{r.group},{r.signature_algorithm},{r.clock_mhz:g},"
        f"{r.cores},{r.seconds!r},false,{r.n}"
        for r in rows
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow  # over half a second of CPU (tests/lanes.py)
def test_calibrate_handshakes_writes_a_profile_that_loads(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    table, out = _table(tmp_path / "times.csv"), tmp_path / "fitted.toml"
    code, text, err = _run(capsys, "--handshakes", str(table), "--out", str(out), "--hold-out")
    assert code == 0, err
    profile = load_profile(out)
    assert profile.name == "esp32-wroom-32-calibrated"
    assert profile.numbers()["extra_core_slowdown"].status == "calibrated"
    low, high = profile.numbers()["extra_core_slowdown"].bounds
    assert low <= TRUTH["extra_core_slowdown"] <= high
    assert "held at their values" in text and "held out tls1.3/x25519/rsa3072" in text


@pytest.mark.parametrize(
    ("row", "fragment"),
    [
        ("esp32,1.3,x25519,ecdsa-p256,240,1,-1,false,10", ":2: seconds '-1'"),
        ("esp32,1.3,x25519,sphincs,240,1,0.5,false,10", ":2: TLS profile"),
    ],
)
def test_bad_tables_end_at_file_and_line_with_exit_4_and_nothing_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, row: str, fragment: str
) -> None:
    table, out = tmp_path / "times.csv", tmp_path / "fitted.toml"
    table.write_text(f"{HEADER}\n{row}\n")
    code, _, err = _run(capsys, "--handshakes", str(table), "--out", str(out))
    assert code == 4 and fragment in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_too_few_rows_is_exit_4(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    table, out = tmp_path / "times.csv", tmp_path / "fitted.toml"
    table.write_text(f"{HEADER}\nesp32-wroom-32,1.3,x25519,ecdsa-p256,240,1,0.5,false,10\n")
    code, _, err = _run(capsys, "--handshakes", str(table), "--out", str(out))
    assert code == 4 and "fewer points than parameters" in err and not out.exists()


def test_calibrate_benchmark_prices_the_profile_from_a_real_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = Path(__file__).parents[2] / "data" / "benchmarks" / "wolfcrypt-esp32-hw-240mhz.txt"
    out = tmp_path / "priced.toml"
    code, text, err = _run(capsys, "--benchmark", str(log), "--out", str(out))
    assert code == 0, err
    verify = load_profile(out).numbers()["ecdsa-p256-verify.per_operation"]
    assert verify.value == pytest.approx(506.5) and verify.status == "calibrated"
    assert "skipped (the model prices no such primitive): RNG" in text


def test_calibrate_benchmark_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log, out = tmp_path / "log.txt", tmp_path / "priced.toml"
    log.write_text("| ml-kem-768 | clean | AVG: 1 | AVG: 2 | AVG: 3 |\n")
    code, _, err = _run(capsys, "--benchmark", str(log), "--format", "pqm4", "--out", str(out))
    assert code == 4 and "give the clock" in err and not out.exists()
    code, _, err = _run(capsys, "--benchmark", str(log), "--format", "nss", "--out", str(out))
    assert code == 4 and "unknown benchmark format 'nss'" in err and not out.exists()
    code, _, err = _run(
        capsys, "--benchmark", str(log), "--handshakes", str(log), "--out", str(out)
    )
    assert code == 2 and "give one" in err
