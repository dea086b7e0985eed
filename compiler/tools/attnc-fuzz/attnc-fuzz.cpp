//===- attnc-fuzz.cpp - libFuzzer harness of the .attn front end ----------===//
//
// Runs lexer, parser and Sema (and the diagnostic printer) on arbitrary
// bytes. Besides the sanitizers' checks it asserts the front end's contract:
// a module comes back exactly when no error was reported, and an accepted
// module is fully annotated (what MLIRGen relies on).
//
//===----------------------------------------------------------------------===//

#include "attnc/Frontend/Frontend.h"
#include "attnc/Support/Diagnostics.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

using namespace attnc;

namespace {

[[noreturn]] void violated(const char *what) {
  fprintf(stderr, "attnc-fuzz: front-end contract violated: %s\n", what);
  abort();
}

void checkAnnotated(const ast::Expr &expr) {
  if (!expr.shape)
    violated("an accepted tensor expression has no shape");
  if (auto *call = llvm::dyn_cast<ast::CallExpr>(&expr)) {
    if (!call->op || call->bound.empty())
      violated("an accepted call is not bound to an op");
    for (const ast::BoundArgument &arg : call->bound)
      if (arg.tensor)
        checkAnnotated(*arg.tensor);
  }
}

void checkModule(const ast::Module &module) {
  for (const auto &block : module.blocks) {
    if (block->outputs.empty())
      violated("an accepted block has no outputs");
    for (const auto &stmt : block->stmts) {
      if (auto *decl = llvm::dyn_cast<ast::DeclStmt>(stmt.get()))
        if (!decl->shape)
          violated("an accepted declaration has no shape");
      if (auto *assign = llvm::dyn_cast<ast::AssignStmt>(stmt.get()))
        checkAnnotated(*assign->value);
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.attn"),
      llvm::SMLoc());
  std::string printed;
  llvm::raw_string_ostream os(printed);
  DiagnosticEngine diag(sourceMgr, os);
  std::unique_ptr<ast::Module> module =
      parseAndCheck(diag, sourceMgr.getMainFileID());
  if (module && diag.hadErrors())
    violated("a module came back despite errors");
  if (!module && !diag.hadErrors())
    violated("no module came back, but no error was reported");
  if (diag.hadErrors() && printed.find("error: ") == std::string::npos)
    violated("an error was counted but not printed");
  if (module)
    checkModule(*module);
  return 0;
}
