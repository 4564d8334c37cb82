"""Every option of every command against hostile values (docs/reliability.md, "Found by an
outside tester, and the matrix that keeps them found").

The options come from the command line itself (the click tree Typer builds), so an option
added later is in the matrix at once — and ``test_the_matrix_knows_every_option`` fails
until ``COMMANDS`` says what kind of value it takes (``KINDS``: what each hostile value
should then do). Each option is given, alone on top of a valid
base command, each of ``VALUES``: 0, −1, nan, inf, a huge number, the empty string, a word,
a path that is a regular file, a directory, a path under a read-only mount, and a missing
path. Asserted for every case:

- no traceback, and a refusal is **one line** on stderr with the documented exit code
  (2 usage or configuration, 3 environment, 4 corrupt data: docs/exit-codes.md);
- a value that is accepted reaches the point where the command's real work begins (a
  *work point*, where the case stops: ``tests/fork_server.py``) — a refusal after work has
  begun, or a case still working at its timeout, fails;
- nothing outside the named output directory changes (the case's own directory, and the
  shared fixtures: the results directories, traces and CSV files the commands read).

Each case is its own process, forked from a server that has imported iotsecbench once, as
many at a time as there are CPUs, so the ~1200 cases cost tens of milliseconds each, not a
Python start-up. The cases are one test (a parallel pytest gives it to one worker);
``IOTSB_MATRIX=run-seed,meter`` runs only the cases whose ids contain one of the words.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import GOLDEN, REPO
from tests.fork_server import WORK_EXIT

ACCEPTED = "accepted"  # the case reaches a work point, or (read-only commands) exits 0
CASE_TIMEOUT_S = 20.0

# value class → the text given on the command line ({case}: the case's own directory,
# {read_only}: a directory on a read-only mount)
VALUES = {
    "zero": "0",
    "minus-one": "-1",
    "nan": "nan",
    "inf": "inf",
    "huge": "99999999999999999999",
    "empty": "",
    "non-numeric": "telepathy",
    "file": "{case}/a-file",
    "directory": "{case}/a-directory",
    "read-only": "{read_only}/new",
    "missing": "{case}/missing/new",
}
RELATIVE = ("zero", "minus-one", "nan", "inf", "huge", "non-numeric")  # as paths: relative


def _outcomes(default: int | str, **overrides: int | str) -> dict[str, int | str]:
    by_value = dict.fromkeys(VALUES, default)
    by_value.update({key.replace("_", "-"): value for key, value in overrides.items()})
    return by_value


# What each kind of option does with each value class: the exit code of its refusal, or
# ACCEPTED. A path-like word ("0", "nan", …) is a relative path: fine for an output, missing
# for an input.
KINDS: dict[str, dict[str, int | str]] = {
    # a whole number ≥ 1 (repetitions, devices, workers) with a documented ceiling
    "count": _outcomes(2),
    # a whole number ≥ 0 (warm-up connections, sizes that may be empty)
    "count-or-zero": _outcomes(2, zero=ACCEPTED),
    # a seed: 0 ≤ seed < 2^63 − the fleet's devices (stored as BIGINT)
    "seed": _outcomes(2, zero=ACCEPTED),
    # a finite positive number with a ceiling (seconds, Hz, volts)
    "positive-number": _outcomes(2),
    # a word from a fixed vocabulary (configurations, stacks, formats, profiles, …)
    "name": _outcomes(2),
    # free text (a label)
    "text": _outcomes(ACCEPTED, empty=2),
    # a directory the command writes into (created, parents too)
    "output-directory": _outcomes(
        ACCEPTED, empty=2, file=2, read_only=3, **dict.fromkeys(RELATIVE, ACCEPTED)
    ),
    # a file the command writes (its directory must exist)
    "output-file": _outcomes(ACCEPTED, empty=2, directory=2, read_only=3, missing=2),
    # a data file the command reads: a file of garbage is corrupt data (4)
    "data-file": _outcomes(2, file=4),
    # a configuration file (spec, profile, certificate): garbage in it is a usage error
    "config-file": _outcomes(2),
    # a results directory (or run directory) the command reads
    "results-directory": _outcomes(2),
    # an option the base command does not allow (it needs another): always refused
    "refused": _outcomes(2),
}


@dataclass(frozen=True)
class Option:
    """What the matrix knows of one parameter: its kind, exceptions to the kind's outcomes,
    and base arguments to use instead of the command's when this parameter is varied."""

    kind: str
    outcomes: dict[str, int | str] = field(default_factory=dict)
    base: tuple[str, ...] | None = None

    def expected(self, value: str) -> int | str:
        return self.outcomes.get(value, KINDS[self.kind][value])


