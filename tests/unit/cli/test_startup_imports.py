"""The CLI starts without the heavy stacks: they load in the commands that use them.

Not a timing assertion (benchmarks/bench_startup.sh measures the time): what a command
imports is deterministic, so a regression that puts pandas back on the start-up path fails
here whatever the machine's speed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# A fresh interpreter per probe: what start-up imports (tests/lanes.py).
pytestmark = pytest.mark.integration

HEAVY = ("pandas", "matplotlib", "arch", "scipy", "statsmodels", "duckdb", "Crypto")


def _loaded_after(code: str) -> list[str]:
    probe = (
        f"import sys, json\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_building_the_app_loads_no_heavy_stack() -> None:
    assert _loaded_after("from iotsecbench.cli.app import build_app\nbuild_app()") == []


def test_listing_schemes_loads_no_heavy_stack() -> None:
    code = (
        "import contextlib, io\nfrom iotsecbench.cli.app import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['schemes'])"
    )
    assert _loaded_after(code) == []
