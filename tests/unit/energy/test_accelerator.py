"""Accelerator pricing of counted instructions (energy.model.accelerated_busy_s): checked
against windows worked out by hand, and the labels that keep an accelerated figure from
passing for a software-only one."""

from __future__ import annotations

import numpy as np
import pytest

from iotsecbench.energy.model import (
    Accelerator,
    accelerated_busy_s,
    accelerators_for,
    counted_current,
    counted_kind,
)
from iotsecbench.energy.profile import load_profile
from iotsecbench.errors import DataError

AES = Accelerator("aes", 10.0, "AES on the accelerator")


def test_the_accelerated_family_takes_its_software_time_over_the_speedup():
    # Window 1: 1,000 instructions, none of them AES: 1,000 x CPI 2 / 1 kHz = 2 s.
    # Window 2: 2,000 more, 1,000 of them AES at 10x: (1,000 + 1,000 / 10) x 2 / 1 kHz = 2.2 s.
    busy = accelerated_busy_s([1000, 3000], {"aes": [0, 1000]}, [AES], cpi=2.0, clock_hz=1e3)
    assert busy == pytest.approx([2.0, 2.2])
    software = accelerated_busy_s([1000, 3000], {"aes": [0, 1000]}, [], cpi=2.0, clock_hz=1e3)
    assert software == pytest.approx([2.0, 4.0])


def test_a_bad_speedup_or_family_series_is_refused():
    with pytest.raises(DataError, match="speed-up"):
        accelerated_busy_s([1], {"aes": [1]}, [Accelerator("aes", 0.0, "x")], 1.0, 1.0)
    with pytest.raises(DataError, match="shape"):
        accelerated_busy_s([1, 2], {"aes": [1]}, [AES], 1.0, 1.0)


def test_the_accelerated_current_is_below_the_software_one_only_where_aes_ran():
    profile = load_profile("esp32-c3")
    t_ns = np.arange(1, 5) * 100_000_000
    zeros = np.zeros(4)
    instructions = np.array([1e6, 2e6, 3e6, 4e6])
    common = (profile, t_ns, instructions, zeros, zeros, zeros, zeros)
    software = counted_current(*common, cpi=1.0)
    none_aes = counted_current(
        *common, cpi=1.0, family_instructions={"aes": zeros}, accelerators=[AES]
    )
    assert none_aes.current_ma == pytest.approx(software.current_ma)
    half_aes = counted_current(
        *common, cpi=1.0, family_instructions={"aes": instructions / 2}, accelerators=[AES]
    )
    # each window: 1e6 instructions, half of them at 10x -> 0.55e6 cycles at 160 MHz
    expected = profile.idle_associated_current_ma + profile.core_extra_current_ma * (
        0.55e6 / 160e6 / 0.1
    )
    assert half_aes.current_ma == pytest.approx(np.full(4, expected))
    assert np.all(half_aes.current_ma < software.current_ma)


def test_the_profiles_accelerators_and_their_labels():
    c3 = load_profile("esp32-c3")
    (blocks,) = accelerators_for(c3, gcm=False)
    (gcm,) = accelerators_for(c3, gcm=True)
    assert blocks.family == gcm.family == "aes"
    assert blocks.speedup == c3.value("aes_accelerator_speedup") > gcm.speedup > 1
    assert "aes_accelerator_speedup" in c3.parameters and c3.parameters[
        "aes_accelerator_speedup"
    ].source.startswith("DERIVED")
    assert accelerators_for(load_profile("nrf52840"), gcm=False) == ()  # none priced there
    assert counted_kind("rv32imc") == "counted on rv32imc"
    assert counted_kind("rv32imc", [blocks]) == "counted on rv32imc, AES on the accelerator"
    assert counted_kind("rv32imc", [gcm]) != counted_kind("rv32imc", [blocks])
