"""Findings and readable numbers: sentences built from the analysis' own values, rounding set
by the interval, sample-size honesty, and the hypothesis matrix."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pytest
from tests.conftest import GOLDEN

from iotsecbench.analysis.bootstrap import iid_bootstrap_difference, keyed_generator
from iotsecbench.analysis.results import Interval
from iotsecbench.errors import DataError
from iotsecbench.report import readable
from iotsecbench.report.build import BuiltReport
from iotsecbench.report.data import load
from iotsecbench.report.findings import (
    ANALYSIS_METRICS,
    FORMAT_NAME,
    FORMAT_VERSION,
    MIN_RUNS,
    RUN_LEVEL_REPS,
    Findings,
    find,
    read_findings,
    runs_needed,
)


@pytest.mark.parametrize(
    ("half_width", "decimals"),
    [(0.57, 2), (3.2, 1), (0.0034, 4), (12.0, 0), (250.0, 0), (0.095, 3), (1.0, 1)],
)
def test_digits_follow_the_interval(half_width: float, decimals: int) -> None:
    """Two significant digits of the interval's half-width, never rounding to tens."""
    assert readable.decimals_for(half_width) == decimals


def test_numbers_read_as_numbers() -> None:
    assert readable.interval_text(0.12, 1.26, 2) == "0.12–1.26"
    assert readable.interval_text(-0.014, 0.031, 3) == "−0.014 to 0.031"  # no dash for minus
    assert readable.number(0.688, 2, signed=True) == "+0.69"
    assert readable.number(-19.2, 0, signed=True) == "−19"
    assert readable.configuration_name("tls1.2") == "TLS 1.2"
    assert readable.configuration_name("tls1.3+x25519-aes128-gcm") == "TLS 1.3 + x25519-aes128-gcm"
    assert readable.configuration_name("ecdh-p256-aes128-gcm") == "ecdh-p256-aes128-gcm"
    # Cohen (1988): 0.2 small, 0.5 medium, 0.8 large.
    words = [readable.effect_word(d) for d in (0.1, 0.2, -0.49, 0.5, 0.79, -0.8, 3.0)]
    assert words == ["negligible", "small", "small", "medium", "medium", "large", "large"]
    assert readable.metric("current_ma").heading() == "modelled current (mA)"


def test_runs_needed_by_hand() -> None:
    """SD 1 in both configurations, baseline 100, ±1 % → half-width 1: with n = 9,
    t(0.975, 16)·√(2/9) = 2.120·0.4714 = 0.9993 ≤ 1; with n = 8, 2.145·0.5 = 1.072 > 1."""
    a = np.array([99.0, 101.0])  # SD √2 … scaled below to exactly 1
    a = 100 + (a - 100) / math.sqrt(2)
    assert runs_needed(a, a.copy(), 100.0, 0.01) == 9
    assert runs_needed(a[:1], a, 100.0, 0.01) is None  # one run: no spread to go on
    assert runs_needed(a, a, 0.0, 0.01) is None


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_every_finding_comes_from_the_analysis_or_the_runs(golden_results: Path) -> None:
    data = load(golden_results)
    findings = find(data)
    assert findings.baseline == "plain"
    assert {f.configuration for f in findings.items} == {"tls1.2", "ecdh-p256-aes128-gcm"}
    comparisons = {(c.metric, c.device, c.a, c.b): c for c in data.analysis.comparisons}
    with duckdb.connect(str(golden_results / "results.duckdb"), read_only=True) as db:
        setup = db.execute(
            "select r.cell_label, r.run_id, sum(h.wall_ns) / 1e6 from handshakes h "
            "join runs r using (run_id) where h.agent = 'emitter' and r.status = 'ok' "
            "group by all order by 2"
        ).fetchall()
    for f in findings.items:
        about = readable.metric(f.metric)
        assert (f.kind, f.unit) == (about.kind, about.unit)
        assert f.runs == 3 and not f.enough_runs and f.runs < MIN_RUNS
        assert "Indicative" in f.caveat or "Degenerate" in f.caveat
        if (f.metric, f.role) in ANALYSIS_METRICS:
            row = comparisons.get((f.metric, f.role, f.configuration, "plain"))
            sign = 1
            if row is None:
                row, sign = comparisons[(f.metric, f.role, "plain", f.configuration)], -1
            assert f.difference == pytest.approx(sign * row.difference)
            assert sorted((f.interval.low, f.interval.high)) == pytest.approx(
                sorted((sign * row.interval.low, sign * row.interval.high))
            )
        if f.metric == "setup_ms":  # recomputed here from the stored phases
            mine = [v for label, _, v in setup if label == f.configuration]
            base = [v for label, _, v in setup if label == "plain"]
            expected = iid_bootstrap_difference(
                mine, base, reps=RUN_LEVEL_REPS,
                seed=keyed_generator(data.spec["seed"], "finding", "setup_ms", "emitter",
                                     f.configuration, "plain"),
            )  # fmt: skip
            assert f.difference == pytest.approx(np.mean(mine) - np.mean(base))
            assert (f.interval.low, f.interval.high) == pytest.approx(
                (expected.interval.low, expected.interval.high)
            )
        # The sentence says the numbers it stands on, at the interval's rounding, with unit.
        decimals = readable.decimals_for(
            (f.interval.high - f.interval.low) / 2 or abs(f.difference) / 10
        )
        interval = readable.interval_text(f.interval.low, f.interval.high, decimals)
        assert f"95 % CI {interval} {f.unit}" in f.sentence, f.sentence
        assert readable.configuration_name(f.configuration) in f.sentence
        assert f"{f.kind} {about.name}" in f.sentence
        verb = ("raises" if f.difference > 0 else "lowers") if f.significant else "does not"
        assert verb in f.sentence
    assert "Pareto front" in findings.pareto and "esp32-wroom-32" in findings.pareto
    assert any("Few runs: 3 per configuration" in note for note in findings.notes)


