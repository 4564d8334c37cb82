"""A full disk is the environment's problem (exit 3) wherever it strikes — creating the
database, recording the experiment, storing a run, writing the statistics or the report —
never "corrupt data" (exit 4) and never a traceback (docs/reliability.md #21)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# tmpfs sizes from too small for an empty database to enough for everything but the report
# of this experiment (about 5.7 MB in all): each lets the run get a little further.
SIZES_KB = (100, 1200, 3000, 4800, 5000)


def _run_on_a_disk_of(size_kb: int, mount: Path) -> subprocess.CompletedProcess[str]:
    script = (
        f"mount -t tmpfs -o size={size_kb}k tmpfs {mount} && exec {sys.executable} -m "
        "iotsecbench run --simulate --quiet --configs plain,tls1.2 --duration 15 --reps 2 "
        f"--out {mount}/out"
    )
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_a_full_disk_is_exit_3_in_one_line_wherever_it_strikes(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a small tmpfs needs root and unshare")
    struck = set()
    for size_kb in SIZES_KB:
        mount = tmp_path / f"disk-{size_kb}"
        mount.mkdir()
        result = _run_on_a_disk_of(size_kb, mount)
        if "mount:" in result.stderr:
            pytest.skip(f"cannot mount here: {result.stderr.strip()}")
        assert "Traceback" not in result.stderr, result.stderr
        if result.returncode == 0:
            continue
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 3 and len(lines) == 1, (size_kb, result.stderr)
        assert "no space left on device" in lines[0].lower(), lines[0]
        assert "db rebuild" not in lines[0]  # not reported as damage
        struck.add(lines[0].split(" while ")[1].split(" ")[0] if " while " in lines[0] else "")
    # It struck in more than one place (the database, a run, the statistics, the report).
    assert len(struck) >= 3, struck
