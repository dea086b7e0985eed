// A state of hand-written IR is updated in place: its result returns the
// state argument, or the cache an attn.multihead_attention with it as its
// cache wrote, read by nothing after that op. Otherwise one-shot
// bufferization updates a copy, which attnc reported as its own failure
// (exit 2, an internal error); now each is the user's, located. The ops the
// passes make are not written by hand, and a body is one block.
// RUN: not attnc %s --emit=header 2>&1 | FileCheck %s --implicit-check-not=error:

func.func @copy(%x: tensor<2x8xf32> {attn.name = "X", attn.role = "input"},
                %c: tensor<2x8xf32> {attn.name = "C", attn.role = "state"})
    -> (tensor<2x8xf32> {attn.name = "Y"},
        tensor<2x8xf32> {attn.name = "C", attn.updates = 1 : i64}) {
  %0 = attn.relu %c : tensor<2x8xf32>
// CHECK-DAG: attn-ir-states.mlir:[[@LINE+1]]:3: error: result #1 of 'copy' (attn.updates = 1) returns neither state argument #1 nor the cache an attn.multihead_attention with it as its cache wrote: a state is updated in place
  return %x, %0 : tensor<2x8xf32>, tensor<2x8xf32>
}

func.func @read_after(%x: tensor<1x1x8xf32> {attn.name = "X", attn.role = "input"},
                      %pos: tensor<1xi32> {attn.name = "pos", attn.role = "input"},
                      %k: tensor<1x4x8xf32> {attn.name = "K", attn.role = "state"},
                      %v: tensor<1x4x8xf32> {attn.name = "V", attn.role = "state"},
                      %w: tensor<8x8xf32> {attn.name = "W", attn.role = "param"})
    -> (tensor<1x1x8xf32> {attn.name = "Y"}, tensor<1x4x8xf32> {attn.name = "Z"},
        tensor<1x4x8xf32> {attn.name = "K", attn.updates = 2 : i64},
        tensor<1x4x8xf32> {attn.name = "V", attn.updates = 3 : i64}) {
  %y, %caches:2 = attn.multihead_attention %x, %x, %x heads(2) weights(%w, %w, %w, %w) cache(%k, %v, %pos) causal : (tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1xi32>) -> (tensor<1x1x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>)
// CHECK-DAG: attn-ir-states.mlir:[[@LINE+1]]:8: error: reads state argument #2 after the op that updates it in place
  %z = attn.relu %k : tensor<1x4x8xf32>
  return %y, %z, %caches#0, %caches#1 : tensor<1x1x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>
}

func.func @fine(%c: tensor<2x8xf32> {attn.name = "C", attn.role = "state"})
    -> (tensor<2x8xf32> {attn.name = "Y"},
        tensor<2x8xf32> {attn.name = "C", attn.updates = 0 : i64}) {
  %0 = attn.relu %c : tensor<2x8xf32>
  return %0, %c : tensor<2x8xf32>, tensor<2x8xf32>
}

func.func @pass_op(%rows: tensor<2x3x4xf32> {attn.name = "R", attn.role = "input"},
                   %pos: tensor<2xi32> {attn.name = "pos", attn.role = "input"},
                   %cache: tensor<2x8x4xf32> {attn.name = "C", attn.role = "input"})
    -> (tensor<2x8x4xf32> {attn.name = "Y"}) {
// CHECK-DAG: attn-ir-states.mlir:[[@LINE+1]]:8: error: 'attn.cache_update' is made by attnc's passes, not written by hand
  %0 = attn.cache_update %rows into %cache at %pos : tensor<2x3x4xf32>, tensor<2xi32> into tensor<2x8x4xf32>
  return %0 : tensor<2x8x4xf32>
}

// CHECK-DAG: attn-ir-states.mlir:[[@LINE+1]]:1: error: 'blocks' has several blocks: a kernel's body is one block of ops
func.func @blocks(%x: tensor<2xf32> {attn.name = "X", attn.role = "input"})
    -> (tensor<2xf32> {attn.name = "Y"}) {
  return %x : tensor<2xf32>
^unreachable:
  return %x : tensor<2xf32>
}
// CHECK: attnc: error: '{{.*}}attn-ir-states.mlir' has 4 errors
