// attn-lower-fused-attention with softmax-blocks=2: the online softmax
// steps over 2 key blocks of 4 at a time. A step's scores wait in PROBS
// (2 rows x 8 keys); then per row one max over both blocks, one alpha and
// one sum; then p @ v runs over the step's 8 keys with the output rows
// rescaled once. Tk = 10: one step of 8 keys, then the 2 leftover keys.
// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(attn-lower-fused-attention{row-block=2 key-block=4 softmax-blocks=2}))' | FileCheck %s

// CHECK-LABEL: func.func @steps
// CHECK-SAME: (%[[Q:.*]]: memref<1x2x4xf32>, %[[K:.*]]: memref<1x10x4xf32>, %[[V:.*]]: memref<1x10x4xf32>, %[[O:.*]]: memref<1x2x4xf32>)
func.func @steps(%q: memref<1x2x4xf32>, %k: memref<1x10x4xf32>, %v: memref<1x10x4xf32>, %o: memref<1x2x4xf32>) {
  // no valid_lens: every row sees a key, so no mean of v is kept (a row
  // with no visible key would get it)
  // CHECK: %[[KT:.*]] = memref.alloc() : memref<3x4x4xf32>
  // CHECK-NOT: memref.alloc() : memref<4xf32>
  // CHECK: %[[PROBS:.*]] = memref.alloc() : memref<2x8xf32>
  // steps up to the longest row: min(ceil(maxLen / 4), 2) blocks, / 2
  // blocks per step, at most 1 step of 8 keys
  // CHECK: %[[BLOCKS:.*]] = arith.minui %{{.*}}, %{{.*}} : index
  // CHECK: %[[HALF:.*]] = arith.divui %[[BLOCKS]], %{{.*}} : index
  // CHECK: %[[STEPS:.*]] = arith.minui %[[HALF]], %{{.*}} : index
  // CHECK: scf.for %[[STEP:.*]] = %{{.*}} to %[[STEPS]]
  // CHECK: %[[J0:.*]] = arith.muli %[[STEP]], %{{.*}} : index
  // for each register block of 2 rows, each of the step's 2 blocks: 2 rows
  // x 4 scores in registers, stored scaled and masked
  // CHECK: scf.for
  // CHECK: memref.load
  // CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
  // CHECK: %[[OFF:.*]] = arith.muli %[[T]], %{{.*}} : index
  // CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>)
  // CHECK: vector.load %[[KT]]
  // CHECK: vector.fma
  // CHECK: arith.select
  // CHECK: arith.select
  // CHECK: vector.store %{{.*}}, %[[PROBS]][%{{.*}}, %[[OFF]]]
  // CHECK: vector.store %{{.*}}, %[[PROBS]][%{{.*}}, %[[OFF]]]
  // row 0: one max over both blocks (a loop over the step's 8 keys, a
  // block of 4 at a time), their exps back into PROBS and their sum (a
  // second loop), one alpha
  // CHECK: %[[M:.*]] = scf.for %[[T1:.*]] = %c0{{(_[0-9]+)?}} to %c8{{(_[0-9]+)?}} step %c4{{(_[0-9]+)?}} iter_args(%[[MACC:.*]] = %{{.*}}) -> (vector<4xf32>)
  // CHECK: %[[S:.*]] = vector.load %[[PROBS]][%{{.*}}, %[[T1]]] : memref<2x8xf32>, vector<4xf32>
  // CHECK: arith.maxnumf %[[MACC]], %[[S]] fastmath<nnan,nsz> : vector<4xf32>
  // CHECK: vector.reduction <maxnumf>, %[[M]]
  // CHECK: scf.for %[[T2:.*]] = %c0{{(_[0-9]+)?}} to %c8{{(_[0-9]+)?}} step %c4{{(_[0-9]+)?}} iter_args
  // CHECK: vector.load %[[PROBS]][%{{.*}}, %[[T2]]]
  // CHECK: math.exp {{.*}} : vector<4xf32>
  // CHECK: vector.store {{.*}}, %[[PROBS]][%{{.*}}, %[[T2]]]
  // CHECK: arith.addf {{.*}} : vector<4xf32>
  // CHECK: math.exp {{.*}} : f32
  // CHECK-NOT: math.exp {{.*}} : f32
  // CHECK: vector.reduction <add>
  // row 1 likewise
  // CHECK: arith.maxnumf {{.*}} : vector<4xf32>
  // CHECK: math.exp {{.*}} : f32
  // p @ v over the step's 8 keys, each output row loaded and rescaled once
  // CHECK: vector.load %[[O]]
  // CHECK: vector.load %[[O]]
  // CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>)
  // CHECK: memref.load %[[PROBS]]
  // CHECK: memref.load %[[PROBS]]
  // CHECK: %[[KEY:.*]] = arith.addi %[[J0]], %[[J]] : index
  // CHECK: vector.load %[[V]][%{{.*}}, %[[KEY]], %{{.*}}]
  // CHECK: vector.store {{.*}}, %[[O]]
  // then whole blocks one at a time (none here: 2 blocks make one step),
  // and the 2 leftover keys if some row reaches them
  // CHECK: scf.for
  // CHECK: scf.if
  // CHECK: vector<2xf32>
  // finish: divide by the sum (or recompute exactly), never the mean
  // CHECK-NOT: arith.cmpi sle
  // CHECK: arith.cmpf olt
  // CHECK: arith.divf
  attn.fused_attention %q, %k, %v outs(%o) scale(0.5) : (memref<1x2x4xf32>, memref<1x10x4xf32>, memref<1x10x4xf32>, memref<1x2x4xf32>) -> ()
  return
}
