"""Shared fixtures: markers, the CLI runner, and skips for missing system tools."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_server import run_cli_forked as run_cli_forked  # re-exported: see run_cli

REPO = Path(__file__).resolve().parents[1]

# One BLAS thread in every test process and every process a test starts (set here, before the
# xdist workers start and import numpy). OpenBLAS otherwise runs a thread per core in each
# process, spin-waiting for a core the suite's other workers and lab runs already hold: the
# analysis' regressions (statsmodels' ADF) cost 2-3x the CPU for a byte-identical result
# (tests/validation/test_analysis_cli.py: 18-19 s of CPU, 7 s with one thread; an SVD of a
# 1500 x 25 matrix 10-30x at load 6). docs/internals.md § Tests.
os.environ["OPENBLAS_NUM_THREADS"] = "1"

# The lanes and their guard: an unmarked test that starts a process fails (tests/lanes.py).
pytest_plugins = ("tests.lanes", "pytester")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--skip-slow", action="store_true", help="skip tests marked slow")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--skip-slow"):
        skip = pytest.mark.skip(reason="--skip-slow given")
        for item in items:
            if "slow" in item.keywords:
                item.add_marker(skip)
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            group = _shared_fixture_group(item)
            if group is not None and item.get_closest_marker("xdist_group") is None:
                item.add_marker(pytest.mark.xdist_group(group))
    if hasattr(config, "workerinput"):  # an xdist worker: its order is the schedule's
        items[:] = _longest_modules_first(items)


def _longest_modules_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with the modules that hold a slow lab test first, then those that start a
    process, then the pure ones; each module's tests stay together and in order (a module
    fixture is made once). xdist hands out its groups (largest first) and then single tests
    in this order, so the long lab tests start while every worker is still busy and the
    ~4000 short pure tests fill the end, instead of a three-minute browser test starting
    last and running alone (longest processing time first)."""
    weight: dict[str, int] = {}
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        rank = 0 if {"slow", "integration"} <= marks else 1 if "integration" in marks else 2
        module = item.nodeid.split("::")[0]
        weight[module] = min(weight.get(module, 2), rank)
    return sorted(items, key=lambda item: weight[item.nodeid.split("::")[0]])


def _shared_fixture_group(item: pytest.Item) -> str | None:
    """The xdist group that sends ``item`` to the worker already holding a costly fixture it
    shares, or None. A fixture is made once per worker, so without a group each worker that
    gets one of its users makes it again: the golden report (every figure drawn), a module's
    own lab run (a broker and agents for tens of seconds), one per parameter of a parametrised
    one (test_device_tcp's run per target was made twice per target). Serial tests have their
    own group (tests/lanes.py)."""
    if item.get_closest_marker("serial") is not None:
        return None
    names = getattr(item, "fixturenames", ())
    if "golden_report" in names:
        return "golden-report"
    if "default_run" in names:
        return "default-run"
    shared = _module_fixture_group(item, names)
    if shared is not None or item.get_closest_marker("integration") is not None:
        return shared
    # The pure tests, together: the largest unit, so xdist hands it out first, to the worker
    # that runs it beside the serial tests (one pure test at a time may: tests/lanes.py).
    return "pure"


def _module_fixture_group(item: pytest.Item, names: Iterable[str]) -> str | None:
    """The group of ``item``'s module when it uses that module's own module fixture — of the
    module and the fixture's parameter when it has some (each target's run on a worker of its
    own, the targets spread) — else None."""
    module = getattr(item, "module", None)
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    for name in names:
        fixture = definitions.get(name, (None,))[-1]
        if (
            fixture is not None
            and fixture.scope == "module"
            and module is not None
            and fixture.func.__module__ == module.__name__
        ):
            group = item.nodeid.split("::")[0]
            if fixture.params is None:
                return group
            # (no brackets: xdist reads a group name after the last "@" only past the last "]")
            return f"{group}:{item.callspec.getparam(name)}"  # type: ignore[attr-defined]
    return None


