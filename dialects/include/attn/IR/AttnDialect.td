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

    Every `attn.*` attribute is verified where it stands (type, range,
    agreement with the function's signature: KernelAttributes.cpp), so no
    pass or backend reads one that the verifier has not seen; an `attn.*`
    attribute the dialect does not define is an error.
  }];
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
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
    /// Function attribute set by attn-split-prepare on the functions it
    /// makes: "prepare" or "prepared" (StringAttr).
    static constexpr ::llvm::StringLiteral kKernelPartAttr = "attn.kernel_part";
    /// Function attributes set by attn-forward-call-slices on the
    /// declaration standing for a call at byte offsets: the function called
    /// (FlatSymbolRefAttr) and each pointer argument's offset in bytes
    /// (DenseI64ArrayAttr).
    static constexpr ::llvm::StringLiteral kOffsetCallOfAttr =
        "attn.offset_call_of";
    static constexpr ::llvm::StringLiteral kOffsetCallBytesAttr =
        "attn.offset_call_bytes";
    /// Op attribute set by attn-compute-in-f32: the float type a composite
    /// rounds its inner result to (TypeAttr of a float type).
    static constexpr ::llvm::StringLiteral kInnerRoundingAttr =
        "attn.inner_rounding";
    /// Unit attribute set by attn-bf16-pair-gemms on the linalg.generic
    /// GEMMs it rewrote to read bf16 pairs.
    static constexpr ::llvm::StringLiteral kBf16PairGemmAttr =
        "attn.bf16_pair_gemm";
  }];
}

#endif // ATTN_DIALECT_TD
