"""The two test lanes, and the guard that keeps the fast one pure (loaded by tests/conftest.py).

- **fast** (``scripts/test.sh --fast``, i.e. ``pytest -m "not integration and not slow"``):
  pure tests, answers in under a minute.
- **full** (``scripts/test.sh``): everything, what CI runs.

The rule: a test that starts a process (a broker, an agent, QEMU, a compiler, the CLI as a
user runs it, a multiprocessing pool) is marked ``@pytest.mark.integration`` wherever it
lives; a test over ~10 s is also marked ``@pytest.mark.slow``, and so is a pure test over
half a second of CPU: the fast lane runs some 4000 tests in under a minute on two cores, about
15 ms each, and twenty tests of a second or two were a third of it. The lanes name any
unmarked pure test over that at their end.

A test that measures timing (rates, RTTs, CPU shares, scheduler tracing) or inspects state
shared by the whole machine (the root namespace's links, every network namespace) is also
marked ``@pytest.mark.serial``: under parallel workers it runs without any other test that
starts a process, the other workers waiting between their tests (``_Alone``), so no broker,
agent, emulator or namespace of another test competes with it for the cores or changes what
it inspects. Beside it runs at most one pure test at a time (no process, no network: one
thread of Python on one core, the other core left to the serial test), so that the minutes of
serial tests, which mostly wait on real time, do not leave a core idle.

It is enforced, not hoped for: an audit hook (PEP 578) watches every test's setup and call,
in both lanes, and a test without the integration mark that starts a process or opens a
network socket outside loopback fails with "mark it integration" (the attempt itself raises
``LaneViolation``, and the test fails even if the code under test swallowed that). Loopback
and Unix sockets stay allowed: a pure test may talk to a socket it opened itself. Teardown is
not watched: a shared fixture's finaliser runs after whichever test used it last.
"""

from __future__ import annotations

import _posixsubprocess
import contextlib
import fcntl
import ipaddress
import socket
import sys
import time
from collections.abc import Iterator
from typing import IO

import pytest

# PEP 578 events that start a process. subprocess.Popen covers subprocess.run, os.popen and
# asyncio's subprocesses; multiprocessing's spawn and forkserver start methods call
# _posixsubprocess.fork_exec directly and raise no event, so that function is wrapped below.
PROCESS_EVENTS = frozenset(
    ("subprocess.Popen", "os.fork", "os.forkpty", "os.exec", "os.posix_spawn", "os.spawn",
     "os.system")
)  # fmt: skip
SOCKET_EVENTS = frozenset(("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"))
NAME_EVENTS = frozenset(("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"))
LOOPBACK_NAMES = frozenset(("localhost", "localhost.localdomain", "ip6-localhost"))

_WATCHED = PROCESS_EVENTS | SOCKET_EVENTS | NAME_EVENTS


class LaneViolation(RuntimeError):
    """A test without ``@pytest.mark.integration`` tried to start a process or reach the
    network."""


class _Guard:
    """What the audit hook checks: the unmarked test running now (None: not watching), and
    the list its attempts go into."""

    item: pytest.Item | None = None
    attempts: list[str] = []  # noqa: RUF012 (replaced per test)

    @classmethod
    def attempt(cls, what: str) -> None:
        cls.attempts.append(what)
        raise LaneViolation(_message(cls.item, what))


_ATTEMPTS = pytest.StashKey[list[str]]()
_CPU_S = pytest.StashKey[float]()
# A pure test that computes this long is slow: the fast lane names it at its end. CPU time (of
# setup and call), not wall time, so that a loaded machine does not make every test "slow".
SLOW_CPU_S = 0.5


def _message(item: pytest.Item | None, what: str) -> str:
    name = item.nodeid if item is not None else "this test"
    return (
        f"{name} {what}: mark it integration (@pytest.mark.integration): the fast lane "
        "(-m 'not integration and not slow') runs no process and reaches no network "
        "(tests/lanes.py)"
    )


def _is_loopback(host: object) -> bool:
    if host is None:  # getaddrinfo(None, port): the local passive address, no lookup
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str) or not host:  # "" binds every interface
        return False
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False  # a name to resolve: a DNS query leaves the machine


def _audit(event: str, args: tuple) -> None:
    if _Guard.item is None or event not in _WATCHED:
        return
    if event in PROCESS_EVENTS:
        shown = args[1] if event == "subprocess.Popen" else args[0] if args else ""
        _Guard.attempt(f"started a process ({event} {str(shown)[:160]})")
    elif event in SOCKET_EVENTS:
        sock, address = args[0], args[1]
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(
            address[0] if isinstance(address, tuple) else address
        ):
            _Guard.attempt(f"opened a network socket outside loopback ({event} {address!r})")
    elif not _is_loopback(args[0]):
        _Guard.attempt(f"looked up a network name ({event} {args[0]!r})")


