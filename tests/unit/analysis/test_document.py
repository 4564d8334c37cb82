"""analysis.json is read back through typed records: a renamed field fails loudly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from iotsecbench.analysis.document import FORMAT_VERSION, parse_analysis, read_analysis
from iotsecbench.analysis.pipeline import AnalysisOptions, analyze
from iotsecbench.errors import DataError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "analysis"))
from generate import make_frames


@pytest.fixture(scope="module")
def document() -> dict:
    current, latency = make_frames(seed=1, runs=3, seconds=120, rate_hz=1, messages=200)
    result = analyze(current, latency, options=AnalysisOptions(reps=200))
    return json.loads(json.dumps(result.to_dict(), default=float))


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_what_the_pipeline_writes_reads_back(document: dict) -> None:
    typed = parse_analysis(document)
    assert typed.baseline == document["baseline"]
    assert len(typed.comparisons) == len(document["comparisons"]) > 0
    assert [c.interval.low for c in typed.comparisons] == [
        c["ci_low"] for c in document["comparisons"]
    ]
    assert len(typed.series) == len(document["series"]) and typed.pareto is not None
    assert {c.metric for c in typed.comparisons_of("latency_ms")} == {"latency_ms"}


def test_a_renamed_field_fails_loudly_naming_where(document: dict) -> None:
    broken = json.loads(json.dumps(document))
    broken["comparisons"][1]["ci_lower"] = broken["comparisons"][1].pop("ci_low")
    with pytest.raises(DataError, match=r"comparisons\[1\] lacks ci_low"):
        parse_analysis(broken)


def test_format_and_version_are_checked(document: dict, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not an iotsecbench analysis"):
        parse_analysis({**document, "format": "something-else"})
    with pytest.raises(DataError, match=f"expected {FORMAT_VERSION}"):
        parse_analysis({**document, "version": FORMAT_VERSION + 1})
    path = tmp_path / "analysis.json"
    path.write_bytes(b"\xff\xfe not json")
    with pytest.raises(DataError):
        read_analysis(path)
