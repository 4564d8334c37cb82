"""A table of bad inputs fed to the real CLI: each ends in one line on stderr, no traceback,
and the exit code docs/exit-codes.md documents for it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import GOLDEN, REPO, run_cli_forked

from iotsecbench.cli.app import main

DOCUMENTED = {
    int(code)
    for code in re.findall(r"^\| (\d+) \|", (REPO / "docs/exit-codes.md").read_text(), re.M)
}
RUN = ["run", "--simulate", "--quiet", "--no-report"]


def test_every_exit_code_is_documented_once() -> None:
    assert {0, 1, 2, 3, 4, 130} == DOCUMENTED


@dataclass(frozen=True)
class InProcess:
    returncode: int
    stderr: str


def main_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> InProcess:
    """The CLI's own entry point without a new interpreter (about 3 s saved per case); an
    exception main() does not turn into one line escapes and fails the test."""
    handler = signal.getsignal(signal.SIGTERM)  # `run` installs its own; keep pytest's
    code = 0
    try:
        main(list(args))
    except SystemExit as exited:
        code = int(exited.code or 0)
    finally:
        signal.signal(signal.SIGTERM, handler)
    return InProcess(code, capsys.readouterr().err)


def _assert_one_line(result, code: int, fragment: str) -> None:  # type: ignore[no-untyped-def]
    assert code in DOCUMENTED
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("iotsecbench: error: ") and fragment in lines[0], lines[0]


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["--duration", "-1"], 2, "duration_s"),
        (["--duration", "0"], 2, "duration_s"),
        (["--duration", "1e9"], 2, "duration_s"),
        (["--duration", "abc"], 2, "--duration"),
        (["--reps", "0"], 2, "repetitions"),
        (["--reps", "1.5"], 2, "--reps"),
        (["--payload", "10"], 2, "at least 16 B"),
        (["--payload", "999999999999"], 2, "MQTT message"),
        (["--rate", "0"], 2, "rate_hz"),
        (["--rate", "nan"], 2, "rate_hz"),
        (["--rate", "inf"], 2, "rate_hz"),
        (["--qos", "3"], 2, "QoS 3"),
        (["--qos", "-1"], 2, "QoS -1"),
        (["--configs", ","], 2, "an empty item"),
        (["--network", "nope"], 2, "unknown network profile"),
        (["--device", "nope"], 2, "nope"),
        (["--seed", "x"], 2, "--seed"),
        (["--resume"], 2, "give --out"),
    ],
)
def test_out_of_range_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], code: int, fragment: str
) -> None:
    out = [] if "--resume" in args else ["--out", str(tmp_path / "never-created")]
    _assert_one_line(main_in_process(capsys, *RUN, *out, *args), code, fragment)
    assert not (tmp_path / "never-created").exists()


@pytest.mark.slow  # over half a second of CPU: more than the fast lane's share
def test_bad_files_and_directories(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    def cli(*args: str) -> InProcess:
        return main_in_process(capsys, *args)

    regular = tmp_path / "a-file"
    regular.write_text("not a directory")
    _assert_one_line(cli(*RUN, "--out", str(regular)), 2, "is a file, not a directory")
    _assert_one_line(cli(*RUN, "--out", str(regular / "x")), 2, "not a directory")
    _assert_one_line(cli(*RUN, "--resume", "--out", str(regular)), 2, "is a file")
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes('description = "caf\xe9"\n'.encode("latin-1"))
    _assert_one_line(cli(*RUN, str(latin1), "--out", str(tmp_path / "o")), 2, "not UTF-8")
    broken = tmp_path / "broken.toml"
    broken.write_text("duration_s = = 3\n")
    _assert_one_line(cli(*RUN, str(broken), "--out", str(tmp_path / "o")), 2, "not valid TOML")
    _assert_one_line(cli(*RUN, str(tmp_path), "--out", str(tmp_path / "o")), 2, "is a directory")
    _assert_one_line(cli(*RUN, str(tmp_path / "none.toml")), 2, "does not exist")
    unknown = tmp_path / "unknown.toml"
    unknown.write_text("durration_s = 3\n")
    _assert_one_line(cli(*RUN, str(unknown), "--out", str(tmp_path / "o")), 2, "durration_s")
    assert not (tmp_path / "o").exists()


def _unprivileged() -> list[str]:
    """A command prefix under which file permissions apply (root ignores them)."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot drop CAP_DAC_OVERRIDE")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def _cli_as(prefix: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "iotsecbench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.mark.integration
def test_a_read_only_directory_is_a_permission_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    prefix = _unprivileged()
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o555)
    _assert_one_line(_cli_as(prefix, *RUN, "--out", str(empty)), 3, "not writable")
    _assert_one_line(_cli_as(prefix, *RUN, "--out", str(empty / "sub")), 3, "not writable")
    made = tmp_path / "made"
    made_now = main_in_process(
        capsys, *RUN, "--duration", "1", "--configs", "plain", "--out", str(made)
    )
    assert made_now.returncode == 0
    made.chmod(0o555)
    try:
        resumed = _cli_as(prefix, *RUN, "--resume", "--out", str(made))
        _assert_one_line(resumed, 3, "not writable")
    finally:
        made.chmod(0o755)


