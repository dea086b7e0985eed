// attn-prepare-calls: after attn-split-prepare, each call of a split kernel
// whose params are the caller's own gets its region of the caller's packed
// buffer: the caller's _prepare fills it with the callee's _prepare, the
// call becomes one of the callee's _prepared with that slice. Calls with
// the same params share a region; a call whose param is not a param keeps
// calling the kernel (which prepares on every call).
// RUN: attn-opt %s --attn-split-prepare --attn-prepare-calls | FileCheck %s
// RUN: attn-opt %s --attn-split-prepare --attn-prepare-calls --symbol-dce | FileCheck %s --check-prefix=DCE

// A private kernel (a block only called by others) is split too, its parts
// private: 128 floats, W transposed.
// CHECK-LABEL: func.func private @layer(
// CHECK-SAME: attn.packed_elements = 128 : i64
// CHECK-LABEL: func.func private @layer_prepare(
// CHECK-SAME: -> (tensor<128xf32>, i32)
// CHECK-LABEL: func.func private @layer_prepared(
// CHECK-SAME: %{{.*}}: tensor<128xf32> {attn.name = "packed", bufferization.writable = false}

// The caller's own 256 floats (V transposed), then a region per distinct
// call (at 256 and 384); the kernel's call of _prepare gives the bigger
// buffer.
// CHECK-LABEL: func.func @top(
// CHECK-SAME: attn.packed_elements = 512 : i64
// CHECK: %[[P:.*]]:2 = call @top_prepare(%arg2, %arg3, %arg4) : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x16xf32>) -> (tensor<512xf32>, i32)
// CHECK: call @top_prepared(%arg0, %arg1, %arg2, %arg3, %arg4, %[[P]]#0)
// CHECK-LABEL: func.func @top_prepare(
// CHECK-SAME: -> (tensor<512xf32>, i32)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<512xf32>
// CHECK: %[[OWN:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0] [256] [1] : tensor<256xf32> into tensor<512xf32>
// CHECK: %[[A:.*]]:2 = call @layer_prepare(%arg0) : (tensor<16x8xf32>) -> (tensor<128xf32>, i32)
// CHECK: %[[IA:.*]] = tensor.insert_slice %[[A]]#0 into %[[OWN]][256] [128] [1]
// CHECK: %[[B:.*]]:2 = call @layer_prepare(%arg1)
// CHECK: %[[IB:.*]] = tensor.insert_slice %[[B]]#0 into %[[IA]][384]
// CHECK: return %[[IB]], %{{.*}} : tensor<512xf32>, i32
// CHECK-LABEL: func.func @top_prepared(
// CHECK-SAME: %[[PACKED:arg5]]: tensor<512xf32> {attn.name = "packed", bufferization.writable = false}
// CHECK: %[[SA:.*]] = tensor.extract_slice %[[PACKED]][256] [128] [1] : tensor<512xf32> to tensor<128xf32>
// CHECK: %[[Y1:.*]]:2 = call @layer_prepared(%arg0, %arg2, %[[SA]])
// CHECK: %[[SB:.*]] = tensor.extract_slice %[[PACKED]][384] [128] [1]
// CHECK: %[[Y2:.*]]:2 = call @layer_prepared(%{{.*}}, %arg3, %[[SB]])
// The same params as the first call: the same region.
// CHECK: %[[SA2:.*]] = tensor.extract_slice %[[PACKED]][256] [128] [1]
// CHECK: %[[Y3:.*]]:2 = call @layer_prepared(%{{.*}}, %arg2, %[[SA2]])
// A param computed per call (here: an input) is prepared by the call.
// CHECK: call @layer(%{{.*}}, %arg1)

// DCE: func.func private @layer(
// DCE-NOT: func.func private @layer(
func.func private @layer(%x: tensor<4x8xf32> {attn.name = "X", attn.role = "input"},
                         %w: tensor<16x8xf32> {attn.name = "W", attn.role = "param"})
    -> (tensor<4x16xf32>, i32) attributes {attn.dim_names = [], attn.dim_values = array<i64>} {
  %e = tensor.empty() : tensor<8x16xf32>
  %wt = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
  %z = tensor.empty() : tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c0 = arith.constant 0 : i32
  return %y, %c0 : tensor<4x16xf32>, i32
}

func.func @top(%x: tensor<4x8xf32> {attn.name = "X", attn.role = "input"},
               %i: tensor<16x8xf32> {attn.name = "In", attn.role = "input"},
               %wa: tensor<16x8xf32> {attn.name = "Wa", attn.role = "param"},
               %wb: tensor<16x8xf32> {attn.name = "Wb", attn.role = "param"},
               %v: tensor<16x16xf32> {attn.name = "V", attn.role = "param"})
    -> (tensor<4x16xf32>, i32) {
  %e = tensor.empty() : tensor<16x16xf32>
  %vt = linalg.transpose ins(%v : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) permutation = [1, 0]
  %h1:2 = call @layer(%x, %wa) : (tensor<4x8xf32>, tensor<16x8xf32>) -> (tensor<4x16xf32>, i32)
  %s1 = tensor.extract_slice %h1#0[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
  %h2:2 = call @layer(%s1, %wb) : (tensor<4x8xf32>, tensor<16x8xf32>) -> (tensor<4x16xf32>, i32)
  %s2 = tensor.extract_slice %h2#0[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
  %h3:2 = call @layer(%s2, %wa) : (tensor<4x8xf32>, tensor<16x8xf32>) -> (tensor<4x16xf32>, i32)
  %s3 = tensor.extract_slice %h3#0[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
  %h4:2 = call @layer(%s3, %i) : (tensor<4x8xf32>, tensor<16x8xf32>) -> (tensor<4x16xf32>, i32)
  %z = tensor.empty() : tensor<4x16xf32>
  %y = linalg.matmul ins(%h4#0, %vt : tensor<4x16xf32>, tensor<16x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  %c0 = arith.constant 0 : i32
  return %y, %c0 : tensor<4x16xf32>, i32
}
