#!/usr/bin/env bash
# Installs every system package that building and testing attnc needs.
# Idempotent: when everything is already installed it only checks and exits.
set -euo pipefail

packages=(
  cmake ninja-build python3
  # pkg-config, for the test of the installed attnc.pc and attnc_rt.pc.
  pkgconf
  # LLVM/MLIR 22: headers, libMLIR.so/libLLVM.so, mlir-tblgen, lit, FileCheck.
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
  # clang's sanitizer and libFuzzer runtimes (attnc-fuzz, sanitizer builds):
  # only *recommended* by clang-22, so --no-install-recommends leaves it out.
  libclang-rt-22-dev
  clang-format-22
  libgtest-dev libgmock-dev
  # AArch64 goldens (tests/e2e/cross): a cross gcc to link them, its libc
  # (only recommended by the gcc, so named here) and qemu-aarch64 to run them.
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  # The Python module (python/): Debian's Python 3.11 with its headers and
  # venv, in which the rest comes from PyPI (python/requirements.txt).
  python3-dev python3-venv
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The Python environment: .venv in the repository, made from Debian's
# python3 (not whatever python3 comes first on PATH), holding what
# python/requirements.txt pins; a stamp with the requirements' checksum
# makes a rerun skip pip. The build finds it (CMakePresets.json).
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
requirements="$root/python/requirements.txt"
stamp="$venv/.attnc-requirements"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  echo "setup: $venv up to date"
else
  echo "setup: making $venv (python/requirements.txt)"
  [[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  echo "$want" >"$stamp"
fi

# The Python module attnc, installed into it (pyproject.toml): this builds
# the module and the libraries it links in build/ (the default preset's
# directory, which the build then reuses), or only reinstalls once built.
echo "setup: installing the Python module attnc into $venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps "$root"
