"""Experiments side by side (report/compare.py) on synthetic per-run values with a known
answer: refusals, what differs, contrasts and their sentences."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iotsecbench.analysis.bootstrap import iid_bootstrap_contrast, iid_bootstrap_difference
from iotsecbench.errors import SpecError
from iotsecbench.report.compare import (
    Experiment,
    check_comparable,
    compare,
    labels_for,
    load_experiments,
    parse_allowed,
)
from iotsecbench.report.data import ReportData
from iotsecbench.report.exporters import csv
from iotsecbench.report.tables import comparison_tables

CONFIGURATIONS = ("plain", "tls1.2")


def experiment(
    label: str,
    shift: dict[str, float] | None = None,
    runs: int = 6,
    payload: int = 256,
    rate: float = 10.0,
    spec: dict | None = None,
    seed: int = 0,
    configurations: tuple[str, ...] = CONFIGURATIONS,
) -> Experiment:
    """Per-run emitter current 35 mA (+3 for tls1.2) plus ``shift[configuration]``, noise
    sd 0.1 mA; latency p50 1 ms, noise sd 0.05."""
    generator = np.random.default_rng(seed)
    shift = shift or {}
    rows, run_rows = [], []
    for configuration in configurations:
        base = 35.0 + (3.0 if configuration == "tls1.2" else 0.0) + shift.get(configuration, 0.0)
        for r in range(runs):
            rows.append(
                {
                    "run_id": f"{configuration}_r{r}",
                    "configuration": configuration,
                    "emitter_current_ma": base + generator.normal(0, 0.1),
                    "latency_p50_ms": 1.0 + generator.normal(0, 0.05),
                }
            )
            run_rows.append({"status": "ok", "payload_bytes": payload, "rate_hz": rate})
    data = ReportData(
        source=Path(f"/results/{label}"),
        runs=pd.DataFrame(run_rows),
        per_run=pd.DataFrame(rows),
        spec={"name": "default", "device": "esp32-wroom-32", "duration_s": 20.0, **(spec or {})},
        configurations=list(configurations),
    )
    return Experiment(label, data)


def test_two_group_contrast_is_the_difference_of_means() -> None:
    a, b = [1.0, 1.3, 0.9, 1.2], [0.5, 0.7, 0.6]
    contrast = iid_bootstrap_contrast((a, b), (1.0, -1.0), reps=500, seed=7)
    difference = iid_bootstrap_difference(a, b, reps=500, seed=7)
    assert np.array_equal(contrast.replicates, difference.replicates)
    assert contrast.interval == difference.interval


@pytest.mark.slow  # a coverage simulation: 200 experiments of 400 bootstraps
def test_interaction_interval_covers_the_injected_truth() -> None:
    """(c − base) in B − (c − base) in A, true value 2.0: the expanded interval over 5 runs
    per group covers it at least at its nominal rate in 200 simulated experiments."""
    generator = np.random.default_rng(3)
    covered = 0
    for trial in range(200):
        groups = [
            generator.normal(mean, 1.0, 5) for mean in (14.0, 10.0, 12.0, 10.0)
        ]  # cost 4 in B, 2 in A
        result = iid_bootstrap_contrast(groups, (1, -1, -1, 1), reps=400, seed=trial)
        assert result.estimate == pytest.approx(
            groups[0].mean() - groups[1].mean() - groups[2].mean() + groups[3].mean()
        )
        covered += result.interval.low <= 2.0 <= result.interval.high
    assert covered / 200 >= 0.93


def test_a_shift_in_one_configuration_is_found_with_its_size() -> None:
    reference = experiment("esp32")
    other = experiment("slow-radio", shift={"tls1.2": 2.0}, seed=1)
    comparison = compare([reference, other])
    by_key = {
        (c.kind_of_contrast, c.configuration, c.metric): c
        for c in comparison.contrasts
        if c.role in ("emitter", "end-to-end")
    }
    tls = by_key[("value", "tls1.2", "current_ma")]
    assert tls.significant and tls.difference == pytest.approx(2.0, abs=0.25)
    assert tls.interval.low < tls.difference < tls.interval.high
    assert "is 2.0" in tls.sentence and "higher on slow-radio" in tls.sentence
    assert tls.kind == "modelled" and tls.unit == "mA"
    cost = by_key[("cost", "tls1.2", "current_ma")]
    assert cost.significant and cost.difference == pytest.approx(2.0, abs=0.25)
    assert cost.value == pytest.approx(5.0, abs=0.25)  # 3 + 2 on slow-radio
    assert cost.reference_value == pytest.approx(3.0, abs=0.25)
    assert "What TLS 1.2 costs over plain MQTT" in cost.sentence and "more on" in cost.sentence
    plain = by_key[("value", "plain", "current_ma")]
    assert not plain.significant and "does not differ detectably" in plain.sentence
    assert ("cost", "plain", "current_ma") not in by_key  # the baseline has no cost over itself
    assert {c.caveat for c in comparison.contrasts} == {""}  # 6 runs per group: enough
    assert comparison.differences == []
    assert "same settings" in comparison.headline()


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_the_brokers_cost_is_compared_between_experiments() -> None:
    """A fleet of 50 against one device: the injected 0.8 % of a core more broker CPU under
    TLS 1.2 (0.2 % under plain MQTT) is found, in the broker's words."""
    generator = np.random.default_rng(5)
    injected = {("one", "plain"): 0.1, ("one", "tls1.2"): 0.15,
                ("fleet", "plain"): 0.3, ("fleet", "tls1.2"): 0.95}  # fmt: skip
    experiments = []
    for label in ("one", "fleet"):
        made = experiment(label)
        made.data.per_run["broker_cpu_percent"] = [
            injected[(label, configuration)] + generator.normal(0, 0.01)
            for configuration in made.data.per_run["configuration"]
        ]
        experiments.append(made)
    comparison = compare(experiments)
    by_key = {
        (c.kind_of_contrast, c.configuration): c
        for c in comparison.contrasts
        if c.metric == "broker_cpu_percent"
    }
    cost = by_key[("cost", "tls1.2")]
    assert cost.role == "broker" and cost.significant
    assert cost.difference == pytest.approx(0.65 - 0.05, abs=0.03)
    assert "the broker's measured CPU load" in cost.sentence and "% of a core" in cost.sentence
    assert by_key[("value", "plain")].difference == pytest.approx(0.2, abs=0.03)


