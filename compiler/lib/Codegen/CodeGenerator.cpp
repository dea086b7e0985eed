//===- CodeGenerator.cpp - The choice of a code generator -----------------===//

#include "attnc/Codegen/CodeGenerator.h"
#include "attnc/Codegen/CHeader.h"
#include "attnc/Codegen/TargetMachine.h"

#include "Generators.h"

#include "attn/Target/KernelAbi.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/TargetParser/Host.h"

using namespace attnc;

CodeGenerator::~CodeGenerator() = default;

llvm::Error CodeGenerator::checkLoadsHere() const {
  // The JIT loads what it compiles into this process: another triple's code
  // cannot run here (attnc SPEC --triple=... -o OBJ cross-compiles).
  if (!isHostTriple(compileOptions.target))
    return llvm::createStringError(
        "the JIT runs kernels on this machine; --triple=" +
        compileOptions.target.triple + " is for objects (attnc SPEC -o OBJ)");
  return llvm::Error::success();
}

std::string CodeGenerator::describeKernels(mlir::ModuleOp) const { return ""; }

std::string CodeGenerator::fingerprint() const {
  return describeCodeOptions(compileOptions) + " " + derivedFingerprint();
}

namespace {

/// Checks that `object` defines, as global symbols, exactly the ABI's
/// entries of `kernels` for `kind`: every internal function stays local,
/// so no block name, host function or library can collide with one.
llvm::Error checkObjectSymbols(llvm::StringRef object,
                               llvm::ArrayRef<KernelSignature> kernels,
                               mlir::attn::abi::ObjectKind kind) {
  auto file = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(object, "kernel object"));
  if (!file)
    return file.takeError();
  llvm::StringSet<> expected;
  for (const KernelSignature &kernel : kernels)
    for (const std::string &symbol :
         mlir::attn::abi::exportedSymbols(kernel.name, kind))
      expected.insert(symbol);
  llvm::StringSet<> defined;
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols()) {
    llvm::Expected<uint32_t> flags = symbol.getFlags();
    llvm::Expected<llvm::StringRef> name = symbol.getName();
    if (!flags || !name)
      return flags ? name.takeError() : flags.takeError();
    if (!(*flags & llvm::object::SymbolRef::SF_Global) ||
        (*flags & llvm::object::SymbolRef::SF_Undefined))
      continue;
    if (!expected.contains(*name))
      return llvm::createStringError(
          "internal error: the object exports '" + *name +
          "', which is not an entry of its kernels (attn/Target/KernelAbi.h); "
          "it could collide with a function of the program it is linked "
          "into");
    defined.insert(*name);
  }
  for (const auto &symbol : expected)
    if (!defined.contains(symbol.getKey()))
      return llvm::createStringError("internal error: the object does not "
                                     "export its entry '" +
                                     symbol.getKey() + "'");
  return llvm::Error::success();
}

} // namespace

llvm::Error CodeGenerator::checkModule(mlir::ModuleOp) const {
  return llvm::Error::success();
}

llvm::Expected<CompiledKernels> CodeGenerator::compile(mlir::ModuleOp module,
                                                       OutputKind kind) const {
  if (llvm::Error error = checkModule(module))
    return std::move(error);
  auto compiled = generate(module, kind);
  if (compiled && kind == OutputKind::Object)
    if (llvm::Error error = checkObjectSymbols(
            compiled->code, compiled->signatures, objectKind()))
      return std::move(error);
  return compiled;
}

llvm::Expected<std::string>
CodeGenerator::emitHeader(mlir::ModuleOp module, llvm::StringRef origin) const {
  auto signatures = headerSignatures(module);
  if (!signatures)
    return signatures.takeError();
  return emitCHeader(*signatures, origin,
                     HeaderTarget{objectKind(), headerChip(),
                                  compileOptions.pipeline.parallel,
                                  compileOptions.pipeline.tf32});
}

std::unique_ptr<CodeGenerator>
attnc::createCodeGenerator(const CompileOptions &options) {
  // Halide builds CPU code only; its check() says so for another target.
  if (options.backend == Backend::Halide)
    return createHalideCpuGenerator(options);
  switch (options.target.kind) {
  case TargetKind::Cpu:
    return createMlirCpuGenerator(options);
  case TargetKind::Nvptx:
    return createNvptxGenerator(options);
  }
  llvm_unreachable("unknown target kind");
}
