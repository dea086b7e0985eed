//===- Passes.h - Passes of the attn dialect --------------------*- C++ -*-===//

#ifndef ATTN_TRANSFORMS_PASSES_H
#define ATTN_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>

namespace mlir {
class RewritePatternSet;

namespace attn {

#define GEN_PASS_DECL
#include "attn/Transforms/Passes.h.inc"

/// How attn-decompose lowers `attention` (see its `attention` option).
enum class AttentionLowering { Decomposed, Fused, Auto };

/// The option's spelling (`decomposed`, `fused`, `auto`), if it is one.
std::optional<AttentionLowering> parseAttentionLowering(llvm::StringRef name);

/// What attn-decompose does with one attention or multihead_attention op:
/// fuse it into one op (the flash loops) or decompose it into primitives,
/// and why. The one place of the rule: the patterns and --print-schedule
/// both ask it.
struct AttentionLoweringChoice {
  bool fused = false;
  /// `auto: Tq x Tk = 16 < 4096`, `return_weights needs the weights`, ...
  std::string reason;
};

/// The choice for `op`, or nullopt when it is not an attention op. A
/// multihead_attention with a KV cache is fused into attn.decode_attention
/// when the target has that kernel (`decodeKernel`), and a prompt's prefill
/// into the flash kernel when it has that path too (`prefillFlash`:
/// attn-decompose's prefill-flash-rows is not 0).
std::optional<AttentionLoweringChoice>
attentionLoweringOf(Operation *op, AttentionLowering lowering,
                    int64_t fuseThreshold = 4096, bool decodeKernel = false,
                    bool prefillFlash = false);

/// Whether attn-compute-in-f32 keeps the bf16/f16 `result` of an attn op in
/// f32 instead of rounding it: its one use is an elementwise op (add, sub,
/// mul, relu, gelu, silu, tanh, sigmoid), which is its epilogue and rounds
/// the chain's last result only (docs/spec.md §2 v3, "fused epilogues").
/// The one place of the rule: the pass and --print-schedule both ask it.
bool keepsResultInF32(Value result);

/// The type a `multihead_attention` or `ffn` on bf16/f16 tensors rounds
/// the input of its last GEMM to: the merged heads before `w_o`, the hidden
/// layer before `w2`, as PyTorch's modules in that type do, so that both
/// operands of that GEMM are bf16/f16 (docs/precision.md); null for any
/// other op. attn-compute-in-f32 records it on the op it widens
/// (`attn.inner_rounding`), where attn-decompose and the Halide backend
/// find it: the one place of the rule, asked by them and --print-schedule.
FloatType innerRoundingOf(Operation *op);
/// bf16 when the two products of a `multihead_attention` or `attention` on
/// bf16 tensors take bf16 operands (`q` and `k` after rope, `v`, the
/// softmax weights: attn.fused_attention's `products(bf16)`, the same
/// rounding points on the step-by-step path), so that they run on AMX or
/// `vdpbf16ps` as PyTorch's bf16 attention does; null for any other op
/// (f16 attention computes in f32: no x86 CPU has an f16 product with f32
/// sums). Recorded with innerRoundingOf; asked by attn-decompose, the
/// Halide backend and --print-schedule.
FloatType attentionProductsOf(Operation *op);
/// Records innerRoundingOf(op) and attentionProductsOf(op) on `op` before
/// attn-compute-in-f32 widens it.
void recordInnerRounding(Operation *op);

/// Adds the patterns of `attn-decompose` (composite ops -> primitives).
void populateDecomposePatterns(
    RewritePatternSet &patterns,
    AttentionLowering attention = AttentionLowering::Decomposed,
    int64_t fuseThreshold = 4096, bool decodeKernel = false,
    int64_t prefillFlashRows = 0);

/// Adds the patterns of `attn-lower-to-linalg` (primitives -> linalg).
void populateLowerToLinalgPatterns(RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "attn/Transforms/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_TRANSFORMS_PASSES_H
