"""predict handshake: every TLS profile × clock × core count with the model's range, and bad
input refused with one line (in process: nothing here starts a process)."""

from __future__ import annotations

import json

import pytest

from iotsecbench.cli.app import main
from iotsecbench.cli.predict import DEFAULT_TLS_PROFILES


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["predict", "handshake", *args])
        raise SystemExit(0)
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


def test_predict_handshake_json_gives_every_profile_clock_and_core_count(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "--device", "esp32-wroom-32", "--json", "--draws", "200")
    assert code == 0
    document = json.loads(out)
    assert document["label"] == "modelled (esp32-wroom-32)"
    found = {(r["profile"], r["clock_mhz"], r["cores"]) for r in document["records"]}
    assert found == {
        (p, m, c) for p in DEFAULT_TLS_PROFILES for m in (80, 160, 240) for c in (1, 2)
    }
    for record in document["records"]:
        model = record["model_range"]
        assert model["low"] <= record["seconds"] <= model["high"]
    by_key = {(r["profile"], r["clock_mhz"], r["cores"]): r for r in document["records"]}
    # the clock-scaled part triples from 240 to 80 MHz; a fixed part (accelerator) does not
    fast, slow = by_key[("tls1.2", 240, 1)], by_key[("tls1.2", 80, 1)]
    assert slow["clock_scaled_s"] == pytest.approx(3 * fast["clock_scaled_s"])
    assert slow["fixed_s"] == pytest.approx(fast["fixed_s"])


def test_predict_handshake_prints_a_table_with_the_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "--profiles", "tls1.3/x25519/ecdsa-p256", "--clocks", "160",
                        "--cores", "1", "--draws", "200")  # fmt: skip
    assert code == 0
    assert "modelled (esp32-wroom-32)" in out and "model 90 %" in out
    assert "tls1.3/x25519/ecdsa-p256" in out and "200 draws" in out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--clocks", "fast"], "--clocks 'fast'"),
        (["--cores", "0"], "--cores '0'"),
        (["--device", "esp8266-imaginary"], "esp8266-imaginary"),
        (["--profiles", "tls1.4"], "tls1.4"),
        (["--draws", "5"], "--draws 5"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    code, out, err = _run(capsys, *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and fragment in err, err
