//===- SpecToModule.cpp - .attn text -> attn-dialect module ---------------===//

#include "attnc/Gen/SpecToModule.h"

#include "attnc/Frontend/Frontend.h"
#include "attnc/Gen/MLIRGen.h"
#include "attnc/Gen/ParseAttnIR.h"
#include "attnc/Support/Diagnostics.h"

#include "mlir/IR/Verifier.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace attnc;

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
attnc::specToModule(mlir::MLIRContext &context, llvm::StringRef text,
                    llvm::StringRef sourceName, llvm::StringRef block,
                    llvm::raw_ostream &diagnostics, bool allBlocks) {
  if (isAttnIRFile(sourceName))
    return parseAttnIR(context, text, sourceName, block, diagnostics,
                       allBlocks);
  llvm::SourceMgr sourceMgr;
  unsigned id = sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, sourceName), llvm::SMLoc());
  DiagnosticEngine diag(sourceMgr, diagnostics);
  std::unique_ptr<ast::Module> module = parseAndCheck(diag, id);
  if (!module)
    return llvm::createStringError("'" + sourceName + "' has " +
                                   llvm::Twine(diag.errorCount()) + " error" +
                                   (diag.errorCount() == 1 ? "" : "s"));

  llvm::SmallVector<llvm::StringRef> names;
  for (const auto &b : module->blocks)
    names.push_back(b->name.name);
  std::string selected;
  if (!allBlocks) {
    if (!block.empty()) {
      if (!module->lookup(block))
        return llvm::createStringError(
            "no block named '" + block + "' in '" + sourceName +
            "'; available blocks: " + llvm::join(names, ", "));
      selected = block.str();
    } else if (names.size() == 1) {
      selected = names.front().str();
    } else {
      return llvm::createStringError(
          "'" + sourceName + "' has " + llvm::Twine(names.size()) +
          " blocks; choose one (" + llvm::join(names, ", ") + ")");
    }
  }

  mlir::OwningOpRef<mlir::ModuleOp> ir =
      mlirGen(context, *module, sourceMgr, selected);
  if (!ir || mlir::failed(mlir::verify(*ir)))
    return llvm::createStringError("internal error: the IR generated for '" +
                                   sourceName + "' does not verify");
  return ir;
}
