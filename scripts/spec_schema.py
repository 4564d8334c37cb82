"""Print the JSON schema of the experiment spec.

Usage: python scripts/spec_schema.py > docs/experiment-spec.schema.json
"""

import json

from iotsecbench.spec.models import ExperimentSpec

print(json.dumps(ExperimentSpec.model_json_schema(), indent=2))
