#!/usr/bin/env bash
# The test suite in its two lanes (the rule: tests/lanes.py, docs/internals.md § Tests):
#   scripts/test.sh          the full suite, as CI runs it: every test, in parallel workers
#   scripts/test.sh --fast   the pure tests only (-m "not integration and not slow"): under a
#                            minute, no process, broker, QEMU or compiler started
# IOTSB_TEST_WORKERS sets the number of parallel workers (default: two per core, one per core
# in the fast lane).
# Both run `ruff check` and `ruff format --check` first. Further arguments go to pytest (e.g.
# -k tls, --skip-slow, -n 0 for one process). With CI=true a test skipped because a part of
# the lab is missing fails instead (tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
cores=$(nproc)
# The full lane's tests wait on the lab (runs last their duration, processes start): two
# workers per core keep the cores busy through those waits. The fast lane computes: one.
lane=(-n "${IOTSB_TEST_WORKERS:-$((2 * cores))}" --dist loadgroup --durations=25)
if [ "${1:-}" = "--fast" ]; then
  shift
  lane=(-m "not integration and not slow" -n "${IOTSB_TEST_WORKERS:-$cores}" --durations=10)
fi
# Bytecode (and pytest's rewritten test modules) cached in __pycache__ between runs even where
# PYTHONDONTWRITEBYTECODE is set: otherwise every worker compiles the package and rewrites
# every test module again on each run, about 3.5 s of CPU per worker.
export PYTHONDONTWRITEBYTECODE=
.venv/bin/ruff check src tests benchmarks scripts
.venv/bin/ruff format --check src tests benchmarks scripts
.venv/bin/python -m pytest -q "${lane[@]}" "$@"
