//===- DeviceMemory.cpp - A kernel's buffers on the device, one stream ----===//
//
// After attn-gpu-map-loops the host code of a kernel only allocates,
// describes buffers, launches and reads a status back. Here its buffers move
// to device memory and its GPU work is put in order on one stream: the
// caller's (NAME_cuda's), so that nothing waits unless the host must read a
// value.
//
//===----------------------------------------------------------------------===//

#include "attn/GPU/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ATTNGPUDEVICEMEMORY
#include "attn/GPU/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The largest buffer a host load may copy back whole (a status, a count).
constexpr int64_t kMaxReadBackBytes = 4096;

/// Clones each host memref.get_global used inside a launch into that launch
/// (outlining then copies the global into the GPU module).
LogicalResult sinkGlobals(Block &body) {
  for (auto get :
       llvm::make_early_inc_range(body.getOps<memref::GetGlobalOp>())) {
    llvm::DenseMap<gpu::LaunchOp, Value> copies;
    for (OpOperand &use : llvm::make_early_inc_range(get->getUses())) {
      auto launch = use.getOwner()->getParentOfType<gpu::LaunchOp>();
      if (!launch)
        return get.emitOpError("is used by host code; constants reach the GPU "
                               "only inside kernels");
      Value &copy = copies[launch];
      if (!copy) {
        OpBuilder b = OpBuilder::atBlockBegin(&launch.getBody().front());
        copy = b.clone(*get)->getResult(0);
      }
      use.set(copy);
    }
    get.erase();
  }
  return success();
}

struct AttnGpuDeviceMemoryPass
    : mlir::attn::impl::AttnGpuDeviceMemoryBase<AttnGpuDeviceMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitOpError("has control flow in its host code; "
                       "attn-gpu-device-memory needs one block");
      return signalPassFailure();
    }
    Block &body = func.getBody().front();
    if (failed(sinkGlobals(body)))
      return signalPassFailure();

    Type tokenType = gpu::AsyncTokenType::get(&getContext());
    OpBuilder b = OpBuilder::atBlockBegin(&body);
    auto entry = gpu::WaitOp::create(b, func.getLoc(), tokenType, ValueRange{});
    Value token = entry.getAsyncToken();
    SmallVector<Value> deviceBuffers;

    for (Operation &op : llvm::make_early_inc_range(
             llvm::make_range(std::next(entry->getIterator()), body.end()))) {
      b.setInsertionPoint(&op);
      Location loc = op.getLoc();
      if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
        auto type = cast<MemRefType>(op.getResult(0).getType());
        if (!type.hasStaticShape() || !op.getOperands().empty()) {
          op.emitOpError("has a dynamic size; GPU kernels need static shapes");
          return signalPassFailure();
        }
        auto alloc = gpu::AllocOp::create(b, loc, type, tokenType,
                                          ValueRange{token}, ValueRange{},
                                          ValueRange{}, /*hostShared=*/false);
        token = alloc.getAsyncToken();
        op.getResult(0).replaceAllUsesWith(alloc.getMemref());
        deviceBuffers.push_back(alloc.getMemref());
        op.erase();
        continue;
      }
      if (isa<memref::DeallocOp>(op)) {
        op.erase();
        continue;
      }
      if (auto load = dyn_cast<memref::LoadOp>(op)) {
        // The host reads a device value: copy the buffer back and wait.
        MemRefType type = load.getMemRefType();
        int64_t bytes =
            type.getNumElements() * type.getElementTypeBitWidth() / 8;
        if (!type.getLayout().isIdentity() || bytes > kMaxReadBackBytes) {
          load.emitOpError("reads a device buffer that is not a small dense "
                           "one back to the host");
          return signalPassFailure();
        }
        auto host = memref::AllocaOp::create(b, loc, type);
        auto copy = gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{token},
                                          host, load.getMemref());
        gpu::WaitOp::create(b, loc, Type(), ValueRange{copy.getAsyncToken()});
        b.setInsertionPointAfter(load);
        token = gpu::WaitOp::create(b, loc, tokenType, ValueRange{})
                    .getAsyncToken();
        load.getMemrefMutable().assign(host);
        continue;
      }
      if (isa<func::ReturnOp>(op)) {
        for (Value buffer : llvm::reverse(deviceBuffers))
          token = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{token},
                                         buffer)
                      .getAsyncToken();
        continue;
      }
      auto async = dyn_cast<gpu::AsyncOpInterface>(op);
      if (async && async.getAsyncToken()) {
        async.addAsyncDependency(token);
        token = async.getAsyncToken();
      }
    }
  }
};

} // namespace
