#!/usr/bin/env bash
# The test suite as CI runs it: lint and format checks, then pytest (extra arguments go to
# pytest, e.g. --skip-slow or -k tls). With CI=true a test skipped because a part of the lab
# is missing fails instead (tests/conftest.py).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check src tests benchmarks scripts
.venv/bin/ruff format --check src tests benchmarks scripts
.venv/bin/python -m pytest -q --durations=25 "$@"
