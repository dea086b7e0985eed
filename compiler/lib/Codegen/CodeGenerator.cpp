//===- CodeGenerator.cpp - The choice of a code generator -----------------===//

#include "attnc/Codegen/CodeGenerator.h"
#include "attnc/Codegen/CHeader.h"
#include "attnc/Codegen/TargetMachine.h"

#include "Generators.h"

#include "mlir/IR/BuiltinOps.h"

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

llvm::Expected<std::string>
CodeGenerator::emitHeader(mlir::ModuleOp module, llvm::StringRef origin) const {
  auto signatures = headerSignatures(module);
  if (!signatures)
    return signatures.takeError();
  return emitCHeader(*signatures, origin,
                     HeaderTarget{objectKind(), headerChip()});
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
