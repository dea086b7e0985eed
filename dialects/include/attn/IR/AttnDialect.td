//===- AttnDialect.td - The attn dialect -------------------*- tablegen -*-===//

#ifndef ATTN_DIALECT_TD
#define ATTN_DIALECT_TD

include "mlir/IR/OpBase.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::mlir::attn";
  let summary = "Attention blocks of Dive into Deep Learning on static tensors";
  let description = [{
    The `attn` dialect has one op per operation of the attnc DSL: the
    multi-head self-attention, masking, positional encoding and transformer
    encoder pieces of *Dive into Deep Learning* (D2L). Every op works on
    statically shaped ranked tensors (`f32`, and `i32` for lengths and ids),
    so a kernel is specialized for its shapes and head count.

    Composite ops (`multihead_attention`, `attention`, `add_norm`, `ffn`) are
    rewritten into the primitive ones by `attn-decompose`; later lowerings
    handle the primitives only.
  }];
}

#endif // ATTN_DIALECT_TD
