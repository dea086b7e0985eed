//===- SpecToModule.h - Spec text -> attn-dialect module --------*- C++ -*-===//
//
// The one way from a spec's text to a verified attn module, for attnc, the
// runtime, the tests and the fuzzers: the front end (or, for a `sourceName`
// ending in .mlir, attn IR: ParseAttnIR.h), the choice of a block, MLIRGen
// and the verifier. CheckedSpec keeps the steps apart for attnc, which
// reports a spec's errors before it looks at its other flags; specToModule
// is the steps in one call.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_GEN_SPECTOMODULE_H
#define ATTNC_GEN_SPECTOMODULE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace attnc {

/// The error of a spec whose diagnostics the front end has printed (to the
/// stream CheckedSpec::check was given): "'NAME' has N errors".
class FrontEndErrors : public llvm::ErrorInfo<FrontEndErrors> {
public:
  static char ID;
  FrontEndErrors(std::string sourceName, unsigned count)
      : sourceName(std::move(sourceName)), count(count) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override;

private:
  std::string sourceName;
  unsigned count;
};

/// A spec read and checked: a .attn file's AST, or a .mlir file's attn IR.
class CheckedSpec {
public:
  /// Parses and checks `text`, called `sourceName` in diagnostics (printed
  /// to `diagnostics`); the IR it generates lives in `context`. A spec with
  /// errors is FrontEndErrors (attn IR: the error says what is wrong).
  static llvm::Expected<CheckedSpec> check(mlir::MLIRContext &context,
                                           llvm::StringRef text,
                                           llvm::StringRef sourceName,
                                           llvm::raw_ostream &diagnostics);

  CheckedSpec(CheckedSpec &&);
  CheckedSpec &operator=(CheckedSpec &&);
  ~CheckedSpec();

  /// Its blocks (attn IR: its kernels, the public functions), in order.
  llvm::SmallVector<llvm::StringRef> blockNames() const;

  /// `block` when the spec has it; the only block when `block` is empty.
  /// The error lists the blocks.
  llvm::Expected<std::string> selectBlock(llvm::StringRef block) const;

  /// The verified attn module of `block` (a name from blockNames) and the
  /// blocks it calls, or of every block when `block` is empty. Once for
  /// attn IR (the parsed module is handed over).
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
  generate(llvm::StringRef block);

  /// The spec's text and name, as given to check.
  llvm::StringRef text() const;
  llvm::StringRef sourceName() const;

private:
  struct State;
  explicit CheckedSpec(std::unique_ptr<State> state);
  std::unique_ptr<State> state;
};

/// CheckedSpec::check, then the module of `block` (selectBlock: empty
/// means the only block) or, with `allBlocks`, of every block.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
specToModule(mlir::MLIRContext &context, llvm::StringRef text,
             llvm::StringRef sourceName, llvm::StringRef block,
             llvm::raw_ostream &diagnostics, bool allBlocks = false);

} // namespace attnc

#endif // ATTNC_GEN_SPECTOMODULE_H