@dataclass(frozen=True)
class Flag:
    """A flag (no value): given alone on the base command, what it does."""

    outcome: int | str
    base: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Command:
    base: tuple[str, ...]  # valid arguments besides the varied one ({placeholders})
    work_points: tuple[str, ...]  # module:function where the real work begins
    options: dict[str, Option | Flag]
    # a second way through one command (``bench handshake --target``: another method, its
    # own work points) is described under a name of its own; ``cli`` is the command
    cli: str | None = None

    def command(self, name: str) -> str:
        return self.cli or name


RUN_POINTS = (
    "iotsecbench.runner.experiment:_execute_and_store",
    "iotsecbench.runner.experiment:_stream_and_store",
)
ANALYSE_POINTS = ("iotsecbench.analysis.pipeline:_diagnose",)
REPORT_POINTS = (
    "iotsecbench.report.build:build_figures",
    "iotsecbench.report.build:comparison_figures",
)

FLEET_BASE = ("--devices", "2", "--out", "{case}/out", "--quiet")

COMMANDS: dict[str, Command] = {
    "run": Command(
        ("--out", "{case}/out", "--quiet"),
        RUN_POINTS,
        {
            "spec_file": Option("config-file"),
            "preset": Option("name"),
            "configs": Option("name"),
            "duration": Option("positive-number"),
            "reps": Option("count"),
            "payload": Option("count"),
            "rate": Option("positive-number"),
            "qos": Option("count-or-zero"),
            "network": Option("name"),
            "transport": Option("name"),
            "method": Option("name"),
            "stack": Option("name"),
            "device": Option("config-file"),
            "target": Option("name"),  # the device emitter: rv32imc or cortex-m4
            "seed": Option("seed"),
            "out": Option("output-directory", base=("--quiet",)),
            "broker": Option("name"),
            "broker_ca": Option("refused"),  # needs --broker mqtts://…
            "keylog": Option("output-file"),
            "devices": Option("count"),
            "ramp": Option("refused"),  # needs --devices
            "fleet_agent": Option("name"),  # auto or processes
            # the fleet's options, on a fleet (their values are checked, not refused for
            # want of --devices)
            "storm_at": Option("positive-number", base=FLEET_BASE),
            "raw_devices": Option("count", base=FLEET_BASE),
            "receivers": Option("name", base=FLEET_BASE),  # devices or backend
            "max_connecting": Option("count", base=FLEET_BASE),
            "executor_name": Option("name"),
            "scheduler": Option("refused"),  # needs --executor dask
            "dask_workers": Option("refused"),  # needs --executor dask
            "split_fleet": Flag(2),  # needs --executor dask
            "saturating": Flag(ACCEPTED),
            "resume": Flag(2),  # nothing to resume in a new directory
            "force_new_run": Flag(ACCEPTED),
            "report": Flag(ACCEPTED),
            "quiet": Flag(ACCEPTED),
            "simulate": Flag(ACCEPTED),
            # dumpcap and the privilege to capture are part of the lab (scripts/setup.sh)
            "capture": Flag(ACCEPTED),
        },
    ),
    "analyze": Command(
        ("{golden}",),
        ANALYSE_POINTS,
        {
            "results_dir": Option("results-directory", base=()),
            "csv": Option("data-file", base=()),
            "latency_csv": Option("data-file", base=("--csv", "{current_csv}")),
            "baseline": Option("name"),
            "bootstrap": Option("name"),
            "block_length": Option("count"),
            "reps": Option("count"),
            "seed": Option("seed"),
            "require": Option("name"),
            "out": Option("output-file"),
            "block_on": Option("name"),
            "current": Option("name"),
            "model_draws": Option("count"),
        },
    ),
    "report": Command(
        ("{golden}",),
        REPORT_POINTS,
        {
            "sources": Option("data-file", base=()),
            "format": Option("name"),
            "out": Option("output-directory"),
            "figures": Option("name"),
            "as_json": Flag(ACCEPTED),
            "current": Option("name"),
            "allow_different": Option("refused"),  # one source: nothing to compare
        },
    ),
    "export": Command(
        ("{golden}",),
        ("iotsecbench.store.export:ResultsStore", "iotsecbench.report.exporters.timeline:render"),
        {
            "results_dir": Option("results-directory", base=()),
            "out": Option("output-directory"),
            "export_format": Option("name"),
            # the timeline of the golden runs, written under the case (never into the fixture)
            "timeline": Flag(ACCEPTED, base=("{golden}", "--out", "{case}/out")),
            "run": Option("name", base=("{golden}", "--timeline", "--out", "{case}/out")),
        },
    ),
    "schemes": Command((), (), {"as_json": Flag(ACCEPTED), "show_all": Flag(ACCEPTED)}),
    "meter": Command(
        ("{trace}",),
        (),
        {
            "trace": Option("data-file", base=()),
            "format": Option("name"),
            "as_json": Flag(ACCEPTED),
        },
    ),
    "attach": Command(
        ("{golden_run}", "{trace}"),
        ("iotsecbench.workflows.attach:replace_agent_rows",),
        {
            "run": Option("results-directory", base=("{trace}",)),
            "trace": Option("data-file", base=("{golden_run}",)),
            "run_id": Option("refused"),  # the run is named by its directory
            "agent": Option("name"),
            "sync": Option("name", outcomes={"zero": ACCEPTED}),  # D0: the trace's sync
            # the trace's run starts 3.25 s in: 0 places it, -1 and 1e20 s leave it outside
            "offset": Option(
                "positive-number", outcomes={"zero": ACCEPTED, "minus-one": 4, "huge": 4}
            ),
            # the golden run's modelled current is too even to correlate with (r < 0.6)
            "correlate": Flag(4),
            "voltage": Option("positive-number"),
            "format": Option("name"),
        },
    ),
    "calibrate": Command(
        ("{attached}", "--out", "{case}/calibrated.toml"),
        ("iotsecbench.energy.calibrate:_all_residuals",),
        {
            "runs": Option("results-directory", base=("--out", "{case}/calibrated.toml")),
            "out": Option("output-file", base=("{attached}",)),
            "profile": Option("config-file"),
            "fit": Option("name"),
            "check": Option("results-directory"),
            "agent": Option("name"),
            "name": Option("text"),
            # the timing inputs: each instead of the runs (refused beside them)
            "handshakes": Option("data-file", base=("--out", "{case}/calibrated.toml")),
            "benchmark": Option("data-file", base=("--out", "{case}/calibrated.toml")),
            "benchmark_format": Option("refused"),  # needs --benchmark
            "clock": Option("refused"),  # needs --benchmark
            "hold_out": Flag(2),  # needs --handshakes
        },
    ),
    "doctor": Command(
        (),
        (
            "iotsecbench.workflows.doctor:all_checks",
            "iotsecbench.lab.network:cleanup_leftovers",
            "iotsecbench.runner.cluster:check_workers",
        ),
        {
            "as_json": Flag(ACCEPTED),
            "cleanup": Flag(ACCEPTED),
            "out": Option("refused"),  # needs --cleanup
            "scheduler": Option("name"),
        },
    ),
    # read-only: an accepted value prints the table and exits 0
    "predict handshake": Command(
        ("--profiles", "tls1.3", "--draws", "100"),
        (),
        {
            "device": Option("config-file"),
            "profiles": Option("name"),
            "clocks": Option("positive-number"),
            "cores": Option("count"),
            "draws": Option("count"),
            "seed": Option("seed"),
            "as_json": Flag(ACCEPTED),
        },
    ),
    "validate": Command(
        ("--draws", "100"),
        (),
        {
            "device": Option("config-file"),
            "draws": Option("count"),
            "seed": Option("seed"),
            "as_json": Flag(ACCEPTED),
        },
    ),
    "db rebuild": Command(
        (),
        ("iotsecbench.store.rebuild:_rebuild_locked",),
        {"results_dir": Option("results-directory")},
    ),
    "db check": Command((), (), {"results_dir": Option("results-directory")}),
    "bench crypto": Command(
        (),
        (
            "iotsecbench.bench.crypto:measure_case",
            "iotsecbench.bench.crypto:measure_key_establishment",
            "iotsecbench.bench.crypto:count_scheme",
        ),
        {
            "schemes": Option("name"),
            "sizes": Option("count-or-zero"),
            "repetitions": Option("count"),
            "json_file": Option("output-file"),
            "csv_file": Option("output-file"),
            "plot": Option("output-file"),
            "target": Option("name"),
            "public_key": Option("refused"),  # needs --target
            "device_library": Flag(2),  # needs --target
            "cpu": Option("count-or-zero"),
        },
    ),
    "bench handshake": Command(
        ("--profiles", "tls1.3", "--out", "{case}/out"),
        ("iotsecbench.bench.handshake:_network_lab",),
        {
            "profiles": Option("name", base=("--out", "{case}/out")),
            "preset": Option("name"),
            "reps": Option("count"),
            "target_ci": Option("positive-number"),
            "max_reps": Option("count"),
            "warmup": Option("count-or-zero"),
            "seed": Option("seed"),
            "json_file": Option("output-file"),
            "out": Option("output-directory", base=("--profiles", "tls1.3")),
            "trace": Flag(ACCEPTED),
            "cores": Option("count"),
            "clock": Option("positive-number"),
            "device": Option("refused"),  # needs --trace
            "network": Option("name"),
            "stack": Option("name"),
            "timeout": Option("positive-number"),
            "target": Option("name"),  # the counted method: below
            "keep_retransmissions": Flag(2),  # needs --trace
            "quiet": Flag(ACCEPTED),
        },
    ),
    # The counted method (a virtual MCU's own TLS client): its refusals come before the
    # firmware is built and QEMU started (bench.device.check_counted, where work begins).
    "bench handshake --target": Command(
        ("--target", "rv32imc", "--profiles", "plain", "--out", "{case}/out"),
        ("iotsecbench.bench.device:check_counted",),
        {
            "target": Option("name", base=("--profiles", "plain", "--out", "{case}/out")),
            "profiles": Option("name", base=("--target", "rv32imc", "--out", "{case}/out")),
            "preset": Option("name"),
            "reps": Option("count"),
            "target_ci": Option("positive-number"),
            "max_reps": Option("count"),
            "seed": Option("seed"),
            "json_file": Option("output-file"),
            "out": Option("output-directory", base=("--target", "rv32imc", "--profiles", "plain")),
            "network": Option("name"),
            "stack": Option("name"),
            "device": Option("config-file"),
            "timeout": Option("positive-number"),
            "quiet": Flag(ACCEPTED),
            # the traced method's options: refused with --target, whatever their value
            "warmup": Option("refused"),
            "cores": Option("refused"),
            "clock": Option("refused"),
            "trace": Flag(2),
            "keep_retransmissions": Flag(2),
        },
        cli="bench handshake",
    ),
    "bench device-costs": Command(
        ("--target", "rv32imc", "--profile", "esp32-c3", "--out", "{case}/counted.toml"),
        (
            "iotsecbench.bench.device_costs:counted_profile",
            "iotsecbench.bench.device_costs:borrowed_guesses",
        ),
        {
            "target": Option("name", base=("--profile", "esp32-c3", "--out", "{case}/c.toml")),
            "profile": Option(
                "config-file", base=("--target", "rv32imc", "--out", "{case}/c.toml")
            ),
            "out": Option("output-file", base=("--target", "rv32imc", "--profile", "esp32-c3")),
            "replace_guesses": Flag(ACCEPTED),
        },
    ),
}


