//===- Passes.h - GPU code generation passes of attn ------------*- C++ -*-===//
//
// The passes the GPU (NVPTX) target provides (Passes.td).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_GPU_PASSES_H
#define ATTN_GPU_PASSES_H

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>

namespace mlir {
namespace attn {

#define GEN_PASS_DECL
#include "attn/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/GPU/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_GPU_PASSES_H
