#!/usr/bin/env bash
# The benchmark in one command: set up the peers (bench/setup.sh), build
# attnc and attnc-compile-time, time everything, print one table.
#   bench/run.sh [--quick] [--update-doc] [--threads 1,2] [--cases ID,...]
# Arguments go to bench/harness.py; SKIP_SETUP=1 skips bench/setup.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ ${SKIP_SETUP:-0} == 1 ]] || "$root/bench/setup.sh"
exec python3 "$root/bench/harness.py" "$@"
