"""Fixtures shared by the store tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    """A results directory that does not exist yet (the store creates it)."""
    return tmp_path / "results"
