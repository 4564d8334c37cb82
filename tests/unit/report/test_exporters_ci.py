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
from tests.conftest import REPO, golden_store_copy

from iotsecbench.cli.app import main
from iotsecbench.report import data as report_data
from iotsecbench.report.exporters import (
    DOCUMENT_EXPORTERS,
    bencher,
    costs,
    github_action_benchmark,
)
from iotsecbench.report.findings import find
from iotsecbench.store.duckdb_store import ResultsStore

SCHEMAS = REPO / "tests" / "data" / "schemas"


@pytest.fixture(scope="module")
def golden(golden_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return golden_store_copy(golden_store, tmp_path_factory.mktemp("ci"))


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


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
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


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
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


def test_bench_handshake_configurations_export_their_own_cost_and_interval() -> None:
    """A traced and a counted bench handshake configuration: each one's network-invariant
    cost itself (no baseline), in the CI unit, the stored interval's ends and level; a
    configuration of one repetition has no interval and exports its value alone."""
    import pandas as pd

    traced = {"network_invariant_cpu_s": {"mean": 0.004, "ci_low": 0.003, "ci_high": 0.005,
                                          "n": 20, "level": 0.95}}  # fmt: skip
    counted = {"method": "counted on rv32imc", "repetitions": 1,
               "instructions": {"network_invariant": {"mean": 9.4e7, "ci_low": -math.inf,
                                                      "ci_high": math.inf, "n": 1}}}  # fmt: skip
    runs = pd.DataFrame(
        {"cell_label": ["tls1.3 [traced]", "tls1.3 [counted on rv32imc]", "plain"],
         "cost_method": ["traced", "counted", "timed"],
         "details_json": [json.dumps(traced), json.dumps(counted), "{}"]}
    )  # fmt: skip
    found = costs.handshake_costs(report_data.ReportData(Path("bench"), runs=runs))
    assert [(c.configuration, c.baseline, c.unit) for c in found] == [
        ("tls1.3 [traced]", None, "ms"),
        ("tls1.3 [counted on rv32imc]", None, "instructions"),
    ]
    assert (found[0].value, found[0].low, found[0].high, found[0].level) == (4.0, 3.0, 5.0, 0.95)
    assert (found[1].value, found[1].low, found[1].high) == (9.4e7, None, None)
    document = bencher.render(found)
    jsonschema.validate(document, _schema("bmf.json"))
    assert document["tls1.3 [counted on rv32imc]"] == {costs.COUNTED.measure: {"value": 9.4e7}}
    assert all(len(c.measure) <= 64 for c in found)
    entries = github_action_benchmark.render(found)[github_action_benchmark.FILE_NAME]
    jsonschema.validate(entries, _schema("github-action-benchmark.json"))
    assert entries[0]["range"] == "95 % CI 3 to 5" and "range" not in entries[1]


def _empty_results(directory: Path) -> Path:
    with ResultsStore.open(directory):
        pass  # the database with its tables, and no run
    return directory


@pytest.mark.parametrize("export_format", ["parquet", *DOCUMENT_EXPORTERS])
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
    assert not out and not (results / "parquet").exists()  # nothing written


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
