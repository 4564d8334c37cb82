"""Running code as on a machine where a module cannot be imported (an optional C extension
that was not built): in a fresh interpreter, so the blocked module is never half-loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_with_import_blocked(module: str, code: str) -> str:
    """``code``'s standard output, run with ``module`` unimportable; it must exit 0."""
    blocked = f"import sys; sys.modules[{module!r}] = None\n"
    completed = subprocess.run(
        [sys.executable, "-c", blocked + code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout
