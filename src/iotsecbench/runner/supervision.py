"""Watching a run's agents while they run: the silence watchdog and the failure that ends a
run (its message becomes the run's ``error``). Shared by the per-device agents
(runner/local.py) and the fleet agent (runner/fleet_agent.py)."""

from __future__ import annotations

import select
import time
from pathlib import Path

from iotsecbench.lab.broker import MosquittoBroker
from iotsecbench.lab.processes import Supervised

AGENT_SILENCE_S = 10.0  # docs/reliability.md #10: this long without a record = hung


class SilenceWatch:
    """Finds an agent that is alive but silent. A working agent writes a sample record at
    10 Hz and flushes each one (agents/records.py), so its file never stops growing for
    long; one that has not grown for ``AGENT_SILENCE_S`` belongs to a hung agent."""

    def __init__(
        self, agents: dict[str, tuple[Path, Supervised]], startup_s: float = AGENT_SILENCE_S
    ) -> None:
        self._agents: dict[str, tuple[Path, Supervised]] = {}
        self._seen: dict[str, tuple[int, float]] = {}  # name → file size, when it changed
        self._startup_s = startup_s  # how long an agent may take to write its first record
        for name, (path, process) in agents.items():
            self.add(name, path, process)

    def add(self, name: str, path: Path, process: Supervised) -> None:
        """Watch one more agent, from now."""
        self._agents[name] = (path, process)
        self._seen[name] = (-1, time.monotonic())

    def silent(self, now: float) -> str | None:
        """The running agent that has been silent too long, or None (a finished agent
        has nothing more to say)."""
        for name, (path, process) in self._agents.items():
            if process.poll() is not None:
                continue
            try:
                size = path.stat().st_size
            except OSError:
                size = -1  # not created yet: the clock runs for a start-up hang
            last_size, since = self._seen[name]
            allowed = self._startup_s if last_size <= 0 else AGENT_SILENCE_S
            if size != last_size:
                self._seen[name] = (size, now)
            elif now - since > allowed:
                return name
        return None


class RunFailure(Exception):
    """A run could not complete; the message becomes the run's ``error``."""


def said_ready(agent: Supervised, timeout_s: float) -> bool:
    """Whether ``agent`` printed READY on its stdout within ``timeout_s`` (False as soon as it
    exits or closes its stdout without)."""
    assert agent.process is not None and agent.process.stdout is not None
    stream = agent.process.stdout
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        readable, _, _ = select.select([stream], [], [], 0.1)
        if readable:
            line = stream.readline()
            if line.strip() == b"READY":
                return True
            if not line:
                return False
        if agent.poll() is not None:
            return False
    return False


def check_running(watch: SilenceWatch, broker: MosquittoBroker | None) -> None:
    """The watchdogs every supervision loop runs: an agent alive but silent too long, or the
    embedded broker gone, fails the run."""
    hung = watch.silent(time.monotonic())
    if hung is not None:
        raise RunFailure(
            f"{hung} wrote nothing for {AGENT_SILENCE_S:.0f} s "
            "(watchdog: alive but hung); processes killed"
        )
    if broker is not None and not broker.alive():
        raise RunFailure(f"broker exited ({broker.exit_description()})")
