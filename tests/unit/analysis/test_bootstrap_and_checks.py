import numpy as np
import pytest
from generate import ar1

from iotsecbench.analysis import checks
from iotsecbench.analysis.bootstrap import (
    block_bootstrap_difference,
    choose_block_length,
    iid_bootstrap_difference,
)
from iotsecbench.analysis.results import Interval


def test_bootstrap_is_reproducible_for_int_and_generator(seed):
    rng = np.random.default_rng(1)
    a = [ar1(300, 0.6, 1.0, rng) + 0.5 for _ in range(2)]
    b = [ar1(300, 0.6, 1.0, rng) for _ in range(2)]
    fresh = (lambda: np.random.default_rng(12345)) if not isinstance(seed, int) else lambda: 12345
    first = block_bootstrap_difference(a, b, 20, "moving", 200, seed=seed)
    second = block_bootstrap_difference(a, b, 20, "moving", 200, seed=fresh())
    np.testing.assert_array_equal(first.replicates, second.replicates)
    assert first.estimate == pytest.approx(np.concatenate(a).mean() - np.concatenate(b).mean())


@pytest.mark.parametrize("method", ["moving", "circular", "stationary"])
def test_methods_run_and_cover_a_clear_difference(method):
    rng = np.random.default_rng(3)
    a = [ar1(600, 0.5, 1.0, rng) + 2.0]
    b = [ar1(600, 0.5, 1.0, rng)]
    result = block_bootstrap_difference(a, b, 20, method, 500, seed=0)
    assert result.significant and result.interval.contains(2.0)


def test_block_length_rules():
    assert choose_block_length([np.zeros(100)], 20).block_length == 20
    assert choose_block_length([np.zeros(100)], "kc", k_c=7).block_length == 11
    rng = np.random.default_rng(0)
    auto = choose_block_length([ar1(600, 0.8, 1.0, rng) for _ in range(3)], "auto")
    assert auto.rule == "auto" and auto.block_length > 5 and len(auto.estimates) == 3
    with pytest.raises(ValueError):
        choose_block_length([np.zeros(10)], "big")


def test_iid_runs_expanded_interval_is_wider():
    a, b = [1.0, 1.2, 0.9, 1.1, 1.05], [0.5, 0.7, 0.6, 0.4, 0.55]
    plain = iid_bootstrap_difference(a, b, 2000, seed=1, expanded=False)
    expanded = iid_bootstrap_difference(a, b, 2000, seed=1, expanded=True)
    assert expanded.interval.high - expanded.interval.low > plain.interval.high - plain.interval.low
    assert expanded.method == "iid-runs" and expanded.block_length is None


def test_interval_validation():
    with pytest.raises(ValueError):
        Interval(2.0, 1.0, 0.95, "x")
    assert Interval(-1, 1, 0.95, "x").contains(0) and Interval(1, 2, 0.95, "x").excludes_zero()


def test_modified_z_score_threshold_is_iglewicz_hoaglin():
    values = np.r_[np.zeros(50) + np.linspace(-1, 1, 50), 50.0]
    mask = checks.outlier_mask(values)
    assert mask[-1] and mask.sum() == 1
    assert checks.MODIFIED_Z_THRESHOLD == 3.5
    warning = checks.check_outliers(values, {"configuration": "x"}, max_fraction=0.0)[0]
    assert warning.kind is checks.WarningKind.OUTLIERS
    assert warning.to_dict()["kind"] == "outliers" and warning.to_dict()["fix"]


def test_block_and_run_warnings():
    kinds = {w.kind for w in checks.check_block_length(10, 12, 50, {})}
    assert kinds == {checks.WarningKind.BLOCK_TOO_SHORT, checks.WarningKind.TOO_FEW_BLOCKS}
    assert checks.check_block_length(20, 8, 600, {}) == []
    assert checks.check_runs(3, {})[0].kind is checks.WarningKind.TOO_FEW_RUNS
    assert checks.check_cv(0.2, {})[0].kind is checks.WarningKind.HIGH_CV
    assert checks.check_stationarity(["s"] * 5, [True, False, False, False, False], {}) == []
    assert checks.check_stationarity(["n"] * 5, [True, True, True, False, False], {})
