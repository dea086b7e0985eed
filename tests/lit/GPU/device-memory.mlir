// attn-gpu-device-memory: buffers become gpu.alloc (freed before the
// return, after the last launch), every GPU op is chained on one stream
// from a `gpu.wait async` at entry, a constant used in a launch moves into
// it, and a host read of a device value is a copy back and a wait.
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-device-memory))' \
// RUN:   | FileCheck %s

memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

// CHECK-LABEL: func.func @kernel
// CHECK:         %[[T0:.*]] = gpu.wait async
// CHECK:         %[[BUF:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] () : memref<4xf32>
// CHECK:         %[[T2:.*]] = gpu.launch async [%[[T1]]]
// CHECK:           memref.get_global @table : memref<4xf32>
// CHECK:           gpu.terminator
// CHECK:         %[[STATUS:.*]], %[[T3:.*]] = gpu.alloc async [%[[T2]]] () : memref<i32>
// CHECK:         %[[T4:.*]] = gpu.launch async [%[[T3]]]
// CHECK:         %[[HOST:.*]] = memref.alloca() : memref<i32>
// CHECK:         %[[T5:.*]] = gpu.memcpy async [%[[T4]]] %[[HOST]], %[[STATUS]] : memref<i32>, memref<i32>
// CHECK:         gpu.wait [%[[T5]]]
// CHECK:         memref.load %[[HOST]][] : memref<i32>
// CHECK:         %[[T6:.*]] = gpu.wait async
// CHECK:         %[[T7:.*]] = gpu.dealloc async [%[[T6]]] %[[STATUS]] : memref<i32>
// CHECK:         %[[T8:.*]] = gpu.dealloc async [%[[T7]]] %[[BUF]] : memref<4xf32>
// CHECK-NOT:     gpu.wait
// CHECK:         return
func.func @kernel(%out: memref<4xf32>) -> i32 {
  %c1 = arith.constant 1 : index
  %table = memref.get_global @table : memref<4xf32>
  %buf = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  %t0 = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                         threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %v = memref.load %table[%c0] : memref<4xf32>
    memref.store %v, %buf[%c0] : memref<4xf32>
    memref.store %v, %out[%c0] : memref<4xf32>
    gpu.terminator
  }
  %status = memref.alloc() : memref<i32>
  %t1 = gpu.launch async blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                         threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %z = arith.constant 0 : i32
    memref.store %z, %status[] : memref<i32>
    gpu.terminator
  }
  %s = memref.load %status[] : memref<i32>
  memref.dealloc %buf : memref<4xf32>
  return %s : i32
}
