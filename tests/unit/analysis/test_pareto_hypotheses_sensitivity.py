from iotsecbench.analysis.hypotheses import evaluate_hypotheses
from iotsecbench.analysis.pareto import dominates, pareto_analysis
from iotsecbench.analysis.results import Comparison, Interval
from iotsecbench.analysis.sensitivity import RunRegimes, energy_sensitivity


def comparison(a, b, low, high):
    return Comparison(
        metric="current_ma", device="emitter", a=a, b=b, mean_a=0, mean_b=0,
        difference=(low + high) / 2, interval=Interval(low, high, 0.95, "x"),
        significant=low > 0 or high < 0, cohens_d=1.0, effect="large", method="moving",
        block_length=20, reps=100, n_a=10, n_b=10,
    )  # fmt: skip


def test_dominance_rules():
    assert dominates((1, 1), (2, 2), ("min", "min"))
    assert not dominates((1, 1), (1, 1), ("min", "min"))
    assert not dominates((1, 3), (2, 2), ("min", "min"))
    assert dominates((1, 3), (2, 2), ("min", "max"))


def test_pareto_front_hand_built():
    values = {
        "plain": {"energy_mah": 1.0, "latency_ms": 10.0},
        "tls": {"energy_mah": 2.0, "latency_ms": 12.0},
        "hybrid": {"energy_mah": 1.5, "latency_ms": 9.0},
        "slow": {"energy_mah": 0.9, "latency_ms": 30.0},
    }
    result = pareto_analysis(values, {"energy_mah": "min", "latency_ms": "min"})
    assert set(result.front) == {"plain", "hybrid", "slow"}
    assert set(result.dominated_by["tls"]) == {"plain", "hybrid"}
    i, j = result.configurations.index("plain"), result.configurations.index("tls")
    assert result.dominance_matrix[i][j] and not result.dominance_matrix[j][i]


def test_security_as_constraint_and_objective():
    values = {"plain": {"energy_mah": 1.0}, "tls": {"energy_mah": 2.0}, "gcm": {"energy_mah": 1.5}}
    properties = {
        "plain": {"confidentiality": False, "integrity": False},
        "tls": {"confidentiality": False, "hop_integrity": True, "hop_confidentiality": True},
        "gcm": {"confidentiality": True, "integrity": True, "end_to_end": True},
    }
    constrained = pareto_analysis(values, {"energy_mah": "min"}, properties, ["integrity"])
    assert constrained.front == ("gcm",) and "plain" in constrained.excluded
    both = pareto_analysis(values, {"energy_mah": "min", "security_score": "max"}, properties)
    assert set(both.front) == {"plain", "gcm"}


def test_hypotheses_generalised():
    comps = [
        comparison("tls", "plain", 1.0, 2.0),
        comparison("hybrid", "plain", 0.2, 0.8),
        comparison("hybrid", "tls", -1.5, -0.5),
    ]
    values = {"plain": {"e": 1.0}, "tls": {"e": 3.0}, "hybrid": {"e": 2.0}}
    pareto = pareto_analysis(values, {"e": "min"})
    hs = evaluate_hypotheses(
        comps, pareto, ["plain", "tls", "hybrid"], "plain", "current_ma", ["emitter"]
    )
    verdicts = {(h.id, h.statement): h.verdict for h in hs}
    assert verdicts[("H1", "current_ma of tls exceeds plain on emitter")] == "supported"
    h2 = next(h for h in hs if h.id == "H2" and "of hybrid lies" in h.statement)
    assert h2.verdict == "supported"
    h2_bad = next(h for h in hs if h.id == "H2" and "of tls lies" in h.statement)
    assert h2_bad.verdict == "contradicted"
    h3 = {h.statement.split()[0]: h.verdict for h in hs if h.id == "H3"}
    assert h3 == {"plain": "not supported", "tls": "supported", "hybrid": "supported"}


def test_sensitivity_detects_ranking_flip_only_when_close():
    regimes = {
        "plain": RunRegimes(600, 5, 200, 100),
        "tls": RunRegimes(600, 10, 250, 104),
    }
    robust = energy_sensitivity(regimes, "emitter")
    assert robust.invariant_uniform and robust.nominal_ranking == ("plain", "tls")
    assert not robust.invariant_one_at_a_time  # α = 0.8 on tls alone makes it cheapest
