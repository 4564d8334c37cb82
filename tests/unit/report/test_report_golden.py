"""The report built from the golden store: every figure, every table, stable exports."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from tests.conftest import GOLDEN, golden_store_copy

from iotsecbench.analysis.metrics import METRICS
from iotsecbench.errors import DataError, SpecError
from iotsecbench.report import figures_analysis, figures_blocks
from iotsecbench.report.build import BuiltReport, build_report, parse_formats
from iotsecbench.report.data import load
from iotsecbench.report.exporters import EXPORTERS
from iotsecbench.report.figures import BUILDERS, build_figures
from iotsecbench.report.tables import build_tables

EXPECTED = GOLDEN / "expected"


@pytest.mark.slow  # draws every figure: about 10 s of CPU
def test_every_figure_is_drawn_and_labelled(golden_results: Path) -> None:
    builders = (*BUILDERS, *figures_analysis.BUILDERS, *figures_blocks.BUILDERS)
    figures, skipped = build_figures(load(golden_results), builders)
    # The block-sizes figures need several block sizes; the golden store has one (they are
    # drawn in tests/integration/test_tcp_transport.py; the instructions per byte need counted
    # device runs besides, which no test here makes over several sizes).
    block_figures = ["energy per byte", "instructions per byte", "throughput per block"]
    assert skipped == block_figures
    assert len(figures) == len(builders) - len(block_figures)
    for figure in figures:
        assert figure.png.startswith(b"\x89PNG")
        assert figure.provenance in ("measured", "modelled")
        assert figure.caption.startswith(("Measured on this host", "Modelled device energy"))
    keys = {f.key for f in figures}
    assert {
        "repeatability",
        "cumulative-energy",
        "latency",
        "acf-pacf",
        "bootstrap",
        "cohens-d",
        "pareto",
        "sensitivity",
        "handshake-phases",
        "bytes-per-message",
        "relative-overhead",
        "current-over-time",
    } == keys


def test_every_summary_column_has_a_heading_of_its_own() -> None:
    # The terminal splits the summary into groups; the report and the exports are one flat
    # table, where two columns of one heading (a fleet's lost per run and the total lost
    # were both "lost") cannot be told apart.
    headings = [(column.title, column.unit) for column in METRICS.in_summary()]
    assert len(headings) == len(set(headings))


@pytest.fixture(scope="module")
def golden_tables(golden_store: Path, tmp_path_factory: pytest.TempPathFactory) -> list:
    """The golden store's tables, built once for every export format's test."""
    return build_tables(load(golden_store_copy(golden_store, tmp_path_factory.mktemp("tables"))))


@pytest.mark.parametrize("fmt", sorted(EXPORTERS))
def test_table_exports_match_the_snapshots(golden_tables: list, fmt: str) -> None:
    render, suffix = EXPORTERS[fmt]
    tables = golden_tables
    assert [t.key for t in tables] == ["summary", "cv", "inference"]
    for table in tables:
        text = render(table)
        expected = EXPECTED / f"{table.key}{suffix}"
        if os.environ.get("UPDATE_SNAPSHOTS"):
            expected.parent.mkdir(exist_ok=True)
            expected.write_text(text)
        assert text == expected.read_text(), f"{expected} differs (UPDATE_SNAPSHOTS=1 to accept)"


@pytest.mark.slow
def test_build_writes_every_format_atomically(golden_report: BuiltReport) -> None:
    built = golden_report
    names = {p.relative_to(built.directory).as_posix() for p in built.files}
    assert {
        "report.html",
        "tables.md",
        "tables.tex",
        "tables/summary.csv",
        "tables/inference.csv",
        "figures/pareto.png",
    } <= names
    assert not list(built.directory.rglob(".*.tmp"))
    page = built.html.read_text()
    for section in (
        "findings",
        "experiment",
        "summary",
        "hypotheses",
        "figures",
        "tables",
        "warnings",
        "methods",
        "raw-data",
    ):
        assert f'id="{section}"' in page
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    # Self-contained: every figure is inline SVG; whatever it or the page refers to is in the
    # page (an #id) or inline (data:), nothing is loaded from a relative path either.
    assert page.count("<svg") == page.count('class="plot"') > 0
    references = re.findall(r"""\b(?:src|href|xlink:href)=["']([^"']*)""", page)
    assert all(ref.startswith(("#", "data:")) for ref in references), references


@pytest.mark.slow  # a whole report, every figure drawn
def test_report_from_an_analysis_file_alone(golden_results: Path, tmp_path: Path) -> None:
    """An `analyze --csv` result has no store: the report still builds from analysis.json."""
    analysis = tmp_path / "alone" / "analysis.json"
    analysis.parent.mkdir()
    analysis.write_text((golden_results / "analysis.json").read_text())
    built = build_report(analysis)
    assert built.html is not None and built.html.exists()
    assert "repeatability" in built.skipped_figures  # needs the current series
    assert "pareto front" not in built.skipped_figures


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(SpecError):
        parse_formats("html,pdf")
    with pytest.raises(SpecError):
        load(tmp_path / "missing")
    bogus = tmp_path / "analysis.json"
    bogus.write_text('{"format": "something else"}')
    with pytest.raises(DataError):
        load(bogus)
    bogus.write_text("{not json")
    with pytest.raises(DataError):
        load(bogus)


@pytest.mark.slow
def test_report_from_analyze_csv_draws_the_series_from_the_csv(
    golden_results: Path, tmp_path: Path
) -> None:
    """Measurements from real devices arrive as CSV: the report reads the CSVs the analysis
    names, so the time-series figures are drawn too."""
    from iotsecbench.analysis.pipeline import AnalysisOptions
    from iotsecbench.store import read
    from iotsecbench.workflows.postprocess import run_analyze

    current_csv = tmp_path / "current.csv"
    read.current_frame(golden_results).to_csv(current_csv, index=False)
    latency_csv = tmp_path / "latency.csv"
    read.latency_frame(golden_results).to_csv(latency_csv, index=False)
    _, analysis = run_analyze(
        csv_path=current_csv, latency_csv=latency_csv, options=AnalysisOptions(reps=200, seed=1)
    )
    built = build_report(analysis)
    assert "repeatability" not in built.skipped_figures
    assert "latency distribution" not in built.skipped_figures
    assert "handshake phases" in built.skipped_figures  # needs the results store


@pytest.mark.slow  # over half a second of CPU (tests/lanes.py)
def test_the_model_range_is_recomputed_from_the_store_with_the_same_draws(
    golden_results: Path, tmp_path: Path
) -> None:
    """Issue 36 on a results store: each run's modelled current redrawn from its activity
    (runner.model_draws) gives, with the golden analysis' seed, exactly the stored model
    ranges — every current and charge comparison has one, latency none; every battery
    projection has its lifetime's and its ratio's."""
    from iotsecbench.analysis.pipeline import AnalysisOptions
    from iotsecbench.workflows.postprocess import run_analyze

    _, path = run_analyze(
        golden_results, options=AnalysisOptions(reps=500, seed=1), out=tmp_path / "a.json"
    )
    fresh = json.loads(path.read_text())
    stored = json.loads((GOLDEN / "analysis.json").read_text())
    assert fresh["model"] == stored["model"]

    def ranges(document: dict) -> list:
        return [(c["metric"], c["device"], c["a"], c["b"], c.get("model_range"),
                 c.get("model_share")) for c in document["comparisons"]]  # fmt: skip

    assert ranges(fresh) == ranges(stored)
    for metric, _, _, _, model, _ in ranges(fresh):
        assert (model is None) == (metric == "latency_ms")
    assert fresh["battery"] == stored["battery"]
    for projection in fresh["battery"]:
        model = projection["lifetime_days_model_range"]
        assert model["low"] <= projection["lifetime_days"] <= model["high"]
        assert projection["relative_model_range"] is not None


@pytest.mark.slow  # over half a second of CPU (tests/lanes.py)
def test_the_terminal_summary_shows_the_analysis_model_range_beside_modelled_columns(
    golden_results: Path,
) -> None:
    """The tables `run` ends with: each modelled column the analysis ranges is followed by
    its "model 90 %" column, the range read from analysis.json's model section (derived
    there, rendered here); measured columns get none; without the analysis, no column."""
    from rich.console import Console

    from iotsecbench.analysis.metrics import CURRENT
    from iotsecbench.report.terminal import summary_tables

    data = load(golden_results)
    assert data.analysis is not None and data.analysis.model is not None

    def text(model) -> str:  # type: ignore[no-untyped-def]
        console = Console(record=True, width=400)
        for table in summary_tables(data.summary, model=model):
            console.print(table)
        return console.export_text()

    shown, plain = text(data.analysis.model), text(None)
    assert "model 90 %" in shown and "model 90 %" not in plain
    current = METRICS.metric(CURRENT)
    value = data.analysis.model_value("tls1.2", "emitter", CURRENT)
    assert value is not None
    ends = (
        f"{value.model_range.low:,.{current.digits}f}–{value.model_range.high:,.{current.digits}f}"
    )
    row = next(line for line in shown.splitlines() if "tls1.2" in line and ends in line)
    # every modelled group's heading is the registry's; a measured group has no range column
    latency = next(t for t in summary_tables(data.summary, model=data.analysis.model)
                   if "atency" in str(t.title))  # fmt: skip
    assert not any("model" in str(c.header) for c in latency.columns)
    assert row.index(ends) > row.index(f"{value.value:,.{current.digits}f}")  # beside it
