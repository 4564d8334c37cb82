"""Spec validation, layering of overrides, matrix expansion and the interleaved run order."""

from __future__ import annotations

from pathlib import Path

import pytest

from iotsecbench.errors import SpecError
from iotsecbench.spec.load import build_spec, load_spec, preset_names
from iotsecbench.spec.matrix import expand, plan_runs


def test_default_preset_is_the_study_configurations_plus_the_aead_fix() -> None:
    spec = load_spec()
    assert spec.configurations == [
        "plain",
        "tls1.2",
        "ecdh-p256-aes128-cbc",
        "ecdh-p256-aes128-gcm",
    ]
    # The whole default run must fit in about three minutes (issue 2).
    assert len(spec.configurations) * spec.repetitions * spec.duration_s <= 170


def test_presets_listed_and_loadable() -> None:
    assert {"default", "stability"} <= set(preset_names())
    stability = load_spec(preset="stability")
    assert stability.duration_s == 600 and stability.repetitions == 5


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ({"payload_bytes": [-1]}, "payload_bytes"),
        ({"payload_bytes": [0]}, "at least 16"),
        ({"payload_bytes": [300_000_000]}, "exceeds"),
        ({"rate_hz": [0]}, "rate"),
        ({"qos": [3]}, "QoS 3"),
        ({"duration_s": -5}, "duration_s"),
        ({"repetitions": 0}, "repetitions"),
        ({"configurations": ["plain", "plain"]}, "twice"),
        ({"broker": {"max_inflight_messages": -5}}, "max_inflight_messages"),
        ({"payload_bytes": [2048], "broker": {"message_size_limit": 1024}}, "silently"),
        ({"payload_byte": [16]}, "unknown key"),
    ],
)
def test_bad_values_are_one_line_spec_errors(override: dict, fragment: str) -> None:
    with pytest.raises(SpecError) as error:
        load_spec(overrides=override)
    message = str(error.value)
    assert fragment in message
    assert "\n" not in message


def test_overrides_beat_the_preset_and_none_means_unset() -> None:
    spec = load_spec(overrides={"duration_s": 3.0, "repetitions": None})
    assert spec.duration_s == 3.0
    assert spec.repetitions == load_spec().repetitions


def test_toml_file_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "exp.toml"
    good.write_text('name = "mine"\nconfigurations = ["plain"]\npayload_bytes = [64, 1024]\n')
    assert load_spec(good).payload_bytes == [64, 1024]
    broken = tmp_path / "broken.toml"
    broken.write_text("configurations = [plain\n")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(broken)
    with pytest.raises(SpecError, match="does not exist"):
        load_spec(tmp_path / "missing.toml")
    with pytest.raises(SpecError, match="either"):
        load_spec(good, preset="default")


def test_matrix_include_exclude_and_labels() -> None:
    spec = build_spec(
        {
            "configurations": ["plain", "tls1.2"],
            "payload_bytes": [64, 1024],
            "exclude": [{"configuration": "tls1.2", "payload_bytes": 64}],
            "include": [
                {"configuration": "tls1.3", "payload_bytes": 64, "rate_hz": 10.0, "qos": 1}
            ],
        }
    )
    cells = expand(spec)
    labels = [cell.label for cell in cells]
    assert "tls1.2 · 64 B" not in labels
    assert labels == ["plain · 64 B", "plain · 1024 B", "tls1.2 · 1024 B", "tls1.3 · 64 B"]
    assert len({cell.cell_id for cell in cells}) == len(cells)


def test_runs_are_interleaved_seeded_and_complete() -> None:
    spec = build_spec({"repetitions": 3, "seed": 7})
    runs = plan_runs(spec)
    cells = expand(spec)
    assert len(runs) == 3 * len(cells)
    # Each repetition is one block holding every cell once (A B C, C A B, …).
    for block in range(3):
        chunk = runs[block * len(cells) : (block + 1) * len(cells)]
        assert {r.cell for r in chunk} == set(cells)
        assert {r.repetition for r in chunk} == {block + 1}
    assert [r.run_order for r in runs] == list(range(len(runs)))
    assert [r.run_id for r in plan_runs(spec)] == [r.run_id for r in runs]  # reproducible
    other = plan_runs(build_spec({"repetitions": 3, "seed": 8}))
    assert [r.run_id for r in other] != [r.run_id for r in runs]


def test_config_hash_ignores_repetitions_but_not_factors() -> None:
    base = build_spec({})
    assert build_spec({"repetitions": 9}).config_hash() == base.config_hash()
    assert build_spec({"payload_bytes": [512]}).config_hash() != base.config_hash()
