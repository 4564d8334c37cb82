"""`export DIR --format bencher | github-action-benchmark`: Bencher's own schema (vendored,
tests/data/schemas/README.md), the action's input format, and the numbers: each value and
interval is the report's finding — the analysis' — to the last digit. Bad input through the
real CLI, in this process."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest
from tests.conftest import REPO, golden_copy

from iotsecbench.cli.app import main
from iotsecbench.report import data as report_data
from iotsecbench.report.exporters import DOCUMENT_EXPORTERS, bencher, github_action_benchmark
from iotsecbench.report.findings import find
from iotsecbench.store.duckdb_store import ResultsStore

SCHEMAS = REPO / "tests" / "data" / "schemas"


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return golden_copy(tmp_path_factory.mktemp("ci"))


@pytest.fixture(scope="module")
def findings(golden: Path) -> list:
    return [f for f in find(report_data.load(golden)).items if math.isfinite(f.difference)]


def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as ended:
        main(["export", *args])
        raise SystemExit(0)
    captured = capsys.readouterr()
    return int(ended.value.code or 0), captured.out, captured.err


def test_bencher_file_validates_against_bencher_schema(
    golden: Path, findings: list, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, str(golden), "--format", "bencher", "--out", str(tmp_path))
    assert code == 0, err
    assert out.splitlines() == [str(tmp_path / bencher.FILE_NAME)]
    document = json.loads((tmp_path / bencher.FILE_NAME).read_text())
    jsonschema.validate(document, _schema("bmf.json"))
    exported = sorted(
        (benchmark, m["value"], m["lower_value"], m["upper_value"])
        for benchmark, measures in document.items()
        for m in measures.values()
    )
    assert exported == sorted(
        (f"{f.configuration} over {f.baseline}", f.difference, f.interval.low, f.interval.high)
        for f in findings
    )
    assert len(exported) > 0
    for benchmark, measures in document.items():
        assert " over " in benchmark
        assert all(len(measure) <= 64 for measure in measures)  # Bencher's limit for a name


def test_github_action_benchmark_file_is_the_actions_input(golden: Path, findings: list) -> None:
    documents = github_action_benchmark.documents(golden)
    # Every cost the findings state is lower-is-better: one file, for customSmallerIsBetter.
    assert list(documents) == [github_action_benchmark.FILE_NAME]
    entries = json.loads(json.dumps(documents[github_action_benchmark.FILE_NAME]))
    jsonschema.validate(entries, _schema("github-action-benchmark.json"))
    assert len(entries) == len(findings)
    assert len({entry["name"] for entry in entries}) == len(entries)  # one series each
    for entry, finding in zip(entries, findings, strict=True):
        assert entry["value"] == finding.difference and entry["unit"] == finding.unit
        assert entry["name"].startswith(f"{finding.configuration}: ")
        assert (
            entry["range"] == f"95 % CI {finding.interval.low:.6g} to {finding.interval.high:.6g}"
        )


def _empty_results(directory: Path) -> Path:
    with ResultsStore.open(directory):
        pass  # the database with its tables, and no run
    return directory


@pytest.mark.parametrize("export_format", [*DOCUMENT_EXPORTERS])
@pytest.mark.parametrize("damage", ["no runs", "corrupt"])
def test_an_empty_or_corrupt_results_directory_is_exit_4(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], export_format: str, damage: str
) -> None:
    results = _empty_results(tmp_path / "results")
    if damage == "corrupt":
        database = results / "results.duckdb"
        database.write_bytes(database.read_bytes()[:4096] + b"\xff" * 8192)
    code, out, err = _cli(capsys, str(results), "--format", export_format)
    assert code == 4, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--format", "pdf"], "--format 'pdf'"),
        (["--run", "x"], "--run chooses the run of a timeline"),
        (["--timeline", "--format", "bencher"], "give one of them"),
        (["--timeline", "--run", "nope_r1"], "no such run"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    golden: Path, capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    code, _, err = _cli(capsys, str(golden), *args)
    assert code == 2 and err.count("\n") == 1 and fragment in err, err


def test_a_directory_without_results_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _cli(capsys, str(tmp_path), "--timeline")
    assert code == 2 and "holds no results.duckdb" in err
