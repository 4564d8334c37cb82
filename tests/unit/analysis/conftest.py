import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "data" / "analysis"))


@pytest.fixture(params=["int", "generator"])
def seed(request):
    """Seeds as an int and as a Generator (arch's seed fixture)."""
    return 12345 if request.param == "int" else np.random.default_rng(12345)
