// attn-gpu-map-loops' block size must suit the hardware.
// RUN: attn-opt %s --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(attn-gpu-map-loops{block-size=48}))'

// expected-error @below {{attn-gpu-map-loops: block-size must be 0 (the target's) or a multiple of 32 in [32, 1024], not 48}}
func.func @bad_block_size() {
  return
}
