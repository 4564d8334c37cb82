"""``analysis.counted_runs``: a counted configuration's figures over its runs, from a runs frame
with known counts — means per configuration, only ok counted runs, absent values absent —, and
the report saying them without computing (``report.summary``'s lines, the counted table)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from iotsecbench.analysis.counted_runs import emitters_over_runs, per_byte_over_runs
from iotsecbench.report import summary
from iotsecbench.report.data import ReportData
from iotsecbench.report.tables import counted_table


def _run(label, counted, *, status="ok", method="counted", pacing="10Hz", throughput=None):
    return {
        "cell_label": label,
        "status": status,
        "cost_method": method,
        "pacing": pacing,
        "throughput_kib_s": throughput,
        "details_json": json.dumps({"counted": counted} if counted is not None else {}),
    }


def _emitter(current, priced=None, **extra):
    return {
        "target": "rv32imc",
        "cpi": 1.5,
        "counted_current_emitter_ma": current,
        "priced_current_emitter_ma": priced,
        **extra,
    }


RUNS = pd.DataFrame(
    [
        _run("tls", _emitter(10.0, 12.0)),
        _run("tls", _emitter(14.0, None)),
        _run("tls", _emitter(99.0, 99.0), status="failed"),  # not ok: left out
        _run("plain", _emitter(1.0, 2.0), method="priced"),  # not counted: left out
        _run("scheme", _emitter(5.0, accelerated={
            "current_emitter_ma": 4.0, "kind": "modelled accelerator", "speedups": {"aes": 8}
        }, key_exchange={"instructions": 2_000_000, "primitives": {"pk": 1_500_000}})),
        _run("scheme", _emitter(7.0, accelerated={
            "current_emitter_ma": 6.0, "kind": "modelled accelerator", "speedups": {"aes": 8}
        })),
        _run("none", None),  # counted, but stored no figures
    ]
)  # fmt: skip


def test_each_configuration_is_the_mean_of_its_ok_counted_runs():
    tls, scheme = emitters_over_runs(RUNS)
    assert (tls.label, tls.target, tls.runs, tls.cpi) == ("tls", "rv32imc", 2, 1.5)
    assert tls.counted_current_ma == pytest.approx(12.0)
    assert tls.priced_current_ma == pytest.approx(12.0)  # one run priced: its value
    assert tls.accelerated is None and tls.key_exchange is None
    assert scheme.counted_current_ma == pytest.approx(6.0) and scheme.priced_current_ma is None
    assert scheme.accelerated.current_ma == pytest.approx(5.0)
    assert scheme.accelerated.speedups == {"aes": 8}
    assert scheme.key_exchange["instructions"] == 2_000_000


def _per_byte(client, crypto, seal=None, emulated=None):
    return {
        "target": "cortex-m4",
        "client_instructions_per_byte": client,
        "crypto_instructions_per_byte": crypto,
        "seal_instructions_per_byte": seal,
        "emulated_instructions_per_s": emulated,
    }


def test_saturating_runs_give_instructions_per_byte_and_the_emulators_throughput():
    runs = pd.DataFrame(
        [
            _run("b64", _per_byte(100.0, 60.0, 50.0, 2e8), pacing="saturating", throughput=10.0),
            _run("b64", None, pacing="saturating", throughput=99.0),  # no counts: not its row
            _run("b64", _per_byte(120.0, 80.0, None, None), pacing="saturating", throughput=None),
            _run("paced", _per_byte(1.0, 1.0), throughput=1.0),  # not saturating
        ]
    )
    [figure] = per_byte_over_runs(runs)
    assert (figure.label, figure.target, figure.runs) == ("b64", "cortex-m4", 2)
    assert figure.client_per_byte == pytest.approx(110.0)
    assert figure.crypto_per_byte == pytest.approx(70.0)
    assert figure.seal_per_byte == pytest.approx(50.0) and figure.open_per_byte is None
    assert figure.throughput_kib_s == pytest.approx(10.0)  # its own run's, not the other's 99
    assert figure.emulated_instructions_per_s == pytest.approx(2e8)


def test_no_counted_run_no_figure():
    assert emitters_over_runs(RUNS.iloc[:0]) == [] and per_byte_over_runs(RUNS.iloc[:0]) == []
    assert emitters_over_runs(RUNS.drop(columns="cost_method")) == []


def test_the_summary_says_the_analysis_figures(monkeypatch, tmp_path):
    monkeypatch.setattr(summary.read, "runs_frame", lambda _: RUNS)
    lines = summary.counted_emitter_lines(tmp_path)
    assert lines[0] == (
        "tls: emitter current 12.00 mA counted on rv32imc (instructions x CPI 1.5 / clock) "
        "against 12.00 mA from prices (operations x the profile's prices), mean of 2 run(s)"
    )
    assert "scheme: emitter current 6.00 mA counted on rv32imc" in lines[1]
    assert "no price" in lines[1]
    assert lines[2].startswith("scheme: emitter current 5.00 mA modelled accelerator")
    assert lines[3].startswith("scheme: key exchange 2.00 M instructions counted on rv32imc")
    assert lines[-1].startswith("with --target")


def test_the_summary_says_instructions_per_byte_and_whose_throughput_it_is(monkeypatch, tmp_path):
    runs = pd.DataFrame(
        [_run("b64", _per_byte(1234.5, 60.0, 50.0, 2e8), pacing="saturating", throughput=10.0)]
    )
    monkeypatch.setattr(summary.read, "runs_frame", lambda _: runs)
    assert summary.counted_emitter_lines(tmp_path)[0] == (
        "b64: 1,234.5 client instructions per payload byte counted on cortex-m4 (crypto 60.0, "
        "seal 50.0); its throughput (10.0 KiB/s) is the emulator's, QEMU running 200 M counted "
        "instructions/s, not the device's, mean of 1 run(s)"
    )


def test_a_plain_saturating_run_says_its_crypto_is_none(monkeypatch, tmp_path):
    runs = pd.DataFrame([_run("none", _per_byte(80.0, 0.0), pacing="saturating", throughput=2.0)])
    monkeypatch.setattr(summary.read, "runs_frame", lambda _: runs)
    assert "(crypto 0.0);" in summary.counted_emitter_lines(tmp_path)[0]


def test_a_connections_set_up_is_the_mean_of_its_runs_groups(monkeypatch, tmp_path):
    m = 1_000_000
    first = {
        "instructions": 10 * m,
        "groups": {"CLIENT_HELLO": 6 * m, "CERT": 4 * m},
        "primitives": {"pk": 5 * m, "sha2": m},
    }
    second = {
        "instructions": 14 * m,
        "groups": {"CLIENT_HELLO": 8 * m, "CERT": 4 * m, "FINISHED": 2 * m},
        "primitives": {"pk": 7 * m},
    }
    runs = pd.DataFrame(
        [_run("tls", _emitter(1.0, connection=first)),
         _run("tls", _emitter(1.0, connection=second))]
    )  # fmt: skip
    [figure] = emitters_over_runs(runs)
    connection = figure.connection
    assert connection.instructions == pytest.approx(12 * m)
    assert connection.groups == pytest.approx({"CLIENT_HELLO": 7 * m, "CERT": 4 * m, "FINISHED": m})
    assert connection.primitives == pytest.approx({"pk": 6 * m, "sha2": m / 2})  # absent: 0
    monkeypatch.setattr(summary.read, "runs_frame", lambda _: runs)
    assert summary.counted_emitter_lines(tmp_path)[1] == (
        "tls: connection set-up 12.00 M instructions counted on rv32imc, network-invariant "
        "(largest groups CLIENT_HELLO 58%, CERT 33%, FINISHED 8%; primitives pk 50%, sha2 4%)"
    )


def test_the_reports_counted_table_holds_the_same_figures():
    m = 1_000_000
    connection = {
        "instructions": 40 * m,
        "groups": {"KEY_DERIVE": 28 * m, "CERT": 12 * m},
        "primitives": {"pk": 30 * m},
    }
    exchange = {
        "instructions": 2 * m,
        "primitives": {},
        "stack_high_water_bytes": 6_668,
        "heap_peak_bytes": 19_240,
    }
    runs = pd.DataFrame(
        [_run("tls", _emitter(20.0, 21.0, connection=connection)),
         _run("scheme", _emitter(5.0, key_exchange=exchange))]
    )  # fmt: skip
    table = counted_table(ReportData(source=Path("."), runs=runs))
    assert table is not None and table.title == "Counted on rv32imc"
    assert table.cells() == [
        ["tls", "1", "40.000", "KEY_DERIVE 70%", "75", "–", "–", "–", "20.00", "21.00"],
        ["scheme", "1", "–", "–", "–", "2.00", "6668", "19240", "5.00", "–"],
    ]
    assert counted_table(ReportData(source=Path("."), runs=RUNS.iloc[:0])) is None
