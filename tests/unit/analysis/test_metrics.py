"""The metric registry (analysis.metrics): each metric declared once, every entry derivable,
and no module of the report spelling a metric's key outside it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from iotsecbench.analysis import per_run
from iotsecbench.analysis.metrics import (
    GROUPS,
    METRICS,
    MODELLED,
    POOLED,
    Metric,
    Registry,
    metric,
)

REPORT = Path(__file__).resolve().parents[3] / "src" / "iotsecbench" / "report"


def test_every_metric_says_what_it_is() -> None:
    for entry in METRICS:
        assert entry.name and entry.title and entry.kind, entry.column
        assert entry.summary is None or entry.group, f"{entry.column}: in no summary group"
    assert {entry.group for entry in METRICS} - {""} == {group.key for group in GROUPS}


def test_every_metric_comes_from_its_sources_or_a_derivation() -> None:
    """A metric without stored sources is one analysis.per_run derives, or pools itself."""
    for entry in METRICS:
        if entry.sources:
            continue
        if entry.summary == POOLED:
            assert entry.column in per_run.POOLED_HERE, entry.column
        else:
            assert entry.column in per_run.DERIVED, entry.column
    assert {m.column for m in METRICS if m.summary == POOLED} == per_run.POOLED_HERE


def test_one_name_unit_and_kind_per_key() -> None:
    with pytest.raises(ValueError, match="disagree"):
        Registry(
            (
                Metric("a_ms", "x_ms", "emitter", "x", "ms", "measured", 1, "x"),
                Metric("b_ms", "x_ms", "receiver", "x", "s", "measured", 1, "x"),
            )
        )
    with pytest.raises(ValueError, match="share a column"):
        METRICS.extended(METRICS[0])
    with pytest.raises(ValueError, match="kind"):
        Metric("a", "a", "", "a", "", "guessed", 0, "a")


def test_lookups_and_the_current_kind() -> None:
    current = metric("current_ma")
    assert (current.name, current.unit, current.kind) == ("current", "mA", MODELLED)
    assert metric("current_ma", "measured with ppk2").heading() == "current measured with ppk2 (mA)"
    assert metric("latency_ms").described == "measured mean end-to-end latency"
    assert metric("no_such_metric").heading() == "measured no such metric"
    assert METRICS.of("current_ma", "receiver").column == "receiver_current_ma"
    findings = [(m.key, m.role) for m in METRICS.findings()]
    assert findings[:4] == [
        ("current_ma", "emitter"),
        ("current_ma", "receiver"),
        ("energy_mah", "emitter"),
        ("energy_mah", "receiver"),
    ]
    assert [m.column for m in METRICS.across_experiments()][-2:] == [
        "broker_cpu_percent",
        "broker_rss_mib",
    ]


def _spelled(path: Path, names: frozenset[str]) -> list[str]:
    """Every string literal of ``path`` (f-strings' parts too) that is one of ``names``."""
    return [
        f"{path.name}:{node.lineno}: {node.value!r}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def test_no_report_module_spells_a_metric_key() -> None:
    """The report names a metric through the registry, never as a string of its own: a key
    or column is spelled in analysis.metrics only. (Keys that are plain words — runs, lost,
    rejected — are also ordinary column names of other tables.)"""
    names = frozenset(name for name in METRICS.names if "_" in name)
    spelled = [line for path in sorted(REPORT.rglob("*.py")) for line in _spelled(path, names)]
    assert not spelled, "metric keys spelled outside the registry:\n" + "\n".join(spelled)


def test_the_check_catches_a_spelled_key(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text('COLUMN = "wire_bytes_per_message"\nLABEL = f"{1}: current_ma"\n')
    assert _spelled(probe, METRICS.names) == ["probe.py:1: 'wire_bytes_per_message'"]
