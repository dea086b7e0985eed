// attn-gpu-emulate-launches runs gpu.shuffle as convert-gpu-to-nvvm's
// shfl.sync does (clamped to lanes below `width`): lane k of a warp (32
// consecutive threads) reads the value of lane k ^ o (xor), k + o (down),
// k - o (up) or o (idx); a source lane at or past `width`, below 0, or past
// the block's last thread gives the thread's own value and `valid` false.
// Each thread's value is its thread id; a block of 40 threads is a full
// warp and a warp of 8.
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-emulate-launches))' \
// RUN: | attn-opt --convert-scf-to-cf --expand-strided-metadata \
// RUN:     --finalize-memref-to-llvm --convert-arith-to-llvm \
// RUN:     --convert-index-to-llvm --convert-cf-to-llvm --convert-func-to-llvm \
// RUN:     --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:     -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s

// CHECK: sizes = [6, 40]
// xor 1:
// CHECK-NEXT: {{\[\[}}1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 17, 16, 19, 18, 21, 20, 23, 22, 25, 24, 27, 26, 29, 28, 31, 30, 33, 32, 35, 34, 37, 36, 39, 38],
// down 3:
// CHECK-NEXT: [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 29, 30, 31, 35, 36, 37, 38, 39, 37, 38, 39],
// up 2:
// CHECK-NEXT: [0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 32, 33, 32, 33, 34, 35, 36, 37],
// idx 5:
// CHECK-NEXT: [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 37, 37, 37, 37, 37, 37, 37, 37],
// xor 16, width 16:
// CHECK-NEXT: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 32, 33, 34, 35, 36, 37, 38, 39],
// down 3's valid:
// CHECK-NEXT: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0{{\]\]}}

func.func private @printMemrefI32(memref<*xi32>)

func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c40 = arith.constant 40 : index
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %three = arith.constant 3 : i32
  %five = arith.constant 5 : i32
  %sixteen = arith.constant 16 : i32
  %width = arith.constant 32 : i32
  %out = memref.alloca() : memref<6x40xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c40, %sy = %c1, %sz = %c1) {
    %id = arith.index_cast %tx : index to i32
    %x, %vx = gpu.shuffle xor %id, %one, %width : i32
    memref.store %x, %out[%c0, %tx] : memref<6x40xi32>
    %d, %vd = gpu.shuffle down %id, %three, %width : i32
    memref.store %d, %out[%c1, %tx] : memref<6x40xi32>
    %u, %vu = gpu.shuffle up %id, %two, %width : i32
    memref.store %u, %out[%c2, %tx] : memref<6x40xi32>
    %i, %vi = gpu.shuffle idx %id, %five, %width : i32
    memref.store %i, %out[%c3, %tx] : memref<6x40xi32>
    // Lanes 16..31 read lane k ^ 16 < 16 of a 16-lane width; 0..15 do not.
    %h, %vh = gpu.shuffle xor %id, %sixteen, %sixteen : i32
    memref.store %h, %out[%c4, %tx] : memref<6x40xi32>
    %valid = arith.extui %vd : i1 to i32
    memref.store %valid, %out[%c5, %tx] : memref<6x40xi32>
    gpu.terminator
  }
  %all = memref.cast %out : memref<6x40xi32> to memref<*xi32>
  call @printMemrefI32(%all) : (memref<*xi32>) -> ()
  return
}
