"""End to end: `iotsecbench analyze --csv` on generated CSVs with planted properties."""

import json
import sys
from pathlib import Path

import pytest

from iotsecbench.cli.app import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data" / "analysis"))
from generate import make_frames

LEVELS = {"plain": 100.0, "tls1.2": 104.0, "ecdh-p256-aes128-cbc": 102.0}
LATENCY = {"plain": 20.0, "tls1.2": 23.0, "ecdh-p256-aes128-cbc": 21.5}


@pytest.fixture(scope="module")
def analysis(tmp_path_factory):
    directory = tmp_path_factory.mktemp("analyze")
    current, latency = make_frames(
        seed=12, runs=5, seconds=300, rate_hz=10, messages=1500, levels=LEVELS,
        latency_ms=LATENCY, drifting="ecdh-p256-aes128-cbc",
    )  # fmt: skip
    current.to_csv(directory / "current.csv", index=False)
    latency.to_csv(directory / "latency.csv", index=False)
    out = directory / "out" / "analysis.json"
    out.parent.mkdir()  # an output file's directory must exist (docs/exit-codes.md)
    main(
        ["analyze", "--csv", str(directory / "current.csv"), "--latency-csv",
         str(directory / "latency.csv"), "--reps", "500", "--seed", "3", "--out", str(out)]
    )  # fmt: skip
    return json.loads(out.read_text())


@pytest.mark.slow
def test_document_carries_every_required_item(analysis):
    assert analysis["format"] == "iotsecbench-analysis" and analysis["version"] == 2
    # a CSV's current is nobody's model: no profile is drawn, no model range anywhere
    assert analysis["model"] is None
    assert all("model_range" not in c for c in analysis["comparisons"])
    assert all(b["lifetime_days_model_range"] is None for b in analysis["battery"])
    for key in ("comparisons", "series", "pareto", "hypotheses", "warnings", "descriptive",
                "cv", "per_minute", "cross_correlations", "sensitivity", "battery"):  # fmt: skip
        assert analysis[key], key
    for c in analysis["comparisons"]:
        for key in ("metric", "device", "a", "b", "difference", "ci_low", "ci_high",
                    "significant", "cohens_d", "method", "block_length"):  # fmt: skip
            assert key in c
    for s in analysis["series"]:
        for key in ("configuration", "device", "metric", "k_c", "ljung_box_pvalue", "adf_pvalue",
                    "kpss_pvalue", "change_points", "acf_mean", "pacf_mean"):  # fmt: skip
            assert key in s
    assert {c["metric"] for c in analysis["comparisons"]} == {
        "current_ma", "energy_mah", "latency_ms"
    }  # fmt: skip


@pytest.mark.slow
def test_planted_difference_is_covered(analysis):
    # each 95 % interval misses with probability 0.05 by design (coverage over many datasets is
    # test_analysis_coverage.py); the generator seed is fixed, so this check is deterministic
    found = [
        c for c in analysis["comparisons"]
        if c["metric"] == "current_ma" and c["a"] == "tls1.2" and c["b"] == "plain"
    ]  # fmt: skip
    assert len(found) == 2  # emitter and receiver
    for c in found:
        assert c["ci_low"] <= 4.0 <= c["ci_high"] and c["significant"]
        assert c["method"] == "moving" and c["block_length"] == 20
    latency = next(
        c for c in analysis["comparisons"] if c["metric"] == "latency_ms" and c["a"] == "tls1.2"
    )
    assert latency["ci_low"] <= 3.0 <= latency["ci_high"]


@pytest.mark.slow
def test_non_stationary_case_is_flagged(analysis):
    flagged = {
        (w["subject"]["configuration"], w["subject"]["device"])
        for w in analysis["warnings"]
        if w["kind"] == "non-stationary"
    }
    assert ("ecdh-p256-aes128-cbc", "emitter") in flagged
    assert not any(config in ("plain", "tls1.2") for config, _ in flagged)
    assert all(w["fix"] for w in analysis["warnings"])


@pytest.mark.slow
def test_transient_is_detected_in_stationary_configurations(analysis):
    series = next(
        s for s in analysis["series"]
        if s["configuration"] == "plain" and s["device"] == "emitter"
        and s["metric"] == "current_ma"
    )  # fmt: skip
    assert all(abs(t - 8.0) <= 2 for t in series["transient_s"].values())


def test_bad_options_exit_2_and_bad_data_exit_4(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["analyze", "--csv", str(tmp_path / "absent.csv")])
    assert done.value.code == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("configuration,device,run,time_s,current_ma\nplain,emitter,1,0.0,x\n")
    with pytest.raises(SystemExit) as done:
        main(["analyze", "--csv", str(bad)])
    assert done.value.code == 4
    assert "bad.csv:2" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["analyze", "--csv", str(bad), "--bootstrap", "wild"])
    assert done.value.code == 2
