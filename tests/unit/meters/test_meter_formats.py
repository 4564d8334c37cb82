"""Meter exports in each layout (docs/meters.md) carrying one synthetic current with a known
charge: every format recovers it within 1 %, block by block as in one piece; bad files are
refused with file:line and exit code 4."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iotsecbench.errors import DataError, SpecError
from iotsecbench.meters import read_trace
from iotsecbench.meters.formats import BLOCK_ROWS, detect, read_blocks

RATE = 1000  # samples per second
SECONDS = 3


def synthetic() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """10 mA for 1 s, 50 mA for 1 s, 20 mA for 1 s (charge 80 mC); D0 high in the middle
    second (the device's sync pin)."""
    t = np.arange(SECONDS * RATE) / RATE
    current_ma = np.select([t < 1, t < 2], [10.0, 50.0], 20.0)
    d0 = ((t >= 1) & (t < 2)).astype(int)
    return t, current_ma, d0


EXPECTED_MC = 10 + 50 + 20 * (SECONDS - 2 - 1 / RATE)  # the last sample ends the trace


def write_ppk2(path: Path) -> Path:
    t, i, d0 = synthetic()
    lines = ["Timestamp(ms),Current(uA),D0-D7"]
    lines += [
        f"{ms:.3f},{ua:.3f},{bit}-------" for ms, ua, bit in zip(t * 1e3, i * 1e3, d0, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_joulescope_waveform(path: Path) -> Path:
    t, i, _ = synthetic()
    data = np.column_stack([t, i / 1e3, np.full_like(t, 3.3)])
    np.savetxt(path, data, delimiter=",", header="time,JS220-000415.i,JS220-000415.v")
    return path


def write_joulescope_statistics(path: Path) -> Path:
    t, i, _ = synthetic()
    lines = ["#time,current,voltage,power,charge,energy"]
    lines += [f"{s:g},{a / 1e3:g},3.3,{a / 1e3 * 3.3:g},0,0" for s, a in zip(t, i, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_usb_meter(path: Path) -> Path:
    t, i, _ = synthetic()
    start = datetime.datetime(2026, 11, 25, 9, 0, 0)
    header = (
        "Date;Voltage (V);Intensity (A);Power (W);Resistance (Ohm);USB D+ (V);USB D- (V);"
        "Charging Mode;Temperature (°C);Model;Recording;Record duration (sec);"
        "Record intensity (A);Record capacity (Ah);Record energy (Wh);Capacity (Ah);Energy (Wh)"
    )
    lines = [header]
    for s, a in zip(t, i, strict=True):
        stamp = (start + datetime.timedelta(seconds=float(s))).isoformat(sep=" ")
        lines.append(f"{stamp};5.05;{a / 1e3:.6f};0;0;0;0;unknown;25;UM25C;0;0;0;0;0;0;0")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_otii(path: Path) -> Path:
    """Wall-clock time and every field quoted, as in the one Otii export header we found."""
    t, i, _ = synthetic()
    start = datetime.datetime(2026, 11, 25, 9, 0, 0, tzinfo=datetime.UTC)
    lines = ['"Wall-clock time (UTC)","Arc Main Current (A)","Arc Main Voltage (V)",'
             '"Arc Main Energy (J)"']  # fmt: skip
    for s, a in zip(t, i, strict=True):
        stamp = (start + datetime.timedelta(seconds=float(s))).isoformat()
        lines.append(f'"{stamp}","{a / 1e3:.7f}","3.3","0"')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_otii_relative(path: Path) -> Path:
    """Relative time, current in mA, unquoted: units are whatever the header says."""
    t, i, _ = synthetic()
    lines = ["Time (ms),Arc Main Current (mA),Arc Main Voltage (mV)"]
    lines += [f"{s * 1e3:.3f},{a:.6f},3300" for s, a in zip(t, i, strict=True)]
    path.write_text("\n".join(lines))
    return path


def write_generic(path: Path) -> Path:
    t, i, _ = synthetic()
    lines = ["time_ms,current_ua,voltage_mv"]
    lines += [f"{s * 1e3:g},{a * 1e3:g},3300" for s, a in zip(t, i, strict=True)]
    path.write_text("\n".join(lines))  # no final line end: loggers often omit it
    return path


WRITERS = {
    "ppk2": write_ppk2,
    "joulescope": write_joulescope_waveform,
    "joulescope-statistics": write_joulescope_statistics,
    "usb-meter": write_usb_meter,
    "otii": write_otii,
    "otii-relative": write_otii_relative,
    "generic": write_generic,
}


@pytest.mark.parametrize("kind", list(WRITERS))
def test_each_format_recovers_the_known_charge_and_levels(kind: str, tmp_path: Path) -> None:
    trace = read_trace(WRITERS[kind](tmp_path / f"{kind}.csv"))
    assert trace.format == kind.removesuffix("-statistics").removesuffix("-relative")
    assert trace.samples == SECONDS * RATE
    assert trace.rate_hz == pytest.approx(RATE, rel=1e-3)
    assert trace.charge_mc == pytest.approx(EXPECTED_MC, rel=0.01)
    assert trace.mean_current_ma == pytest.approx(trace.charge_mc / trace.duration_s)
    per_second = trace.series[1]
    assert per_second["current_ma"].to_numpy() == pytest.approx([10.0, 50.0, 20.0], rel=1e-6)
    tenths = trace.series[10]
    assert len(tenths) == 10 * SECONDS and set(tenths["samples"]) == {RATE // 10}
    assert len(trace.sha256) == 64


def test_the_sync_channel_becomes_edges(tmp_path: Path) -> None:
    trace = read_trace(write_ppk2(tmp_path / "ppk2.csv"))
    assert trace.edges is not None
    assert trace.edges.to_dict("records") == [
        {"time_s": 0.0, "bits": 0},
        {"time_s": pytest.approx(1.0), "bits": 1},
        {"time_s": pytest.approx(2.0), "bits": 0},
    ]


def test_eight_digital_columns_and_the_old_bits_column(tmp_path: Path) -> None:
    columns = tmp_path / "columns.csv"
    columns.write_text(
        "Timestamp(ms),Current(uA),D0,D1,D2,D3,D4,D5,D6,D7\n"
        "0.00,100,0,0,0,0,0,0,0,0\n0.01,100,0,1,0,0,0,0,0,0\n"
    )
    assert read_trace(columns).edges["bits"].tolist() == [0, 2]
    bits = tmp_path / "bits.csv"
    bits.write_text("Timestamp(ms),Current(uA),Bits\n0.00,100,00000000\n0.01,100,00000001\n")
    assert read_trace(bits).edges["bits"].tolist() == [0, 128]


def test_blocks_give_the_same_answer_as_one_piece(tmp_path: Path) -> None:
    path = write_ppk2(tmp_path / "ppk2.csv")
    whole = read_trace(path)
    pieces = read_trace(path, block_rows=337)  # blocks end inside windows and edges
    assert pieces.charge_mc == pytest.approx(whole.charge_mc, rel=1e-12)
    for hz in (10, 1):
        pd.testing.assert_frame_equal(pieces.series[hz], whole.series[hz], rtol=1e-12)
    assert pieces.edges.equals(whole.edges)


BAD = {
    "truncated last line": ("Timestamp(ms),Current(uA)\n0.0,10\n0.1,1", ":3: the last line"),
    "short line": ("Timestamp(ms),Current(uA)\n0.0,10\n0.1\n", ":3: 1 field(s)"),
    "not a number": ("time_s,current_ma\n0,1\n0.1,abc\n", ":3: not a number: 'abc'"),
    "not finite": ("time_s,current_ma\n0,1\n0.1,nan\n", ":3: a value is not finite"),
    "time backwards": ("time_s,current_ma\n0,1\n0.2,1\n0.1,1\n", ":4: time does not increase"),
    "time standing still": ("time_s,current_ma\n0,1\n0,1\n", ":3: time does not increase"),
    "no unit": ("time,current\n0,1\n", "names no unit"),
    "unknown header": ("a,b,c\n1,2,3\n", ":1: header 'a,b,c' is no known meter format"),
    "header only": ("Timestamp(ms),Current(uA)\n", "no samples"),
    "bad digital": ("Timestamp(ms),Current(uA),D0-D7\n0,1,1234----\n", ":2: digital channels"),
    "otii current without unit": ("Time (s),Arc Main Current\n0,1\n", "names no unit"),
    "otii current in volts": ("Time (s),Arc Main Current (V)\n0,1\n", "is not a current"),
    "otii time without unit": ("Time,Arc Main Current (A)\n0,1\n", "is not a time"),
    "otii date not ISO": (
        '"Wall-clock time (UTC)","Arc Main Current (A)"\n"25/11/2026 09:00","0.01"\n',
        ":2: time '25/11/2026 09:00' is not an ISO 8601 date-time",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_files_are_refused_with_file_and_line(case: str, tmp_path: Path) -> None:
    content, expected = BAD[case]
    path = tmp_path / "trace.csv"
    path.write_text(content)
    with pytest.raises(DataError) as error:
        read_trace(path)
    assert expected in str(error.value) and str(path) in str(error.value)
    assert error.value.exit_code == 4 and "\n" not in str(error.value)


def test_garbage_bytes_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_bytes(b"time_s,current_ma\n0,1\n0.1,\xff\xfe\n")
    with pytest.raises(DataError, match=r"trace.csv:3: not UTF-8"):
        read_trace(path)


def test_a_missing_file_or_unknown_format_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such file"):
        read_trace(tmp_path / "absent.csv")
    path = write_generic(tmp_path / "generic.csv")
    with pytest.raises(SpecError, match="choose from jls, ppk2, joulescope"):
        read_trace(path, format="n6705")
    with pytest.raises(DataError, match="not a ppk2 header"):
        read_trace(path, format="ppk2")


@pytest.mark.integration
def test_the_meter_command_summarises_a_trace_and_refuses_a_bad_one(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    path = write_ppk2(tmp_path / "ppk2.csv")
    result = run_cli("meter", str(path), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["format"] == "ppk2" and summary["samples"] == SECONDS * RATE
    assert summary["charge_mah"] == pytest.approx(EXPECTED_MC / 3600, rel=0.01)
    assert summary["digital_edges"] == 3
    bad = tmp_path / "bad.csv"
    bad.write_text("time_s,current_ma\n0,1\n0.1,x\n")
    refused = run_cli("meter", str(bad))
    assert refused.returncode == 4 and f"{bad}:3: not a number" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def write_jls(path: Path, units: str = "A", gpi: bool = True) -> Path:
    """A Joulescope recording written with pyjls (the format's own library)."""
    from pyjls import DataType, SignalType, Writer

    t, i, d0 = synthetic()
    with Writer(str(path)) as writer:
        writer.source_def(source_id=1, name="JS220", vendor="Jetperch", model="JS220",
                          version="1.0", serial_number="000415")  # fmt: skip
        writer.signal_def(signal_id=1, source_id=1, sample_rate=RATE, name="current", units=units)
        writer.signal_def(signal_id=2, source_id=1, sample_rate=RATE, name="voltage", units="V")
        writer.fsr_f32(1, 0, (i / 1e3).astype(np.float32))
        writer.fsr_f32(2, 0, np.full(len(t), 3.3, dtype=np.float32))
        if gpi:
            writer.signal_def(
                signal_id=3, source_id=1, sample_rate=RATE, name="gpi[0]", units="",
                signal_type=SignalType.FSR, data_type=DataType.U1,
            )  # fmt: skip
            writer.fsr(3, 0, np.packbits(d0.astype(np.uint8), bitorder="little"))
    return path


def test_a_jls_recording_is_read_in_blocks_with_its_gpi(tmp_path: Path) -> None:
    path = write_jls(tmp_path / "capture.jls")
    whole = read_trace(path)
    assert whole.format == "jls" and whole.samples == SECONDS * RATE
    assert whole.charge_mc == pytest.approx(EXPECTED_MC, rel=0.01)
    assert whole.series[1]["current_ma"].to_numpy() == pytest.approx([10, 50, 20], rel=1e-6)
    assert whole.series[1]["voltage_v"].to_numpy() == pytest.approx([3.3] * 3, rel=1e-6)
    assert whole.edges["bits"].tolist() == [0, 1, 0]
    assert whole.edges["time_s"].tolist() == pytest.approx([0.0, 1.0, 2.0])
    pieces = read_trace(path, block_rows=333)
    assert pieces.charge_mc == pytest.approx(whole.charge_mc, rel=1e-12)
    assert pieces.edges.equals(whole.edges)


def test_a_jls_without_a_known_unit_or_cut_short_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"unit 'furlongs'.*not guessed"):
        read_trace(write_jls(tmp_path / "odd.jls", units="furlongs", gpi=False))
    good = write_jls(tmp_path / "good.jls", gpi=False).read_bytes()
    cut = tmp_path / "cut.jls"
    cut.write_bytes(good[: len(good) // 3])
    with pytest.raises(DataError, match=r"cut\.jls"):
        read_trace(cut)


def test_the_samples_in_the_docs_are_read_as_their_format(tmp_path: Path) -> None:
    """docs/meters.md shows each CSV layout byte for byte: each is detected and read."""
    from tests.conftest import REPO

    text = (REPO / "docs" / "meters.md").read_text(encoding="utf-8")
    samples = text.split("Byte-exact", 1)[1].split("## What a trace becomes", 1)[0]
    blocks = [b.strip("\n") for b in samples.split("```")[1::2]]
    expected = ["ppk2", "joulescope", "joulescope", "usb-meter", "otii", "generic"]
    assert len(blocks) == len(expected)
    for k, (block, name) in enumerate(zip(blocks, expected, strict=True)):
        path = tmp_path / f"sample-{k}.csv"
        path.write_text(block + "\n", encoding="utf-8")
        # A first line or two: detected and parsed (a whole trace needs two samples or more).
        found, layout = detect(path, None)
        samples = sum(len(b.time_s) for b in read_blocks(path, layout, BLOCK_ROWS))
        assert found == name and samples == len(block.splitlines()) - 1
