"""Tally of what interrupting a sweep costs (issue: hardening): kill -9 of the runner at five
moments, and SIGINT and SIGTERM at ten moments each (start-up, mid-run and just after each
run's record.json, analysis, report). For every trial: did the runner exit as documented (130
for a signal, one line, no traceback), how many finished runs ``run --resume --out DIR`` had
to measure again (lost), and how many processes or namespaces were left behind.

    python benchmarks/signal_tally.py [--network wifi] [--only SIGINT]

Needs mosquitto (scripts/setup.sh); --network needs root. Takes 15-25 minutes.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.interrupts import MOMENTS, SIGNALS, Trial, interrupt

KILL_MOMENTS = (
    "before the first handshake",
    "mid-run 2",
    "after record 2",
    "during analysis",
    "during the report",
)
SIGNAL_MOMENTS = tuple(m for m in MOMENTS if m not in ("before the first handshake",))[:10]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", help="run the sweep over this emulated network profile")
    parser.add_argument("--only", choices=list(SIGNALS.values()), help="one signal only")
    options = parser.parse_args()
    args = ["--configs", "plain,tls1.2", "--duration", "2", "--reps", "2"]
    if options.network:
        args += ["--network", options.network]
    plan = [(m, signal.SIGKILL) for m in KILL_MOMENTS]
    plan += [(m, s) for s in (signal.SIGINT, signal.SIGTERM) for m in SIGNAL_MOMENTS]
    if options.only:
        plan = [(m, s) for m, s in plan if SIGNALS[s] == options.only]
    trials: list[Trial] = []
    header = (
        f"{'signal':8} {'moment':28} {'reached':7} {'exit':>5} {'lines':>5} {'tb':>3} "
        f"{'left':>4} {'ok':>3} {'lost':>4} {'resume':>6} {'left':>4} {'netns':>5}"
    )
    print(header, flush=True)
    for moment, signum in plan:
        with tempfile.TemporaryDirectory(prefix="iotsb-tally-") as directory:
            trial = interrupt(Path(directory) / "out", args, 4, moment, signum)
        trials.append(trial)
        print(
            f"{SIGNALS[signum]:8} {moment:28} {trial.reached!s:7} {trial.exit_code:>5} "
            f"{trial.stderr_lines:>5} {'yes' if trial.traceback else 'no':>3} "
            f"{trial.left_after_signal:>4} {trial.ok_before:>3} {trial.lost:>4} "
            f"{trial.resume_exit:>6} {trial.left_after_resume:>4} {trial.namespaces_left:>5}",
            flush=True,
        )
    for name in sorted({SIGNALS[t.signum] for t in trials}):
        mine = [t for t in trials if SIGNALS[t.signum] == name]
        expected_exit = -9 if name == "SIGKILL" else 130
        print(
            f"{name}: {len(mine)} trials, {sum(t.reached for t in mine)} reached their moment; "
            f"finished runs lost {sum(t.lost for t in mine)} of {sum(t.ok_before for t in mine)}; "
            f"processes left {sum(t.left_after_signal + t.left_after_resume for t in mine)}; "
            f"namespaces left {max((t.namespaces_left for t in mine), default=0)}; "
            f"tracebacks {sum(t.traceback for t in mine)}; "
            f"not exactly one line on stderr "
            f"{sum(t.stderr_lines != 1 for t in mine) if name != 'SIGKILL' else 'n/a'}; "
            f"exits other than {expected_exit} (or 0, finished first) "
            f"{sum(t.exit_code not in (expected_exit, 0) for t in mine)}; "
            f"resumes failed {sum(t.resume_exit != 0 for t in mine)}"
        )


if __name__ == "__main__":
    main()
