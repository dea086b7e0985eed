#!/bin/sh
# A set-uid program that links a GPU object ignores ATTNC_CUDA_DRIVER
# (secure_getenv): whoever runs it must not choose the library it loads.
# Runs attnc-fake-driver-main set-uid to another user with the fake driver
# named: it must not be loaded (the call fails with "no CUDA driver" for
# libcuda.so.1, or runs on a real driver), where a plain run loads it.
#   SetuidDriverCheck.sh PROGRAM FAKE_DRIVER
# Exit 77 (skipped) unless run as root, which can make a set-uid program.
set -eu
program=$1
driver=$2
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to make a set-uid program"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cp "$program" "$dir/main"
chown 65534 "$dir/main"
chmod 4755 "$dir/main"
plain=$(ATTNC_CUDA_DRIVER=$driver "$program" host 0 2>&1 || true)
echo "plain: $plain"
echo "$plain" | grep -q "call 1: 0: ok" || { echo "FAIL: the fake driver did not load in a plain run"; exit 1; }
setuid=$(ATTNC_CUDA_DRIVER=$driver "$dir/main" host 0 2>&1 || true)
echo "set-uid: $setuid"
if echo "$setuid" | grep -q "call 1: 0: ok" && ! [ -e /dev/nvidiactl ]; then
  echo "FAIL: the set-uid program loaded the driver ATTNC_CUDA_DRIVER named"
  exit 1
fi
echo "$setuid" | grep -Eq "call 1: (-2: no CUDA driver/GPU: libcuda.so.1|0: ok)" || { echo "FAIL: unexpected output"; exit 1; }
echo ok
