// attn-gpu-emulate-launches runs nvgpu.mma.sync as the warp's tensor core
// computes it: lane l holds A's, B's and C's elements where PTX's "Matrix
// Fragments for mma.m16n8k16" puts them (with g = l / 4, t = l % 4: A's
// registers (g, 2t..2t+1), (g+8, 2t..), (g, 2t+8..), (g+8, 2t+8..); B's
// (2t..2t+1, g), (2t+8.., g); C's (g, 2t..2t+1), (g+8, 2t..)), spelled out
// here independently of attn/GPU/MmaFragments.h. A [16, 16] and B [16, 8]
// hold small integers (exact in bf16), C is 0.5 everywhere: D = A B + C
// exactly, printed as 16 rows of 8.
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-emulate-launches))' \
// RUN: | attn-opt --convert-vector-to-scf --convert-scf-to-cf --expand-strided-metadata \
// RUN:     --attn-expand-float-conversions --convert-vector-to-llvm \
// RUN:     --finalize-memref-to-llvm --convert-arith-to-llvm \
// RUN:     --convert-index-to-llvm --convert-cf-to-llvm --convert-func-to-llvm --convert-ub-to-llvm \
// RUN:     --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s

// CHECK: sizes = [16, 8]
// CHECK-NEXT: {{\[\[}}8.5, 18.5, -37.5, 27.5, -39.5, -18.5, -19.5, 56.5],
// CHECK-NEXT: [-3.5, -17.5, 45.5, -56.5, 83.5, -62.5, 55.5, -35.5],
// CHECK-NEXT: [36.5, 11.5, 63.5, -49.5, 24.5, 10.5, -25.5, 15.5],
// CHECK-NEXT: [-40.5, -11.5, -48.5, 35.5, -34.5, 5.5, 23.5, -24.5],
// CHECK-NEXT: [25.5, -34.5, -17.5, -22.5, 49.5, 0.5, 72.5, -64.5],
// CHECK-NEXT: [-64.5, 72.5, 0.5, 49.5, -22.5, -17.5, -34.5, 25.5],
// CHECK-NEXT: [-24.5, 23.5, 5.5, -34.5, 35.5, -48.5, -11.5, -40.5],
// CHECK-NEXT: [15.5, -25.5, 10.5, 24.5, -49.5, 63.5, 11.5, 36.5],
// CHECK-NEXT: [-35.5, 55.5, -62.5, 83.5, -56.5, 45.5, -17.5, -3.5],
// CHECK-NEXT: [56.5, -19.5, -18.5, -39.5, 27.5, -37.5, 18.5, 8.5],
// CHECK-NEXT: [-33.5, 22.5, 12.5, -19.5, -18.5, 48.5, -49.5, 72.5],
// CHECK-NEXT: [-6.5, -39.5, 4.5, 26.5, 26.5, 4.5, -39.5, -6.5],
// CHECK-NEXT: [72.5, -49.5, 48.5, -18.5, -19.5, 12.5, 22.5, -33.5],
// CHECK-NEXT: [8.5, 18.5, -37.5, 27.5, -39.5, -18.5, -19.5, 56.5],
// CHECK-NEXT: [-3.5, -17.5, 45.5, -56.5, 83.5, -62.5, 55.5, -35.5],
// CHECK-NEXT: [36.5, 11.5, 63.5, -49.5, 24.5, 10.5, -25.5, 15.5{{\]\]}}

func.func private @printMemrefF32(memref<*xf32>)

/// (x mod m) - h as a bf16, x an index.
func.func @small(%x: index, %m: index, %h: index) -> bf16 {
  %r = arith.remui %x, %m : index
  %s = arith.subi %r, %h : index
  %i = arith.index_cast %s : index to i32
  %f = arith.sitofp %i : i32 to f32
  %b = arith.truncf %f : f32 to bf16
  return %b : bf16
}

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c11 = arith.constant 11 : index
  %c13 = arith.constant 13 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %a = memref.alloca() : memref<16x16xbf16>
  %b = memref.alloca() : memref<16x8xbf16>
  %d = memref.alloca() : memref<16x8xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    scf.for %k = %c0 to %c16 step %c1 {
      // A[i][k] = (5 i + 3 k) mod 13 - 6
      %x0 = arith.muli %i, %c5 : index
      %x1 = arith.muli %k, %c3 : index
      %x = arith.addi %x0, %x1 : index
      %v = func.call @small(%x, %c13, %c6) : (index, index, index) -> bf16
      memref.store %v, %a[%i, %k] : memref<16x16xbf16>
    }
  }
  scf.for %k = %c0 to %c16 step %c1 {
    scf.for %n = %c0 to %c8 step %c1 {
      // B[k][n] = (2 k + 5 n) mod 11 - 5
      %x0 = arith.muli %k, %c2 : index
      %x1 = arith.muli %n, %c5 : index
      %x = arith.addi %x0, %x1 : index
      %v = func.call @small(%x, %c11, %c5) : (index, index, index) -> bf16
      memref.store %v, %b[%k, %n] : memref<16x8xbf16>
    }
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %g = arith.divui %tx, %c4 : index
    %t = arith.remui %tx, %c4 : index
    %g8 = arith.addi %g, %c8 : index
    %t2 = arith.muli %t, %c2 : index
    %t21 = arith.addi %t2, %c1 : index
    %t28 = arith.addi %t2, %c8 : index
    %t29 = arith.addi %t2, %c9 : index
    %a0 = memref.load %a[%g, %t2] : memref<16x16xbf16>
    %a1 = memref.load %a[%g, %t21] : memref<16x16xbf16>
    %a2 = memref.load %a[%g8, %t2] : memref<16x16xbf16>
    %a3 = memref.load %a[%g8, %t21] : memref<16x16xbf16>
    %a4 = memref.load %a[%g, %t28] : memref<16x16xbf16>
    %a5 = memref.load %a[%g, %t29] : memref<16x16xbf16>
    %a6 = memref.load %a[%g8, %t28] : memref<16x16xbf16>
    %a7 = memref.load %a[%g8, %t29] : memref<16x16xbf16>
    %fa = vector.from_elements %a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7 : vector<4x2xbf16>
    %b0 = memref.load %b[%t2, %g] : memref<16x8xbf16>
    %b1 = memref.load %b[%t21, %g] : memref<16x8xbf16>
    %b2 = memref.load %b[%t28, %g] : memref<16x8xbf16>
    %b3 = memref.load %b[%t29, %g] : memref<16x8xbf16>
    %fb = vector.from_elements %b0, %b1, %b2, %b3 : vector<2x2xbf16>
    %fc = arith.constant dense<0.5> : vector<2x2xf32>
    %fd = nvgpu.mma.sync (%fa, %fb, %fc) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
    %d0 = vector.extract %fd[0, 0] : f32 from vector<2x2xf32>
    %d1 = vector.extract %fd[0, 1] : f32 from vector<2x2xf32>
    %d2 = vector.extract %fd[1, 0] : f32 from vector<2x2xf32>
    %d3 = vector.extract %fd[1, 1] : f32 from vector<2x2xf32>
    memref.store %d0, %d[%g, %t2] : memref<16x8xf32>
    memref.store %d1, %d[%g, %t21] : memref<16x8xf32>
    memref.store %d2, %d[%g8, %t2] : memref<16x8xf32>
    memref.store %d3, %d[%g8, %t21] : memref<16x8xf32>
    gpu.terminator
  }
  %u = memref.cast %d : memref<16x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  return
}
