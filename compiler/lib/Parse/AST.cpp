//===- AST.cpp - Syntax tree of the .attn language ------------------------===//

#include "attnc/Parse/AST.h"

#include "attnc/Sema/OpTable.h"

#include "llvm/Support/ErrorHandling.h"

using namespace attnc::ast;

const BoundArgument &CallExpr::get(llvm::StringRef param) const {
  std::optional<unsigned> index = op ? op->indexOf(param) : std::nullopt;
  if (!index || *index >= bound.size())
    llvm::report_fatal_error("attnc: CallExpr::get of unbound parameter");
  return bound[*index];
}

const Block *Module::lookup(llvm::StringRef name) const {
  for (const auto &block : blocks)
    if (block->name.name == name)
      return block.get();
  return nullptr;
}
