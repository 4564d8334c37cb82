"""Attaching a meter trace to a stored run (workflows/attach.py, `iotsecbench attach`), against
injected truth: a (simulated) run's modelled current, 20 % off and noisy, written as a PPK2
export at 2 kHz with a known offset and the D0 sync toggles; the run is placed exactly
(sync) or within 50 ms (correlation), its per-phase charge recovered within 1 %, and a
trace that is unrelated or too short is refused with nothing stored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import query, run_cli, run_cli_forked
from tests.meter_traces import (
    METER_HZ,
    OFFSET_S,
    SCALE,
    charge_tolerance_uc,
    expected_charge_uc,
    run_facts,
    write_ppk2,
)

# The run and attach go through the CLI, each in its own process (tests/lanes.py).
pytestmark = pytest.mark.integration


def forked_cli(*args: str):  # -> tests.conftest.CliResult
    """The commands on the stored run (attach, analyze, report, calibrate, db), forked from the
    worker's CLI server (tests/cli_server.py): some twenty calls here, each of which would
    otherwise import pandas, scipy and matplotlib again (~2.5 s of CPU a call)."""
    return run_cli_forked(*args, timeout=300)


RUN = "tls1.2_256B_10Hz_q1_r1"


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("attach") / "results"
    result = run_cli(
        "run", "--simulate", "--duration", "10", "--reps", "1", "--configs", "plain,tls1.2",
        "--out", str(out), "--quiet", "--no-report",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture
def results(simulated: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(simulated, tmp_path / "results"))


def test_sync_places_the_run_to_one_sample_and_recovers_each_phase(
    results: Path, tmp_path: Path
) -> None:
    facts = run_facts(results, RUN)
    trace = write_ppk2(tmp_path / "ppk2.csv", facts)
    result = forked_cli("attach", str(results / "runs" / RUN), str(trace), "--voltage", "3.3")
    assert result.returncode == 0, result.stderr
    assert "by the sync channel" in result.stdout
    ((method, offset, ratio, voltage, source),) = query(
        results,
        "select method, offset_s, clock_ratio, voltage_v, voltage_source from meter_traces",
    )
    assert method == "sync" and voltage == 3.3 and source == "given"
    assert abs(offset - OFFSET_S) <= 1 / METER_HZ
    assert abs(ratio - 1) < 1e-3
    stored = dict(
        query(
            results,
            "select phase, charge_uc from meter_phases where run_id = ? and phase != 'message'",
            RUN,
        )
    )
    for phase, (start, end) in facts["phases"].items():
        truth = expected_charge_uc(facts, start, end)
        tolerance = 0.01 * truth + charge_tolerance_uc(start, end)
        assert stored[phase] == pytest.approx(truth, abs=tolerance), phase
    # The measured current per sample window sits beside the modelled one, on its windows.
    measured = query(
        results,
        "select m.current_ma, s.current_ma from meter_samples m join samples s "
        "using (run_id, agent, t_ns) where run_id = ?",
        RUN,
    )
    assert len(measured) >= len(facts["ends"]) - 1
    ratios = np.array([m / s for m, s in measured[1:]])
    assert np.median(ratios) == pytest.approx(SCALE, rel=0.01)
    energy = query(results, "select energy_uj, charge_uc from meter_phases limit 1")[0]
    assert energy[0] == pytest.approx(energy[1] * 3.3)


def test_correlation_places_the_run_within_50_ms(results: Path, tmp_path: Path) -> None:
    facts = run_facts(results, RUN)
    trace = write_ppk2(tmp_path / "ppk2.csv", facts, offset_s=2.73)
    result = forked_cli("attach", str(results), str(trace), "--run", RUN, "--correlate")
    assert result.returncode == 0, result.stderr
    columns = "select method, offset_s, correlation from meter_traces"
    ((method, offset, r),) = query(results, columns)
    assert method == "correlation" and r >= 0.6
    assert abs(offset - 2.73) < 0.05


def test_an_unrelated_or_short_trace_is_refused_and_nothing_is_stored(
    results: Path, tmp_path: Path
) -> None:
    facts = run_facts(results, RUN)
    record = results / "runs" / RUN / "record.json"
    before = record.read_bytes()
    unrelated = write_ppk2(tmp_path / "other.csv", facts, unrelated=True)
    refused = forked_cli("attach", str(results / "runs" / RUN), str(unrelated), "--correlate")
    assert refused.returncode == 4, refused.stderr
    assert "does not look like this run" in refused.stderr
    short = write_ppk2(tmp_path / "short.csv", facts, tail_s=-4.0)
    refused = forked_cli("attach", str(results / "runs" / RUN), str(short), "--offset", "3.25")
    assert refused.returncode == 4, refused.stderr
    assert "shorter than the run" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert record.read_bytes() == before
    assert query(results, "select count(*) from meter_traces") == [(0,)]


def test_attaching_again_replaces_and_rebuild_keeps_it(results: Path, tmp_path: Path) -> None:
    facts = run_facts(results, RUN)
    trace = write_ppk2(tmp_path / "ppk2.csv", facts)
    for _ in range(2):
        assert forked_cli("attach", str(results / "runs" / RUN), str(trace)).returncode == 0
    counted = "select (select count(*) from meter_traces), (select count(*) from meter_samples)"
    (attached,) = query(results, counted)
    assert attached[0] == 1
    document = json.loads((results / "runs" / RUN / "record.json").read_text())
    assert document["tables"]["meter_traces"]["sha256"] == [query(
        results, "select sha256 from meter_traces")[0][0]]  # fmt: skip
    assert forked_cli("db", "rebuild", str(results)).returncode == 0
    assert query(results, counted) == [attached]


def test_which_run_must_be_said(results: Path, tmp_path: Path) -> None:
    trace = write_ppk2(tmp_path / "ppk2.csv", run_facts(results, RUN))
    refused = forked_cli("attach", str(results), str(trace))
    assert refused.returncode == 2
    assert "2 completed runs: name one with --run" in refused.stderr


def test_calibrate_recovers_the_idle_current_the_meter_saw(results: Path, tmp_path: Path) -> None:
    """The synthetic device draws 1.2 × the model: fitting the idle current alone finds
    1.2 × 32 mA (the rest of the model is a few percent of the current here)."""
    facts = run_facts(results, RUN)
    trace = write_ppk2(tmp_path / "ppk2.csv", facts)
    assert forked_cli("attach", str(results / "runs" / RUN), str(trace)).returncode == 0
    other = "plain_256B_10Hz_q1_r1"
    other_trace = write_ppk2(tmp_path / "plain.csv", run_facts(results, other), seed=5)
    assert forked_cli("attach", str(results / "runs" / other), str(other_trace)).returncode == 0
    out = tmp_path / "calibrated.toml"
    result = forked_cli(
        "calibrate", str(results / "runs" / RUN), "--out", str(out),
        "--fit", "idle_associated_current", "--check", str(results / "runs" / other),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "held-back" in result.stdout
    from iotsecbench.energy.profile import load_profile

    profile = load_profile(out)
    idle = profile.parameters["idle_associated_current"]
    assert idle.status == "calibrated" and idle.value == pytest.approx(1.2 * 32, rel=0.05)
    assert profile.name == "esp32-wroom-32-calibrated"
    assert (
        query(results, "select sha256 from meter_traces where run_id = ?", RUN)[0][0][:12]
        in idle.source
    )
    # A run without a trace cannot be calibrated against.
    refused = forked_cli("calibrate", str(tmp_path), "--out", str(out))
    assert refused.returncode == 2
    # An output under a file is refused before anything is fitted (exit 2), in one line (a
    # read-only one is the environment's, exit 3: tests/integration/test_cli_matrix.py).
    misplaced = forked_cli(
        "calibrate", str(results / "runs" / RUN), "--out", str(trace / "calibrated.toml"),
        "--fit", "idle_associated_current",
    )  # fmt: skip
    assert misplaced.returncode == 2, misplaced.stderr
    assert "is a file, not a directory" in misplaced.stderr
    assert len(misplaced.stderr.strip().splitlines()) == 1


def test_statistics_and_report_take_the_measured_current(results: Path, tmp_path: Path) -> None:
    nothing = forked_cli("analyze", str(results), "--current", "measured")
    assert nothing.returncode == 2 and "attach" in nothing.stderr  # as `report` says it
    no_trace = forked_cli("report", str(results), "--current", "measured")
    assert no_trace.returncode == 2 and "attach" in no_trace.stderr
    assert not (results / "report-measured").exists()
    for run_id in (RUN, "plain_256B_10Hz_q1_r1"):
        trace = write_ppk2(tmp_path / f"{run_id}.csv", run_facts(results, run_id))
        assert forked_cli("attach", str(results / "runs" / run_id), str(trace)).returncode == 0
    analysed = forked_cli("analyze", str(results), "--current", "measured", "--block-length", "3")
    assert analysed.returncode == 0, analysed.stderr
    assert "device current measured" in analysed.stdout
    document = json.loads((results / "analysis-measured.json").read_text())
    assert document["inputs"]["current"] == "measured"
    (comparison,) = [c for c in document["comparisons"] if c["metric"] == "current_ma"]
    # Measured means are the model's, 20 % higher (the synthetic device), not the model's own.
    (modelled,) = query(
        results,
        "select avg(current_ma) from samples where run_id = ? and agent = 'emitter'",
        "plain_256B_10Hz_q1_r1",
    )[0]
    assert comparison["mean_a" if comparison["a"] == "plain" else "mean_b"] == pytest.approx(
        SCALE * modelled, rel=0.02
    )
    assert forked_cli("analyze", str(results), "--block-length", "3").returncode == 0
    assert forked_cli("report", str(results)).returncode == 0
    page = (results / "report" / "report.html").read_text()
    assert "Measured against modelled current" in page
    assert "Measured current: differences of means" in page
    assert "measured with ppk2" in page
    assert (results / "report" / "figures" / "measured-against-modelled.png").exists()
    modelled_findings = json.loads((results / "report" / "findings.json").read_text())
    (emitter,) = [
        f
        for f in modelled_findings["findings"]
        if (f["metric"], f["role"]) == ("current_ma", "emitter")
    ]
    assert emitter["kind"] == "modelled"
    assert emitter["baseline_value"] == pytest.approx(modelled, rel=0.02)

    # The whole report on the measured current: every current figure and finding says so,
    # and the finding's numbers are the meter's (the model's × SCALE), not the model's.
    built = forked_cli("report", str(results), "--current", "measured", "--format", "html,csv")
    assert built.returncode == 0, built.stderr
    measured_report = results / "report-measured"
    findings = json.loads((measured_report / "findings.json").read_text())
    (emitter,) = [
        f for f in findings["findings"] if (f["metric"], f["role"]) == ("current_ma", "emitter")
    ]
    assert emitter["kind"] == "measured with ppk2"
    assert emitter["baseline_value"] == pytest.approx(SCALE * modelled, rel=0.02)
    assert "the emitter's current measured with ppk2" in emitter["sentence"]
    page = (measured_report / "report.html").read_text()
    assert "device current measured with ppk2" in page
    assert "Measured with ppk2. 1 Hz mean current" in page  # the repeatability figure
    assert "Measured current: differences of means" not in page  # the inference table has it
    inference = (measured_report / "tables" / "inference.csv").read_text()
    assert "current measured with ppk2 (mA)" in inference
    assert (results / "report" / "report.html").exists()  # the modelled report stays
    assert forked_cli("report", str(results), str(results), "--current", "measured").returncode == 2
