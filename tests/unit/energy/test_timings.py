"""Calibration from handshake times (energy.timings): synthetic tables made from a known
profile plus noise give back its shares, core factor and prices within their ranges; what the
rows cannot separate is held and said; bad files end at file:line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.handshake_timings import HEADER, PROFILE, TRUTH, synthetic_rows

from iotsecbench.energy.calibrate import profile_toml
from iotsecbench.energy.profile import load_profile
from iotsecbench.energy.timings import fit_handshakes, read_handshake_timings
from iotsecbench.errors import DataError


def test_the_fit_recovers_the_shares_core_factor_and_prices_within_their_ranges() -> None:
    rows, operations = synthetic_rows(noise=0.01)
    fit = fit_handshakes(PROFILE, rows, operations, "ab" * 32, version="test")
    fitted = {f.name: f for f in fit.fitted}
    numbers = fit.profile.numbers()
    for name, true in TRUTH.items():
        assert name in fitted, (name, fit.held)
        low, high = numbers[name].bounds
        assert low <= true <= high, (name, fitted[name], (low, high))
        assert numbers[name].status == "calibrated" and "abababababababab" in numbers[name].source
    # keygen and derive always come together: only their sum is seen, keygen is held
    assert "x25519-keygen.per_operation" in fit.held
    assert "x25519-keygen.per_operation" in numbers["x25519-derive.per_operation"].source
    # the noise left: σ·√((m − p)/m) for m rows and p fitted numbers, give or take
    expected = 0.01 * np.sqrt((len(rows) - len(fit.fitted)) / len(rows))
    assert 0.5 * expected < fit.rms_relative < 1.5 * expected


@pytest.mark.slow  # over half a second of CPU (tests/lanes.py)
def test_without_noise_the_fit_is_exact_and_hold_out_predicts_each_configuration() -> None:
    rows, operations = synthetic_rows(noise=0.0)
    fit = fit_handshakes(PROFILE, rows, operations, "0" * 64, hold_out=True)
    for name, true in TRUTH.items():
        assert fit.profile.numbers()[name].value == pytest.approx(true, rel=1e-4), name
    assert len(fit.held_out) == len(rows)  # each configuration (row) predicted without it
    assert max(abs(h.error) for h in fit.held_out) < 1e-3


def test_too_few_rows_and_network_rows(tmp_path: Path) -> None:
    rows, operations = synthetic_rows(noise=0.0)
    with pytest.raises(DataError, match="fewer points than parameters"):
        fit_handshakes(PROFILE, rows[:3], operations[:3], "0" * 64)
    waited = [r if i % 2 else r.__class__(**{**r.__dict__, "network_included": True})
              for i, r in enumerate(rows)]  # fmt: skip
    fit = fit_handshakes(PROFILE, waited, operations, "0" * 64)
    assert len(fit.left_out_rows) == len(rows) // 2


def test_the_calibrated_profile_loads_back(tmp_path: Path) -> None:
    rows, operations = synthetic_rows(noise=0.01)
    fit = fit_handshakes(PROFILE, rows, operations, "ab" * 32)
    path = tmp_path / "fitted.toml"
    path.write_text(profile_toml(fit.profile))
    assert load_profile(path).to_dict() == fit.profile.to_dict()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("device,tls_version\nesp32,1.3\n", ":1: missing column(s) group"),
        (f"{HEADER}\nesp32,1.3,x25519,ecdsa-p256,240,1,-0.5,false,10\n", ":2: seconds '-0.5'"),
        (
            f"{HEADER}\nesp32,1.3,x25519,ecdsa-p256,240,1,0.5,false,10\n"
            "esp32,1.3,x25519,ecdsa-p256,240,1,fast,false,10\n",
            ":3: seconds 'fast' is not a number",
        ),
        (f"{HEADER}\nesp32,1.4,x25519,ecdsa-p256,240,1,0.5,false,10\n", ":2: tls_version"),
        (f"{HEADER}\nesp32,1.3,x25519,ecdsa-p256,240,1,0.5,maybe,10\n", ":2: network_included"),
        (f"{HEADER}\nesp32,1.3,x25519,ecdsa-p256,240,1.5,0.5,false,10\n", ":2: cores and n"),
        (
            f"{HEADER},ci_low,ci_high\nesp32,1.3,x25519,ecdsa-p256,240,1,0.5,false,10,0.6,0.7\n",
            ":2: ci_low and ci_high",
        ),
        (f"{HEADER}\n", ":2: no rows"),
    ],
)
def test_bad_files_end_at_file_and_line(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "times.csv"
    path.write_text(text)
    with pytest.raises(DataError) as caught:
        read_handshake_timings(path)
    assert fragment in str(caught.value) and str(path) in str(caught.value)


def test_a_good_file_reads_with_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "times.csv"
    path.write_text(f"{HEADER},ci_low,ci_high\nesp32,TLS1.3,x25519,ecdsa-p256,240,2,0.5,no,10,"
                    "0.45,0.55\n")  # fmt: skip
    (row,), sha256 = read_handshake_timings(path)
    assert (row.tls_version, row.cores, row.network_included, row.ci_high) == (
        "1.3",
        2,
        False,
        0.55,
    )
    assert row.line == 2 and len(sha256) == 64
