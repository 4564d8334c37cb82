"""Calibration against injected truth (energy/calibrate.py): synthetic runs whose "measured"
current is the model under a profile with known, different numbers plus noise; the fit must
recover each number within 5 % and lower the residual on a run it did not see."""

from __future__ import annotations

import numpy as np
import pytest

from iotsecbench.energy.calibrate import (
    CalibrationRun,
    calibrate,
    default_names,
    fittable,
    profile_toml,
    with_values,
)
from iotsecbench.energy.model import Activity, Operation, model_current
from iotsecbench.energy.profile import load_profile
from iotsecbench.errors import DataError, SpecError

SAMPLE_NS = 100_000_000
TRUTH = {
    "idle_associated_current": 35.2,  # guess 32 (+10 %)
    "core_extra_current": 15.2,  # guess 19 (−20 %)
    "packet_overhead": None,  # × 1.3, set below from the packaged value
    "tx_current": 200.0,  # datasheet 180 (a module is not the chip of the datasheet)
}
FIT = list(TRUTH)


def truth(profile):
    values = dict(TRUTH)
    values["packet_overhead"] = profile.value("packet_overhead") * 1.3
    return values


def activity(seed: int, seconds: float = 60.0) -> dict:
    """A device that connects (ECDH), then sends messages of random size in bursts of random
    rate: every number to fit moves some windows differently from the others."""
    generator = np.random.default_rng(seed)
    t_ns = (np.arange(1, int(seconds * 10) + 1) * SAMPLE_NS).astype(np.int64)
    operations = [Operation(int(0.5e9), "ecdh-p256-keygen", 1)]
    operations.append(Operation(int(0.8e9), "ecdh-p256-derive", 1))
    sent = np.zeros(len(t_ns))
    segments = np.zeros(len(t_ns))
    clock = 1.0
    while clock < seconds - 0.5:
        size = int(generator.choice([64, 256, 1024, 4096, 16384]))
        at = int(clock * 1e9)
        operations += [Operation(at, "aes-gcm", size), Operation(at, "mqtt-packet", 1)]
        window = np.searchsorted(t_ns, at)
        sent[window] += size + 40
        segments[window] += 1 + size // 1400
        clock += float(generator.choice([0.02, 0.1, 0.5, 2.0]))
    return {
        "t_ns": t_ns,
        "tx_bytes": np.cumsum(sent).astype(np.int64),
        "rx_bytes": np.cumsum(segments * 40).astype(np.int64),
        "tx_segments": np.cumsum(segments).astype(np.int64),
        "rx_segments": np.cumsum(segments).astype(np.int64),
        "operations": tuple(operations),
    }


def measured_run(profile, seed: int, noise_ma: float = 0.3) -> CalibrationRun:
    inputs = activity(seed)
    true_profile = with_values(profile, truth(profile))
    modelled = model_current(true_profile, **inputs)
    noise = np.random.default_rng(seed + 100).normal(0, noise_ma, len(inputs["t_ns"]))
    return CalibrationRun(
        name=f"synthetic-{seed}",
        trace_sha256=str(seed) * 64,
        measured_t_ns=inputs["t_ns"][1:],
        measured_ma=(modelled.current_ma + noise)[1:],
        activity=Activity(**inputs),
    )


def test_the_fit_recovers_each_injected_number_within_5_percent() -> None:
    profile = load_profile("esp32-wroom-32")
    runs = [measured_run(profile, seed) for seed in (1, 2)]
    held_out = [measured_run(profile, 3)]
    result = calibrate(profile, runs, FIT, held_out=held_out, version="test")
    expected = truth(profile)
    recovered = {p.name: p.after for p in result.fitted}
    for name, value in expected.items():
        assert recovered[name] == pytest.approx(value, rel=0.05), name
    for fitted_parameter in result.fitted:  # each within 4 of its standard errors of the truth
        error = fitted_parameter.standard_error
        assert 0 < error < 0.1 * fitted_parameter.after
        assert abs(fitted_parameter.after - expected[fitted_parameter.name]) < 4 * error
    assert result.rms_after_ma < result.rms_before_ma
    assert result.held_out_rms_after_ma < 0.5 * result.held_out_rms_before_ma
    assert result.held_out_rms_after_ma == pytest.approx(0.3, rel=0.2)  # the noise left
    fitted = fittable(result.profile)
    for name in FIT:
        assert fitted[name].status == "calibrated"
        assert "111111111111, 222222222222" in fitted[name].source and "was " in fitted[name].source
    # Everything not fitted is untouched.
    assert fitted["rx_current"] == fittable(profile)["rx_current"]


def test_the_written_profile_loads_back_unchanged(tmp_path) -> None:
    profile = load_profile("esp32-wroom-32")
    result = calibrate(profile, [measured_run(profile, 1)], ["idle_associated_current"])
    path = tmp_path / "calibrated.toml"
    path.write_text(profile_toml(result.profile, "calibrated\nby a test"))
    again = load_profile(path)
    assert again.to_dict() == result.profile.to_dict()
    assert path.read_text().startswith("# calibrated\n# by a test\n")
    # the calibrated number's range is the fit's 90 % interval; every other keeps its own
    (fitted,) = result.fitted
    number = again.parameters["idle_associated_current"]
    assert number.bounds == pytest.approx(
        (fitted.after - 1.645 * fitted.standard_error, fitted.after + 1.645 * fitted.standard_error)
    )
    assert "±1.645 standard errors" in number.range_source
    assert again.parameters["tx_current"].bounds == profile.parameters["tx_current"].bounds
    assert (again.clocks_mhz, again.cores) == (profile.clocks_mhz, profile.cores)


def test_defaults_are_the_guesses_these_runs_exercise() -> None:
    profile = load_profile("esp32-wroom-32")
    names = default_names(profile, [measured_run(profile, 1)])
    assert "idle_associated_current" in names
    assert "supply_voltage" not in names and "tx_current" not in names  # datasheet
    assert not any(name.startswith("salsa20.") for name in names)  # never logged
    assert any(name.startswith("mqtt-packet.") for name in names)


def test_what_no_window_depends_on_is_not_learnt() -> None:
    profile = load_profile("esp32-wroom-32")
    run = measured_run(profile, 1)
    result = calibrate(profile, [run], ["idle_associated_current", "salsa20.per_call"])
    assert result.not_learnable == ("salsa20.per_call",)
    assert [p.name for p in result.fitted] == ["idle_associated_current"]
    with pytest.raises(DataError, match="nothing these runs can calibrate"):
        calibrate(profile, [run], ["salsa20.per_call"])
    with pytest.raises(SpecError, match="cannot fit 'supply_voltage'"):
        calibrate(profile, [run], ["supply_voltage"])
