//===- BlockCache.cpp - Keep a libc-only kernel's large temporaries -------===//
//
// A kernel mallocs and frees its temporaries on every call, and glibc hands
// large freed blocks back to the OS, so each call page-faults them in again
// (BERT-base layer: ~18% of a call). Objects compiled with --parallel use
// attnc_rt's block cache; objects that must need libc only get this one,
// written into the object in LLVM IR:
//
//   __attnc_malloc(size): blocks of at least kMinBytes come from
//     kSlots cached blocks of exactly that size when there is one;
//   __attnc_free(p): such blocks go back to an empty slot, else to free().
//
// Every block carries its size in a 16-byte header (malloc's alignment is
// kept). A spinlock (one atomic word) guards the slots: kernels may be
// called from many threads. Cached blocks are kept until the process ends.
//
//===----------------------------------------------------------------------===//

#include "attnc/Codegen/LLVMTranslation.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

using namespace attnc;

namespace {

constexpr unsigned kSlots = 32;
constexpr uint64_t kMinBytes = uint64_t(64) << 10;
constexpr uint64_t kHeaderBytes = 16;

/// The IR of the cache: its globals and the lock helpers.
struct CacheBuilder {
  llvm::Module &module;
  llvm::LLVMContext &context;
  llvm::Type *i32, *i64, *ptr;
  llvm::GlobalVariable *slots, *lock;

  explicit CacheBuilder(llvm::Module &module)
      : module(module), context(module.getContext()),
        i32(llvm::Type::getInt32Ty(context)),
        i64(llvm::Type::getInt64Ty(context)),
        ptr(llvm::PointerType::getUnqual(context)) {
    auto *slotsType = llvm::ArrayType::get(ptr, kSlots);
    slots = new llvm::GlobalVariable(
        module, slotsType, /*isConstant=*/false,
        llvm::GlobalValue::InternalLinkage,
        llvm::ConstantAggregateZero::get(slotsType), "__attnc_cache_blocks");
    lock = new llvm::GlobalVariable(
        module, i32, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
        llvm::ConstantInt::get(i32, 0), "__attnc_cache_lock");
  }

  llvm::Function *function(const char *name, llvm::Type *result,
                           llvm::Type *argument) {
    auto *type = llvm::FunctionType::get(result, {argument}, false);
    return llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage,
                                  name, module);
  }

  /// Spins until the lock goes 0 -> 1; continues in a new block.
  void acquire(llvm::IRBuilder<> &b) {
    llvm::Function *f = b.GetInsertBlock()->getParent();
    auto *spin = llvm::BasicBlock::Create(context, "acquire", f);
    auto *held = llvm::BasicBlock::Create(context, "held", f);
    b.CreateBr(spin);
    b.SetInsertPoint(spin);
    llvm::Value *exchange = b.CreateAtomicCmpXchg(
        lock, b.getInt32(0), b.getInt32(1), llvm::MaybeAlign(4),
        llvm::AtomicOrdering::Acquire, llvm::AtomicOrdering::Monotonic);
    b.CreateCondBr(b.CreateExtractValue(exchange, 1), held, spin);
    b.SetInsertPoint(held);
  }

  void release(llvm::IRBuilder<> &b) {
    b.CreateAlignedStore(b.getInt32(0), lock, llvm::MaybeAlign(4))
        ->setAtomic(llvm::AtomicOrdering::Release);
  }

  /// for (i = 0; i < kSlots; ++i) body(slot i); falls through to `after`
  /// when the loop ends. `body` ends its blocks itself (branch to `next` to
  /// go on).
  void forEachSlot(
      llvm::IRBuilder<> &b, llvm::BasicBlock *after,
      llvm::function_ref<void(llvm::Value *slot, llvm::BasicBlock *next)>
          body) {
    llvm::Function *f = b.GetInsertBlock()->getParent();
    llvm::BasicBlock *entry = b.GetInsertBlock();
    auto *loop = llvm::BasicBlock::Create(context, "slot", f);
    auto *next = llvm::BasicBlock::Create(context, "next_slot", f);
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::PHINode *index = b.CreatePHI(i64, 2);
    index->addIncoming(b.getInt64(0), entry);
    llvm::Value *slot =
        b.CreateInBoundsGEP(slots->getValueType(), slots,
                            {b.getInt64(0), static_cast<llvm::Value *>(index)});
    body(slot, next);
    b.SetInsertPoint(next);
    llvm::Value *following = b.CreateAdd(index, b.getInt64(1));
    index->addIncoming(following, next);
    b.CreateCondBr(b.CreateICmpEQ(following, b.getInt64(kSlots)), after, loop);
  }
};