@pytest.mark.slow
def test_findings_json_and_the_report_open_with_them(golden_report: BuiltReport) -> None:
    built = golden_report  # html among its formats, every figure also as svg and pdf
    document = json.loads((built.directory / "findings.json").read_text())
    assert document["baseline"] == "plain" and document["findings"]
    first = document["findings"][0]
    assert {"sentence", "unit", "kind", "ci_low", "ci_high", "relative_percent"} <= set(first)
    page = built.html.read_text()
    # Findings come first after the title and navigation; the matrix replaces the long table.
    assert page.index('id="findings"') < page.index('id="summary"') < page.index('id="experiment"')
    assert first["sentence"].replace("'", "&#x27;") in page
    assert page.count("<table class='matrix'>") == 1
    assert page.index("Every hypothesis with its evidence") > page.index('id="raw-data"')
    # Vector copies of every figure, one per format, that parse.
    svgs = sorted((built.directory / "figures").glob("*.svg"))
    pdfs = sorted((built.directory / "figures").glob("*.pdf"))
    pngs = sorted((built.directory / "figures").glob("*.png"))
    assert len(svgs) == len(pdfs) == len(pngs) > 0
    import xml.etree.ElementTree as ET

    for svg in svgs:
        assert ET.parse(svg).getroot().tag.endswith("svg")
    for pdf in pdfs:
        content = pdf.read_bytes()
        assert content.startswith(b"%PDF-") and b"%%EOF" in content[-32:] and len(content) > 1000


@pytest.mark.slow  # the shared golden report: every figure drawn, in three formats
def test_golden_findings_are_what_the_report_finds(golden_report: BuiltReport) -> None:
    """tests/data/golden/findings.json was written before findings.json had a version (and
    before the metric registry, the typed findings and the model's range): the report still
    finds exactly that, apart from the format and version fields and, on each modelled
    finding, the model's range (issue 36), which its sentence now says too."""
    built = golden_report  # the findings do not depend on the formats drawn
    written = json.loads((built.directory / "findings.json").read_text())
    stored = json.loads((GOLDEN / "findings.json").read_text())
    assert "version" not in stored and "format" not in stored
    assert (written.pop("format"), written.pop("version")) == ("iotsecbench-findings", 2)
    assert built.findings is not None and built.findings.to_dict() == {
        "format": "iotsecbench-findings", "version": 2, **written
    }  # fmt: skip
    modelled = 0
    for new, old in zip(written["findings"], stored["findings"], strict=True):
        if new["kind"] == "modelled":
            modelled += 1
            assert new.pop("model_range")["level"] == 0.9
            assert 0 <= new.pop("model_share") <= 1
            assert "; model: 90 % range " in new["sentence"]
            assert "of profile draws" in new["sentence"]
            assert new.pop("sentence").split(" (")[0] == old.pop("sentence").split(" (")[0]
    assert modelled == 8
    assert written == stored


def test_findings_json_reads_back_typed_and_older_versions_are_upgraded(tmp_path: Path) -> None:
    stored = json.loads((GOLDEN / "findings.json").read_text())  # version 0: no version field
    findings = Findings.from_dict(stored)
    assert findings.baseline == "plain" and len(findings.items) == len(stored["findings"])
    first = findings.items[0]
    assert isinstance(first.interval, Interval)
    assert (first.interval.low, first.interval.high) == (
        stored["findings"][0]["ci_low"],
        stored["findings"][0]["ci_high"],
    )
    assert findings.to_dict() == {"format": FORMAT_NAME, "version": FORMAT_VERSION, **stored}
    path = tmp_path / "findings.json"
    path.write_text(json.dumps(findings.to_dict()))
    assert read_findings(path) == findings
    with pytest.raises(DataError, match=f"findings version {FORMAT_VERSION + 1}"):
        Findings.from_dict({**findings.to_dict(), "version": FORMAT_VERSION + 1})
    with pytest.raises(DataError, match="not an iotsecbench findings document"):
        Findings.from_dict({"format": "iotsecbench-analysis", "version": 1})
    broken = json.loads(json.dumps(stored))
    del broken["findings"][2]["ci_high"]
    with pytest.raises(DataError, match=r"findings\[2\] lacks ci_high"):
        Findings.from_dict(broken)
    path.write_bytes(b"\xff not json")
    with pytest.raises(DataError):
        read_findings(path)


@pytest.mark.slow  # finds every finding of the golden store: ~2 s of CPU
def test_an_emitter_counted_on_a_virtual_mcu_names_its_range_the_cpi_s(
    golden_results: Path,
) -> None:
    """run --target (report.data labels the emitter's figures counted on the target): the
    second range of a counted finding is named the CPI's and the model's — never the
    model's alone; the receiver's (a host agent, modelled) keeps "model"."""
    data = load(golden_results)
    data.counted_target = "rv32imc"  # as load() finds it in a run --target store
    data.metrics = data.metrics.counted_on("rv32imc")
    items = find(data).items
    emitter = [f for f in items if f.role == "emitter" and f.metric in ("current_ma", "energy_mah")]
    receiver = [f for f in items if f.role == "receiver" and f.metric == "current_ma"]
    assert emitter and receiver
    for f in emitter:
        assert f.kind == "counted on rv32imc", f
        assert "CPI and model: 90 % range" in f.sentence and "modelled" not in f.sentence
    assert all(f.kind == "modelled" and "; model: 90 % range" in f.sentence for f in receiver)
    from iotsecbench.report.tables import summary_table

    table = summary_table(data)
    assert table is not None and "range is the CPI's" in table.note
