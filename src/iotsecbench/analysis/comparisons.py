"""Comparisons between configurations and the runs-as-units energy comparison (stage 4b of
the pipeline), plain or paired by block: a repetition, or the machine that measured the runs
(``AnalysisOptions.block_on``, docs/analysis.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from iotsecbench.analysis.bootstrap import (
    BootstrapDifference,
    iid_bootstrap_contrast,
    iid_bootstrap_difference,
    keyed_generator,
)
from iotsecbench.analysis.checks import QualityWarning, WarningKind
from iotsecbench.analysis.effects import cohens_d
from iotsecbench.analysis.metrics import CHARGE
from iotsecbench.analysis.results import Comparison
from iotsecbench.errors import SpecError

BLOCKINGS = ("none", "repetition", "worker")
HISTOGRAM_BINS = 40


def _histogram(replicates: np.ndarray) -> dict[str, list[float]]:
    counts, edges = np.histogram(replicates, bins=HISTOGRAM_BINS)
    return {"counts": counts.tolist(), "edges": edges.tolist()}


def run_blocks(current: pd.DataFrame, block_on: str) -> dict[tuple[str, Any], Any]:
    """(configuration, run) → the block the run belongs to (``block_on``: one of BLOCKINGS;
    "worker" reads the frame's ``worker`` column)."""
    if block_on == "none":
        return {}
    keys = current[["configuration", "run"]].drop_duplicates()
    if block_on == "repetition":
        return {(str(c), r): r for c, r in keys.itertuples(index=False)}
    if "worker" not in current.columns:
        raise SpecError("--block-on worker needs where each run ran: analyse a results directory")
    workers = current.groupby(["configuration", "run"])["worker"].first()
    return {(str(c), r): worker for (c, r), worker in workers.items()}


def energy_comparisons(
    energy: Mapping[tuple[str, str], Mapping[Any, float]],
    configurations: Sequence[str],
    bootstrap: tuple[int, float, int],
    blocks: tuple[str, Mapping[tuple[str, Any], Any]] = ("none", {}),
) -> tuple[list[Comparison], list[QualityWarning]]:
    """Stage 4b: per-run cumulative charge, runs being the independent units (i.i.d.
    bootstrap over runs; pairs with fewer than two runs on a side are skipped). ``bootstrap``:
    replicates, confidence level, seed. Blocked (``blocks``: the blocking's name and the
    ``run_blocks`` mapping), the difference is taken within each block both configurations
    ran in (their run means there) and the bootstrap is over those blocks, so what differs
    between blocks — a faster machine, a warmer hour — cancels. A pair sharing fewer than
    two blocks has no interval: it is left out with a warning saying so."""
    reps, level, seed = bootstrap
    block_on, block_of = blocks
    result: list[Comparison] = []
    warnings: list[QualityWarning] = []
    for device in dict.fromkeys(device for _, device in energy):
        present = [c for c in configurations if (c, device) in energy]
        for j, b in enumerate(present):
            for a in present[j + 1 :]:
                va = np.array(list(energy[(a, device)].values()))
                vb = np.array(list(energy[(b, device)].values()))
                if va.size < 2 or vb.size < 2:
                    continue
                generator = keyed_generator(seed, CHARGE, device, a, b)
                if block_of:
                    differences = _block_differences(
                        energy[(a, device)], energy[(b, device)], a, b, block_of
                    )
                    if len(differences) < 2:  # no interval to give
                        warnings.append(
                            QualityWarning(
                                WarningKind.TOO_FEW_SHARED_BLOCKS,
                                f"{a} against {b} share {len(differences)} {block_on} "
                                "block(s): their energy is not compared",
                                {"configuration": a, "device": device, "metric": CHARGE},
                                {"shared_blocks": len(differences), "block_on": block_on},
                            )
                        )
                        continue
                    boot = iid_bootstrap_contrast((differences,), (1.0,), reps, level, generator)
                    boot = dataclasses.replace(
                        boot, method=f"paired-{block_on}s ({len(differences)} blocks)"
                    )
                else:
                    boot = iid_bootstrap_difference(va, vb, reps, level, generator)
                result.append(comparison_row(CHARGE, device, a, b, va, vb, boot))
    return result, warnings


def _block_differences(
    runs_a: Mapping[Any, float],
    runs_b: Mapping[Any, float],
    a: str,
    b: str,
    run_blocks: Mapping[tuple[str, Any], Any],
) -> np.ndarray:
    """mean(a) − mean(b) within each block that holds runs of both."""
    by_block: dict[Any, tuple[list[float], list[float]]] = {}
    for runs, name, side in ((runs_a, a, 0), (runs_b, b, 1)):
        for run, value in runs.items():
            block = run_blocks.get((name, run))
            if block is not None:
                by_block.setdefault(block, ([], []))[side].append(value)
    return np.array(
        [np.mean(va) - np.mean(vb) for va, vb in by_block.values() if va and vb], dtype=float
    )


def comparison_row(
    metric: str,
    device: str,
    a: str,
    b: str,
    values_a: np.ndarray,
    values_b: np.ndarray,
    boot: BootstrapDifference,
) -> Comparison:
    """One row of the comparisons table: means, the bootstrap interval, Cohen's d."""
    effect = cohens_d(values_a, values_b)
    return Comparison(
        metric=metric,
        device=device,
        a=a,
        b=b,
        mean_a=float(values_a.mean()),
        mean_b=float(values_b.mean()),
        difference=boot.estimate,
        interval=boot.interval,
        significant=boot.significant,
        cohens_d=effect.d,
        effect=effect.label,
        method=boot.method,
        block_length=boot.block_length,
        reps=boot.reps,
        n_a=int(values_a.size),
        n_b=int(values_b.size),
        replicate_histogram=_histogram(boot.replicates),
    )
