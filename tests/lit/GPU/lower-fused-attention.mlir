// attn-gpu-lower-fused-attention: one parallel iteration per (entry x head,
// query row); the row's length from valid_lens (clamped, causal), keys
// walked up to it with vectors of the head width, D2L's -1e6 for the rest,
// and a second pass over every key when the row is empty or underflows.
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-gpu-lower-fused-attention))' \
// RUN:   | FileCheck %s

// CHECK-LABEL: func.func @heads
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK:         scf.parallel (%[[N:.*]], %[[I:.*]], %{{.*}}) = ({{.*}}) to (%[[C4]], %[[C64]], %{{.*}})
// CHECK:           %[[B:.*]] = arith.divui %[[N]], %{{.*}} : index
// CHECK:           %[[H:.*]] = arith.remui %[[N]], %{{.*}} : index
// CHECK:           %[[COL:.*]] = arith.muli %[[H]], %{{.*}} : index
// CHECK:           %[[HCOL:.*]] = arith.muli %[[H]], %{{.*}} : index
// CHECK:           %[[VCOL:.*]] = arith.addi %[[HCOL]], %{{.*}} : index
// CHECK:           %[[Q:.*]] = vector.load %{{.*}}[%[[B]], %[[I]], %[[COL]]] : memref<2x64x32xf32>, vector<16xf32>
// CHECK:           %[[RAW:.*]] = memref.load %{{.*}}[%[[B]]] : memref<2xi32>
// CHECK:           %[[LEN:.*]] = arith.minsi
// CHECK:           %[[CAUSAL:.*]] = arith.minsi %[[LEN]],
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %[[CAUSAL]] step %{{.*}} iter_args({{.*}}) -> (f32, f32, vector<16xf32>)
// CHECK:             vector.load %{{.*}}[%[[B]], %[[J]], %[[COL]]] : memref<2x64x32xf32>, vector<16xf32>
// CHECK:             vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<16xf32> into f32
// CHECK:             arith.cmpi slt, %[[J]], %[[CAUSAL]] : index
// CHECK:             arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK:             math.exp
// CHECK:             math.exp
// CHECK:             vector.fma
// CHECK:           arith.cmpi sle, %[[CAUSAL]], %{{.*}} : index
// CHECK:           arith.cmpf ole, %{{.*}}, %{{.*}} : f32
// CHECK:           scf.if %{{.*}} -> (f32, vector<16xf32>)
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[C64]]
// CHECK:           arith.divf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK:           vector.store %{{.*}}, %{{.*}}[%[[B]], %[[I]], %[[VCOL]]] : memref<2x64x32xf32>, vector<16xf32>
// CHECK-NOT:     attn.fused_attention
func.func @heads(%q: memref<2x64x32xf32>, %k: memref<2x64x32xf32>,
                 %v: memref<2x64x32xf32>, %vl: memref<2xi32>,
                 %o: memref<2x64x32xf32>) {
  attn.fused_attention %q, %k, %v valid_lens(%vl) outs(%o) causal heads(2)
      scale(2.500000e-01)
      : (memref<2x64x32xf32>, memref<2x64x32xf32>, memref<2x64x32xf32>,
         memref<2xi32>, memref<2x64x32xf32>) -> ()
  return
}

// A head of 128 values: two threads per row, 64 columns each, both with the
// whole query row.
// CHECK-LABEL: func.func @wide_head
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}, %[[S:.*]]) = ({{.*}}) to (%{{.*}}, %{{.*}}, %c2{{[_0-9]*}})
// CHECK:           %[[OFFSET:.*]] = arith.muli %[[S]], %c64{{[_0-9]*}} : index
// CHECK:           vector.load %{{.*}} : memref<3x16x128xf32>, vector<128xf32>
// CHECK:           scf.for {{.*}} -> (f32, f32, vector<64xf32>)
// CHECK:             vector.load %{{.*}} : memref<3x16x128xf32>, vector<64xf32>
// CHECK:           vector.store %{{.*}} : memref<3x16x128xf32>, vector<64xf32>
func.func @wide_head(%q: memref<3x16x128xf32>, %k: memref<3x16x128xf32>,
                     %v: memref<3x16x128xf32>, %o: memref<3x16x128xf32>) {
  attn.fused_attention %q, %k, %v outs(%o) scale(8.838835e-02)
      : (memref<3x16x128xf32>, memref<3x16x128xf32>, memref<3x16x128xf32>,
         memref<3x16x128xf32>) -> ()
  return
}
