#!/usr/bin/env bash
# Installs every system package that building and testing attnc needs.
# Idempotent: when everything is already installed it only checks and exits.
set -euo pipefail

packages=(
  cmake ninja-build python3
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
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
