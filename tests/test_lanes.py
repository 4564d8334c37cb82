"""The fast lane's guard (tests/lanes.py) catches what would make an unmarked test impure: a
process in any of its forms, a socket beyond loopback, a name lookup. Each case is tried from
this unmarked test itself, then the attempt is forgotten so the test can pass."""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess

import pytest

from tests.lanes import _ATTEMPTS, LaneViolation


@pytest.fixture
def attempts(request: pytest.FixtureRequest) -> list[str]:
    """What the guard saw during this test (the test clears what it meant to cause)."""
    return request.node.stash.setdefault(_ATTEMPTS, [])


def _fork() -> None:
    if os.fork() == 0:  # only if the guard let it through: the child must not run pytest
        os._exit(0)


ATTEMPTS = {
    "subprocess": lambda: subprocess.run(["true"], check=False),
    "os.system": lambda: os.system("true"),
    "os.fork": _fork,
    "os.posix_spawn": lambda: os.posix_spawn("/bin/true", ["true"], os.environ),
    "multiprocessing spawn": lambda: multiprocessing.get_context("spawn").Process().start(),
    "bind all interfaces": lambda: socket.socket().bind(("", 0)),
    "connect beyond loopback": lambda: socket.socket().connect(("192.0.2.1", 9)),
    "name lookup": lambda: socket.getaddrinfo("example.com", 443),
}


@pytest.mark.parametrize("name", list(ATTEMPTS))
def test_an_unmarked_test_cannot_start_a_process_or_reach_the_network(
    name: str, attempts: list[str]
) -> None:
    with pytest.raises(LaneViolation, match="mark it integration"):
        ATTEMPTS[name]()
    assert len(attempts) == 1
    attempts.clear()  # caused on purpose: this test passes


def test_loopback_and_unix_sockets_stay_allowed(attempts: list[str]) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as unix:
        unix.bind("")  # an abstract address
    socket.getaddrinfo("localhost", 1883)
    assert attempts == []


@pytest.mark.integration
def test_a_marked_test_may(attempts: list[str]) -> None:
    assert subprocess.run(["true"], check=False).returncode == 0
    assert attempts == []


def test_a_test_that_swallows_the_refusal_fails_all_the_same(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import subprocess

        def test_degrades_quietly():
            try:
                subprocess.run(["true"])
            except Exception:
                pass  # code under test turning every error into one line
        """
    )
    result = pytester.runpytest_inprocess("-p", "tests.lanes")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_degrades_quietly started a process*mark it integration*"])


def test_workers_take_the_modules_with_slow_lab_tests_first() -> None:
    """The full lane's order (tests/conftest.py): modules holding a slow lab test, then those
    that start a process, then the pure ones; a module's tests stay together, in order."""
    from types import SimpleNamespace

    from tests.conftest import _longest_modules_first

    def item(nodeid: str, *marks: str) -> SimpleNamespace:
        markers = [SimpleNamespace(name=mark) for mark in marks]
        return SimpleNamespace(nodeid=nodeid, iter_markers=lambda: iter(markers))

    items = [
        item("tests/unit/test_pure.py::a"),
        item("tests/unit/test_cli.py::refused", "integration"),
        item("tests/unit/test_cli.py::resumed", "integration", "slow"),
        item("tests/unit/test_cli.py::parsed"),
        item("tests/unit/test_slow_pure.py::b", "slow"),
        item("tests/integration/test_lab.py::c", "integration"),
    ]
    assert [i.nodeid for i in _longest_modules_first(items)] == [
        "tests/unit/test_cli.py::refused",
        "tests/unit/test_cli.py::resumed",
        "tests/unit/test_cli.py::parsed",
        "tests/integration/test_lab.py::c",
        "tests/unit/test_pure.py::a",
        "tests/unit/test_slow_pure.py::b",
    ]


def test_numpy_computes_with_one_blas_thread() -> None:
    """tests/conftest.py sets OPENBLAS_NUM_THREADS=1 before the workers start: in a test
    process numpy's OpenBLAS runs one thread, and the processes a test starts inherit the
    variable (per-core BLAS threads spin-waiting on a full machine cost the analysis 2-3x
    its CPU)."""
    import ctypes

    import numpy  # noqa: F401  (loads its OpenBLAS)

    assert os.environ.get("OPENBLAS_NUM_THREADS") == "1"
    with open("/proc/self/maps") as maps:
        libraries = sorted({line.split()[-1] for line in maps if "openblas" in line})
    counts = [
        getattr(ctypes.CDLL(path), name)()
        for path in libraries
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads")
        if hasattr(ctypes.CDLL(path), name)
    ]
    assert counts and set(counts) == {1}, (libraries, counts)


def test_one_pure_test_at_a_time_runs_beside_the_serial_tests(tmp_path) -> None:
    """tests/lanes.py's lock between workers (each open file stands for a worker): with the
    gate free a pure test holds the lock shared, like any other test; while a serial test
    holds the gate and the lock, a pure test takes the one place beside it, a second one
    waits for that place, and once the serial tests are done it takes the lock shared."""
    import fcntl
    import threading

    from tests.lanes import _Alone

    def handles() -> tuple:
        return tuple(open(tmp_path / name, "a") for name in ("gate", "lock", "beside"))

    def shared_only(path) -> bool:  # the lock is held shared: another may share, none own it
        with open(path, "a") as other:
            fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(other, fcntl.LOCK_UN)
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            return False

    held = _Alone._pure(*handles())
    assert [h.name for h in held] == [str(tmp_path / "gate"), str(tmp_path / "lock")]
    assert shared_only(tmp_path / "lock")
    for handle in held:
        handle.close()

    serial_gate, serial_lock, _ = handles()
    fcntl.flock(serial_gate, fcntl.LOCK_EX)
    fcntl.flock(serial_lock, fcntl.LOCK_EX)
    first = _Alone._pure(*handles())
    assert [h.name for h in first] == [str(tmp_path / "beside")]
    second: list = []
    waiting = threading.Thread(target=lambda: second.append(_Alone._pure(*handles())))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive() and second == []  # the place is taken, the gate closed
    first[0].close()  # the first pure test ends
    waiting.join(5)
    assert [h.name for h in second[0]] == [str(tmp_path / "beside")]
    third: list = []
    waiting = threading.Thread(target=lambda: third.append(_Alone._pure(*handles())))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()
    serial_gate.close()  # the serial tests are done
    serial_lock.close()
    waiting.join(5)
    assert [h.name for h in third[0]] == [str(tmp_path / "gate"), str(tmp_path / "lock")]
    for handle in (*second[0], *third[0]):
        handle.close()