# Skips for a part of the lab that scripts/setup.sh installs. Under CI=true (.ci/run sets it)
# such a skip is a failure: a green suite must not hide an untested lab. Skips for limits of
# the machine itself (no root, an unprivileged user, no TCP_INFO) stay skips.
LAB_SKIP_REASONS = re.compile(
    r"mosquitto|Chromium|playwright|openssl command|iproute2|C extension|network emulation|native"
    r"|virtual-MCU|wireshark|tshark"
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") != "true" or not report.skipped:
        return
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
    if LAB_SKIP_REASONS.search(reason) and "--skip-slow" not in reason:
        report.outcome = "failed"
        report.longrepr = (
            f"CI=true and a lab test was skipped ({reason}): scripts/setup.sh --dev must "
            "install what it needs"
        )


# A test that leaves a lab namespace behind (its runner dead) is a defect of the lab or of
# the test; leftovers from before the session (an earlier killed run) are not this suite's.
_LEFTOVERS_BEFORE = pytest.StashKey[set[str]]()


def pytest_sessionstart(session: pytest.Session) -> None:
    from iotsecbench.lab.network import leftover_namespaces

    session.config.stash[_LEFTOVERS_BEFORE] = set(leftover_namespaces())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from iotsecbench.lab.network import leftover_namespaces

    before = session.config.stash.get(_LEFTOVERS_BEFORE, set())
    leaked = sorted(set(leftover_namespaces()) - before)
    if leaked:
        print(f"\nthe suite left network namespaces of dead runners behind: {leaked}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def mosquitto() -> str:
    """Path of the mosquitto binary; integration tests skip (with the reason) without it."""
    found = os.environ.get("IOTSB_MOSQUITTO") or shutil.which("mosquitto")
    if not found:
        pytest.skip("mosquitto not installed (apt-get install mosquitto)")
    return found


@dataclass(frozen=True)
class CliResult:
    returncode: int
    stdout: str
    stderr: str


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300, cwd: Path | None = None
) -> CliResult:
    """Run ``python -m iotsecbench ARGS`` as a user would, in its own process."""
    completed = subprocess.run(
        [sys.executable, "-m", "iotsecbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


# run_cli_forked (imported above from tests/cli_server.py, which says what it is and is not)
# is run_cli's twin for many short calls, such as a matrix of bad inputs: the same arguments
# and result, each call a fork of one server that imported the CLI once (~0.15 s a call here
# under load, against ~1.9 s for a fresh interpreter). It starts processes: integration.


def query(results: Path, sql: str, *parameters: object) -> list[tuple]:
    """Rows of ``sql`` on the results database in ``results`` (read-only)."""
    import duckdb

    with duckdb.connect(str(results / "results.duckdb"), read_only=True) as db:
        return db.execute(sql, list(parameters)).fetchall()


@pytest.fixture
def cli():
    return run_cli


GOLDEN = REPO / "tests" / "data" / "golden"


def golden_copy(directory: Path) -> Path:
    """The golden experiment as a results directory in ``directory`` (store rebuilt from its
    run records)."""
    from iotsecbench.store.rebuild import rebuild

    target = directory / "golden"
    shutil.copytree(GOLDEN, target, ignore=shutil.ignore_patterns("expected", "README.md"))
    assert rebuild(target) == 9
    return target


@pytest.fixture(scope="session")
def golden_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``golden_copy`` once per test process (a rebuild takes a second or two): never handed
    to a test, only copied (``golden_results``)."""
    return golden_copy(tmp_path_factory.mktemp("golden-store"))


def golden_store_copy(store: Path, directory: Path) -> Path:
    """A copy of ``golden_store`` in ``directory``: what ``golden_copy`` gives, without the
    rebuild."""
    return Path(shutil.copytree(store, directory / "golden"))


@pytest.fixture
def golden_results(golden_store: Path, tmp_path: Path) -> Path:
    """The golden experiment as a results directory (store rebuilt from its run records)."""
    return golden_store_copy(golden_store, tmp_path)


@dataclass(frozen=True)
class DefaultRun:
    out: Path  # the results directory: read it, never change it (copy it first)
    result: CliResult  # what the run printed


@pytest.fixture(scope="session")
def default_run(mosquitto: str, tmp_path_factory: pytest.TempPathFactory) -> DefaultRun:
    """The default experiment as a user runs it, short (``run --duration 10 --reps 2``, with
    its statistics and report): one real run shared by the store's checks (test_lab_run) and
    the report's (test_report_browser), on one worker (the xdist group ``default-run``).
    10 s: the statistics need ten 1 Hz values per run (analysis.pipeline)."""
    out = tmp_path_factory.mktemp("default-run") / "results"
    result = run_cli("run", "--duration", "10", "--reps", "2", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr + result.stdout
    return DefaultRun(out, result)


@pytest.fixture(scope="session")
def golden_report(tmp_path_factory: pytest.TempPathFactory):  # -> report.build.BuiltReport
    """The golden experiment's report in every format, each figure also as SVG and PDF: built
    once per test process (each build draws every figure, seconds of CPU) and shared by the
    tests that only read it. Do not change what it wrote."""
    from iotsecbench.report.build import build_report

    results = golden_copy(tmp_path_factory.mktemp("golden-report"))
    return build_report(results, results / "report", figure_formats=["svg", "pdf"])


def missing_c_build_tool(openssl_header: str) -> str | None:
    """What is missing to build one of the C extensions (setup.py), or None: a C compiler,
    this Python's ``Python.h`` and ``/usr/include/openssl/<openssl_header>``. Where nothing is
    missing the extension must have been built, so tests can tell a silent fallback."""
    import sysconfig

    if not (shutil.which("cc") or shutil.which("gcc")):
        return "no C compiler"
    if not (Path(sysconfig.get_paths()["include"]) / "Python.h").exists():
        return "no Python.h"
    if not (Path("/usr/include/openssl") / openssl_header).exists():
        return f"no openssl/{openssl_header}"
    return None
