"""A new metric is one registry entry: stored per run, it appears in the summary (and its
exports), the terminal's tables, the findings and the comparison of experiments."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from rich.console import Console

from iotsecbench.analysis.metrics import MEASURED, METRICS, OVER_RUNS, Metric
from iotsecbench.report.compare import compare, load_experiments
from iotsecbench.report.data import load
from iotsecbench.report.exporters import csv
from iotsecbench.report.findings import find
from iotsecbench.report.tables import summary_table
from iotsecbench.report.terminal import summary_tables

# One entry, nothing else: the emitter's TCP retransmissions per run, stored by the runner.
RETRANSMISSIONS = Metric(
    "retransmissions", "retransmissions", "emitter", "TCP retransmissions", "segments",
    MEASURED, 1, "retransmitted", "message", sources=("tcp_retransmissions",),
    finding=OVER_RUNS, across_experiments=True,
)  # fmt: skip
REGISTRY = METRICS.extended(RETRANSMISSIONS)


def _with_retransmissions(results: Path) -> Path:
    """The injected truth: run r of plain retransmits r segments, of tls1.2 r + 10."""
    with duckdb.connect(str(results / "results.duckdb")) as db:
        db.execute(
            "UPDATE runs SET tcp_retransmissions = repetition "
            "+ CASE WHEN cell_label = 'tls1.2' THEN 10 ELSE 0 END"
        )
    return results


@pytest.mark.slow  # findings and a comparison of two experiments: about 10 s of CPU
def test_one_registry_entry_reaches_every_output(golden_results: Path, tmp_path: Path) -> None:
    results = _with_retransmissions(golden_results)
    data = load(results, metrics=REGISTRY)

    # The per-run frame and the summary (mean of runs 1, 2, 3: 2 and 12).
    summary = data.summary.set_index("configuration")
    assert summary.loc["plain", "retransmissions"] == pytest.approx(2.0)
    assert summary.loc["tls1.2", "retransmissions"] == pytest.approx(12.0)
    assert sorted(data.run_values("tls1.2", "retransmissions")) == [11.0, 12.0, 13.0]

    # Exports: the summary table of every format.
    table = summary_table(data)
    assert table is not None
    header = csv.render(table).splitlines()[0].split(",")
    assert "retransmissions_segments" in header

    # The terminal's "cost per message" table.
    console = Console(record=True, width=300)
    for terminal_table in summary_tables(data.summary, REGISTRY):
        console.print(terminal_table)
    assert "retransmitted" in console.export_text()

    # A finding: tls1.2 retransmits 10 segments more per run than plain (exactly: every run).
    findings = find(data)
    found = [f for f in findings.items if f.metric == "retransmissions"]
    assert {f.configuration for f in found} == {"tls1.2", "ecdh-p256-aes128-gcm"}
    tls = next(f for f in found if f.configuration == "tls1.2")
    assert tls.difference == pytest.approx(10.0) and tls.significant
    assert (tls.kind, tls.unit, tls.role) == (MEASURED, "segments", "emitter")
    assert "raises the emitter's measured TCP retransmissions by 10" in tls.sentence
    assert tls.to_dict()["metric"] == "retransmissions"

    # Between experiments: the same store twice, so every value contrast is about 0.
    other = tmp_path / "again"
    shutil.copytree(results, other)
    comparison = compare(load_experiments([results, other], metrics=REGISTRY))
    contrasts = [c for c in comparison.contrasts if c.metric == "retransmissions"]
    assert {(c.kind_of_contrast, c.configuration) for c in contrasts} >= {
        ("value", "tls1.2"),
        ("cost", "tls1.2"),
    }
    cost = next(c for c in contrasts if (c.kind_of_contrast, c.configuration) == ("cost", "tls1.2"))
    assert cost.value == pytest.approx(10.0) and cost.difference == pytest.approx(0.0)

    # Without the entry, none of it: the metric lives in the registry alone.
    plain = load(results)
    assert "retransmissions" not in plain.summary
    assert not [f for f in find(plain).items if f.metric == "retransmissions"]
