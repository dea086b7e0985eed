//===- LoadedObject.cpp - A kernel object loaded by the JIT ---------------===//

#include "LoadedObject.h"

#include "attnc/Codegen/Target.h"

#include "attnc_rt.h"

#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"

#include <mutex>

using namespace attnc;

LoadedObject::~LoadedObject() = default;

llvm::Expected<std::unique_ptr<LoadedObject>>
LoadedObject::load(llvm::StringRef object, llvm::StringRef kernel, bool gpu) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return jit.takeError();
  // The kernel calls malloc, free and memcpy: take them from this process.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process)
    return process.takeError();
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  // Parallel kernels call the OpenMP entry points of attnc_rt, which is
  // linked into this library, not exported by the process.
  llvm::orc::SymbolMap threads;
  for (const attnc_rt_symbol *s = attnc_rt_symbols(); s->name; ++s)
    threads[(*jit)->mangleAndIntern(s->name)] = {
        llvm::orc::ExecutorAddr::fromPtr(s->address),
        llvm::JITSymbolFlags::Exported};
  if (llvm::Error error = (*jit)->getMainJITDylib().define(
          llvm::orc::absoluteSymbols(std::move(threads))))
    return std::move(error);
  if (llvm::Error error = (*jit)->addObjectFile(
          llvm::MemoryBuffer::getMemBufferCopy(object, kernel)))
    return std::move(error);
  std::unique_ptr<LoadedObject> loaded(new LoadedObject());
  const std::string names[] = {kernel.str(), (kernel + "_prepare").str(),
                               (kernel + "_prepared").str()};
  for (int i = 0; i < (gpu ? 1 : 3); ++i) {
    auto symbol = (*jit)->lookup(packedEntryName(names[i]));
    if (!symbol)
      return symbol.takeError();
    loaded->entries[i] = symbol->toPtr<int (*)(void **)>();
  }
  if (gpu) {
    auto symbol = (*jit)->lookup((kernel + "_cuda_last_error").str());
    if (!symbol)
      return symbol.takeError();
    loaded->gpuLastError = symbol->toPtr<const char *(*)()>();
    auto device = (*jit)->lookup(packedEntryName((kernel + "_cuda").str()));
    if (!device)
      return device.takeError();
    loaded->cudaEntry = device->toPtr<int (*)(void **)>();
  }
  loaded->jit = std::move(*jit);
  return loaded;
}
