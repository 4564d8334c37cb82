"""Benchmark: what the model's range (the profile's Monte Carlo, analysis.model_range) adds
to ``iotsecbench analyze`` on a results directory (not a test).

Times ``workflows.postprocess.run_analyze`` end to end — reading the store, the analysis,
writing analysis.json — and inside it the draws (``runner.model_draws.model_draws``: the
store's activity read, every run's mean current on 1000 draws of its profile) and the
comparisons' ranges (``analysis.model_range.model_stage``); best of ``--repeat``.

    .venv/bin/iotsecbench run --simulate --configs plain,tls1.2,ecdh-p256-aes128-gcm,tls1.3 \\
        --duration 300 --rate 5 --reps 5 --seed 3 --out /tmp/study --quiet --no-report
    .venv/bin/python benchmarks/bench_model_range.py /tmp/study [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from iotsecbench.analysis import pipeline
from iotsecbench.analysis.pipeline import AnalysisOptions
from iotsecbench.runner import model_draws as draws_module
from iotsecbench.workflows import postprocess


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args()
    spent = {"draws": 0.0, "stage": 0.0}

    def timed(key, function):  # type: ignore[no-untyped-def]
        def wrapper(*a, **k):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                spent[key] += time.perf_counter() - start

        return wrapper

    draws_module.model_draws = timed("draws", draws_module.model_draws)
    pipeline.model_stage = timed("stage", pipeline.model_stage)
    results = []
    out = args.results / "analysis-bench.json"
    for _ in range(args.repeat):
        spent.update(draws=0.0, stage=0.0)
        start = time.perf_counter()
        postprocess.run_analyze(
            args.results, None, None, AnalysisOptions(model_draws=args.draws), out, "modelled"
        )
        results.append((time.perf_counter() - start, spent["draws"], spent["stage"]))
    out.unlink(missing_ok=True)
    total, drawn, stage = min(results)
    model = drawn + stage
    print(f"analyze total best {total:.2f} s (all: {', '.join(f'{r[0]:.2f}' for r in results)})")
    print(f"  profile draws {drawn:.2f} s, model stage {stage:.3f} s")
    print(f"  the model's range adds {model:.2f} s: {100 * model / (total - model):.1f} % "
          "over the analysis without it")  # fmt: skip


if __name__ == "__main__":
    main()
