"""``python -m iotsecbench.agents.native``: build every native agent this machine can build,
the per-device agents and the fleet agents (scripts/setup.sh runs it; exit 3 when one cannot
be built)."""

import sys

from iotsecbench.agents.native import fleet, main

sys.exit(max(main(), fleet.build_all()))
