"""The golden analysis.json is what `analyze` computes today from the golden store.

The report's snapshot tests render from tests/data/golden/analysis.json; if the analysis
changes and nobody recomputes that file, they test a report of an analysis that no longer
exists. This test recomputes it with the options of tests/data/golden/README.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import GOLDEN

from iotsecbench.analysis.pipeline import AnalysisOptions
from iotsecbench.workflows.postprocess import run_analyze

# Bootstrap draws are seeded; the tolerance only absorbs floating-point summation order.
RELATIVE_TOLERANCE = 1e-9


def differences(stored: Any, computed: Any, path: str = "") -> list[str]:
    if isinstance(stored, dict) and isinstance(computed, dict):
        found = [f"{path}/{key}: only in one" for key in set(stored) ^ set(computed)]
        for key in sorted(set(stored) & set(computed)):
            found += differences(stored[key], computed[key], f"{path}/{key}")
        return found
    if isinstance(stored, list) and isinstance(computed, list):
        if len(stored) != len(computed):
            return [f"{path}: {len(stored)} items stored, {len(computed)} computed"]
        return [
            difference
            for index, (a, b) in enumerate(zip(stored, computed, strict=True))
            for difference in differences(a, b, f"{path}[{index}]")
        ]
    numbers = isinstance(stored, int | float) and isinstance(computed, int | float)
    if numbers and (isinstance(stored, float) or isinstance(computed, float)):
        if math.isclose(stored, computed, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-12):
            return []
    elif stored == computed:
        return []
    return [f"{path}: stored {stored!r:.60}, computed {computed!r:.60}"]


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_the_golden_analysis_is_what_analyze_computes(golden_results: Path, tmp_path: Path) -> None:
    _, path = run_analyze(
        golden_results, options=AnalysisOptions(seed=1, reps=500), out=tmp_path / "analysis.json"
    )
    computed = json.loads(path.read_text())
    stored = json.loads((GOLDEN / "analysis.json").read_text())
    for document in (computed, stored):
        document.pop("inputs")  # where it was computed, not what
    found = differences(stored, computed)
    assert not found, (
        f"{len(found)} difference(s), first: {found[:3]}; recompute tests/data/golden/"
        "analysis.json as its README says if the change is intended"
    )
