//===- LoadedObject.cpp - A kernel object loaded by the JIT ---------------===//

#include "LoadedObject.h"

#include "attnc_rt.h"

#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"

#include <mutex>

using namespace attnc;

LoadedObject::~LoadedObject() = default;

llvm::Expected<std::unique_ptr<LoadedObject>>
LoadedObject::load(llvm::StringRef object, llvm::StringRef kernel,
                   mlir::attn::abi::ObjectKind kind,
                   llvm::ArrayRef<mlir::attn::abi::ArgumentRole> roles) {
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
  for (Entry entry : mlir::attn::abi::entriesOf(kind)) {
    std::string symbol = mlir::attn::abi::entrySymbol(kernel, entry);
    bool packed = mlir::attn::abi::describe(entry).hasPackedForm;
    auto address = (*jit)->lookup(
        packed ? mlir::attn::abi::packedEntrySymbol(symbol) : symbol);
    if (!address)
      return address.takeError();
    if (packed) {
      loaded->entries[static_cast<unsigned>(entry)] =
          address->toPtr<int (*)(void **)>();
      loaded->layouts[static_cast<unsigned>(entry)] =
          mlir::attn::abi::parametersOf(entry, roles);
    } else if (entry == Entry::CudaLastError)
      loaded->gpuLastError = address->toPtr<const char *(*)()>();
  }
  loaded->jit = std::move(*jit);
  return loaded;
}

int LoadedObject::call(Entry entry, llvm::ArrayRef<void *> buffers,
                       void *packed, void *stream) const {
  using Kind = mlir::attn::abi::Parameter::Kind;
  llvm::SmallVector<void *, 16> parameters;
  for (mlir::attn::abi::Parameter parameter :
       layouts[static_cast<unsigned>(entry)])
    parameters.push_back(parameter.kind == Kind::Buffer
                             ? buffers[parameter.buffer]
                         : parameter.kind == Kind::Packed ? packed
                                                          : stream);
  return entries[static_cast<unsigned>(entry)](parameters.data());
}
