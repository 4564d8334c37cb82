"""Energy comparisons paired by block (``--block-on``): a known difference between two
configurations, hidden under large differences between blocks (a faster worker, a warmer
hour), is found by the blocked comparison and lost by the unblocked one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iotsecbench.analysis.pipeline import AnalysisOptions, analyze
from iotsecbench.errors import SpecError

SECONDS = 60
DIFFERENCE_MA = 1.0  # configuration b draws this much more than a, in every block


def current_frame(block_offsets_ma: list[float], workers: list[str]) -> pd.DataFrame:
    """Two configurations, one run of each per block; the block shifts both alike."""
    rng = np.random.default_rng(3)
    rows = []
    for run, (offset, worker) in enumerate(zip(block_offsets_ma, workers, strict=True), start=1):
        for configuration, extra in (("a", 0.0), ("b", DIFFERENCE_MA)):
            level = 30.0 + offset + extra
            for second in range(SECONDS):
                rows.append((configuration, "emitter", run, float(second),
                             level + rng.normal(0, 0.05), worker))  # fmt: skip
    return pd.DataFrame(
        rows, columns=["configuration", "device", "run", "time_s", "current_ma", "worker"]
    )


def energy_comparison(result) -> dict:
    [row] = [c for c in result.comparisons if c.metric == "energy_mah"]
    return row


def expected_difference_mah() -> float:
    # mAh over the run: 1 mA more in each of its 1 Hz samples.
    return DIFFERENCE_MA * SECONDS / 3600


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_blocking_on_repetition_recovers_a_difference_hidden_by_drift() -> None:
    frame = current_frame([0.0, 12.0, -7.0, 20.0, 3.0, -15.0], ["local"] * 6)
    options = {"reps": 2000, "baseline": "a"}
    unblocked = energy_comparison(analyze(frame, options=AnalysisOptions(**options)))
    blocked = energy_comparison(
        analyze(frame, options=AnalysisOptions(**options, block_on="repetition"))
    )
    truth = expected_difference_mah()
    # Both estimate the same difference of means; only the blocked interval is tight.
    assert blocked.difference == pytest.approx(unblocked.difference)
    # 0.05 mA of noise per sample leaves about 1 % on the difference (this seed: -0.8 %).
    assert abs(blocked.difference - truth) < 0.02 * truth
    assert (
        blocked.interval.low <= blocked.difference <= blocked.interval.high and blocked.significant
    )
    assert not unblocked.significant  # the drift between repetitions swamps 1 mA
    assert (blocked.interval.high - blocked.interval.low) < (
        unblocked.interval.high - unblocked.interval.low
    ) / 10
    assert blocked.method == "paired-repetitions (6 blocks)"


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_blocking_on_worker_pairs_the_runs_each_machine_measured() -> None:
    # Three runs on a fast machine, three on a slow one (+18 mA: modelled from its activity).
    offsets = [0.0, 0.2, -0.1, 18.0, 18.1, 17.9]
    workers = ["tcp://fast:1", "tcp://fast:1", "tcp://fast:1", "tcp://slow:2", "tcp://slow:2",
               "tcp://slow:2"]  # fmt: skip
    frame = current_frame(offsets, workers)
    result = analyze(frame, options=AnalysisOptions(baseline="a", block_on="worker"))
    blocked = energy_comparison(result)
    assert blocked.method == "paired-workers (2 blocks)"
    assert (
        blocked.interval.low > 0 and abs(blocked.difference / expected_difference_mah() - 1) < 0.02
    )


def test_blocking_needs_a_known_choice_and_the_workers() -> None:
    with pytest.raises(SpecError, match="none, repetition or worker"):
        AnalysisOptions(block_on="machine")
    frame = current_frame([0.0, 1.0], ["local", "local"]).drop(columns="worker")
    with pytest.raises(SpecError, match="needs where each run ran"):
        analyze(frame, options=AnalysisOptions(block_on="worker"))


def test_one_shared_block_gives_no_comparison_and_says_why() -> None:
    # Every run on one worker: a single block, no interval to give.
    frame = current_frame([0.0, 12.0, -7.0], ["tcp://only:1"] * 3)
    result = analyze(frame, options=AnalysisOptions(baseline="a", block_on="worker"))
    assert not [c for c in result.comparisons if c.metric == "energy_mah"]
    [warning] = [w for w in result.warnings if w.kind.code == "too-few-shared-blocks"]
    assert "share 1 worker block(s)" in warning.message and "--block-on none" in warning.kind.fix
