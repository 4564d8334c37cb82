"""ensure_experiment: first start, resume, and the refusals that protect existing results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_rows import CONFIG_HASH, EXPERIMENT_ID, experiment_row

from iotsecbench.errors import SpecError
from iotsecbench.store.duckdb_store import ResultsStore


def test_first_start_records_experiment_in_db_and_file(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        assert store.ensure_experiment(experiment_row(), resume=False) == EXPERIMENT_ID
        assert store.experiment() == experiment_row()
    document = json.loads((results_dir / "experiment.json").read_text())
    assert document["schema_version"] == 10
    assert document["experiment"] == experiment_row()


def test_resume_with_same_configuration_continues(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
    with ResultsStore.open(results_dir) as store:
        assert store.ensure_experiment(experiment_row(), resume=True) == EXPERIMENT_ID
        # A runner that made a fresh id is told which experiment it continues.
        fresh = experiment_row(experiment_id="exp-2", created_utc="2025-02-01T00:00:00+00:00")
        assert store.ensure_experiment(fresh, resume=True) == EXPERIMENT_ID
        assert store.experiment()["created_utc"] == "2025-01-01T00:00:00+00:00"


def test_resume_into_empty_directory_starts_the_experiment(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        assert store.ensure_experiment(experiment_row(), resume=True) == EXPERIMENT_ID


def test_resume_with_changed_configuration_is_refused(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
        with pytest.raises(SpecError) as raised:
            store.ensure_experiment(experiment_row(config_hash="hash-bbb"), resume=True)
    message = str(raised.value)
    assert "different experiment configuration" in message
    assert f"config hash {CONFIG_HASH} ≠ hash-bbb" in message
    assert str(results_dir) in message and "--force-new-run" in message
    assert "\n" not in message


def test_existing_results_without_resume_are_refused(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
        with pytest.raises(SpecError, match=r"--resume.*new --out"):
            store.ensure_experiment(experiment_row(), resume=False)


def test_missing_experiment_file_is_restored_on_resume(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(), resume=False)
    (results_dir / "experiment.json").unlink()
    with ResultsStore.open(results_dir) as store:
        store.ensure_experiment(experiment_row(name="other"), resume=True)
    document = json.loads((results_dir / "experiment.json").read_text())
    assert document["experiment"]["name"] == "unit"  # the stored row, not the new one


def test_experiment_row_needs_id_and_hash(results_dir: Path) -> None:
    with ResultsStore.open(results_dir) as store, pytest.raises(ValueError):
        store.ensure_experiment(experiment_row(config_hash=None), resume=False)
