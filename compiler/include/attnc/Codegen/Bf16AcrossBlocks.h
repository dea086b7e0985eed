//===- Bf16AcrossBlocks.h - bf16 values carried between blocks as bits ----===//
//
// LLVM's x86 back end holds a bf16 value that lives in more than one basic
// block (a phi, or a value used outside its block) as an f32 and rounds it
// back with a call of `__truncsfbf2` wherever the CPU lacks AVX512-BF16
// (AVX2, x86-64-v4): a symbol neither attnc's objects nor its JIT provide
// (docs/toolchain.md). Carried as i16 bits instead, the value is only moved.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_BF16ACROSSBLOCKS_H
#define ATTNC_CODEGEN_BF16ACROSSBLOCKS_H

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace attnc {

/// Rewrites `function` so that no value whose type holds bf16 (a scalar, a
/// vector, or an array or struct of them) is a phi or is used outside the
/// block that defines it: such values cross blocks as integers of the same
/// width (bitcasts, element by element for aggregates). The bits, and so
/// the results, are unchanged.
void carryBf16AcrossBlocksAsBits(llvm::Function &function);

/// carryBf16AcrossBlocksAsBits on every function with a body.
void carryBf16AcrossBlocksAsBits(llvm::Module &module);

} // namespace attnc

#endif // ATTNC_CODEGEN_BF16ACROSSBLOCKS_H
