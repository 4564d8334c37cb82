"""What a run costs the embedded broker: its CPU time and resident memory sampled from
``/proc`` at 10 Hz for the whole run (``samples`` rows of agent 'broker'), and for a fleet
its ``$SYS`` counters at the end (``host_counters`` rows of host 'broker', source '$SYS')."""

from __future__ import annotations

import itertools
import threading
from typing import Any

from iotsecbench.lab.broker import MosquittoBroker
from iotsecbench.measure.clock import now_ns
from iotsecbench.measure.memory import process_rss_bytes
from iotsecbench.measure.process import process_cpu_ns

SAMPLE_S = 0.1


class BrokerWatch:
    """A thread sampling the broker process while the run's agents work. Use as a context
    manager; ``result()`` afterwards is ``build_outcome``'s ``broker`` argument."""

    def __init__(self, broker: MosquittoBroker) -> None:
        self._broker = broker
        self._samples: list[dict[str, Any]] = []
        self._counters: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def __enter__(self) -> BrokerWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        if exc_info[0] is None:  # the agents finished: the broker's totals are complete
            self._counters = self._broker.sys_counters()

    def _sample_until_stopped(self) -> None:
        pid = self._broker.pid
        while pid is not None:
            cpu, rss = process_cpu_ns(pid), process_rss_bytes(pid)
            if cpu is None or rss is None:
                return  # the broker is gone: the run reports why
            self._samples.append(
                {"agent": "broker", "t_ns": now_ns(), "cpu_ns": cpu, "rss_bytes": rss}
            )
            if self._stop.wait(SAMPLE_S):
                return

    def result(self) -> dict[str, Any]:
        """The broker's figures (runs columns), samples and $SYS counters."""
        return {
            "figures": broker_figures(self._samples),
            "samples": list(self._samples),
            "counters": [
                {"host": "broker", "source": "$SYS", "name": name, "value": value}
                for name, value in self._counters.items()
            ],
        }


def broker_figures(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean and busiest-window CPU (% of one CPU) and peak memory over the samples."""
    if len(samples) < 2:
        return {}
    windows = [
        (b["cpu_ns"] - a["cpu_ns"]) / (b["t_ns"] - a["t_ns"]) * 100
        for a, b in itertools.pairwise(samples)
        if b["t_ns"] > a["t_ns"]
    ]
    first, last = samples[0], samples[-1]
    return {
        "broker_cpu_mean_percent": (last["cpu_ns"] - first["cpu_ns"])
        / (last["t_ns"] - first["t_ns"])
        * 100,
        "broker_cpu_peak_percent": max(windows) if windows else None,
        "broker_rss_peak_bytes": max(s["rss_bytes"] for s in samples),
    }