/// ptr __attnc_malloc(i64 size)
llvm::Function *buildMalloc(CacheBuilder &c, llvm::Function *libcMalloc) {
  llvm::Function *f = c.function("__attnc_malloc", c.ptr, c.i64);
  llvm::Value *size = f->getArg(0);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c.context, "entry", f));
  auto *cached = llvm::BasicBlock::Create(c.context, "cached", f);
  auto *fresh = llvm::BasicBlock::Create(c.context, "fresh", f);
  auto *none = llvm::BasicBlock::Create(c.context, "none", f);
  b.CreateCondBr(b.CreateICmpUGE(size, b.getInt64(kMinBytes)), cached, fresh);

  b.SetInsertPoint(cached);
  c.acquire(b);
  c.forEachSlot(b, none, [&](llvm::Value *slot, llvm::BasicBlock *next) {
    auto *check = llvm::BasicBlock::Create(c.context, "check", f);
    auto *take = llvm::BasicBlock::Create(c.context, "take", f);
    llvm::Value *block = b.CreateLoad(c.ptr, slot);
    b.CreateCondBr(b.CreateIsNull(block), next, check);
    b.SetInsertPoint(check);
    llvm::Value *blockSize = b.CreateLoad(c.i64, block);
    b.CreateCondBr(b.CreateICmpEQ(blockSize, size), take, next);
    b.SetInsertPoint(take);
    b.CreateStore(
        llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(c.ptr)),
        slot);
    c.release(b);
    b.CreateRet(
        b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), block, kHeaderBytes));
  });
  b.SetInsertPoint(none);
  c.release(b);
  b.CreateBr(fresh);

  b.SetInsertPoint(fresh);
  llvm::Value *block =
      b.CreateCall(libcMalloc, {b.CreateAdd(size, b.getInt64(kHeaderBytes))});
  auto *failed = llvm::BasicBlock::Create(c.context, "failed", f);
  auto *done = llvm::BasicBlock::Create(c.context, "done", f);
  b.CreateCondBr(b.CreateIsNull(block), failed, done);
  b.SetInsertPoint(failed);
  b.CreateRet(block);
  b.SetInsertPoint(done);
  b.CreateStore(size, block);
  b.CreateRet(b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), block, kHeaderBytes));
  return f;
}

/// void __attnc_free(ptr pointer)
llvm::Function *buildFree(CacheBuilder &c, llvm::Function *libcFree) {
  llvm::Function *f =
      c.function("__attnc_free", llvm::Type::getVoidTy(c.context), c.ptr);
  llvm::Value *pointer = f->getArg(0);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c.context, "entry", f));
  auto *nothing = llvm::BasicBlock::Create(c.context, "nothing", f);
  auto *some = llvm::BasicBlock::Create(c.context, "some", f);
  b.CreateCondBr(b.CreateIsNull(pointer), nothing, some);
  b.SetInsertPoint(nothing);
  b.CreateRetVoid();

  b.SetInsertPoint(some);
  llvm::Value *block = b.CreateConstGEP1_64(
      b.getInt8Ty(), pointer, -static_cast<int64_t>(kHeaderBytes));
  llvm::Value *size = b.CreateLoad(c.i64, block);
  auto *cached = llvm::BasicBlock::Create(c.context, "cached", f);
  auto *full = llvm::BasicBlock::Create(c.context, "full", f);
  auto *plain = llvm::BasicBlock::Create(c.context, "plain", f);
  b.CreateCondBr(b.CreateICmpUGE(size, b.getInt64(kMinBytes)), cached, plain);

  b.SetInsertPoint(cached);
  c.acquire(b);
  c.forEachSlot(b, full, [&](llvm::Value *slot, llvm::BasicBlock *next) {
    auto *put = llvm::BasicBlock::Create(c.context, "put", f);
    b.CreateCondBr(b.CreateIsNull(b.CreateLoad(c.ptr, slot)), put, next);
    b.SetInsertPoint(put);
    b.CreateStore(block, slot);
    c.release(b);
    b.CreateRetVoid();
  });
  b.SetInsertPoint(full);
  c.release(b);
  b.CreateBr(plain);

  b.SetInsertPoint(plain);
  b.CreateCall(libcFree, {block});
  b.CreateRetVoid();
  return f;
}

} // namespace

void attnc::addBlockCache(llvm::Module &module) {
  llvm::Function *libcMalloc = module.getFunction("malloc");
  llvm::Function *libcFree = module.getFunction("free");
  if (!libcMalloc || !libcFree)
    return;
  CacheBuilder cache(module);
  llvm::Function *cachedMalloc = buildMalloc(cache, libcMalloc);
  llvm::Function *cachedFree = buildFree(cache, libcFree);
  auto outsideCache = [&](llvm::Use &use) {
    auto *inst = llvm::dyn_cast<llvm::Instruction>(use.getUser());
    llvm::Function *in = inst ? inst->getFunction() : nullptr;
    return in != cachedMalloc && in != cachedFree;
  };
  libcMalloc->replaceUsesWithIf(cachedMalloc, outsideCache);
  libcFree->replaceUsesWithIf(cachedFree, outsideCache);
}
