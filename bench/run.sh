#!/usr/bin/env bash
# The benchmark in one command: set up the peers (bench/setup.sh), build
# attnc and attnc-compile-time, time everything, print one table.
#   bench/run.sh [--quick] [--update-doc] [--threads 1,2] [--cases ID,...]
#   bench/run.sh --decode [LENGTHS]   # bench/decode.py's table: gpt2 and
#                                     # llama, f32 and bf16, 1 and 2 threads
# Arguments go to bench/harness.py; SKIP_SETUP=1 skips bench/setup.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ ${SKIP_SETUP:-0} == 1 ]] || "$root/bench/setup.sh"
if [[ ${1:-} == --decode ]]; then
  # The decode step needs the Python module (the repository's .venv, as
  # the README's set-up and `ctest -R python:install` leave it); ONNX
  # Runtime runs in the bench venv that bench/setup.sh made.
  for model in gpt2 llama; do
    for dtype in f32 bf16; do
      for threads in 1 2; do
        "$root/.venv/bin/python" "$root/bench/decode.py" \
          --lengths "${2:-1024,8192}" --threads "$threads" \
          --model "$model" --dtype "$dtype"
      done
    done
  done
  exit 0
fi
exec python3 "$root/bench/harness.py" "$@"
