import pytest

from iotsecbench.errors import DataError, SpecError
from iotsecbench.store.csv_input import read_current_csv, read_latency_csv

HEADER = "configuration,device,run,time_s,current_ma\n"


def write(tmp_path, text, name="c.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_valid_current(tmp_path):
    frame = read_current_csv(
        write(tmp_path, HEADER + "plain,emitter,1,0.0,100\nplain,emitter,1,0.1,101\n")
    )
    assert frame["current_ma"].tolist() == [100.0, 101.0]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ("plain,emitter,1,0.0\n", "c.csv:2"),
        ("plain,emitter,1,0.0,abc\n", "not a number"),
        ("plain,emitter,1,0.0,nan\n", "not finite"),
        ("plain,emitter,1,1.0,1\nplain,emitter,1,1.0,2\n", "c.csv:3: time_s 1 does not increase"),
        ("plain,sensor,1,0.0,1\n", "emitter or receiver"),
        ("", "no data rows"),
    ],
)
def test_current_errors_name_file_and_line(tmp_path, body, fragment):
    with pytest.raises(DataError, match=fragment):
        read_current_csv(write(tmp_path, HEADER + body))


def test_wrong_header_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="missing current_ma"):
        read_current_csv(write(tmp_path, "configuration,device,run,time_s\nplain,emitter,1,0\n"))
    with pytest.raises(SpecError):
        read_current_csv(tmp_path / "absent.csv")


def test_latency_reader(tmp_path):
    path = write(
        tmp_path, "configuration,run,seq,latency_ms\nplain,1,0,20.5\nplain,1,1,21\n", "l.csv"
    )
    assert read_latency_csv(path)["seq"].tolist() == [0, 1]
    bad = write(tmp_path, "configuration,run,seq,latency_ms\nplain,1,1,2\nplain,1,1,3\n", "m.csv")
    with pytest.raises(DataError, match=r"m\.csv:3: seq 1 does not increase"):
        read_latency_csv(bad)
