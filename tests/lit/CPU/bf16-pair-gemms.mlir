// attn-bf16-pair-gemms: a GEMM of two widened bf16 operands sums k in pairs,
// the odd k first (vdpbf16ps's order). With AVX512-BF16 (and no AMX) B is
// packed into f32 slots of bf16 pairs and A read as bf16 (so is a GEMM of
// few rows anywhere: reading B bounds it); elsewhere both stay widened and
// are read at k = 2p + 1, then 2p. The bits are checked by
// LowPrecisionTest.cpp (Bf16PairGemm).
// RUN: attn-opt %s --split-input-file --attn-bf16-pair-gemms | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "x86_64", "cpu" = "cooperlake", "max_vector_op_width" = 512 : i64, "vector_registers" = 32 : i64, "fma" = true, "fma_units" = 2 : i64, "cache_line_size_in_bytes" = 64 : i64, "L1_cache_size_in_bytes" = 32768 : i64, "L2_cache_size_in_bytes" = 1048576 : i64, "features" = "avx2,avx512bf16,avx512f,avx512vl,fma">>} {
  // CHECK-DAG: #[[N_EVEN:.*]] = affine_map<(d0, d1) -> (d0, d1 * 2)>
  // CHECK-DAG: #[[N_ODD:.*]] = affine_map<(d0, d1) -> (d0, d1 * 2 + 1)>
  // CHECK-DAG: #[[SLOT:.*]] = affine_map<(d0, d1) -> (d1, d0)>
  // CHECK-DAG: #[[A_ODD:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, 1)>
  // CHECK-DAG: #[[A_EVEN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, 0)>
  // CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
  // CHECK-LABEL: func.func @slots
  // The weight [16, 8] -> [4, 16] slots of pairs: (w[n, 2p], w[n, 2p+1]).
  // CHECK: %[[SLOTS:.*]] = linalg.generic {indexing_maps = [#[[N_EVEN]], #[[N_ODD]], #[[SLOT]]]
  // CHECK-SAME: ins(%arg1, %arg1 : tensor<16x8xbf16>, tensor<16x8xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
  // CHECK: arith.shli
  // CHECK: arith.ori
  // CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [4, 4, 2] : tensor<4x8xbf16> into tensor<4x4x2xbf16>
  // CHECK: linalg.generic {indexing_maps = [#[[A_ODD]], #[[A_EVEN]], #[[B]], {{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
  // CHECK-SAME: ins(%[[X]], %[[X]], %[[SLOTS]] : tensor<4x4x2xbf16>, tensor<4x4x2xbf16>, tensor<4x16xf32>)
  // CHECK-SAME: attrs = {attn.bf16_pair_gemm}
  // The odd k first: its product is added to the accumulator, then the even.
  // CHECK: ^bb0(%[[ODD:.*]]: bf16, %[[EVEN:.*]]: bf16, %[[SLOT_IN:.*]]: f32, %[[C:.*]]: f32):
  // CHECK: %[[SUM:.*]] = arith.addf %[[C]], %{{.*}} : f32
  // CHECK: arith.addf %[[SUM]], %{{.*}} : f32
  // CHECK-NOT: linalg.matmul
  func.func @slots(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>) -> tensor<4x16xf32> {
    %e0 = tensor.empty() : tensor<4x8xf32>
    %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xbf16>) outs(%e0 : tensor<4x8xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<4x8xf32>
    %e1 = tensor.empty() : tensor<16x8xf32>
    %w32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<16x8xbf16>) outs(%e1 : tensor<16x8xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<16x8xf32>
    %e2 = tensor.empty() : tensor<8x16xf32>
    %wt = linalg.transpose ins(%w32 : tensor<16x8xf32>) outs(%e2 : tensor<8x16xf32>) permutation = [1, 0]
    %zero = arith.constant 0.0 : f32
    %e3 = tensor.empty() : tensor<4x16xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %y = linalg.matmul ins(%a, %wt : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }

  // Not bf16 on both sides (weight-only bf16: A is f32), or k odd: left alone.
  // CHECK-LABEL: func.func @left_alone
  // CHECK: linalg.matmul ins(%arg0, %{{.*}} : tensor<4x8xf32>, tensor<8x16xf32>)
  // CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x7xf32>, tensor<7x16xf32>)
  // CHECK-NOT: attn.bf16_pair_gemm
  func.func @left_alone(%x: tensor<4x8xf32>, %w: tensor<8x16xbf16>, %x7: tensor<4x7xbf16>, %w7: tensor<7x16xbf16>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
    %e1 = tensor.empty() : tensor<8x16xf32>
    %w32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xbf16>) outs(%e1 : tensor<8x16xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<8x16xf32>
    %zero = arith.constant 0.0 : f32
    %e3 = tensor.empty() : tensor<4x16xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x16xf32>) -> tensor<4x16xf32>
    %y = linalg.matmul ins(%x, %w32 : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
    %e4 = tensor.empty() : tensor<4x7xf32>
    %a7 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x7 : tensor<4x7xbf16>) outs(%e4 : tensor<4x7xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<4x7xf32>
    %e5 = tensor.empty() : tensor<7x16xf32>
    %b7 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w7 : tensor<7x16xbf16>) outs(%e5 : tensor<7x16xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<7x16xf32>
    %y7 = linalg.matmul ins(%a7, %b7 : tensor<4x7xf32>, tensor<7x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
    return %y, %y7 : tensor<4x16xf32>, tensor<4x16xf32>
  }
}

// -----

// Without the instruction (AVX2 here; AMX CPUs too, CpuSchedule::bf16Dot):
// the widened operands, read in pairs, the odd k first (from 8 rows,
// CpuSchedule::memoryBoundRows: the k steps, not reading B, bound them).
#id = affine_map<(d0, d1) -> (d0, d1)>
module attributes {dlti.target_system_spec = #dlti.target_system_spec<"CPU" = #dlti.target_device_spec<"arch" = "x86_64", "cpu" = "haswell", "max_vector_op_width" = 256 : i64, "vector_registers" = 16 : i64, "fma" = true, "fma_units" = 2 : i64, "cache_line_size_in_bytes" = 64 : i64, "L1_cache_size_in_bytes" = 32768 : i64, "L2_cache_size_in_bytes" = 262144 : i64, "features" = "avx,avx2,f16c,fma,sse2">>} {
  // CHECK-DAG: #[[A_ODD:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, 1)>
  // CHECK-DAG: #[[A_EVEN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, 0)>
  // CHECK-DAG: #[[B_ODD:.*]] = affine_map<(d0, d1, d2) -> (d2, 1, d1)>
  // CHECK-DAG: #[[B_EVEN:.*]] = affine_map<(d0, d1, d2) -> (d2, 0, d1)>
  // CHECK-LABEL: func.func @widened
  // CHECK: %[[A:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [8, 4, 2] : tensor<8x8xf32> into tensor<8x4x2xf32>
  // CHECK: %[[B:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [4, 2, 16] : tensor<8x16xf32> into tensor<4x2x16xf32>
  // CHECK: linalg.generic {indexing_maps = [#[[A_ODD]], #[[A_EVEN]], #[[B_ODD]], #[[B_EVEN]], {{.*}}]
  // CHECK-SAME: ins(%[[A]], %[[A]], %[[B]], %[[B]] :
  // CHECK-SAME: attrs = {attn.bf16_pair_gemm}
  // CHECK-NOT: linalg.matmul
  func.func @widened(%x: tensor<8x8xbf16>, %w: tensor<8x16xbf16>) -> tensor<8x16xf32> {
    %e0 = tensor.empty() : tensor<8x8xf32>
    %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<8x8xbf16>) outs(%e0 : tensor<8x8xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<8x8xf32>
    %e1 = tensor.empty() : tensor<8x16xf32>
    %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xbf16>) outs(%e1 : tensor<8x16xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<8x16xf32>
    %zero = arith.constant 0.0 : f32
    %e3 = tensor.empty() : tensor<8x16xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e3 : tensor<8x16xf32>) -> tensor<8x16xf32>
    %y = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x16xf32>) outs(%c : tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }

  // One row (a decode step's projection): bound by reading B, which stays
  // bf16 pairs in f32 slots, as with the instruction; A read as bf16.
  // CHECK-LABEL: func.func @memory_bound
  // CHECK: %[[SLOTS:.*]] = linalg.generic
  // CHECK-SAME: ins(%arg1, %arg1 : tensor<8x16xbf16>, tensor<8x16xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
  // CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [1, 4, 2] : tensor<1x8xbf16> into tensor<1x4x2xbf16>
  // CHECK: linalg.generic
  // CHECK-SAME: ins(%[[X]], %[[X]], %[[SLOTS]] : tensor<1x4x2xbf16>, tensor<1x4x2xbf16>, tensor<4x16xf32>)
  // CHECK-SAME: attrs = {attn.bf16_pair_gemm}
  func.func @memory_bound(%x: tensor<1x8xbf16>, %w: tensor<8x16xbf16>) -> tensor<1x16xf32> {
    %e0 = tensor.empty() : tensor<1x8xf32>
    %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1x8xbf16>) outs(%e0 : tensor<1x8xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<1x8xf32>
    %e1 = tensor.empty() : tensor<8x16xf32>
    %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<8x16xbf16>) outs(%e1 : tensor<8x16xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %0 = arith.extf %in : bf16 to f32
      linalg.yield %0 : f32
    } -> tensor<8x16xf32>
    %zero = arith.constant 0.0 : f32
    %e3 = tensor.empty() : tensor<1x16xf32>
    %c = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x16xf32>) -> tensor<1x16xf32>
    %y = linalg.matmul ins(%a, %b : tensor<1x8xf32>, tensor<8x16xf32>) outs(%c : tensor<1x16xf32>) -> tensor<1x16xf32>
    return %y : tensor<1x16xf32>
  }
}
