//===- SpecToModule.cpp - Spec text -> attn-dialect module ----------------===//

#include "attnc/Gen/SpecToModule.h"

#include "attnc/Frontend/Frontend.h"
#include "attnc/Gen/MLIRGen.h"
#include "attnc/Gen/ParseAttnIR.h"
#include "attnc/Parse/AST.h"
#include "attnc/Support/Diagnostics.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace attnc;

char FrontEndErrors::ID = 0;

void FrontEndErrors::log(llvm::raw_ostream &os) const {
  os << "'" << sourceName << "' has " << count << " error"
     << (count == 1 ? "" : "s");
}

std::error_code FrontEndErrors::convertToErrorCode() const {
  return llvm::inconvertibleErrorCode();
}

struct CheckedSpec::State {
  mlir::MLIRContext *context = nullptr;
  std::string name;
  /// Owns the text: the AST and the diagnostics point into it.
  llvm::SourceMgr sourceMgr;
  /// A .attn spec's checked AST, or a .mlir file's module (all kernels).
  std::unique_ptr<ast::Module> module;
  mlir::OwningOpRef<mlir::ModuleOp> ir;
};

CheckedSpec::CheckedSpec(std::unique_ptr<State> state)
    : state(std::move(state)) {}
CheckedSpec::CheckedSpec(CheckedSpec &&) = default;
CheckedSpec &CheckedSpec::operator=(CheckedSpec &&) = default;
CheckedSpec::~CheckedSpec() = default;

llvm::Expected<CheckedSpec> CheckedSpec::check(mlir::MLIRContext &context,
                                               llvm::StringRef text,
                                               llvm::StringRef sourceName,
                                               llvm::raw_ostream &diagnostics) {
  auto state = std::make_unique<State>();
  state->context = &context;
  state->name = sourceName.str();
  unsigned id = state->sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, sourceName), llvm::SMLoc());
  llvm::StringRef buffer = state->sourceMgr.getMemoryBuffer(id)->getBuffer();
  if (isAttnIRFile(sourceName)) {
    auto ir = parseAttnIR(context, buffer, sourceName, "", diagnostics,
                          /*allBlocks=*/true);
    if (!ir)
      return ir.takeError();
    state->ir = std::move(*ir);
  } else {
    DiagnosticEngine diag(state->sourceMgr, diagnostics);
    state->module = parseAndCheck(diag, id);
    if (!state->module)
      return llvm::make_error<FrontEndErrors>(sourceName.str(),
                                              diag.errorCount());
  }
  return CheckedSpec(std::move(state));
}

llvm::SmallVector<llvm::StringRef> CheckedSpec::blockNames() const {
  llvm::SmallVector<llvm::StringRef> names;
  if (state->ir) {
    for (auto func : state->ir->getOps<mlir::func::FuncOp>())
      if (func.isPublic())
        names.push_back(func.getName());
    return names;
  }
  for (const auto &block : state->module->blocks)
    names.push_back(block->name.name);
  return names;
}

llvm::Expected<std::string>
CheckedSpec::selectBlock(llvm::StringRef block) const {
  llvm::SmallVector<llvm::StringRef> names = blockNames();
  if (!block.empty()) {
    if (!llvm::is_contained(names, block))
      return llvm::createStringError(
          "no block named '" + block + "' in '" + state->name +
          "'; available blocks: " + llvm::join(names, ", "));
    return block.str();
  }
  if (names.size() != 1)
    return llvm::createStringError(
        "'" + state->name + "' has " + llvm::Twine(names.size()) +
        " blocks; choose one (" + llvm::join(names, ", ") + ")");
  return names.front().str();
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
CheckedSpec::generate(llvm::StringRef block) {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (state->module) {
    module = mlirGen(*state->context, *state->module, state->sourceMgr, block);
  } else {
    if (!state->ir)
      return llvm::createStringError("internal error: the attn IR of '" +
                                     state->name + "' was generated before");
    module = std::move(state->ir);
    if (!block.empty())
      keepOnlyKernel(*module, block);
  }
  if (!module || mlir::failed(mlir::verify(*module)))
    return llvm::createStringError("internal error: the IR generated for '" +
                                   state->name + "' does not verify");
  return module;
}

llvm::StringRef CheckedSpec::text() const {
  return state->sourceMgr.getMemoryBuffer(state->sourceMgr.getMainFileID())
      ->getBuffer();
}

llvm::StringRef CheckedSpec::sourceName() const { return state->name; }

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
attnc::specToModule(mlir::MLIRContext &context, llvm::StringRef text,
                    llvm::StringRef sourceName, llvm::StringRef block,
                    llvm::raw_ostream &diagnostics, bool allBlocks) {
  llvm::Expected<CheckedSpec> spec =
      CheckedSpec::check(context, text, sourceName, diagnostics);
  if (!spec)
    return spec.takeError();
  if (allBlocks)
    return spec->generate("");
  llvm::Expected<std::string> selected = spec->selectBlock(block);
  if (!selected)
    return selected.takeError();
  return spec->generate(*selected);
}
