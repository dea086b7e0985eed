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

    A kernel is a `func.func` named after its block. The front end records
    what the generated C header and the runtime need on it: each argument's
    and result's DSL name (`attn.name`) and whether an argument is an
    `input` or a `param` (`attn.role`), and the block's named dims in order
    (`attn.dim_names`, `attn.dim_values`). `attn-split-prepare` adds
    `NAME_prepare` and `NAME_prepared` beside each kernel and records the
    size of the buffer between them (`attn.packed_elements`).
  }];
  let extraClassDeclaration = [{
    /// Argument/result attribute: the DSL name (StringAttr).
    static constexpr ::llvm::StringLiteral kNameAttr = "attn.name";
    /// Argument attribute: "input", "param" or "state" (StringAttr).
    static constexpr ::llvm::StringLiteral kRoleAttr = "attn.role";
    /// Result attribute: the result is the new value of the state argument
    /// at this index (I64Attr), updated in place, never an output: the
    /// state's buffer must end up holding it (attn-drop-state-results
    /// drops such results after bufferization, or reports the copy).
    static constexpr ::llvm::StringLiteral kUpdatesAttr = "attn.updates";
    /// Function attributes: the block's dims in declaration order
    /// (ArrayAttr of StringAttr, DenseI64ArrayAttr).
    static constexpr ::llvm::StringLiteral kDimNamesAttr = "attn.dim_names";
    static constexpr ::llvm::StringLiteral kDimValuesAttr = "attn.dim_values";
    /// Function attribute set by attn-split-prepare on a kernel NAME: the
    /// f32 elements of the `packed` buffer NAME_prepare fills (I64Attr).
    static constexpr ::llvm::StringLiteral kPackedElementsAttr =
        "attn.packed_elements";
  }];
}

#endif // ATTN_DIALECT_TD
