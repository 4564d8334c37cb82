"""A configuration spelled two ways is one configuration: stored under its canonical name,
the spelling written kept as a label, so two experiments line up in `report A B`."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from iotsecbench.errors import SpecError
from iotsecbench.runner.experiment import canonical_configurations
from iotsecbench.spec.load import build_spec, resume_spec
from iotsecbench.spec.models import CellFilter

WRITTEN, CANONICAL = "tls1.3/ECDSA-P256/x25519", "tls1.3/x25519/ecdsa-p256"


def test_names_become_canonical_and_the_spelling_stays_a_label() -> None:
    spec = build_spec(
        {
            "configurations": [WRITTEN, "plain+x25519-aes128-gcm", "tls1.2"],
            "exclude": [{"configuration": WRITTEN, "payload_bytes": 256}],
        }
    )
    canonical = canonical_configurations(spec)
    assert canonical.configurations == [CANONICAL, "x25519-aes128-gcm", "tls1.2"]
    assert canonical.exclude == [CellFilter(configuration=CANONICAL, payload_bytes=256)]
    assert canonical.configuration_labels == {
        CANONICAL: WRITTEN,
        "x25519-aes128-gcm": "plain+x25519-aes128-gcm",
    }
    # One configuration, one experiment: the spelling is a label, not part of the hash.
    other = canonical_configurations(build_spec({"configurations": [CANONICAL]}))
    again = canonical_configurations(build_spec({"configurations": [WRITTEN]}))
    assert other.config_hash() == again.config_hash()
    assert canonical_configurations(canonical) == canonical


def test_two_spellings_of_one_configuration_are_refused() -> None:
    with pytest.raises(SpecError, match="are one configuration"):
        canonical_configurations(build_spec({"configurations": [WRITTEN, CANONICAL]}))


def test_a_resume_compares_canonical_names_but_keeps_an_older_experiments(
    tmp_path: Path,
) -> None:
    stored = canonical_configurations(build_spec({"configurations": [WRITTEN]}))
    (tmp_path / "spec.json").write_text(stored.model_dump_json())
    given = {"configurations": [CANONICAL.upper().replace("TLS", "tls")]}
    resumed = resume_spec(tmp_path, overrides=given, canonical=canonical_configurations)
    assert resumed is not None and resumed.configurations == [CANONICAL]
    # Stored before names were canonical: its names (so its run ids) stay as they were.
    (tmp_path / "spec.json").write_text(build_spec({"configurations": [WRITTEN]}).model_dump_json())
    kept = resume_spec(tmp_path, canonical=canonical_configurations)
    assert kept is not None and kept.configurations == [WRITTEN]


@pytest.mark.integration  # the real CLI, in a subprocess (simulated runs)
@pytest.mark.slow
def test_report_lines_up_two_experiments_that_spell_a_profile_differently(
    cli, tmp_path: Path
) -> None:
    from iotsecbench.report.compare import check_comparable, load_experiments

    notes = {}
    for name, spelling in (("a", WRITTEN), ("b", CANONICAL)):
        result = cli(
            "run", "--simulate", "--configs", f"plain,{spelling}", "--duration", "2",
            "--reps", "2", "--out", str(tmp_path / name), "--quiet", "--no-report",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        notes[name] = result.stderr
    assert f"note: configuration {WRITTEN} is stored as {CANONICAL}" in notes["a"]
    assert "note: configuration" not in notes["b"]
    with duckdb.connect(str(tmp_path / "a" / "results.duckdb"), read_only=True) as db:
        stored = {row[0] for row in db.execute("select configuration from runs").fetchall()}
    assert stored == {"plain", CANONICAL}
    labels = json.loads((tmp_path / "a" / "spec.json").read_text())["configuration_labels"]
    assert labels == {CANONICAL: WRITTEN}
    common = check_comparable(load_experiments([tmp_path / "a", tmp_path / "b"]))
    assert CANONICAL in common and "plain" in common


def test_the_built_in_presets_name_their_configurations_canonically() -> None:
    """A preset's names are the stored ones: `run --preset` renames nothing."""
    from iotsecbench.spec.load import handshake_preset_names, load_spec, preset_names

    for name in set(preset_names()) - set(handshake_preset_names()):
        spec = load_spec(preset=name)
        assert canonical_configurations(spec).configuration_labels == {}, name
