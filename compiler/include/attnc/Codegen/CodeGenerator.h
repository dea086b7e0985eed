//===- CodeGenerator.h - One interface for every code generator -*- C++ -*-===//
//
// What `attnc`, the runtime's JIT and the Python module ask of a code
// generator, whichever builds the kernels: CPU code through attnc's MLIR
// pipeline, CPU code through Halide, or NVIDIA GPU code through NVPTX.
// createCodeGenerator is the one place that chooses among them from the
// compile options; nobody else branches on the target kind or the backend.
//
// "Target" means one thing in attnc: what the code runs on (--target,
// TargetOptions, attn/Target's descriptions of CPUs and GPUs). A code
// generator builds kernels for one target.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_CODEGEN_CODEGENERATOR_H
#define ATTNC_CODEGEN_CODEGENERATOR_H

#include "attnc/Codegen/CompileOptions.h"
#include "attnc/Codegen/KernelSignature.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace attnc {

/// What a compile produces (attnc's --emit values that generate code).
enum class OutputKind {
  /// MLIR just before translation to LLVM IR.
  Lowered,
  /// LLVM IR, optimized.
  LlvmIr,
  /// Assembly of the object.
  Assembly,
  /// A relocatable object file.
  Object,
  /// The GPU's device code as PTX text.
  Ptx,
};

/// The code (or text) a compile made, and the kernels it holds as their
/// header declares them (packed sizes filled where the object has a
/// prepare step).
struct CompiledKernels {
  std::string code;
  std::vector<KernelSignature> signatures;
};

class CodeGenerator {
public:
  virtual ~CodeGenerator();

  const CompileOptions &options() const { return compileOptions; }

  /// The object kind it builds (attn/Target/KernelAbi.h): its entries.
  virtual mlir::attn::abi::ObjectKind objectKind() const = 0;

  /// Succeeds when the options name a target and settings this generator
  /// can build for; the error is the user's to fix (an unknown CPU, a
  /// schedule that does not exist, --triple with a GPU).
  virtual llvm::Error check() const = 0;

  /// Succeeds when `kind` is something this generator makes for these
  /// options (the CUDA toolkit where the GPU needs it, one CPU for
  /// --emit=lowered); the error is the user's to fix.
  virtual llvm::Error checkOutput(OutputKind kind) const = 0;

  /// Succeeds when its objects can be loaded into this process (the JIT):
  /// they are for this machine's triple, and check() holds for a GPU.
  virtual llvm::Error checkLoadsHere() const;

  /// Succeeds when its kernels can run on this machine: they load here and
  /// the CPU has every feature the code uses (`attnc run`, the tests).
  virtual llvm::Error checkRunsHere() const = 0;

  /// --print-schedule: the target as the schedules see it and what they
  /// choose, as indented lines.
  virtual llvm::Expected<std::string> describeSchedule() const = 0;

  /// --print-schedule with a spec: what the schedules choose for the ops of
  /// `module` (attn level), as lines; "" where nothing depends on the ops.
  virtual std::string describeKernels(mlir::ModuleOp module) const;

  /// An error when the generator cannot build what the (checked) attn-level
  /// `module` uses: a limit of this backend, the user's to work around
  /// (compile() checks it too).
  virtual llvm::Error checkModule(mlir::ModuleOp module) const;

  /// Everything that changes the generated code, for cache keys: every
  /// option that does (forEachCodeOption, CompileOptions.h) and what the
  /// generator derives from the machine (derivedFingerprint).
  std::string fingerprint() const;

  /// Adds to `module` (attn level) what its passes will read of the target
  /// (--emit=attn shows it); nothing for a generator that reads none.
  virtual llvm::Error annotate(mlir::ModuleOp module) const = 0;

  /// Builds `module` (attn level, lowered in place) into `kind`. The global
  /// symbols of an object are checked against the ABI: it defines exactly
  /// the entries of its kernels (abi::exportedSymbols), so no helper of the
  /// generated code or of a loader can take a name from the host program.
  llvm::Expected<CompiledKernels> compile(mlir::ModuleOp module,
                                          OutputKind kind) const;

  /// The C header of the kernels of `module` (attn level; lowered in place
  /// where the packed sizes need it) as its objects export them; `origin`
  /// names the spec.
  llvm::Expected<std::string> emitHeader(mlir::ModuleOp module,
                                         llvm::StringRef origin) const;

protected:
  explicit CodeGenerator(CompileOptions options)
      : compileOptions(std::move(options)) {}

  /// What compile() builds, before its checks.
  virtual llvm::Expected<CompiledKernels> generate(mlir::ModuleOp module,
                                                   OutputKind kind) const = 0;

  /// The signatures emitHeader declares.
  virtual llvm::Expected<std::vector<KernelSignature>>
  headerSignatures(mlir::ModuleOp module) const = 0;

  /// What the code depends on besides the options: the CPU or GPU they
  /// resolve to and its description, the toolkit or library versions.
  virtual std::string derivedFingerprint() const = 0;

  /// The compute capability a GPU header names; empty for a CPU.
  virtual std::string headerChip() const { return ""; }

  CompileOptions compileOptions;
};

/// The code generator `options` ask for: options.target.kind and
/// options.backend, the one place that reads them.
std::unique_ptr<CodeGenerator>
createCodeGenerator(const CompileOptions &options);

} // namespace attnc

#endif // ATTNC_CODEGEN_CODEGENERATOR_H
