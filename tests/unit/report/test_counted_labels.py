"""A `run --target` experiment's figures say *counted on <target>* wherever they appear —
findings, summary tables, figures, `report --json` — and never pass for measured or modelled
ones; a comparison of a counted experiment with a modelled one labels each side.

The golden experiment stands in for a device run: its runs marked as the store marks a
counted one (``runs.cost_method`` 'counted', ``details_json.counted.target``), which is all
the labels read (the real device run is tests/integration/test_device_run.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import duckdb
import pytest
from tests.conftest import golden_store_copy

from iotsecbench.analysis.metrics import GROUPS, METRICS, MODELLED
from iotsecbench.report.compare import Experiment, compare
from iotsecbench.report.data import ReportData, load
from iotsecbench.report.figures import repeatability
from iotsecbench.report.findings import find
from iotsecbench.report.style import Palette
from iotsecbench.report.summary import summarise, target_of
from iotsecbench.report.tables import comparison_tables, summary_table
from iotsecbench.report.terminal import summary_tables
from iotsecbench.store.duckdb_store import database_path

COUNTED = "counted on rv32imc"


def _count_on_device(results: Path, target: str = "rv32imc") -> Path:
    details = json.dumps({"counted": {"target": target, "cpi": 1.2}})
    with duckdb.connect(str(database_path(results))) as connection:
        connection.execute("UPDATE runs SET cost_method = 'counted', details_json = ?", [details])
    return results


@pytest.fixture(scope="module")
def counted(golden_store: Path, tmp_path_factory: pytest.TempPathFactory) -> ReportData:
    """Loaded once for the module: the tests only read it."""
    results = golden_store_copy(golden_store, tmp_path_factory.mktemp("counted"))
    return load(_count_on_device(results))


def test_the_emitters_counted_figures_say_so_and_the_receivers_stay_modelled() -> None:
    counted = ReportData(
        source=Path("/results"), counted_target="rv32imc", metrics=METRICS.counted_on("rv32imc")
    )
    assert counted.metric_of("current_ma", "emitter").kind == COUNTED
    assert counted.metric_of("current_ma", "receiver").kind == MODELLED
    assert counted.metric_of("cpu_us_per_message", "emitter").kind == COUNTED
    assert counted.metric_of("cpu_us_per_message", "receiver").kind == "measured"
    assert counted.metric_of("flash_kib", "emitter").kind == COUNTED
    assert counted.metric_of("latency_p50_ms", "end-to-end").kind == "measured"
    # a charge summed over both devices names both
    both = counted.metric_of("energy_mah")
    assert both.kind.startswith(COUNTED) and "modelled for the receiver" in both.kind
    assert counted.current_words.startswith(COUNTED + " for the emitter")
    stack = next(g for g in GROUPS if g.key == "stack")
    assert "counted on rv32imc" in stack.title_for("rv32imc")
    assert "x86-64" not in stack.title_for("rv32imc") and "x86-64" in stack.title_for(None)


@pytest.mark.slow  # loads and summarises the store: about a second of CPU
def test_a_stored_device_run_is_found_as_counted(counted: ReportData) -> None:
    assert counted.counted_target == "rv32imc"
    assert counted.metric_of("current_ma", "emitter").kind == COUNTED


@pytest.mark.slow  # the findings' bootstraps: about a second of CPU
def test_findings_and_report_json_label_each_role(counted: ReportData) -> None:
    findings = find(counted)
    kinds = {(f.metric, f.role): f.kind for f in findings.items}
    assert kinds[("current_ma", "emitter")] == COUNTED
    assert kinds[("current_ma", "receiver")] == MODELLED
    emitter = next(f for f in findings.items if (f.metric, f.role) == ("current_ma", "emitter"))
    assert "current counted on rv32imc" in emitter.sentence
    document = findings.to_dict()  # what `report --json` prints
    assert {f["kind"] for f in document["findings"] if f["role"] == "emitter"} >= {COUNTED}
    assert "device client on rv32imc" in document["context"]
    assert "counted on rv32imc" in findings.pareto


@pytest.mark.slow  # reads the store again for the terminal's summary
def test_summary_tables_and_the_report_table_say_counted(counted: ReportData) -> None:
    results = counted.source
    assert target_of(results) == "rv32imc"
    titles = [str(t.title) for t in summary_tables(summarise(results), target="rv32imc")]
    assert any(t.startswith("Device energy (the emitter's counted on rv32imc") for t in titles)
    assert any(t.startswith("Cost per message (the emitter's CPU and seal counted") for t in titles)
    host_titles = [str(t.title) for t in summary_tables(summarise(results))]
    assert host_titles[0] == GROUPS[0].title  # a host run's titles are unchanged
    note = summary_table(counted).note  # type: ignore[union-attr]
    assert "counted on rv32imc" in note and "current and charge are modelled for the" not in note


@pytest.mark.slow  # draws a figure: a few seconds of CPU
def test_a_current_figure_says_counted_for_the_emitter(counted: ReportData) -> None:
    figure = repeatability(counted, Palette(counted.configurations))
    assert figure is not None
    assert figure.caption.startswith("Counted on rv32imc for the emitter")
    assert "modelled for the receiver" in figure.caption


@pytest.mark.slow  # loads and analyses a second store
def test_a_host_experiment_is_unchanged(golden_results: Path) -> None:
    data = load(golden_results)
    assert data.counted_target is None
    assert data.current_words == MODELLED
    assert {f.kind for f in find(data).items} <= {MODELLED, "measured"}


@pytest.mark.slow  # bootstraps every contrast: a few seconds of CPU
def test_a_comparison_of_counted_and_modelled_runs_labels_each(counted: ReportData) -> None:
    host = load(counted.source)
    host = dataclasses.replace(host, counted_target=None, metrics=METRICS)
    comparison = compare([Experiment("host", host), Experiment("device", counted)])
    current = [c for c in comparison.contrasts if (c.metric, c.role) == ("current_ma", "emitter")]
    assert current
    for contrast in current:
        assert (contrast.kind, contrast.reference_kind) == (COUNTED, MODELLED)
        assert "on device (counted on rv32imc)" in contrast.sentence
        assert "on host (modelled)" in contrast.sentence
        assert contrast.to_dict()["reference_kind"] == MODELLED
    receiver = next(
        c for c in comparison.contrasts if (c.metric, c.role) == ("current_ma", "receiver")
    )
    assert (receiver.kind, receiver.reference_kind) == (MODELLED, "")
    value_table = next(t for t in comparison_tables(comparison) if t.key == "side-by-side")
    kinds = {row["kind"] for row in value_table.rows if "current" in row["metric_name"]}
    assert "host: modelled; device: counted on rv32imc" in kinds
