"""``run --capture`` inside the local executor: one packet capture per run, its key log, and
what the run's record says about it (lab/capture.py takes and finishes the capture)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from iotsecbench.errors import EnvironmentProblem
from iotsecbench.files import write_secret
from iotsecbench.lab import capture
from iotsecbench.lab.network import HOST_INTERFACE, NetworkLab


class RunCaptures:
    """The captures of one experiment's runs. Each run's agents log their secrets into the
    run's own key log (``capture.KEY_LOG_FILE``), which ends up inside the run's pcapng and,
    with ``--keylog FILE`` too, appended to FILE."""

    def __init__(self, experiment_key_log: Path | None) -> None:
        self._experiment_key_log = experiment_key_log
        self._tool = capture.tool_version() or "dumpcap"
        self._in_flight: dict[Path, capture.PacketCapture] = {}  # run directory → capture

    def key_log(self, run_dir: Path) -> Path:
        return run_dir / capture.KEY_LOG_FILE

    def prepare(self, run_dir: Path) -> None:
        """A fresh run: no files of an earlier attempt, an empty 0600 key log."""
        for name in (capture.CAPTURE_FILE, capture.RAW_FILE, capture.KEY_LOG_FILE):
            (run_dir / name).unlink(missing_ok=True)
        self._in_flight.pop(run_dir, None)
        write_secret(self.key_log(run_dir), b"")

    @staticmethod
    def site(port: int, tls: bool, mqtt: bool, network: NetworkLab | None) -> capture.CaptureSite:
        """The device's link: the emitter host's interface inside its namespace on an emulated
        network (it carries the emitter's traffic only), else loopback filtered to the run's
        ``port`` (both the emitter's and the receiver's connections to the broker)."""
        if network is not None:
            return capture.CaptureSite(
                HOST_INTERFACE,
                "",
                port,
                tls,
                mqtt,
                tuple(network.command("emitter", [])),
                label=f"{HOST_INTERFACE} of the emitter's namespace (the device's link)",
            )
        return capture.CaptureSite("lo", f"tcp port {port}", port, tls, mqtt, label="lo")

    @contextlib.contextmanager
    def recording(self, run_dir: Path, site: capture.CaptureSite) -> Iterator[None]:
        """dumpcap runs while the block runs (the agents' whole lives)."""
        with capture.PacketCapture(run_dir, site) as running:
            self._in_flight[run_dir] = running
            yield

    def finish(self, run_id: str, run_dir: Path, results_dir: Path) -> dict[str, Any]:
        """The run's pcapng written (also for a failed or interrupted run: it shows why), its
        key log appended to ``--keylog`` and removed; the record's ``capture`` entry."""
        running = self._in_flight.pop(run_dir, None)
        key_log = self.key_log(run_dir)
        if self._experiment_key_log is not None and key_log.exists():
            descriptor = os.open(self._experiment_key_log, os.O_WRONLY | os.O_APPEND)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(key_log.read_bytes())
        try:
            summary = capture.finish(running, results_dir, key_log, run_id, self._tool)
        except EnvironmentProblem as problem:
            # The measurement stands; dumpcap's file and the key log stay for a second try.
            return {"error": f"{problem} ({capture.RAW_FILE} and {capture.KEY_LOG_FILE} kept)"}
        key_log.unlink(missing_ok=True)
        if summary is None:
            return {"error": "no capture: the run ended before its agents started"}
        return summary.as_dict()
