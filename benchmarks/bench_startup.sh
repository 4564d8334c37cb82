#!/bin/sh
# Start-up time of the CLI (not a test): wall time of the commands a user types first, and
# which imports they pay. The commands must not import the analysis stack, pandas or
# matplotlib; `python -X importtime` shows what each one loads.
#
#   sh benchmarks/bench_startup.sh [BEFORE_SRC]
#
# With BEFORE_SRC (the src/ of another checkout), each command is timed A/B against that
# code, paired, on one pinned CPU (farm-bench), so the ratio survives the machine's drift.
set -eu
cd "$(dirname "$0")/.."
python=.venv/bin/python
for command in "--help" "schemes" "doctor" "--bogus-option"; do
    echo "== iotsecbench $command"
    if [ $# -ge 1 ]; then
        farm-bench -n 7 --pin 1 --vs "$python -m iotsecbench $command" -- \
            env PYTHONPATH="$1" $python -m iotsecbench $command | grep -i wall
    else
        farm-bench -n 7 --pin 1 -- $python -m iotsecbench $command | grep -i wall
    fi
    # The slowest top-level imports of this command (microseconds, cumulative).
    $python -X importtime -m iotsecbench $command 2>&1 >/dev/null |
        awk -F'|' '$3 ~ /^ [^ ]/ {print $2 "|" $3}' | sort -rn | head -5
done
