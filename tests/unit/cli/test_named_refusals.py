"""Each bad input an outside tester found (issue 40), fed to the real command line: one line
on stderr, no traceback, the documented exit code, nothing started (docs/reliability.md,
"Found by an outside tester"). The hostile-value matrix (tests/integration/
test_cli_matrix.py) tries every option against the generic values; these are the cases with
a story of their own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.conftest import GOLDEN
from tests.unit.cli.test_bad_inputs import RUN, _assert_one_line, main_in_process

SHORT = ["--configs", "plain", "--duration", "1"]


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from iotsecbench.store.rebuild import rebuild

    target = tmp_path_factory.mktemp("named") / "golden"
    shutil.copytree(GOLDEN, target, ignore=shutil.ignore_patterns("expected", "README.md"))
    rebuild(target)
    return target


@pytest.fixture
def copy(golden: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(golden, tmp_path / "results"))


def _spec(tmp_path: Path, text: str) -> str:
    path = tmp_path / "spec.toml"
    path.write_text('configurations = ["plain"]\nduration_s = 1.0\nrepetitions = 1\n' + text)
    return str(path)


# over half a second of CPU (a store made and checked per seed)
@pytest.mark.slow
def test_seeds_beyond_the_store_are_refused_and_leave_no_database(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    for args in (
        ["--seed", str(2**63)],
        ["--seed", str(2**63 - 1)],
        ["--seed", "-1"],
        [_spec(tmp_path, f"seed = {2**63}\n")],
    ):
        result = main_in_process(capsys, *RUN, "--out", str(out), *args)
        _assert_one_line(result, 2, "seed")
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--broker", "mqtt://user:secret@127.0.0.1:99999"], "1 to 65535"),
        (["--broker", "mqtt://user:secret@127.0.0.1:0"], "port 0"),
        (["--broker", "mqtts://127.0.0.1:8883", "--configs", "tls1.2"], "--broker-ca"),
        (
            ["--broker", "mqtts://127.0.0.1:8883", "--broker-ca", "/missing.pem"],
            "--broker-ca /missing.pem does not exist",
        ),
        (["--broker-ca", "/missing.pem"], "give --broker"),
        (["--ramp", "3"], "devices > 1"),
        (["--resume", "--force-new-run"], "give one"),
        (["--payload", "256,,512"], "an empty item"),
        (["--out", ""], "empty"),
        (["--stack", ""], "empty"),
        (["--network", ""], "empty"),
    ],
)
def test_run_refuses_before_anything_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], fragment: str
) -> None:
    out = [] if "--out" in args else ["--out", str(tmp_path / "out")]
    result = main_in_process(capsys, *RUN, *out, *args)
    _assert_one_line(result, 2, fragment)
    assert "secret" not in result.stderr  # a URL is named without its password
    assert not (tmp_path / "out").exists()


def test_spec_files_that_are_no_specs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = ["--out", str(tmp_path / "out")]
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 100_000)
    _assert_one_line(main_in_process(capsys, *RUN, str(deep), *out), 2, "nested too deeply")
    for device in ("/dev/zero", str(tmp_path)):
        spec = _spec(tmp_path, f'device = "{device}"\n')
        _assert_one_line(main_in_process(capsys, *RUN, spec, *out), 2, device)
    escaping = _spec(tmp_path, 'name = "../escaped"\n')
    _assert_one_line(main_in_process(capsys, *RUN, escaping), 2, "is not a name")
    long_name = _spec(tmp_path, f'name = "{"n" * 100_000}"\n')
    _assert_one_line(main_in_process(capsys, *RUN, long_name, *out), 2, "is not a name")
    huge = tmp_path / "huge.toml"
    huge.write_text(f'name = "{"n" * 50_000_000}"\n')
    _assert_one_line(main_in_process(capsys, *RUN, str(huge), *out), 2, "at most 1,048,576")
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()


def test_keylog_paths(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    real_run = ["run", "--quiet", "--no-report", "--out", str(tmp_path / "out")]
    readable = tmp_path / "keys.log"
    readable.write_text("")
    readable.chmod(0o644)
    for keylog, fragment in (
        (str(tmp_path), "is a directory"),
        ("/dev/null", "not a regular file"),
        (str(tmp_path / "nonexistent" / "dir" / "k.log"), "does not exist"),
        (str(readable), f"chmod 600 {readable}"),
    ):
        result = main_in_process(capsys, *real_run, "--keylog", keylog)
        _assert_one_line(result, 2, fragment)
    assert not (tmp_path / "nonexistent").exists() and not (tmp_path / "out").exists()


def test_resume_never_guesses(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = main_in_process(capsys, *RUN, "--resume", "--out", str(tmp_path / "nowhere"))
    _assert_one_line(missing, 2, "does not exist: nothing to resume")
    (tmp_path / "empty").mkdir()
    empty = main_in_process(capsys, *RUN, "--resume", "--out", str(tmp_path / "empty"))
    _assert_one_line(empty, 2, "holds no experiment: nothing to resume")
    assert list((tmp_path / "empty").iterdir()) == []


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["bench", "crypto", "--sizes", "99999999999"], 2, "--sizes"),
        (["bench", "crypto", "--json", "{tmp}"], 2, "is a directory"),
        (["bench", "crypto", "--plot", "/missing/x.png"], 2, "does not exist"),
        (["bench", "handshake", "--profiles", "tls1.3", "--out", "{file}"], 2, "is a file"),
        (["bench", "handshake", "--profiles", "tls1.3", "--warmup", "-1"], 2, "--warmup"),
        (["report", "{golden}", "--out", "{file}"], 2, "is a file"),
        (["analyze", "{golden}", "--reps", "99999999999999"], 2, "--reps"),
        (["analyze", "{golden}", "--require", "telepathy"], 2, "not a security property"),
        (["attach", "{run}", "{file}", "--offset", "nan"], 2, "--offset"),
        (["attach", "{run}", "{file}", "--voltage", "nan"], 2, "--voltage"),
        (["analyze", "{golden}", "--current", "measured"], 2, "attach"),
        (["report", "{golden}", "--current", "measured"], 2, "attach"),
    ],
)
def test_other_commands_refuse_in_one_line(
    capsys: pytest.CaptureFixture[str],
    golden: Path,
    tmp_path: Path,
    args: list[str],
    code: int,
    fragment: str,
) -> None:
    regular = tmp_path / "a-file"
    regular.write_text("not a meter trace\n")
    run = next((golden / "runs").iterdir())
    names = {"tmp": str(tmp_path), "file": str(regular), "golden": str(golden), "run": str(run)}
    before = sorted(p.name for p in golden.iterdir())
    result = main_in_process(capsys, *(arg.format(**names) for arg in args))
    _assert_one_line(result, code, fragment)
    assert sorted(p.name for p in golden.iterdir()) == before  # nothing written


# over half a second of CPU (a report loaded per document)
@pytest.mark.slow
def test_garbage_stored_documents_are_corrupt_data(
    capsys: pytest.CaptureFixture[str], copy: Path
) -> None:
    for name in ("experiment.json", "spec.json"):
        saved = (copy / name).read_bytes()
        (copy / name).write_text("{ not json")
        _assert_one_line(main_in_process(capsys, "report", str(copy)), 4, name)
        (copy / name).write_bytes(saved)
    assert not (copy / "report").exists()


# seconds of CPU: every reading command on three truncations
@pytest.mark.slow
def test_a_truncated_database_is_one_line_and_the_rebuild_hint_everywhere(
    capsys: pytest.CaptureFixture[str], golden: Path, copy: Path, tmp_path: Path
) -> None:
    from tests.meter_traces import run_facts, write_ppk2

    run = sorted(p.name for p in (golden / "runs").iterdir())[0]
    trace = write_ppk2(tmp_path / "trace.csv", run_facts(golden, run))
    size = (copy / "results.duckdb").stat().st_size
    for cut in (300_000, 1_000_000, size - 100_000):
        with (copy / "results.duckdb").open("r+b") as handle:
            handle.truncate(cut)
        for args in (
            ["analyze", str(copy)],
            ["report", str(copy)],
            ["export", str(copy)],
            ["db", "check", str(copy)],
            ["attach", str(copy / "runs" / run), str(trace)],
            ["report", str(golden), str(copy)],
        ):
            result = main_in_process(capsys, *args)
            _assert_one_line(result, 4, f"iotsecbench db rebuild {copy}")
        shutil.copy2(golden / "results.duckdb", copy / "results.duckdb")


# the simulated run's host facts start a process (uname)
@pytest.mark.integration
def test_resume_on_a_truncated_database_is_one_line_and_the_rebuild_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    made = main_in_process(capsys, *RUN, *SHORT, "--out", str(out))
    assert made.returncode == 0, made.stderr
    database = out / "results.duckdb"
    with database.open("r+b") as handle:
        handle.truncate(database.stat().st_size // 2)
    resumed = main_in_process(capsys, *RUN, "--resume", "--out", str(out))
    _assert_one_line(resumed, 4, f"iotsecbench db rebuild {out}")


def test_analyze_csv_values_and_line_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [f"plain,emitter,1,{t},5.0" for t in range(1, 20)]
    bad_byte = tmp_path / "bad.csv"
    lines = ["configuration,device,run,time_s,current_ma", *rows]
    bad_byte.write_bytes("\n".join(lines[:11]).encode() + b"\npl\xe9in,emitter,1,30,5\n")
    result = main_in_process(capsys, "analyze", "--csv", str(bad_byte))
    _assert_one_line(result, 4, f"{bad_byte}:12: not UTF-8")
    huge = tmp_path / "huge.csv"
    huge.write_text("\n".join([lines[0], *(r.replace("5.0", "1e308") for r in rows)]) + "\n")
    _assert_one_line(main_in_process(capsys, "analyze", "--csv", str(huge)), 4, "not physical")


def test_meter_refuses_what_it_cannot_honestly_reduce(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from tests.unit.meters.test_meter_formats import write_jls

    volts = write_jls(tmp_path / "volts.jls", units="V", gpi=False)
    _assert_one_line(main_in_process(capsys, "meter", str(volts)), 4, "unit 'V'")
    good = write_jls(tmp_path / "good.jls", gpi=False).read_bytes()
    cut = tmp_path / "cut.jls"
    cut.write_bytes(good[: len(good) // 3])
    _assert_one_line(main_in_process(capsys, "meter", str(cut)), 4, "cut.jls")
    one = tmp_path / "one.csv"
    one.write_text("time_s,current_ma\n0,1\n")
    _assert_one_line(main_in_process(capsys, "meter", str(one)), 4, "at least 2")
    huge = tmp_path / "huge.csv"
    huge.write_text("time_s,current_ua\n0,1e308\n0.1,1\n")
    _assert_one_line(main_in_process(capsys, "meter", str(huge)), 4, f"{huge}:2: current")


# over half a second of CPU (a rebuild)
@pytest.mark.slow
def test_db_rebuild_says_what_it_drops_and_keeps_the_old_database(
    capsys: pytest.CaptureFixture[str], copy: Path
) -> None:
    from iotsecbench.cli.app import main

    dropped = sorted(p for p in (copy / "runs").iterdir())[:2]
    for run in dropped:
        shutil.rmtree(run)
    main(["db", "rebuild", str(copy)])
    said = capsys.readouterr().out
    assert "7 run(s) restored" in said
    assert (
        f"dropped 2 run(s) the old database held without a record.json ({dropped[0].name}" in said
    )
    (aside,) = copy.glob("results.duckdb.aside-*")
    assert aside.name in said and "never deleted" in said


# the simulated run's host facts start a process (uname)
@pytest.mark.integration
def test_force_new_run_moves_the_report_and_exports_aside(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = main_in_process(
        capsys, *RUN, "--configs", "plain", "--duration", "1", "--out", str(out)
    )
    assert first.returncode == 0, first.stderr
    for name in ("report", "parquet"):
        (out / name).mkdir()
        (out / name / "kept.txt").write_text("of the first experiment")
    (out / "analysis.json").write_text("{}")
    again = main_in_process(
        capsys, *RUN, "--configs", "tls1.2", "--duration", "1", "--out", str(out), "--force-new-run"
    )
    assert again.returncode == 0, again.stderr
    (previous,) = out.glob("previous-*")
    for name in ("report/kept.txt", "parquet/kept.txt", "analysis.json", "spec.json", "runs"):
        assert (previous / name).exists(), name
    assert not (out / "report").exists() and not (out / "parquet").exists()
    assert json.loads((out / "spec.json").read_text())["configurations"] == ["tls1.2"]