@pytest.mark.integration
def test_a_read_only_mount_is_a_permission_problem(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind mount needs root and unshare")
    mount = tmp_path / "ro"
    mount.mkdir()
    script = (
        f"mount --bind {mount} {mount} && mount -o remount,bind,ro {mount} && "
        f"exec {sys.executable} -m iotsecbench {' '.join(RUN)} --out {mount}/x"
    )
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "mount:" in result.stderr:
        pytest.skip(f"cannot mount here: {result.stderr.strip()}")
    _assert_one_line(result, 3, "Read-only file system")


def _interrupted_only(tmp_path: Path, cli) -> Path:  # type: ignore[no-untyped-def]
    target = tmp_path / "interrupted"
    shutil.copytree(GOLDEN, target, ignore=shutil.ignore_patterns("expected", "README.md"))
    (target / "analysis.json").unlink()
    records = sorted(target.glob("runs/*/record.json"))
    for extra in records[1:]:
        shutil.rmtree(extra.parent)
    document = json.loads(records[0].read_text())
    document["run"].update(status="interrupted", error="interrupted by the user")
    records[0].write_text(json.dumps(document))
    assert cli("db", "rebuild", str(target)).returncode == 0
    return target


@pytest.mark.integration
def test_analyze_and_report_agree_on_a_directory_without_a_completed_run(
    tmp_path: Path,
) -> None:
    cli = run_cli_forked  # commands on a stored directory: forks (tests/cli_server.py)
    target = _interrupted_only(tmp_path, cli)
    analysed = cli("analyze", str(target))
    reported = cli("report", str(target))
    _assert_one_line(analysed, 4, "no completed run (1 interrupted)")
    _assert_one_line(reported, 4, "no completed run (1 interrupted)")
    assert analysed.stderr == reported.stderr
    assert not (target / "report").exists()


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["analyze", "--bootstrap", "wild", "{dir}"], 2, "--bootstrap"),
        (["analyze", "--block-length", "0", "{dir}"], 2, "--block-length"),
        (["analyze", "{dir}/nowhere"], 2, "nowhere"),
        (["report", "{dir}/nowhere"], 2, "nowhere"),
        (["report", "--format", "pdf", "{dir}"], 2, "pdf"),
        (["export", "{dir}/nowhere"], 2, "results.duckdb"),
        (["db", "check", "{dir}/nowhere"], 2, "not a directory"),
        (["db", "rebuild", "{dir}"], 2, "not a results directory"),
        (["no-such-command"], 2, "no-such-command"),
    ],
)
def test_other_commands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], code: int, fragment: str
) -> None:
    filled = [arg.replace("{dir}", str(tmp_path)) for arg in args]
    _assert_one_line(main_in_process(capsys, *filled), code, fragment)


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["--cores", "0"], 2, "--cores 0"),
        (["--cores", "x"], 2, "--cores takes"),
        (["--clock", "3/2"], 2, "--clock"),
        (["--clock", "fast"], 2, "--clock"),
        (["--device", "esp32-wroom-32"], 2, "belong to --trace"),
        # With --trace, mosquitto is probed (mosquitto -h) before the network is checked.
        pytest.param(
            ["--trace", "--network", "moon"], 2, "--network", marks=pytest.mark.integration
        ),
    ],
)
def test_bad_trace_options_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], code: int, fragment: str
) -> None:
    if "--trace" in args:
        from iotsecbench.measure.tracefs import tracing_problem

        if tracing_problem() is not None:
            pytest.skip("needs tracing to reach the network check")
    out = tmp_path / "out"
    result = main_in_process(
        capsys, "bench", "handshake", "--profiles", "tls1.3", "--out", str(out), *args
    )
    _assert_one_line(result, code, fragment)
    assert not out.exists()


def test_trace_without_tracing_is_an_environment_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from iotsecbench.measure import tracefs

    monkeypatch.setattr(tracefs, "tracing_problem", lambda: "scheduler tracing needs root")
    result = main_in_process(
        capsys,
        "bench",
        "handshake",
        "--profiles",
        "tls1.3",
        "--trace",
        "--out",
        str(tmp_path / "o"),
    )
    _assert_one_line(result, 3, "--trace: scheduler tracing needs root")
