//===- AlignWorkgroupMemory.cpp - Shared buffers aligned for vector loads -===//
//
// The NVVM lowering declares a workgroup buffer with the alignment its
// attribution's `llvm.align` gives, else with its element's. LLVM's
// optimizer, for its part, takes a global without an explicit alignment to
// have the data layout's preferred one (16 bytes for any array of more than
// 128 bits) and merges neighbouring f32 loads into 16-byte ones: an
// `ld.shared.v4` of a `.shared .align 4` variable, correct only where ptxas
// happens to place the buffer at a multiple of 16. Here every buffer says
// its alignment, so that what the optimizer assumes is what ptxas is told.
//
//===----------------------------------------------------------------------===//

#include "attn/GPU/Passes.h"
#include "attn/Target/GpuTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPUALIGNWORKGROUPMEMORY
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct AttnGpuAlignWorkgroupMemoryPass
    : mlir::attn::impl::AttnGpuAlignWorkgroupMemoryBase<
          AttnGpuAlignWorkgroupMemoryPass> {
  void runOnOperation() override {
    Builder b(&getContext());
    StringRef name = LLVM::LLVMDialect::getAlignAttrName();
    for (auto kernel : getOperation().getOps<gpu::GPUFuncOp>()) {
      for (unsigned i = 0, e = kernel.getNumWorkgroupAttributions(); i < e;
           ++i) {
        auto current = dyn_cast_or_null<IntegerAttr>(
            kernel.getWorkgroupAttributionAttr(i, name));
        if (current && current.getInt() >= attn::kWorkgroupAlignment)
          continue;
        kernel.setWorkgroupAttributionAttr(
            i, name, b.getI64IntegerAttr(attn::kWorkgroupAlignment));
      }
    }
  }
};

} // namespace