def cli_parameters() -> dict[str, list]:
    """Every command (``"bench crypto"``) → its click parameters, read from the app."""
    import typer

    from iotsecbench.cli.app import build_app

    found: dict[str, list] = {}

    def walk(command, path: list[str]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                walk(sub, [*path, name])
        else:
            found[" ".join(path)] = list(command.params)

    walk(typer.main.get_command(build_app()), [])
    return found


def test_the_matrix_knows_every_option() -> None:
    """An option added to any command must be described here: its kind says which values
    it takes, so it is tried against the hostile ones."""
    parameters = cli_parameters()
    described = {c.command(name) for name, c in COMMANDS.items()}
    assert set(parameters) == described, "commands added or removed: describe them"
    for label, command in COMMANDS.items():
        name = command.command(label)
        params = parameters[name]
        known = command.options
        names = {p.name for p in params}
        if command.cli is not None:  # another way through a command: a part of its options
            assert set(known) <= names, f"{label}: gone options {sorted(set(known) - names)}"
            params = [p for p in params if p.name in known]
            names = set(known)
        assert names == set(known), (
            f"{name}: the matrix does not know {sorted(names - set(known))} "
            f"(or knows gone ones: {sorted(set(known) - names)})"
        )
        for p in params:
            flag = getattr(p, "is_flag", False)
            assert isinstance(known[p.name], Flag) == flag, f"{name} {p.name}: flag or not?"
            if isinstance(known[p.name], Option):
                assert known[p.name].kind in KINDS, f"{name} {p.name}: unknown kind"


@dataclass(frozen=True)
class Case:
    command: str
    parameter: str
    value: str | None  # None: a flag

    @property
    def id(self) -> str:
        return f"{self.command}-{self.parameter}-{self.value or 'flag'}".replace(" ", "-")


def _cases() -> list[Case]:
    cases = []
    for command, described in COMMANDS.items():
        for parameter, option in described.options.items():
            if isinstance(option, Flag):
                cases.append(Case(command, parameter, None))
            else:
                cases.extend(Case(command, parameter, value) for value in VALUES)
    return cases


CASES = _cases()


# --- running the cases --------------------------------------------------------------------


def _read_only_mount(directory: Path) -> bool:
    """Make ``directory`` read-only (a read-only bind mount for root, whom modes do not
    stop; a 0555 mode otherwise); False when this machine cannot."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        return True
    mounted = subprocess.run(["mount", "--bind", str(directory), str(directory)], check=False)
    if mounted.returncode != 0:
        return False
    subprocess.run(["mount", "-o", "remount,ro,bind", str(directory)], check=False)
    try:
        (directory / "probe").touch()
    except OSError:
        return True
    (directory / "probe").unlink()
    subprocess.run(["umount", str(directory)], check=False)
    return False


def _fixtures(root: Path) -> dict[str, str]:
    """A golden results directory (store rebuilt), one of its runs, a meter trace fitting
    that run, a copy with the trace attached (for calibrate) and a current CSV."""
    from iotsecbench.store import read
    from iotsecbench.store.rebuild import rebuild
    from iotsecbench.workflows.attach import attach
    from tests.meter_traces import run_facts, write_ppk2

    golden = root / "golden"
    shutil.copytree(GOLDEN, golden, ignore=shutil.ignore_patterns("expected", "README.md"))
    rebuild(golden)
    run_id = sorted(p.name for p in (golden / "runs").iterdir())[0]
    trace = write_ppk2(root / "trace.csv", run_facts(golden, run_id))
    attached = root / "attached"
    shutil.copytree(golden, attached)
    attach(attached / "runs" / run_id, trace)
    current = read.current_frame(golden)
    current_csv = root / "current.csv"
    current[["configuration", "device", "run", "time_s", "current_ma"]].to_csv(
        current_csv, index=False
    )
    return {
        "golden": str(golden),
        "golden_run": str(golden / "runs" / run_id),
        "trace": str(trace),
        "attached": str(attached),
        "current_csv": str(current_csv),
    }


def _snapshot(*directories: Path) -> dict[str, tuple[int, int]]:
    state = {}
    for directory in directories:
        for base, names, files in os.walk(directory):
            for name in files + names:
                path = os.path.join(base, name)
                with contextlib.suppress(OSError):
                    info = os.lstat(path)
                    state[path] = (info.st_mtime_ns, info.st_size)
    return state


def _changed(before: dict, after: dict) -> list[Path]:
    return sorted(Path(p) for p in set(before) | set(after) if before.get(p) != after.get(p))


_PARAMETERS: dict[str, list] = {}


def _parameter(command: str, name: str):  # type: ignore[no-untyped-def]
    if not _PARAMETERS:
        _PARAMETERS.update(cli_parameters())
    return next(p for p in _PARAMETERS[command] if p.name == name)


def _arguments(case: Case, names: dict[str, str]) -> tuple[list[str], list[Path]]:
    """The command line of ``case`` and the output paths it names (where it may write)."""
    described = COMMANDS[case.command]
    option = described.options[case.parameter]
    base = option.base if option.base is not None else described.base
    command = described.command(case.command)
    argv = [*command.split(), *(token.format(**names) for token in base)]
    param = _parameter(command, case.parameter)
    if case.value is None:
        argv.append(param.opts[0])
    else:
        value = VALUES[case.value].format(**names)
        argv += [param.opts[0], value] if param.param_type_name == "option" else [value]
    outputs = []
    for index, token in enumerate(argv[:-1]):
        if token.startswith("--"):
            named = next((p for p in _PARAMETERS[command] if token in p.opts and p.name), None)
            option = described.options.get(named.name) if named is not None else None
            if isinstance(option, Option) and option.kind.startswith("output-"):
                # relative paths count from the case's own directory, its working directory
                outputs.append(Path(names["case"]) / argv[index + 1])
    return argv, outputs


def _allowed(path: Path, outputs: list[Path], before: dict) -> bool:
    """``path`` is a named output, inside one, or a directory made to hold one."""
    return any(
        path == out or out in path.parents or (path in out.parents and str(path) not in before)
        for out in outputs
    )


@dataclass(frozen=True)
class Outcome:
    argv: list[str]
    answer: dict
    stderr: str
    changed: list[Path]  # in the case's own directory, outside its named outputs


@dataclass(frozen=True)
class Matrix:
    outcomes: dict[str, Outcome]  # case id → what happened
    fixtures_changed: list[Path]  # shared inputs changed by the cases: none may be
    read_only: bool  # a read-only mount could be made


# One test item for the whole matrix, so that a parallel run (pytest-xdist) gives it to one
# worker instead of running the batch in each; IOTSB_MATRIX=run-seed (a substring of case
# ids, comma-separated) runs a part of it while working on a command.
SELECTION_VARIABLE = "IOTSB_MATRIX"


def _selected() -> list[Case]:
    wanted = [w for w in os.environ.get(SELECTION_VARIABLE, "").split(",") if w]
    return [case for case in CASES if not wanted or any(w in case.id for w in wanted)]


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    """Every selected case run through the fork server, a child per case, as many at a time
    as there are CPUs; what each did, and what changed."""
    root = tmp_path_factory.mktemp("matrix")
    fixtures = _fixtures(root / "fixtures")
    read_only = root / "read-only"
    read_only.mkdir()
    mounted = _read_only_mount(read_only)
    cases = [c for c in _selected() if mounted or c.value != "read-only"]
    requests, prepared = [], {}
    for number, case in enumerate(cases):
        directory = root / "cases" / f"{number:04d}"
        (directory / "a-directory").mkdir(parents=True)
        (directory / "a-file").write_text("not what you think\n")
        (directory / "a-file").chmod(0o600)
        names = {**fixtures, "case": str(directory), "read_only": str(read_only)}
        argv, outputs = _arguments(case, names)
        prepared[case.id] = (argv, outputs, directory, _snapshot(directory))
        requests.append(
            {
                "id": case.id,
                "argv": argv,
                "cwd": str(directory),
                "stdout": str(root / "cases" / f"{number:04d}.stdout"),
                "stderr": str(root / "cases" / f"{number:04d}.stderr"),
                "timeout_s": CASE_TIMEOUT_S,
                "work_points": list(COMMANDS[case.command].work_points),
            }
        )
    before = _snapshot(root / "fixtures")
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.fork_server"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", "OPENBLAS_NUM_THREADS": "1"},
    )
    answers: dict[str, dict] = {}
    try:
        assert server.stdin is not None and server.stdout is not None
        assert server.stdout.readline().strip() == "ready", "the fork server did not start"
        batch = {"requests": requests, "parallel": os.cpu_count() or 1}
        server.stdin.write(json.dumps(batch) + "\n")
        server.stdin.flush()
        for line in server.stdout:
            answer = json.loads(line)
            if answer.get("done"):
                break
            answers[answer["id"]] = answer
        server.stdin.close()
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
        if mounted and os.geteuid() == 0:
            subprocess.run(["umount", str(read_only)], check=False)
        with contextlib.suppress(OSError):
            read_only.chmod(0o755)
    outcomes = {}
    for request_ in requests:
        argv, outputs, directory, case_before = prepared[request_["id"]]
        case_before_state = case_before
        changed = [
            path
            for path in _changed(case_before_state, _snapshot(directory))
            if not _allowed(path, outputs, case_before_state)
        ]
        outcomes[request_["id"]] = Outcome(
            argv,
            answers.get(request_["id"], {"exit": None, "timed_out": False, "lost": True}),
            Path(request_["stderr"]).read_text(errors="replace")
            if Path(request_["stderr"]).exists()
            else "",
            changed,
        )
    return Matrix(outcomes, _changed(before, _snapshot(root / "fixtures")), mounted)


def _failure(case: Case, outcome: Outcome) -> str | None:
    """Why ``case`` broke its contract, in one line, or None."""
    option = COMMANDS[case.command].options[case.parameter]
    expected = option.outcome if isinstance(option, Flag) else option.expected(case.value)
    answer, stderr = outcome.answer, outcome.stderr
    shown = f"iotsecbench {' '.join(a or repr(a) for a in outcome.argv)}"
    lines = [line for line in stderr.splitlines() if line.strip()]
    last = lines[-1] if lines else "(nothing)"
    code = answer["exit"]
    if answer.get("lost"):
        return f"{shown}: no answer from the fork server"
    if answer["timed_out"]:
        return f"{shown}: still working after {CASE_TIMEOUT_S:g} s"
    if "Traceback" in stderr:
        return f"{shown}: a traceback ending {last}"
    if expected == ACCEPTED:
        if code not in (0, WORK_EXIT):
            return f"{shown}: refused ({code}) but should be accepted: {last}"
    elif code != expected or answer["work_point"] is not None:
        reached = f" at {answer['work_point']}" if answer["work_point"] else ""
        return f"{shown}: exit {code}{reached}, expected a refusal with {expected}: {last}"
    elif len(lines) != 1 or not lines[0].startswith("iotsecbench: error: "):
        return f"{shown}: the refusal is not one line: {stderr!r}"
    if outcome.changed:
        return f"{shown}: changed outside its output: {[str(p) for p in outcome.changed[:3]]}"
    return None


# a process per case (the fork server's children): a thousand, two to three minutes on two
# busy cores; the census above starts none and stays in the fast lane
@pytest.mark.integration
@pytest.mark.slow
# one item for ~1200 cases (each has its own 20 s limit): 280–300 s at load 11 on two cores,
# past the suite's 300 s default
@pytest.mark.timeout(900)
def test_every_hostile_value_is_refused_in_one_line_or_accepted(matrix: Matrix) -> None:
    """Each case: no traceback, a refusal in one line with the documented exit code, an
    accepted value stopped where the work begins, nothing changed outside its output; and
    the shared inputs (results directories, traces, CSV files) untouched by them all."""
    failures = [
        failure
        for case in _selected()
        if case.id in matrix.outcomes
        and (failure := _failure(case, matrix.outcomes[case.id])) is not None
    ]
    # (without a read-only mount, as for an unprivileged user without one, those cases
    # are left out: the permission tests of tests/unit/cli/test_bad_inputs.py stay)
    wanted = {c.id for c in _selected() if matrix.read_only or c.value != "read-only"}
    assert set(matrix.outcomes) == wanted
    assert not failures, f"{len(failures)} of {len(matrix.outcomes)} cases:\n" + "\n".join(
        failures[:40]
    )
    assert not matrix.fixtures_changed, matrix.fixtures_changed[:10]
