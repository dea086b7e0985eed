#!/usr/bin/env bash
# Installs what bench/harness.py's peers need; idempotent, never needed by
# the test suite.
#   - Debian: python3-torch, python3-numpy, and libopenblas0-openmp (without
#     it Debian's torch and numpy use libblas.so.3 = netlib reference BLAS,
#     ~3 GFLOP/s, and every PyTorch number is meaningless);
#   - PyPI (bench/requirements.txt): torch, onnxruntime, onnx, numpy, gguf
#     and llama-cpp-python in the venv build/bench-venv (or
#     $ATTNC_BENCH_VENV); llama-cpp-python builds llama.cpp from source for
#     this CPU (about 6 minutes on 2 cores).
# A PyPI package that cannot be installed (no network, no wheel) is only a
# warning: the harness then reports that peer as "not available: ...".
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${ATTNC_BENCH_VENV:-$root/build/bench-venv}

packages=(python3-torch python3-numpy python3-venv libopenblas0-openmp)
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bench/setup.sh: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q &&
    "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends \
      "${missing[@]}" || echo "bench/setup.sh: warning: apt-get failed"
fi

if [[ ! -x $venv/bin/python ]]; then
  /usr/bin/python3 -m venv "$venv" || {
    echo "bench/setup.sh: warning: cannot create $venv"; exit 0; }
fi
# One package at a time, those not importable yet, so that one missing
# wheel does not block the rest.
while read -r pkg; do
  [[ -z $pkg || $pkg == \#* ]] && continue
  module=${pkg//-/_}
  [[ $pkg == llama-cpp-python ]] && module=llama_cpp
  "$venv/bin/python" -c "import $module" 2>/dev/null && continue
  "$venv/bin/python" -m pip install -q "$pkg" ||
    echo "bench/setup.sh: warning: pip install $pkg failed"
done <"$root/bench/requirements.txt"
echo "bench/setup.sh: $venv has the peers that could be installed"
exit 0