def test_what_differs_names_the_settings_and_the_host() -> None:
    reference = experiment("a", spec={"network": ["loopback"]})
    other = experiment("b", spec={"network": ["wifi"], "device": "esp32-at-80mhz.toml"})
    other.data.experiment["host_json"] = json.dumps({"hostname": "other"})
    reference.data.experiment["host_json"] = json.dumps({"hostname": "vm"})
    comparison = compare([reference, other])
    assert dict(comparison.differences) == {
        "device": ["esp32-wroom-32", "esp32-at-80mhz.toml"],
        "network": ["loopback", "wifi"],
        "host hostname": ["vm", "other"],
    }
    assert "network: loopback against wifi" in comparison.headline()


@pytest.mark.parametrize(
    ("changes", "allowed", "expected"),
    [
        ({"payload": 1024}, (), "payload 1024 B against 256 B"),
        ({"rate": 5.0}, (), "rate 5 Hz against 10 Hz"),
        ({"configurations": ("ecdh-p256-aes128-gcm",)}, (), "no configuration in common"),
    ],
)
def test_what_cannot_be_compared_is_refused_in_one_line(changes, allowed, expected) -> None:
    with pytest.raises(SpecError, match=expected) as error:
        check_comparable([experiment("a"), experiment("b", **changes)], allowed)
    assert "\n" not in str(error.value)
    if "payload" in changes or "rate" in changes:
        assert "--allow-different" in str(error.value)


def test_different_payloads_are_compared_when_asked() -> None:
    assert check_comparable(
        [experiment("a"), experiment("b", payload=1024, rate=5.0)], {"payload", "rate"}
    ) == list(CONFIGURATIONS)
    with pytest.raises(SpecError, match="choose from payload, rate"):
        parse_allowed("size")


def test_charge_is_not_compared_across_different_durations() -> None:
    comparison = compare([experiment("a"), experiment("b", spec={"duration_s": 60.0})])
    assert not [c for c in comparison.contrasts if c.metric == "energy_mah"]
    assert any("Charge per run not compared" in note for note in comparison.notes)


def test_few_runs_make_every_contrast_indicative() -> None:
    comparison = compare([experiment("a", runs=3), experiment("b", runs=3, seed=2)])
    assert all("Indicative: 3 runs" in c.caveat for c in comparison.contrasts)


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_sources_named_twice_or_without_runs_are_refused(golden_results: Path) -> None:
    with pytest.raises(SpecError, match="named twice"):
        load_experiments([golden_results, golden_results / "."])
    with pytest.raises(SpecError, match="needs the results directory"):
        load_experiments([golden_results, golden_results / "analysis.json"])


def test_labels_are_unique_and_short() -> None:
    assert labels_for([Path("/x/esp32"), Path("/x/nrf52")]) == ["esp32", "nrf52"]
    assert labels_for([Path("/a/results"), Path("/b/results")]) == ["a/results", "b/results"]


def test_tables_carry_every_contrast_with_csv_headers_a_tool_can_read() -> None:
    comparison = compare([experiment("a"), experiment("b", shift={"tls1.2": 2.0}, seed=1)])
    tables = {t.key: t for t in comparison_tables(comparison)}
    assert set(tables) == {"conditions", "side-by-side", "cost-change"}
    side = tables["side-by-side"]
    values = [c for c in comparison.contrasts if c.kind_of_contrast == "value"]
    assert len(side.rows) == len({(c.configuration, c.metric, c.role) for c in values})
    header = csv.render(side).splitlines()[0].split(",")
    assert header[:4] == ["configuration", "metric_name", "value_a", "value_b"]
    assert "difference_b" in header and "ci_low_b" in header
    row = next(
        r for r in side.rows if r["configuration"] == "tls1.2" and "current" in r["metric_name"]
    )
    contrast = next(c for c in values if (c.configuration, c.metric) == ("tls1.2", "current_ma"))
    assert row["difference_b"] == contrast.difference and row["ci_high_b"] == contrast.interval.high
