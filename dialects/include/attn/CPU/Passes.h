//===- Passes.h - CPU code generation passes of attn ------------*- C++ -*-===//
//
// The passes a CPU target provides (Passes.td); they read the module's CPU
// target description (attn/Target/CpuTarget.h).
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_CPU_PASSES_H
#define ATTN_CPU_PASSES_H

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>

namespace mlir {
namespace attn {

#define GEN_PASS_DECL
#include "attn/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "attn/CPU/Passes.h.inc"

} // namespace attn
} // namespace mlir

#endif // ATTN_CPU_PASSES_H
