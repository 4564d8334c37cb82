"""Device profiles: every number sourced; broken files rejected with the field and file named."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from iotsecbench.energy.profile import (
    DEFAULT_PROFILE,
    REQUIRED_PARAMETERS,
    STATUSES,
    load_profile,
    profile_names,
)
from iotsecbench.energy.vocabulary import BULK_PRIMITIVES, COUNT_PRIMITIVES, PRIMITIVE_KINDS
from iotsecbench.errors import SpecError

PACKAGED_TEXT = (
    resources.files("iotsecbench.energy.profiles")
    .joinpath(f"{DEFAULT_PROFILE}.toml")
    .read_text(encoding="utf-8")
)


@pytest.mark.parametrize("name", profile_names())
def test_every_number_has_a_source_and_a_valid_status(name: str) -> None:
    profile = load_profile(name)
    numbers = list(profile.parameters.values())
    for cost in profile.primitives.values():
        numbers += list(cost.parameters().values())
    assert len(numbers) >= len(REQUIRED_PARAMETERS) + len(PRIMITIVE_KINDS)
    for number in numbers:
        assert number.source.strip()
        assert number.status in STATUSES
        assert number.unit.strip()
    assert set(PRIMITIVE_KINDS) <= set(profile.primitives)


def test_default_profile_values_follow_device_facts() -> None:
    profile = load_profile()
    assert profile_names()[0:1] and DEFAULT_PROFILE in profile_names()
    assert profile.name == DEFAULT_PROFILE
    assert profile.supply_voltage_v == 3.3
    assert profile.cpu_clock_hz == 240e6
    assert profile.idle_associated_current_ma == 32.0
    assert profile.core_extra_current_ma == 19.0
    assert (profile.tx_current_ma, profile.rx_current_ma) == (180.0, 100.0)
    assert profile.tx_goodput_bits_per_s == 20e6
    # The two numbers docs/device-facts.md flags as pure guesses must say so.
    assert profile.parameters["packet_overhead"].status == "guess"
    assert profile.primitives["mqtt-packet"].per_operation.status == "guess"  # type: ignore[union-attr]
    assert "GUESS" in profile.primitives["mqtt-packet"].per_operation.source  # type: ignore[union-attr]
    assert profile.primitives["ecdh-p256-keygen"].busy_seconds(1, profile.cpu_clock_hz) == 0.266
    for name in BULK_PRIMITIVES:
        assert profile.primitives[name].kind == "bulk"
    for name in COUNT_PRIMITIVES:
        assert profile.primitives[name].kind == "count"
    assert "packet_overhead" in profile.guesses()
    assert profile.to_dict()["parameters"]["tx_current"]["unit"] == "mA"


def test_a_path_loads_a_user_profile(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(PACKAGED_TEXT.replace("value = 180.0", "value = 190.0"), encoding="utf-8")
    profile = load_profile(path)
    assert profile.tx_current_ma == 190.0
    assert profile.path == str(path)
    assert load_profile(str(path)).tx_current_ma == 190.0


def _broken(tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    assert old in PACKAGED_TEXT, old
    path = tmp_path / "broken.toml"
    path.write_text(PACKAGED_TEXT.replace(old, new, count), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (
            "[parameters.tx_current]\nvalue = 180.0\n",
            "[parameters.tx_current]\n",
            "parameters.tx_current",
        ),
        (
            'unit = "mA"\nsource = "ESP32 Series Datasheet v5.2, Table 5-4: TX',
            'unit = "uA"\nsource = "ESP32 Series Datasheet v5.2, Table 5-4: TX',
            "parameters.tx_current",
        ),
        ('status = "datasheet"', 'status = "folklore"', "parameters.supply_voltage"),
        (
            "[parameters.rx_current]\nvalue = 100.0",
            "[parameters.rx_current]\nvalue = -1.0",
            "parameters.rx_current",
        ),
        (
            "[parameters.rx_current]\nvalue = 100.0",
            '[parameters.rx_current]\nvalue = "100"',
            "parameters.rx_current",
        ),
        (
            "[parameters.light_sleep_current]",
            "[parameters.light_sleep_curent]",
            "parameters.light_sleep_current",
        ),
        (
            'kind = "count"\n[primitives.mqtt-packet',
            'kind = "bulk"\n[primitives.mqtt-packet',
            "primitives.mqtt-packet.kind",
        ),
        # schema 2: every number's range holds its value, says why, and a guess's is wide
        ("range = [162.0, 198.0]", "range = [190.0, 198.0]", "parameters.tx_current"),
        ("range = [0.0, 9.0]", "range = [2.9, 3.1]", "parameters.handshake_overhead.range"),
        (
            'range_source = "a guess: none to three times the value"',
            'range_source = " "',
            "parameters.handshake_overhead.range_source",
        ),
        ("range = [240, 240]", "range = [80, 240]", "parameters.cpu_clock"),
    ],
)
def test_bad_profile_names_field_and_file(tmp_path: Path, old: str, new: str, field: str) -> None:
    path = _broken(tmp_path, old, new)
    with pytest.raises(SpecError, match=re.escape(field)) as caught:
        load_profile(path)
    assert str(path) in str(caught.value)


def test_empty_source_is_rejected(tmp_path: Path) -> None:
    line = (
        'source = "GUESS: no per-call (HW AES acquire, key schedule) figure found; '
        '0 is a lower bound and underprices small messages"'
    )
    path = _broken(tmp_path, line, 'source = "  "')
    with pytest.raises(SpecError, match=r"primitives\.aes-cbc\.per_call"):
        load_profile(path)


def test_unpriced_primitive_is_named(tmp_path: Path) -> None:
    path = _broken(tmp_path, "hkdf-sha256", "hkdf-sha-256", count=-1)
    with pytest.raises(SpecError, match=r"primitives\.hkdf-sha256: missing"):
        load_profile(path)


def test_invalid_toml_unknown_name_and_missing_file() -> None:
    with pytest.raises(SpecError, match="unknown device profile 'esp8266'"):
        load_profile("esp8266")
    with pytest.raises(SpecError, match="does not exist"):
        load_profile("/nonexistent/profile.toml")


def test_invalid_toml(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[device\nname = 1", encoding="utf-8")
    with pytest.raises(SpecError, match="invalid TOML"):
        load_profile(path)


def test_a_schema_1_file_gets_ranges_from_each_number_s_status(tmp_path: Path) -> None:
    """An older profile without ranges loads: a guess spans a factor 3 either way, a
    datasheet figure ±10 %, and the profile says its ranges were not stated."""
    lines = [
        line
        for line in PACKAGED_TEXT.replace("schema = 2", "schema = 1").splitlines()
        if not line.startswith(("range =", "range_source ="))
    ]
    path = tmp_path / "old.toml"
    path.write_text("\n".join(lines))
    profile = load_profile(path)
    assert not profile.ranges_stated
    overhead, tx = profile.parameters["handshake_overhead"], profile.parameters["tx_current"]
    assert overhead.bounds == pytest.approx((1.0, 9.0))
    assert tx.bounds == pytest.approx((162.0, 198.0))
    assert "schema 1" in tx.range_source
