// attn-gpu-lower-bf16-mma lowers bf16 only as m16n8k16 with f32
// accumulators (what PTX's mma takes for bf16); anything else is a located
// error.
// RUN: attn-opt %s --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(attn-gpu-lower-bf16-mma))'

gpu.module @kernels {
  gpu.func @bf16_f16_accumulators(%a: vector<4x2xbf16>, %b: vector<2x2xbf16>, %c: vector<2x2xf16>, %out: memref<2x2xf16>) kernel {
    // expected-error @+1 {{on bf16 is lowered only as m16n8k16 with f32 accumulators}}
    %d = nvgpu.mma.sync (%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf16>) -> vector<2x2xf16>
    %c0 = arith.constant 0 : index
    vector.store %d, %out[%c0, %c0] : memref<2x2xf16>, vector<2x2xf16>
    gpu.return
  }
}
