"""The published JSON schema of the spec matches the models."""

import json
from pathlib import Path

from iotsecbench.spec.models import ExperimentSpec

SCHEMA = Path(__file__).resolve().parents[3] / "docs" / "experiment-spec.schema.json"


def test_published_schema_is_current() -> None:
    assert json.loads(SCHEMA.read_text()) == ExperimentSpec.model_json_schema(), (
        "regenerate: python scripts/spec_schema.py > docs/experiment-spec.schema.json"
    )
