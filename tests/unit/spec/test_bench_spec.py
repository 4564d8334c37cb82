"""bench handshake's settings are a validated model (spec.bench), layered as an experiment's:
defaults, then a preset, then the command line; a bad value is one line naming it."""

from __future__ import annotations

from fractions import Fraction

import pytest

from iotsecbench.errors import SpecError
from iotsecbench.spec.bench import HandshakeBenchmarkSpec
from iotsecbench.spec.load import handshake_preset_names, load_handshake_spec, preset_data

NAMES = {"repetitions": "--reps", "target_ci": "--target-ci", "clock": "--clock"}


def test_every_handshake_preset_is_a_valid_benchmark() -> None:
    assert {"cipher-suites", "iotst"} <= set(handshake_preset_names())
    for name in handshake_preset_names():
        assert isinstance(load_handshake_spec(name, {}, NAMES), HandshakeBenchmarkSpec)


def test_the_iotst_preset_reads_as_the_study() -> None:
    spec = load_handshake_spec("iotst", {}, NAMES)
    assert spec.trace and spec.target_ci == pytest.approx(0.01)
    assert spec.max_repetitions == 200 and spec.planned_repetitions == 200
    assert spec.cores == [1, 2] and spec.shares == [Fraction(1, 3), Fraction(2, 3), Fraction(1)]
    assert spec.trace_device == "esp32-wroom-32" and len(spec.profiles) == 4


def test_the_command_line_layers_over_the_preset() -> None:
    spec = load_handshake_spec(
        "iotst", {"repetitions": 4, "profiles": ["tls1.2"], "clock": None}, NAMES
    )
    # --reps replaces the preset's target; --profiles adds to its profiles.
    assert spec.repetitions == 4 and spec.target_ci is None
    assert spec.profiles[-1] == "tls1.2" and len(spec.profiles) == 5
    assert spec.clock == ["1/3", "2/3", "1"]  # not given: the preset's


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"target_ci": "200%"}, "--target-ci: must lie between 0 and 100 %"),
        ({"target_ci": "x"}, "--target-ci: a percentage such as 1%"),
        ({"repetitions": 1}, "--reps:"),
        ({"clock": ["3/2"]}, "--clock: a CPU share lies in (0, 1]"),
        ({"device": "esp32-wroom-32"}, "belong to --trace"),
        ({"repetitions": 5, "target_ci": "5%"}, "give --reps or --target-ci, not both"),
        ({"profiles": None}, "give --profiles or --preset"),
    ],
)
def test_bad_settings_are_one_line_naming_the_option(options: dict, fragment: str) -> None:
    given = {"profiles": ["tls1.3"], **options}
    with pytest.raises(SpecError) as raised:
        load_handshake_spec(None, given, NAMES)
    assert fragment in str(raised.value) and "\n" not in str(raised.value)


def test_presets_of_the_two_kinds_are_refused_by_the_other_command() -> None:
    with pytest.raises(SpecError, match="unknown handshake preset 'stability'"):
        load_handshake_spec("stability", {}, NAMES)
    with pytest.raises(SpecError, match="is a handshake benchmark"):
        preset_data("iotst")


def test_a_counted_benchmark_takes_the_preset_but_not_its_host_settings() -> None:
    """--target (bench handshake on a virtual MCU): the preset's profiles and repetitions, not
    its scheduler-trace and CPU-placement settings; a whole emulated connection's timeout."""
    spec = load_handshake_spec("iotst", {"target": "rv32imc"}, NAMES)
    assert spec.target == "rv32imc" and len(spec.profiles) == 4
    assert spec.target_ci == pytest.approx(0.01) and spec.max_repetitions == 200
    assert not spec.trace and spec.cores == [] and spec.clock == [] and spec.device is None
    assert spec.timeout_s == 120.0
    assert load_handshake_spec(None, {"profiles": ["tls1.3"]}, NAMES).timeout_s == 10.0
    given = {"profiles": ["plain"], "target": "cortex-m4", "timeout_s": 30.0}
    assert load_handshake_spec(None, given, NAMES).timeout_s == 30.0


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"trace": True}, "--trace belong to the traced method, not --target"),
        ({"cores": [1], "clock": ["1/3"]}, "--cores, --clock belong to the traced method"),
        ({"keep_retransmissions": True}, "--keep-retransmissions belong"),
    ],
)
def test_a_counted_benchmark_refuses_the_host_methods_options(options: dict, fragment: str) -> None:
    given = {"profiles": ["tls1.3"], "target": "rv32imc", **options}
    with pytest.raises(SpecError) as raised:
        load_handshake_spec(None, given, NAMES)
    assert fragment in str(raised.value) and "\n" not in str(raised.value)
