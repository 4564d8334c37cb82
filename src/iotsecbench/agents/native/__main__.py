"""``python -m iotsecbench.agents.native``: build every native agent this machine can build
(scripts/setup.sh runs it; exit 3 when one cannot be built)."""

import sys

from iotsecbench.agents.native import main

sys.exit(main())