_fork_exec = _posixsubprocess.fork_exec


def _watched_fork_exec(*args, **kwargs):
    if _Guard.item is not None:
        _Guard.attempt(f"started a process (fork_exec {str(args[0])[:160]})")
    return _fork_exec(*args, **kwargs)


sys.addaudithook(_audit)  # hooks cannot be removed; _Guard.item None makes it a no-op
_posixsubprocess.fork_exec = _watched_fork_exec


@contextlib.contextmanager
def _watching(item: pytest.Item) -> Iterator[None]:
    if item.get_closest_marker("integration") is not None:
        yield
        return
    _Guard.item, _Guard.attempts = item, item.stash.setdefault(_ATTEMPTS, [])
    started_s = time.process_time()
    try:
        yield
    finally:
        _Guard.item = None
        item.stash[_CPU_S] = item.stash.get(_CPU_S, 0.0) + time.process_time() - started_s


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # One xdist group: the serial tests go to one worker and run back to back, so the others
    # stop once for all of them (--dist loadgroup), not once for each.
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("serial") is not None:
            item.add_marker(pytest.mark.xdist_group("serial"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _Alone.enter(item)
    try:
        yield
    finally:
        _Alone.leave(item, nextitem)


class _Alone:
    """Between the workers of one xdist session, a readers-writer lock that lets the writer
    in first: a ``serial`` test takes the gate, then the lock exclusively; any other test
    passes the gate and holds the lock shared while it runs. Once a serial test holds the
    gate no new test starts, and it runs as soon as the tests running now end; consecutive
    serial tests keep both. A pure test (no ``integration`` mark: the guard above keeps it to
    one thread of Python, no process) that finds the gate taken runs beside the serial tests
    once it gets the one place there (the ``serial.beside`` lock), or after them, whichever
    comes first. The files live in the session's temporary directory, shared by all its
    workers. Without xdist there is nothing to do."""

    held: tuple[IO[str], ...] | None = None  # the locks this worker holds: (gate, lock) …
    alone = False

    @classmethod
    def enter(cls, item: pytest.Item) -> None:
        if not hasattr(item.config, "workerinput"):
            return
        alone = item.get_closest_marker("serial") is not None
        if cls.held is not None:
            if cls.alone and alone:
                return  # the previous serial test kept them for this one
            cls._release()
        shared = item.config._tmp_path_factory.getbasetemp().parent
        gate, lock = open(shared / "serial.gate", "a"), open(shared / "serial.lock", "a")  # noqa: SIM115
        if not alone and item.get_closest_marker("integration") is None:
            cls.held, cls.alone = cls._pure(gate, lock, open(shared / "serial.beside", "a")), False  # noqa: SIM115
            return
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        cls.held, cls.alone = (gate, lock), alone

    @staticmethod
    def _pure(gate: IO[str], lock: IO[str], place: IO[str]) -> tuple[IO[str], ...]:
        """The locks a pure test runs under: the lock shared, like any other test, when no
        serial test holds the gate; else the one place beside the serial tests once it is
        free, or the lock once the gate opens, whichever comes first (flock cannot wait for
        two locks at once, so it asks every 20 ms)."""
        while True:
            try:
                fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    fcntl.flock(place, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    time.sleep(0.02)
                    continue
                gate.close()
                lock.close()
                return (place,)
            fcntl.flock(lock, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
            place.close()
            return gate, lock

    @classmethod
    def leave(cls, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        following = nextitem is not None and nextitem.get_closest_marker("serial") is not None
        if cls.held is not None and not (cls.alone and following):
            cls._release()

    @classmethod
    def _release(cls) -> None:
        assert cls.held is not None
        for handle in cls.held:
            handle.close()  # closing releases its flock
        cls.held = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _watching(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _watching(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    attempts = item.stash.get(_ATTEMPTS, [])
    if call.when in ("setup", "call") and attempts and not report.failed:
        # The code under test caught the LaneViolation (a broad except): fail all the same.
        report.outcome = "failed"
        report.longrepr = _message(item, attempts[0])
    if call.when == "call" and _CPU_S in item.stash:
        report.user_properties.append(("cpu_s", item.stash[_CPU_S]))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    heavy = sorted(
        (seconds, report.nodeid)
        for report in terminalreporter.stats.get("passed", [])
        if "slow" not in report.keywords
        for name, seconds in report.user_properties
        if name == "cpu_s" and seconds > SLOW_CPU_S
    )
    if heavy:
        terminalreporter.write_sep("=", f"pure tests over {SLOW_CPU_S} s of CPU: mark them slow")
        for seconds, nodeid in reversed(heavy):
            terminalreporter.write_line(f"{seconds:6.1f} s CPU  {nodeid}")
